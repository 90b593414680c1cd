"""One model choice for both paths of the doctor (sims/doctor/choice.py): the scalars path weighs its drift maps by
the group path's leave-future-out chooser. Its scores against an independent computation of the later rows'
predictive density, the two paths' shared origins and weights, and the recovery of the generating map."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from grpo_lab.sims.doctor import choice, drift, scalars_fit
from grpo_lab.sims.doctor.scalars_fit import (LFO_DRAWS, LFO_ORIGINS, best_fit, draws, fit_models, fit_scalars,
                                              lfo_choice, population_moments, step_shares)
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

PASS_FAIL = ("frac_all_pass", "frac_all_fail")


def _row_ll(theta, fit, steps, n, ap, af, K):
    """sum over classes of count log P(class) at ``steps`` (the trinomial of all-pass, all-fail, mixed), directly."""
    s0, s1 = fit["steps"]
    m = population_moments(theta, (steps - s0) / (s1 - s0), K, fit["model"])
    mixed = 1 - m["all_pass"] - m["all_fail"]
    return n * (ap * np.log(m["all_pass"]) + af * np.log(m["all_fail"]) + (1 - ap - af) * np.log(mixed))


def test_scores_are_the_later_rows_predictive_density():
    """The summed score of a map = sum over origins of log mean over the prefix refit's parameter draws of each later
    row's trinomial likelihood, recomputed here from the moments without the fit's row code."""
    S, K, G = 40, 8, 32
    rec = simulate_shares(1.5, 2.5, 0.02, K, S, G, seed=3, logged=PASS_FAIL)
    d = step_shares(rec)
    f = fit_scalars(d, "logit")
    got = lfo_choice(d, {"logit": f})
    want = 0.0
    for cut, end in choice.origins(S, LFO_ORIGINS):
        head = fit_scalars(d.subset(np.arange(S) < cut), "logit", start=f["theta"], restart=False)
        th = draws(head, LFO_DRAWS, seed=cut)
        assert len(th) == LFO_DRAWS
        rows = slice(cut, end)
        L = np.stack([_row_ll(x, head, d.step[rows].astype(float), d.n[rows], d.all_pass[rows], d.all_fail[rows], K)
                      for x in th])
        want += float(np.sum(logsumexp(L, axis=0) - np.log(len(th))))
    assert got["scores"]["logit"] == pytest.approx(want, rel=1e-9, abs=1e-6)
    assert got["scored_steps"] == S - S // 2 and got["weights"] == {"logit": 1.0}


def test_both_paths_weigh_by_the_one_chooser():
    """The group path's (variant, shape) weights and the scalars path's map weights both come from
    choice.lfo_weights: the same function object, the same scored points for the same number of logged points, and
    weights equal to the pseudo-BMA+ of the scores it is given (one candidate far ahead takes all the weight; equal
    scores share it equally)."""
    assert drift.lfo_weights is choice.lfo_weights and scalars_fit.lfo_weights is choice.lfo_weights
    n = 30
    first = max(round(choice.ORIGIN * n), 4)
    for m in (choice.MAX_ORIGINS, LFO_ORIGINS):
        blocks = choice.origins(n, m)
        assert blocks[0][0] == first and blocks[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(blocks[:-1], blocks[1:]))  # each later point scored once
    rng = np.random.default_rng(7)
    K = 6
    steps = np.arange(n)
    p = np.clip(rng.beta(2, 3, size=(n, 40)) + 0.01 * steps[:, None], 0, 1)
    k = rng.binomial(K, p)
    counts = np.stack([np.bincount(r, minlength=K + 1) for r in k])
    group = drift.measure_drift(counts, steps, K, survivors=False, variants=("beta",))["weights"]
    rec = simulate_shares(1.5, 2.5, 0.02, K, n, 40, seed=1)
    scal = fit_models(step_shares(rec))
    assert group["scored_steps"] == next(iter(scal.values()))["choice"]["scored_steps"] == n - first
    even = choice.lfo_weights(n, ["a", "b"], lambda c, cut, end: np.zeros(end - cut))
    assert even["weights"] == {"a": 0.5, "b": 0.5}
    far = choice.lfo_weights(n, ["a", "b"], lambda c, cut, end: np.full(end - cut, 0.0 if c == "a" else -5.0))
    assert far["weights"]["a"] == pytest.approx(1.0, abs=1e-12)
    assert far["scores"] == {"a": 0.0, "b": -5.0 * (n - first)}


@pytest.mark.parametrize("model,stuck,rate,want", [("logit", 0.0, 0.02, "logit"), ("power", 0.0, 0.05, "power"),
                                                   ("logit", 0.25, 0.02, "logit_stuck")])
def test_the_choice_recovers_the_generating_map(model, stuck, rate, want):
    """Three simulated runs per truth (100 steps x 32 groups, K = 8, every share logged): the map kept is the one
    that generated the run in at least 2 of 3 (benchmarks/scalars_choice.py measures the rate over 20 seeds:
    docs/doctor.md)."""
    kept = []
    for seed in range(3):
        rec = simulate_shares(1.5, 2.5, rate, 8, 100, 32, model=model, seed=seed, stuck=stuck)
        fits = fit_models(step_shares(rec))
        assert abs(sum(f["choice"]["weight"] for f in fits.values()) - 1) < 1e-9
        kept.append(best_fit(fits)["model"])
    assert sum(k == want for k in kept) >= 2, kept


def test_both_paths_follow_the_chooser_when_its_origins_change(monkeypatch):
    """Set the one chooser's origins to a single block of the last 3 points: both paths then score exactly 3 points
    (each path's own fits, the chooser's split)."""
    monkeypatch.setattr(choice, "origins", lambda n, max_origins=choice.MAX_ORIGINS: [(n - 3, n)])
    n, K = 24, 6
    rng = np.random.default_rng(2)
    k = rng.binomial(K, rng.beta(2, 3, size=(n, 30)))
    counts = np.stack([np.bincount(r, minlength=K + 1) for r in k])
    group = drift.measure_drift(counts, np.arange(n), K, survivors=False, variants=("beta",))["weights"]
    scal = fit_models(step_shares(simulate_shares(1.5, 2.5, 0.02, K, n, 30, seed=2)))
    assert group["scored_steps"] == 3 and all(f["choice"]["scored_steps"] == 3 for f in scal.values())
