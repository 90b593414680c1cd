"""The doctor's back-test (``grpo-lab diagnose --backtest``) on the shipped runs and on simulated logs: how often the
90% predictive band of the logged mixed share held the rows after each cut (40/50/60/70% of the rows).

Prints two rows per record (the group trend's band, the forecast a record with groups reports, and the per-step
shares' fit's): rows scored, rows held and the coverage, per cut and pooled; the median absolute error of the
band's median (points). Simulated logs
(``simulate_shares``: the truth is the model; ``--sim`` replicates of each of two regimes) give the band's coverage
where nothing misfits; the shipped runs are the project's own trainer.

The per-step shares' fit of a record with groups is the one shown beside it (the drift shapes on a sided log, as
``diagnose`` reports for a scalars-only record); the simulated logs are scored both on the drift maps and on the
drift shapes.

Run: ``python benchmarks/doctor_backtest.py [RECORD ...] [--sim 10] [--sim-only]`` (default: every ``runs/*-s1``
record).
"""

from __future__ import annotations

import argparse
import glob
import time

from grpo_lab.sims.doctor.backtest import backtest, backtest_trend
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.scalars_fit import step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares
from grpo_lab.sims.record import read_record


def row(name, bt, seconds) -> str:
    if not bt["available"]:
        return f"| {name} | not available: {bt['reason']} | | | |"
    per = ", ".join(f"{x['held']}/{x['scored']}" for x in bt["cuts"] if "held" in x)
    return (f"| {name} | {per} | {bt['held']} of {bt['scored']} ({100 * bt['coverage']:.1f}%) | "
            f"{100 * bt['median_abs_error']:.1f} | {seconds:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="*")
    ap.add_argument("--sim", type=int, default=10, help="simulated logs per regime (0: none)")
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--sim-only", action="store_true", help="the simulated logs only (no shipped run)")
    args = ap.parse_args()
    paths = [] if args.sim_only else args.records or sorted(glob.glob("runs/*-s1"))
    print("| record | held / scored at cuts 40, 50, 60, 70% | pooled | median abs. error (points) | s |")
    print("| --- | --- | --- | --- | --- |")
    for p in paths:
        t = time.perf_counter()
        rec = read_record(p)
        groups = run_groups(rec, None)
        print(row(f"{p}: group trend", backtest_trend(groups), time.perf_counter() - t), flush=True)
        t = time.perf_counter()
        bt = backtest(step_shares(rec), groups.binarised)  # the model shown beside, its own draws
        print(row(f"{p}: per-step shares' fit", bt, time.perf_counter() - t), flush=True)
    for label, kw in (("simulated saturation (1.5, 2.0, +0.03/step, K 8, 100 x 64)", (1.5, 2.0, 0.03, 8, 100, 64)),
                      ("simulated collapse (2.0, 1.2, -0.02/step, K 4, 100 x 128)", (2.0, 1.2, -0.02, 4, 100, 128))):
        for what, shapes in (("drift maps", False), ("drift shapes, as diagnose reports", True)):
            held = scored = 0
            t = time.process_time()
            for seed in range(args.sim):  # the shapes draw the stall risk's own number of futures
                bt = backtest(step_shares(simulate_shares(*kw, seed=seed)), n_draws=None if shapes else args.draws,
                              shapes=shapes)
                held, scored = held + bt["held"], scored + bt["scored"]
            if args.sim:
                print(f"| {label}, {args.sim} logs, {what} | | {held} of {scored} ({100 * held / scored:.1f}%) | | "
                      f"{time.process_time() - t:.1f} CPU |", flush=True)


if __name__ == "__main__":
    main()
