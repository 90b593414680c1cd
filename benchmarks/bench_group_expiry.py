"""Benchmark: the group path's expiry on one shipped record by each model (``forecast(model="trend" | "drift")``,
partial as ``watch`` asks it and whole), and the diagnosis as ``grpo-lab watch`` asks it (``only="tracker"``, the
default model) and whole, with ``forecast``'s own seconds; the baseline measured in the same run: one
``summarise`` of the record (``grpo-lab inspect``).

Wall clock and this process's CPU time (a shared machine inflates the wall clock far more). Each diagnosis starts
from no kept drift measurement (:func:`.drift.forget_measured`), as a fresh ``watch`` poll of a grown record does.

    python benchmarks/bench_group_expiry.py [RECORD] [--repeats 2] [--config verl.yaml]
"""

from __future__ import annotations

import argparse
import time

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.drift import forget_measured
from grpo_lab.sims.doctor.forecast import forecast
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.record import read_record, summarise


def timed(fn, repeats: int) -> tuple[float, float, object]:
    best_w = best_c = float("inf")
    out = None
    for _ in range(repeats):
        forget_measured()
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_w, best_c = min(best_w, time.perf_counter() - w), min(best_c, time.process_time() - c)
    return best_w, best_c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record", nargs="?", default="runs/broad-g4-dr_grpo-ds-lr0.0008-s1")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    rec = read_record(args.record)
    g = run_groups(rec, None)
    rows = [("summarise (baseline)", lambda: summarise(rec)),
            ("forecast trend, partial", lambda: forecast(g, full=False, model="trend")),
            ("forecast drift, partial (no band, no half split)", lambda: forecast(g, full=False, model="drift")),
            ("forecast trend, whole", lambda: forecast(g, model="trend")),
            ("forecast drift, whole", lambda: forecast(g, model="drift")),
            ("diagnose only='tracker' (watch)", lambda: diagnose(rec, only="tracker")),
            ("diagnose (whole)", lambda: diagnose(rec))]
    print(f"record {args.record}: best of {args.repeats}")
    print("| call | wall s | CPU s | forecast s (wall) |")
    print("| --- | --- | --- | --- |")
    for name, fn in rows:
        w, c, out = timed(fn, args.repeats)
        fc = out.get("timings", {}).get("forecast") if isinstance(out, dict) else None
        print(f"| {name} | {w:.2f} | {c:.2f} | {'-' if fc is None else f'{fc:.2f}'} |", flush=True)


if __name__ == "__main__":
    main()
