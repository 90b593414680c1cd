"""Tracker ingest speed: a 10,000-step TensorBoard log with 40 scalars a step, beside TensorBoard's own readers.

Writes (once; with ``--cache DIR`` kept and reused) a TRL-shaped log with PyTorch's ``SummaryWriter``:
``--steps`` steps (default 10,000) of ``--scalars`` scalars each (default 40: TRL's
``train/frac_reward_zero_std`` and ``train/reward`` among 38 others), plus the HF ``args`` text with
``num_generations``. Then, in one run, each timed in a fresh child process (wall and CPU seconds; the
imports of the child are inside the figures, as a user sees them):

(a) ``EventAccumulator`` (``tensorboard.backend.event_processing.event_accumulator``, every scalar kept:
    ``size_guidance={"scalars": 0}``), ``Reload()`` then ``Scalars(tag)`` for every tag: what TensorBoard's
    own server does to show the run;
(b) ``EventFileLoader`` (``tensorboard.backend.event_processing.event_file_loader``): the events parsed,
    every scalar value collected, nothing else;
(c) ``read_scalars`` (``grpo_lab.sims.ingest.trackers``): framing, both checksums of every record, parse,
    the TRL dialect mapped onto the standard columns;
(d) ``grpo-lab ingest LOG --out REC``: (c) plus the command line and writing the record;
(e) (d) and then ``grpo-lab diagnose REC --json``: the doctor's whole answer from the log (target: under 10 s).

The log's two read metrics follow a run whose pass rates drift (a Beta(2, 3) population under a logit drift, K = 8,
64 groups a step, shares computed exactly), so the diagnosis fits something plausible; the other 38 are filler.

Run: ``python benchmarks/bench_trackers.py`` (writing the log takes about 30 s: PyTorch's writer checks
CRC32C in Python). Compare the rows of one run; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
kind, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
if kind == "accumulator":
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(path, size_guidance={"scalars": 0})
    acc.Reload()
    n = sum(len(acc.Scalars(tag)) for tag in acc.Tags()["scalars"])
elif kind == "loader":
    import glob
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    for f in sorted(glob.glob(path + "/*tfevents*")):
        for ev in EventFileLoader(f).Load():
            for v in ev.summary.value:
                if v.WhichOneof("value") == "tensor" and v.metadata.plugin_data.plugin_name == "scalars":
                    n += 1
elif kind == "read_scalars":
    from grpo_lab.sims.ingest.trackers import read_scalars
    rec = read_scalars(path)
    n = len(rec.steps["step"])
elif kind in ("cli", "cli_diagnose"):
    import contextlib, io
    from grpo_lab.cli import main
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["ingest", path, "--out", out, "--force", "--json"])
        assert code == 0
        if kind == "cli_diagnose":
            code = main(["diagnose", out, "--json"])
            assert code == 0
    n = -1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0, "n": n, "peak_mb": peak}))
"""


def write_log(path: Path, steps: int, scalars: int) -> None:
    from torch.utils.tensorboard import SummaryWriter

    import numpy as np
    from scipy import stats
    from scipy.special import expit, logit

    K, groups = 8, 64
    w = SummaryWriter(str(path))
    w.add_text("args", json.dumps({"num_generations": K, "logging_steps": 1, "generation_batch_size": groups * K}))
    p0 = stats.beta.ppf((np.arange(2000) + 0.5) / 2000, 2.0, 3.0)  # the population's pass rates, mid-quantiles
    names = ["train/frac_reward_zero_std", "train/reward"] + [f"train/other_{i}" for i in range(scalars - 2)]
    for step in range(1, steps + 1):
        p = expit(logit(p0) + 2.0 * step / steps)  # a logit drift of +2 over the run
        shares = {"train/frac_reward_zero_std": float(np.mean(p ** K + (1 - p) ** K)), "train/reward": float(p.mean())}
        for j, name in enumerate(names):
            w.add_scalar(name, shares.get(name, (step * 7 + j) % 100 / 100), step)
    w.close()


def child(kind: str, log: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, str(log), str(out)], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{kind} failed: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--scalars", type=int, default=40)
    ap.add_argument("--cache", help="folder to keep the log in and reuse")
    ap.add_argument("--repeat", type=int, default=1, help="time each reader this many times (the best is shown)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-trackers-"))
    try:
        base = Path(args.cache) if args.cache else tmp
        log = base / f"tb-drift-{args.steps}x{args.scalars}"
        if not any(log.glob("*tfevents*")):
            t = time.perf_counter()
            write_log(log, args.steps, args.scalars)
            print(f"wrote {log} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        size = sum(f.stat().st_size for f in log.glob("*tfevents*"))
        print(f"log: {args.steps} steps x {args.scalars} scalars, {size / 1e6:.1f} MB; load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
        print(f"{'reader':<46} {'wall s':>7} {'cpu s':>7} {'peak MB':>8}  values")
        rows = [("accumulator", "(a) tensorboard EventAccumulator"), ("loader", "(b) tensorboard EventFileLoader"),
                ("read_scalars", "(c) grpo-lab read_scalars"), ("cli", "(d) grpo-lab ingest (writes the record)"),
                ("cli_diagnose", "(e) grpo-lab ingest, then diagnose")]
        for kind, label in rows:
            best = min((child(kind, log, tmp / "rec") for _ in range(args.repeat)), key=lambda r: r["wall"])
            n = {"accumulator": "scalars", "loader": "scalars", "read_scalars": "steps"}.get(kind)
            print(f"{label:<46} {best['wall']:7.2f} {best['cpu']:7.2f} {best['peak_mb']:8.0f}  "
                  + (f"{best['n']} {n}" if n else ""))
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
