"""The tie share's two-sided trend (sims/doctor/tie_trend.py): a log that splits its tied groups into two sides
(tinker-cookbook's all-good / all-bad) gets a multinomial logistic trend that can turn, chosen against the
one-sided trend by the doctor's leave-future-out chooser."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.doctor.tie_trend import MODEL, MODEL_SIDES, fit_tie_trend, tie_predict

ROWS, GROUPS = 80, 64
TRUTH = np.array([-4.0, 8.0, 2.0, -8.0])  # log(tied high / mixed) = -4 + 8 t, log(tied low / mixed) = 2 - 8 t


def _probs(theta, t):
    eta = np.stack([theta[0] + theta[1] * t, theta[2] + theta[3] * t], 1)
    e = np.exp(eta)
    den = 1 + e.sum(1, keepdims=True)
    return np.column_stack([e / den, 1 / den])  # high, low, mixed


def _simulate(seed, theta=TRUTH):
    rng = np.random.default_rng(seed)
    t = np.arange(ROWS) / (ROWS - 1)
    c = np.array([rng.multinomial(GROUPS, p) for p in _probs(theta, t)]) / GROUPS
    return np.arange(ROWS), np.full(ROWS, float(GROUPS)), c[:, 0] + c[:, 1], c[:, 0], c[:, 1]


def test_a_turning_tie_share_is_fitted_by_side_and_recovered_within_its_errors():
    step, n, tie, hi, lo = _simulate(1)
    assert tie[ROWS // 2] < tie[0] and tie[ROWS // 2] < tie[-1]  # the tie share falls, then rises
    f = fit_tie_trend(step, n, tie, hi, lo)
    assert f["model"] == MODEL_SIDES and f["choice"]["weights"][MODEL_SIDES] > 0.9
    z = (f["theta"] - TRUTH) / np.sqrt(np.diag(f["cov"]))
    assert np.all(np.abs(z) < 4), z
    # the fitted mixed share equals the multinomial's, computed here independently
    t = (step - step[0]) / (step[-1] - step[0])
    np.testing.assert_allclose(tie_predict(f, step, n, n_draws=1)["mixed"], _probs(f["theta"], t)[:, 2], rtol=1e-10)


def test_the_one_sided_trend_misses_the_turn_that_the_two_sided_foresees():
    """Over the whole log the one-sided line misses the turn; fitted on the log's recent rows (the window its chooser
    keeps, tests/test_tie_trend_window.py) it follows the rise after the turn as closely as the two-sided trend."""
    step, n, tie, hi, lo = _simulate(2)
    cut = int(0.75 * ROWS)
    one = fit_tie_trend(step[:cut], n[:cut], tie[:cut], recent=False)
    two = fit_tie_trend(step[:cut], n[:cut], tie[:cut], hi[:cut], lo[:cut], recent=False)
    windowed = fit_tie_trend(step[:cut], n[:cut], tie[:cut])
    assert one["model"] == windowed["model"] == MODEL and two["model"] == MODEL_SIDES
    later = step[cut:]
    truth_mixed = 1 - tie[cut:]
    err = {m: np.mean(np.abs(tie_predict(f, later, n[cut:], n_draws=1)["mixed"] - truth_mixed))
           for m, f in (("one", one), ("two", two), ("windowed", windowed))}
    assert err["two"] < 0.5 * err["one"], err
    assert windowed["window"]["kept"] == "recent" and err["windowed"] < 0.5 * err["one"], err


def test_sides_that_do_not_sum_to_the_tie_share_leave_the_one_sided_trend():
    step, n, tie, hi, lo = _simulate(3)
    f = fit_tie_trend(step, n, tie, hi, lo * 0.5)  # a side missing groups (ties at another value): not a split
    assert f["model"] == MODEL and "choice" not in f


def test_a_monotone_tie_share_with_one_empty_side_keeps_the_simpler_trend_or_agrees_with_it():
    step, n, tie, hi, lo = _simulate(4, theta=np.array([-30.0, 0.0, 1.0, -3.0]))  # never tied high
    assert hi.max() == 0
    f = fit_tie_trend(step, n, tie, hi, lo)
    one = fit_tie_trend(step, n, tie)
    grid = np.arange(ROWS, 2 * ROWS)
    np.testing.assert_allclose(tie_predict(f, grid, n[:1], n_draws=1)["mixed"],
                               tie_predict(one, grid, n[:1], n_draws=1)["mixed"], atol=0.02)
