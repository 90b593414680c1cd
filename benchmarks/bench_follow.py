"""Following a growing tracker log: each refresh reads what was appended, beside a full re-read of the same bytes.

The log: ``--steps`` steps (default 10,000) of ``--scalars`` scalars (default 40), written by PyTorch's
``SummaryWriter`` (TensorBoard; :func:`bench_trackers.write_log`, the log of the tracker ingest benchmark) and the
same values as a tinker-cookbook-shaped ``metrics.jsonl``. The follower
(:class:`grpo_lab.sims.ingest.trackers.follow.LogFollower`) first reads 90% of the file, then the rest lands in
``--pieces`` pieces (cut anywhere: mid-record); after each piece the refresh is timed beside
:func:`grpo_lab.sims.ingest.trackers.read_scalars` of the file as it stands (what the Replay did at every change
before), in the same process, and the two records are checked equal. Printed: the median of each, the bytes each
read, and the load average (two cores shared with other work: compare the columns of one run).

Run: ``python benchmarks/bench_follow.py [--formats jsonl tensorboard] [--cache DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def write_jsonl(path: Path, steps: int, scalars: int) -> None:
    """A metrics.jsonl of the same drift as the TensorBoard log (tinker-cookbook's metric names)."""
    from scipy import stats
    from scipy.special import expit, logit

    K, groups = 8, 64
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "config.json").write_text(json.dumps({"group_size": K, "groups_per_batch": groups}))
    p0 = stats.beta.ppf((np.arange(2000) + 0.5) / 2000, 2.0, 3.0)
    with open(path, "w") as fh:
        for step in range(1, steps + 1):
            p = expit(logit(p0) + 2.0 * step / steps)
            good, bad = float(np.mean(p ** K)), float(np.mean((1 - p) ** K))
            row = {"step": step, "env/all/by_group/frac_mixed": 1 - good - bad, "env/all/by_group/frac_all_good": good,
                   "env/all/by_group/frac_all_bad": bad, "env/all/reward/total": float(p.mean())}
            row.update({f"other_{j}": (step * 7 + j) % 100 / 100 for j in range(scalars - 4)})
            fh.write(json.dumps(row) + "\n")


def run(fmt: str, root: Path, log: Path, pieces: int) -> dict:
    from grpo_lab.sims.ingest.trackers import read_scalars
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    data = log.read_bytes()
    start = int(len(data) * 0.9)
    log.write_bytes(data[:start])
    target = str(log) if fmt == "jsonl" else str(root)
    follower = LogFollower(target, fmt)
    follower.refresh()
    inc, full, inc_bytes = [], [], []
    cuts = np.linspace(start, len(data), pieces + 1).astype(int)[1:]
    for cut in cuts:
        with open(log, "ab") as fh:
            fh.write(data[os.path.getsize(log):cut])
        t = time.perf_counter()
        rec = follower.refresh()
        inc.append(time.perf_counter() - t)
        inc_bytes.append(follower.bytes_read)
        t = time.perf_counter()
        whole = read_scalars(target, fmt=fmt, partial_ok=True)
        full.append(time.perf_counter() - t)
        assert all(np.array_equal(rec.steps[k], whole.steps[k], equal_nan=True) for k in whole.steps), "the reads differ"
    return {"steps": len(rec.steps["step"]), "size": len(data), "inc_ms": 1000 * statistics.median(inc),
            "full_ms": 1000 * statistics.median(full), "inc_bytes": int(statistics.median(inc_bytes))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--scalars", type=int, default=40)
    ap.add_argument("--pieces", type=int, default=20, help="pieces the last 10%% of the log lands in")
    ap.add_argument("--formats", nargs="+", default=["jsonl", "tensorboard"], choices=["jsonl", "tensorboard"])
    ap.add_argument("--cache", help="folder to keep the TensorBoard log in and reuse (writing it takes ~30 s)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    try:
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
        print(f"{'format':<12} {'steps':>6} {'MB':>6} {'refresh ms':>11} {'bytes read':>11} {'full re-read ms':>16}")
        for fmt in args.formats:
            if fmt == "jsonl":
                log = tmp / "jsonl" / "metrics.jsonl"
                write_jsonl(log, args.steps, args.scalars)
                root = log.parent
            else:
                from bench_trackers import write_log

                cached = Path(args.cache or tmp) / f"tb-drift-{args.steps}x{args.scalars}"
                if not any(cached.glob("*tfevents*")):
                    write_log(cached, args.steps, args.scalars)
                root = tmp / "tb"
                shutil.copytree(cached, root)
                log = next(root.glob("*tfevents*"))
            r = run(fmt, root, log, args.pieces)
            print(f"{fmt:<12} {r['steps']:>6} {r['size'] / 1e6:6.1f} {r['inc_ms']:11.1f} {r['inc_bytes']:>11,} "
                  f"{r['full_ms']:16.1f}")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
