"""The TRL integration inside a real GRPOTrainer (tiny random Llama on CPU): the record against the
rewards the reward functions actually returned, under TRL's batching settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_lab.testing.trl_tiny import TARGETS, make_trainer

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record
from grpo_lab.trl_recorder import GroupRecorder

G = 4
WEIGHTS = [1.0, 0.5]


def _truth_batches(truth, n_funcs):
    """Ground truth per generation batch: prompts and a rows x functions array (None -> NaN)."""
    out = []
    for i in range(0, len(truth), n_funcs):
        calls = truth[i:i + n_funcs]
        assert [c[0] for c in calls] == ["correct", "short"][:n_funcs]
        vals = np.array([[np.nan if v is None else v for v in c[2]] for c in calls]).T
        out.append((calls[0][1], vals))
    return out


def _combined(vals, weights):
    """Independent: weighted sum of the rewards that are present; NaN when none is."""
    rows = []
    for row in vals:
        present = [w * v for w, v in zip(weights, row) if not math.isnan(v)]
        rows.append(sum(present) if present else math.nan)
    return np.array(rows)


def _expected_steps(k, spg, iters, ga, max_steps):
    """Optimizer steps (1-based) that train on generation batch k: its micro-steps [k*spg*iters, (k+1)*spg*iters)."""
    micro = np.arange(k * spg * iters, (k + 1) * spg * iters)
    steps = micro // ga + 1
    steps = steps[steps <= max_steps]
    return int(steps.min()), int(steps.max())


def _run(tmp_path, n_funcs=2, weights=WEIGHTS, none_every=0, tags=False, **cfg):
    truth = []
    overrides = dict(cfg)
    if n_funcs == 2:
        overrides["reward_weights"] = weights
    trainer = make_trainer(tmp_path, truth, tags=tags, none_every=none_every, funcs=n_funcs, **overrides)
    GroupRecorder(tmp_path / "rec").attach(trainer)
    trainer.train()
    return trainer, truth, read_record(tmp_path / "rec")


def _check(trainer, truth, rec, n_funcs=2, weights=WEIGHTS):
    args = trainer.args
    batches = _truth_batches(truth, n_funcs)
    g = rec.groups
    prompts = [f"{TARGETS[i % len(TARGETS)]}{i}=" for i in range(8)]
    # every generation batch exactly once, in order
    assert len(batches) == len(np.unique(g["generation"]))
    assert np.array_equal(g["generation"], np.repeat(np.arange(len(batches)), args.generation_batch_size // G))
    rpf = np.concatenate([v for _, v in batches]).reshape(-1, G, n_funcs)
    assert np.array_equal(np.isnan(g["rewards_per_func"]), np.isnan(rpf))
    assert np.allclose(np.nan_to_num(g["rewards_per_func"]), np.nan_to_num(rpf))
    combined = np.concatenate([_combined(v, weights[:n_funcs]) for _, v in batches]).reshape(-1, G)
    assert np.array_equal(np.isnan(g["rewards"]), np.isnan(combined))
    assert np.allclose(np.nan_to_num(g["rewards"]), np.nan_to_num(combined))
    # prompt ids: the dataset row of each group's prompt, the same for its G rows
    flat = [p for ps, _ in batches for p in ps]
    ids = np.array([prompts.index(p) for p in flat]).reshape(-1, G)
    assert np.all(ids == ids[:, :1])
    assert np.array_equal(g["prompt_id"], ids[:, 0])
    # optimizer steps that trained on each group
    for k in range(len(batches)):
        first, last = _expected_steps(k, args.steps_per_generation, args.num_iterations,
                                      args.gradient_accumulation_steps, args.max_steps)
        sel = g["generation"] == k
        assert set(g["step"][sel]) == {first} and set(g["last_step"][sel]) == {last}
    # the steps table: one row per optimizer step, rollouts counted once
    assert np.array_equal(rec.steps["step"], np.arange(1, args.max_steps + 1))
    assert rec.steps["rollouts_generated"].sum() == len(flat)
    assert rec.meta["complete"] and rec.meta["steps_completed"] == args.max_steps
    return batches, combined


def _check_logs(trainer, rec, combined):
    """Each log window's lab/ figures = the mean over the generation batches first trained in it."""
    g = rec.groups
    prev = 0
    for entry in trainer.state.log_history:
        if "loss" not in entry:
            continue
        s = entry["step"]
        gens = np.unique(g["generation"][(g["step"] > prev) & (g["step"] <= s)])
        prev = s
        if not len(gens):
            assert "lab/effective_group_rate" not in entry
            continue
        eff, fail, amax = [], [], []
        for k in gens:
            r = combined[g["generation"] == k]
            spread = np.nanmax(r, axis=1) - np.nanmin(r, axis=1)
            eff.append(np.mean(spread > 0))
            fail.append(np.mean((spread == 0) & (np.nanmean(r, axis=1) <= 0.5)))
            amax.append(np.max(np.abs(g["advantages"][g["generation"] == k])))
        assert entry["lab/effective_group_rate"] == pytest.approx(np.mean(eff))
        assert entry["lab/frac_all_fail"] == pytest.approx(np.mean(fail))
        assert entry["lab/max_abs_advantage"] == pytest.approx(np.mean(amax), rel=1e-6)
        assert 0.0 <= entry["lab/d_real"] <= 1.0 and 0.0 <= entry["lab/d_iid"] <= entry["lab/d_real"] + 1e-12


def test_steps_per_generation_with_accumulation(tmp_path):
    trainer, truth, rec = _run(tmp_path, steps_per_generation=4, gradient_accumulation_steps=2, max_steps=4)
    _, combined = _check(trainer, truth, rec)
    _check_logs(trainer, rec, combined)
    # TRL's own advantages (scale_rewards="group") are the core's grpo on the combined reward
    from grpo_lab.sims.advantages import grpo
    assert np.allclose(rec.groups["advantages"], grpo(combined), atol=1e-4)


def test_num_iterations_and_logging_steps(tmp_path):
    trainer, truth, rec = _run(tmp_path, num_iterations=2, logging_steps=2, max_steps=5)
    _, combined = _check(trainer, truth, rec)
    _check_logs(trainer, rec, combined)
    assert np.sum(rec.steps["rollouts_generated"] == 0) >= 2  # steps that re-used a batch generate nothing


def test_several_batches_per_step(tmp_path):
    trainer, truth, rec = _run(tmp_path, steps_per_generation=1, gradient_accumulation_steps=2, max_steps=2)
    _, combined = _check(trainer, truth, rec)
    assert len(np.unique(rec.groups["generation"][rec.groups["step"] == 1])) == 2
    _check_logs(trainer, rec, combined)


def test_none_rewards_recorded_as_missing_and_tags(tmp_path):
    trainer, truth, rec = _run(tmp_path, none_every=3, tags=True, max_steps=3)
    batches, combined = _check(trainer, truth, rec)
    vals = np.concatenate([v for _, v in batches])
    counts = rec.meta["recording"]
    assert counts["rewards_missing_per_func"] == {"correct": int(np.isnan(vals[:, 0]).sum()),
                                                  "short": int(np.isnan(vals[:, 1]).sum())}
    assert counts["rewards_missing"] == int(np.all(np.isnan(vals), axis=1).sum()) > 0
    # a missing reward is not a failure: the record keeps NaN, not 0
    assert np.isnan(rec.groups["rewards"]).sum() == counts["rewards_missing"]
    assert rec.meta["tags"] == ["easy", "hard"]
    assert np.array_equal(rec.groups["tag"], np.where(rec.groups["prompt_id"] % 2, 0, 1))
    logged = {k for e in trainer.state.log_history for k in e}
    assert {"lab/frac_all_fail/easy", "lab/effective_group_rate/hard", "lab/rewards_missing"} <= logged


def test_one_reward_function_default_weight(tmp_path):
    trainer, truth, rec = _run(tmp_path, n_funcs=1, max_steps=2)
    _check(trainer, truth, rec, n_funcs=1)


def test_crash_leaves_a_record_that_loads(tmp_path):
    truth = []
    trainer = make_trainer(tmp_path, truth, max_steps=5)
    recorder = GroupRecorder(tmp_path / "rec", flush_interval_s=0)
    recorder.attach(trainer)
    original = trainer.reward_funcs[0]
    calls = []

    def failing(*a, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("killed")
        return original(*a, **kw)

    failing.__name__ = "correct"
    trainer.reward_funcs[0] = failing
    with pytest.raises(RuntimeError, match="killed"):
        trainer.train()
    # consistent at any moment, even with writes in flight; under load the writer thread may not have landed the
    # first flush yet, and then there is no record at all (never a half-written one)
    try:
        rec = read_record(tmp_path / "rec")
    except InputError as exc:
        assert "no run.json" in str(exc)
    else:
        assert rec.meta["steps_completed"] <= 3 and not rec.meta["complete"]
    recorder.wait()  # the writes in flight land (at exit this happens through atexit)
    rec = read_record(tmp_path / "rec")
    assert not rec.meta["complete"] and rec.meta["steps_completed"] == 3
    assert len(rec.groups["step"]) == 3 * 8 // G and list(rec.steps["step"]) == [1, 2, 3]


def test_wrong_trl_version_is_one_line(monkeypatch):
    import trl

    monkeypatch.setattr(trl, "__version__", "0.19.1")
    with pytest.raises(InputError, match=r"supports trl>=1\.16,<1\.17; found trl 0\.19\.1"):
        GroupRecorder("unused")


def test_record_completed_by_the_caller_after_a_final_evaluation(tmp_path):
    """complete_on_train_end=False (train-lm): the record stays open, so a live reader keeps polling, until the
    caller has added its final evaluation and calls finish()."""
    trainer = make_trainer(tmp_path, [], max_steps=2)
    recorder = GroupRecorder(tmp_path / "rec", complete_on_train_end=False)
    recorder.attach(trainer)
    trainer.train()
    recorder.wait()
    rec = read_record(tmp_path / "rec")
    assert not rec.meta["complete"] and rec.meta["steps_completed"] == 2 and list(rec.steps["step"]) == [1, 2]
    recorder.add_eval(2, np.linspace(0, 1, 8), samples=3)
    recorder.finish(2, end_reason="test")
    rec = read_record(tmp_path / "rec")
    assert rec.meta["complete"] and rec.meta["end_reason"] == "test"
    assert list(rec.evals["step"]) == [2] and np.allclose(rec.evals["pass_rate"][0], np.linspace(0, 1, 8))


def test_memory_held_is_one_generation_batch_and_one_open_segment(tmp_path, monkeypatch):
    """What the recorder holds between steps does not grow with the run: the current generation batch, no
    final batch or step row once flushed, fewer than a segment of open rows in the appender (the rest sealed
    and written), at most one write waiting, and one per-step count entry at most."""
    import grpo_lab.trl_recorder.recorder as recorder_mod
    from transformers import TrainerCallback

    monkeypatch.setattr(recorder_mod, "SEGMENT_ROWS", 6)  # 1.5 generation batches: many seals in a short run
    trainer = make_trainer(tmp_path, [], max_steps=10, per_device_train_batch_size=16)
    recorder = GroupRecorder(tmp_path / "rec", flush_interval_s=0)
    recorder.attach(trainer)
    batch_groups = trainer.args.generation_batch_size // G
    seen = []

    class Probe(TrainerCallback):  # added after the recorder's callback: runs after its flush
        def on_step_end(self, args, state, control, **kwargs):
            app = recorder.appender
            with app._cond:
                waiting = app._job
            held = [recorder.current] + recorder.done
            seen.append({
                "batches": len(held), "batch_rows": sum(len(b.prompt_id) for b in held),
                "open_rows": app._open_rows["groups"],
                "open_bytes": sum(a.nbytes for part in app.open["groups"] for a in part.values()),
                "step_rows": len(recorder.step_rows), "step_counts": len(recorder.step_counts),
                "waiting_tail_rows": 0 if waiting is None else sum(len(p["step"]) for p in waiting["tail"]["groups"]
                                                                   if p),
                "sealed": len(app.sealed["groups"]) + (0 if waiting is None else len(waiting["seal"])),
            })

    trainer.add_callback(Probe())
    trainer.train()
    recorder.wait()
    rec = read_record(tmp_path / "rec")
    per_row = sum(a.nbytes for a in rec.groups.values()) / len(rec.groups["step"])  # bytes of one group's row
    for s in seen[:-1]:  # the last step's flush is left to on_train_end
        assert s["batches"] == 1 and s["batch_rows"] == batch_groups  # one generation batch
        assert s["step_rows"] == 0 and s["step_counts"] <= 1
        assert s["open_rows"] < 6 and s["open_bytes"] <= 6 * per_row
        assert s["waiting_tail_rows"] <= 6 + batch_groups
    assert batch_groups == 4 and seen[-2]["sealed"] >= 4  # 9 final batches of 4 groups, segments of 6+ rows
    assert len(rec.groups["step"]) == 10 * batch_groups and list(rec.steps["step"]) == list(range(1, 11))
