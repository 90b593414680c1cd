"""The GRPO trainer: shared estimators, exact zero gradient of degenerate groups, records, resume, bad input."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import torch

from grpo_lab.cli import main
from grpo_lab.sims.advantages import advantages
from grpo_lab.sims.record import read_record
from grpo_lab.train import task
from grpo_lab.train.config import GRPOConfig
from grpo_lab.train.loop import train
from grpo_lab.train.loss import grpo_loss
from grpo_lab.train.model import TinyGPT
from grpo_lab.train.rollout import sample, token_logprobs
from grpo_lab.testing.inspect_figures import check_inspect

TINY = dict(n_prompts=24, prompts_per_step=4, steps=4, sft_steps=10, sft_batch_size=16, eval_every=2,
            eval_samples=2, n_layer=1, n_head=2, n_embd=16)


def tiny(**kw) -> GRPOConfig:
    return GRPOConfig(**{**TINY, **kw}).validate()


def run(tmp_path, name="run", **kw):
    return train(tiny(**kw), tmp_path / name, device="cpu", threads=1, sft_cache=None)


def test_verifier_and_prompt_set():
    p = task.Problem(57, 68)
    assert p.answer == "521."  # 125, least significant digit first
    assert task.reward(p, task.encode("521.")) == 1.0
    assert task.reward(p, task.encode("521.99")) == 1.0  # after the end token nothing counts
    assert task.reward(p, task.encode("5219.")) == 0.0 and task.reward(p, task.encode("521")) == 0.0
    comps = np.array([task.encode("521..."), task.encode("52...."), task.encode("5210..")])
    np.testing.assert_array_equal(task.rewards([p, p, p], comps), [1.0, 0.0, 0.0])
    ps = task.prompt_set()
    assert len(ps) == 600 and len({(q.a, q.b) for q in ps}) == 600
    assert ps == task.prompt_set()
    widths = {len(str(q.a)) for q in ps} | {len(str(q.b)) for q in ps}
    assert widths == {1, 2, 3, 4}
    assert all(len(task.encode(q.text)) == task.PROMPT_LEN for q in ps)


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_degenerate_group_zero_gradient_under_dr_grpo_not_under_sign(loss_type):
    torch.manual_seed(0)
    model = TinyGPT(len(task.VOCAB), task.PROMPT_LEN + task.MAX_ANSWER_LEN, 1, 2, 16)
    probs = task.prompt_set()[:1]
    x = torch.tensor([task.encode(probs[0].text)] * 4)
    gen = torch.Generator().manual_seed(1)
    y, mask, _ = sample(model, x, task.MAX_ANSWER_LEN, 1.0, gen)
    r = task.rewards(probs * 4, y.numpy())[None, :]
    assert r.max() == r.min() == 0.0  # an untrained model fails: a degenerate all-fail group
    for name, zero in (("dr_grpo", True), ("grpo", True), ("sign", False), ("tasa", False)):
        model.zero_grad(set_to_none=False)
        adv = torch.as_tensor(advantages(r, name).reshape(-1), dtype=torch.float32)
        logp = token_logprobs(model, x, y, 1.0)
        loss, _ = grpo_loss(logp, logp.detach(), adv, mask, loss_type=loss_type, epsilon=0.2, epsilon_high=0.28,
                            beta=0.0, max_completion_length=task.MAX_ANSWER_LEN)
        loss.backward()
        total = sum(float(p.grad.abs().sum()) for p in model.parameters())
        assert (total == 0.0) == zero, (name, total)


def test_cached_decoding_equals_full_forward_and_samples_match():
    torch.manual_seed(3)
    model = TinyGPT(len(task.VOCAB), task.PROMPT_LEN + task.MAX_ANSWER_LEN, 2, 4, 32).eval()
    ids = torch.randint(0, len(task.VOCAB), (5, task.PROMPT_LEN + task.MAX_ANSWER_LEN))
    with torch.no_grad():
        full = model(ids)
        logits, cache = model.decode(ids[:, :task.PROMPT_LEN])
        parts = [logits]
        for t in range(task.PROMPT_LEN, ids.shape[1]):
            logits, cache = model.decode(ids[:, t:t + 1], cache)
            parts.append(logits)
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    # sampling with the cache draws what re-running the whole prefix each token would draw
    x = ids[:, :task.PROMPT_LEN]
    y, mask, lengths = sample(model, x, task.MAX_ANSWER_LEN, 1.0, torch.Generator().manual_seed(7))
    gen, seq = torch.Generator().manual_seed(7), x
    with torch.no_grad():
        for _ in range(task.MAX_ANSWER_LEN):
            p = torch.softmax(model(seq)[:, -1, :], -1)
            seq = torch.cat([seq, torch.multinomial(p, 1, generator=gen)], 1)
    torch.testing.assert_close(y, seq[:, task.PROMPT_LEN:], atol=0, rtol=0)
    first_end = [(list(r) + [task.EOS]).index(task.EOS) for r in y.tolist()]
    assert lengths.tolist() == [min(e + 1, task.MAX_ANSWER_LEN) for e in first_end]


@pytest.mark.parametrize("loss_type", ["grpo", "dr_grpo", "dapo"])
def test_update_leaving_out_zero_advantage_rows_has_the_full_batch_gradient(loss_type):
    import copy

    from grpo_lab.train import loop

    torch.manual_seed(1)
    cfg = tiny(loss_type=loss_type, estimator="dr_grpo")
    model = TinyGPT(len(task.VOCAB), task.PROMPT_LEN + task.MAX_ANSWER_LEN, 1, 2, 16)
    probs = task.prompt_set()[:3]
    tokens = torch.tensor([task.encode(p.text) for p in probs])
    ids = np.arange(3)
    y, mask, logp = loop.rollout(model, tokens, ids, cfg, torch.Generator().manual_seed(2))
    np.testing.assert_allclose(logp[mask].numpy(), token_logprobs(model, tokens.repeat_interleave(4, 0), y, 1.0)
                               .detach()[mask].numpy(), rtol=1e-5, atol=1e-5)
    r = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0]])  # set, not verified
    batch = loop.Batch(ids, y, mask, r, advantages(r, "dr_grpo"), mask.sum(1).numpy().reshape(3, 4), logp)
    fast = copy.deepcopy(model)
    stats = loop.update(fast, model, torch.optim.SGD(fast.parameters(), lr=0.0), tokens, batch, np.ones(3, bool), cfg)
    # the whole batch through grpo_loss, every row included
    x = tokens.repeat_interleave(4, 0)
    lp = token_logprobs(model, x, y, 1.0)
    loss, _ = grpo_loss(lp, lp.detach(), torch.as_tensor(batch.advantages.reshape(-1), dtype=torch.float32), mask,
                        loss_type=loss_type, epsilon=0.2, epsilon_high=0.28, max_completion_length=task.MAX_ANSWER_LEN)
    loss.backward()
    assert stats["loss"] == pytest.approx(float(loss.detach()), abs=1e-7)
    for (name, a), b in zip(fast.named_parameters(), model.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7, msg=name)
    assert stats["kl"] == pytest.approx(0.0, abs=1e-6)  # the reference is the policy itself here


def test_kl_term_moves_a_degenerate_group_only_when_beta_positive():
    torch.manual_seed(0)
    model = TinyGPT(len(task.VOCAB), 16, 1, 2, 16)
    x = torch.tensor([task.encode(task.prompt_set()[0].text)] * 4)
    y, mask, _ = sample(model, x, task.MAX_ANSWER_LEN, 1.0, torch.Generator().manual_seed(0))
    logp = token_logprobs(model, x, y, 1.0)
    ref = (logp + 0.3).detach()  # a reference that differs from the policy
    loss, stats = grpo_loss(logp, logp.detach(), torch.zeros(4), mask, loss_type="dapo", epsilon=0.2,
                            epsilon_high=0.2, beta=0.1, ref_logp=ref)
    lp = logp.detach()
    k3 = (torch.exp(ref - lp) - (ref - lp) - 1)[mask].mean()
    assert stats["kl"] == pytest.approx(float(k3), rel=1e-5) and float(loss.detach()) == pytest.approx(0.1 * float(k3), rel=1e-5)


def test_few_step_run_writes_a_record_inspect_agrees_with(tmp_path, capsys):
    rec = run(tmp_path, estimator="sign")
    G, cfg = 4, rec.meta["config"]
    got = check_inspect(tmp_path / "run", capsys)
    assert got["steps"] == 4 and got["groups"] == 16 and rec.groups["kept"].all()
    # the estimator is the core's: recorded advantages recomputed from recorded rewards
    np.testing.assert_array_equal(rec.groups["advantages"], advantages(rec.groups["rewards"], "sign"))
    assert rec.evals["step"].tolist() == [0, 2, 4] and rec.evals["pass_rate"].shape == (3, 24)
    # per-step metrics agree with the groups of that step
    for s in range(4):
        r = rec.groups["rewards"][rec.groups["step"] == s]
        assert rec.steps["frac_reward_zero_std"][s] == pytest.approx(np.mean(r.max(1) == r.min(1)))
        assert rec.steps["reward_mean"][s] == pytest.approx(r.mean())
        assert rec.steps["rollouts_generated"][s] == r.size == rec.steps["rollouts_kept"][s]
    assert np.all((rec.groups["lengths"] >= 1) & (rec.groups["lengths"] <= cfg["max_completion_length"]))
    assert rec.meta["complete"] and rec.meta["source"]["kind"] == "grpo-lab-train"
    assert len(rec.meta["prompt_labels"]) == 24 and (tmp_path / "run" / "checkpoint.pt").is_file()


def test_dynamic_sampling_trains_full_batches_of_mixed_groups(tmp_path):
    # a warm start long enough that some of the 24 prompts give mixed groups
    rec = run(tmp_path, estimator="dr_grpo", dynamic_sampling=True, sft_steps=300, sft_batch_size=128, n_layer=2,
              n_head=4, n_embd=64)
    g, st = rec.groups, rec.steps
    r, kept = g["rewards"], g["kept"]
    mixed = r.max(1) > r.min(1)
    assert np.all(mixed[kept])
    done = rec.meta["steps_completed"]
    assert done == 4 or rec.meta["end_reason"]
    for s in range(done):
        at = g["step"] == s
        assert kept[at].sum() == 4  # never a partial batch
        assert rec.steps["gen_batches"][s] == at.sum() // 4 and len(set(g["prompt_id"][at])) == at.sum()  # fresh prompts
        assert st["rollouts_kept"][s] == 4 * 4 and st["ds/groups_drawn"][s] == at.sum()
        assert st["ds/rollout_amplification"][s] == pytest.approx(at.sum() / 4)
        same = ~mixed[at]
        assert st["ds/effective_group_rate"][s] == pytest.approx(1 - same.mean())
        assert st["ds/dropped_all_pass"][s] == np.sum(same & (r[at][:, 0] == 1))
        assert st["ds/dropped_all_fail"][s] == np.sum(same & (r[at][:, 0] == 0))
        assert st["ds/dropped_surplus"][s] == np.sum(mixed[at] & ~kept[at])
    assert rec.meta["summary"]["rollouts_per_kept_group"] == pytest.approx(r.size / kept.sum())


def test_resume_after_interrupt_equals_uninterrupted_run(tmp_path):
    full = run(tmp_path, "full", steps=5)

    def stop(run_, metrics):
        if run_.step == 3:  # a real Ctrl-C between saves (the record is written every 10 steps)
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN when started in the background
    with pytest.raises(KeyboardInterrupt):  # the run's own handler turns the SIGINT into a stop either way
        train(tiny(steps=5), tmp_path / "cut", device="cpu", threads=1, sft_cache=None, on_step=stop)
    partial = read_record(tmp_path / "cut")  # valid record of the completed steps
    assert partial.meta["steps_completed"] == 3 and not partial.meta["complete"]
    assert sorted(set(partial.groups["step"].tolist())) == [0, 1, 2]
    assert signal.getsignal(signal.SIGINT) is before  # the handler in place before the call is given back
    resumed = train(None, tmp_path / "cut", resume=True, device="cpu", threads=1, sft_cache=None)
    for k in ("step", "prompt_id", "rewards", "advantages", "lengths", "kept"):
        np.testing.assert_array_equal(resumed.groups[k], full.groups[k], err_msg=k)
    np.testing.assert_array_equal(resumed.evals["step"], full.evals["step"])
    np.testing.assert_array_equal(resumed.evals["pass_rate"], full.evals["pass_rate"])
    np.testing.assert_array_equal(resumed.steps["reward_mean"], full.steps["reward_mean"])
    assert resumed.meta["complete"] and resumed.meta["steps_completed"] == 5
    # CPU time is kept like the wall time: the resumed run's includes the interrupted session's
    assert 0 < partial.meta["cpu_time_s"] < resumed.meta["cpu_time_s"] and full.meta["cpu_time_s"] > 0


def test_crash_inside_a_step_keeps_the_last_periodic_save(tmp_path, monkeypatch):
    from grpo_lab.train import loop

    full = run(tmp_path, "full", steps=5)
    real = loop.Run.train_step

    def crash_at_3(self):
        if self.step == 3:
            real(self)  # the model is updated, then the step dies before it is recorded
            raise RuntimeError("boom")
        return real(self)

    monkeypatch.setattr(loop.Run, "train_step", crash_at_3)
    with pytest.raises(RuntimeError):
        train(tiny(steps=5), tmp_path / "cut", device="cpu", threads=1, sft_cache=None, save_every=2)
    partial = read_record(tmp_path / "cut")
    assert partial.meta["steps_completed"] == 2 and sorted(set(partial.groups["step"].tolist())) == [0, 1]
    monkeypatch.setattr(loop.Run, "train_step", real)
    resumed = train(None, tmp_path / "cut", resume=True, device="cpu", threads=1, sft_cache=None, save_every=2)
    for k in ("prompt_id", "rewards", "advantages"):
        np.testing.assert_array_equal(resumed.groups[k], full.groups[k], err_msg=k)
    np.testing.assert_array_equal(resumed.evals["pass_rate"], full.evals["pass_rate"])


def test_clipping_warmup_and_adam_options_reach_the_optimizer(tmp_path):
    rec = run(tmp_path, steps=4, learning_rate=1e-3, warmup_steps=4, max_grad_norm=1e-3, adam_beta2=0.95)
    np.testing.assert_allclose(rec.steps["learning_rate"], 1e-3 * np.arange(1, 5) / 4)
    assert np.all(np.isfinite(rec.steps["grad_norm"]) | (rec.steps["rollouts_kept"] == 0))
    with pytest.raises(ValueError, match="adam_beta2"):
        tiny(adam_beta2=1.0)
    with pytest.raises(ValueError, match="max_grad_norm"):
        tiny(max_grad_norm=-1.0)


def _cli(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err.strip().splitlines()


@pytest.mark.parametrize("argv, needle", [
    (["--estimator", "ppo"], "unknown estimator"),
    (["--num-generations", "1"], "num_generations"),
    (["--loss-type", "sum"], "loss_type"),
    (["--temperature", "0"], "temperature"),
])
def test_bad_train_options_one_line_exit_2(tmp_path, capsys, argv, needle):
    code, lines = _cli(capsys, "train", "--out", str(tmp_path / "r"), *argv)
    assert code == 2 and len(lines) == 1 and needle in lines[0]
    assert not (tmp_path / "r").exists()


def test_unwritable_or_existing_out_is_refused_untouched(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    code, lines = _cli(capsys, "train", "--out", str(blocker / "run"), "--steps", "1")
    assert code == 2 and len(lines) == 1 and "not writable" in lines[0]
    code, lines = _cli(capsys, "train", "--out", str(blocker), "--steps", "1")
    assert code == 2 and len(lines) == 1 and "already exists" in lines[0]
    assert blocker.read_text() == "keep me"
    code, lines = _cli(capsys, "train", "--out", str(tmp_path / "none"), "--resume")
    assert code == 2 and len(lines) == 1 and "cannot resume" in lines[0]


def test_resume_refuses_changed_config_and_tampered_record(tmp_path, capsys):
    run(tmp_path, steps=2)
    before = (tmp_path / "run" / "run.json").read_text()
    code, lines = _cli(capsys, "train", "--out", str(tmp_path / "run"), "--resume", "--estimator", "sign")
    assert code == 2 and len(lines) == 1 and "only --steps" in lines[0]
    f = next((tmp_path / "run").glob("groups-*.npz"))
    f.write_bytes(f.read_bytes()[:-10])
    code, lines = _cli(capsys, "train", "--out", str(tmp_path / "run"), "--resume", "--steps", "3")
    assert code == 2 and len(lines) == 1 and "checksum" in lines[0]
    assert (tmp_path / "run" / "run.json").read_text() == before


def test_missing_torch_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    code, lines = _cli(capsys, "train", "--out", str(tmp_path / "r"), "--steps", "1")
    assert code == 2 and len(lines) == 1 and "pip install 'grpo-lab[train]'" in lines[0]


def test_resume_gives_back_an_ignored_sigint(tmp_path):
    # background jobs and some CI runners start the suite with SIGINT ignored
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        test_resume_after_interrupt_equals_uninterrupted_run(tmp_path)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
