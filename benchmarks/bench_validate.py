"""Benchmark: `grpo-lab validate` (400,000 groups per setting, full grid) against the plain approach.

The plain approach draws a (groups x K) uniform matrix per setting; the core's
simulator follows each group's rollouts only until the first disagreement
(run-length method, same distribution). Both run here, in one process, several
times; the script prints wall and CPU seconds (median of the repeats) and the ratio.

    python benchmarks/bench_validate.py [--groups 400000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

from grpo_lab.sims.montecarlo import DEFAULT_GRID, simulate_groups, simulate_groups_matrix, validate


def timed(fn, repeats):
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=400_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"grid: {len(DEFAULT_GRID)} (p, K) pairs, {args.groups:,} groups each, median of {args.repeats} runs")
    rows = []
    for name, sim in (("plain (groups x K) matrix", simulate_groups_matrix), ("grpo-lab validate (run-length)", simulate_groups)):
        wall, cpu, res = timed(lambda: validate(n_groups=args.groups, seed=0, simulator=sim), args.repeats)
        rows.append((name, wall, cpu, res))
        print(f"{name:<32} wall {wall:7.3f} s   cpu {cpu:7.3f} s   max|MC-exact| {res['max_abs_diff']:.2e}"
              f"   passed {res['passed']}")
    print(f"speed-up (wall): {rows[0][1] / rows[1][1]:.1f}x   target: full validation < 1 s of compute "
          f"-> {'met' if rows[1][2] < 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
