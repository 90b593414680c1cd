r"""The doctor on scalars (:mod:`grpo_lab.sims.doctor.scalars_diagnose`) as report text and HTML: the whole
report of a scalars-only record, and the scalars fit beside the group-level fit of a record with both."""

from __future__ import annotations

import html

import numpy as np

from grpo_lab.sims.formatting import percent

from .audit import audit_html, audit_text
from .groups_per_row import groups_per_row_html, groups_per_row_lines
from .markup import table
from .samplers import samplers_html, samplers_text
from .stall import _risk_svg, risk_lines
from .svg import COLORS, predictive_band, svg
from .when import SAMPLERS_NOTE, backtest_line, predictive_lines, rewards_lines, when_html, when_lines

__all__ = ["scalars_text", "scalars_html", "side_by_side_lines", "side_by_side_html", "PLOT_AHEAD"]

PLOT_AHEAD = 3.0  #: the shares plot shows the projection this many run lengths past the last step


def _step(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def _iv(iv) -> str:
    return f"[{_step(iv[0])}, {_step(iv[1])}]" if iv else ""


def _last_lines(last: dict) -> list[str]:
    """The fitted shares at the last step beside the logged ones."""
    obs = last["observed"]
    return [f"  {k.replace('_', '-'):8s} at step {last['step']}: fitted {percent(last[k])} "
            f"[{percent(last[k + '_interval'][0])}, {percent(last[k + '_interval'][1])}]"
            + (f"; logged {percent(obs[k])}" if k in obs else "") for k in ("all_pass", "all_fail", "mixed")]


def _fit_lines(f: dict) -> list[str]:
    iv = f["intervals"]
    last = f["last"]
    kinds = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in f["used"]["kinds"].items())
    out = [f"scalars fit ({f['model']} drift, {f['n_steps']} steps {f['steps'][0]}-{f['steps'][1]}, "
           f"{f['groups']:,.0f} groups; steps by what they log: {kinds}; mean reward used at "
           f"{f['used']['reward_mean_steps']} steps):",
           f"  population at step {f['steps'][0]}: Beta(alpha {f['alpha']:.3f} [{iv['alpha'][0]:.3f}, "
           f"{iv['alpha'][1]:.3f}], beta {f['beta']:.3f} [{iv['beta'][0]:.3f}, {iv['beta'][1]:.3f}]); drift "
           f"g {f['drift']:+.3f} [{iv['drift'][0]:+.3f}, {iv['drift'][1]:+.3f}] over the run (95% "
           f"{f.get('interval_method', {}).get('drift', 'Wald')})"]
    out += [f"  bound: {b}" for b in f.get("bounds", [])]
    if "stuck" in f:
        out.append(f"  never solved (p = 0 throughout): {percent(f['stuck'])} [{percent(iv['stuck'][0])}, "
                   f"{percent(iv['stuck'][1])}] of the prompts; the Beta and its drift are the rest's")
    out += _last_lines(last)
    out += [f"  note: {n}" for n in f["notes"]]
    return out + _unidentified(f)


def _unidentified(f: dict) -> list[str]:
    """The line a fit whose population is not identified from what was logged adds (the mixed share only)."""
    return [] if f["identified"]["population"] else [
        "  the population's parameters are not identified from what was logged: read only the mixed share and what "
        "follows from it"]


def _drift_fit_lines(f: dict, fits: dict) -> list[str]:
    """The fit section of a measured drift and its pairs' weights (:mod:`grpo_lab.sims.doctor.shares_fit`)."""
    p, sh, last = f["population"], f["shape_fit"], f["last"]
    iv = p["intervals"]
    kinds = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in f["used"]["kinds"].items())
    pop = "Beta(" + ", ".join(f"{k} {p[k]:.3f} [{iv[k][0]:.3f}, {iv[k][1]:.3f}]" for k in ("a", "b")) + ")"
    if f["variant"] == "masses":
        pop += (f" beside never-solved {percent(p['w0'])} [{percent(iv['w0'][0])}, {percent(iv['w0'][1])}] and "
                f"never-failed {percent(p['w1'])} [{percent(iv['w1'][0])}, {percent(iv['w1'][1])}] of the prompts")
    for k, what in (("rho", "rollouts' correlation rho"), ("sigma", "prompts' own rates, sigma")):
        if k in p:
            pop += f", {what} {p[k]:.3f} [{iv[k][0]:.3f}, {iv[k][1]:.3f}]"
    dlo, dhi = f["intervals"]["drift"]
    out = [f"scalars fit: the measured drift ({f['model']}: the chooser's largest weight; {f['link']} link; "
           f"{f['n_steps']} steps {f['steps'][0]}-{f['steps'][1]}, {f['groups']:,.0f} groups; steps by what they "
           f"log: {kinds}; mean reward used at {f['used']['reward_mean_steps']} steps):",
           f"  population at step {f['steps'][0]} ({f['variant']}): {pop}",
           f"  drift shape {f['shape']}: " + ", ".join(
               f"{k} {v:+.4g}" + (f" [{sh['intervals'][k][0]:+.4g}, {sh['intervals'][k][1]:+.4g}]"
                                  if k in sh["intervals"] else "") for k, v in sh["params"].items())
           + (f"; change point near step {sh['change_step']:.0f} (weight {sh['change_weight']:.2f})"
              if "change_step" in sh else "")
           + f"; shift over the run {f['drift']:+.3f} [{dlo:+.3f}, {dhi:+.3f}] (95%)"]
    out += _last_lines(last)
    out += [f"  note: {n}" for n in f["notes"]] + _unidentified(f)
    ranked = sorted(((m, x["weight"]) for m, x in fits.items()), key=lambda kv: -kv[1])
    out.append("  (variant/shape) by leave-future-out weight: " + ", ".join(f"{m} {x:.2f}" for m, x in ranked
                                                                           if x >= 0.005) + " (the rest under 0.005)")
    return out


def _stall_lines(sf: dict, first_step: float = 0.0) -> list[str]:
    if not sf["available"]:
        return [f"stall forecast: {sf['reason']}"]
    s, now = sf["settings"], sf["now"]
    cap = f"cap {s['cap']} rounds" if s["cap"] else "no cap"
    out = [f"stall forecast ({s['trainer']}, {s.get('source', '-')}): rounds of {s['gen_batch']} prompts to fill "
           f"{s['train_batch']} mixed groups of K = {s['K']}, {cap}",
           f"  at step {now['step']}: {now['expected']:.2f} rounds expected, P(stall) {percent(now['p_stall'])}"]
    if not s["cap"]:
        out.append("  no cap: a step never raises; it draws rounds until the batch is full (the run crawls instead)")
        return out
    for level, st in sf["stall"].items():
        out.append(f"  a step's own P(stall) > {float(level):g} first at step {_step(st['step'])} {_iv(st['interval'])}"
                   + (" (already above at the last step)" if st["already"] else "")
                   + ("" if st["step"] is not None else f" (not within the horizon, step {sf['horizon_step']:.0f})"))
    h = sf["first_cap_hit"]
    risk = (sf.get("risk") or {}).get("available")
    on = "the drift shapes' drawn mixed share" if sf.get("source") == "drift shapes" else "the drift map"
    out.append(f"  first step over the cap ({f'on {on} alone, a cross-check' if risk else 'the forecast above'}"
               f"): median {_step(h['median'])}, predictive 95% "
               f"{_iv(h['predictive'])}; the median's own 95% interval over the fit {_iv(h['median_interval'])}; at "
               f"the fitted parameters 95% of runs within {_iv(h['range'])}; cause: {sf['cause']}")
    if sf.get("risk"):  # the forecast above: the group path's shapes and risk on the shares' likelihood
        out.append("  the first stall (the forecast above) on the per-step shares' likelihood, the group path's drift "
                   "shapes and stall risk:")
        out += risk_lines({**sf, "validation": {"steps": [first_step]}})
    return out


def scalars_text(d: dict) -> str:
    """The plain-text report of a scalars-only diagnosis."""
    r, e = d["run"], d["expiry"]
    src = r.get("source") or {}
    lines = [f"run {r['name'] or '-'}: scalars only ({src.get('format', '-')}, {src.get('trainer', '-')}), "
             f"{r['steps']} steps, K = {r['K']} (from {r['K_from']}), {r['groups_per_step']:g} groups per step (from "
             f"{r['groups_per_step_from']})"]
    lines += groups_per_row_lines(src.get("groups_per_row"))
    lines += when_lines(d["when"]) + backtest_line(d.get("backtest")) + rewards_lines(r)
    if d.get("tie_fit"):
        t = d["tie_fit"]
        span = f"over steps {t['steps'][0]:.0f}-{t['steps'][1]:.0f}"
        win = t.get("window") or {}
        if win.get("kept") == "recent":  # fitted on the log's recent rows (sims/doctor/tie_trend.py, "Recent window")
            span = (f"fitted on the recent rows, steps {win['first_step']:.0f}-{t['steps'][1]:.0f} (leave-future-out "
                    f"weight {win['weights']['recent']:.2f} against {win['weights']['whole']:.2f} for the whole log)")
        if "sides" in t:  # the two-sided trend (sims/doctor/tie_trend.py)
            sd = t["sides"]
            lines.append("tie-share trend by side (rewards not binary; the log splits the tied groups into two sides): "
                         + "; ".join(f"log(tied {k} / mixed) {v['a']:+.3f} {v['b']:+.3f} t, slope 95% "
                                     f"[{v['b_interval'][0]:+.3f}, {v['b_interval'][1]:+.3f}]" for k, v in sd.items())
                         + f", {span}" + (" (at the bound: a side is 0 or 1 at every row)" if t["at_bound"] else ""))
        else:
            slope = ("slope not identified (at the bound: every row ties or none does)" if t["at_bound"] else
                     f"slope 95% [{t['intervals']['b'][0]:+.3f}, {t['intervals']['b'][1]:+.3f}]")
            lines.append(f"tie-share trend (rewards not binary): logit tie share {t['a']:+.3f} {t['b']:+.3f} t {span}, "
                         + slope)
    # the forecast: the tie trend's where the rewards are not binary (then before the pass-rate fit, which is
    # reference only), else the fit's (after it)
    forecast = [f"expiry: {d['when']['expiry']['said']}; mixed share now {percent(e['mixed_now'])} (fit); crossing "
                f"{_step(e['step'])} {_iv(e['interval'])}"]
    forecast += predictive_lines(e["projection"], "mixed share")
    forecast += _stall_lines(d["stall_forecast"], d["fit"]["steps"][0])
    if d.get("tie_fit"):
        lines += forecast
        lines.append("the pass-rate fit below does not apply to these rewards (kept for reference only):")
    drift = d["fit"].get("source") == "drift shapes"
    lines += _drift_fit_lines(d["fit"], d["fits"]) if drift else _fit_lines(d["fit"])
    other = [m for m in d["fits"] if m != d["model"]]
    if other and not drift:
        lines.append("  drift model by leave-future-out weight: " + ", ".join(
            f"{m} {d['fits'][m]['weight']:.2f}" for m in d["fits"]) + f" (chosen: {d['model']})")
    if not d.get("tie_fit"):
        lines += forecast
    a, b = d["samplers_population"]
    lines.append(f"samplers on the population at the last step, Beta({a:.3g}, {b:.3g}) (same mean and variance):")
    lines += samplers_text(d["samplers"])
    lines.append(SAMPLERS_NOTE)
    lines += [f"consistency: {c}" for c in d["consistency"]] or ["consistency: the logged shares agree"]
    lines += audit_text(d["audit"])
    lines.append("needs the groups (not available from scalars):")
    lines += [f"  {u}" for u in d["unavailable"]]
    return "\n".join(lines)


def _shares_plot(f: dict, e: dict) -> str:
    s = f["series"]
    s0, s1 = f["steps"]
    x0 = float(s["step"][0])
    x1 = min(float(e["projection"]["step"][-1]), s1 + PLOT_AHEAD * max(s1 - s0, 1))
    keep = np.asarray(e["projection"]["step"]) <= x1
    series = predictive_band({"step": np.asarray(e["projection"]["step"])[keep],
                              "predictive": {**e["projection"]["predictive"],
                                             "lo": np.asarray(e["projection"]["predictive"]["lo"])[keep],
                                             "hi": np.asarray(e["projection"]["predictive"]["hi"])[keep]}})
    for key, col in (("all_pass", COLORS["pass"]), ("all_fail", COLORS["fail"]), ("mixed", COLORS["obs"])):
        series.append({"name": f"{key.replace('_', '-')} logged", "x": s["step"], "y": s[f"observed_{key}"],
                       "kind": "points", "color": col})
        fx, fy = ((e["fitted"]["step"], e["fitted"]["mixed"]) if key == "mixed" and e.get("fitted") else
                  (s["step"], s[f"fitted_{key}"]))  # the mixed share fitted by what projects it (the drift shapes)
        series.append({"name": "fitted (dashed)" if key == "mixed" else "", "x": fx, "y": fy, "color": col,
                       "dashed": True})
    series.append({"name": "projected", "x": np.asarray(e["projection"]["step"])[keep],
                   "y": np.asarray(e["projection"]["mixed"])[keep],
                   "color": COLORS["proj"], "dashed": True})
    return svg("Per-step shares: logged and fitted, the mixed share projected", series, (x0, x1),
               hline=e["threshold"])


def scalars_html(d: dict, lab_href: str | None = None) -> str:
    """The HTML content of a scalars-only diagnosis (the text report, its plot, the samplers table); ``lab_href``:
    where the link that opens the last step's population in the lab points (no link when None)."""
    from .text import text_report  # the text report dispatches to scalars_text

    r, f = d["run"], d["fit"]
    sf = d["stall_forecast"]
    a, b = d["samplers_population"]
    link = (f'<p><a class="doctor-lab-link" href="{html.escape(lab_href, quote=True)}" target="_blank" '
            f'rel="noopener">Open this population in the lab</a> (Beta({a:.3g}, {b:.3g}) at K = {r["K"]}, the last '
            f'step\'s)</p>' if lab_href is not None else "")
    parts = [f"<h1>{html.escape('Run doctor (scalars): ' + (r['name'] or 'run'))}</h1>", link, when_html(d),
             groups_per_row_html((r.get("source") or {}).get("groups_per_row")),
             f"<pre>{html.escape(text_report(d))}</pre>",
             "<h2>Fit from the per-step shares" + (" (the pass-rate fit: for reference only, the rewards are not binary)"
                                                   if d.get("tie_fit") else "") + "</h2>",
             _shares_plot(f, d["expiry"])]
    if sf["available"] and sf["settings"]["cap"]:
        ser = sf["series"]
        parts.append(svg("P(stall) per future step (trainer config)", [
            {"name": "P(stall)", "x": ser["step"], "y": ser["p_stall"], "color": COLORS["fail"]}],
            (float(ser["step"][0]), float(ser["step"][-1])), hline=0.5, ylabel="P(stall)"))
    if (sf.get("risk") or {}).get("available"):
        parts.append(_risk_svg(sf["risk"]))
    parts += [samplers_html(d["samplers"]), audit_html(d["audit"]),
              "<h2>Needs the groups</h2><ul>" + "".join(f"<li>{html.escape(u)}</li>" for u in d["unavailable"])
              + "</ul>"]
    return "\n".join(parts)


def _cell(row, key, share) -> str:
    v = row.get(key)
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if row.get("step"):
        return _step(v) + (f" {_iv(row.get(key + '_interval'))}" if row.get(key + "_interval") else "")
    if share:
        return percent(v)
    se = row.get(key + "_se")
    return f"{v:.3g}" + (f" +/- {se:.2g}" if se is not None else "")


def side_by_side_lines(d: dict) -> list[str]:
    """Text lines of a group record's ``scalars_fit`` (the two fits side by side)."""
    sb = d.get("scalars_fit")
    if sb is None:
        return []
    if not sb["available"]:
        return [f"scalars fit beside the groups: {sb['reason']}"]
    out = [f"scalars fit beside the groups (the per-step shares alone, {sb['fit']['model']} drift; intervals 95%):",
           f"  {'':44s} {'groups':>24s} {'scalars':>24s}"]
    for row in sb["rows"]:
        share = row.get("share", False)
        out.append(f"  {row['what']:44s} {_cell(row, 'groups', share):>24s} {_cell(row, 'scalars', share):>24s}")
    return out


def side_by_side_html(d: dict) -> str:
    """The two fits side by side as an HTML table (empty without ``scalars_fit``)."""
    sb = d.get("scalars_fit")
    if sb is None:
        return ""
    if not sb["available"]:
        return f"<h2>Scalars fit beside the groups</h2><p>{html.escape(sb['reason'])}.</p>"
    rows = [[row["what"], _cell(row, "groups", row.get("share", False)), _cell(row, "scalars", row.get("share", False))]
            for row in sb["rows"]]
    return ("<h2>Scalars fit beside the groups</h2><p>The run's per-step shares fitted alone (as for a run that "
            "logged only its tracker scalars), beside the fits from its groups.</p>"
            + table(rows, ["", "from the groups", "from the scalars"]))
