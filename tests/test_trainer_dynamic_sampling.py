"""DAPO dynamic sampling as verl does it: full batches of groups with reward spread, fresh prompts per
round, the surplus trimmed, the run ended (not a partial step) when the prompt set cannot fill a batch.

The verifier is replaced by scripted rewards so that which groups are mixed is known exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.record import read_record
from grpo_lab.train import loop
from grpo_lab.train.config import GRPOConfig
from grpo_lab.train.loop import State, train, update_pools

TINY = dict(n_prompts=24, prompts_per_step=4, steps=3, sft_steps=5, sft_batch_size=16, eval_every=5,
            eval_samples=2, n_layer=1, n_head=2, n_embd=16, dynamic_sampling=True)


def scripted(mixed_ids, all_pass_ids=()):
    """A reward function: prompts in ``mixed_ids`` get [1, 0, ..., 0], ``all_pass_ids`` all 1, others all 0."""
    def reward(problems, prompt_ids, completions, G):
        r = np.zeros((len(prompt_ids), G))
        for i, pid in enumerate(np.asarray(prompt_ids).tolist()):
            if pid in mixed_ids:
                r[i, 0] = 1.0
            elif pid in all_pass_ids:
                r[i] = 1.0
        return r
    return reward


def go(tmp_path, monkeypatch, reward, name="run", **kw):
    monkeypatch.setattr(loop, "reward", reward)
    return train(GRPOConfig(**{**TINY, **kw}).validate(), tmp_path / name, device="cpu", threads=1, sft_cache=None)


def test_every_step_trains_a_full_batch_and_amplification_is_drawn_over_kept(tmp_path, monkeypatch):
    mixed, passing = set(range(0, 24, 3)), set(range(1, 24, 3))  # 8 mixed, 8 all-pass, 8 all-fail prompts
    rec = go(tmp_path, monkeypatch, scripted(mixed, passing))
    g, st = rec.groups, rec.steps
    assert rec.meta["steps_completed"] == 3 and rec.meta["end_reason"] is None
    for s in range(3):
        at = g["step"] == s
        ids = g["prompt_id"][at]
        assert len(set(ids.tolist())) == len(ids)  # fresh prompts in every round of a step
        kept = g["kept"][at]
        assert kept.sum() == 4 and set(ids[kept].tolist()) <= mixed  # the full batch, mixed groups only
        # rounds stop as soon as the batch is full: the round before the last held fewer than 4 mixed groups
        rounds = [ids[i:i + 4] for i in range(0, len(ids), 4)]
        n_mixed = np.cumsum([len(set(r.tolist()) & mixed) for r in rounds])
        assert n_mixed[-1] >= 4 and (len(rounds) == 1 or n_mixed[-2] < 4)
        assert st["gen_batches"][s] == len(rounds) and st["ds/groups_drawn"][s] == len(ids)
        assert st["ds/groups_kept"][s] == 4
        assert st["ds/rollout_amplification"][s] == pytest.approx(len(ids) / 4)
        assert st["ds/dropped_all_pass"][s] == len(set(ids.tolist()) & passing)
        assert st["ds/dropped_all_fail"][s] == len(ids) - len(set(ids.tolist()) & (mixed | passing))
        assert st["ds/dropped_surplus"][s] == n_mixed[-1] - 4  # verl's trim of the last round
        assert st["ds/effective_group_rate"][s] == pytest.approx(n_mixed[-1] / len(ids))
        assert st["rollouts_kept"][s] == 16 and st["rollouts_generated"][s] == 4 * len(ids)


def test_a_set_that_cannot_fill_the_batch_ends_the_run_without_a_partial_step(tmp_path, monkeypatch):
    # 3 mixed prompts can never fill a batch of 4: step 0 draws all 24 prompts, then the run ends
    rec = go(tmp_path, monkeypatch, scripted({0, 1, 2}))
    assert rec.meta["steps_completed"] == 0 and rec.meta["complete"]
    assert "could not fill step 0's batch: 3 of 4" in rec.meta["end_reason"]
    assert len(rec.groups["step"]) == 0 and len(rec.steps.get("step", [])) == 0  # nothing trained, nothing recorded
    assert rec.evals["step"].tolist() == [0]


def test_max_num_gen_batches_caps_the_rounds_and_zero_means_no_cap(tmp_path, monkeypatch):
    # one mixed prompt per round of 4 (in expectation): two rounds cannot fill a batch of 4
    rec = go(tmp_path, monkeypatch, scripted(set(range(0, 24, 4))), name="capped", max_num_gen_batches=2)
    assert rec.meta["steps_completed"] == 0 and "max_num_gen_batches = 2 rounds" in rec.meta["end_reason"]
    rec = go(tmp_path, monkeypatch, scripted(set(range(0, 24, 4))), name="free", max_num_gen_batches=0, steps=2)
    assert rec.meta["steps_completed"] == 2 and rec.meta["end_reason"] is None
    assert np.all(rec.steps["ds/groups_kept"] == 4)


def test_cli_says_why_a_run_ended_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(loop, "reward", scripted({0}))
    code = main(["train", "--out", str(tmp_path / "r"), "--dynamic-sampling", "--n-prompts", "24", "--prompts-per-step",
                 "4", "--steps", "2", "--sft-steps", "5", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
                 "--eval-samples", "2", "--no-cache", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "run ended early" in err[0] and "1 of 4" in err[0]
    assert read_record(tmp_path / "r").meta["end_reason"]


def test_sign_with_dynamic_sampling_filters_on_reward_spread_too(tmp_path, monkeypatch):
    # under sign every group carries a gradient; DAPO's filter still drops unanimous groups
    rec = go(tmp_path, monkeypatch, scripted(set(range(0, 24, 2))), estimator="sign")
    g = rec.groups
    assert np.all(np.any(g["advantages"] != 0, axis=1))  # dropped groups had a gradient under sign
    mixed = g["rewards"].max(1) > g["rewards"].min(1)
    assert (~mixed).any() and not g["kept"][~mixed].any() and np.all(rec.steps["ds/groups_kept"] == 4)


def test_retirement_after_n_consecutive_all_pass_groups():
    cfg = GRPOConfig(**{**TINY, "retire_after": 2}).validate()
    st = State()
    ids = np.array([5, 6])
    update_pools(st, ids, [True, True], [False, False], cfg)
    assert st.retired == set()  # one all-pass group is not enough
    update_pools(st, ids, [True, False], [False, False], cfg)  # 6 breaks its streak
    assert st.retired == {5} and st.streak[6] == 0
    update_pools(st, np.array([6]), [True], [False], cfg)
    assert st.retired == {5}
    off = GRPOConfig(**TINY).validate()
    st = State()
    for _ in range(5):
        update_pools(st, ids, [True, True], [False, False], off)
    assert st.retired == set()  # no permanent retirement by default


def test_retired_prompts_are_never_drawn_again(tmp_path, monkeypatch):
    passing = set(range(12))
    rec = go(tmp_path, monkeypatch, scripted(set(range(12, 24)), passing), retire_after=2, steps=4)
    g = rec.groups
    seen = {}
    for s, pid in zip(g["step"].tolist(), g["prompt_id"].tolist()):
        seen.setdefault(pid, []).append(s)
    for pid in passing:  # drawn at most twice (two all-pass groups), never after the second
        assert len(seen.get(pid, [])) <= 2


@pytest.mark.parametrize("argv, needle", [
    (["--prompts-per-step", "30", "--n-prompts", "24"], "cannot be filled from 24 prompts"),
    (["--dynamic-sampling", "--retire-after", "1"], "N >= 2"),
    (["--retire-after", "3"], "curriculum options of dynamic sampling"),
    (["--start", "strong"], "unknown start regime 'strong'"),
    (["--max-num-gen-batches", "-1"], "max_num_gen_batches"),
])
def test_impossible_settings_refused_in_one_line(tmp_path, capsys, argv, needle):
    code = main(["train", "--out", str(tmp_path / "r"), *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "r").exists()


def test_compare_shows_trained_group_shares_for_dynamic_sampling(tmp_path, monkeypatch, capsys):
    import json

    rec = go(tmp_path, monkeypatch, scripted(set(range(0, 24, 3)), set(range(1, 24, 3))))
    assert rec.meta["summary"]["frac_reward_zero_std"] > 0  # the drawn groups include unanimous ones
    assert main(["compare", str(tmp_path / "run"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["zero_std"] == row["all_pass"] == row["all_fail"] == 0.0  # every trained group was mixed
