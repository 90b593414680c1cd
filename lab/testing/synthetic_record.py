"""A made-up run record, for the replay tab's tests and benchmark only (it ships nowhere).

Prompts draw starting pass rates from Beta(a, b) and improve along the decay model of
:mod:`grpo_lab.sims.decay` (``p_t = p_0 ** (1 / (1 + g t))``, t = step / steps); every step samples
``prompts_per_step`` prompts and G Bernoulli(p_t) rewards each; every ``eval_every`` steps the
record holds each prompt's pass rate measured with ``eval_samples`` samples.
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.decay import pass_rate_at
from grpo_lab.sims.record import RunRecord

__all__ = ["synthetic_record"]


def synthetic_record(n_prompts: int = 64, steps: int = 40, G: int = 4, prompts_per_step: int = 16,
                     eval_every: int = 10, eval_samples: int = 16, seed: int = 0, name: str = "synthetic",
                     a: float = 2.0, b: float = 3.0) -> RunRecord:
    """A complete :class:`~sims.record.RunRecord` of ``steps`` steps (see the module docstring)."""
    rng = np.random.default_rng(seed)
    p0 = rng.beta(a, b, n_prompts)
    step_col, pid_col, rewards = [], [], []
    ev_steps, ev_rates = [], []
    for s in range(steps):
        p = pass_rate_at(p0, s / max(steps - 1, 1))
        if s % eval_every == 0:
            ev_steps.append(s)
            ev_rates.append(rng.binomial(eval_samples, p) / eval_samples)
        pids = rng.choice(n_prompts, size=min(prompts_per_step, n_prompts), replace=False)
        step_col.append(np.full(len(pids), s))
        pid_col.append(pids)
        rewards.append((rng.random((len(pids), G)) < p[pids, None]).astype(float))
    r = np.concatenate(rewards)
    n = len(r)
    groups = {"step": np.concatenate(step_col).astype(np.int64), "prompt_id": np.concatenate(pid_col).astype(np.int64),
              "rewards": r, "advantages": np.full(r.shape, np.nan), "lengths": np.full(r.shape, -1, np.int64),
              "kept": np.ones(n, bool)}
    evals = {"step": np.asarray(ev_steps, np.int64), "pass_rate": np.asarray(ev_rates, float),
             "samples": np.full(len(ev_steps), eval_samples, np.int64)}
    meta = {"name": name, "n_prompts": n_prompts, "num_generations": G, "seed": seed, "reward_tolerance": 0.0,
            "source": {"kind": "synthetic"}, "prompt_labels": [f"q{i}" for i in range(n_prompts)]}
    return RunRecord(meta=meta, groups=groups, steps={"step": np.arange(steps, dtype=np.int64)}, evals=evals)
