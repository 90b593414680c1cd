"""verl matrix: dumps written by verl's own reward managers, balance_batch, dump and file logger.

Expected groups come from ``truth.json`` (each row's uid, which verl does not dump, and the
reward that trained, read from the batch before the dump), never from the dump files.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import group_outcomes, summarise

MATRIX = Path(__file__).parent / "fixtures" / "ingest" / "verl_matrix"


def _truth(name):
    return json.loads((MATRIX / name / "truth.json").read_text())


def _true_groups(truth, values="training_reward"):
    """{(step, prompt): [sorted rewards of each true group]} from the recorded uids."""
    out = defaultdict(list)
    for step, rows in truth["steps"].items():
        by_uid = defaultdict(list)
        for uid, prompt, v in zip(rows["uid"], rows["prompt"], rows[values]):
            by_uid[(prompt, uid)].append(v)
        for (prompt, _), vals in by_uid.items():
            out[(int(step), prompt)].append(sorted(vals))
    return out


def _record_groups(rec):
    out = defaultdict(list)
    labels = rec.meta["prompt_labels"]
    for s, p, r in zip(rec.groups["step"], rec.groups["prompt_id"], rec.groups["rewards"]):
        out[(int(s), labels[p])].append(sorted(r.tolist()))
    return out


@pytest.mark.parametrize("name", ["naive", "dapo", "dapo_float"])
def test_groups_and_training_reward_equal_the_truth(name):
    truth = _truth(name)
    rec = ingest(MATRIX / name / "run", "verl")
    assert rec.meta["num_generations"] == truth["config"]["n"]
    assert rec.meta["reward"]["classified"] == "training reward"
    want, got = _true_groups(truth), _record_groups(rec)
    assert set(want) == set(got)
    n_true = sum(len(v) for v in want.values())
    assert len(rec.groups["step"]) == n_true  # each generated group once
    for key, groups in want.items():
        if len(groups) == 1:  # an unambiguous prompt: the group's rewards exactly
            np.testing.assert_allclose(got[key], groups, atol=1e-6)
        else:  # ambiguous: the pooled rewards are right, the split is not knowable
            np.testing.assert_allclose(sorted(sum(got[key], [])), sorted(sum(groups, [])), atol=1e-6)
    # verl's own logged mean of the training reward agrees, so no warning about it
    assert not any("critic/score/mean" in w for w in rec.meta["warnings"])


def test_dapo_dict_scorer_dump_score_is_the_correctness_score_not_the_training_reward():
    truth = _truth("dapo")
    rec = ingest(MATRIX / "dapo" / "run", "verl")
    assert "score + overlong_reward" in rec.meta["reward"]["definition"]
    # the scorer's own score, as recorded inside it
    scores = {int(s): [r["score"] for r in rows["scorer_returned"]] for s, rows in truth["steps"].items()}
    train = {int(s): rows["training_reward"] for s, rows in truth["steps"].items()}
    assert any(not np.allclose(scores[s], train[s]) for s in scores)  # the penalty bit somewhere
    by_score = ingest(MATRIX / "dapo" / "run", "verl", reward_key="score")
    assert by_score.meta["reward"]["classified"] == "correctness score"
    np.testing.assert_allclose(np.sort(by_score.groups["rewards"].ravel()), np.sort(sum(scores.values(), [])))
    np.testing.assert_allclose(np.sort(rec.groups["rewards"].ravel()), np.sort(sum(train.values(), [])), atol=1e-6)
    # both answers are offered
    alt = rec.meta["reward"]["alternatives"]
    assert set(alt) >= {"training reward (score + overlong_reward)", "correctness score (score)"}
    assert alt["correctness score (score)"]["frac_reward_zero_std"] == summarise(by_score)["frac_reward_zero_std"]


def test_dapo_float_scorer_and_tensor_text_in_old_dumps():
    """A number-returning scorer leaves the penalised reward in score; older trainers dumped "tensor(-0.2500)"."""
    text = (MATRIX / "dapo_float" / "run" / "rollouts" / "1.jsonl").read_text()
    assert '"tensor(' in text
    truth = _truth("dapo_float")
    rec = ingest(MATRIX / "dapo_float" / "run", "verl")
    assert rec.meta["reward"]["definition"].startswith("score (the scorer returned a number")
    by_acc = ingest(MATRIX / "dapo_float" / "run", "verl", reward_key="acc")
    acc = sorted(v for rows in truth["steps"].values() for v in rows["scorer_returned"])
    np.testing.assert_allclose(np.sort(by_acc.groups["rewards"].ravel()), acc)
    assert by_acc.meta["reward"]["classified"] == "correctness score"


def test_ambiguous_groups_and_validation_only_steps_are_said():
    truth = _truth("naive")
    rec = ingest(MATRIX / "naive" / "run", "verl")
    dup = [k for k, v in _true_groups(truth).items() if len(v) > 1]
    assert dup == [(2, "e4=")]
    assert rec.meta["source"]["ambiguous_groups"] == 2
    pooled = sum(_true_groups(truth)[dup[0]], [])
    assert rec.meta["source"]["uncertain_groups"] == (2 if max(pooled) > min(pooled) else 0)
    assert any("no group id" in n for n in rec.meta["notes"])
    # validation before training (step 0) and at steps 2, 4: step 0 has scalars only
    assert truth["validation_steps"] == [0, 2, 4]
    assert any("step 0 " in n and "validation only" in n for n in rec.meta["notes"])
    k0 = int(np.flatnonzero(rec.steps["step"] == 0)[0])
    assert np.isnan(rec.steps["frac_reward_zero_std"][k0])
    assert np.isfinite(rec.steps["scalar/val-core/arith/acc/mean@1"][k0])
    # every unambiguous group's outcome equals the truth
    want = [g for k, v in _true_groups(truth).items() if len(v) == 1 for g in v]
    got = [g for k, v in _record_groups(rec).items() if k not in dup for g in v]
    assert sorted(map(tuple, want)) == sorted(map(tuple, got))
    deg, _, _ = group_outcomes(np.array(want))
    assert deg.sum() == sum(max(g) == min(g) for g in got)


def test_metrics_of_another_run_are_named(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(MATRIX / "dapo" / "run", run)
    shutil.copy(MATRIX / "dapo_float" / "run" / "metrics.jsonl", run / "metrics.jsonl")
    rec = ingest(run, "verl")
    assert any("critic/score/mean differs" in w for w in rec.meta["warnings"])
