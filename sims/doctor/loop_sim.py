r"""verl's DAPO loop, simulated: a finite prompt set whose pass rates drift, and the step at which it first stalls.

The loop (verl-recipe ``recipe/dapo/dapo_ray_trainer.py`` ``RayDAPOTrainer.fit``): the dataloader yields batches
of ``gen_batch`` prompts, reshuffled every epoch (``drop_last``: the last short batch of an epoch is dropped);
every batch is one generation round, K rollouts per prompt. Groups whose rewards are not unanimous are kept
(``filter_groups``, metric std > 0) and added to the step's batch until it holds ``train_batch`` of them; the
surplus of the last round is dropped (``batch[:traj_bsz]``), the step trains and logs
``train/num_gen_batches`` (the rounds it used). A step still short after ``cap`` rounds
(``max_num_gen_batches`` > 0) raises ``num_gen_batches >= max_num_gen_batches`` and ends the run: **the
ground truth is that step** (None when the run reached ``max_steps`` without it). Rounds are consecutive
loader batches, so a step's rounds may cross an epoch boundary, as in verl. Steps count from 1 (verl's
``global_steps``).

**Prompts and drift.** N prompts with base pass rates p_0 (drawn from a Beta population, or given); at step s
(t = s - 1) prompt x passes each rollout with p_x(t) = :func:`drift` (p_0, t, shape, **params):

* ``power``: p_t = p_0^(1 / (1 + g t)) (g > 0 rises to 1; the map of the issue's saturation row);
* ``logit``: logit p_t = logit p_0 + beta t (beta < 0 collapses);
* ``plateau``: logit p_t = logit p_0 + A (1 - exp(-t / lam)) (rises, then saturates at a level);
* ``step``: logit p_t = logit p_0 + beta t + J [t >= t_jump] (a step change on a slow drift);
* ``static``: p_t = p_0.

**Prompts that do not move together** (keyword options of :func:`simulate_loop`, the regimes the drift model
does not assume): ``frozen`` (a mask of prompts whose pass rate never moves: a share never solved, p_0 = 0, or
never failed, p_0 = 1); ``rates`` (per prompt, a multiplier of the step offset: prompt x is at t rates[x], so
prompts learn at different rates); ``train_jump`` (a logit shift J added for good to a prompt once it has
trained: prompts that jump once trained on, the level then driven by the loop itself); ``icc`` (correlated
rollouts: each group draws its own p' ~ Beta(p (1 - rho) / rho, (1 - p)(1 - rho) / rho), the K rollouts
Bernoulli(p'), an intra-group correlation rho; rho = 0 is the binomial).

**Logging modes** (:func:`to_record`): ``all`` (every generated group), ``trained`` (only the groups that
trained: verl's rollout dump, ``trainer.rollout_data_dir``), ``trained+rounds`` (those and the per-step
``train/num_gen_batches`` scalar, verl's file logger). The record holds the first ``logged`` steps (fewer when
the run stalled before).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from ..record import RunRecord

__all__ = ["SHAPES", "MODES", "MAX_ROUNDS", "drift", "pass_rates", "simulate_loop", "to_record", "to_scalars"]

SHAPES = ("power", "logit", "plateau", "step", "static")
MAX_ROUNDS = 1000  #: an uncapped step that has not filled after this many rounds ends the run as stalled
MODES = ("all", "trained", "trained+rounds")
_EPS = 1e-9


def drift(p0, t, shape: str, **params) -> np.ndarray:
    """Pass rates at step offset ``t`` (scalar) for base rates ``p0`` (see the module docstring)."""
    p0 = np.clip(np.asarray(p0, float), _EPS, 1 - _EPS)
    if shape == "static":
        return p0
    if shape == "power":
        return p0 ** (1.0 / (1.0 + params["g"] * t))
    if shape == "logit":
        h = params["beta"] * t
    elif shape == "plateau":
        h = params["A"] * (1.0 - np.exp(-t / params["lam"]))
    elif shape == "step":
        h = params.get("beta", 0.0) * t + params["J"] * (t >= params["t_jump"])
    else:
        raise ValueError(f"unknown drift shape {shape!r}")
    return expit(logit(p0) + h)


def pass_rates(p0, t: float, shape: str, params: dict, frozen=None, rates=None, jumped=None,
               train_jump: float = 0.0) -> np.ndarray:
    """Every prompt's pass rate at step offset ``t`` under the drift and the options of the module docstring
    (``jumped``: the prompts that have trained, moved by ``train_jump`` on the logit)."""
    p = drift(p0, t if rates is None else t * np.asarray(rates, float), shape, **params)
    if train_jump and jumped is not None:
        p = np.where(jumped, expit(logit(np.clip(p, _EPS, 1 - _EPS)) + train_jump), p)
    if frozen is not None:
        p = np.where(frozen, np.asarray(p0, float), p)
    return p


def _successes(rng, K: int, p, icc: float) -> np.ndarray:
    """Successes of one group per pass rate: binomial, or beta-binomial with intra-group correlation ``icc``."""
    if icc <= 0:
        return rng.binomial(K, p)
    c = (1.0 - icc) / icc
    inner = (p > 0) & (p < 1)
    q = np.asarray(p, float).copy()
    q[inner] = rng.beta(p[inner] * c, (1.0 - p[inner]) * c)
    return rng.binomial(K, q)


def simulate_loop(p0, K: int, gen_batch: int, train_batch: int, cap: int, shape: str, params: dict,
                  max_steps: int, seed: int = 0, record_until: int | None = None, *, frozen=None, rates=None,
                  train_jump: float = 0.0, icc: float = 0.0, fresh: tuple | None = None) -> dict:
    """Run the loop (module docstring) until it stalls or completes ``max_steps`` steps. ``frozen``, ``rates``,
    ``train_jump``, ``icc``: prompts that do not move together (module docstring); the defaults are the plain loop.
    ``fresh`` = (alpha, beta[, never]): every round draws ``gen_batch`` new prompts from Beta(alpha, beta), a share
    ``never`` of them never solved (p = 0), instead of batches of the finite set ``p0`` (pass None); the prompt ids
    count the draws. ``cap`` 0: uncapped, a step that has not filled after :data:`MAX_ROUNDS` rounds stalls.

    Returns ``stall_step`` (the step that raised, or None; it drew ``cap`` rounds), ``rounds`` (int, per completed
    step 1..n),
    ``steps_completed``, and the generated groups of steps <= ``record_until`` (default: all) as arrays
    ``step``, ``prompt_id``, ``successes``, ``round``, ``trained`` (the group trained: mixed and within the
    first ``train_batch`` mixed groups of its step; a stalled step trains none).
    """
    rng = np.random.default_rng(seed)
    if fresh is None:
        p0 = np.asarray(p0, float)
        N = len(p0)
        per_epoch = N // gen_batch
        if per_epoch < 1:
            raise ValueError("gen_batch exceeds the prompt set")
        order, pos = rng.permutation(N), 0
    else:
        N, drawn = 0, 0
    limit = cap if cap > 0 else MAX_ROUNDS
    keep_until = max_steps if record_until is None else record_until
    cols = {k: [] for k in ("step", "prompt_id", "successes", "round", "trained")}
    rounds, stall = [], None
    jumped = np.zeros(N, bool) if train_jump and fresh is None else None
    for s in range(1, max_steps + 1):
        if fresh is None:
            p = pass_rates(p0, s - 1, shape, params, frozen, rates, jumped, train_jump)
        kept, r = 0, 0
        while r == 0 or kept < train_batch:  # at least one round (train_batch 0: every step draws one)
            if r == limit:
                stall = s
                break
            if fresh is not None:  # a round of new prompts (the draws in scalars_sim's order, so seeds agree)
                q0 = rng.beta(fresh[0], fresh[1], gen_batch)
                never = rng.random(gen_batch) < fresh[2] if len(fresh) > 2 and fresh[2] else None
                if never is not None:
                    q0[never] = 0.0
                pr = pass_rates(q0, s - 1, shape, params, never)
                ids = np.arange(drawn, drawn + gen_batch)
                drawn += gen_batch
            else:
                if pos + gen_batch > per_epoch * gen_batch:  # drop_last, then the next epoch's shuffle
                    order, pos = rng.permutation(N), 0
                ids = order[pos:pos + gen_batch]
                pos += gen_batch
                pr = p[ids]
            r += 1
            k = _successes(rng, K, pr, icc)
            mixed = (k > 0) & (k < K)
            trained = mixed & (np.cumsum(mixed) + kept <= train_batch)
            if jumped is not None:  # moves from the next step on (the step's pass rates are drawn already)
                jumped[ids[trained]] = True
            kept += int(mixed.sum())
            if s <= keep_until:
                for key, v in (("step", np.full(len(ids), s)), ("prompt_id", ids), ("successes", k),
                               ("round", np.full(len(ids), r)), ("trained", trained)):
                    cols[key].append(v)
        if stall is not None:
            if s <= keep_until:  # the stalled step trained nothing
                cols["trained"][-r:] = [np.zeros_like(x) for x in cols["trained"][-r:]]
            break
        rounds.append(r)
    out = {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in cols.items()}
    out["trained"] = out["trained"].astype(bool)
    out.update(stall_step=stall, rounds=np.asarray(rounds, np.int64), steps_completed=len(rounds), K=K, n_prompts=N, settings={"gen_batch": gen_batch, "train_batch": train_batch, "cap": cap})
    return out


def to_record(sim: dict, mode: str, logged: int, name: str = "loop-sim") -> RunRecord:
    """The first ``logged`` completed steps of ``sim`` as a run record under logging ``mode`` (see MODES).

    A stalled step is never in the record (it trained nothing and logged nothing)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    last = min(logged, sim["steps_completed"])
    m = sim["step"] <= last
    if mode != "all":
        m &= sim["trained"]
    K = sim["K"]
    k = sim["successes"][m]
    rewards = (np.arange(K)[None, :] < k[:, None]).astype(float)
    groups = {"step": sim["step"][m].astype(np.int64), "prompt_id": sim["prompt_id"][m].astype(np.int64),
              "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
              "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(len(k), bool)}
    steps = {}
    if mode == "trained+rounds":
        steps = {"step": np.arange(1, last + 1, dtype=np.int64),
                 "scalar/train/num_gen_batches": sim["rounds"][:last].astype(float)}
    meta = {"name": name, "n_prompts": int(sim["n_prompts"]), "num_generations": K}
    return RunRecord(meta=meta, groups=groups, steps=steps)


def to_scalars(sim: dict, logged: int | None = None, name: str = "loop-sim", columns=None, raw_names=None,
               trainer: str = "simulated", truth: dict | None = None):
    """The shares a tracker logs, per step over every group the step drew (as this project's trainer logs them),
    for the first ``logged`` steps that drew groups (default all; the stalled step included, as a trainer logs the
    step before it raises): a scalars-only record (:func:`grpo_lab.sims.scalars_record.scalars_record`) with the
    all-pass, all-fail and zero-std shares, the mean reward and ``groups_per_step``, and the step's rounds as the
    raw series ``gen_batches``. ``columns``: the shares kept (the others NaN, as a run that did not log them);
    ``raw_names``: {share: the trainer's metric name} kept beside them as raw series (e.g. tinker-cookbook's
    ``env/all/by_group/frac_all_good``); ``truth`` goes to ``meta['truth']``."""
    from ..scalars_record import scalars_record

    K = sim["K"]
    steps, inv = np.unique(sim["step"], return_inverse=True)
    n = len(steps) if logged is None else int(np.sum(steps <= logged))
    steps = steps[:n]
    k = sim["successes"]
    cnt = np.bincount(inv, minlength=len(inv) and inv.max() + 1).astype(float)

    def per_step(x):
        return (np.bincount(inv, weights=x.astype(float), minlength=len(cnt)) / np.maximum(cnt, 1))[:n]

    fail, pas = per_step(k == 0), per_step(k == K)
    cols = {"frac_all_pass": pas, "frac_all_fail": fail, "frac_reward_zero_std": fail + pas,
            "reward_mean": per_step(k / K)}
    if columns is not None:
        cols = {c: v for c, v in cols.items() if c in columns}
    rounds = np.zeros(len(cnt))
    np.maximum.at(rounds, inv, sim["round"].astype(float))  # the rounds each step drew
    raw = {"gen_batches": rounds[:n]}
    cnt = cnt[:n]
    for c, metric in (raw_names or {}).items():
        if c in cols:
            raw[metric] = cols[c]
    cols["groups_per_step"] = cnt
    return scalars_record(name, steps, cols, num_generations=K, n_prompts=int(sim["n_prompts"]),
                          source={"format": "simulated", "trainer": trainer, "run": name,
                                  "dialect": dict(raw_names or {}), "missing": [], "notes": []},
                          raw=raw, extra_meta={"truth": truth or {}})
