"""Untrusted input: every defect is one line on stderr and exit status 2, naming the file and line/row."""

from __future__ import annotations

import io
import pickle
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.testing.cli import run_cli
from grpo_lab.sims.ingest import ingest_upload

FIX = Path(__file__).parent / "fixtures" / "ingest"


def ingest_cli(*argv):
    """``grpo-lab ingest ARGV...`` in process: (exit code, stderr)."""
    proc = run_cli("ingest", *argv)
    return proc.returncode, proc.stderr


def assert_one_line_error(code, err, *fragments):
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grpo-lab ingest: error: "), err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])


def test_malformed_json_line_names_the_line(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text('{"step": 0, "prompt_id": "a", "rewards": [1, 0]}\n\n{"step": 1, "prompt_id": "a", "rewards": [1, 0\n')
    code, err = ingest_cli(f, "--format", "jsonl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "g.jsonl line 3", "not valid JSON")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("line,fragment", [
    ('{"step": 2, "prompt_id": "a"}', "line 2: missing 'rewards'"),
    ('{"step": -1, "prompt_id": "a", "rewards": [1]}', "line 2: 'step' must be an integer"),
    ('{"step": 2, "prompt_id": "a", "rewards": [1, "yes"]}', "line 2: 'rewards': expected a number"),
    ('{"step": 2, "prompt_id": "a", "rewards": [1, 0], "advantages": [1]}', "line 2: 'advantages'"),
    ('[1, 2, 3]', "line 2: expected a JSON object"),
])
def test_bad_group_lines(tmp_path, line, fragment):
    f = tmp_path / "g.jsonl"
    f.write_text('{"step": 1, "prompt_id": "a", "rewards": [1, 0]}\n' + line + "\n")
    code, err = ingest_cli(f, "--format", "jsonl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, fragment)


def test_verl_line_missing_key(tmp_path):
    d = tmp_path / "rollouts"
    d.mkdir()
    (d / "1.jsonl").write_text('{"input": "q", "output": "a", "score": 1, "step": 1}\n{"input": "q", "step": 1}\n')
    code, err = ingest_cli(d, "--format", "verl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "1.jsonl line 2", "missing 'score'")


def test_trl_parquet_missing_column_and_bad_group_size(tmp_path):
    comp = tmp_path / "out" / "completions"
    comp.mkdir(parents=True)
    pq.write_table(pa.table({"step": [1, 1], "completion": ["x", "y"], "r": [1.0, 0.0]}),
                   comp / "completions_00001.parquet")
    code, err = ingest_cli(tmp_path / "out", "--format", "trl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "completions_00001.parquet", "missing column 'prompt'")
    code, err = ingest_cli(FIX / "trl_run", "--format", "trl", "--out", tmp_path / "r2", "--num-generations", "3")
    assert_one_line_error(code, err, "not a multiple of num_generations = 3")
    code, err = ingest_cli(FIX / "trl_run", "--format", "trl", "--out", tmp_path / "r3",
                        "--reward-columns", "correct,nope")
    assert_one_line_error(code, err, "missing reward column 'nope'")


@pytest.mark.parametrize("path,fmt,fragment", [
    ("verl_run", "jsonl", "looks like a verl rollout dump: use --format verl"),
    ("plain.jsonl", "verl", "looks like the plain group format: use --format jsonl"),
    ("verl_run", "trl", "not a TRL output folder"),
    ("trl_run", "verl", "no verl rollout dumps"),
])
def test_wrong_format_is_named(tmp_path, path, fmt, fragment):
    code, err = ingest_cli(FIX / path, "--format", fmt, "--out", tmp_path / "r")
    assert_one_line_error(code, err, fragment)


def test_parquet_given_as_jsonl_is_named(tmp_path):
    src = FIX / "trl_run" / "completions" / "completions_00001.parquet"
    code, err = ingest_cli(src, "--format", "jsonl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "not UTF-8 text", "a parquet file")


def test_over_the_size_cap(tmp_path):
    size = (FIX / "plain.jsonl").stat().st_size
    code, err = ingest_cli(FIX / "plain.jsonl", "--format", "jsonl", "--out", tmp_path / "r",
                        "--max-mb", str(size / 2 / 1024 / 1024))
    assert_one_line_error(code, err, "size cap")
    code, err = ingest_cli(FIX / "trl_run", "--format", "trl", "--out", tmp_path / "r", "--max-mb", "0.02")
    assert_one_line_error(code, err, "size cap")
    with pytest.raises(InputError, match="size cap"):
        ingest_upload("g.jsonl", b"x" * 101, "jsonl", max_bytes=100)


def test_zip_member_expanding_past_the_cap_is_stopped():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/big.jsonl", b" " * 5_000_000)
    data = buf.getvalue()
    assert len(data) < 100_000
    with pytest.raises(InputError, match="size cap"):
        ingest_upload("run.zip", data, "jsonl", max_bytes=1_000_000)


class _Trap:
    """Unpickling this would create the marker file: proof that nothing was unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.mark.parametrize("name,fmt", [("run.jsonl", "jsonl"), ("state.pkl", "trl"), ("1.jsonl", "verl"),
                                      ("training_args.bin", "trl")])
def test_pickle_is_refused_without_being_unpickled(tmp_path, name, fmt):
    marker = tmp_path / "UNPICKLED"
    f = tmp_path / name
    f.write_bytes(pickle.dumps(_Trap(str(marker)), protocol=4))
    code, err = ingest_cli(f, "--format", fmt, "--out", tmp_path / "r")  # in process: no traceback escapes
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "pickle" in err
    assert not marker.exists()
    with pytest.raises(InputError, match="pickle"):
        ingest_upload(name, f.read_bytes(), fmt)
    assert not marker.exists()


def test_existing_record_is_not_overwritten(tmp_path):
    out = tmp_path / "r"
    assert ingest_cli(FIX / "plain.jsonl", "--format", "jsonl", "--out", out)[0] == 0
    before = (out / "run.json").read_bytes()
    code, err = ingest_cli(FIX / "verl_run", "--format", "verl", "--out", out)
    assert_one_line_error(code, err, "already holds a run record", "--force")
    assert (out / "run.json").read_bytes() == before


def test_bad_options(tmp_path):
    code, err = ingest_cli(FIX / "plain.jsonl", "--format", "jsonl", "--out", tmp_path / "r", "--tolerance", "-1")
    assert_one_line_error(code, err, "--tolerance")
    code, err = ingest_cli(FIX / "trl_run", "--format", "trl", "--out", tmp_path / "r", "--reward-weights", "1")
    assert_one_line_error(code, err, "--reward-weights gives 1 weights for 2 reward columns")
    code, err = ingest_cli(tmp_path / "nothing", "--format", "jsonl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "does not exist")


def test_deeply_nested_json_is_one_line(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text('{"step": 1, "prompt_id": "a", "rewards": [1, 0]}\n' + "[" * 200_000 + "]" * 200_000 + "\n")
    code, err = ingest_cli(f, "--format", "jsonl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "g.jsonl line 2")
    state = tmp_path / "trainer_state.json"
    state.write_text('{"log_history": ' + "[" * 200_000 + "]" * 200_000 + "}")
    code, err = ingest_cli(state, "--format", "trl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "trainer_state.json", "not valid JSON")


def test_missing_pyarrow_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, err = ingest_cli(FIX / "trl_run", "--format", "trl", "--out", tmp_path / "r")
    assert_one_line_error(code, err, "needs pyarrow", "grpo-lab[ingest]")
