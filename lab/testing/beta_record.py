"""A record of a static Beta population, every prompt drawn the same number of times: the known truth the doctor's
interval checks run against (tests/test_doctor_samplers_sizes.py, benchmarks/doctor_sampler_coverage.py)."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.record import RunRecord

__all__ = ["beta_record"]


def beta_record(a0: float, b0: float, prompts: int, draws: int, K: int, seed: int) -> RunRecord:
    """``prompts`` pass rates from Beta(a0, b0), each prompt drawn ``draws`` times (step d holds every prompt's
    d-th group of K Bernoulli rewards); no drift."""
    rng = np.random.default_rng(seed)
    p = rng.beta(a0, b0, prompts)
    pid = np.tile(np.arange(prompts), draws)
    rewards = (rng.random((pid.size, K)) < p[pid, None]).astype(float)
    return RunRecord(meta={"name": "beta", "n_prompts": prompts, "num_generations": K},
                     groups={"step": np.repeat(np.arange(draws), prompts).astype(np.int64), "prompt_id": pid,
                             "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
                             "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(pid.size, bool)})
