"""TRL matrix: every fixture written by TRL's GRPOTrainer ingests to the ground truth its reward functions recorded.

The expected groups come from ``truth.json`` (what each reward function returned for each
generation batch, recorded inside the functions during the run), never from the parquet files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import group_outcomes, summarise

MATRIX = Path(__file__).parent / "fixtures" / "ingest" / "trl_matrix"
WITH_COMPLETIONS = ["plain", "logging_steps", "steps_per_generation", "two_generations_per_step", "num_iterations",
                    "reward_weights", "none_rewards", "scale_batch", "scale_none"]


def _truth(name):
    return json.loads((MATRIX / name / "truth.json").read_text())


def _weights_option(truth):
    w = truth["reward_weights"]
    return None if w == [1.0] * len(w) else w


def _expected_groups(truth):
    """(step, prompt, total rewards) of every group TRL wrote, each once, from the recorded reward returns.

    A batch scored at global_step s is trained from step s + 1; TRL writes the last batch before each
    logging step, so a batch is in the folder iff it is the last one scored at its global_step and
    s + 1 is a logging step.
    """
    G, eff = truth["num_generations"], truth["effective"]
    w = np.asarray(truth["reward_weights"])
    gens = truth["generations"]
    out = []
    for i, g in enumerate(gens):
        last_of_step = i + 1 == len(gens) or gens[i + 1]["global_step"] != g["global_step"]
        step = g["global_step"] + 1
        if not last_of_step or step % eff["logging_steps"]:
            continue
        per = np.array([[np.nan if v is None else v for v in g["rewards"][f]] for f in truth["reward_funcs"]]).T
        total = np.nansum(per * w, axis=1)
        total[np.isnan(per).all(axis=1)] = np.nan
        for s in range(0, len(total), G):
            assert len(set(g["prompts"][s:s + G])) == 1
            out.append((step, g["prompts"][s], total[s:s + G]))
    return out


@pytest.mark.parametrize("name", WITH_COMPLETIONS)
def test_each_generated_group_once_with_the_trainers_reward(name):
    truth = _truth(name)
    rec = ingest(MATRIX / name / "run", "trl", reward_weights=_weights_option(truth))
    expected = _expected_groups(truth)
    assert len(rec.groups["step"]) == len(expected)
    labels = rec.meta["prompt_labels"]
    for i, (step, prompt, rewards) in enumerate(expected):
        assert rec.groups["step"][i] == step
        assert labels[rec.groups["prompt_id"][i]] == prompt
        np.testing.assert_allclose(rec.groups["rewards"][i], rewards, equal_nan=True)
    assert rec.meta["num_generations"] == truth["num_generations"]
    assert rec.meta["source"]["reward_columns"] == truth["reward_funcs"]
    assert rec.meta["reward"]["classified"] == "training reward"
    assert not rec.meta["warnings"] or name == "two_generations_per_step"


def test_a_batch_reused_by_several_steps_is_counted_once():
    """steps_per_generation 4 x 4 rows, gradient_accumulation 2: 3 batches of 4 groups over 6 logged steps."""
    for name in ("steps_per_generation", "num_iterations"):
        truth = _truth(name)
        rec = ingest(MATRIX / name / "run", "trl")
        s = summarise(rec)
        assert s["groups"] == 4 * len(truth["generations"]) == 12
        assert s["rollouts_generated"] == 16 * len(truth["generations"])
        assert sorted(set(rec.groups["step"].tolist())) == [1, 3, 5]
        # steps 2, 4, 6 trained on a re-logged batch: no new groups there, said so, and no recomputed figure
        steps = rec.steps
        for st in (2, 4, 6):
            k = int(np.flatnonzero(steps["step"] == st)[0])
            assert np.isnan(steps["frac_reward_zero_std"][k]) and np.isnan(steps["reward_mean"][k])
        assert any("2, 4, 6" in n and "counted once" in n for n in rec.meta["notes"])
        assert len(rec.meta["ingest"]["skipped"]) == 3


def test_reward_weights_follow_reward_funcs_order_not_the_alphabet():
    """reward_funcs = [short, correct], weights [0.25, 1.0]; the alphabet would pair 0.25 with correct."""
    truth = _truth("reward_weights")
    assert truth["reward_funcs"] == ["short", "correct"] and truth["reward_weights"] == [0.25, 1.0]
    expected = _expected_groups(truth)
    by_list = ingest(MATRIX / "reward_weights" / "run", "trl", reward_weights=[0.25, 1.0])
    by_name = ingest(MATRIX / "reward_weights" / "run", "trl", reward_weights={"correct": 1.0, "short": 0.25})
    for rec in (by_list, by_name):
        np.testing.assert_allclose(rec.groups["rewards"], np.array([e[2] for e in expected]))
        assert rec.meta["source"]["scale_rewards"] == "group" and not rec.meta["warnings"]
    # the all-pass / all-fail split of the truth
    deg, ap, af = group_outcomes(np.array([e[2] for e in expected]))
    s = summarise(by_list)
    assert s["frac_all_pass"] == pytest.approx(ap.mean()) and s["frac_all_fail"] == pytest.approx(af.mean())
    # weights forgotten: the advantages TRL logged are not reproduced, and the reader says so
    unweighted = ingest(MATRIX / "reward_weights" / "run", "trl")
    assert any("advantages TRL logged are not reproduced" in w for w in unweighted.meta["warnings"])


def test_none_rewards_are_skipped_and_all_none_rows_are_unscorable():
    truth = _truth("none_rewards")
    rec = ingest(MATRIX / "none_rewards" / "run", "trl")
    per = [g["rewards"] for g in truth["generations"]]
    n_unscorable = sum(1 for g in per for a, b in zip(g["graded"], g["brief"]) if a is None and b is None)
    n_partial = sum(1 for g in per for a, b in zip(g["graded"], g["brief"]) if (a is None) != (b is None))
    assert n_unscorable > 0 and n_partial > 0  # the fixture has both kinds
    assert int(np.isnan(rec.groups["rewards"]).sum()) == n_unscorable
    assert rec.meta["source"]["scale_rewards"] == "group" and not rec.meta["warnings"]


@pytest.mark.parametrize("name", ["plain", "scale_batch", "scale_none", "none_rewards"])
def test_scale_rewards_is_read_from_the_advantages(name):
    truth = _truth(name)
    rec = ingest(MATRIX / name / "run", "trl")
    assert rec.meta["source"]["scale_rewards"] == truth["effective"]["scale_rewards"]
    assert any("scale_rewards = batch" in n for n in rec.meta["notes"]) == (name == "scale_batch")


@pytest.mark.parametrize("name", ["plain", "scale_none", "none_rewards"])
def test_recomputed_frac_zero_std_equals_trls_logged_one_when_one_batch_per_log(name):
    rec = ingest(MATRIX / name / "run", "trl")
    st = rec.steps
    np.testing.assert_allclose(st["frac_reward_zero_std"], st["scalar/frac_reward_zero_std"], atol=1e-7)
    np.testing.assert_allclose(st["reward_mean"], st["scalar/reward"], rtol=1e-5)


def test_logging_steps_keeps_only_logged_batches_and_says_what_is_missing():
    truth = _truth("logging_steps")
    rec = ingest(MATRIX / "logging_steps" / "run", "trl")
    assert len(truth["generations"]) == 6 and len(rec.groups["step"]) == 2 * 4
    assert "completions between logging steps" in rec.meta["missing"]
    assert any("logging_steps = 3" in n for n in rec.meta["notes"])


def test_two_generation_batches_per_step_is_a_warning_not_a_silent_subset():
    rec = ingest(MATRIX / "two_generations_per_step" / "run", "trl")
    assert len(rec.groups["step"]) == 4 * 2  # 4 steps x the last batch of 2 groups
    assert any("differs from the mean of the logged completions" in w for w in rec.meta["warnings"])
    # the record's recomputed reward is not presented as TRL's: TRL's stays in scalar/reward and differs
    st = rec.steps
    assert not np.allclose(st["reward_mean"], st["scalar/reward"])


def test_scalars_only_run():
    rec = ingest(MATRIX / "no_completions" / "run", "trl")
    assert rec.meta["scalars_only"] and len(rec.groups["step"]) == 0
    assert "completions" in rec.meta["missing"]
    assert any("log_completions was off" in n for n in rec.meta["notes"])
    assert np.isfinite(rec.steps["scalar/frac_reward_zero_std"]).all()


def test_parquet_disagreeing_with_trainer_state_is_named(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(MATRIX / "plain" / "run", run)
    (run / "completions" / "completions_00003.parquet").unlink()
    rec = ingest(run, "trl")
    assert any("step 3 " in w and "no completions_*.parquet" in w for w in rec.meta["warnings"])
    # the trainer_state.json of another run: its logged rewards disagree with these completions
    shutil.copy(MATRIX / "reward_weights" / "run" / "trainer_state.json", run / "trainer_state.json")
    rec = ingest(run, "trl")
    assert any("differs from the mean of the logged completions" in w for w in rec.meta["warnings"])
    # a num_generations that splits TRL's groups
    rec = ingest(MATRIX / "plain" / "run", "trl", num_generations=2)
    assert any("repeat in runs of 4" in w for w in rec.meta["warnings"])
