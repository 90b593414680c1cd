"""The stall risk's blocked survival (sims/doctor/risk_blocks.py) against independent computations.

A constant per-step hazard q makes the first stall geometric: F(n) = 1 - (1 - q)^n, its p-quantile
ceil(log(1 - p) / log(1 - q)); a rising hazard (linear in the step, and the loop's own Phi of a linear argument)
against the product over every step; where the grid is every step the blocks are the per-step product, hazard,
quantiles and restricted mean; the first FINE steps are every step, the rest spaced SPACING x the distance. Then the
stall risk itself on a scalars-only log whose first stall lies past 20,000 future steps (the reach the risk had
before the blocks), against the first stall of the true population and drift.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

from grpo_lab.sims.doctor.risk_blocks import (FINE, SPACING, block_hazard_rate, cumulative_hazard, cumulative_at,
                                              first_step, log_hazard, restricted_sum, risk_grid)
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

LAST = 1_000


def _blocked(x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, list]:
    """(F at ``steps``, quantiles 5/50/95%) of draws whose argument x (q = Phi(x)) is given at ``steps``."""
    logl = log_hazard(x)
    Lam = cumulative_hazard(logl, steps)
    F = 1.0 - np.exp(-Lam).mean(axis=0)
    return F, [first_step(p, F, Lam, logl, steps) for p in (0.05, 0.5, 0.95)]


def _per_step(q: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, list]:
    """The same by the product over every step (``q`` (draws, every step), ``steps`` every step)."""
    F = 1.0 - np.cumprod(1.0 - q, axis=1).mean(axis=0)
    return F, [int(steps[np.flatnonzero(F >= p)[0]]) if np.any(F >= p) else None for p in (0.05, 0.5, 0.95)]


def test_the_grid_is_every_step_near_the_data_then_spaced_by_the_distance():
    g = risk_grid(LAST, LAST + 10_000_000)
    d = g - LAST
    assert np.array_equal(d[:FINE], np.arange(1, FINE + 1)) and d[-1] == 10_000_000
    gaps = np.diff(d)[FINE - 1:]
    assert np.all(gaps >= 1) and np.all(gaps <= SPACING * d[FINE - 1:-1] + 1)
    assert len(g) < FINE + np.log(10_000_000 / FINE) / np.log1p(SPACING) + 3
    assert np.array_equal(risk_grid(LAST, LAST + 500), np.arange(LAST + 1, LAST + 501))
    assert risk_grid(LAST, LAST).size == 0


def test_a_constant_hazard_gives_the_geometric_first_stall():
    """One draw of q and a mixture of two: F at every grid point against (1 - q)^n, the quantiles against the closed
    form (one draw) and against the per-step product of the mixture, blocks of up to SPACING x 1,000,000 steps."""
    steps = risk_grid(LAST, LAST + 1_000_000)
    n = steps - LAST
    for qs in ([3.1e-6], [2.3e-5, 4.1e-6]):
        x = np.stack([np.full(len(steps), ndtri(q)) for q in qs])
        F, got = _blocked(x, steps)
        want_F = 1.0 - np.mean([np.exp(n * np.log1p(-ndtr(xi[0]))) for xi in x], axis=0)
        np.testing.assert_allclose(F, want_F, rtol=1e-9, atol=1e-12)
        if len(qs) == 1:
            q = float(ndtr(x[0, 0]))
            want = [LAST + int(np.ceil(np.log1p(-p) / np.log1p(-q))) for p in (0.05, 0.5, 0.95)]
        else:
            every = np.arange(LAST + 1, LAST + 1_000_001)
            want = _per_step(np.repeat(ndtr(x[:, :1]), len(every), axis=1), every)[1]
        assert got == want, (qs, got, want)
        assert got[1] - LAST > 20_000


def test_a_rising_hazard_against_the_product_over_every_step():
    """Hazards rising over 300,000 future steps (q linear in the step, and q = Phi(x) with x linear, the loop's own
    form, several draws each): the quantiles within 1% of their distance past the last step (and under one step
    within FINE steps), F within 0.005 at every grid point."""
    every = np.arange(LAST + 1, LAST + 300_001)
    steps = risk_grid(LAST, every[-1])
    at = np.searchsorted(every, steps)
    d = (every - LAST).astype(float)
    cases = {"q linear": np.stack([c * d for c in (2e-10, 7e-10, 3e-9)]),
             "Phi(linear)": ndtr(np.stack([-7.0 + d / s for s in (20_000.0, 45_000.0, 90_000.0)])),
             "near the data": ndtr(np.stack([-4.0 + d / s for s in (300.0, 500.0)]))}
    for name, q in cases.items():
        F_want, want = _per_step(q, every)
        F, got = _blocked(ndtri(q[:, at]), steps)
        assert np.max(np.abs(F - F_want[at])) < 0.005, name
        for w, g in zip(want, got):
            assert w is not None and g is not None, name
            bound = 1.0 if w - LAST <= FINE else 0.01 * (w - LAST)
            assert abs(g - w) < bound, (name, want, got)


def test_every_step_blocks_are_the_per_step_product():
    """A grid of every step (FINE covering the horizon): survival, quantiles, the mixture's hazard f(n) / (1 - F(n-1))
    and the restricted mean equal the per-step computation to rounding."""
    rng = np.random.default_rng(5)
    steps = risk_grid(LAST, LAST + 3_000, fine=3_000)
    assert np.array_equal(steps, np.arange(LAST + 1, LAST + 3_001))
    x = -3.5 + np.cumsum(rng.normal(0.002, 0.02, size=(40, len(steps))), axis=1)
    q = ndtr(x)
    F_want, want = _per_step(q, steps)
    logl = log_hazard(x)
    Lam = cumulative_hazard(logl, steps)
    S = np.exp(-Lam).mean(axis=0)
    np.testing.assert_allclose(S, 1.0 - F_want, rtol=1e-10, atol=1e-14)
    assert [first_step(p, 1.0 - S, Lam, logl, steps) for p in (0.05, 0.5, 0.95)] == want
    Sw = np.cumprod(1.0 - q, axis=1).mean(axis=0)  # the mixture's hazard f(n) / S(n - 1) = 1 - S(n) / S(n - 1)
    prev = np.concatenate([[1.0], Sw[:-1]])
    alive = prev > 1e-200  # where the mixture still survives (1 where it does not)
    assert 100 < alive.sum() < len(steps) and np.all(block_hazard_rate(S, steps)[np.concatenate([[1.0], S[:-1]]) == 0]
                                                      == 1.0)
    np.testing.assert_allclose(block_hazard_rate(S, steps)[alive], 1.0 - Sw[alive] / prev[alive], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(restricted_sum(S, steps), np.sum(1.0 - F_want), rtol=1e-10)


def test_the_restricted_mean_over_blocks_against_every_step():
    """The mixture's restricted mean (the sum of its survival) over a coarse grid against the sum over every step
    (two geometric draws: the mixture is not geometric, its survival is interpolated as one)."""
    every = np.arange(LAST + 1, LAST + 400_001)
    steps = risk_grid(LAST, every[-1])
    n = (steps - LAST).astype(float)
    S = 0.5 * (np.exp(n * np.log1p(-1e-5)) + np.exp(n * np.log1p(-2e-6)))
    ne = (every - LAST).astype(float)
    want = np.sum(0.5 * (np.exp(ne * np.log1p(-1e-5)) + np.exp(ne * np.log1p(-2e-6))))
    assert abs(restricted_sum(S, steps) - want) < 1e-4 * want


def test_the_cumulative_risk_between_grid_points_against_every_step():
    """F at steps between the grid's points (what ``tracker_values`` reads for "the next 10% of the run") against the
    per-step product, a rising hazard over 300,000 future steps: within 0.002 everywhere (the value at the grid
    point at or before the step, the reading before, is off by up to the block's own increase); exact at grid
    points and within FINE steps; 0 at the last logged step."""
    every = np.arange(LAST + 1, LAST + 300_001)
    steps = risk_grid(LAST, every[-1])
    d = (every - LAST).astype(float)
    q = ndtr(np.stack([-7.0 + d / s for s in (20_000.0, 45_000.0, 90_000.0)]))
    F_want = 1.0 - np.cumprod(1.0 - q, axis=1).mean(axis=0)
    F = _blocked(ndtri(q[:, np.searchsorted(every, steps)]), steps)[0]
    probe = np.unique(np.concatenate([every[::997], every[FINE - 5:FINE + 5], steps[-3:]]))
    got = cumulative_at(probe, F, steps, LAST)
    want = F_want[probe - LAST - 1]
    assert np.max(np.abs(got - want)) < 0.002
    before = F[np.searchsorted(steps, probe, side="right") - 1]
    assert np.max(np.abs(before - want)) > 5 * np.max(np.abs(got - want))
    np.testing.assert_allclose(cumulative_at(steps, F, steps, LAST), F, rtol=1e-9, atol=1e-15)
    assert cumulative_at(LAST, F, steps, LAST) == 0.0 and np.isclose(cumulative_at(every[-1] + 10, F, steps, LAST), F[-1])


def test_the_risk_of_a_long_log_reaches_past_20000_future_steps():
    """A scalars-only log of 3,000 steps (Beta(1.5, 2), K 8, 96 groups, a logit drift of 0.4 over the run) under verl's
    loop with a cap of 3 rounds of 96 for 64 groups: its horizon (10 run lengths) spans 30,000 future steps, past
    the 20,000 the risk reached before; the risk is drawn over it, its median first stall lies past 20,000 future
    steps, within 10% of the distance of the true median first stall (the generating population and drift, every
    step, :func:`.stall_risk.population_risk`: 28,583), and inside its own 90% interval. Seen over seeds 1-5 (96 draws):
    medians 26,399-28,443, the interval holding the truth in 4 (seed 1's ends at 28,488)."""
    from grpo_lab.sims.doctor.drift_shares import shares_risk
    from grpo_lab.sims.doctor.scalars_fit import step_shares
    from grpo_lab.sims.doctor.stall_risk import population_risk

    n, rate = 3000, 0.4 / 3000
    st = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8}
    truth = population_risk(1.5, 2.0, 8, {**st, "cap_effective": 3}, "logit", {"beta": rate}, np.arange(0, 40 * n))
    true_median = int(np.flatnonzero(truth["cumulative"] >= 0.5)[0]) + 1  # offsets from step 1
    d = step_shares(simulate_shares(1.5, 2.0, rate, 8, n, 96, seed=1))
    r = shares_risk(d, st, 11 * n, draws=96)
    fs = r["first_stall"]
    assert r["available"] and fs["horizon_step"] == 11 * n and r["step"][-1] == 11 * n
    assert fs["median"] - n > 20_000 and true_median - n > 20_000
    assert abs(fs["median"] - true_median) < 0.1 * (true_median - n), (fs, true_median)
    assert fs["interval"][0] < fs["median"] < fs["interval"][1]
    assert r["grid"]["points"] == len(r["step"]) < 6_000


def test_the_group_path_draws_the_same_blocks():
    """A record of groups (a loop run 200 steps under a logit drift of 0.001 a step) forecast 60,000 steps ahead: the
    risk is drawn on :func:`risk_grid`'s steps out to the horizon, and its quantiles, all in the blocks past FINE
    steps, are steps where the cumulative risk crosses 5%, 50%, 95%: F at the grid step before each is under its
    level, at the grid step from it on at or over."""
    from grpo_lab.sims.doctor.groups import run_groups
    from grpo_lab.sims.doctor.loop_sim import simulate_loop, to_record
    from grpo_lab.sims.doctor.stall_risk import risk_for_groups

    p0 = np.random.default_rng(8).beta(1.5, 2.0, 2000)
    sim = simulate_loop(p0, 8, 64, 32, 3, "logit", {"beta": 0.001}, 200, seed=4)
    groups = run_groups(to_record(sim, "all", 200))
    last = int(np.max(groups.step))
    settings = {"gen_batch": 64, "train_batch": 32, "cap": 3, "cap_effective": 3, "pool": None, "enable": True}
    rk = risk_for_groups(groups, settings, None, last + 60_000, draws=48)
    steps, F = np.asarray(rk["step"]), np.asarray(rk["cumulative"])
    assert np.array_equal(steps, risk_grid(last, last + 60_000)) and rk["grid"]["points"] == len(steps)
    assert np.all(np.diff(F) >= 0)
    fs = rk["first_stall"]
    for p, x in zip((0.05, 0.5, 0.95), (fs["interval"][0], fs["median"], fs["interval"][1])):
        assert x is not None and x - last > FINE
        i = int(np.searchsorted(steps, x))  # the grid step at or after x
        assert F[i] >= p and (i == 0 or F[i - 1] < p)
