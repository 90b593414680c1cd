"""The tie-share trend's recent window (sims/doctor/tie_trend.py, "Recent window"): where the tie share moved fast
and then settled, the straight logit line over the whole log carries the mixed share on past the plateau and its
band misses the next rows; the chooser then keeps the trend fitted on the log's last half. Where the log follows
one line the whole log is kept. Predictive coverage is scored on simulated future rows the fit did not see."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, logit

from grpo_lab.sims.doctor.tie_trend import fit_tie_trend, recent_first, tie_predict

ROWS, FUTURE = 100, 30


def _coverage(truth, groups: int, seeds: int, recent: bool):
    """Mean share of FUTURE simulated rows inside the 90% band fitted on ROWS rows, and how often the window was
    the recent one."""
    held, kept = [], 0
    steps = np.arange(ROWS + FUTURE)
    for seed in range(seeds):
        x = np.random.default_rng(seed).binomial(groups, truth(steps)) / groups  # the mixed share each row logs
        n = np.full(ROWS, float(groups))
        f = fit_tie_trend(steps[:ROWS], n, 1 - x[:ROWS], recent=recent)
        b = tie_predict(f, steps[ROWS:], np.full(FUTURE, float(groups)))["predictive"]
        held.append(np.mean((x[ROWS:] >= b["lo"] - 1e-12) & (x[ROWS:] <= b["hi"] + 1e-12)))
        kept += recent and f["window"]["kept"] == "recent"
    return float(np.mean(held)), kept


def _settles(s):
    """The mixed share falls from 80% to 2% over ten steps and stays at 2% (tinker-arithmetic's shape)."""
    return np.where(s < 10, expit(logit(0.8) + (logit(0.02) - logit(0.8)) * s / 10), 0.02)


def _line(s):
    """The mixed share on one logit line from 90% to 20% over the fitted rows, and on along it."""
    return expit(logit(0.9) + (logit(0.2) - logit(0.9)) * s / (ROWS - 1))


def test_a_settled_tie_share_keeps_the_recent_window_and_its_band_holds_the_next_rows():
    held, kept = _coverage(_settles, 100, 20, recent=True)
    whole, _ = _coverage(_settles, 100, 20, recent=False)
    assert kept == 20
    assert held >= 0.85, held  # 0.91 measured (600 rows over 20 seeds)
    assert whole < 0.5, whole  # the whole log's line: 0.14 measured, its band [0, 0] on a plateau at 2%


def test_a_tie_share_on_one_line_keeps_the_whole_log():
    held, kept = _coverage(_line, 32, 20, recent=True)
    assert kept <= 2, kept  # 0 of 40 seeds measured
    assert held >= 0.85, held


def test_the_recent_fit_leaves_the_early_rows_out_of_its_likelihood():
    """The recent fit equals the whole-log fit of its own rows (the same time scale), computed with the early rows
    absent, and the series still spans every row."""
    steps = np.arange(ROWS)
    x = np.random.default_rng(7).binomial(100, _settles(steps)) / 100
    n = np.full(ROWS, 100.0)
    f = fit_tie_trend(steps, n, 1 - x)
    first = recent_first(ROWS)
    assert f["window"]["kept"] == "recent" and f["fitted_from_step"] == first == f["window"]["first_step"]
    assert len(f["series"]["step"]) == ROWS
    alone = fit_tie_trend(steps[first:], n[first:], 1 - x[first:], recent=False)
    t_alone = (steps[first:] - first) / (ROWS - 1 - first)  # its own time scale, mapped onto the whole log's
    t_whole = steps[first:] / (ROWS - 1)
    np.testing.assert_allclose(f["a"] + f["b"] * t_whole, alone["a"] + alone["b"] * t_alone, atol=1e-6)


def test_a_long_log_s_choice_pools_its_refits_and_thins_the_rows_it_scores():
    """As the drift maps' chooser on a long log: the refits pool the inner rows into bins (groups summed, shares and
    steps groups-weighted, the first and last rows alone) and at most LFO_MAX_SCORED rows are scored."""
    from grpo_lab.sims.doctor.scalars_fit import LFO_MAX_ROWS, LFO_MAX_SCORED
    from grpo_lab.sims.doctor.tie_trend import _pooled

    rng = np.random.default_rng(3)
    m = 1000
    s, n = np.arange(m, dtype=float), rng.integers(8, 64, m).astype(float)
    hi, lo = rng.binomial(n.astype(int), 0.2) / n, rng.binomial(n.astype(int), 0.1) / n
    S, N, H, L = _pooled((s, n, hi, lo), LFO_MAX_ROWS)
    assert len(S) <= LFO_MAX_ROWS and (S[0], S[-1]) == (s[0], s[-1]) and (N[0], N[-1]) == (n[0], n[-1])
    assert N.sum() == n.sum()
    np.testing.assert_allclose([(H * N).sum(), (L * N).sum(), (S * N)[1:-1].sum()],
                               [(hi * n).sum(), (lo * n).sum(), (s * n)[1:-1].sum()], rtol=1e-12)
    size = int(np.ceil((m - 2) / (LFO_MAX_ROWS - 2)))  # the second bin: rows 1 + size .. 2 size, computed here alone
    b = slice(1 + size, 1 + 2 * size)
    assert N[2] == n[b].sum() and H[2] == pytest.approx((hi[b] * n[b]).sum() / n[b].sum(), rel=1e-12)
    steps = np.arange(100_000)
    x = np.random.default_rng(4).binomial(64, _settles(steps / 1000)) / 64
    f = fit_tie_trend(steps, np.full(len(steps), 64.0), 1 - x)
    assert 0 < f["window"]["scored"] <= LFO_MAX_SCORED and f["window"]["kept"] == "recent"


def test_a_diagnosis_returns_a_bounded_tie_series_read_in_full_before(tmp_path):
    """A long log whose rewards are not binary: every stage reads the tie trend's full series (the logged tail of the
    verdicts among them), and what the diagnosis returns keeps every n-th row and the last, at most MAX_ROWS
    (a 1,000,000-step log's JSON was 151.8 MB: benchmarks/bench_doctor_scale.py --not-binary)."""
    import json

    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.doctor.scalars_fit import MAX_ROWS
    from grpo_lab.sims.doctor.when import logged_tail
    from grpo_lab.sims.ingest.trackers import read_scalars

    rows, groups = 5000, 64
    rng = np.random.default_rng(5)
    mixed = rng.binomial(groups, _settles(np.arange(rows) / 100)) / groups
    with open(tmp_path / "metrics.jsonl", "w") as f:
        for i in range(rows):  # a shaped reward (its mean leaves [0, 1]): not binary, the tie share forecast
            f.write(json.dumps({"step": i, "env/all/by_group/frac_mixed": mixed[i],
                                "env/all/by_group/frac_all_good": 1 - mixed[i], "env/all/by_group/frac_all_bad": 0.0,
                                "env/all/reward/total": 1.2, "env/all/total_episodes": groups * 8}) + "\n")
    (tmp_path / "config.json").write_text(json.dumps({"group_size": 8, "groups_per_batch": groups}))
    d = diagnose(read_scalars(tmp_path / "metrics.jsonl"))
    assert d["run"]["rewards"] == "not binary"
    s = d["tie_fit"]["series"]
    assert d["tie_fit"]["series_every"] == 2 and len(s["step"]) <= MAX_ROWS and s["step"][-1] == rows - 1
    np.testing.assert_array_equal(s["step"], np.r_[np.arange(0, rows, 2), rows - 1])
    full = logged_tail(np.arange(rows), mixed, np.full(rows, float(groups)), 1 - mixed, np.zeros(rows))
    assert d["when"]["logged_tail"]["mixed"] == pytest.approx(full["mixed"], abs=1e-12)
