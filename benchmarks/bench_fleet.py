"""A fleet of 50 runs listed and ranked, then refreshed as some grow: each refresh beside a full re-read.

The folder (:func:`grpo_lab.testing.fleet_runs.make_fleet`): ``--runs`` runs (default 50) in turn run records with
groups (written by the core's ``RecordAppender``, still open), scalars-only records and tinker-cookbook
``metrics.jsonl`` logs, ``--steps`` steps each (default 200). Timed, in this process:

1. the first listing: :class:`grpo_lab.fleet.Fleet` finds, reads and forecasts every run, ranked (target: < 2 s);
2. ``--looks`` refreshes (default 5), each after ``--growing`` runs (default 10, a third of each kind) appended
   ``--grow`` steps (default 5): the refresh reads only what changed; beside it, a fresh ``Fleet`` over the same
   folder (a full re-read, what a fleet without incremental reads would do at every look), ranks checked equal.

Then the doctor's forecast (``Fleet(doctor=...)``, :mod:`grpo_lab.fleet_doctor`), on a fresh copy of the folder,
beside the quick-trend listing (``doctor="off"``, ``grpo-lab fleet --quick``) timed in the same run:

3. cold: every run diagnosed (an empty cache folder: ``grpo-lab fleet`` the first time), ``--jobs`` processes at
   once (default: the CPU cores, as ``grpo-lab fleet``); the doctor runs only the stages its "when" reads
   (``diagnose(only="when")``), and beside it, on the same folder with another empty cache, the whole diagnosis
   per run (``Fleet(only=None)``: the fleet before it; rows checked equal; ``--skip-full`` leaves it out);
4. warm: a new fleet and a new cache over the same cache folder (``grpo-lab fleet`` again: nothing diagnosed);
5. refresh after ``--growing`` runs grew: only those diagnosed again;
6. the server's way (``doctor="background"``): the first listing (the trend, labelled pending) and the time until
   every run's doctor forecast has landed.

Printed: seconds and bytes read of each (the two cold listings also their CPU seconds), and the load average (two
cores shared with other work: compare the columns of one run). Run: ``python benchmarks/bench_fleet.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> int:
    from grpo_lab.fleet import Fleet
    from grpo_lab.testing.fleet_runs import grow, make_fleet

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--looks", type=int, default=5)
    ap.add_argument("--growing", type=int, default=10)
    ap.add_argument("--grow", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-full", action="store_true", help="leave out the cold listing by the whole diagnosis")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    try:
        t = time.perf_counter()
        runs = make_fleet(tmp, n=args.runs, steps=args.steps)
        print(f"wrote {args.runs} runs x {args.steps} steps in {time.perf_counter() - t:.1f} s; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
        fleet = Fleet(str(tmp))
        t = time.perf_counter()
        rows = fleet.refresh()
        first = time.perf_counter() - t
        print(f"first listing: {len(rows)} runs read, forecast and ranked in {first:.2f} s "
              f"({fleet.stats['bytes_read'] / 1e6:.1f} MB read)")
        growing = runs[:args.growing]
        print(f"{'look':>4} {'refresh s':>10} {'runs read':>10} {'bytes read':>12} {'full re-read s':>15} "
              f"{'bytes':>12}")
        for look in range(1, args.looks + 1):
            grow(growing, args.grow)
            t = time.perf_counter()
            rows = fleet.refresh()
            inc = time.perf_counter() - t
            stats = dict(fleet.stats)
            full = Fleet(str(tmp))
            t = time.perf_counter()
            again = full.refresh()
            whole = time.perf_counter() - t
            assert [(r["run"], r["steps"], r["left"]) for r in rows] == \
                [(r["run"], r["steps"], r["left"]) for r in again], "the refresh differs from a full re-read"
            print(f"{look:>4} {inc:10.3f} {stats['read']:>10} {stats['bytes_read']:>12,} {whole:15.3f} "
                  f"{full.stats['bytes_read']:>12,}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        _doctor(args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def _timed(fleet) -> tuple[list, float]:
    t = time.perf_counter()
    rows = fleet.refresh()
    return rows, time.perf_counter() - t


def _cpu() -> float:
    """CPU seconds of this process and of its ended children (the diagnosing processes, joined at each refresh's
    end): the work, which the neighbours' load does not stretch as it does the wall clock."""
    import resource

    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


def _doctor(args) -> None:
    """Steps 3-6 of the module docstring."""
    from grpo_lab.fleet import PENDING, Fleet
    from grpo_lab.fleet_doctor import DoctorCache
    from grpo_lab.testing.fleet_runs import grow, make_fleet

    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-doctor-"))
    try:
        runs = make_fleet(tmp / "runs", n=args.runs, steps=args.steps)
        folder, cache = str(tmp / "runs"), tmp / "cache"
        _, quick = _timed(Fleet(folder))
        cold_fleet = Fleet(folder, doctor="now", cache=DoctorCache(cache), jobs=args.jobs)
        c = _cpu()
        rows, cold = _timed(cold_fleet)
        cold_cpu = _cpu() - c
        refused = sum(r["forecast_source"].startswith("trend; the doctor") for r in rows)
        full = None
        if not args.skip_full:
            full_fleet = Fleet(folder, doctor="now", cache=DoctorCache(tmp / "cache-full"), jobs=args.jobs, only=None)
            c = _cpu()
            full_rows, full = _timed(full_fleet)
            full_cpu = _cpu() - c
            assert full_rows == rows, "the whole diagnosis gave other rows than its 'when' stages alone"
        warm_fleet = Fleet(folder, doctor="now", cache=DoctorCache(cache), jobs=args.jobs)
        again, warm = _timed(warm_fleet)
        assert again == rows, "the cache gave other rows"
        print(f"doctor's forecast, {args.runs} runs ({refused} the doctor refuses: the trend shown, labelled); load "
              f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}:")
        print(f"  quick trend only (--quick):        {quick:7.2f} s")
        print(f"  cold (every run diagnosed):        {cold:7.2f} s  ({cold_fleet.stats['diagnosed']} diagnosed, "
              f"{args.jobs} processes; the doctor's 'when' stages alone; {cold_cpu:.1f} CPU s)")
        if full is not None:
            print(f"  cold, the whole diagnosis (before): {full:6.2f} s  (the same rows; {full_cpu:.1f} CPU s, "
                  f"{full_cpu / cold_cpu:.1f}x)")
        print(f"  warm (a new process, disk cache):  {warm:7.2f} s  ({warm_fleet.stats['diagnosed']} diagnosed)")
        grow(runs[:args.growing], args.grow)
        _, quick_grown = _timed(Fleet(folder))
        _, grown = _timed(warm_fleet)
        print(f"  refresh after {args.growing} grew:            {grown:7.2f} s  ({warm_fleet.stats['diagnosed']} "
              f"diagnosed; the quick trend's listing of the grown folder: {quick_grown:.2f} s)")
        bg = Fleet(folder, doctor="background")
        t = time.perf_counter()
        rows = bg.refresh()
        first = time.perf_counter() - t
        pending = sum(r["forecast_source"] == PENDING for r in rows)
        while bg.doctor_version < args.runs:
            time.sleep(0.05)
        print(f"  background: first listing {first:.2f} s ({pending} rows 'trend, doctor pending'); every doctor's "
              f"forecast in after {time.perf_counter() - t:.2f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
