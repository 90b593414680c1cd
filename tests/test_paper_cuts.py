"""Paper cuts a newcomer with the wheel hit (#34 item 10), each held by a test: the rerun without torch says one
line; ``table`` prints one number format per column; random bytes are called what they are; the samplers'
expiry is said in steps or "beyond the run"; a JSONL ingest without evaluations writes no evaluations file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.doctor_report.samplers import samplers_text
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.record import read_record
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.no_torch import NO_TORCH

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"

#: torch made unimportable in a fresh interpreter (as tests/test_core_without_torch.py does)
BLOCK = NO_TORCH + """
import runpy
sys.argv = ['reproduce', *sys.argv[1:]]
runpy.run_module('grpo_lab.train.reproduce', run_name='__main__')
"""


@pytest.mark.parametrize("run", ["broad-g4-dr_grpo-lr0.0008-s1", "no-such-run"])
def test_reproduce_without_torch_prints_one_line(run):
    res = subprocess.run([sys.executable, "-c", BLOCK, run, "--steps", "1"], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert res.returncode == 2, (res.stdout, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr and lines[0].startswith("reproduce: error: "), res.stderr
    if run.startswith("no-such"):  # a bad path is said as such, before any word about torch
        assert "torch" not in lines[0].lower(), lines[0]
    else:
        assert "needs PyTorch" in lines[0] and "grpo-lab[train]" in lines[0], lines[0]


FIXED, SCI = re.compile(r"-?\d+\.\d{6}"), re.compile(r"-?\d\.\d{4}e[+-]\d{2,3}")


def test_table_uses_one_number_format_per_column():
    res = run_cli("table", "--K", "4", "8", "64", "--p", "0.5", "0.9", "0.99")
    assert res.returncode == 0, res.stderr
    head, *rows = [line.split() for line in res.stdout.strip().splitlines()]
    assert len(rows) == 9
    for i, name in enumerate(head):
        cells = [r[i] for r in rows]
        if name in ("p", "K", "rho"):
            continue
        kinds = {"fixed" if FIXED.fullmatch(c) else "sci" if SCI.fullmatch(c) else c for c in cells}
        assert len(kinds) == 1 and kinds <= {"fixed", "sci"}, (name, cells)
    # the column of all-fail probabilities spans 0.0625 to 1e-128: scientific, and the values are the core's
    col = [float(r[head.index("p_all_fail")]) for r in rows]
    want = [(1 - p) ** K for K in (4, 8, 64) for p in (0.5, 0.9, 0.99)]
    np.testing.assert_allclose(col, want, rtol=1e-4)


@pytest.mark.parametrize("name", ["random.jsonl", "random.bin"])
def test_random_bytes_are_not_called_a_pickle(tmp_path, name):
    f = tmp_path / name
    f.write_bytes(bytes([0xC3, 0x28]) + np.random.default_rng(0).integers(1, 256, 500, dtype=np.uint8).tobytes())
    res = run_cli("ingest", f, "--format", "jsonl", "--out", tmp_path / "out")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    err = res.stderr
    assert "refusing a pickle" not in err and "pickle/torch/numpy object file" not in err, err
    if name.endswith(".bin"):  # refused by its name, which is said as such
        assert "a file named .bin" in err, err
    else:
        assert "a binary file" in err, err


def test_samplers_expiry_is_in_steps_or_beyond_the_run():
    d = diagnose(read_record(FIX / "doctor" / "trainer-cap3"))
    lines = samplers_text(d["samplers"])
    assert "expires at t" not in "\n".join(lines) and " t " not in "\n".join(lines[1:])
    steps = d["run"]["steps"]
    for line, r in zip(lines[2:], d["samplers"]["rows"]):
        t = r["expiry_t"]
        said = ("beyond the run" if t is None else "already below" if t == 0 else
                f"after {t * steps:,.0f} steps" if t <= 1 else f"beyond the run ({t * steps:,.0f} steps)")
        assert said in line, (line, t)
        assert not re.search(r"(?<![\w.])-0(?![\w.])", line), line


def test_jsonl_ingest_without_evaluations_writes_no_evaluations_file(tmp_path):
    res = run_cli("ingest", FIX / "ingest" / "plain.jsonl", "--format", "jsonl", "--out", tmp_path / "run")
    assert res.returncode == 0, res.stderr
    assert "missing: " in res.stdout and "evals" in res.stdout.split("missing: ")[1]
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "run").iterdir()) == ["groups", "run.json", "steps"]
    rec = read_record(tmp_path / "run")  # and it reads back, with no evaluations
    assert rec.evals == {} and len(rec.groups["step"]) > 0
