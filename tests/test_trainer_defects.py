"""Defects found while measuring, each pinned by a test that failed on the code before the fix:
clip_frac counted clips that do not bind; --steps 0 crashed the summary; a completion longer than
the model's block size raised IndexError; the warm start depended on --seed and its cache key
missed the thread count."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grpo_lab.cli import main
from grpo_lab.sims.errors import InputError
from grpo_lab.train import task
from grpo_lab.train.config import REGIMES, GRPOConfig
from grpo_lab.train.loop import _sft_key, train
from grpo_lab.train.loss import grpo_loss
from grpo_lab.train.model import TinyGPT

TINY = dict(n_prompts=24, prompts_per_step=4, steps=2, sft_steps=10, sft_batch_size=16, eval_every=2,
            eval_samples=2, n_layer=1, n_head=2, n_embd=16)


def test_clip_frac_counts_only_clips_that_bind():
    # one token per row; ratio and advantage chosen so each case of the min is hit
    ratios = [1.5, 1.5, 0.5, 0.5, 1.1, 1.25]  # epsilon 0.2, epsilon_high 0.28: range [0.8, 1.28]
    adv = [1.0, -1.0, -1.0, 1.0, 1.0, -1.0]
    # binds: ratio above the range with A > 0, below it with A < 0; the other two out-of-range rows keep the
    # unclipped term (min picks it) and their gradient, as TRL's clip_ratio/region_mean counts them
    binds = [True, False, True, False, False, False]
    old = torch.zeros(6, 1)
    logp = torch.log(torch.tensor(ratios)).unsqueeze(1).requires_grad_(True)
    loss, stats = grpo_loss(logp, old, torch.tensor(adv), torch.ones(6, 1, dtype=torch.bool), loss_type="dapo",
                            epsilon=0.2, epsilon_high=0.28)
    assert stats["clip_frac"] == pytest.approx(np.mean(binds))
    loss.backward()
    zero_grad = (logp.grad.squeeze(1) == 0).tolist()
    assert zero_grad == binds  # a binding clip is exactly where the gradient is cut


def test_zero_steps_prints_a_summary(tmp_path, capsys):
    code = main(["train", "--out", str(tmp_path / "r"), "--steps", "0", "--n-prompts", "24", "--prompts-per-step", "4",
                 "--sft-steps", "5", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--eval-samples", "2",
                 "--no-cache", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "0 steps, 0 groups, frac_reward_zero_std -" in out


def test_completion_longer_than_the_block_size_is_a_clear_error(tmp_path, capsys):
    room = task.BLOCK_SIZE - task.PROMPT_LEN
    with pytest.raises(InputError, match="exceeds what the model's block size allows"):
        GRPOConfig(max_completion_length=room + 1).validate()
    assert GRPOConfig(max_completion_length=room).validate()
    code = main(["train", "--out", str(tmp_path / "r"), "--max-completion-length", str(room + 1)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "block size" in err[0]
    model = TinyGPT(len(task.VOCAB), task.BLOCK_SIZE, 1, 2, 16)
    with pytest.raises(ValueError, match="block size"):
        model(torch.zeros(1, task.BLOCK_SIZE + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="block size"):
        _, cache = model.decode(torch.zeros(1, task.BLOCK_SIZE, dtype=torch.long))
        model.decode(torch.zeros(1, 1, dtype=torch.long), cache)


def test_sft_seed_gives_every_seed_the_same_start(tmp_path):
    runs = {seed: train(GRPOConfig(**TINY, seed=seed, sft_seed=7).validate(), tmp_path / f"s{seed}", device="cpu",
                        threads=1, sft_cache=None) for seed in (1, 2)}
    own = train(GRPOConfig(**TINY, seed=1).validate(), tmp_path / "own", device="cpu", threads=1, sft_cache=None)
    np.testing.assert_array_equal(runs[1].evals["pass_rate"][0], runs[2].evals["pass_rate"][0])
    assert not np.array_equal(runs[1].groups["prompt_id"], runs[2].groups["prompt_id"])  # the RL draws differ
    start = {name: torch.load(tmp_path / name / "checkpoint.pt", weights_only=True)["ref"] for name in ("s1", "s2", "own")}
    for k, v in start["s1"].items():  # the reference policy is the start: equal weights, whatever the seed
        torch.testing.assert_close(start["s2"][k], v, rtol=0, atol=0)
    assert any(not torch.equal(start["own"][k], v) for k, v in start["s1"].items())  # sft_seed None -> seed 1
    assert runs[1].meta["start"] == {"regime": "broad", "sft_seed": 7, "warmstart": "computed"}  # a tiny model: none shipped
    assert own.meta["start"]["sft_seed"] == 1


def test_warm_start_cache_key_holds_what_the_start_depends_on():
    cfg = GRPOConfig(**TINY, seed=3, sft_seed=5).validate()
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = _sft_key(cfg, torch.device("cpu"))
        assert one == _sft_key(GRPOConfig(**TINY, seed=4, sft_seed=5).validate(), torch.device("cpu"))  # RL seed: no
        assert one != _sft_key(GRPOConfig(**TINY, seed=3, sft_seed=6).validate(), torch.device("cpu"))
        assert one != _sft_key(GRPOConfig(**{**TINY, "sft_steps": 11}, seed=3, sft_seed=5).validate(),
                               torch.device("cpu"))
        torch.set_num_threads(2)
        assert one != _sft_key(cfg, torch.device("cpu"))  # float reductions depend on the thread count
    finally:
        torch.set_num_threads(threads)


def test_cached_start_equals_a_fresh_one(tmp_path):
    cfg = GRPOConfig(**TINY).validate()
    fresh = train(cfg, tmp_path / "fresh", device="cpu", threads=1, sft_cache=None)
    first = train(cfg, tmp_path / "first", device="cpu", threads=1, sft_cache=tmp_path / "cache")
    again = train(cfg, tmp_path / "again", device="cpu", threads=1, sft_cache=tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("sft-*.pt"))) == 1
    for rec in (first, again):
        np.testing.assert_array_equal(rec.groups["rewards"], fresh.groups["rewards"])
        np.testing.assert_array_equal(rec.evals["pass_rate"], fresh.evals["pass_rate"])


def test_for_start_sets_the_regime_and_explicit_options_win():
    weak = GRPOConfig.for_start("weak").validate()
    assert (weak.sft_steps, weak.sft_digit_weights) == (REGIMES["weak"]["sft_steps"], REGIMES["weak"]["sft_digit_weights"])
    assert GRPOConfig.for_start("weak", sft_steps=7).sft_steps == 7
    with pytest.raises(InputError, match="unknown start regime"):
        GRPOConfig.for_start("nope")
    assert math.isclose(sum(GRPOConfig().sft_digit_weights), sum(REGIMES["broad"]["sft_digit_weights"]))
