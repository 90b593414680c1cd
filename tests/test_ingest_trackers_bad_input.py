"""Tracker logs that are damaged, ambiguous or too big: one line on stderr, exit 2, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grpo_lab.testing.cli import run_cli

FIX = Path(__file__).parent / "fixtures" / "trackers"


def refused(tmp_path, path, *args, fragments=()):
    out = tmp_path / "out"
    proc = run_cli("ingest", path, "--out", out, *args)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("grpo-lab ingest: error: "), proc.stderr
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    assert not out.exists()  # nothing half-written
    return lines[0]


def copy(src: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "src" / src.name
    shutil.copytree(src, dest)
    return dest


def one(folder: Path, pattern: str) -> Path:
    (f,) = folder.rglob(pattern)
    return f


def test_a_corrupt_event_file(tmp_path):
    run = copy(FIX / "tensorboard" / "prime", tmp_path)
    f = one(run, "*tfevents*")
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x40
    f.write_bytes(bytes(data))
    refused(tmp_path, run, "--num-generations", "8", fragments=(str(f), "corrupt event record at byte"))


def test_a_truncated_event_file(tmp_path):
    run = copy(FIX / "tensorboard" / "prime", tmp_path)
    f = one(run, "*tfevents*")
    f.write_bytes(f.read_bytes()[:-7])
    refused(tmp_path, run, fragments=("truncated at byte",))


def test_a_file_that_is_not_an_event_file(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    (d / "events.out.tfevents.1.host").write_text("hello, not a TFRecord file at all\n")
    refused(tmp_path, d, fragments=("not a TensorBoard event file",))


def test_a_truncated_and_a_corrupt_wandb_log(tmp_path):
    run = copy(FIX / "wandb", tmp_path)
    f = one(run, "*.wandb")
    good = f.read_bytes()
    f.write_bytes(good[:-9])
    refused(tmp_path, run, fragments=("truncated at byte",))
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x01
    f.write_bytes(bytes(bad))
    refused(tmp_path, run, fragments=("corrupt record at byte",))
    f.write_bytes(b"not a wandb log")
    refused(tmp_path, run, fragments=("not a W&B transaction log",))


def test_a_folder_with_no_known_metric_names(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "tb"))  # TensorBoard's own writer (torch's SummaryWriter wraps it)
    for step in range(3):
        value = summary_pb2.Summary.Value(tag="train/loss", simple_value=1.0 / (step + 1))
        w.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[value])))
    w.close()
    refused(tmp_path, tmp_path / "tb", fragments=("no known trainer metric names", "train/loss", "--trainer"))


def test_a_folder_of_several_runs_without_run(tmp_path):
    line = refused(tmp_path, FIX / "tensorboard", fragments=("holds 3 tensorboard runs", "--run NAME"))
    assert "orlhf, prime, trl" in line
    refused(tmp_path, FIX / "tensorboard", "--run", "nope", fragments=("no run named 'nope'",))


def test_files_over_the_size_cap(tmp_path):
    refused(tmp_path, FIX / "wandb", "--max-mb", "0.001", fragments=("over the size cap",))


def test_an_empty_folder_and_a_mixed_one(tmp_path):
    (tmp_path / "empty").mkdir()
    refused(tmp_path, tmp_path / "empty", fragments=("no tracker files found", "--format trl"))
    mixed = tmp_path / "mixed"
    shutil.copytree(FIX / "jsonl", mixed / "a")
    shutil.copytree(FIX / "wandb", mixed / "b")
    refused(tmp_path, mixed, fragments=("holds wandb and jsonl logs", "--format"))


def test_a_damaged_trackio_store(tmp_path):
    d = tmp_path / "tio"
    d.mkdir()
    (d / "proj.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 2000)
    refused(tmp_path, d, fragments=("not a readable trackio store",))


def test_a_malformed_mlflow_metric_file(tmp_path):
    store = copy(FIX / "mlflow", tmp_path)
    f = one(store, "count_1.0")
    f.write_text(f.read_text() + "this is not a metric line\n")
    refused(tmp_path, store, fragments=("MLflow cannot read it",))


@pytest.mark.parametrize("text, fragment", [
    ('{"step": 1, "env/all/by_group/frac_all_good": 0.1}\n{"step": 2, oops}\n{"step": 3}\n', "line 2: not valid JSON"),
    ('{"step": 1, "env/all/by_group/frac_all_good": 0.1}\n{"step": "two"}\n', "'step' must be an integer"),
    ('{"step": 1, "env/all/by_group/frac_all_good": 0.1}\n{"step": 2, "env/all/by_group/frac_all_go', "a cut last line"),
])
def test_a_bad_metrics_jsonl(tmp_path, text, fragment):
    f = tmp_path / "metrics.jsonl"
    f.write_text(text)
    refused(tmp_path, f, "--num-generations", "8", fragments=(fragment,))


def test_a_history_export_without_a_step_column(tmp_path):
    f = tmp_path / "history.csv"
    f.write_text("epoch,group/all_correct_groups_ratio\n1,0.5\n")
    refused(tmp_path, f, fragments=("no step column",))


def test_run_and_trainer_are_refused_for_a_group_dump(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text('{"step": 0, "prompt_id": "a", "rewards": [1, 0]}\n')
    refused(tmp_path, f, "--run", "x", fragments=("--run, --trainer and --trainer-config are for tracker logs",))


def test_auto_leaves_group_dumps_to_their_readers_and_says_so(tmp_path):
    ingest = Path(__file__).parent / "fixtures" / "ingest"
    refused(tmp_path, ingest / "verl_run", fragments=("looks like a verl rollout dump: use --format verl",))
    refused(tmp_path, ingest / "trl_run", fragments=("no tracker files found", "--format trl"))


def test_a_corrupt_length_field_is_called_corrupt_not_truncated(tmp_path):
    """The second record's length field made huge: the record seems to run past the file's end, but its length
    checksum fails, so the file is corrupt there (it read "truncated" before)."""
    import struct

    run = copy(FIX / "tensorboard" / "prime", tmp_path)
    f = one(run, "*tfevents*")
    data = bytearray(f.read_bytes())
    (first,) = struct.unpack_from("<Q", data, 0)
    head = 16 + first
    data[head + 7] = 0x7F
    f.write_bytes(bytes(data))
    line = refused(tmp_path, run, "--num-generations", "8",
                   fragments=(f"corrupt event record at byte {head}", "length field fails its checksum"))
    assert "truncated" not in line
