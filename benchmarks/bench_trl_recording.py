"""Cost of the TRL integration: the same tiny GRPOTrainer run with and without GroupRecorder, in one process.

    python benchmarks/bench_trl_recording.py                # 4 pairs of 20-step runs, alternating
    python benchmarks/bench_trl_recording.py --pairs 6 --steps 40

Two figures, both from this one run:

* wall ratio: median train() time with the recorder / without it, over ``--pairs`` alternating
  pairs of runs (same seed, same model size, same data); noisy on a shared machine;
* self time: the time spent inside the recorder's own code (timed around each of its calls) as a
  share of the recorded runs' train() time, in wall time and in the training thread's CPU time
  (``time.thread_time``: the CPU time of that thread alone, which other processes' load barely
  changes), plus the CPU time its writer thread spends off the training thread.

The target is <= 2 % of a step. The tiny model makes a step about as cheap as TRL allows, so the
share here is an upper bound for real models (where a step costs seconds to minutes).
Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
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
    from trl_tiny import make_trainer

    from grpo_lab.sims.trl import GroupRecorder

    trainer = make_trainer(tmp, [], max_steps=steps, steps_per_generation=2, gradient_accumulation_steps=2,
                           per_device_train_batch_size=16, n_prompts=16)
    own, own_cpu, writer_cpu = [0.0], [0.0], [0.0]
    if record:
        rec = GroupRecorder(tmp / "rec")
        # the recorder's work: per generation batch (_ids, _on_batch) and per step (on_step_end: the flush);
        # its method wrappers add only a tensor-to-numpy copy and an attribute check around TRL's calls
        for name in ("_ids", "_on_batch", "on_step_end", "on_train_end"):
            _timed(rec, name, own, own_cpu)
        rec.attach(trainer)
        _timed(rec.appender, "_write", [0.0], writer_cpu)
    t, c = time.perf_counter(), time.thread_time()
    trainer.train()
    return {"wall": time.perf_counter() - t, "cpu": time.thread_time() - c, "own": own[0], "own_cpu": own_cpu[0],
            "writer_cpu": writer_cpu[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    plain, recorded = [], []
    with tempfile.TemporaryDirectory() as d:
        one_run(Path(d) / "warm", 2, True)  # imports and first-call costs out of the figures
        for i in range(a.pairs):
            for record in ((False, True) if i % 2 == 0 else (True, False)):
                (recorded if record else plain).append(one_run(Path(d) / f"r{i}{int(record)}", a.steps, record))
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    col = (lambda runs, k: np.array([r[k] for r in runs]))
    mp, mr = float(np.median(col(plain, "wall"))), float(np.median(col(recorded, "wall")))
    print(f"tiny GRPOTrainer run, {a.steps} steps, 64 rollouts/step, 1 torch thread; load average {load} "
          f"on {os.cpu_count()} cores")
    print(f"without recorder  median {mp:.3f} s   runs {', '.join(f'{x:.3f}' for x in col(plain, 'wall'))}")
    print(f"with recorder     median {mr:.3f} s   runs {', '.join(f'{x:.3f}' for x in col(recorded, 'wall'))}")
    print(f"wall ratio        {mr / mp:.4f}  (with / without)")
    own, own_cpu, cpu = col(recorded, "own"), col(recorded, "own_cpu"), col(recorded, "cpu")
    print(f"recorder self time  wall {np.median(own) * 1000 / a.steps:.2f} ms per step = "
          f"{100 * np.median(own / col(recorded, 'wall')):.2f} % of a recorded run; "
          f"CPU {np.median(own_cpu) * 1000 / a.steps:.2f} ms per step = {100 * np.median(own_cpu / cpu):.2f} % "
          f"of the training thread's CPU time (median of {len(recorded)})")
    print(f"writer thread CPU   {np.median(col(recorded, 'writer_cpu')) * 1000 / a.steps:.2f} ms per step "
          f"(off the training thread)")
    print(f"training thread CPU median {np.median(col(plain, 'cpu')) / a.steps * 1000:.1f} ms per step without, "
          f"{np.median(cpu) / a.steps * 1000:.1f} with")


if __name__ == "__main__":
    main()
