"""Issue #39, item 4: no verdict against the log. A verdict about the future ("stays above", "crosses near step s")
is said only where the logged rows are above the threshold and the trend the log cannot rule out (the tie share's
two trends, weighed by the doctor's one chooser) agrees with it; otherwise it becomes "uncertain" with the
evidence (sims/doctor/when.py check_expiry, sims/doctor/tie_trend.py alternative_expiry)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.scalars_fit import PARSIMONY
from grpo_lab.sims.doctor.tie_trend import MODEL, MODEL_SIDES, undecided
from grpo_lab.sims.doctor.when import check_expiry, logged_tail
from grpo_lab.sims.scalars_record import scalars_record
from grpo_lab.testing.real_logs import read_real

SRC = {"format": "test", "trainer": "tinker-cookbook", "run": "t", "dialect": {}, "missing": [], "notes": []}
ABOVE = "stays above the threshold for 10 run lengths if the trend holds"
CROSSES = "crosses the threshold near step 27 if the trend holds"
TOTAL, GROUPS = 40, 16
#: a run that improves: groups tied low give way to mixed ones, then to groups tied high; its true mixed share
#: (1 / (1 + e^eta_hi + e^eta_lo)) peaks near 0.79 at step 20 and falls below 0.5 at step 28
TURNS = np.array([-7.0, 10.0, 4.0, -12.0])
#: never tied high: the tie share only falls, the mixed share rises to 1 and stays above
MONOTONE = np.array([-30.0, 0.0, 3.0, -8.0])


def _mixed_truth(theta, t):
    eta = np.stack([theta[0] + theta[1] * t, theta[2] + theta[3] * t], 1)
    return 1 / (1 + np.exp(eta).sum(1))


def _run(theta, rows, seed):
    """The first ``rows`` rows of a 40-row run whose rows are multinomial (tied high, tied low, mixed) draws of 16
    groups from the two-sided truth ``theta``; rewards not binary (a mean reward outside [0, 1])."""
    rng = np.random.default_rng(seed)
    t = np.arange(TOTAL) / (TOTAL - 1)
    mixed = _mixed_truth(theta, t)
    eta = np.stack([theta[0] + theta[1] * t, theta[2] + theta[3] * t], 1)
    p = np.column_stack([np.exp(eta) * mixed[:, None], mixed])
    c = np.array([rng.multinomial(GROUPS, q / q.sum()) for q in p])[:rows] / GROUPS
    rec = scalars_record("sim", np.arange(rows), {
        "frac_all_pass": c[:, 0], "frac_all_fail": c[:, 1], "frac_reward_zero_std": c[:, 0] + c[:, 1],
        "groups_per_step": np.full(rows, float(GROUPS)), "reward_mean": rng.normal(0.0, 3.0, rows)},
        num_generations=8, source=SRC)
    return diagnose(rec, only="when")


def test_the_truths_are_what_the_tests_say():
    t = np.arange(TOTAL) / (TOTAL - 1)
    m = _mixed_truth(TURNS, t)
    assert m.argmax() == 20
    assert np.flatnonzero(m[20:] < 0.5)[0] + 20 == 28
    assert np.all(np.diff(_mixed_truth(MONOTONE, t)) > 0)


def test_a_turning_run_cut_before_its_turn_is_no_longer_told_it_stays_above():
    """Known truth: the mixed share crosses 0.5 at step 28. Cut at 20 rows, the kept (one-sided) trend says "stays
    above" on most of 30 seeds; the checked verdict says it on at most a third of those (where the log rules the
    two-sided out), and never says it where the two trends disagree and the log cannot tell them apart."""
    model, said = Counter(), Counter()
    for seed in range(30):
        d = _run(TURNS, 20, seed)
        v = d["when"]["verdicts"][0]
        model[v["model"]["status"].startswith("stays above")] += 1
        said[v["said"].startswith("stays above")] += 1
        if v["said"].startswith("stays above"):
            assert not d["expiry"]["alternatives"] or d["expiry"]["alternatives"][0]["status"].startswith("stays")
        if v["uncertain"]:
            assert v["said"].startswith("uncertain: ")
            assert "cannot tell them apart" in v["said"] or "reaches the threshold 0.5" in v["said"]
            assert d["when"]["expiry"]["step"] is None and d["expiry"]["status"] == v["said"]
    assert model[True] >= 20, model
    assert said[True] <= model[True] / 3, (said, model)


def test_a_run_whose_tie_share_only_falls_keeps_its_stays_above():
    for seed in range(20):
        v = _run(MONOTONE, 24, seed)["when"]["verdicts"][0]
        assert v["holds"] and v["said"] == ABOVE, v["said"]


def test_the_reward_hacking_run_whose_all_pass_groups_arrive_last_is_uncertain_with_its_evidence():
    """The real run of the issue: the one-sided trend (kept by parsimony, weight 0.39 against 0.61) says "stays
    above"; the two-sided crosses; its last rows' all-pass share rises beyond two standard errors."""
    d = diagnose(read_real("tinker-rewardhack-inoculated-gs8-gpb16"))
    w = d["tie_fit"]["choice"]["weights"]
    assert d["tie_fit"]["model"] == MODEL and w[MODEL] >= PARSIMONY * w[MODEL_SIDES]
    assert undecided(d["tie_fit"])["model"] == MODEL_SIDES
    v = d["when"]["verdicts"][0]
    assert v["model"]["status"].startswith("stays above") and not v["holds"] and v["uncertain"]
    alt = d["expiry"]["alternatives"][0]
    assert alt["status"].startswith("crosses") and alt["weight"] == pytest.approx(w[MODEL_SIDES])
    assert alt["status"] in v["said"] and "the last 10 logged rows (steps 14-23)" in v["said"]
    assert "all-pass" in v["said"] and "rising over steps 14-23" in v["said"]
    assert d["when"]["expiry"]["step"] is None


def test_check_expiry_with_alternatives_and_a_straddling_tail():
    steps = np.arange(1, 21)
    high = logged_tail(steps, np.full(20, 0.8), np.full(20, 200.0))
    alt = {"model": "two-sided tie trend", "weight": 0.6, "kept_model": "one-sided tie trend", "kept_weight": 0.4}
    v = check_expiry(ABOVE, 0.5, high, 8, "not binary", [{**alt, "status": CROSSES}])
    assert not v["holds"] and v["uncertain"] and CROSSES in v["said"] and "0.40 and 0.60" in v["said"]
    assert check_expiry(ABOVE, 0.5, high, 8, "not binary", [{**alt, "status": ABOVE}])["holds"]
    v = check_expiry(CROSSES, 0.5, high, 8, "not binary", [{**alt, "status": ABOVE}])
    assert v["uncertain"] and v["said"].startswith("uncertain")
    # "already below" speaks of the last rows, which the log settles: an alternative does not move it
    low = logged_tail(steps, np.full(20, 0.2), np.full(20, 200.0))
    assert check_expiry("already below the threshold at the last step (fit)", 0.5, low, 8, "not binary",
                        [{**alt, "status": ABOVE}])["holds"]
    # the last rows' interval reaches the threshold: "stays above" is not said (10 rows of 20 groups at 0.52)
    near = logged_tail(steps, np.full(20, 0.52), np.full(20, 20.0))
    assert near["mixed_interval"][0] < 0.5 < near["mixed_interval"][1]
    v = check_expiry(ABOVE, 0.5, near, 8, "binary")
    assert not v["holds"] and v["uncertain"] and "reaches the threshold 0.5" in v["said"]
    assert check_expiry(CROSSES, 0.5, near, 8, "binary")["holds"]
