r"""The stall forecast (:mod:`grpo_lab.sims.doctor.stall`) and the transitions (:mod:`grpo_lab.sims.doctor.transitions`)
as report text and HTML.

Kept apart from :mod:`.page` so that the report gains them with one call each; a section that is not
available prints its one "not available: needs ..." line.
"""

from __future__ import annotations

import html

import numpy as np

from grpo_lab.sims.formatting import percent

from .markup import table
from .svg import COLORS, svg

__all__ = ["stall_lines", "transitions_lines", "stall_html", "ahead_rows", "risk_lines", "risk_rows"]

AHEAD = (0.1, 0.5, 1.0)  #: the text shows the forecast this many run lengths past the last step
_SHORT = {"all_fail": "fail", "mixed": "mixed", "all_pass": "pass"}
#: below this share of the groups the logged rounds drew, a record is said to hold only the survivors of a filter
SURVIVORS = 0.75


def _step(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def _rounds(x, cap) -> str:
    return (f">{cap}" if cap else "-") if x is None else f"{x}"


def stall_lines(d: dict) -> list[str]:
    """Text lines of ``d['stall_forecast']``."""
    sf = d.get("stall_forecast")
    if sf is None:
        return []
    if not sf["available"]:
        return [f"stall forecast: {sf['reason']}"]
    s, now = sf["settings"], sf["now"]
    cap = f"cap {s['cap_effective']} rounds" if s["cap_effective"] else "no cap"
    out = [f"stall forecast ({s['trainer']}, {s['source']}): rounds of {s['gen_batch']} prompts to fill "
           f"{s['train_batch']} mixed groups of K = {s['K']}, {cap}"
           + (f", pool {s['pool']} prompts" if s["pool"] else "") + f"; slope {sf['slope']:+.3f} +/- "
           f"{sf['se_slope']:.3f} per run length",
           f"  at step {now['step']}: {now['expected']:.2f} rounds expected, 95th percentile "
           f"{_rounds(now['p95'], s['cap_effective'])}, "
           f"P(stall) {percent(now['p_stall'])}"]
    if s.get("note"):
        out.append(f"  caution: {s['note']}")
    ser = sf["series"]
    ahead = ahead_rows(sf)
    out.append("  ahead: " + ", ".join(f"step {ser['step'][i]:.0f} " + (
        f"{ser['expected'][i]:.2f}" if np.isfinite(ser["expected"][i]) else "-")
        + f" rounds (P(stall) {percent(ser['p_stall'][i])})" for i in ahead))
    if not s["cap_effective"]:
        out.append("  no cap: a step never raises; it draws rounds until the batch is full (the run crawls instead)")
    for level, st in sf["stall"].items() if s["cap_effective"] else ():
        lo, hi = st["interval"]
        out.append(f"  P(stall) > {float(level):g} first at step {_step(st['step'])} [{_step(lo)}, {_step(hi)}]"
                   + (" (already above at the last step)" if st["already"] else "")
                   + ("" if st["step"] is not None else f" (not within the horizon, step {sf['horizon_step']})"))
    if sf["cause"] is None:
        out.append(f"  cause: none (no stall forecast within the horizon, step {sf['horizon_step']})")
    else:
        out.append(f"  cause: {sf['cause']} ({percent(sf['cause_share_all_fail'])} of dropped groups all-fail at step "
                   f"{sf['cause_at_step']})")
    out.extend(risk_lines(sf))
    c = sf["calibrated"]
    if c["observed"] is not None:
        out.append(f"  calibrated to steps {c['steps'][0]}-{c['steps'][1]} (mixed {percent(c['observed'])} observed vs "
                   f"{percent(c['model'])} model, x{c['factor']:.2f}): {c['now']['expected']:.2f} rounds now, P(stall) "
                   f"{percent(c['now']['p_stall'])}" + ("; P(stall) > 0.5 first at step "
                   f"{_step(c['stall']['0.5'])}, > 0.05 at {_step(c['stall']['0.05'])}" if s["cap_effective"] else ""))
    cr = sf.get("calibrated_rounds", {"available": False})
    if cr.get("identifiable") is False:
        out.append(f"  calibrated to the logged rounds: {cr['reason']}")
    if cr["available"]:
        out.append(f"  calibrated to the logged rounds of steps {cr['steps'][0]}-{cr['steps'][1]} ({cr['observed']:.2f} "
                   f"logged vs {cr['model']:.2f} model, u x{cr['factor']:.2f}"
                   + (", at the search's bound" if cr["at_bound"] else "")
                   + f"): {cr['now']['expected']:.2f} rounds now, P(stall) {percent(cr['next']['p_stall'])} at the "
                   f"next step" + ("; P(stall) > 0.5 first at step "
                      f"{_step(cr['stall']['0.5'])}, > 0.05 at {_step(cr['stall']['0.05'])}" if s["cap_effective"] else ""))
        if cr["recorded"] < SURVIVORS * cr["drawn"]:
            out.append(f"  the record holds {cr['recorded']:,} groups at those steps, the logged rounds drew "
                       f"{cr['drawn']:,}: the rest are not in it (verl's dump holds only the trained groups), so its "
                       "mixed share is the survivors' and the calibration to it is biased upward; the calibration to "
                       "the rounds does not use it")
    v = sf["validation"]
    if v["available"]:
        out.append(f"  check against the logged rounds: mean {v['predicted_mean']:.2f} predicted vs "
                   f"{v['observed_mean']:.2f} observed, mean absolute error {v['mae']:.2f} rounds per step")
        b = v["backtest"]
        if b["available"]:
            for key in ("model", "calibrated"):
                x = b[key]
                ps = x["predicted_stall_step"]
                out.append(f"  backtest, {key} (fit to step {b['fit_until_step']}): mean absolute error {x['mae']:.2f}, "
                           f"mean error {x['mean_error']:+.2f}; predicted stall step {_step(ps['0.5'])} (P > 0.5), "
                           f"{_step(ps['0.05'])} (P > 0.05); observed {_step(b['observed_stall_step'])}")
        else:
            out.append(f"  backtest: {b['reason']}")
    else:
        out.append(f"  check: {v['reason']}")
    return out


def _upper(x, horizon) -> str:
    return f"beyond step {horizon}" if x is None else f"{x:.0f}"


def risk_rows(sf: dict) -> list[int]:
    """Indices into ``sf['risk']['step']`` the report shows: :data:`AHEAD` run lengths past the last step, the
    first stall's interval ends and median, and the horizon."""
    rk, now = sf["risk"], sf["now"]
    steps = np.asarray(rk["step"])
    span = max(now["step"] - float(np.min(sf["validation"].get("steps", [0]))), 10.0)
    fs = rk["first_stall"]
    marks = [x for x in (*fs["interval"], fs["median"]) if x is not None]  # where the risk passes 5%, 50%, 95%
    want = [now["step"] + f * span for f in AHEAD] + marks + [steps[-1]]
    return sorted({int(np.argmin(np.abs(steps - w))) for w in want})


def risk_lines(sf: dict) -> list[str]:
    """Text lines of ``sf['risk']`` (the first stall's distribution, the cumulative risk, the shapes' weights)."""
    rk = sf.get("risk")
    if not rk:
        return []
    if not rk["available"]:
        return [f"  risk: not available: {rk['reason']}"]
    fs = rk["first_stall"]
    lo, hi = fs["interval"]
    out = [f"  risk ({rk['draws']} bootstrap draws over the drift's shape, the population, the drift's parameters and "
           f"the loop's rounds): first stall at step {_upper(fs['median'], fs['horizon_step'])} (median), "
           f"{100 * rk['level']:.0f}% interval [{_step(lo)}, {_upper(hi, fs['horizon_step'])}]; P(stall by step "
           f"{fs['horizon_step']}) {percent(fs['p_by_horizon'])}; mean first step, counted as {fs['horizon_step'] + 1} "
           f"where beyond: {fs['expected_restricted']:.0f}",
           "  P(stall by step n) [90% band], per-step hazard: " + ", ".join(
               f"{rk['step'][i]:.0f}: {percent(rk['cumulative'][i])} [{percent(rk['cumulative_band'][0][i])}, "
               f"{percent(rk['cumulative_band'][1][i])}], {percent(rk['hazard'][i])}" for i in risk_rows(sf)),
           "  drift shapes (rolling-origin weights): " + ", ".join(
               f"{k} {percent(v)}" for k, v in rk["shapes"]["weights"].items())]
    if rk["survivors"]:
        out.append(f"  survivors only: {rk['survivors_reason']}; the population and the level are fitted with the "
                   "groups' likelihood truncated to 0 < k < K" + (
                       "; train/num_gen_batches enters the likelihood" if rk["rounds_used"] else
                       "; no logged rounds to add"))
    return out


def transitions_lines(d: dict) -> list[str]:
    """Text lines of ``d['transitions']``."""
    t = d.get("transitions")
    if t is None:
        return []
    if not t["available"]:
        return [f"transitions: {t['reason']}"]
    out = [f"transitions between visits ({t['transitions']:,} over {t['prompts']:,} prompts; 95% prompt-level "
           f"intervals): from \\ to   " + "   ".join(f"{_SHORT[s]:>20s}" for s in t["states"])]
    for i, s in enumerate(t["states"]):
        cells = [f"{percent(t['matrix'][i][j])} [{percent(t['interval_lo'][i][j])}, "
                 f"{percent(t['interval_hi'][i][j])}]" for j in range(3)]
        out.append(f"  {_SHORT[s]:>6s} ({int(np.sum(t['counts'][i])):,})  " + "   ".join(f"{c:>20s}" for c in cells))
    r = t["recovery"]
    out.append(f"  all-fail recovers at the next visit {percent(r['next_visit']['share'])} "
               f"[{percent(r['next_visit']['interval'][0])}, {percent(r['next_visit']['interval'][1])}]; ever: "
               f"{r['ever']['k']:,} of {r['ever']['n']:,} prompts ({percent(r['ever']['share'])})")
    for row in t["rules"]:
        parts = []
        for name, label in (("skip_after_all_fail", "skip after"), ("retire_after_all_pass", "retire after")):
            x = row[name]
            lost = x["lost"]
            parts.append(f"{label} {row['n']} {'all-fail' if 'fail' in name else 'all-pass'}: drops "
                         f"{x['marked_prompts']:,}, later mixed {percent(lost['share']) if lost['n'] else '-'} "
                         f"[{percent(lost['interval'][0])}, {percent(lost['interval'][1])}] of {lost['n']:,}")
        out.append("  " + "; ".join(parts))
    return out


def _rounds_svg(sf: dict) -> str:
    """Rounds per step: logged, fitted in-sample, the backtest's and the forecast's (inline SVG)."""
    v = sf["validation"]
    keep = np.asarray(sf["series"]["step"], float) <= sf["now"]["step"] + max(sf["now"]["step"] // 2, 10)
    ser = {k: np.asarray(sf["series"][k], float)[keep] for k in ("step", "expected")}  # half a run length ahead
    lines, xs, ys = [], [ser["step"]], [ser["expected"]]
    if v["available"]:
        lines += [{"name": "logged", "x": v["steps"], "y": v["observed"], "kind": "points", "color": "#999"},
                  {"name": "fitted", "x": v["steps"], "y": v["predicted"], "color": COLORS["fit"]}]
        xs.append(np.asarray(v["steps"], float))
        ys += [np.asarray(v["observed"], float), np.asarray(v["predicted"], float)]
        if v["backtest"]["available"]:
            b = v["backtest"]
            lines.append({"name": "backtest", "x": b["steps"], "y": b["model"]["predicted"],
                          "color": COLORS["back"], "dashed": True})
    lines.append({"name": "forecast", "x": ser["step"], "y": ser["expected"], "color": COLORS["proj"], "dashed": True})
    x = np.concatenate(xs)
    y = np.concatenate(ys)
    top = float(np.nanmax(y[np.isfinite(y)])) if np.isfinite(y).any() else 1.0
    cap = sf["settings"]["cap_effective"]
    return svg(f"Generation rounds per step (E[R | filled]; cap {cap or 'none'})", lines,
                (float(np.min(x)), float(np.max(x))), ylim=(0.0, max(top, cap or 0) + 0.5), ylabel="rounds",
                hline=cap or None)


def _risk_svg(rk: dict) -> str:
    """P(stall by step n) with its 90% band over the draws, and the per-step P(stall) (median, band)."""
    x = np.asarray(rk["step"], float)
    cb, pb = np.asarray(rk["cumulative_band"]), np.asarray(rk["p_stall_band"])
    lines = [{"name": "", "x": x, "y": rk["cumulative"], "lo": cb[0], "hi": cb[1], "kind": "band", "color": COLORS["proj"]},
             {"name": "P(stall by step)", "x": x, "y": rk["cumulative"], "color": COLORS["proj"]},
             {"name": "", "x": x, "y": rk["p_stall_median"], "lo": pb[0], "hi": pb[1], "kind": "band",
              "color": COLORS["fail"]},
             {"name": "P(stall) at the step", "x": x, "y": rk["p_stall_median"], "color": COLORS["fail"], "dashed": True}]
    return svg("Stall risk: cumulative and per step (bands: 90% over the bootstrap draws)", lines,
               (float(x[0]), float(x[-1])), ylabel="probability")


def ahead_rows(sf: dict) -> list[int]:
    """Indices into ``sf['series']`` the report shows: the last step and :data:`AHEAD` run lengths past it."""
    ser, now = sf["series"], sf["now"]
    span = max(now["step"] - float(np.min(sf["validation"].get("steps", [0]))), 10.0)
    return sorted({int(np.argmin(np.abs(np.asarray(ser["step"]) - (now["step"] + f * span)))) for f in AHEAD})


def _stall_tables(sf: dict) -> str:
    """``doctor-stall-ahead`` (step, expected rounds, 95th percentile, P(stall)) and ``doctor-stall-levels``."""
    ser, cap = sf["series"], sf["settings"]["cap_effective"]
    now = sf["now"]
    rows = [[f"{now['step']:.0f}", f"{now['expected']:.2f}", _rounds(now["p95"], cap), percent(now["p_stall"])]]
    rows += [[f"{ser['step'][i]:.0f}", f"{ser['expected'][i]:.2f}" if np.isfinite(ser["expected"][i]) else "-",
              _rounds(ser["p95"][i], cap), percent(ser["p_stall"][i])] for i in ahead_rows(sf)]
    out = [table(rows, ["step", "expected rounds", "95th percentile", "P(stall)"], "doctor-stall-ahead")]
    if cap:
        out.append(table([[f"{float(level):g}", _step(st["step"]), _step(st["interval"][0]), _step(st["interval"][1])]
                          for level, st in sf["stall"].items()],
                         ["P(stall) above", "first at step", "95% interval from", "to"], "doctor-stall-levels"))
    if sf["cause"] is None:
        out.append("<p>Cause: none (no stall forecast within the horizon).</p>")
    else:
        out.append(f"<p>Cause: {html.escape(sf['cause'])} ({percent(sf['cause_share_all_fail'])} of dropped groups "
                   f"all-fail).</p>")
    rk = sf.get("risk")
    if rk and rk["available"]:
        fs = rk["first_stall"]
        out.append(table([[f"{rk['step'][i]:.0f}", percent(rk["cumulative"][i]),
                           f"{percent(rk['cumulative_band'][0][i])} - {percent(rk['cumulative_band'][1][i])}",
                           percent(rk["hazard"][i])] for i in risk_rows(sf)],
                         ["step", "P(stall by step)", "90% band over draws", "hazard at the step"], "doctor-stall-risk"))
        out.append(f"<p class=\"doctor-stall-first\">First stall: step {_upper(fs['median'], fs['horizon_step'])} "
                   f"(median), {100 * rk['level']:.0f}% interval {_step(fs['interval'][0])} to "
                   f"{_upper(fs['interval'][1], fs['horizon_step'])}"
                   + (f". {html.escape(rk['survivors_reason'])}: fitted with the likelihood truncated to 0 &lt; k &lt; K"
                      if rk["survivors"] else "") + ".</p>")
    cr = sf.get("calibrated_rounds", {"available": False})
    if cr["available"]:
        out.append(f"<p class=\"doctor-stall-rounds\">Calibrated to the logged rounds of steps {cr['steps'][0]}-"
                   f"{cr['steps'][1]} ({cr['observed']:.2f} logged vs {cr['model']:.2f} model): P(stall) "
                   f"{percent(cr['next']['p_stall'])} at the next step"
                   + (f"; above 0.05 first at step {_step(cr['stall']['0.05'])}" if cap else "")
                   + (f". The record holds {cr['recorded']:,} groups at those steps of the {cr['drawn']:,} drawn: "
                      "its mixed share is the survivors'." if cr["recorded"] < SURVIVORS * cr["drawn"] else ".")
                   + "</p>")
    return "\n".join(out)


def stall_html(d: dict) -> str:
    """Both sections as HTML: the rounds plot and the transition matrix (their text is in the report's text)."""
    parts = ["<h2>Stall forecast</h2>"]
    sf = d.get("stall_forecast")
    if sf and sf["available"]:
        parts.append(_rounds_svg(sf))
        if sf.get("risk", {}).get("available"):
            parts.append(_risk_svg(sf["risk"]))
        parts.append(_stall_tables(sf))
    else:
        parts.append(f"<p>{html.escape(sf['reason'] if sf else 'not computed')}.</p>")
    t = d.get("transitions")
    parts.append("<h2>Transitions between visits</h2>")
    if t and t["available"]:
        parts.append(table([[_SHORT[s], *(f"{percent(t['matrix'][i][j])} [{percent(t['interval_lo'][i][j])}, "
                                           f"{percent(t['interval_hi'][i][j])}] ({int(t['counts'][i][j]):,})"
                                           for j in range(3))] for i, s in enumerate(t["states"])],
                           ["from", *(f"to {_SHORT[s]}" for s in t["states"])], "doctor-transitions"))
    else:
        parts.append(f"<p>{html.escape(t['reason'] if t else 'not computed')}.</p>")
    return "\n".join(parts)
