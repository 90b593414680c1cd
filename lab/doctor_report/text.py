r"""The diagnosis as plain text (the command line's report), from :func:`grpo_lab.sims.doctor.diagnose`'s dict."""

from __future__ import annotations

import math

from grpo_lab.sims.formatting import percent

from .audit import audit_text
from .rules import rules_text
from .cost import cost_lines
from .honesty import intervals_text
from .samplers import samplers_text
from .scalars import scalars_text, side_by_side_lines
from .stall import stall_lines, transitions_lines
from .when import SAMPLERS_NOTE, backtest_line, predictive_lines, rewards_lines, when_lines

__all__ = ["text_report", "num", "gof_text", "BOUND_WORDS"]


BOUND_WORDS = ("a parameter of the Beta fit is at its bound (1e-3 or 1e5): the groups do not limit it there, so it "
               "is the bound's value, not the run's, and has no standard error")


def gof_text(g: dict) -> str:
    """The chi-square's verdict; no test where pooling left fewer cells than the fit has parameters + 2 (df < 1) or
    the p-value is not a number."""
    if g["df"] < 1 or g.get("p_value") is None or not math.isfinite(g["p_value"]):
        return f"chi-square not testable ({g['cells']} cells after pooling, too few for the fit's parameters)"
    return f"chi-square p = {num(g['p_value'])} (df {g['df']})" + ("  POOR FIT" if g["poor"] else "")


def num(x, spec=".3g") -> str:
    """``x`` formatted with ``spec``; "-" for None or a non-finite float."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)


def _steps(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def text_report(d: dict) -> str:
    """A plain-text summary of :func:`~.diagnose.diagnose`'s result (a scalars-only one: :func:`.scalars.scalars_text`)."""
    if d.get("scalars_only"):
        return "\n".join([scalars_text(d), *rules_text(d)])
    r, f, fc = d["run"], d["fit"], d["forecast"]
    ou, pu = d["observed_unanimous"], d["predicted_unanimous"]
    lines = [f"run {r['name'] or '-'}: {r['groups']:,} groups over {r['steps']} steps, {r['prompts']:,} prompts, "
             f"K = {r['K']}" + (" (rewards binarised at 0.5)" if r["binarised"] else "")]
    lines += when_lines(d["when"]) + backtest_line(d.get("backtest")) + rewards_lines(r)
    lines.append(f"fit: Beta(alpha {f['alpha']:.3f} +/- {f['se_alpha']:.3f}, beta {f['beta']:.3f} +/- "
                 f"{f['se_beta']:.3f}), mean pass rate {f['mean']:.3f}; " + gof_text(f["gof"]))
    if f.get("at_bound"):
        lines.append("  " + BOUND_WORDS)
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
                 f"poor chi-square in {sum(w['gof']['poor'] for w in win)}"
                 + (f"; a parameter at its bound in {sum(bool(w.get('at_bound')) for w in win)}"
                    if any(w.get("at_bound") for w in win) else ""))
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
                     f"{num(row['rollouts_per_useful_group'], '.1f'):>10s}"
                     + (f"   | {percent(extra['effective_group_rate'])}, "
                        f"{num(extra['rollouts_per_useful_group'], '.1f')}" if extra else ""))
    for row in d["dapo"]:
        if row["K"] == r["K"]:
            lines.append(f"DAPO at K = {row['K']}, batch {row['batch_groups']}: amplification "
                         f"{row['amplification_expected']:.2f}x expected, {num(row['amplification_p95'])} rounds "
                         f"at the 95th percentile")
    b = d["band"]
    lines.append(f"band [{b['lo']:g}, {b['hi']:g}]: keeps {percent(b['kept_share'])} of prompts, effective rate "
                 f"{percent(b['effective_group_rate_kept'])} (all prompts {percent(b['effective_group_rate_all'])})")
    lines.append("coverage: " + ", ".join(f"{k} {percent(v)}" for k, v in d["coverage"].items()))
    lines.extend(samplers_text(d["samplers"]))
    lines.append(SAMPLERS_NOTE)
    bt = fc["backtest"]
    lines.append(f"forecast: {d['when']['expiry']['said']}; effective rate now {percent(fc['observed_rate_now'])} "
                 f"observed, {percent(fc['rate_now'])} model; crossing {_steps(fc['crossing_step'])} "
                 f"[{_steps(fc['crossing_interval'][0])}, {_steps(fc['crossing_interval'][1])}]")
    lines += predictive_lines(fc["projection"], "effective rate")
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
    lines += rules_text(d)
    lines.extend(stall_lines(d) + cost_lines(d) + transitions_lines(d) + side_by_side_lines(d))
    lines.append(f"open in the lab: ?{d['lab_query']}")
    return "\n".join(lines)
