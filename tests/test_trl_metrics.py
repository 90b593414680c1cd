"""The TRL integration's log figures (whole-array numpy, running sums) against plain per-group loops."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_lab.trl_recorder.metrics import RollingPassRates, batch_counts, batch_metrics, pool_counts
from grpo_lab.trl_recorder.recorder import combine_rewards


def _naive(r, a, tol, tags, tag_names, spb):
    """One group at a time, in plain Python."""
    groups = []
    for row in r:
        vals = [v for v in row if not math.isnan(v)]
        if not vals:
            groups.append((False, False, False, 0))
            continue
        flat = max(vals) - min(vals) <= tol
        above = sum(vals) / len(vals) > 0.5
        groups.append((flat and above, flat and not above, not flat, len(vals)))
    n = len(groups)
    out = {
        "frac_all_pass": sum(g[0] for g in groups) / n,
        "frac_all_fail": sum(g[1] for g in groups) / n,
        "effective_group_rate": sum(g[2] for g in groups) / n,
        "max_abs_advantage": max(abs(x) for x in a.ravel() if not math.isnan(x)),
        "useful_rollouts_per_step": sum(g[3] for g in groups if g[2]) / spb,
        "rewards_missing": sum(math.isnan(x) for x in r.ravel()) / r.size,
    }
    for i, name in enumerate(tag_names):
        sel = [g for g, t in zip(groups, tags) if t == i]
        if sel:
            out[f"frac_all_pass/{name}"] = sum(g[0] for g in sel) / len(sel)
            out[f"frac_all_fail/{name}"] = sum(g[1] for g in sel) / len(sel)
            out[f"effective_group_rate/{name}"] = sum(g[2] for g in sel) / len(sel)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_batch_metrics_match_a_per_group_loop(seed):
    rng = np.random.default_rng(seed)
    n, G = int(rng.integers(1, 40)), int(rng.integers(2, 9))
    r = rng.choice([0.0, 1.0, 0.5, 1.5], size=(n, G), p=[0.4, 0.4, 0.1, 0.1])
    if seed % 2:  # missing rewards, including whole groups
        r[rng.random((n, G)) < 0.2] = np.nan
        r[0] = np.nan
    a = rng.normal(size=(n, G))
    tags = rng.integers(-1, 3, size=n)
    tol = [0.0, 0.6][seed % 3 == 2]
    got = batch_metrics(r, a, 2.0, tags, ["x", "y", "z"], tol)
    want = _naive(r, a, tol, tags, ["x", "y", "z"], 2.0)
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k]), k


def test_empty_batch_and_pooling():
    got = batch_metrics(np.zeros((0, 4)), np.zeros((0, 4)))
    assert all(math.isnan(v) for v in got.values())
    rng = np.random.default_rng(1)
    r, a = rng.integers(0, 2, size=(10, 4)).astype(float), rng.normal(size=(10, 4))
    r[2, 1] = np.nan
    parts = [batch_counts(r[:3], a[:3])[0], batch_counts(r[3:], a[3:])[0]]
    assert np.allclose(pool_counts(parts), batch_counts(r, a)[0])


def test_combine_rewards_skips_missing_terms():
    rpf = np.array([[1.0, 0.0], [np.nan, 1.0], [np.nan, np.nan], [0.5, 0.5]])
    got = combine_rewards(rpf, [1.0, 0.5])
    assert np.allclose(got[[0, 1, 3]], [1.0, 0.5, 0.75]) and np.isnan(got[2])
    assert np.allclose(combine_rewards(rpf[[0, 3]], [1.0, 0.5]), [1.0, 0.75])


def _naive_d(history, G, window):
    """D_real / D_iid from each prompt's last ``window`` groups, recomputed from the whole history."""
    rates = []
    for groups in history.values():
        last = groups[-window:]
        passed = sum(p for p, _ in last)
        scored = sum(s for _, s in last)
        if scored:
            rates.append(passed / scored)
    if not rates:
        return math.nan, math.nan
    d = [p ** G + (1 - p) ** G for p in rates]
    m = sum(rates) / len(rates)
    return sum(d) / len(d), m ** G + (1 - m) ** G


def test_rolling_pass_rates_match_a_recomputation(monkeypatch):
    monkeypatch.setattr(RollingPassRates, "RESUM_EVERY", 7)  # the exact re-summation runs too
    rng = np.random.default_rng(3)
    G, window = 4, 3
    roll = RollingPassRates(5, window, G)
    history = {}
    for batch in range(60):
        n = int(rng.integers(1, 6))
        ids = rng.integers(0, 9, size=n)  # repeats within a batch, and ids beyond the first 5 (growth)
        r = rng.integers(0, 2, size=(n, G)).astype(float)
        r[rng.random((n, G)) < 0.25] = np.nan
        roll.update(ids, r)
        for pid, row in zip(ids, r):
            ok = ~np.isnan(row)
            history.setdefault(int(pid), []).append((int(np.sum(row[ok] > 0.5)), int(ok.sum())))
        want = _naive_d(history, G, window)
        got = roll.d_values(G)
        assert got["d_real"] == pytest.approx(want[0], abs=1e-12)
        assert got["d_iid"] == pytest.approx(want[1], abs=1e-12)
        other = roll.d_values(8)  # another G: recomputed from the rates
        assert other["d_real"] == pytest.approx(_naive_d(history, 8, window)[0], abs=1e-12)


def test_rolling_before_any_group():
    assert all(math.isnan(v) for v in RollingPassRates(3, 4, 4).d_values(4).values())


def test_the_nothing_missing_hint_changes_nothing():
    """batch_counts / RollingPassRates.update with missing=False (the recorder's hint when no reward is NaN)
    give what the unhinted calls compute."""
    rng = np.random.default_rng(5)
    r, a = rng.choice([0.0, 1.0, 0.5], size=(12, 4)), rng.normal(size=(12, 4))
    tags = rng.integers(-1, 2, size=12)
    hinted, plain = batch_counts(r, a, 0.0, tags, 2, missing=False), batch_counts(r, a, 0.0, tags, 2)
    assert np.array_equal(hinted[0], plain[0]) and np.array_equal(hinted[1], plain[1])
    one, two = RollingPassRates(6, 3, 4), RollingPassRates(6, 3, 4)
    for k in range(4):
        ids = rng.permutation(6)[:3]
        one.update(ids, r[3 * k:3 * k + 3], missing=False)
        two.update(ids, r[3 * k:3 * k + 3])
        assert one.d_values(4) == two.d_values(4)
