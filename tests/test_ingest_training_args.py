"""A TRL output folder's ``training_args.bin`` (tests/fixtures/ingest/trl_output, written by TRL's GRPOTrainer:
tests/fixtures/ingest/make_trl_output.py) read without running its pickle: the resolved GRPOConfig's sizes equal
what ``trainer.args`` held at write time, so the checkpoint's trainer_state.json ingests with K, its groups per
logged row from TRL's arithmetic (agreeing with the lattice of the logged shares) and its sizes kept; a pickle
that asks to run code runs nothing; damaged files are one line, and the log is still read."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.ingest.trackers.training_args import SIZE_KEYS, read_training_args

FIX = Path(__file__).parent / "fixtures" / "ingest" / "trl_output"
ARGS = FIX / "run" / "checkpoint-12" / "training_args.bin"


def _truth() -> dict:
    return json.loads((FIX / "settings.json").read_text())


def test_the_resolved_config_equals_the_trainers_args():
    args = read_training_args(ARGS)
    truth = _truth()
    for key in SIZE_KEYS:
        name = "num_processes" if key.endswith("num_processes") else key
        assert args[key] == truth[name], key
    assert args["scale_rewards"] == truth["scale_rewards"] and args["loss_type"] == truth["loss_type"]
    assert args["logging_strategy"] == "steps"  # an enum field as its value


def test_the_output_folder_ingests_with_k_and_its_groups_per_row():
    t = _truth()
    rec = read_scalars(FIX / "run")
    src = rec.meta["source"]
    assert rec.meta["num_generations"] == t["num_generations"]
    per_log = t["generation_batch_size"] / t["num_generations"] * max(
        1, t["logging_steps"] * t["gradient_accumulation_steps"] / (t["steps_per_generation"] * t["num_iterations"]))
    gpr = src["groups_per_row"]
    assert gpr["from"] == "config" and gpr["value"] == per_log and gpr["agree"] is True
    assert not any("--num-generations" in n for n in src["notes"])
    kept = rec.meta["trainer_settings"]["keys"]
    assert kept["num_generations"] == t["num_generations"]
    assert kept["gradient_accumulation_steps"] == t["gradient_accumulation_steps"]


def _pickle_archive(path: Path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("training_args/data.pkl", payload)
        zf.writestr("training_args/version", "3\n")


class _Runs:
    """A pickle that, loaded by pickle.load, would create a file: ``__reduce__`` names pathlib.Path.touch."""

    def __init__(self, target: str):
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


class Config:
    """A config object as torch.save pickles one: its class named, its fields as state."""

    def __init__(self, target: str):
        self.num_generations = 8
        self.logging_steps = 5
        self.evil = _Runs(target)
        self.hub_token = "hf_not_kept"


def test_a_pickle_that_asks_to_run_code_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    payload = pickle.dumps(Config(str(marker)))
    pickle.loads(payload)  # the payload is real: plain pickle runs it
    assert marker.exists()
    marker.unlink()
    f = tmp_path / "training_args.bin"
    _pickle_archive(f, payload)
    args = read_training_args(f)
    assert not marker.exists()
    assert args == {"num_generations": 8, "logging_steps": 5}  # no secret kept, the stand-in for the code dropped
    with pytest.raises(InputError, match="holds no config fields"):  # a bare dict is no config object
        _pickle_archive(f, pickle.dumps({"num_generations": 8}))
        read_training_args(f)


def test_damaged_files_are_one_line_and_the_log_is_still_read(tmp_path):
    bad = tmp_path / "training_args.bin"
    bad.write_bytes(b"\x80\x02not a zip")
    with pytest.raises(InputError, match="not a zip archive"):
        read_training_args(bad)
    _pickle_archive(bad, ARGS.read_bytes()[:10])
    with pytest.raises(InputError, match="its pickle cannot be read"):
        read_training_args(bad)
    with zipfile.ZipFile(ARGS) as zf:
        name = next(n for n in zf.namelist() if n.endswith("data.pkl"))
        good = zf.read(name)
    _pickle_archive(bad, good[: len(good) // 2])
    with pytest.raises(InputError, match="its pickle cannot be read"):
        read_training_args(bad)
    run = tmp_path / "out" / "checkpoint-12"
    run.mkdir(parents=True)
    shutil.copy(FIX / "run" / "checkpoint-12" / "trainer_state.json", run)
    shutil.copy(bad, run / "training_args.bin")
    rec = read_scalars(tmp_path / "out")
    assert rec.meta["num_generations"] is None
    assert any("sizes not read from it" in n for n in rec.meta["source"]["notes"])
