"""The forecast line of a run the Replay follows as it grows: the fleet's triage forecast, redone at every new step.

:func:`live_forecast` gives, for a followed run's record as it stands, one line: the mixed share's trend
(:func:`grpo_lab.sims.doctor.fleet.run_forecast`, as ``grpo-lab fleet`` and the Fleet tab rank runs), its forecast
stall where the record carries its own dynamic-sampling config (a grpo-lab run), else its expiry, with the 95%
interval. A few milliseconds, so it follows every poll; the doctor's forecast stays one press away (*Diagnose this
run*). When the log is truncated or replaced the page keeps its last good record, so this line keeps the last good
forecast with it (:class:`grpo_lab.replay.trackers.TrackerFollower`).
"""

from __future__ import annotations

__all__ = ["live_forecast"]


def live_forecast(record) -> str:
    """One line for the page (see the module docstring); empty where the record has no per-step share."""
    from grpo_lab.sims.doctor.fleet import record_series, run_forecast
    from grpo_lab.sims.doctor.trainer_config import settings_from_record

    s, m, g = record_series(record)
    if not len(s):
        return ""
    f = run_forecast(s, m, g, settings_from_record(record.meta))
    head = f"Live forecast at step {f['last_step']} (trend of the mixed share, now {100 * f['mixed_now']:.1f}%): "
    if f["forecast"] is None:
        return head + f["reason"] + "."
    fc = f[f["forecast"]]
    lo, hi = fc["interval"]
    iv = f"95% interval [{'-' if lo is None else f'{lo:.0f}'}, {'-' if hi is None else f'{hi:.0f}'}]"
    what = "stall" if f["forecast"] == "stall" else "mixed share under 50%"
    if fc["step"] is None:
        return head + f"no {what} forecast within the horizon ({iv})."
    when = "now" if f["left"] == 0 else f"near step {fc['step']:.0f}"
    return head + f"{what} {when}, {iv}. Diagnose this run for the doctor's forecast."
