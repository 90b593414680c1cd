"""The rules from the field's threads (sims/doctor/rules.py): each fires on a run built to show it, written by the real
TRL trainer and recorder (or the project's record writer), with evidence recounted here independently; none fires on
the shipped runs; ``diagnose --json`` lists them under ``rules``, the text and HTML reports show them escaped."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.doctor_report import html_report, text_report
from grpo_lab.doctor_report.rules import rules_html
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.rules import ZERO_STEPS, fire_rules
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.record import read_record
from grpo_lab.sims.record_append import RecordAppender
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.trl_tiny import make_trainer
from grpo_lab.trl_recorder import GroupRecorder, dynamic_sampling_trainer

RUNS = Path(__file__).resolve().parents[1] / "runs"


def _names(rules):
    return [r["rule"] for r in rules]


def test_every_reward_zero_for_many_steps_fires_on_groups_and_on_tracker_scalars(tmp_path):
    trainer = make_trainer(tmp_path, [], funcs=1, max_steps=ZERO_STEPS, report_to=["tensorboard"])

    def correct(prompts, completions, **kwargs):  # a verifier that never passes anything
        return [0.0] * len(completions)

    trainer.reward_funcs[0] = correct
    GroupRecorder(tmp_path / "rec").attach(trainer)
    trainer.train()
    proc = run_cli("diagnose", tmp_path / "rec", "--json")
    out = json.loads(proc.stdout)
    (rule,) = [r for r in out["rules"] if r["rule"] == "all_zero_reward"]
    rec = read_record(tmp_path / "rec")
    n = int(np.isfinite(rec.groups["rewards"]).sum())
    assert f"every one of the {n:,} scored rollouts" in rule["evidence"] and f"{ZERO_STEPS} consecutive steps" in \
        rule["evidence"] and "verifier" in rule["advice"]
    # the same run from TensorBoard's copy of the trainer's metrics (a scalars-only record): its logged mean reward
    (logdir,) = {p.parent for p in (tmp_path / "trl").rglob("events.out.tfevents*")}
    scalars = read_scalars(logdir, num_generations=4)
    assert _names(fire_rules(scalars)) == ["all_zero_reward"]
    # one step that scores breaks the run of zeros
    assert fire_rules(rec, zero_steps=ZERO_STEPS + 1) == []


def test_rewards_that_tie_up_to_float_noise(tmp_path):
    trainer = make_trainer(tmp_path, [], funcs=1, max_steps=3)

    looped = np.float32(0)
    for _ in range(10):  # a score of 1 accumulated in float32 (1.0000001): equal to 1 up to float noise
        looped += np.float32(0.1)

    def correct(prompts, completions, **kwargs):
        return [float(looped) if len(c) % 2 else 1.0 for c in completions]

    trainer.reward_funcs[0] = correct
    GroupRecorder(tmp_path / "rec").attach(trainer)
    trainer.train()
    rec = read_record(tmp_path / "rec")
    r = rec.groups["rewards"]
    both = int(np.sum(np.any(r == 1.0, axis=1) & np.any(r == float(looped), axis=1)))
    assert both > 0
    (rule,) = fire_rules(rec)
    assert rule["rule"] == "float_ties" and rule["evidence"].startswith(f"{both:,} of the {both:,} groups counted mixed")
    assert "OpenRLHF #1270" in rule["advice"]
    # recorded with a tolerance, the same groups are unanimous and the rule is silent
    trainer = make_trainer(tmp_path / "tol", [], funcs=1, max_steps=3)
    trainer.reward_funcs[0] = correct
    GroupRecorder(tmp_path / "tol" / "rec", reward_tolerance=1e-6).attach(trainer)
    trainer.train()
    assert fire_rules(read_record(tmp_path / "tol" / "rec")) == []


def test_dynamic_sampling_on_a_shaped_reward_lets_a_phantom_gradient_through(tmp_path):
    truth = []
    cls = dynamic_sampling_trainer(max_num_gen_batches=0)
    trainer = make_trainer(tmp_path, truth, trainer_cls=cls, funcs=2, n_prompts=24, max_steps=4,
                           reward_weights=[1.0, 0.5])  # correct + 0.5 x a length shaping: the filter sees the sum

    def length(prompts, completions, **kwargs):  # an overlong-style shaping term: shorter is better
        return [-0.1 * len(c) for c in completions]

    trainer.reward_funcs[1] = length
    GroupRecorder(tmp_path / "rec").attach(trainer)
    trainer.train()
    rec = read_record(tmp_path / "rec")
    g = rec.groups
    corr, total = g["rewards_per_func"][:, :, 0], g["rewards"]
    phantom = g["kept"] & (corr.max(axis=1) == corr.min(axis=1)) & (total.max(axis=1) > total.min(axis=1))
    assert phantom.sum() > 0, "the seed should keep a group unanimous in 'correct'"
    rules = fire_rules(rec)
    (rule,) = [r for r in rules if r["rule"] == "phantom_gradient"]
    assert rule["evidence"].startswith(f"{int(phantom.sum()):,} of the {int(g['kept'].sum()):,} groups dynamic "
                                       "sampling kept")
    assert "'correct'" in rule["evidence"] and "verl-recipe #125" in rule["advice"]
    # the name is the user's: shown escaped
    rec.meta["reward_funcs"] = ["correct<script>alert(1)</script>", "length"]
    html = rules_html({"rules": fire_rules(rec)})
    assert "<script>" not in html and "correct&lt;script&gt;" in html


def _loo(r):
    return r - (r.sum(axis=1, keepdims=True) - r) / (r.shape[1] - 1)


def _loo_record(path, split: bool, steps: int = 12, K: int = 8):
    rng = np.random.default_rng(3)
    app = RecordAppender(path, {"n_prompts": 64, "num_generations": K, "complete": False,
                                "source": {"kind": "test"}})
    for s in range(1, steps + 1):
        r = (rng.random((6, K)) < rng.random((6, 1))).astype(float)
        a = np.concatenate([_loo(r[:, :K // 2]), _loo(r[:, K // 2:])], axis=1) if split else _loo(r)
        app.append("groups", {"step": np.full(6, s, np.int64), "prompt_id": rng.choice(64, 6, replace=False),
                              "rewards": r, "advantages": a, "lengths": np.full((6, K), 3, np.int64),
                              "kept": np.ones(6, bool)})
        app.append("steps", {"step": np.array([s], np.int64), "reward_mean": np.array([r.mean()])})
        app.flush(steps_completed=s)
    app.close()
    return read_record(path)


def test_a_leave_one_out_baseline_that_splits_groups(tmp_path):
    rec = _loo_record(tmp_path / "split", split=True)
    r, K = rec.groups["rewards"], rec.groups["rewards"].shape[1]
    halves = np.concatenate([_loo(r[:, :K // 2]), _loo(r[:, K // 2:])], axis=1)
    differ = np.any(~np.isclose(halves, _loo(r)), axis=1)
    (rule,) = fire_rules(rec)
    assert rule["rule"] == "loo_split"
    assert rule["evidence"].startswith(f"the advantages of {int(differ.sum()):,} of the {int(differ.sum()):,} groups")
    assert "parts of 4+4 rollouts" in rule["evidence"]
    assert fire_rules(_loo_record(tmp_path / "whole", split=False)) == []  # RLOO over the whole group: silent


def _shipped():
    return sorted(p.parent for p in RUNS.rglob("run.json"))


def test_silent_on_every_shipped_run():
    runs = _shipped()
    assert len(runs) >= 8
    for path in runs:
        assert fire_rules(read_record(path)) == [], path


def test_diagnose_lists_rules_and_the_reports_show_them(tmp_path):
    shipped = diagnose(read_record(RUNS / "weak-g4-dr_grpo-ds-lr0.0004-s1"))
    assert shipped["rules"] == []
    rec = _loo_record(tmp_path / "split", split=True, steps=30)
    d = diagnose(rec)
    assert _names(d["rules"]) == ["loo_split"]
    text, html = text_report(d), html_report(d)
    assert "RULE loo_split (a leave-one-out baseline that splits groups)" in text
    assert 'data-rule="loo_split"' in html and "Advice:" in html


@pytest.mark.parametrize("name", ["broad-g4-dr_grpo-ds-lr0.0008-s1"])
def test_the_cap_rule_is_silent_without_a_cap_and_fires_with_one(name, tmp_path):
    proc = run_cli("diagnose", RUNS / name, "--json")
    assert json.loads(proc.stdout)["rules"] == []
    proc = run_cli("diagnose", RUNS / name, "--json", "--gen-batch-size", "128", "--train-batch-size", "64",
                   "--max-num-gen-batches", "4")
    out = json.loads(proc.stdout)
    (rule,) = out["rules"]
    median = out["stall_forecast"]["risk"]["first_stall"]["median"]
    assert rule["rule"] == "cap_hit" and f"near step {median:.0f}" in rule["evidence"]
    by = {c["change"]: c for c in rule["changes"]}
    assert by["cap doubled"]["settings"]["cap"] == 8
    doubled = by["cap doubled"]["first_stall"]
    assert doubled is None or doubled > median  # more rounds allowed: a later stall
    assert by["twice K (rollouts per prompt)"]["settings"]["K"] == 2 * out["run"]["K"]
    twice_k = by["twice K (rollouts per prompt)"]["first_stall"]
    assert twice_k is None or twice_k > median  # every prompt's P(mixed) grows with K: a later stall
