"""Following a growing tracker log: each refresh reads what was appended, beside a full re-read of the same bytes.

The log: ``--steps`` steps (default 10,000) of ``--scalars`` scalars (default 40), written by PyTorch's
``SummaryWriter`` (TensorBoard; :func:`bench_trackers.write_log`, the log of the tracker ingest benchmark), the
same values as a tinker-cookbook-shaped ``metrics.jsonl``, and as an MLflow run written by MLflow's own client into
a file store (``log_batch``, 1,000 values a call; tinker's metric names). The follower
(:class:`grpo_lab.sims.ingest.trackers.follow.LogFollower`) first reads 90% of the log, then the rest lands in
``--pieces`` pieces (a file's bytes cut anywhere, mid-record; an MLflow run's steps logged by the client); after each
piece the refresh is timed beside :func:`grpo_lab.sims.ingest.trackers.read_scalars` of the log as it stands (what
the Replay did at every change before), in the same process, and the two records are checked equal.

``watch``: one poll of ``grpo-lab watch`` on the metrics.jsonl, incremental (the follower's refresh, then the
doctor's :class:`~grpo_lab.sims.doctor.scalars_watch.StallWatch` update) beside the poll watch made before #40 (the
signature of every file under the folder, a full re-read, the same update), each with its own StallWatch fed every
piece, their forecasts checked equal. Printed: the read and the whole poll, median of the pieces.

Printed: the median of each, the bytes each read, and the load average (two cores shared with other work: compare
the columns of one run).

Run: ``python benchmarks/bench_follow.py [--formats jsonl tensorboard mlflow watch] [--cache DIR]``.
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


def jsonl_rows(path: Path):
    """``(step, {name: value})`` of every line of a metrics.jsonl."""
    for line in path.read_text().splitlines():
        row = json.loads(line)
        yield row.pop("step"), row


def mlflow_client(store: Path):
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=store.resolve().as_uri())


def log_mlflow(client, run_id: str, rows) -> None:
    """``rows`` logged with MLflow's own client, 1,000 values a ``log_batch`` call (MLflow's limit)."""
    from mlflow.entities import Metric

    batch = []
    for step, values in rows:
        batch += [Metric(k, float(v), 0, int(step)) for k, v in values.items()]
        if len(batch) >= 1000:
            client.log_batch(run_id, metrics=batch)
            batch = []
    if batch:
        client.log_batch(run_id, metrics=batch)


def run_mlflow(store: Path, rows: list, pieces: int) -> dict:
    """The MLflow run: 90% of ``rows`` logged, then the rest in ``pieces`` (see the module docstring)."""
    from grpo_lab.sims.ingest.trackers import read_scalars
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    client = mlflow_client(store)
    run_id = client.create_run(client.create_experiment("bench"), run_name="run").info.run_id
    client.log_param(run_id, "group_size", 8)
    start = int(len(rows) * 0.9)
    log_mlflow(client, run_id, rows[:start])
    follower = LogFollower(str(store), "mlflow")
    follower.refresh()
    inc, full, inc_bytes = [], [], []
    cuts = np.linspace(start, len(rows), pieces + 1).astype(int)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        log_mlflow(client, run_id, rows[lo:hi])
        t = time.perf_counter()
        rec = follower.refresh()
        inc.append(time.perf_counter() - t)
        inc_bytes.append(follower.bytes_read)
        t = time.perf_counter()
        whole = read_scalars(str(store), fmt="mlflow")
        full.append(time.perf_counter() - t)
        assert all(np.array_equal(rec.steps[k], whole.steps[k], equal_nan=True) for k in whole.steps), "the reads differ"
    size = sum(f.stat().st_size for f in store.rglob("metrics/**/*") if f.is_file())
    return {"steps": len(rec.steps["step"]), "size": size, "inc_ms": 1000 * statistics.median(inc),
            "full_ms": 1000 * statistics.median(full), "inc_bytes": int(statistics.median(inc_bytes))}


def old_watch_signature(path: Path) -> tuple:
    """What watch compared between polls before #40: (name, size, mtime) of every file under the folder."""
    files = sorted(x for x in path.rglob("*") if x.is_file())
    return tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files[:10_000])


def run_watch(log: Path, pieces: int) -> dict:
    """One watch poll, incremental beside the full re-read (see the module docstring)."""
    from grpo_lab.commands.watch import read_tracker
    from grpo_lab.sims.doctor.scalars_watch import StallWatch
    from grpo_lab.sims.doctor.trainer_config import read_trainer_config
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    settings = read_trainer_config(None, gen_batch_size=96, train_batch_size=64, max_num_gen_batches=3)
    data = log.read_bytes()
    start = int(len(data) * 0.9)
    log.write_bytes(data[:start])
    follower = LogFollower(str(log.parent), "auto", num_generations=8)
    w_inc, w_full = StallWatch(settings, num_generations=8), StallWatch(settings, num_generations=8)
    w_inc.update(follower.refresh())
    w_full.update(read_tracker(log.parent, num_generations=8))
    times = {"inc_read": [], "inc_poll": [], "full_read": [], "full_poll": []}
    inc_bytes = []

    def inc():
        rec = follower.refresh()
        t = time.perf_counter()
        return rec, w_inc.update(rec), t

    def full():
        old_watch_signature(log.parent)
        whole = read_tracker(log.parent, num_generations=8)
        t = time.perf_counter()
        return whole, w_full.update(whole), t

    for n, cut in enumerate(np.linspace(start, len(data), pieces + 1).astype(int)[1:]):
        with open(log, "ab") as fh:
            fh.write(data[os.path.getsize(log):cut])
        got = {}
        for name, poll in (("inc", inc), ("full", full))[::1 if n % 2 == 0 else -1]:  # each first in turn
            t0 = time.perf_counter()
            rec, ev, t1 = poll()
            t2 = time.perf_counter()
            times[f"{name}_read"].append(1000 * (t1 - t0))
            times[f"{name}_poll"].append(1000 * (t2 - t0))
            got[name] = (rec, ev)
        assert (got["inc"][1] or {}).get("forecast") == (got["full"][1] or {}).get("forecast"), "the polls differ"
        rec = got["inc"][0]
        inc_bytes.append(follower.bytes_read)
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update(steps=len(rec.steps["step"]), size=len(data), inc_bytes=int(statistics.median(inc_bytes)))
    return out


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
    ap.add_argument("--formats", nargs="+", default=["jsonl", "tensorboard", "mlflow", "watch"],
                    choices=["jsonl", "tensorboard", "mlflow", "watch"])
    ap.add_argument("--cache", help="folder to keep the TensorBoard log in and reuse (writing it takes ~30 s)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    try:
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
        print(f"{'format':<12} {'steps':>6} {'MB':>6} {'refresh ms':>11} {'bytes read':>11} {'full re-read ms':>16}")
        for fmt in args.formats:
            if fmt == "watch":
                log = tmp / "watch" / "metrics.jsonl"
                write_jsonl(log, args.steps, args.scalars)
                r = run_watch(log, args.pieces)
                print(f"{'watch poll':<12} {r['steps']:>6} {r['size'] / 1e6:6.1f} {r['inc_read']:11.1f} "
                      f"{r['inc_bytes']:>11,} {r['full_read']:16.1f}   (with the forecast update: "
                      f"{r['inc_poll']:.1f} ms incremental, {r['full_poll']:.1f} ms full)")
                continue
            if fmt == "mlflow":
                src = tmp / "jsonl-src" / "metrics.jsonl"
                write_jsonl(src, args.steps, args.scalars)
                r = run_mlflow(tmp / "mlruns", list(jsonl_rows(src)), args.pieces)
                print(f"{fmt:<12} {r['steps']:>6} {r['size'] / 1e6:6.1f} {r['inc_ms']:11.1f} {r['inc_bytes']:>11,} "
                      f"{r['full_ms']:16.1f}")
                continue
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
