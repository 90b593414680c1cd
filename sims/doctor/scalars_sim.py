r"""Simulated runs with a known population and drift, for the scalars fit's validation and the watch test.

:func:`simulate_shares`: each step draws ``groups`` prompts afresh from Beta(alpha, beta) moved by the
drift to step s (``logit``: logit p(s) = logit p0 + rate (s - first); ``power``: p0 ** (1 / (1 + rate
(s - first)))), K Bernoulli(p(s)) rollouts each, and logs the step's all-pass, all-fail and zero-std shares
of groups and its mean reward (:func:`grpo_lab.sims.scalars_record.scalars_record`).

:func:`simulate_dapo`: the trainer's loop itself, DAPO dynamic sampling as verl's
``recipe/dapo/dapo_ray_trainer.py`` runs it: each step draws rounds of ``gen_batch`` fresh prompts (K
rollouts each), keeps the mixed groups, stops as soon as ``train_batch`` are kept, and when ``cap`` rounds
(``max_num_gen_batches`` > 0) have not filled the batch the run stops there (verl raises). It logs the
shares over every group the step drew (as this project's trainer does) with the groups drawn as
``groups_per_step``, the rounds as ``gen_batches``, and returns the step at which the run first hit its cap
(None when it never did within ``n_steps``). The drift is exogenous: the simulated policy does not learn
from the batches; that isolates the forecast from the learning dynamics, which no forecast from scalars sees.
It is :func:`.loop_sim.simulate_loop` with fresh draws (``fresh``) instead of a finite prompt set: one simulator
of the loop, two prompt sources.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from ..scalars_record import scalars_record
from .loop_sim import MAX_ROUNDS, simulate_loop, to_scalars

__all__ = ["pass_rates_at", "simulate_shares", "simulate_dapo", "MAX_ROUNDS"]


def pass_rates_at(p0, elapsed, rate: float, model: str = "logit"):
    """Pass rates p0 moved ``elapsed`` steps by the drift ``rate`` per step."""
    p0 = np.asarray(p0, float)
    zero = p0 <= 0
    p0 = np.clip(p0, 1e-12, 1 - 1e-12)
    if model == "power":
        p = p0 ** (1.0 / np.maximum(1.0 + rate * np.asarray(elapsed, float), 1e-6))
    else:
        p = expit(logit(p0) + rate * np.asarray(elapsed, float))
    return np.where(zero, 0.0, p)


def _shares(S: np.ndarray, K: int) -> dict:
    """Per-row shares of groups (rows: steps, columns: groups; S the successes)."""
    return {"frac_all_pass": np.mean(S == K, axis=-1), "frac_all_fail": np.mean(S == 0, axis=-1),
            "frac_reward_zero_std": np.mean((S == 0) | (S == K), axis=-1), "reward_mean": np.mean(S, axis=-1) / K}


def simulate_shares(alpha: float, beta: float, rate: float, K: int, n_steps: int, groups: int, *,
                    model: str = "logit", seed: int = 0, logged=None, first_step: int = 1, name: str = "simulated",
                    stuck: float = 0.0):
    """A scalars-only record of ``n_steps`` steps (see the module docstring). ``logged``: the share columns
    kept (default all four); the others are left NaN as a run that did not log them. ``stuck``: the share of
    prompts never solved (p = 0 at every step). ``meta['truth']`` holds the generating parameters."""
    rng = np.random.default_rng(seed)
    p0 = rng.beta(alpha, beta, size=(n_steps, groups))
    p0[rng.random((n_steps, groups)) < stuck] = 0.0
    p = pass_rates_at(p0, np.arange(n_steps)[:, None], rate, model)
    S = rng.binomial(K, p)
    cols = _shares(S, K)
    if logged is not None:
        cols = {k: v for k, v in cols.items() if k in logged}
    cols["groups_per_step"] = np.full(n_steps, float(groups))
    truth = {"alpha": alpha, "beta": beta, "rate": rate, "model": model, "K": K, "groups": groups, "stuck": stuck}
    return scalars_record(name, np.arange(first_step, first_step + n_steps), cols, num_generations=K,
                          source={"format": "simulated", "trainer": "simulated", "run": name, "dialect": {},
                                  "missing": [], "notes": []}, extra_meta={"truth": truth})


def simulate_dapo(alpha: float, beta: float, rate: float, K: int, n_steps: int, gen_batch: int, train_batch: int,
                  cap: int, *, model: str = "logit", seed: int = 0, name: str = "simulated-dapo", stuck: float = 0.0):
    """(record of the steps run, the step that hit the cap or None); see the module docstring. The loop is
    :func:`.loop_sim.simulate_loop` in its fresh-draw mode (one simulator for both), logged by
    :func:`.loop_sim.to_scalars`; ``stuck`` a share of the drawn prompts never solved."""
    shape, params = ("power", {"g": rate}) if model == "power" else ("logit", {"beta": rate})
    sim = simulate_loop(None, K, gen_batch, train_batch, cap, shape, params, n_steps, seed=seed,
                        fresh=(alpha, beta, stuck))
    truth = {"alpha": alpha, "beta": beta, "rate": rate, "model": model, "K": K, "gen_batch": gen_batch,
             "train_batch": train_batch, "cap": cap, "stuck": stuck}
    return to_scalars(sim, name=name, truth=truth), sim["stall_step"]
