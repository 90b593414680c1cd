"""The audit of logged metrics (sims/doctor/audit.py) on the real-tool fixtures and their recorded truth.

The TRL folders were written by TRL's own GRPOTrainer and the verl ones by verl's own reward managers,
dump and file logger (tests/fixtures/ingest/README.md); ``truth.json`` holds every generation batch and
what each reward function returned, recorded during the run. The logged scalars are the trainers' own;
the truth is the independent reference. Where a trainer's figure is not in any fixture (prime-rl,
tinker), it is computed here from the truth by a plain loop written after the trainer's cited code, and
attached to the ingested record as a logged scalar would be.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.doctor import diagnose
from grpo_lab.doctor_report.audit import audit_text
from grpo_lab.sims.doctor.audit import audit
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record

FIX = Path(__file__).parent / "fixtures" / "ingest"
G = 4


def _trl(name, **kw):
    return ingest(FIX / "trl_matrix" / name / "run", "trl", **kw), json.loads((FIX / "trl_matrix" / name / "truth.json").read_text())


def _batches(truth, weights=(1.0, 1.0)):
    """Per generation batch (in order): its logged step and its groups' training rewards and per-function rewards."""
    out = []
    for gen in truth["generations"]:
        funcs = {k: np.asarray([np.nan if v is None else v for v in vals], float) for k, vals in gen["rewards"].items()}
        names = truth["reward_funcs"]
        per = np.stack([funcs[n] for n in names], axis=1)
        total = np.nansum(per * np.asarray(weights), axis=1)
        total[np.isnan(per).all(axis=1)] = np.nan
        out.append((gen["global_step"] + 1, total.reshape(-1, G), {n: funcs[n].reshape(-1, G) for n in names}))
    return out


def _zero_std_share(groups):
    """TRL's frac_reward_zero_std for one batch, written out: isclose(std of each group, 0), averaged."""
    return float(np.mean([np.isclose(np.nanstd(g, ddof=1) if np.sum(~np.isnan(g)) > 1 else np.nan, 0.0, atol=1e-8)
                          for g in groups]))


@pytest.mark.parametrize("name, kw", [("plain", {}), ("scale_none", {}), ("num_iterations", {}),
                                      ("steps_per_generation", {}), ("none_rewards", {}),
                                      ("reward_weights", {"reward_weights": [0.25, 1.0]})])
def test_trl_logged_scalars_are_reproduced(name, kw):
    rec, truth = _trl(name, **kw)
    a = audit(rec)
    checks = {c["metric"]: c for c in a["checks"]}
    assert set(checks) == {"frac_reward_zero_std", "reward_std", "reward"}
    steps_with_groups = len(np.unique(rec.groups["step"]))
    for c in checks.values():
        assert c["trainer"] == "TRL" and c["compared_steps"] == steps_with_groups and c["agree"] == steps_with_groups
        assert c["disagreements"] == []
    # and the recomputation is the truth's: every batch's zero-std share from the recorded rewards
    first = {}
    for step, total, _ in _batches(truth, kw.get("reward_weights", (1.0, 1.0))):
        first.setdefault(step, _zero_std_share(total))
    for s, v in zip(rec.steps["step"], rec.steps["scalar/frac_reward_zero_std"]):
        if s in first and s in rec.groups["step"]:
            assert v == pytest.approx(first[s])


def test_logging_steps_disagreement_is_named_and_is_the_average_of_unwritten_batches():
    """logging_steps = 3: TRL's log at steps 3 and 6 averages three generation batches; the folder has the last."""
    rec, truth = _trl("logging_steps")
    checks = {c["metric"]: c for c in audit(rec)["checks"]}
    rows = checks["frac_reward_zero_std"]["disagreements"]
    assert [r["step"] for r in rows] == [3, 6] and all(r["causes"] == ["logging_steps"] for r in rows)
    batches = _batches(truth)
    for r in rows:  # the truth confirms the cause: the logged value is the mean over the batches since the last log
        covered = [_zero_std_share(t) for step, t, _ in batches if r["step"] - 3 < step <= r["step"]]
        assert len(covered) == 3 and r["logged"] == pytest.approx(np.mean(covered), abs=1e-6)
        assert r["recomputed"] == pytest.approx(covered[-1])


def test_two_batches_per_step_disagreement_is_named_and_confirmed():
    rec, truth = _trl("two_generations_per_step")
    checks = {c["metric"]: c for c in audit(rec)["checks"]}
    rows = checks["reward"]["disagreements"]
    assert rows and all(r["causes"] == ["unwritten_batches"] for r in rows)
    for r in rows:
        both = [t for step, t, _ in _batches(truth) if step == r["step"]]
        assert len(both) == 2
        assert r["logged"] == pytest.approx(np.mean([np.nanmean(t) for t in both]), rel=1e-5)  # TRL averages the two
        assert r["recomputed"] == pytest.approx(np.nanmean(both[-1]))  # the record holds the last


def test_scale_rewards_batch_is_named_first():
    rec, truth = _trl("scale_batch")
    checks = {c["metric"]: c for c in audit(rec)["checks"]}
    rows = checks["frac_reward_zero_std"]["disagreements"]
    assert rows and all(r["causes"][0] == "batch_std" for r in rows)
    for r in rows:  # TRL: one std for the whole batch, and it was not 0
        (total,) = [t for step, t, _ in _batches(truth) if step == r["step"]]
        assert np.nanstd(total, ddof=1) > 0 and r["logged"] == 0.0


def test_correctness_split_and_phantom_groups_trl():
    """reward_funcs [correct, short]: groups all-fail in 'correct' but mixed in correct + short train on 'short'."""
    rec, truth = _trl("plain")
    sp = audit(rec)["split"]
    batches = _batches(truth)
    total = np.concatenate([t for _, t, _ in batches])
    correct = np.concatenate([f["correct"] for _, _, f in batches])
    same = lambda x: np.all(x == x[:, :1], axis=1)  # noqa: E731
    assert sp["available"] and sp["differ"]
    assert sp["training"]["zero_advantage"] == pytest.approx(np.mean(same(total)))
    assert sp["correctness"]["zero_advantage"] == pytest.approx(np.mean(same(correct)))
    assert sp["correctness"]["all_fail"] == pytest.approx(np.mean(np.all(correct == 0, axis=1)))
    phantom = same(correct) & ~same(total)
    assert sp["phantom"]["count"] == phantom.sum() > 0
    assert [g["correctness_rewards"] for g in sp["phantom"]["groups"]] == correct[phantom].tolist()
    assert [g["training_rewards"] for g in sp["phantom"]["groups"]] == total[phantom].tolist()


def test_correctness_split_and_phantom_groups_verl_dapo():
    """verl DAPO with the overlong penalty: an all-wrong group whose lengths differ trains on length alone."""
    rec = ingest(FIX / "verl_matrix" / "dapo" / "run", "verl")
    truth = json.loads((FIX / "verl_matrix" / "dapo" / "truth.json").read_text())
    a = audit(rec)
    (check,) = a["checks"]
    assert check["metric"] == "critic/score/mean" and check["agree"] == check["compared_steps"] == 3
    want = []
    n_groups = 0
    for step, s in truth["steps"].items():
        for uid in dict.fromkeys(s["uid"]):
            rows = [i for i, u in enumerate(s["uid"]) if u == uid]
            acc = [s["scorer_returned"][i]["acc"] for i in rows]
            train = [s["training_reward"][i] for i in rows]
            n_groups += 1
            if len(set(acc)) == 1 and len(set(train)) > 1:
                want.append((int(step), s["prompt"][rows[0]], sorted(train)))
    sp = a["split"]
    got = [(g["step"], g["text"], sorted(g["training_rewards"])) for g in sp["phantom"]["groups"]]
    assert sorted(got) == sorted(want) and len(want) >= 1
    assert sp["phantom"]["share"] == pytest.approx(len(want) / n_groups)
    assert sp["training"]["zero_advantage"] < sp["correctness"]["zero_advantage"]
    text = "\n".join(audit_text(a))
    assert "phantom-gradient groups" in text and "verl-recipe #125" in text


def _prime_solve(groups_rewards, K):
    """prime-rl's compute_solve_rates (src/prime_rl/orchestrator/metrics.py), as loops: per group, reward sum == 0 /
    == group_size, averaged over groups."""
    sums = [sum(r) for r in groups_rewards]
    none = sum(s == 0 for s in sums) / len(sums)
    full = sum(s == K for s in sums) / len(sums)
    return none, full


def _tinker_by_group(groups_rewards):
    """tinker-cookbook's _compute_by_group_metrics (tinker_cookbook/rl/metric_util.py), as loops."""
    good = bad = mixed = 0
    for r in groups_rewards:
        if all(x == r[0] for x in r):
            good, bad = (good + 1, bad) if r[0] >= 0.5 else (good, bad + 1)
        else:
            mixed += 1
    n = len(groups_rewards)
    return good / n, bad / n, mixed / n


def _attach(rec, name, values):
    rec.steps[f"scalar/{name}"] = np.asarray(values, float)


def test_other_trainers_figures_agree_and_known_bugs_are_named():
    """prime-rl and tinker figures, computed from the truth by their own definitions, are reproduced; the same
    figures with each known bug applied are named by their cause."""
    rec, truth = _trl("plain")
    by_step = {step: t for step, t, _ in _batches(truth)}
    correct = {step: f["correct"] for step, _, f in _batches(truth)}
    steps = rec.steps["step"]
    none_all = [_prime_solve(by_step[s].tolist(), G) for s in steps]
    tinker = [_tinker_by_group(by_step[s].tolist()) for s in steps]
    _attach(rec, "solve_none/all", [x[0] for x in none_all])
    _attach(rec, "solve_all/all", [x[1] for x in none_all])
    _attach(rec, "effective_batch_size/all", [1 - x[0] - x[1] for x in none_all])
    _attach(rec, "env/all/by_group/frac_all_good", [x[0] for x in tinker])
    _attach(rec, "env/all/by_group/frac_all_bad", [x[1] for x in tinker])
    _attach(rec, "env/all/by_group/frac_mixed", [x[2] for x in tinker])
    a = audit(rec)
    assert a["disagreements"] == 0 and {c["trainer"] for c in a["checks"]} == {"TRL", "prime-rl", "tinker"}

    # OpenRLHF #1282: accepted rollouts over prompts -- K times the share
    _attach(rec, "solve_none/all", [G * x[0] for x in none_all])
    # tinker-cookbook #905: the figures slide onto the next step's groups
    _attach(rec, "env/all/by_group/frac_mixed", [x[2] for x in tinker[1:]] + [np.nan])
    # the correctness reward where the shaped one trained
    _attach(rec, "env/all/by_group/frac_all_bad", [_tinker_by_group(correct[s].tolist())[1] for s in steps])
    causes = {c["metric"]: [r["causes"] for r in c["disagreements"]] for c in audit(rec)["checks"]}
    assert causes["solve_none/all"] and all("rollouts_not_groups" in c for c in causes["solve_none/all"])
    assert causes["env/all/by_group/frac_mixed"] and all("neighbour_step" in c for c in causes["env/all/by_group/frac_mixed"])
    assert causes["env/all/by_group/frac_all_bad"] and all(c[0] == "correctness" for c in causes["env/all/by_group/frac_all_bad"])


def test_denominator_and_per_device_causes():
    """prime-rl #3152's denominator: a rate over the trained-on groups only, where the record holds every drawn
    group (kept flags as dynamic sampling sets them); per-device: one device's half of the batch."""
    rec, truth = _trl("plain")
    by_step = {step: t for step, t, _ in _batches(truth)}
    kept = np.ones(len(rec.groups["step"]), bool)
    kept[::3] = False
    rec.groups["kept"] = kept
    steps = rec.steps["step"]
    trained, half = [], []
    for s in steps:
        idx = np.flatnonzero(rec.groups["step"] == s)
        groups = by_step[s].tolist()
        trained.append(_prime_solve([groups[i] for i in range(len(idx)) if kept[idx[i]]], G)[0])
        half.append(_zero_std_share(by_step[s][: len(idx) // 2]))
    _attach(rec, "solve_none/all", trained)
    rec.steps["scalar/frac_reward_zero_std"] = np.asarray(half)
    checks = {c["metric"]: c for c in audit(rec)["checks"]}
    for r in checks["solve_none/all"]["disagreements"]:
        assert "kept_only" in r["causes"]
    for r in checks["frac_reward_zero_std"]["disagreements"]:
        assert "per_device" in r["causes"]
    assert checks["solve_none/all"]["disagreements"] and checks["frac_reward_zero_std"]["disagreements"]


def test_audit_in_the_diagnosis_and_the_command_line(tmp_path, capsys):
    rec = ingest(FIX / "trl_run", "trl")
    d = diagnose(rec, tolerance=0.5)
    assert d["audit"]["split"]["phantom"]["count"] > 0 and "audit" in d["timings"]
    write_record(tmp_path / "dapo", ingest(FIX / "verl_matrix" / "dapo" / "run", "verl"))
    assert main(["diagnose", str(tmp_path / "dapo"), "--audit"]) == 0  # 12 groups: no fit, the audit still runs
    out = capsys.readouterr().out
    assert "critic/score/mean: 3 of 3 steps reproduced" in out and "phantom-gradient groups: 1" in out
    assert main(["diagnose", str(tmp_path / "dapo"), "--audit", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["split"]["phantom"]["count"] == 1


def test_the_projects_own_trainer_columns_and_the_denominator_of_a_dynamic_sampling_run():
    """A shipped dynamic-sampling run records every drawn group (kept or dropped) and its step columns over all of
    them: reproduced at every step. The same column taken over the trained-on groups only (what a trainer that
    logs after filtering reports) is named as the denominator's doing."""
    from grpo_lab.sims.record import read_record

    rec = read_record(Path(__file__).parents[1] / "runs" / "broad-g4-dr_grpo-ds-lr0.0008-s1")
    checks = {c["metric"]: c for c in audit(rec)["checks"]}
    n = len(rec.steps["step"])
    assert {m: (c["agree"], c["compared_steps"]) for m, c in checks.items()} == {
        m: (n, n) for m in ("frac_reward_zero_std", "frac_all_pass", "frac_all_fail", "reward_mean")}
    g = rec.groups
    r, kept = g["rewards"], g["kept"]
    trained = [np.mean(r[(g["step"] == s) & kept].max(axis=1) == r[(g["step"] == s) & kept].min(axis=1))
               for s in rec.steps["step"]]
    rec.steps["frac_reward_zero_std"] = np.asarray(trained)
    (check,) = [c for c in audit(rec)["checks"] if c["metric"] == "frac_reward_zero_std"]
    assert len(check["disagreements"]) == n and all(x["causes"][0] == "kept_only" for x in check["disagreements"])


def test_a_malformed_correctness_column_is_ignored_not_fatal():
    rec = ingest(FIX / "trl_run", "trl")
    rec.groups["correctness"] = rec.groups["correctness"][:5]  # rows that do not match the groups
    a = audit(rec)
    assert a["split"]["available"]  # falls back to ingest's per-reward shares
    assert a["split"]["phantom"] is None and "re-ingest" in a["split"]["note"]
