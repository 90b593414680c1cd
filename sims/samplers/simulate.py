r"""Samplers without a closed form, simulated fast: retirement after N all-pass groups, GRESO skipping.

Same setting as :mod:`.closed`: N prompts with pass rates p_x, groups of K independent binary rollouts,
a rollout budget R = E N K, prompts visited epoch by epoch in a fresh random order; the budget ends
inside an epoch at the first visit it cannot pay for in full. Both samplers carry per-prompt state
across epochs, so a visit's outcome changes what later visits cost; the simulation steps through epochs
with every prompt at once (numpy arrays of length N; an epoch's visits in random order are cut at the
budget with a cumulative sum).

**DAPO's never-trained share** (its rates are closed forms, :func:`.closed.dapo`): which prompts a DAPO
run trains on depends on which useful groups fall in a step's surplus, so it is simulated on the stream
of E N draws (E epochs of shuffled prompts, each draw useful with probability u(p_x, K)): a step starting
at draw s ends with the round that holds its B-th useful draw (found with a cumulative sum and a binary
search), trains those first B useful draws, and starts the next step at the following round; a step that
holds fewer than B after M rounds trains nothing; the budget's last, unfinished step trains nothing. ``reps`` independent runs are averaged; each returns the
:mod:`.closed` keys plus ``epochs`` (epochs started) and, with their standard errors over the runs,
``useful_per_1000_se`` and ``never_trained_se``.

**Retirement** (ScaleRL's "no positive resampling", Khatri et al. 2025, which drops a prompt for good once
its pass rate reaches 0.9; here the doctor's rule, :mod:`grpo_lab.sims.doctor.prompts`): a prompt whose
last ``n_retire`` groups were all all-pass is retired for good (with n_retire = 1: its first all-pass
group). A retired prompt costs nothing; the budget it frees buys more epochs of the others. The run stops
early when every prompt is retired.

**GRESO** (Zheng et al. 2025, "Act Only When It Pays"): the rule implemented here, after the paper's
probabilistic pre-rollout filter: a prompt whose last z generated groups were all zero-variance (its
streak; an epoch in which it was skipped does not change it) is skipped this epoch with probability
1 - p_e^z (never skipped at z = 0), where p_e is the exploration probability: ``p_easy`` when the streak's
last group was all-pass, ``p_hard`` when all-fail. GRESO adapts its exploration probabilities during
training towards a target share of zero-variance prompts; here they are fixed parameters (named
deviation), so the table shows the rule at a given p_e, not GRESO's controller. An epoch whose visits are all skipped
costs nothing and the next one is drawn; the run stops after :data:`MAX_EPOCHS` epochs (reported).
"""

from __future__ import annotations

import numpy as np

from ..outcomes import outcome_probabilities
from .closed import PER_ROLLOUTS

__all__ = ["retirement", "greso", "dapo_never_trained", "MAX_EPOCHS", "DEFAULT_REPS"]

MAX_EPOCHS = 10_000  #: a simulated run stops after this many epochs even with budget left
DEFAULT_REPS = 4  #: independent simulated runs averaged


def _outcomes(p: np.ndarray, K: int):
    """Per-prompt (P(all pass), P(all fail)) for the categorical draw of a group's outcome."""
    o = outcome_probabilities(p, K)
    return o["p_all_pass"], o["p_all_fail"]


def _draw(rng, ap: np.ndarray, af: np.ndarray):
    """One group outcome per prompt: (all_pass, all_fail) boolean arrays (useful = neither)."""
    v = rng.random(ap.size)
    return v < ap, (v >= ap) & (v < ap + af)


def _epoch(rng, want: np.ndarray, ap: np.ndarray, af: np.ndarray, left_groups: int):
    """One epoch: the visits paid for among ``want`` (:func:`_budget_cut`) and their outcomes.
    Returns (visit, all_pass, all_fail, useful, budget_exhausted), each outcome masked to the visits."""
    visit, done = _budget_cut(rng, want, left_groups)
    a, f = _draw(rng, ap, af)
    a, f = a & visit, f & visit
    return visit, a, f, visit & ~a & ~f, done


def _budget_cut(rng, visit: np.ndarray, left_groups: int) -> tuple[np.ndarray, bool]:
    """The visits paid for this epoch: all of ``visit`` if the budget allows, else the first
    ``left_groups`` of them in a random order. Returns (mask, budget_exhausted)."""
    idx = np.flatnonzero(visit)
    if idx.size <= left_groups:
        return visit, idx.size == left_groups
    keep = np.zeros_like(visit)
    keep[rng.permutation(idx)[:left_groups]] = True
    return keep, True


def _summary(runs: list[tuple[float, float, float, int]], K: int, budget_groups: int) -> dict:
    useful = np.array([r[0] for r in runs])
    groups = np.array([r[1] for r in runs])
    never = np.array([r[2] for r in runs])
    per = PER_ROLLOUTS * useful / np.maximum(groups * K, 1)
    n = len(runs)
    se = (lambda x: float(np.std(x, ddof=1) / np.sqrt(n)) if n > 1 else float("nan"))
    return {"useful_per_1000": float(per.mean()), "never_trained": float(never.mean()),
            "rollouts": float(groups.mean() * K), "budget_used": float(groups.mean() / budget_groups),
            "epochs": float(np.mean([r[3] for r in runs])), "useful_per_1000_se": se(per),
            "never_trained_se": se(never), "reps": n}


def dapo_never_trained(p: np.ndarray, K: int, epochs: float, batch: int, gen: int, max_rounds: int,
                       reps: int = DEFAULT_REPS, seed: int = 0) -> tuple[float, float]:
    """(mean, standard error over ``reps`` runs) of DAPO's share of prompts never trained on (module docstring)."""
    u = outcome_probabilities(p, K)["p_useful"]
    draws = int(round(epochs * p.size))
    cap = max_rounds if max_rounds > 0 else draws // gen + 1
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        order = np.concatenate([rng.permutation(p.size) for _ in range(-(-draws // p.size))])[:draws]
        good = rng.random(draws) < u[order]
        c = np.concatenate([[0], np.cumsum(good)])  # c[i] = useful among the first i draws
        edges = np.zeros(draws + 1, np.int64)  # +1 where a trained stretch of draws starts, -1 where it ends
        s = 0
        while s < draws:
            j = int(c.searchsorted(c[s] + batch))  # the first j draws hold the step's B-th useful one
            rounds = -(-(j - s) // gen)
            if j <= draws and rounds <= cap and s + rounds * gen <= draws:
                edges[s] += 1
                edges[j] -= 1
                s += rounds * gen
            else:
                s += cap * gen  # a stalled step (or the budget's unfinished last step): nothing trained
        inside = np.cumsum(edges[:-1]) > 0
        trained = np.zeros(p.size, bool)
        trained[order[inside & good]] = True
        out.append(1.0 - trained.mean())
    out = np.array(out)
    return float(out.mean()), float(out.std(ddof=1) / np.sqrt(reps)) if reps > 1 else float("nan")


def retirement(p: np.ndarray, K: int, epochs: float, n_retire: int, reps: int = DEFAULT_REPS,
               seed: int = 0) -> dict:
    """Retire a prompt after ``n_retire`` all-pass groups in a row (see the module docstring);
    also ``retired_share`` at the end."""
    ap, af = _outcomes(p, K)
    budget = int(round(epochs * p.size))  # groups of K
    rng = np.random.default_rng(seed)
    runs, retired_share = [], []
    for _ in range(reps):
        active = np.ones(p.size, bool)
        streak = np.zeros(p.size, np.int64)
        trained = np.zeros(p.size, bool)
        spent = useful = e = 0
        while spent < budget and active.any() and e < MAX_EPOCHS:
            e += 1
            visit, a, f, good, done = _epoch(rng, active, ap, af, budget - spent)
            spent += int(visit.sum())
            useful += int(good.sum())
            trained |= good
            streak = np.where(a, streak + 1, np.where(visit, 0, streak))
            active &= streak < n_retire
            if done:
                break
        runs.append((useful, spent, 1.0 - trained.mean(), e))
        retired_share.append(1.0 - active.mean())
    return {**_summary(runs, K, budget), "retired_share": float(np.mean(retired_share)), "n_retire": int(n_retire)}


def greso(p: np.ndarray, K: int, epochs: float, p_easy: float, p_hard: float, reps: int = DEFAULT_REPS,
          seed: int = 0) -> dict:
    """GRESO pre-rollout skipping with fixed exploration probabilities (see the module docstring);
    also ``skipped_share``: skipped visits over all visits considered."""
    ap, af = _outcomes(p, K)
    budget = int(round(epochs * p.size))
    rng = np.random.default_rng(seed)
    runs, skipped_share = [], []
    for _ in range(reps):
        streak = np.zeros(p.size, np.int64)
        last_pass = np.zeros(p.size, bool)  # the streak's last group was all-pass (else all-fail)
        trained = np.zeros(p.size, bool)
        spent = useful = e = considered = skipped = 0
        while spent < budget and e < MAX_EPOCHS:
            e += 1
            keep = np.power(np.where(last_pass, p_easy, p_hard), streak)  # 1 at streak 0
            go = rng.random(p.size) < keep
            visit, a, f, good, done = _epoch(rng, go, ap, af, budget - spent)
            considered += p.size if not done else int(visit.sum()) + int((~go).sum())
            skipped += int((~go).sum())
            spent += int(visit.sum())
            useful += int(good.sum())
            trained |= good
            streak = np.where(good, 0, streak + (a | f))
            last_pass = np.where(a, True, np.where(f, False, last_pass))
            if done:
                break
        runs.append((useful, spent, 1.0 - trained.mean(), e))
        skipped_share.append(skipped / max(considered, 1))
    return {**_summary(runs, K, budget), "skipped_share": float(np.mean(skipped_share)),
            "p_easy": float(p_easy), "p_hard": float(p_hard)}
