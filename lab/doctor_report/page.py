r"""The diagnosis as one self-contained HTML page, or a fragment for the lab's Replay tab.

The page has no script and makes no outside request: its plots are inline SVG,
its style an inline ``<style>``; every text taken from the record (the run's name,
prompt texts) is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import html
import re

import numpy as np

from grpo_lab.sims.formatting import percent

from .audit import audit_html
from .rules import rules_html
from .markup import table
from .cost import cost_html
from .samplers import samplers_html
from .samplers_chart import about_html, samplers_svg, verdict
from .scalars import scalars_html, side_by_side_html
from .stall import stall_html
from .svg import COLORS, predictive_band, svg
from .text import BOUND_WORDS, gof_text, num, text_report
from .when import when_html

__all__ = ["html_fragment", "html_report", "LIST_PREVIEW", "OPEN"]

LIST_PREVIEW = 20  #: prompts of each list shown in the page (the JSONL files hold all)
#: the sections open in a folded report (the lab's): the fit against observed, the forecast, the samplers' chart,
#: the stall forecast and the transitions; what-ifs, skipping, the audit, the prompt lists and the text start folded
OPEN = ("Fit and its check", "Forecast", "Samplers", "Stall forecast", "Transitions")
_H2 = re.compile(r"<h2>(.*?)</h2>", re.S)


_STYLE = """.doctor-report{font:14px/1.45 system-ui,sans-serif;max-width:1100px;margin:1.5em auto;color:#222;
padding:0 1em;overflow-x:auto}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:right;white-space:nowrap}th{background:#f4f4f4;
white-space:normal;vertical-align:bottom}th:first-child{text-align:left}
svg{max-width:100%;height:auto}.doctor-samplers td{white-space:normal}
summary{cursor:pointer}summary h2{display:inline-block;margin:1em 0 .4em}details.doctor-section{margin:0}
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
            + table(rows, ["group of K", "observed", "95% interval", "predicted", "inside"]))


def html_report(d: dict) -> str:
    """One self-contained HTML page (inline SVG, no script, no outside request)."""
    title = f"Run doctor: {d['run']['name'] or 'run'}"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{html.escape(title)}</title></head><body>", html_fragment(d), "</body></html>"])


def _fold(body: str, open_titles: tuple[str, ...] | None) -> str:
    """Each ``<h2>`` section of ``body`` (from its heading to the next) as a ``<details class="doctor-section">``
    whose summary is the heading; open when ``open_titles`` is None or its title starts with one of them."""
    parts = _H2.split(body)
    out = [parts[0]]
    for title, rest in zip(parts[1::2], parts[2::2]):
        is_open = open_titles is None or title.startswith(open_titles)
        out.append(f'<details class="doctor-section"{" open" if is_open else ""}><summary><h2>{title}</h2></summary>'
                   f"{rest}</details>")
    return "".join(out)


def html_fragment(d: dict, lab_href: str | None = None, folded: bool = False) -> str:
    """The report's content (its own ``<style>``, headings, SVG plots, tables) for embedding in a page.

    ``lab_href``: where the "open this population in the lab" link points (the lab's address with
    :func:`~.diagnose.diagnose`'s ``lab_query``); no link when None. Every section is a ``<details>`` under its
    heading; ``folded``: only the pictures' sections (:data:`OPEN`) start open (the lab's Replay tab), else all do.
    The plain-text report (the command line's) is the last section. A scalars-only diagnosis has its own content
    (:func:`.scalars.scalars_html`), folded the same way.
    """
    if d.get("scalars_only"):
        return (f"<div class=\"doctor-report\"><style>{_STYLE}</style>"
                f"{rules_html(d)}{_fold(scalars_html(d, lab_href), OPEN if folded else None)}</div>")
    r, fc, win, f = d["run"], d["forecast"], d["windows"], d["fit"]
    mid = [(w["step_first"] + w["step_last"]) / 2 for w in win]
    xlim = (min(w["step_first"] for w in win), max(w["step_last"] for w in win))
    check = svg("Unanimous shares per window: observed (95% interval) and the window's fitted Beta", [
        {"name": "all-pass observed", "x": mid, "y": [w["observed_all_pass"] for w in win], "kind": "points",
         "lo": [w["observed_all_pass_interval"][0] for w in win],
         "hi": [w["observed_all_pass_interval"][1] for w in win], "color": COLORS["pass"]},
        {"name": "all-pass fitted", "x": mid, "y": [w["predicted_all_pass"] for w in win], "color": COLORS["pass"],
         "dashed": True},
        {"name": "all-fail observed", "x": mid, "y": [w["observed_all_fail"] for w in win], "kind": "points",
         "lo": [w["observed_all_fail_interval"][0] for w in win],
         "hi": [w["observed_all_fail_interval"][1] for w in win], "color": COLORS["fail"]},
        {"name": "all-fail fitted", "x": mid, "y": [w["predicted_all_fail"] for w in win], "color": COLORS["fail"],
         "dashed": True}], xlim)
    ser, proj, bt = fc["series"], fc["projection"], fc["backtest"]
    xmax = float(np.max(proj["step"]))
    lines = [*predictive_band(proj),
             {"name": "observed", "x": ser["step"], "y": ser["observed"], "kind": "points", "color": "#bbb"},
             {"name": "rolling", "x": ser["step"], "y": ser["observed_rolling"], "color": COLORS["obs"]},
             {"name": "drift fit" if fc.get("expiry_model") == "drift" else "trend fit", "x": ser["step"],
              "y": ser["fitted"], "color": COLORS["fit"]},
             {"name": "projection", "x": proj["step"], "y": proj["rate"], "color": COLORS["proj"], "dashed": True}]
    if bt.get("available"):
        lines.append({"name": "backtest", "x": bt["series"]["step"], "y": bt["series"]["predicted"],
                      "color": COLORS["back"], "dashed": True})
    eff = svg(f"Effective group rate and its forecast (threshold {fc['threshold']:g})", lines,
               (float(np.min(ser["step"])), xmax), hline=fc["threshold"], ylabel="effective group rate")
    wi = d["what_if"]
    kplot = svg("What-if: effective group rate by K", [
        {"name": "effective group rate", "x": [w["K"] for w in wi], "y": [w["effective_group_rate"] for w in wi],
         "color": COLORS["fit"]},
        {"name": "", "x": [w["K"] for w in wi], "y": [w["effective_group_rate"] for w in wi],
         "kind": "points", "color": COLORS["fit"]}],
        (min(w["K"] for w in wi), max(w["K"] for w in wi)), xlabel="K", xlog2=True, ylabel="effective group rate")
    ou, pu = d["observed_unanimous"], d["predicted_unanimous"]
    fit_rows = [[k.replace("_", "-"), percent(ou[k]), f"[{percent(ou[k + '_interval'][0])}, "
                 f"{percent(ou[k + '_interval'][1])}]", percent(pu[k])] for k in ("all_pass", "all_fail", "total")]
    pooled = {row["K"]: row for row in d["what_if_pooled"]}
    wi_rows = [[w["K"], percent(w["effective_group_rate"]), num(w["rollouts_per_useful_group"], ".1f"),
                percent(w["all_pass"]), percent(w["all_fail"]),
                percent(pooled[w["K"]]["effective_group_rate"]) if w["K"] in pooled else "-"] for w in wi]
    dapo_rows = [[x["K"], x["batch_groups"], f"{x['amplification_expected']:.2f}", num(x["amplification_p95"])]
                 for x in d["dapo"]]
    skip_rows = [[x["after_unanimous_draws"], percent(x["rollouts_saved_share"]),
                  percent(x["mixed_wrongly_skipped_share"])] for x in d["skip"]["backtest"]]
    lists = []
    for name in ("retire", "hard", "live"):
        rows = d["prompts"][name][:LIST_PREVIEW]
        lists.append(f"<h3>{name} ({d['prompts']['counts'][name]:,})</h3>" + table(
            [[x["prompt_id"], x.get("text", ""), x["draws"], x["successes"], x["last_step"]] for x in rows],
            ["prompt id", "text", "draws", "successes", "last step"]))
    title = f"Run doctor: {r['name'] or 'run'}"
    link = (f'<p><a class="doctor-lab-link" href="{html.escape(lab_href, quote=True)}" target="_blank" '
            f'rel="noopener">Open this population in the lab</a> (Beta({f["alpha"]:.3g}, {f["beta"]:.3g}) at '
            f'K = {r["K"]})</p>' if lab_href is not None else "")
    body = "\n".join([
        "<h2>Fit and its check</h2>",
        f"<p>Single Beta: alpha {f['alpha']:.3f} &plusmn; {f['se_alpha']:.3f}, beta {f['beta']:.3f} &plusmn; "
        f"{f['se_beta']:.3f}; {html.escape(gof_text(f['gof']))}"
        + (f"; {html.escape(BOUND_WORDS)}" if f.get("at_bound") else "") + ".</p>",
        table(fit_rows, ["at K = %d" % r["K"], "observed", "95% interval", "predicted"], "doctor-fit"), check,
        _pooled_html(d["pooled"], r["K"]),
        "<h2>Forecast</h2>", f"<p>{html.escape(d['when']['expiry']['said'])}.</p>", eff,
        "<h2>What-ifs</h2>", kplot,
        table(wi_rows, ["K", "effective rate", "rollouts per useful group", "all-pass", "all-fail",
                         "effective rate (recent, prompt-pooled)"]),
        table(dapo_rows, ["K", "batch (groups)", "DAPO amplification", "95th percentile (rounds)"]),
        samplers_html(d["samplers"]), f"<p class=\"doctor-samplers-verdict\">{html.escape(verdict(d['samplers']))}</p>",
        samplers_svg(d["samplers"], "Samplers on the run's fitted population"), about_html(d["samplers"], links=False),
        "<h2>Skipping, measured on the run</h2>",
        table(skip_rows, ["skip after N unanimous", "rollouts saved", "mixed groups wrongly skipped"]),
        stall_html(d),
        cost_html(d), side_by_side_html(d),
        audit_html(d["audit"]) if "audit" in d else "",
        "<h2>Prompt lists</h2>", f"<p class=\"caution\">{html.escape(d['prompts']['caution'])}</p>", *lists,
        "<h2>The report as text</h2>", f"<pre>{html.escape(text_report(d))}</pre>"])
    return "\n".join([f"<div class=\"doctor-report\"><style>{_STYLE}</style>", f"<h1>{html.escape(title)}</h1>", link,
                      when_html(d), rules_html(d), _fold(body, OPEN if folded else None), "</div>"])
