"""The tracker kinds followed since #40 (sims/ingest/trackers/follow.py): an MLflow file store (each metric file by
byte offset), a W&B CSV history export (by record), a W&B JSON export and TRL's trainer_state.json (rewritten whole:
re-read when they change, only the new log_history rows added), and grpo-lab's own ``grpo_lab/...`` scalars in the
followed run (never the trainer's data).

Each log is grown as its writer grows it and, after every refresh, the follower's record equals ``read_scalars`` of
the files as they stand, while what it read is counted against the bytes the writer appended. Writers: MLflow's own
``MlflowClient`` (file store) and ``MlflowWriter``; transformers' own ``TrainerState.save_to_json`` (what the HF
Trainer, so TRL, calls at each save); TensorBoard's ``EventFileWriter`` (grpo-lab's TensorBoardWriter). W&B exports
come from ``run.history()`` (pandas, not installed here) or the UI: the CSV is written with :mod:`csv` in the UI
export's shape (as tests/fixtures/trackers/make_fixtures.py writes the fixture), the JSON as a list of row objects.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest.trackers import read_run_scalars, read_scalars
from grpo_lab.sims.ingest.trackers.follow import LogFollower
from grpo_lab.testing.follow_check import assert_same_scalars

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"


_same = assert_same_scalars


# --- MLflow ----------------------------------------------------------------------------------------------------------
@pytest.fixture
def mlflow_client(monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())


def _slime_rows():
    """The MLflow fixture's run (slime's metric names), as logged: [(step, {name: value})]."""
    rs = read_run_scalars(FIXTURES / "mlflow", fmt="mlflow")
    by_step: dict = {}
    for name, (steps, values) in rs.series.items():
        for s, v in zip(steps.tolist(), values.tolist()):
            by_step.setdefault(s, {})[name] = v
    return sorted(by_step.items())


def _metric_bytes(store: Path) -> dict[str, int]:
    return {str(f): f.stat().st_size for f in store.rglob("metrics/**/*") if f.is_file()}


def test_an_mlflow_run_is_followed_metric_file_by_metric_file(tmp_path, mlflow_client):
    from mlflow.entities import Metric

    client, store = mlflow_client, tmp_path / "mlruns"
    run_id = client.create_run(client.create_experiment("slime"), run_name="slime-run").info.run_id
    rows = _slime_rows()
    follower = LogFollower(str(store), "mlflow")
    before = {}
    for i, (lo, hi) in enumerate([(0, 7), (7, 8), (8, 19), (19, len(rows))]):
        if i == 1:  # the params land after the first steps (a trainer logging its config late)
            client.log_param(run_id, "n_samples_per_prompt", 8)
            client.log_param(run_id, "rollout_batch_size", 64)
        for step, values in rows[lo:hi]:
            client.log_batch(run_id, metrics=[Metric(k, v, 0, step) for k, v in values.items()])
        rec = follower.refresh()
        _same(rec, read_scalars(str(store), fmt="mlflow"))
        after = _metric_bytes(store)
        assert follower.bytes_read == sum(n - before.get(f, 0) for f, n in after.items())  # the appended lines only
        assert follower.rows_parsed == sum(len(v) for _, v in rows[lo:hi])  # one line a value logged
        assert follower.change == ("new" if i == 0 else "grew")
        before = after
    assert rec.meta["num_generations"] == 8 and len(rec.steps["step"]) == len(rows)
    follower.refresh()
    assert follower.change == "unchanged" and follower.bytes_read == 0


def test_an_mlflow_metric_line_cut_mid_write_waits_and_a_rewritten_file_is_said(tmp_path, mlflow_client):
    from mlflow.entities import Metric

    client, store = mlflow_client, tmp_path / "mlruns"
    run_id = client.create_run(client.create_experiment("slime"), run_name="slime-run").info.run_id
    client.log_param(run_id, "n_samples_per_prompt", 8)
    rows = _slime_rows()
    for step, values in rows[:10]:
        client.log_batch(run_id, metrics=[Metric(k, v, 0, step) for k, v in values.items()])
    follower = LogFollower(str(store), "mlflow")
    follower.refresh()
    (metric,) = [f for f in store.rglob("metrics/rollout/raw_reward")]
    line = f"1796421170300 {rows[10][1]['rollout/raw_reward']} {rows[10][0]}\n".encode()
    with open(metric, "ab") as fh:  # the writer caught mid-line: the cut line waits
        fh.write(line[:9])
    follower.refresh()
    assert follower.rows_parsed == 0 and follower.bytes_read == 9
    with open(metric, "ab") as fh:
        fh.write(line[9:])
    rec = follower.refresh()
    assert follower.rows_parsed == 1 and follower.bytes_read == len(line)  # the whole line, from its start
    _same(rec, read_scalars(str(store), fmt="mlflow"))
    lines = metric.read_bytes().splitlines(keepends=True)
    with open(metric, "r+b") as fh:  # truncated in place
        fh.truncate(len(b"".join(lines[:4])))
    rec = follower.refresh()
    assert follower.change == "truncated" and "raw_reward was truncated" in follower.status
    _same(rec, read_scalars(str(store), fmt="mlflow"))
    new = metric.with_name("next")
    new.write_bytes(b"".join(lines[:6]))
    os.replace(new, metric)  # replaced by another file
    rec = follower.refresh()
    assert follower.change == "replaced" and "raw_reward was replaced by another file" in follower.status
    _same(rec, read_scalars(str(store), fmt="mlflow"))


# --- grpo-lab's own scalars in the followed run ------------------------------------------------------------------------
def test_our_own_forecast_written_into_the_run_is_not_read_as_the_trainers(tmp_path, mlflow_client):
    """watch --emit writes grpo_lab/... scalars into the followed run: the follower does not read them (no bytes, no
    growth), the whole reader leaves them out and says so, and both records are the trainer's alone."""
    from mlflow.entities import Metric

    from grpo_lab.tracker_emit import MlflowWriter, TensorBoardWriter

    values = {"grpo_lab/mixed_now": 0.4, "grpo_lab/expiry_step": 90.0, "grpo_lab/first_stall_median": 70.0}
    client, store = mlflow_client, tmp_path / "mlruns"
    run_id = client.create_run(client.create_experiment("slime"), run_name="slime-run").info.run_id
    client.log_param(run_id, "n_samples_per_prompt", 8)
    rows = _slime_rows()
    for step, row in rows:
        client.log_batch(run_id, metrics=[Metric(k, v, 0, step) for k, v in row.items()])
    follower = LogFollower(str(store), "mlflow")
    clean = follower.refresh()
    w = MlflowWriter(store, run_id)
    w.write(rows[-1][0], values)
    w.alert(rows[-1][0], "grpo-lab", "stall ahead")
    rec = follower.refresh()
    assert follower.change == "unchanged" and follower.bytes_read == 0
    assert set(values) <= set(read_run_scalars(str(store), fmt="mlflow").series)  # they are in the run
    full = read_scalars(str(store), fmt="mlflow")
    _same(rec, full)
    _same(clean, full)

    logdir = tmp_path / "tb"
    shutil.copytree(FIXTURES / "tensorboard" / "trl", logdir)
    follower = LogFollower(str(logdir), "tensorboard")
    follower.refresh()
    step = int(read_scalars(str(logdir), fmt="tensorboard").steps["step"][-1])
    tb = TensorBoardWriter(logdir)
    tb.write(step, values)
    tb.alert(step, "grpo-lab", "stall ahead")
    tb.close()
    rec = follower.refresh()
    assert follower.change == "unchanged" and follower.bytes_read == 0
    assert set(values) <= set(read_run_scalars(str(logdir), fmt="tensorboard").series)
    _same(rec, read_scalars(str(logdir), fmt="tensorboard"))


# --- W&B history exports ---------------------------------------------------------------------------------------------
def _records_after(data: bytes, start: int, stop: int) -> int:
    """Complete CSV records in ``data[start:stop]`` (``start`` a record boundary), counted by the csv module: the
    records of the text up to the last newline after which the csv module's parse of the rest is still open."""
    text = data[start:stop].decode()
    rows = list(csv.reader(io.StringIO(text)))
    complete = len(rows) if text.endswith("\n") and text.count('"') % 2 == 0 else len(rows) - 1
    return max(complete - (1 if start == 0 else 0), 0)  # the header is no record of values


def _grow_csv(tmp_path, data: bytes, cuts) -> LogFollower:
    log = tmp_path / "history.csv"
    log.write_bytes(b"")
    follower = LogFollower(str(log), "wandb", num_generations=8)
    for cut in cuts:
        with open(log, "ab") as fh:
            fh.write(data[log.stat().st_size:cut])
        offset = follower.offsets().get(str(log), 0)
        rec = follower.refresh()
        _same(rec, read_scalars(str(log), fmt="wandb", num_generations=8, partial_ok=True))
        assert follower.bytes_read == cut - offset
        assert follower.rows_parsed == (_records_after(data, offset, cut) if follower.offsets()[str(log)] else 0)
    return follower


def test_a_csv_history_export_is_followed_record_by_record(tmp_path):
    data = (FIXTURES / "wandb_export" / "history.csv").read_bytes()
    cuts = sorted(set(np.linspace(0, len(data), 15).astype(int)[1:].tolist()
                      + [data.index(b"\n") // 2, data.index(b"\n") + 1, len(data) - 3, len(data)]))
    follower = _grow_csv(tmp_path, data, cuts)
    assert follower.kind == "wandb_csv" and len(follower.refresh().steps["step"]) == 30


def test_a_csv_export_with_quoted_newlines_is_cut_only_between_records(tmp_path):
    """A text column whose cells hold commas, quotes and newlines: a record ends at a newline outside quotes, so a
    cut inside a quoted cell waits, as the whole reader leaves it."""
    lines = (FIXTURES / "wandb_export" / "history.csv").read_text().splitlines()
    buf = io.StringIO()
    w = csv.writer(buf)
    for n, row in enumerate(csv.reader(lines)):
        w.writerow([*row, "note" if n == 0 else f'sample {n},\n"quoted"\nend'])
    data = buf.getvalue().encode()
    inside = [i + 3 for i in range(len(data)) if data[i:i + 8] == b'"quoted"'][:6]
    cuts = sorted(set(inside + np.linspace(0, len(data), 9).astype(int)[1:].tolist()))
    follower = _grow_csv(tmp_path, data, cuts)
    _same(follower.refresh(), read_scalars(str(FIXTURES / "wandb_export" / "history.csv"), fmt="wandb",
                                           num_generations=8))


def test_a_json_history_export_is_read_again_only_when_rewritten(tmp_path):
    table = list(csv.DictReader((FIXTURES / "wandb_export" / "history.csv").read_text().splitlines()))
    rows = [{"_step": int(r["Step"]), "group/all_correct_groups_ratio": float(r[
        "roll-run - group/all_correct_groups_ratio"]), "group/all_incorrect_groups_ratio": float(r[
            "roll-run - group/all_incorrect_groups_ratio"])} for r in table]
    log = tmp_path / "history.json"
    follower = LogFollower(str(log.parent / "history.json"), "wandb")
    for n in (10, 20, 30):
        log.write_text(json.dumps(rows[:n]))  # an export is rewritten whole
        rec = follower.refresh()
        assert follower.kind == "wandb_json" and follower.bytes_read == log.stat().st_size
        _same(rec, read_scalars(str(log), fmt="wandb"))
        assert len(rec.steps["step"]) == n
        follower.refresh()
        assert follower.change == "unchanged" and follower.bytes_read == 0


# --- trainer_state.json ----------------------------------------------------------------------------------------------
def _history(n: int, seed: int = 0, start: int = 1) -> list[dict]:
    """log_history rows as TRL's GRPOTrainer logs them (its metric names), steps ``start``.. ``start + n - 1``."""
    rng = np.random.default_rng(seed)
    return [{"loss": float(rng.normal(0, 0.01)), "reward": float(rng.uniform()), "reward_std": float(rng.uniform()),
             "frac_reward_zero_std": float(rng.integers(0, 17) / 16), "epoch": s / 100, "step": s}
            for s in range(start, start + n)]


def _save_state(path: Path, history: list[dict]) -> None:
    """The HF Trainer's own writer: ``TrainerState.save_to_json`` (what ``Trainer._save_checkpoint`` calls)."""
    from transformers import TrainerState

    path.parent.mkdir(parents=True, exist_ok=True)
    TrainerState(global_step=history[-1]["step"], logging_steps=1, train_batch_size=16,
                 log_history=history).save_to_json(str(path))


def test_trainer_state_adds_only_the_new_log_history_rows(tmp_path):
    rows = _history(60)
    state = tmp_path / "out" / "trainer_state.json"
    follower = LogFollower(str(state), "jsonl", num_generations=8)
    for n in (10, 25, 60):
        _save_state(state, rows[:n])
        rec = follower.refresh()
        assert follower.kind == "trainer_state"
        assert follower.rows_parsed == n - (0 if n == 10 else {25: 10, 60: 25}[n])  # the rows past those read
        assert follower.bytes_read == state.stat().st_size  # JSON is parsed whole
        _same(rec, read_scalars(str(state), fmt="jsonl", num_generations=8))
        follower.refresh()
        assert follower.change == "unchanged" and follower.bytes_read == 0
    # resumed from the checkpoint at step 40: the steps after it logged again, with other values
    _save_state(state, rows[:40] + _history(30, seed=1, start=41))
    rec = follower.refresh()
    assert follower.change == "replaced" and "log_history was rewritten" in follower.status
    _same(rec, read_scalars(str(state), fmt="jsonl", num_generations=8))
    assert rec.steps["step"][-1] == 70


def test_an_output_folder_is_followed_through_its_latest_checkpoint(tmp_path):
    rows = _history(30)
    out = tmp_path / "out"
    follower = LogFollower(str(out), "jsonl", num_generations=8)
    for n in (10, 20, 30):
        _save_state(out / f"checkpoint-{n}" / "trainer_state.json", rows[:n])
        rec = follower.refresh()
        assert follower.rows_parsed == 10  # the new checkpoint's rows past the last one's
        full = read_scalars(str(out), fmt="jsonl", num_generations=8)
        _same(rec, full)
        assert f"checkpoint-{n}/trainer_state.json" in " ".join(rec.meta["source"]["notes"])


def test_the_replay_and_the_fleet_list_an_output_folder_by_its_trainer_state(tmp_path):
    """A TRL output folder whose only log is its checkpoints' trainer_state.json is listed for following (the Replay's
    and the fleet's listing); one whose TensorBoard log sits under runs/ is listed by that log alone, once."""
    from grpo_lab.replay.trackers import PREFIX, read_shared, tracker_logs

    rows = _history(30)
    for n in (10, 20):
        _save_state(tmp_path / "trl" / f"checkpoint-{n}" / "trainer_state.json", rows[:n])
    shutil.copytree(FIXTURES / "tensorboard" / "trl", tmp_path / "trl_tb" / "runs" / "May01")
    _save_state(tmp_path / "trl_tb" / "checkpoint-10" / "trainer_state.json", rows[:10])
    found = tracker_logs(tmp_path)
    assert sorted(found) == [f"{PREFIX}trl (trainer_state.json)", f"{PREFIX}trl_tb/runs/May01 (tensorboard)"]
    source = found[f"{PREFIX}trl (trainer_state.json)"]
    rec = read_shared(source)
    _same(rec, read_scalars(source.path, fmt="jsonl"))
    assert rec.steps["step"][-1] == 20
    _save_state(tmp_path / "trl" / "checkpoint-30" / "trainer_state.json", rows)
    assert read_shared(source).steps["step"][-1] == 30
