"""Tracker scalars: each fixture (written by the tracker's own library, tests/fixtures/trackers/make_fixtures.py)
read back onto the standard columns and checked against the truth counted from the simulated draws at write
time; TensorBoard's reading checked against TensorBoard's own EventAccumulator; and the command line."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest.trackers import read_run_scalars, read_scalars
from grpo_lab.sims.record import read_record
from grpo_lab.sims.scalars_record import COLUMNS, is_scalars_only
from grpo_lab.testing.cli import run_cli

FIX = Path(__file__).parent / "fixtures" / "trackers"
TRUTH = json.loads((FIX / "truth.json").read_text())
STANDARD = COLUMNS[1:]


def _read(t, **kw):
    return read_scalars(FIX / t["path"], fmt=kw.pop("fmt", t["format"]), run=t["run"],
                        num_generations=t["num_generations_flag"], **kw)


@pytest.mark.parametrize("name", sorted(TRUTH))
def test_each_fixture_reads_back_onto_the_truth(name):
    t = TRUTH[name]
    rec = _read(t)
    src = rec.meta["source"]
    assert is_scalars_only(rec) and len(rec.groups["step"]) == 0
    assert src["trainer"] == t["trainer"] and src["format"] == t["format"]
    assert rec.meta["num_generations"] == t["K"]
    np.testing.assert_array_equal(rec.steps["step"], t["step"])
    tol = 1e-6 if t["float32"] else 1e-12  # TensorBoard's simple_value is a float32
    for col in t["columns"]:
        np.testing.assert_allclose(rec.steps[col], t[col], rtol=0, atol=tol, err_msg=f"{name} {col}")
    gpr = src["groups_per_row"]
    inferred = "groups_per_step" not in t["columns"] and gpr["from"] == "lattice"
    if inferred:  # no config gave the groups: the lattice of the logged shares did, equal to the simulation's
        np.testing.assert_array_equal(rec.steps["groups_per_step"], t["groups_per_step"])
    assert src["missing"] == [c for c in STANDARD if c not in t["columns"] and not (c == "groups_per_step" and inferred)]
    for col in src["missing"]:
        assert np.isnan(rec.steps[col]).all()
    for metric in src["dialect"].values():  # what was read is kept as logged (each name of a derived column's sum)
        if not metric.startswith(("config ", "lattice ")):
            for name in (w for w in metric.split() if "/" in w.strip("/")):
                assert f"scalar/{name}" in rec.steps, (name, metric)


@pytest.mark.parametrize("name", ["tensorboard/trl", "trl_tensorboard", "trl_wandb", "wandb", "wandb_orlhf", "mlflow",
                                  "trackio", "jsonl"])
def test_auto_detects_the_format_and_takes_k_from_the_runs_config(name):
    t = TRUTH[name]
    rec = read_scalars(FIX / t["path"], run=t["run"])  # fmt auto, no --num-generations
    assert rec.meta["source"]["format"] == t["format"]
    assert rec.meta["num_generations"] == t["K"]
    assert any("from the run's config" in n for n in rec.meta["source"]["notes"])


def test_tensorboard_reading_equals_tensorboards_event_accumulator():
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for run in ("trl", "prime", "orlhf"):
        ours = read_run_scalars(FIX / "tensorboard", run=run).series
        acc = EventAccumulator(str(FIX / "tensorboard" / run), size_guidance={"scalars": 0})
        acc.Reload()
        tags = acc.Tags()["scalars"]
        assert sorted(tags) == sorted(ours)
        for tag in tags:
            ev = acc.Scalars(tag)
            np.testing.assert_array_equal(ours[tag][0], [e.step for e in ev])
            np.testing.assert_array_equal(ours[tag][1], [e.value for e in ev])


def test_the_crc_equals_tensorboards():
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as reference

    from grpo_lab.sims.ingest.trackers.tensorboard import masked_crc32c

    rng = random.Random(3)
    for n in (0, 1, 7, 8, 9, 100, 4097):
        data = bytes(rng.getrandbits(8) for _ in range(n))
        assert masked_crc32c(data) == reference(data)


def test_a_trainer_can_be_forced_and_a_wrong_one_is_refused():
    t = TRUTH["jsonl"]
    rec = _read(t, trainer="tinker-cookbook")
    assert rec.meta["source"]["trainer"] == "tinker-cookbook"
    from grpo_lab.sims.errors import InputError

    with pytest.raises(InputError, match="none of ROLL's metric names"):
        _read(t, trainer="roll")


def test_k_from_the_flag_beats_the_config_and_openrlhf_needs_it():
    t = TRUTH["tensorboard/orlhf"]
    rec = read_scalars(FIX / "tensorboard", run="orlhf")  # no K: the pass rate cannot be converted
    assert "frac_reward_zero_std" in rec.meta["source"]["missing"]
    assert rec.meta["num_generations"] is None
    rec = read_scalars(FIX / "tensorboard", run="orlhf", num_generations=t["K"])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], t["frac_reward_zero_std"], atol=1e-6)
    # the rate over 100% (OpenRLHF #1282) is read as rollouts: at K = 1 it would be refused as a share
    from grpo_lab.sims.errors import InputError

    with pytest.raises(InputError, match="not a share"):
        read_scalars(FIX / "tensorboard", run="orlhf", num_generations=1)


def test_cli_ingest_writes_a_record_that_inspect_and_runs_show(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    t = TRUTH["trackio"]
    out = tmp_path / "data" / "grpo-lab" / "runs" / "miles"
    proc = run_cli("ingest", FIX / t["path"], "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "scalars only, 30 steps of miles metrics from trackio" in proc.stdout
    rec = read_record(out)
    assert is_scalars_only(rec)
    np.testing.assert_allclose(rec.steps["frac_all_fail"], t["frac_all_fail"])
    proc = run_cli("inspect", out, "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["groups"] == 0 and shown["steps"] == 30
    assert shown["scalars"]["frac_all_fail"] == pytest.approx(np.mean(t["frac_all_fail"]))
    proc = run_cli("runs", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "miles" in {r["label"] for r in json.loads(proc.stdout)["runs"]}


def test_cli_json_report_names_what_was_read_and_missing(tmp_path):
    t = TRUTH["wandb"]
    proc = run_cli("ingest", FIX / t["path"], "--format", "wandb", "--out", tmp_path / "r", "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["trainer"] == "verl-v1" and rep["groups"] == 0 and rep["num_generations"] == 8
    assert rep["dialect"]["frac_reward_zero_std"] == "training/filter_groups/evicted_samples"
    assert rep["missing"] == ["frac_all_pass", "frac_all_fail", "reward_mean", "rounds"]


def test_a_groups_jsonl_still_ingests_as_groups_under_auto_and_jsonl(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text('{"step": 0, "prompt_id": "a", "rewards": [1, 0]}\n{"step": 1, "prompt_id": "a", "rewards": [1, 1]}\n')
    for fmt in ("auto", "jsonl"):
        proc = run_cli("ingest", f, "--format", fmt, "--out", tmp_path / fmt, "--json")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["groups"] == 2


def test_partial_ok_reads_a_file_still_being_written(tmp_path):
    import shutil

    t = TRUTH["tensorboard/prime"]
    run = tmp_path / "prime"
    shutil.copytree(FIX / "tensorboard" / "prime", run)
    (f,) = run.glob("*tfevents*")
    data = f.read_bytes()
    f.write_bytes(data[:-30])  # the writer is mid-record
    rec = read_scalars(run, num_generations=8, partial_ok=True)
    n = len(rec.steps["step"])
    assert 0 < n <= len(t["step"])
    np.testing.assert_allclose(rec.steps["frac_all_fail"], t["frac_all_fail"][:n], atol=1e-6)
    jl = tmp_path / "jl"
    shutil.copytree(FIX / "jsonl", jl)
    text = (jl / "metrics.jsonl").read_text()
    (jl / "metrics.jsonl").write_text(text[:-40])
    rec = read_scalars(jl, partial_ok=True)
    assert len(rec.steps["step"]) == len(TRUTH["jsonl"]["step"]) - 1
    wb = tmp_path / "wb"
    shutil.copytree(FIX / "wandb", wb)
    (f,) = wb.rglob("*.wandb")
    data = f.read_bytes()
    f.write_bytes(data[:len(data) * 2 // 3])
    rec = read_scalars(wb, partial_ok=True)
    n = len(rec.steps["step"])
    assert 0 < n < len(TRUTH["wandb"]["step"])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], TRUTH["wandb"]["frac_reward_zero_std"][:n])


def test_the_mlflow_reader_leaves_the_environment_as_it_was(monkeypatch):
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    _read(TRUTH["mlflow"])
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ


def test_the_replay_view_takes_a_tracker_record_and_says_what_it_lacks():
    from grpo_lab.replay.model import RunView

    t = TRUTH["mlflow"]
    view = RunView("slime", _read(t))
    assert view.scalars_only and view.group_size == t["K"]
    row = view.summary(4)
    assert row["all_fail"] == pytest.approx(t["frac_all_fail"][4])
    assert row["eff"] == pytest.approx(1 - t["frac_reward_zero_std"][4])
    said = " | ".join(view.missing())
    assert "not in the slime metrics read: reward_mean" in said and "K = 8 from the run's config" in said


def test_docs_show_the_dialect_table_as_the_code_holds_it():
    from grpo_lab.sims.ingest.trackers.dialects import markdown_table

    text = (Path(__file__).parents[1] / "docs" / "ingest.md").read_text()
    start = text.index("<!-- dialect table:")
    body = text[text.index("\n", start) + 1:text.index("<!-- end of dialect table -->")]
    assert body == markdown_table()


def test_tensor_scalars_of_summary_v2_read_as_tensorboard_reads_them(tmp_path):
    """tf.summary v2 writes scalars as one-element tensors (TensorBoard's own ``scalar_pb``), not
    simple_value; a run restarted from a checkpoint re-logs steps in a second file (the later value wins)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar.summary import scalar_pb
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util

    t = TRUTH["tensorboard/prime"]
    names = {"frac_all_pass": "train/agg/all/agent/solved_all", "frac_all_fail": "train/agg/all/agent/solved_none"}
    for start, suffix in ((0, "a"), (20, "b")):  # the second file re-logs steps 21.. after a restart
        w = EventFileWriter(str(tmp_path / "run"), filename_suffix=suffix)
        for i in range(start, len(t["step"])):
            for col, name in names.items():
                value = t[col][i] if suffix == "b" or i < 20 else 0.999
                w.add_event(event_pb2.Event(step=t["step"][i], summary=scalar_pb(name, value)))
        w.close()
    rec = read_scalars(tmp_path / "run", num_generations=8)
    for col in names:
        np.testing.assert_allclose(rec.steps[col], t[col], atol=1e-6)
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"tensors": 0})
    acc.Reload()
    ours = read_run_scalars(tmp_path / "run").series
    for name in names.values():
        theirs = {e.step: float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(name)}
        assert sorted(theirs) == ours[name][0].tolist()
        np.testing.assert_array_equal(ours[name][1], [theirs[s] for s in sorted(theirs)])


def test_a_wandb_history_export_as_json_rows(tmp_path):
    t = TRUTH["wandb_export"]
    rows = [{"_step": s, "_runtime": 1.0 * s, "group/all_correct_groups_ratio": p, "group/all_incorrect_groups_ratio": f,
             "group/correct_ratio/mean": r, "note": "text is skipped"}
            for s, p, f, r in zip(t["step"], t["frac_all_pass"], t["frac_all_fail"], t["reward_mean"])]
    (tmp_path / "history.json").write_text(json.dumps(rows))
    rec = read_scalars(tmp_path / "history.json", num_generations=8)
    assert rec.meta["source"]["trainer"] == "roll"
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], t["frac_reward_zero_std"])


def test_a_run_picked_by_name_is_named_after_it_in_the_runs_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    proc = run_cli("ingest", FIX / "mlflow", "--run", "slime/slime-run")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "grpo-lab" / "runs" / "slime-slime-run" / "run.json").is_file()


def test_trls_trainer_state_reads_as_the_groups_of_the_same_run_say():
    """A real GRPOTrainer output (tests/fixtures/ingest/trl_run): the scalars read from trainer_state.json
    equal the shares recomputed from its logged completions by the group reader."""
    from grpo_lab.sims.ingest import ingest

    run = Path(__file__).parent / "fixtures" / "ingest" / "trl_run"
    groups = ingest(run, "trl")
    rec = read_scalars(run / "trainer_state.json", num_generations=groups.meta["num_generations"])
    assert rec.meta["source"]["trainer"] == "trl"
    np.testing.assert_array_equal(rec.steps["step"], groups.steps["step"])
    for col in ("frac_reward_zero_std", "reward_mean"):
        np.testing.assert_allclose(rec.steps[col], groups.steps[col], atol=1e-12)


def test_an_hf_runs_history_export_is_read_on_train_global_step(tmp_path):
    """``run.history()`` of TRL's W&B run: W&B's _step counts rows, the trainer's step is train/global_step."""
    t = TRUTH["trl_wandb"]
    lines = ["_step,train/global_step,train/frac_reward_zero_std,train/reward", "0,0,,"]
    for i, (step, z, r) in enumerate(zip(t["step"], t["frac_reward_zero_std"], t["reward_mean"])):
        lines.append(f"{7 + 9 * i},{step},{z!r},{r!r}")
    (tmp_path / "history.csv").write_text("\n".join(lines) + "\n")
    rec = read_scalars(tmp_path / "history.csv", num_generations=t["K"])
    np.testing.assert_array_equal(rec.steps["step"], t["step"])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], t["frac_reward_zero_std"])


def test_partial_ok_takes_a_log_with_nothing_in_it_yet(tmp_path):
    from grpo_lab.sims.errors import InputError

    (tmp_path / "metrics.jsonl").write_text("")
    rec = read_scalars(tmp_path, num_generations=8, partial_ok=True)
    assert len(rec.steps["step"]) == 0 and rec.meta["source"]["notes"] == ["nothing logged yet"]
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "env/all/by_group/frac_all_go')  # a first line, cut
    assert len(read_scalars(tmp_path, num_generations=8, partial_ok=True).steps["step"]) == 0
    with pytest.raises(InputError, match="holds no scalars|cut last line"):
        read_scalars(tmp_path, num_generations=8)
