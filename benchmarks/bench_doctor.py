"""Benchmark: `grpo-lab diagnose` on a 100,000-group record (target: under 5 s on 2 cores).

Builds a synthetic run (default 100,000 groups: 500 steps x 200 groups, K = 8, 5,000 prompts
whose pass rates rise on the logit scale), writes it as a record in a temporary folder, then
times reading it and diagnosing it (wall clock, and this process's CPU time, which other jobs on a
shared machine inflate far less), with each stage's share (``fit`` = the beta-binomial fits,
windows included). For a baseline measured in the same run it also times one pass of
``grpo_lab.sims.record.summarise`` (what ``grpo-lab inspect`` does) on the same record. The
machine is shared: read the figures beside that baseline.

    python benchmarks/bench_doctor.py [--groups 100000] [--K 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from scipy.special import expit

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.record import RunRecord, read_record, summarise, write_record

TARGET_S = 5.0


def synthetic_record(n_groups: int, K: int, n_prompts: int = 5000, per_step: int = 200, seed: int = 0) -> RunRecord:
    rng = np.random.default_rng(seed)
    steps = n_groups // per_step
    step = np.repeat(np.arange(steps), per_step)
    pid = rng.integers(0, n_prompts, n_groups)
    alpha = rng.normal(-0.5, 2.0, n_prompts)
    p = expit(alpha[pid] + 2.0 * step / max(steps - 1, 1))
    rewards = (rng.random((n_groups, K)) < p[:, None]).astype(float)
    groups = {"step": step.astype(np.int64), "prompt_id": pid.astype(np.int64), "rewards": rewards,
              "advantages": np.full_like(rewards, np.nan), "lengths": np.full(rewards.shape, -1, np.int64),
              "kept": np.ones(n_groups, bool)}
    meta = {"name": f"synthetic-{n_groups}", "n_prompts": n_prompts, "num_generations": K}
    return RunRecord(meta=meta, groups=groups)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--K", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"cores visible: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine: figures under load)")
    with tempfile.TemporaryDirectory() as tmp:
        write_record(tmp, synthetic_record(args.groups, args.K))
        for i in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            rec = read_record(tmp)
            t1 = time.perf_counter()
            d = diagnose(rec)
            c2, t2 = time.process_time(), time.perf_counter()
            summarise(rec)
            t3 = time.perf_counter()
            total = t2 - t0
            tm = d["timings"]
            shares = ", ".join(f"{k} {v:.2f} s ({v / tm['total']:.0%})" for k, v in tm.items() if k != "total")
            print(f"run {i + 1}: read {t1 - t0:.2f} s + diagnose {t2 - t1:.2f} s = {total:.2f} s wall, "
                  f"{c2 - c0:.2f} s CPU (target {TARGET_S:g} s: {'met' if total < TARGET_S else 'MISSED'} on the "
                  f"wall clock); baseline summarise {t3 - t2:.2f} s; load average {os.getloadavg()[0]:.1f}")
            print(f"  stages: {shares}; fitting's share {tm['fit'] / tm['total']:.0%}")


if __name__ == "__main__":
    main()
