"""The lab's upload reads an HF Trainer state as ``grpo-lab ingest`` does (issue #39 item 1): by its content, under
any name, a bare list of its ``log_history`` rows, early TRL names, a zipped output folder whose only log is its
(or its checkpoints') ``trainer_state.json``, whatever upload format is chosen. Each upload's record is checked
against the record the command line writes from the same file (real logs from tests/fixtures/real, and states
written by transformers' own ``TrainerState.save_to_json``)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.replay.upload import load_upload
from grpo_lab.sims.ingest import UPLOAD_FORMATS
from grpo_lab.sims.record import read_record
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.real_logs import real_logs

TRL_REAL = [e for e in real_logs() if e["trainer"] == "trl"]


def _ingested(path: Path, tmp_path: Path, *flags) -> object:
    out = tmp_path / "cli-rec"
    proc = run_cli("ingest", path, "--out", out, *flags)
    assert proc.returncode == 0, proc.stderr
    return read_record(out)


def _same(up, cli) -> None:
    """Same steps (every column, every value), K, trainer, dialect, groups per row and notes."""
    assert up.steps.keys() == cli.steps.keys() and len(cli.steps["step"]) > 0
    for k in cli.steps:
        np.testing.assert_array_equal(up.steps[k], cli.steps[k], err_msg=k)
    assert up.meta.get("num_generations") == cli.meta.get("num_generations")
    a, b = up.meta["source"], cli.meta["source"]
    for key in ("format", "trainer", "dialect", "missing", "groups_per_row", "notes"):
        assert json.loads(json.dumps(a[key])) == json.loads(json.dumps(b[key])), key
    assert len(up.groups["step"]) == 0  # a state holds scalars, not groups


def _zip(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", UPLOAD_FORMATS)
@pytest.mark.parametrize("entry", TRL_REAL, ids=[e["name"] for e in TRL_REAL])
def test_a_real_trainer_state_uploads_as_ingest_reads_it(entry, fmt, tmp_path):
    """training_logs.json (a state under another name) and trainer_state.json, with any format chosen: the TRL
    dialect, the groups per row from the state's own logging_steps and batch, the notes; as the CLI's record."""
    path = entry["path"]
    rec, error = load_upload(path.name, path.read_bytes(), fmt, 0.0)
    assert error == "" and rec is not None
    assert rec.meta["source"]["trainer"] == "trl"  # the group reader left it unnamed
    _same(rec, _ingested(path, tmp_path))


def _save_state(path: Path, history: list, **kw) -> Path:
    from transformers import TrainerState

    path.parent.mkdir(parents=True, exist_ok=True)
    TrainerState(log_history=history, **kw).save_to_json(str(path))
    return path


def _history(rows: int, early: bool) -> list[dict]:
    rng = np.random.default_rng(rows)
    out = []
    for step in range(1, rows + 1):
        row = {"step": step, "reward": float(rng.random()), "reward_std": 0.3, "loss": 0.0}
        if not early:
            row["frac_reward_zero_std"] = float(rng.binomial(12, 0.4)) / 12
        out.append(row)
    return out


def test_early_trl_names_and_a_bare_list_of_rows(tmp_path):
    """Early TRL (reward, reward_std, no zero-std share): read as TRL's, the missing share said, not refused as "no
    known trainer metric names"; a bare list of rows under a made-up name: its lattice read."""
    early = _save_state(tmp_path / "state-early.json", _history(20, early=True))
    rec, error = load_upload(early.name, early.read_bytes(), "trl", 0.0)
    assert error == ""
    assert "frac_reward_zero_std" in rec.meta["source"]["missing"]
    _same(rec, _ingested(early, tmp_path))
    bare = tmp_path / "rows.json"
    bare.write_text(json.dumps(_history(30, early=False)))
    rec, error = load_upload(bare.name, bare.read_bytes(), "jsonl", 0.0)
    assert error == "" and rec.meta["source"]["groups_per_row"]["value"] == 12
    _same(rec, _ingested(bare, tmp_path / "b"))


@pytest.mark.parametrize("fmt", ["trl", "jsonl", "tracker"])
def test_a_zipped_output_folder_reads_its_latest_checkpoint(fmt, tmp_path):
    """``zip -r out.zip grpo-out/`` of a folder of checkpoints: the latest checkpoint's state, said in the notes, as
    ``grpo-lab ingest --format trl grpo-out`` reads the folder."""
    hist = _history(30, early=False)
    out = tmp_path / "grpo-out"
    for n in (9, 30, 10):
        _save_state(out / f"checkpoint-{n}" / "trainer_state.json", hist[:n], logging_steps=1, train_batch_size=12)
    data = _zip({f"grpo-out/{f.relative_to(out).as_posix()}": f.read_bytes() for f in out.rglob("*.json")})
    rec, error = load_upload("grpo-out.zip", data, fmt, 0.0)
    assert error == "" and len(rec.steps["step"]) == 30
    assert any("checkpoint-30/trainer_state.json" in n for n in rec.meta["source"]["notes"])
    _same(rec, _ingested(out, tmp_path, "--format", "trl"))


def test_a_zip_with_completion_logs_stays_a_group_dump(tmp_path):
    """A TRL output folder with completion parquets is a group dump: the state is not read in its place (a broken
    parquet is the TRL reader's error, not a scalars record)."""
    state = _save_state(tmp_path / "trainer_state.json", _history(5, early=False))
    data = _zip({"out/trainer_state.json": state.read_bytes(), "out/completions/completions_00001.parquet": b"nope"})
    rec, error = load_upload("out.zip", data, "trl", 0.0)
    assert rec is None and "parquet" in error.lower()
