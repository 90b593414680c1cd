"""tinker-cookbook with ``remove_constant_reward_groups=True``: its logged shares are over the groups that trained.

The fixture ``tests/fixtures/trackers/tinker_filtered`` was written by tinker-cookbook 0.6.1's own functions
(``remove_constant_reward_groups``, ``compute_trajectory_metrics``, ``JsonLogger`` and a real ``rl.train.Config``;
``make_tinker_filtered.py``), its truth (the shares of every group drawn, before the filter) counted at write time.
As logged, every row reads 100% mixed (or 0% on the keep-one row); read as given, the zero-std share of all groups
is 1 - total_episodes / (K groups_per_batch)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.ingest.trackers import read_scalars

FIX = Path(__file__).parent / "fixtures" / "trackers"
TRUTH = json.loads((FIX / "truth.json").read_text())["tinker_filtered"]


def _rows(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


def test_the_log_as_written_holds_only_mixed_groups_and_the_truth_does_not():
    rows = _rows(FIX / "tinker_filtered")
    mixed = np.array([r["env/all/by_group/frac_mixed"] for r in rows])
    keep_one = TRUTH["all_unanimous_step"] - 1
    assert set(np.delete(mixed, keep_one)) == {1.0} and mixed[keep_one] == 0.0
    truth_mixed = 1 - np.asarray(TRUTH["frac_reward_zero_std"])
    assert truth_mixed.max() < 0.9 and truth_mixed[keep_one] == 0.0
    kept = np.array([r["env/all/total_episodes"] for r in rows]) / TRUTH["K"]
    np.testing.assert_array_equal(kept, TRUTH["kept_groups"])


def test_the_zero_std_share_of_all_groups_is_read_and_the_split_is_not_claimed():
    rec = read_scalars(FIX / "tinker_filtered", fmt="jsonl")
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], TRUTH["frac_reward_zero_std"], rtol=0, atol=1e-12)
    for col in ("frac_all_pass", "frac_all_fail", "reward_mean"):
        assert np.isnan(rec.steps[col]).all()
    assert any("remove_constant_reward_groups is on" in n for n in rec.meta["source"]["notes"])


def test_the_doctor_reads_the_drawn_groups_not_the_kept_ones():
    d = diagnose(read_scalars(FIX / "tinker_filtered", fmt="jsonl"))
    tail = d["when"]["logged_tail"]
    last = slice(-tail["rows"], None)
    expect = 1 - np.mean(np.asarray(TRUTH["frac_reward_zero_std"])[last])  # equal groups a row: the plain mean
    assert abs(tail["mixed"] - expect) < 1e-12
    assert tail["mixed_interval"][1] < 0.9  # not "100% mixed" as the kept groups say
    assert d["run"]["rewards"] == "binary"  # reward/total = correct over the kept episodes, format 1


def test_a_flag_that_did_not_act_leaves_the_shares_as_logged(tmp_path):
    """Before tinker-cookbook #163 the flag filtered each group alone and dropped none: rows with some groups tied."""
    run = tmp_path / "run"
    shutil.copytree(FIX / "jsonl", run)
    cfg = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**cfg, "remove_constant_reward_groups": True}))
    rec = read_scalars(run, fmt="jsonl")
    plain = read_scalars(FIX / "jsonl", fmt="jsonl")
    for col in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean"):
        np.testing.assert_array_equal(rec.steps[col], plain.steps[col])
    assert any("the filter did not act" in n for n in rec.meta["source"]["notes"])


def test_without_the_episode_count_no_share_of_the_drawn_groups_is_claimed(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIX / "tinker_filtered" / "config.json", run / "config.json")
    rows = [{k: v for k, v in r.items() if k != "env/all/total_episodes"} for r in _rows(FIX / "tinker_filtered")]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rec = read_scalars(run, fmt="jsonl")
    for col in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean"):
        assert np.isnan(rec.steps[col]).all()
    assert any("needs env/all/total_episodes" in n for n in rec.meta["source"]["notes"])
