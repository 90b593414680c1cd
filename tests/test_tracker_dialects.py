"""The dialect table's conversions on the trainers no fixture covers, against values worked by hand from each
trainer's formula (sims/ingest/trackers/dialects.py quotes them), and detection from metric names."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers.dialects import DIALECTS, detect, dialect, map_run


def series(**named):
    """{name: (steps 1.., values)}; keys use __ for / and _dot_ for ."""
    out = {}
    for key, values in named.items():
        name = key.replace("__", "/").replace("_dot_", ".")
        steps = np.arange(1, len(values) + 1)
        v = np.asarray(values, float)
        keep = np.isfinite(v)
        out[name] = (steps[keep], v[keep])
    return out


def test_verl_dapo_gives_the_groups_drawn_and_no_share():
    s = series(train__num_gen_batches=[1, 2, 3], critic__score__mean=[0.5, 0.5, 0.5])
    steps, cols, raw, read, missing, notes, K = map_run(
        s, {"data.gen_batch_size": 96, "actor_rollout_ref.rollout.n": 8}, detect(s), None)
    assert K == 8
    np.testing.assert_array_equal(cols["groups_per_step"], [96, 192, 288])
    assert "frac_reward_zero_std" in missing and "reward_mean" in missing  # score/mean is over kept groups only


def test_prime_rl_old_names_count_sums_to_k():
    s = series(solve_all__all=[0.25, 0.5], solve_none__all=[0.5, 0.25], reward__all__mean=[0.4, 0.6])
    d = detect(s)
    assert d.trainer == "prime-rl-old"
    _, cols, _, read, missing, notes, K = map_run(s, {"orchestrator.group_size": 16}, d, None)
    assert K == 16
    np.testing.assert_allclose(cols["frac_reward_zero_std"], [0.75, 0.75])
    np.testing.assert_allclose(cols["reward_mean"], [0.4, 0.6])
    assert missing == ["groups_per_step", "rounds"]


def test_skyrl_counts_groups_over_the_train_batch():
    s = series(reward__num_zero_variance_filtered=[16, 32], reward__avg_raw_reward=[0.3, 0.35])
    d = detect(s)
    assert d.trainer == "skyrl"
    _, cols, _, _, missing, _, K = map_run(
        s, {"trainer.train_batch_size": 64, "generator.n_samples_per_prompt": 4}, d, None)
    assert K == 4
    np.testing.assert_allclose(cols["frac_reward_zero_std"], [0.25, 0.5])
    np.testing.assert_array_equal(cols["groups_per_step"], [64, 64])
    _, cols, _, _, missing, notes, _ = map_run(s, {}, d, 4)  # no config: a count cannot be a share
    assert "frac_reward_zero_std" in missing and any("count of groups" in n for n in notes)


def test_nemo_rl_gives_the_groups_drawn():
    s = series(dynamic_sampling_num_gen_batches=[1, 4])
    d = detect(s)
    assert d.trainer == "nemo-rl"
    _, cols, _, _, _, _, K = map_run(s, {"grpo.num_prompts_per_step": 32, "grpo.num_generations_per_prompt": 16},
                                     d, None)
    assert K == 16
    np.testing.assert_array_equal(cols["groups_per_step"], [32, 128])


def test_slime_counts_absent_where_zero():
    # slime logs zero_std/count_<r> only for values that occur: step 2 had no all-pass group
    s = series(zero_std__count_1_dot_0=[4, np.nan, 2], zero_std__count_0_dot_0=[8, 16, np.nan],
               rollout__raw_reward=[0.3, 0.2, 0.4])
    d = detect(s)
    assert d.trainer == "slime"
    steps, cols, *_ = map_run(s, {"rollout_batch_size": 32}, d, 8)
    np.testing.assert_array_equal(steps, [1, 2, 3])
    np.testing.assert_allclose(cols["frac_all_pass"], [4 / 32, 0, 2 / 32])
    np.testing.assert_allclose(cols["frac_all_fail"], [8 / 32, 16 / 32, 0])


def test_a_name_too_common_does_not_make_a_run_trl():
    with pytest.raises(InputError, match="no known trainer metric names"):
        detect(series(train__reward=[0.1], train__loss=[1.0]))


def test_every_row_names_its_source_and_a_known_trainer_is_refused_when_unknown():
    for d in DIALECTS:
        assert d.repo.count("/") == 1 and d.version and d.source and d.counts
    with pytest.raises(InputError, match="unknown trainer"):
        dialect("not-a-trainer")
