"""A group larger than any trainer makes is refused at ingest, with one line naming the limit and ``--max-group``
(grpo_lab.sims.ingest.common.check_group, issue #35: a one-line JSONL of 4.7 million rewards was one group).

Every reader is covered: plain JSONL read column-wise (the command line) and line by line (an upload, under a
reading budget), TRL and verl (their group size given as ``--num-generations``); the limit itself is exact
(4,096 read, 4,097 refused) and ``--max-group`` raises it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import MAX_GROUP, ingest, ingest_upload
from grpo_lab.sims.ingest.budget import Budget, use_budget
from grpo_lab.testing.cli import run_cli

FIX = Path(__file__).parent / "fixtures" / "ingest"


def one_group(width: int, step: int = 0) -> bytes:
    return (b'{"step": %d, "prompt_id": "p", "rewards": [' % step
            + b",".join(b"1" if i % 2 else b"0" for i in range(width)) + b"]}\n")


def one_line_error(*argv) -> str:
    proc = run_cli("ingest", *map(str, argv))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    return lines[0]


def test_the_issue_s_one_line_of_4_7_million_rewards_is_refused_in_one_line(tmp_path):
    f = tmp_path / "huge.jsonl"
    f.write_bytes(one_group(4_700_000))
    line = one_line_error(f, "--format", "jsonl", "--out", tmp_path / "r")
    assert "huge.jsonl line 1" in line and "4,700,000 rollouts" in line
    assert f"limit of {MAX_GROUP:,}" in line and "--max-group" in line
    assert not (tmp_path / "r").exists()


def test_the_limit_is_exact_and_the_flag_raises_it(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_bytes(one_group(MAX_GROUP) + one_group(MAX_GROUP + 1, step=1))
    assert "line 2" in one_line_error(f, "--format", "jsonl", "--out", tmp_path / "r")
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(one_group(MAX_GROUP))
    assert ingest(ok, "jsonl").groups["rewards"].shape == (1, MAX_GROUP)
    rec = ingest(f, "jsonl", max_group=MAX_GROUP + 1)
    assert rec.groups["rewards"].shape == (2, MAX_GROUP + 1)
    assert run_cli("ingest", str(f), "--format", "jsonl", "--out", str(tmp_path / "r2"), "--max-group",
                   str(MAX_GROUP + 1)).returncode == 0
    assert "--max-group must be a positive integer" in one_line_error(f, "--format", "jsonl", "--max-group", "0",
                                                                      "--out", tmp_path / "r3")


def test_an_upload_read_line_by_line_is_refused_too():
    with use_budget(Budget(max_rows=1_000_000, max_seconds=60)), pytest.raises(InputError) as err:
        ingest_upload("big.jsonl", one_group(MAX_GROUP + 1), "jsonl")
    assert "big.jsonl line 1" in str(err.value) and "--max-group" in str(err.value)


@pytest.mark.parametrize("fmt, run", [("trl", FIX / "trl_run"), ("verl", FIX / "verl_matrix" / "naive" / "run")])
def test_trl_and_verl_groups_past_the_limit_are_refused(tmp_path, fmt, run):
    line = one_line_error(run, "--format", fmt, "--num-generations", MAX_GROUP + 8, "--out", tmp_path / "r")
    assert f"{MAX_GROUP + 8:,} rollouts" in line and "--max-group" in line
