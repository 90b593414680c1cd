"""Ingest per format: the record's groups and metrics equal an independent reading of the raw fixture rows."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from grpo_lab.testing.cli import run_cli
from grpo_lab.sims.ingest import ingest, ingest_upload
from grpo_lab.sims.record import read_record, summarise, write_record

FIX = Path(__file__).parent / "fixtures" / "ingest"
TRL = FIX / "trl_run"
VERL = FIX / "verl_run"
PLAIN = FIX / "plain.jsonl"


def _trl_groups_from_parquet(G=4):
    """Independent reading: consecutive blocks of G rows; reward = correct + short (TRL's default weights 1)."""
    out = []
    for f in sorted((TRL / "completions").glob("completions_*.parquet")):
        cols = pq.read_table(f).to_pydict()
        n = len(cols["step"])
        for s in range(0, n, G):
            prompts = cols["prompt"][s:s + G]
            assert len(set(prompts)) == 1
            rewards = [cols["correct"][i] + cols["short"][i] for i in range(s, s + G)]
            out.append((cols["step"][s], prompts[0], rewards, cols["advantage"][s:s + G]))
    return out


def _trl_logged():
    state = json.loads((TRL / "trainer_state.json").read_text())
    return {h["step"]: h for h in state["log_history"] if "frac_reward_zero_std" in h}


def test_trl_groups_equal_parquet_rows():
    rec = ingest(TRL, "trl")
    raw = _trl_groups_from_parquet()
    assert len(rec.groups["step"]) == len(raw) == 40
    assert rec.meta["num_generations"] == 4 and rec.meta["source"]["kind"] == "trl"
    assert rec.meta["source"]["reward_columns"] == ["correct", "short"]
    for i, (step, prompt, rewards, adv) in enumerate(raw):
        assert rec.groups["step"][i] == step
        assert rec.meta["prompt_labels"][rec.groups["prompt_id"][i]] == prompt
        np.testing.assert_array_equal(rec.groups["rewards"][i], rewards)
        np.testing.assert_allclose(rec.groups["advantages"][i], adv)
    assert "lengths" in rec.meta["missing"] and "evals" in rec.meta["missing"]
    assert not rec.meta["scalars_only"]


def test_trl_frac_reward_zero_std_matches_what_trl_logged():
    """TRL: isclose(per-group std, 0) averaged over the batch; with binary rewards that is spread == 0."""
    rec = ingest(TRL, "trl")
    logged = _trl_logged()
    by_step = defaultdict(list)
    for step, _, rewards, _ in _trl_groups_from_parquet():
        by_step[step].append(float(np.std(rewards, ddof=1)) <= 1e-8)
    assert sorted(by_step) == sorted(logged) == rec.steps["step"].tolist()
    for j, step in enumerate(rec.steps["step"]):
        mine = np.mean(by_step[step])
        assert mine == pytest.approx(logged[step]["frac_reward_zero_std"], abs=1e-12)
        assert rec.steps["frac_reward_zero_std"][j] == pytest.approx(mine, abs=1e-12)
        assert rec.steps["scalar/frac_reward_zero_std"][j] == logged[step]["frac_reward_zero_std"]
        assert rec.steps["reward_mean"][j] == pytest.approx(logged[step]["reward"], abs=1e-6)
    # not a vacuous check: the run has both degenerate and useful groups
    assert 0 < np.mean([v for vs in by_step.values() for v in vs]) < 1


def test_trl_scalars_only(tmp_path):
    shutil.copy(TRL / "trainer_state.json", tmp_path / "trainer_state.json")
    rec = ingest(tmp_path, "trl")
    assert rec.meta["scalars_only"] is True
    assert len(rec.groups["step"]) == 0 and rec.groups["rewards"].shape[0] == 0
    assert {"completions", "advantages", "evals"} <= set(rec.meta["missing"])
    logged = _trl_logged()
    np.testing.assert_array_equal(rec.steps["step"], sorted(logged))
    np.testing.assert_array_equal(rec.steps["scalar/frac_reward_zero_std"],
                                  [logged[s]["frac_reward_zero_std"] for s in sorted(logged)])
    assert np.all(np.isnan(rec.steps["frac_reward_zero_std"]))
    back = read_record(write_record(tmp_path / "rec", rec))
    assert summarise(back)["groups"] == 0 and summarise(back)["steps"] == len(logged)


def test_trl_reward_weights_and_checkpoint_state(tmp_path):
    run = tmp_path / "out"
    shutil.copytree(TRL / "completions", run / "completions")
    (run / "checkpoint-10").mkdir()
    shutil.copy(TRL / "trainer_state.json", run / "checkpoint-10" / "trainer_state.json")
    rec = ingest(run, "trl", reward_weights=[1.0, 0.0])
    assert rec.meta["source"]["trainer_state"] == "checkpoint-10/trainer_state.json"
    raw = _trl_groups_from_parquet()
    correct_only = []
    for f in sorted((TRL / "completions").glob("*.parquet")):
        correct_only += pq.read_table(f).column("correct").to_pylist()
    np.testing.assert_array_equal(rec.groups["rewards"].ravel(), correct_only)
    assert len(raw) == len(rec.groups["step"])


def _verl_rows():
    rows = []
    for f in sorted((VERL / "rollouts").glob("*.jsonl"), key=lambda p: int(p.stem)):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
    return rows


@pytest.mark.parametrize("key,tol", [("score", 0.0), ("score", 0.05), ("acc", 0.0)])
def test_verl_groups_rebuilt_by_prompt_text(key, tol):
    rec = ingest(VERL, "verl", tolerance=tol, reward_key=key)
    buckets = defaultdict(list)
    for r in _verl_rows():
        buckets[(r["step"], r["input"])].append(float(r[key]))
    groups = [(s, p, v[j:j + 4]) for (s, p), v in buckets.items() for j in range(0, len(v), 4)]
    groups.sort(key=lambda g: g[0])
    assert len(groups) == len(rec.groups["step"]) == 31
    labels = rec.meta["prompt_labels"]
    for i, (s, p, v) in enumerate(groups):
        assert rec.groups["step"][i] == s and labels[rec.groups["prompt_id"][i]] == p
        np.testing.assert_array_equal(rec.groups["rewards"][i], v)
    degenerate = [max(v) - min(v) <= tol for _, _, v in groups]
    s = summarise(rec)
    assert s["frac_reward_zero_std"] == pytest.approx(np.mean(degenerate))
    assert rec.meta["reward_tolerance"] == tol
    metrics = [json.loads(line) for line in (VERL / "metrics.jsonl").read_text().splitlines()]
    np.testing.assert_array_equal(rec.steps["scalar/critic/score/mean"], [m["data"]["critic/score/mean"] for m in metrics])


def test_verl_tolerance_changes_the_answer():
    """Continuous scores: no group is exactly unanimous, but within 0.05 the acc-degenerate ones are."""
    exact = summarise(ingest(VERL, "verl"))["frac_reward_zero_std"]
    loose = summarise(ingest(VERL, "verl", tolerance=0.05))["frac_reward_zero_std"]
    acc = summarise(ingest(VERL, "verl", reward_key="acc"))["frac_reward_zero_std"]
    assert exact == 0.0 and loose == acc > 0


def test_plain_jsonl_round_trip_through_inspect(tmp_path):
    lines = [json.loads(x) for x in PLAIN.read_text().splitlines()]
    out = tmp_path / "plain"
    res = run_cli("ingest", PLAIN, "--format", "jsonl", "--out", out, "--json")
    assert res.returncode == 0, res.stderr
    s = summarise(read_record(out))
    r = [x["rewards"] for x in lines]
    assert s["groups"] == len(lines) and s["steps"] == len({x["step"] for x in lines})
    assert s["frac_reward_zero_std"] == pytest.approx(np.mean([len(set(v)) == 1 for v in r]))
    assert s["frac_all_pass"] == pytest.approx(np.mean([set(v) == {1} for v in r]))
    assert s["frac_all_fail"] == pytest.approx(np.mean([set(v) == {0} for v in r]))
    assert s["reward_mean"] == pytest.approx(np.mean(r))
    assert json.loads(res.stdout)["frac_reward_zero_std"] == pytest.approx(s["frac_reward_zero_std"])
    rec = read_record(out)
    np.testing.assert_array_equal(rec.groups["lengths"], [x["lengths"] for x in lines])
    ids = [rec.meta["prompt_labels"][i] for i in rec.groups["prompt_id"]]
    assert ids == [x["prompt_id"] for x in lines]


def test_plain_variable_group_size_and_upload():
    data = b'{"step": 0, "prompt_id": 5, "rewards": [1, 1, 1]}\n\n{"step": 1, "prompt_id": 5, "rewards": [0, 1]}\n' \
           b'{"step": 1, "data": {"loss": 0.5}}\n{"step": 1, "prompt_id": "x", "rewards": [0.5, null, 0.5], "kept": false}\n'
    rec = ingest_upload("mine.jsonl", data, "jsonl")
    assert rec.meta["num_generations"] is None and rec.groups["rewards"].shape == (3, 3)
    assert np.isnan(rec.groups["rewards"][1, 2]) and np.isnan(rec.groups["rewards"][2, 1])
    assert rec.groups["kept"].tolist() == [True, True, False]
    assert rec.meta["n_prompts"] == 2
    np.testing.assert_array_equal(rec.steps["frac_reward_zero_std"], [1.0, 0.5])
    np.testing.assert_array_equal(rec.steps["scalar/loss"], [np.nan, 0.5])
    np.testing.assert_array_equal(rec.steps["rollouts_generated"], [3, 4])
    np.testing.assert_array_equal(rec.steps["rollouts_kept"], [3, 2])


def test_upload_of_a_zipped_trl_folder_equals_the_folder(tmp_path):
    archive = shutil.make_archive(str(tmp_path / "run"), "zip", root_dir=FIX, base_dir="trl_run")
    rec = ingest_upload("run.zip", Path(archive).read_bytes(), "trl")
    ref = ingest(TRL, "trl")
    np.testing.assert_array_equal(rec.groups["rewards"], ref.groups["rewards"])
    np.testing.assert_array_equal(rec.steps["scalar/frac_reward_zero_std"], ref.steps["scalar/frac_reward_zero_std"])


def test_inspect_command_reads_an_ingested_record(tmp_path):
    """`grpo-lab inspect`'s JSON agrees with summarise()."""
    out = tmp_path / "v"
    write_record(out, ingest(VERL, "verl", tolerance=0.05))
    expected = summarise(read_record(out))
    assert expected["reward_tolerance"] == 0.05 and expected["groups"] == 31
    got = run_cli("inspect", out, "--json")
    assert got.returncode == 0, got.stderr
    data = json.loads(got.stdout)
    for k in ("steps", "groups", "frac_reward_zero_std", "frac_all_pass", "frac_all_fail"):
        assert data[k] == pytest.approx(expected[k])


def test_upload_single_trl_files():
    f = TRL / "completions" / "completions_00003.parquet"
    rec = ingest_upload(f.name, f.read_bytes(), "trl")
    raw = [g for g in _trl_groups_from_parquet() if g[0] == 3]
    assert rec.groups["step"].tolist() == [3] * len(raw)
    np.testing.assert_array_equal(rec.groups["rewards"], [g[2] for g in raw])
    assert "scalars" in rec.meta["missing"]
    state = ingest_upload("trainer_state.json", (TRL / "trainer_state.json").read_bytes(), "trl")
    assert state.meta["scalars_only"] and len(state.steps["step"]) == len(_trl_logged())
