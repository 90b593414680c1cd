"""DAPO dynamic sampling in a real GRPOTrainer (tiny random Llama on CPU): full batches of groups with reward
spread, every drawn group recorded with the right ``kept`` flag, and never a partial batch."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.trl_tiny import TARGETS, make_trainer

from grpo_lab.sims.advantages import sign
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record
from grpo_lab.trl_recorder import BatchNotFilled, GroupRecorder, dynamic_sampling_trainer, fixed_reference_trainer

G = 4
N_PROMPTS = 16
PROMPTS = [f"{TARGETS[i % len(TARGETS)]}{i}=" for i in range(N_PROMPTS)]


def _expected_keep(rewards, target):
    """Independent: walk the drawn groups in order, keep one with a spread while fewer than target are kept."""
    keep, n = [], 0
    for row in rewards:
        vals = [v for v in row if not np.isnan(v)]
        ok = bool(vals) and max(vals) > min(vals) and n < target
        n += ok
        keep.append(ok)
    return np.array(keep)


def test_batches_are_full_of_groups_with_spread_and_every_draw_is_recorded(tmp_path):
    truth, merged = [], []
    cls = dynamic_sampling_trainer(base=fixed_reference_trainer("sign"))
    trainer = make_trainer(tmp_path, truth, trainer_cls=cls, funcs=1, n_prompts=N_PROMPTS, max_steps=3,
                           per_device_train_batch_size=8, loss_type="dr_grpo")
    GroupRecorder(tmp_path / "rec").attach(trainer)
    inner = trainer._generate_and_score_completions

    def capture(inputs):
        out = inner(inputs)
        if trainer.model.training:
            merged.append({k: (v.clone() if hasattr(v, "clone") else v) for k, v in out.items()})
        return out

    trainer._generate_and_score_completions = capture
    trainer.train()
    rec = read_record(tmp_path / "rec")
    g, target = rec.groups, 8 // G

    # the record holds every group the reward function scored, in order, with its prompt
    scored = np.concatenate([np.asarray(vals, float) for _, _, vals in truth]).reshape(-1, G)
    prompts = [p for _, ps, _ in truth for p in ps]
    assert np.array_equal(g["rewards"], scored)
    assert np.array_equal(g["prompt_id"], [PROMPTS.index(p) for p in prompts[::G]])
    assert len(np.unique(g["generation"])) == len(merged) == 3
    for k, out in enumerate(merged):
        sel = g["generation"] == k
        r, kept = g["rewards"][sel], g["kept"][sel]
        # the keep rule, recomputed; the batch is full; no prompt drawn twice in one step
        assert np.array_equal(kept, _expected_keep(r, target))
        assert kept.sum() == target
        assert len(set(g["prompt_id"][sel])) == sel.sum()
        # what TRL trains on: exactly the kept groups' rows, in draw order, with the core's sign advantages
        assert out["completion_ids"].shape[0] == out["prompt_ids"].shape[0] == target * G
        assert np.allclose(out["advantages"].numpy(), sign(r[kept]).ravel(), atol=1e-6)
        assert np.allclose(out["advantages"].numpy(), g["advantages"][sel][kept].ravel(), atol=1e-6)
        lengths = out["completion_mask"].sum(dim=1).numpy()
        assert np.array_equal(lengths, g["lengths"][sel][kept].ravel())
        assert int(out["num_items_in_batch"]) == lengths.sum()
        assert (out["prompt_mask"][:, -1] == 1).all()  # prompts stay left-padded
    # per step: rollouts generated (all drawn) and kept; the logged dynamic-sampling figures
    assert list(rec.steps["rollouts_generated"]) == [int((g["step"] == s).sum()) * G for s in (1, 2, 3)]
    assert list(rec.steps["rollouts_kept"]) == [target * G] * 3
    logs = [e for e in trainer.state.log_history if "lab/ds/groups_drawn" in e]
    assert [e["lab/ds/groups_drawn"] for e in logs] == [float((g["step"] == s).sum()) for s in (1, 2, 3)]
    assert all(e["lab/ds/groups_kept"] == target for e in logs)
    assert rec.meta["config"]["dynamic_sampling"] is True
    assert (~g["kept"]).any(), "the seed should give at least one dropped group"


def _always(value):
    def constant(prompts, completions, **kwargs):
        return [value] * len(completions)

    constant.__name__ = "correct"
    return constant


@pytest.mark.parametrize("cap, message", [(3, "after max_num_gen_batches = 3 rounds"),
                                          (0, f"after drawing all {N_PROMPTS} prompts")])
def test_never_a_partial_batch(tmp_path, cap, message):
    import torch

    cls = dynamic_sampling_trainer(max_num_gen_batches=cap)
    trainer = make_trainer(tmp_path, [], trainer_cls=cls, funcs=1, n_prompts=N_PROMPTS, max_steps=2,
                           per_device_train_batch_size=8)
    trainer.reward_funcs[0] = _always(1.0)  # every group all-pass: nothing can be kept
    before = [p.detach().clone() for p in trainer.model.parameters()]
    with pytest.raises(BatchNotFilled, match=message):
        trainer.train()
    assert trainer.state.global_step == 0
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def test_batch_wide_advantages_are_refused(tmp_path):
    with pytest.raises(InputError, match="per-group advantages"):
        make_trainer(tmp_path, [], trainer_cls=dynamic_sampling_trainer(), funcs=1, scale_rewards="batch")


def test_steps_per_generation_old_logps_and_missing_rewards(tmp_path):
    """Two weighted reward functions with None rewards, steps_per_generation = 2 (so TRL computes
    old_per_token_logps, merged like the other completion tensors): full batches, the keep rule, the counts."""
    truth, merged = [], []
    cls = dynamic_sampling_trainer(max_num_gen_batches=6)
    trainer = make_trainer(tmp_path, truth, trainer_cls=cls, n_prompts=N_PROMPTS, max_steps=4,
                           reward_weights=[1.0, 0.5], per_device_train_batch_size=8, steps_per_generation=2,
                           none_every=5)
    GroupRecorder(tmp_path / "rec").attach(trainer)
    inner = trainer._generate_and_score_completions

    def capture(inputs):
        out = inner(inputs)
        merged.append({k: v for k, v in out.items()})
        return out

    trainer._generate_and_score_completions = capture
    trainer.train()
    rec = read_record(tmp_path / "rec")
    g, target = rec.groups, 16 // G
    assert np.isnan(g["rewards_per_func"]).any()
    for k, out in enumerate(merged):
        sel = g["generation"] == k
        assert np.array_equal(g["kept"][sel], _expected_keep(g["rewards"][sel], target))
        assert out["old_per_token_logps"].shape == out["completion_ids"].shape == out["completion_mask"].shape
        assert out["completion_ids"].shape[0] == target * G
    assert list(rec.steps["rollouts_kept"]) == [target * G, 0, target * G, 0]  # one generation per two steps
    assert rec.meta["recording"]["rollouts"] == len(g["step"]) * G == sum(len(v) for n, _, v in truth if n == "short")
