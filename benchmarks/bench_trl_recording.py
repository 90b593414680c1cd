"""Cost of the TRL integration: the same tiny GRPOTrainer run with and without GroupRecorder, in one process.

    python benchmarks/bench_trl_recording.py                # 8 interleaved pairs of 30-step runs
    python benchmarks/bench_trl_recording.py --pairs 12 --steps 40

Figures, all from this one run (pairs alternate which arm goes first; same seed, model, data):

* wall ratio: each pair's train() wall time with the recorder / without it; the median over
  pairs and the spread (quartiles, min-max). Wall time is what the 2 % target is about, and the
  noisiest figure on a shared machine;
* CPU ratio: the same with the training thread's CPU time (``time.thread_time``: that thread
  alone, which other processes' load changes much less than wall time), and with the recorder's
  writer thread's CPU time added to the recorded run's (the whole CPU cost of recording);
* the end of the run: ``on_train_end`` (the last flush, then waiting until the writer thread has
  the record complete on disk, fsyncs included) is paid once per run, not per step; the wall ratio
  is also given without it (per-step cost), beside its median in milliseconds;
* self time: the time inside the recorder's own per-batch and per-step code (timed around each of
  its calls) per step, and as a share of the recorded run, in wall and in training-thread CPU time;
  plus the CPU time its writer thread spends off the training thread.

The target is <= 2 % of a step. The tiny model makes a step about as cheap as TRL allows
(32 rollouts of 4 tokens: tens of milliseconds), so the share here is an upper bound for real
models (where a step costs seconds to minutes). Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _timed(obj, name, acc, cpu):
    """Wrap obj.name to add its wall time to acc[0] and the calling thread's CPU time to cpu[0]."""
    fn = getattr(obj, name)

    def wrapper(*a, **kw):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*a, **kw)
        finally:
            acc[0] += time.perf_counter() - t
            cpu[0] += time.thread_time() - c

    setattr(obj, name, wrapper)


def one_run(tmp: Path, steps: int, record: bool) -> dict:
    """Wall and CPU seconds of one tiny run: train(), the recorder's own calls, its writer thread."""
    from grpo_lab.testing.trl_tiny import make_trainer

    from grpo_lab.trl_recorder import GroupRecorder

    trainer = make_trainer(tmp, [], max_steps=steps, steps_per_generation=2, gradient_accumulation_steps=2,
                           per_device_train_batch_size=16, n_prompts=16)
    own, own_cpu, writer_cpu, end, end_cpu = [0.0], [0.0], [0.0], [0.0], [0.0]
    if record:
        rec = GroupRecorder(tmp / "rec")
        # the recorder's work: per generation batch (_ids, _on_batch) and per step (on_step_end: the flush);
        # its method wrappers add only a tensor-to-numpy copy and an attribute check around TRL's calls
        for name in ("_ids", "_on_batch", "on_step_end"):
            _timed(rec, name, own, own_cpu)
        _timed(rec, "on_train_end", end, end_cpu)  # once per run: the last flush, waiting for the disk
        rec.attach(trainer)
        _timed(rec.appender, "_write", [0.0], writer_cpu)
    t, c = time.perf_counter(), time.thread_time()
    trainer.train()
    return {"wall": time.perf_counter() - t, "cpu": time.thread_time() - c, "own": own[0], "own_cpu": own_cpu[0],
            "writer_cpu": writer_cpu[0], "end": end[0]}


def _spread(x) -> str:
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return f"median {med:.4f}  quartiles {q1:.4f}-{q3:.4f}  min-max {np.min(x):.4f}-{np.max(x):.4f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    plain, recorded = [], []
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as d:
        one_run(Path(d) / "warm", 2, True)  # imports and first-call costs out of the figures
        for i in range(a.pairs):
            for record in ((False, True) if i % 2 == 0 else (True, False)):
                (recorded if record else plain).append(one_run(Path(d) / f"r{i}{int(record)}", a.steps, record))
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    col = (lambda runs, k: np.array([r[k] for r in runs]))
    wp, wr, cp, cr = col(plain, "wall"), col(recorded, "wall"), col(plain, "cpu"), col(recorded, "cpu")
    print(f"tiny GRPOTrainer run, {a.steps} steps of 32 rollouts, 1 torch thread, {a.pairs} interleaved pairs; "
          f"1-min load average {load0:.2f} at start, {load1:.2f} at end, on {os.cpu_count()} cores")
    print(f"wall s/step   without: median {np.median(wp) / a.steps * 1000:.1f} ms   "
          f"with: median {np.median(wr) / a.steps * 1000:.1f} ms")
    end = col(recorded, "end")
    print(f"wall ratio (with / without, per pair)   {_spread(wr / wp)}")
    print(f"  the same without the run's end        {_spread((wr - end) / wp)}  "
          f"(end of run: last flush and wait for the disk, median {np.median(end) * 1000:.1f} ms once per run)")
    print(f"CPU ratio  (training thread, per pair)  {_spread(cr / cp)}")
    print(f"CPU ratio  (training + writer thread)   {_spread((cr + col(recorded, 'writer_cpu')) / cp)}")
    own, own_cpu = col(recorded, "own"), col(recorded, "own_cpu")
    print(f"recorder self time  wall {np.median(own) * 1000 / a.steps:.3f} ms per step = "
          f"{100 * np.median(own / wr):.2f} % of a recorded run; "
          f"CPU {np.median(own_cpu) * 1000 / a.steps:.3f} ms per step = {100 * np.median(own_cpu / cr):.2f} % "
          f"of the training thread's CPU time (medians of {len(recorded)})")
    print(f"writer thread CPU   {np.median(col(recorded, 'writer_cpu')) * 1000 / a.steps:.3f} ms per step "
          f"(off the training thread)")


if __name__ == "__main__":
    main()
