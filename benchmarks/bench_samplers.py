"""Computation time of the lab's Samplers tab, beside plain GRPO's closed form in the same run.

For the lab's default population (600 prompts from Beta(2, 3), seed 1302, K = 8) and for 20,000 prompts, the
median over ``--repeats`` runs of:

* ``plain GRPO alone``: :func:`grpo_lab.sims.samplers.closed.plain` on the pass rates (the baseline: the
  cheapest row of the table);
* ``table (progress moved)``: :func:`grpo_lab.views.samplers.SamplersView.update` after a progress change, its
  expiries cached (what the tab does when the progress slider moves): seven samplers, the HTML table;
* ``table + expiries (K moved)``: the same after a K change (the expiries searched again on the population's
  600-point quantile sketch);
* ``compare() in full``: :func:`grpo_lab.sims.samplers.compare` with nothing cached (the command line's cost).

The target (issue 26) is an update within 100 ms of a control change. Timings on a shared machine are noisy:
read the ratios to plain GRPO's time as well as the milliseconds.

Usage: python benchmarks/bench_samplers.py [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from grpo_lab.sims.population import draw_population
from grpo_lab.sims.samplers import closed, compare
from grpo_lab.state import LabState
from grpo_lab.views.samplers import SamplersView


def _median_ms(fn, repeats: int) -> float:
    """Median wall-clock ms of ``fn``; the median CPU ms of this process goes to _median_ms.cpu."""
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(1000 * (time.perf_counter() - t))
        cpu.append(1000 * (time.process_time() - c))
    _median_ms.cpu = statistics.median(cpu)
    return statistics.median(times)


def measure(n: int, repeats: int) -> dict:
    lab = LabState(n_prompts=n)
    view = SamplersView(lab)  # draws the population, computes the expiries once
    p = draw_population(n, lab.a, lab.b, lab.seed).pass_rates
    steps = iter(range(10**6))

    def move_progress():
        lab.progress = (next(steps) % 19 + 1) / 20  # a new value each time: the watcher fires

    def move_k():
        lab.K = 8 if lab.K != 8 else 9

    out = {"prompts": n, "_view": view}
    for key, fn in (("plain", lambda: closed.plain(p, 8, 4.0)), ("progress", move_progress), ("k", move_k),
                    ("compare", lambda: compare(p, 8, 0.0))):
        out[f"{key}_ms"] = _median_ms(fn, repeats)
        out[f"{key}_cpu_ms"] = _median_ms.cpu
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    rows = [measure(n, args.repeats) for n in (600, 20_000)]
    for r in rows:
        r.pop("_view")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"load average before: {' '.join(f'{x:.1f}' for x in load)} on {os.cpu_count()} cores")
    print(f"median of {args.repeats}, wall ms / this process's CPU ms:")
    print(f"{'prompts':>8}  {'plain GRPO alone':>16}  {'table (progress moved)':>22}  {'table + expiries (K moved)':>26}"
          f"  {'compare() in full':>17}")
    cell = lambda r, k, w: f"{r[k + '_ms']:.1f} / {r[k + '_cpu_ms']:.1f}".rjust(w)  # noqa: E731
    for r in rows:
        print(f"{r['prompts']:>8,}  {cell(r, 'plain', 16)}  {cell(r, 'progress', 22)}  {cell(r, 'k', 26)}"
              f"  {cell(r, 'compare', 17)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
