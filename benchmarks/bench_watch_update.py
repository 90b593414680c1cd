"""Benchmark: one ``grpo-lab watch`` update (:meth:`grpo_lab.sims.doctor.scalars_watch.StallWatch.update`, no
``--emit``) on a 300-step and a 2,000-step simulated DAPO log (verl's loop, K = 8, 96 prompts a round, 64 groups a
step, cap 3; all-pass and all-fail shares logged: a sided log), beside the update before issue 39 item 8, timed in
the same run.

Before (the baseline, :func:`maps_update`, kept here as it was): the three drift maps refitted from the previous
update's fits (:func:`.scalars_fit.fit_models` warm-started, :func:`.scalars_fit.best_fit`), the map's stall forecast
and the risk on the shares' drift (:func:`.drift_shares.with_risk`, which measures the drift itself). After: the
watch's update, one ``only="when"`` diagnosis (:func:`.scalars_diagnose.diagnose_scalars`: the shares' measured
drift gives the fit, expiry, stall forecast and risk).

Each is primed at the log's first n - REPEATS rows (not timed), then timed at each of the next REPEATS rows, a new
step each (what the watch does at every step); printed: the median wall and CPU seconds of an update, the load average
(two cores shared with other work: compare the columns of one run), and each one's forecast stall at the last row.

    python benchmarks/bench_watch_update.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from grpo_lab.sims.doctor.drift import forget_measured
from grpo_lab.sims.doctor.drift_shares import with_risk
from grpo_lab.sims.doctor.scalars_fit import DRAWS, best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_forecast import stall_forecast
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.doctor.scalars_watch import StallWatch
from grpo_lab.sims.doctor.when import scalars_stall
from grpo_lab.sims.record import RunRecord

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "benchmark"}
LOGS = {300: 0.004, 2000: 0.0006}  #: steps -> the logit drift per step (the run does not stall within its log)


def head(rec: RunRecord, n: int) -> RunRecord:
    """The record as it stood at its first ``n`` rows."""
    return RunRecord(meta=rec.meta, groups=rec.groups, steps={k: v[:n] for k, v in rec.steps.items()})


def maps_update(record: RunRecord, theta: dict) -> float | None:
    """The update before (the module docstring); ``theta`` the previous fits' parameters, updated in place."""
    d = step_shares(record, num_generations=8, settings=SETTINGS)
    fits = fit_models(d, starts=theta)
    theta.update({m: f["theta"] for m, f in fits.items()})
    sf = with_risk(stall_forecast(best_fit(fits), SETTINGS, n_draws=DRAWS), d, None)
    return scalars_stall(sf).get("step")


def _timed(fn) -> tuple[tuple[float, float], object]:
    """((wall seconds, CPU seconds of this process), fn()), the drift measured afresh (a new step is a new record:
    :func:`.drift.measure_drift` keeps the last measurement, which the other update just made on these rows)."""
    forget_measured()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return (time.perf_counter() - t, time.process_time() - c), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| log | before: maps + risk, s / update (wall, CPU) | after: only='when' diagnosis, s / update "
          "(wall, CPU) | stall before | stall after |")
    print("| --- | --- | --- | --- | --- |")
    for steps, rate in LOGS.items():
        rec, stall = simulate_dapo(1.5, 2.0, rate, 8, steps, 96, 64, 3, seed=4)
        n = len(rec.steps["step"])
        theta, watch = {}, StallWatch(SETTINGS, num_generations=8)
        maps_update(head(rec, n - a.repeats), theta)
        watch.update(head(rec, n - a.repeats))
        before, after = [], []
        for i in range(n - a.repeats + 1, n + 1):  # alternated, so both see the same load
            s, old = _timed(lambda: maps_update(head(rec, i), theta))
            before.append(s)
            s, ev = _timed(lambda: watch.update(head(rec, i)))
            after.append(s)
        new = (ev["forecast"] or {}).get("step")
        med = lambda xs: ", ".join(f"{statistics.median(x[j] for x in xs):.2f}" for j in (0, 1))  # noqa: E731
        print(f"| {n:,} steps (simulated stall {stall}) | {med(before)} | {med(after)} | {old} | {new} |", flush=True)


if __name__ == "__main__":
    main()
