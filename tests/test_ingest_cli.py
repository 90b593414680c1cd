"""`grpo-lab ingest`: the --json report (read, skipped, inferred, warnings), weights by name, the progress hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpo_lab.cli import main
from grpo_lab.sims.ingest import ingest

FIX = Path(__file__).parent / "fixtures" / "ingest"
TRL = FIX / "trl_matrix"
VERL = FIX / "verl_matrix"


def _json(capsys, *argv):
    assert main(["ingest", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_says_what_was_read_skipped_and_inferred(tmp_path, capsys):
    out = _json(capsys, TRL / "steps_per_generation" / "run", "--format", "trl", "--out", tmp_path / "r")
    assert out["groups"] == 12
    assert len(out["read"]) == 1 + 3 and len(out["skipped"]) == 3  # trainer_state + 3 new batches; 3 repeats
    assert all("repeats the generation batch" in s["why"] for s in out["skipped"])
    assert out["inferred"]["num_generations"]["value"] == 4
    assert out["inferred"]["reward_columns"]["value"] == ["correct", "short"]
    assert out["inferred"]["scale_rewards"]["value"] == ["group"]
    assert out["reward"]["classified"] == "training reward"
    assert any("counted once" in n for n in out["notes"])
    # inspect --json shows the same notes from the written record
    assert main(["inspect", str(tmp_path / "r"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["notes"] == out["notes"] and again["reward_classified"] == "training reward"


def test_weights_by_name_and_in_reward_funcs_order_agree(tmp_path, capsys):
    by_name = _json(capsys, TRL / "reward_weights" / "run", "--format", "trl", "--out", tmp_path / "a",
                    "--reward-weights", "correct=1,short=0.25")
    by_order = _json(capsys, TRL / "reward_weights" / "run", "--format", "trl", "--out", tmp_path / "b",
                     "--reward-weights", "0.25,1")
    for key in ("frac_reward_zero_std", "frac_all_pass", "frac_all_fail", "reward_mean"):
        assert by_name[key] == by_order[key]
    assert by_name["warnings"] == [] and by_order["warnings"] == []


def test_unknown_weight_name_is_one_line(tmp_path, capsys):
    code = main(["ingest", str(TRL / "reward_weights" / "run"), "--format", "trl", "--out", str(tmp_path / "c"),
                 "--reward-weights", "correct=1,length=0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'length'" in err[0]


def test_text_output_names_the_reward_and_the_warnings(tmp_path, capsys):
    assert main(["ingest", str(VERL / "dapo" / "run"), "--format", "verl", "--out", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert "classified by the training reward: score + overlong_reward" in text
    assert "by correctness score (score):" in text


class _Counter:
    def __init__(self):
        self.total = 0

    def update(self, n):
        self.total += n


@pytest.mark.parametrize("fmt,path", [("trl", TRL / "plain" / "run"), ("verl", VERL / "naive" / "run")])
def test_progress_hook_sees_every_byte_read(fmt, path):
    counter = _Counter()
    ingest(path, fmt, progress=counter)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    assert counter.total == size
    ingest(path, fmt, progress="tqdm")  # the bar itself (stderr, shown only on long ingests)
