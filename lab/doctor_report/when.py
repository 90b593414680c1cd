r"""The one forecast of "when" (:func:`grpo_lab.sims.doctor.when.when`), the rewards' kind and the back-test, as the
lines every surface prints: the text report, the HTML page and the lab's Diagnose section (the same strings),
``grpo-lab watch`` (:func:`stall_words`)."""

from __future__ import annotations

import html

from grpo_lab.sims.formatting import percent

__all__ = ["when_lines", "when_html", "backtest_line", "rewards_lines", "stall_words", "interval_words",
           "predictive_lines", "SAMPLERS_NOTE"]


def interval_words(x) -> str:
    """"[lo, hi]" of a step interval; a missing upper end reads "beyond the horizon"."""
    lo, hi = x or (None, None)
    return f"[{'-' if lo is None else f'{lo:.0f}'}, {'beyond the horizon' if hi is None else f'{hi:.0f}'}]"


def stall_words(s: dict) -> str:
    """The first stall in words: "step 168 [164, 175] (90%)" or "not within the horizon"."""
    if s.get("step") is None:
        return "not within the horizon"
    return f"step {s['step']:.0f} {interval_words(s['interval'])} ({100 * s['level']:.0f}%)"


def when_lines(w: dict) -> list[str]:
    """The report's "when" lines: the expiry and the first stall, each as checked against the log."""
    e, s = w["expiry"], w["stall"]
    out = [f"when: expiry ({e['source']}, mixed share < {e['threshold']:g}): "
           + (f"step {e['step']:.0f} {interval_words(e['interval'])} ({100 * e['level']:.0f}%)"
              if e["step"] is not None else e["said"])]
    if s["available"] and "step" in s:
        out.append(f"when: first stall ({s['source']}): {stall_words(s)}"
                   + (f"; cause: {s.get('cause_said')}" if s.get("cause_said") else ""))
    else:
        out.append(f"when: first stall: {s.get('reason', 'not forecast')}")
    out += [f"  checked against the log: {v['said']}" for v in w["verdicts"]
            if not v["holds"] and v["said"] not in (e["said"], s.get("cause_said"))]
    tail = w.get("logged_tail")
    if tail is not None:
        lo, hi = tail["mixed_interval"]
        out.append(f"  the log's last {tail['rows']} rows (steps {tail['steps'][0]}-{tail['steps'][1]}): "
                   f"{percent(tail['mixed'])} mixed [{percent(lo)}, {percent(hi)}]")
    out.append("  other step figures below answer other questions: " + "; ".join(
        f"{o['figure']}: {o['is']}" for o in w["other"]))
    return out


SAMPLERS_NOTE = ("  the 'expires' column: a simulated fresh run of the prompt set on the fitted population, per sampler; "
                 "not this run's forecast (the 'when' lines at the top)")


def backtest_line(bt: dict | None, head: str = "back-test") -> list[str]:
    """"back-test: on this run's history the 90% band held h of n later rows ..." (empty when not asked); a record
    with groups adds the per-step shares' fit's line (``bt['scalars']``)."""
    if bt is None:
        return []
    extra = backtest_line(bt["scalars"], "  back-test of the per-step shares' fit (beside)") if "scalars" in bt else []
    if not bt.get("available"):
        return [f"{head}: not available: {bt.get('reason', 'not run')}"] + extra
    per = ", ".join(f"cut at {100 * x['cut']:.0f}% (step {x['fit_until_step']}): {x['held']} of {x['scored']}"
                    for x in bt["cuts"] if "held" in x)
    return [f"{head} ({bt.get('model', 'forecast')}): on this run's history the {100 * bt['level']:.0f}% band held "
            f"{bt['held']} of {bt['scored']} later rows ({percent(bt['coverage'])}); median absolute error of the "
            f"median {100 * bt['median_abs_error']:.1f} points{_width(bt)} ({per})"] + extra


def _width(bt: dict) -> str:
    """", the band 12.5 points wide (median)", or that it spans every share (a band that cannot miss)."""
    w = bt.get("median_width")
    if w is None:
        return ""
    return ", the band spanning 0-100% at most rows (it cannot miss there)" if w >= 0.999 else \
        f", the band {100 * w:.1f} points wide (median)"


def rewards_lines(run: dict) -> list[str]:
    """The rewards' kind with its evidence, and the run's notes (NaN / inf rows, rewards that are not binary)."""
    out = []
    if "rewards" in run:
        out.append(f"rewards: {run['rewards']} ({'; '.join(run.get('rewards_why', []))})")
    out += [f"note: {n}" for n in run.get("notes", [])]
    return out


def when_html(d: dict) -> str:
    """The same lines as a paragraph block at the top of the page (``doctor-when``)."""
    lines = when_lines(d["when"]) + backtest_line(d.get("backtest")) + rewards_lines(d["run"])
    return "<div class=\"doctor-when\">" + "".join(f"<p>{html.escape(x)}</p>" for x in lines) + "</div>"


def predictive_lines(proj: dict, what: str) -> list[str]:
    """The projection's 90% predictive band at its first, middle and last step, in one line."""
    pr = proj.get("predictive")
    if not pr:
        return []
    st = proj["step"]
    idx = sorted({0, len(st) // 2, len(st) - 1})
    return [f"  {what} a row of {pr['groups']:g} groups will log, {100 * pr['level']:.0f}% predictive band (the "
            f"drift's uncertainty and the row's binomial noise" + (f", over-dispersed x{pr['dispersion']:.2f} as the "
            "fitted rows are" if pr["dispersion"] > 1.0 else "") + "): " + ", ".join(
                f"step {st[i]:.0f} [{percent(pr['lo'][i])}, {percent(pr['hi'][i])}]" for i in idx)]
