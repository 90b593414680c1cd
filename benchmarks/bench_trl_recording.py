"""Cost of the TRL integration: the same tiny GRPOTrainer run with and without GroupRecorder, in one process.

    python benchmarks/bench_trl_recording.py                # 4 pairs of 20-step runs, alternating
    python benchmarks/bench_trl_recording.py --pairs 6 --steps 40

Two figures, both from this one run:

* wall ratio: median train() time with the recorder / without it, over ``--pairs`` alternating
  pairs of runs (same seed, same model size, same data); noisy on a shared machine;
* self time: the time spent inside the recorder's own code (its method wrappers and callback,
  timed around each call) as a share of the recorded runs' train() time. This one does not
  depend on the machine's other load the way a difference of two wall times does.

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


def _timed(obj, name, acc):
    fn = getattr(obj, name)

    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            acc[0] += time.perf_counter() - t

    setattr(obj, name, wrapper)


def one_run(tmp: Path, steps: int, record: bool) -> tuple[float, float]:
    """(train() seconds, recorder self seconds) of one tiny run."""
    from trl_tiny import make_trainer

    from grpo_lab.sims.trl import GroupRecorder

    trainer = make_trainer(tmp, [], max_steps=steps, steps_per_generation=2, gradient_accumulation_steps=2,
                           per_device_train_batch_size=16, n_prompts=16)
    own = [0.0]
    if record:
        rec = GroupRecorder(tmp / "rec")
        # the recorder's work: per generation batch (_ids, _on_batch) and per step (on_step_end: the flush);
        # its method wrappers add only a tensor-to-numpy copy and an attribute check around TRL's calls
        for name in ("_ids", "_on_batch", "on_step_end", "on_train_end"):
            _timed(rec, name, own)
        rec.attach(trainer)
    t = time.perf_counter()
    trainer.train()
    return time.perf_counter() - t, own[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    plain, recorded, selfs = [], [], []
    with tempfile.TemporaryDirectory() as d:
        one_run(Path(d) / "warm", 2, True)  # imports and first-call costs out of the figures
        for i in range(a.pairs):
            for record in ((False, True) if i % 2 == 0 else (True, False)):
                wall, own = one_run(Path(d) / f"r{i}{int(record)}", a.steps, record)
                (recorded if record else plain).append(wall)
                if record:
                    selfs.append(own)
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    mp, mr = float(np.median(plain)), float(np.median(recorded))
    print(f"tiny GRPOTrainer run, {a.steps} steps, 64 rollouts/step, 1 torch thread; load average {load} "
          f"on {os.cpu_count()} cores")
    print(f"without recorder  median {mp:.3f} s   runs {', '.join(f'{x:.3f}' for x in plain)}")
    print(f"with recorder     median {mr:.3f} s   runs {', '.join(f'{x:.3f}' for x in recorded)}")
    print(f"wall ratio        {mr / mp:.4f}  (with / without)")
    share = np.array(selfs) / np.array(recorded)
    print(f"recorder self time  {np.median(selfs) * 1000 / a.steps:.2f} ms per step = "
          f"{100 * np.median(share):.2f} % of a recorded run (median of {len(selfs)})")


if __name__ == "__main__":
    main()
