r"""The diagnosis as text (the command line) or as one self-contained HTML page.

The page has no script and makes no outside request: its plots are inline SVG,
its style an inline ``<style>``; every text taken from the record (the run's name,
prompt texts) is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import html
import math

import numpy as np

from grpo_lab.sims.formatting import percent
from .audit import audit_html, audit_text
from .honesty import intervals_text
from .stall import stall_html, stall_lines, transitions_lines
from .samplers import samplers_html, samplers_text

__all__ = ["text_report", "html_fragment", "html_report"]

LIST_PREVIEW = 20  #: prompts of each list shown in the page (the JSONL files hold all)
_W, _H, _PAD = 640, 260, 44  #: plot size and margin in px
_COLORS = {"obs": "#444", "pass": "#2a7ab0", "fail": "#c0392b", "fit": "#e67e22", "proj": "#8e44ad",
           "back": "#16a085", "thr": "#999"}


def _gof_text(g: dict) -> str:
    """The chi-square's verdict; no test where pooling left fewer cells than the fit has parameters + 2 (df < 1)."""
    if g["df"] < 1:
        return f"chi-square not testable ({g['cells']} cells after pooling, too few for the fit's parameters)"
    return f"chi-square p = {_num(g['p_value'])} (df {g['df']})" + ("  POOR FIT" if g["poor"] else "")


def _num(x, spec=".3g") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)


def _steps(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def text_report(d: dict) -> str:
    """A plain-text summary of :func:`~.diagnose.diagnose`'s result."""
    r, f, fc = d["run"], d["fit"], d["forecast"]
    ou, pu = d["observed_unanimous"], d["predicted_unanimous"]
    lines = [f"run {r['name'] or '-'}: {r['groups']:,} groups over {r['steps']} steps, {r['prompts']:,} prompts, "
             f"K = {r['K']}" + (" (rewards binarised at 0.5)" if r["binarised"] else "")]
    lines.append(f"fit: Beta(alpha {f['alpha']:.3f} +/- {f['se_alpha']:.3f}, beta {f['beta']:.3f} +/- "
                 f"{f['se_beta']:.3f}), mean pass rate {f['mean']:.3f}; " + _gof_text(f["gof"]))
    lines += [x for x in [intervals_text(f)] if x]
    for key in ("all_pass", "all_fail"):
        lo, hi = ou[f"{key}_interval"]
        lines.append(f"  {key.replace('_', '-'):8s} observed {percent(ou[key])} [{percent(lo)}, {percent(hi)}]  "
                     f"predicted {percent(pu[key])}")
    m = d["mixture"]
    if m.get("available"):
        c1, c2 = m["components"]
        lines.append(f"mixture: {m['w']:.2f} Beta({c1['alpha']:.2f}, {c1['beta']:.2f}) + {1 - m['w']:.2f} "
                     f"Beta({c2['alpha']:.2f}, {c2['beta']:.2f}); BIC prefers the {d['model']}")
    else:
        lines.append(f"mixture: not fitted ({m['reason']})")
    win = d["windows"]
    bad = sum(not (w["inside_all_pass"] and w["inside_all_fail"]) for w in win)
    lines.append(f"windows: {len(win)}; prediction outside the observed 95% interval in {bad}; "
                 f"poor chi-square in {sum(w['gof']['poor'] for w in win)}")
    pl = d["pooled"]
    if pl["available"]:
        pop = " + ".join(f"{w:.2f} Beta({a:.2f}, {b:.2f})" for w, a, b in pl["population"])
        ck = pl["check"]
        lines.append(f"prompt-pooled (steps {pl['steps'][0]}-{pl['steps'][1]}, {pl['prompts']:,} prompts, median "
                     f"{pl['median_trials']:g} rollouts each): {pop} ({pl['model']} by BIC); one group of K: "
                     f"all-pass {percent(ck['all_pass']['predicted'])} vs observed {percent(ck['all_pass']['observed'])}"
                     f", all-fail {percent(ck['all_fail']['predicted'])} vs {percent(ck['all_fail']['observed'])}"
                     + ("" if ck["all_pass"]["inside"] and ck["all_fail"]["inside"] else "  (outside the 95% interval)"))
    else:
        lines.append(f"prompt-pooled: {pl['reason']}")
    c = d["correlation"]
    if c.get("available"):
        lines.append(f"within-prompt: tau {c['tau']:.3f} +/- {c['se']['tau']:.3f} (between-prompt share), "
                     f"rho {c['rho']:.3f} +/- {c['se']['rho']:.3f} (extra within-group correlation), "
                     f"{c['pairs']:,} repeated draws")
    else:
        lines.append(f"within-prompt correlation: {c['reason']}")
    pooled = {row["K"]: row for row in d["what_if_pooled"]}
    lines.append(f"what-if:  K   effective rate   rollouts per useful group   (whole run, {d['what_if_population']}"
                 + ("; recent, pooled" if pooled else "") + ")")
    for row in d["what_if"]:
        extra = pooled.get(row["K"])
        lines.append(f"  {row['K']:>9d}   {percent(row['effective_group_rate']):>14s}   "
                     f"{_num(row['rollouts_per_useful_group'], '.1f'):>10s}"
                     + (f"   | {percent(extra['effective_group_rate'])}, "
                        f"{_num(extra['rollouts_per_useful_group'], '.1f')}" if extra else ""))
    for row in d["dapo"]:
        if row["K"] == r["K"]:
            lines.append(f"DAPO at K = {row['K']}, batch {row['batch_groups']}: amplification "
                         f"{row['amplification_expected']:.2f}x expected, {_num(row['amplification_p95'])} rounds "
                         f"at the 95th percentile")
    b = d["band"]
    lines.append(f"band [{b['lo']:g}, {b['hi']:g}]: keeps {percent(b['kept_share'])} of prompts, effective rate "
                 f"{percent(b['effective_group_rate_kept'])} (all prompts {percent(b['effective_group_rate_all'])})")
    lines.append("coverage: " + ", ".join(f"{k} {percent(v)}" for k, v in d["coverage"].items()))
    lines.extend(samplers_text(d["samplers"]))
    bt = fc["backtest"]
    lines.append(f"forecast: {fc['status']}; effective rate now {percent(fc['observed_rate_now'])} observed, "
                 f"{percent(fc['rate_now'])} model; crossing {_steps(fc['crossing_step'])} "
                 f"[{_steps(fc['crossing_interval'][0])}, {_steps(fc['crossing_interval'][1])}]")
    if bt.get("available"):
        lines.append(f"  backtest (fit to step {bt['fit_until_step']}, {bt['compared_steps']} later steps): "
                     f"mean absolute error {bt['mae']:.3f} per step, {bt['mae_rolling']:.3f} on the rolling mean, "
                     f"mean error {bt['mean_error']:+.3f}"
                     + (f"; crossing error {bt['crossing_error_steps']:+.0f} steps"
                        if bt["crossing_error_steps"] is not None else ""))
    else:
        lines.append(f"  backtest: {bt['reason']}")
    tc = d["skip"]["temporal_consistency"]["unanimous_given_unanimous"]
    lines.append(f"unanimous again after unanimous: {percent(tc['share'])} of {tc['n']:,} (after mixed: "
                 f"{percent(d['skip']['temporal_consistency']['unanimous_given_mixed']['share'])})")
    for row in d["skip"]["backtest"]:
        lines.append(f"  skip after {row['after_unanimous_draws']} unanimous: saves "
                     f"{percent(row['rollouts_saved_share'])} of rollouts, wrongly skips "
                     f"{percent(row['mixed_wrongly_skipped_share'])} of mixed groups")
    al = d["skip"]["allocation"]
    lines.append(f"allocation: {al['allocated_useful_per_1000']:.1f} useful groups per 1,000 rollouts vs "
                 f"{al['uniform_useful_per_1000']:.1f} at uniform K ({al['prompts_skipped']:,} prompts given none)")
    pc = d["prompts"]["counts"]
    lines.append(f"prompts: retire {pc['retire']:,} (all-pass in the last {d['prompts']['retire_after']} draws), "
                 f"hard {pc['hard']:,} (never solved), live {pc['live']:,}, never drawn {pc['never_drawn']:,}")
    lines.append(f"  caution: {d['prompts']['caution']}")
    lines += audit_text(d["audit"]) if "audit" in d else []
    lines.extend(stall_lines(d) + transitions_lines(d))
    lines.append(f"open in the lab: ?{d['lab_query']}")
    return "\n".join(lines)


# --- HTML -----------------------------------------------------------------------------------------

def _scale(v, lo, hi, a, b):
    return a + (np.asarray(v, float) - lo) / ((hi - lo) or 1.0) * (b - a)


def _svg(title: str, series: list[dict], xlim, ylim=(0.0, 1.0), xlabel="step", ylabel="share",
         hline=None, xlog2=False) -> str:
    """An inline SVG plot: ``series`` items have name, x, y, color, kind ('line' or 'points'), and
    optionally lo/hi (vertical interval bars)."""
    x0, x1 = xlim
    tx = (lambda v: np.log2(v)) if xlog2 else (lambda v: np.asarray(v, float))
    X = lambda v: _scale(tx(v), tx(x0), tx(x1), _PAD, _W - 10)  # noqa: E731
    Y = lambda v: _scale(v, ylim[0], ylim[1], _H - 30, 10)  # noqa: E731
    out = [f'<figure><figcaption>{html.escape(title)}</figcaption>'
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
           f'role="img" aria-label="{html.escape(title)}">',
           f'<rect x="{_PAD}" y="10" width="{_W - 10 - _PAD}" height="{_H - 40}" fill="#fff" stroke="#ccc"/>']
    for yv in np.linspace(ylim[0], ylim[1], 5):
        out.append(f'<text x="{_PAD - 4}" y="{Y(yv) + 4:.1f}" text-anchor="end" font-size="10">{yv:.2g}</text>')
    ticks = [k for k in (4, 8, 16, 32, 64) if x0 <= k <= x1] if xlog2 else np.linspace(x0, x1, 5)
    for xv in ticks:
        out.append(f'<text x="{X(xv):.1f}" y="{_H - 16}" text-anchor="middle" font-size="10">{xv:.4g}</text>')
    out.append(f'<text x="{(_W + _PAD) / 2}" y="{_H - 2}" text-anchor="middle" font-size="11">'
               f'{html.escape(xlabel)}</text>')
    out.append(f'<text x="10" y="{_H / 2}" transform="rotate(-90 10 {_H / 2})" text-anchor="middle" '
               f'font-size="11">{html.escape(ylabel)}</text>')
    if hline is not None:
        out.append(f'<line x1="{_PAD}" x2="{_W - 10}" y1="{Y(hline):.1f}" y2="{Y(hline):.1f}" '
                   f'stroke="{_COLORS["thr"]}" stroke-dasharray="4 3"/>')
    legend_x = _PAD + 8
    for s in series:
        x, y = np.asarray(s["x"], float), np.asarray(s["y"], float)
        ok = np.isfinite(x) & np.isfinite(y)
        color = s["color"]
        if "lo" in s:
            for xi, lo, hi in zip(x[ok], np.asarray(s["lo"])[ok], np.asarray(s["hi"])[ok]):
                out.append(f'<line x1="{X(xi):.1f}" x2="{X(xi):.1f}" y1="{Y(lo):.1f}" y2="{Y(hi):.1f}" '
                           f'stroke="{color}" stroke-width="1"/>')
        if s.get("kind") == "points":
            out.extend(f'<circle cx="{X(a):.1f}" cy="{Y(b):.1f}" r="2.2" fill="{color}"/>' for a, b in zip(x[ok], y[ok]))
        else:
            pts = " ".join(f"{X(a):.1f},{Y(b):.1f}" for a, b in zip(x[ok], y[ok]))
            dash = ' stroke-dasharray="5 3"' if s.get("dashed") else ""
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>')
        if s["name"]:
            out.append(f'<text x="{legend_x}" y="24" font-size="10" fill="{color}">{html.escape(s["name"])}</text>')
            legend_x += 7 * len(s["name"]) + 18
    out.append("</svg></figure>")
    return "".join(out)


def _table(rows: list[list], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


_STYLE = """.doctor-report{font:14px/1.45 system-ui,sans-serif;max-width:980px;margin:1.5em auto;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}th{background:#f4f4f4}
td:first-child{text-align:left}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;white-space:pre-wrap}
figure{margin:.6em 0}figcaption{font-weight:600;font-size:.95em}.caution{background:#fff6e0;padding:.5em}"""


def _pooled_html(pl: dict, K: int) -> str:
    """The prompt-pooled fit as a paragraph and its check as a table."""
    if not pl["available"]:
        return f"<h3>Prompt-pooled fit</h3><p>{html.escape(pl['reason'])}.</p>"
    pop = " + ".join(f"{w:.2f} Beta({a:.3g}, {b:.3g})" for w, a, b in pl["population"])
    rows = [[key.replace("_", "-"), percent(c["observed"]),
             f"[{percent(c['interval'][0])}, {percent(c['interval'][1])}]", percent(c["predicted"]),
             "yes" if c["inside"] else "no"] for key, c in ((k, pl["check"][k]) for k in ("all_pass", "all_fail"))]
    return (f"<h3>Prompt-pooled fit (steps {pl['steps'][0]}-{pl['steps'][1]})</h3>"
            f"<p>{pl['prompts']:,} prompts, median {pl['median_trials']:g} pooled rollouts each: "
            f"{html.escape(pop)} ({html.escape(pl['model'])}, by BIC). Checked on single groups of K = {K} in "
            f"those steps:</p>"
            + _table(rows, ["group of K", "observed", "95% interval", "predicted", "inside"]))


def html_report(d: dict) -> str:
    """One self-contained HTML page (inline SVG, no script, no outside request)."""
    title = f"Run doctor: {d['run']['name'] or 'run'}"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{html.escape(title)}</title></head><body>", html_fragment(d), "</body></html>"])


def html_fragment(d: dict, lab_href: str | None = None) -> str:
    """The report's content (its own ``<style>``, headings, SVG plots, tables) for embedding in a page.

    ``lab_href``: where the "open this population in the lab" link points (the lab's address with
    :func:`~.diagnose.diagnose`'s ``lab_query``); no link when None.
    """
    r, fc, win, f = d["run"], d["forecast"], d["windows"], d["fit"]
    mid = [(w["step_first"] + w["step_last"]) / 2 for w in win]
    xlim = (min(w["step_first"] for w in win), max(w["step_last"] for w in win))
    check = _svg("Unanimous shares per window: observed (95% interval) and the window's fitted Beta", [
        {"name": "all-pass observed", "x": mid, "y": [w["observed_all_pass"] for w in win], "kind": "points",
         "lo": [w["observed_all_pass_interval"][0] for w in win],
         "hi": [w["observed_all_pass_interval"][1] for w in win], "color": _COLORS["pass"]},
        {"name": "all-pass fitted", "x": mid, "y": [w["predicted_all_pass"] for w in win], "color": _COLORS["pass"],
         "dashed": True},
        {"name": "all-fail observed", "x": mid, "y": [w["observed_all_fail"] for w in win], "kind": "points",
         "lo": [w["observed_all_fail_interval"][0] for w in win],
         "hi": [w["observed_all_fail_interval"][1] for w in win], "color": _COLORS["fail"]},
        {"name": "all-fail fitted", "x": mid, "y": [w["predicted_all_fail"] for w in win], "color": _COLORS["fail"],
         "dashed": True}], xlim)
    ser, proj, bt = fc["series"], fc["projection"], fc["backtest"]
    xmax = float(np.max(proj["step"]))
    lines = [{"name": "observed", "x": ser["step"], "y": ser["observed"], "kind": "points", "color": "#bbb"},
             {"name": "rolling", "x": ser["step"], "y": ser["observed_rolling"], "color": _COLORS["obs"]},
             {"name": "trend fit", "x": ser["step"], "y": ser["fitted"], "color": _COLORS["fit"]},
             {"name": "projection", "x": proj["step"], "y": proj["rate"], "color": _COLORS["proj"], "dashed": True}]
    if bt.get("available"):
        lines.append({"name": "backtest", "x": bt["series"]["step"], "y": bt["series"]["predicted"],
                      "color": _COLORS["back"], "dashed": True})
    eff = _svg(f"Effective group rate and its forecast (threshold {fc['threshold']:g})", lines,
               (float(np.min(ser["step"])), xmax), hline=fc["threshold"], ylabel="effective group rate")
    wi = d["what_if"]
    kplot = _svg("What-if: effective group rate by K", [
        {"name": "effective group rate", "x": [w["K"] for w in wi], "y": [w["effective_group_rate"] for w in wi],
         "color": _COLORS["fit"]},
        {"name": "", "x": [w["K"] for w in wi], "y": [w["effective_group_rate"] for w in wi],
         "kind": "points", "color": _COLORS["fit"]}],
        (min(w["K"] for w in wi), max(w["K"] for w in wi)), xlabel="K", xlog2=True, ylabel="effective group rate")
    ou, pu = d["observed_unanimous"], d["predicted_unanimous"]
    fit_rows = [[k.replace("_", "-"), percent(ou[k]), f"[{percent(ou[k + '_interval'][0])}, "
                 f"{percent(ou[k + '_interval'][1])}]", percent(pu[k])] for k in ("all_pass", "all_fail", "total")]
    pooled = {row["K"]: row for row in d["what_if_pooled"]}
    wi_rows = [[w["K"], percent(w["effective_group_rate"]), _num(w["rollouts_per_useful_group"], ".1f"),
                percent(w["all_pass"]), percent(w["all_fail"]),
                percent(pooled[w["K"]]["effective_group_rate"]) if w["K"] in pooled else "-"] for w in wi]
    dapo_rows = [[x["K"], x["batch_groups"], f"{x['amplification_expected']:.2f}", _num(x["amplification_p95"])]
                 for x in d["dapo"]]
    skip_rows = [[x["after_unanimous_draws"], percent(x["rollouts_saved_share"]),
                  percent(x["mixed_wrongly_skipped_share"])] for x in d["skip"]["backtest"]]
    lists = []
    for name in ("retire", "hard", "live"):
        rows = d["prompts"][name][:LIST_PREVIEW]
        lists.append(f"<h3>{name} ({d['prompts']['counts'][name]:,})</h3>" + _table(
            [[x["prompt_id"], x.get("text", ""), x["draws"], x["successes"], x["last_step"]] for x in rows],
            ["prompt id", "text", "draws", "successes", "last step"]))
    title = f"Run doctor: {r['name'] or 'run'}"
    link = (f'<p><a class="doctor-lab-link" href="{html.escape(lab_href, quote=True)}" target="_blank" '
            f'rel="noopener">Open this population in the lab</a> (Beta({f["alpha"]:.3g}, {f["beta"]:.3g}) at '
            f'K = {r["K"]})</p>' if lab_href is not None else "")
    return "\n".join([
        f"<div class=\"doctor-report\"><style>{_STYLE}</style>",
        f"<h1>{html.escape(title)}</h1>", link,
        f"<pre>{html.escape(text_report(d))}</pre>",
        "<h2>Fit and its check</h2>",
        f"<p>Single Beta: alpha {f['alpha']:.3f} &plusmn; {f['se_alpha']:.3f}, beta {f['beta']:.3f} &plusmn; "
        f"{f['se_beta']:.3f}; chi-square p = {_num(f['gof']['p_value'])}"
        f"{' (poor fit)' if f['gof']['poor'] else ''}.</p>",
        _table(fit_rows, ["at K = %d" % r["K"], "observed", "95% interval", "predicted"]), check,
        _pooled_html(d["pooled"], r["K"]),
        "<h2>Forecast</h2>", f"<p>{html.escape(fc['status'])}.</p>", eff,
        "<h2>What-ifs</h2>", kplot,
        _table(wi_rows, ["K", "effective rate", "rollouts per useful group", "all-pass", "all-fail",
                         "effective rate (recent, prompt-pooled)"]),
        _table(dapo_rows, ["K", "batch (groups)", "DAPO amplification", "95th percentile (rounds)"]),
        samplers_html(d["samplers"], _table),
        "<h2>Skipping, measured on the run</h2>",
        _table(skip_rows, ["skip after N unanimous", "rollouts saved", "mixed groups wrongly skipped"]),
        stall_html(d),
        audit_html(d.get("audit"), _table),
        "<h2>Prompt lists</h2>", f"<p class=\"caution\">{html.escape(d['prompts']['caution'])}</p>", *lists,
        "</div>"])
