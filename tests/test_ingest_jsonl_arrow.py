"""The plain JSONL format read column-wise by pyarrow gives the record the line-by-line reader gives."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_lab.sims.ingest import ingest, jsonl_arrow
from grpo_lab.sims.ingest import jsonl as jsonl_mod


def _both(path, monkeypatch, **kw):
    """(pyarrow record, line-reader record, whether pyarrow read every file)."""
    calls = []
    real = jsonl_arrow.read_groups
    monkeypatch.setattr(jsonl_mod, "read_groups", lambda *a: calls.append(r := real(*a)) or r)
    fast = ingest(path, "jsonl", **kw)
    monkeypatch.setattr(jsonl_mod, "read_groups", lambda *a: None)
    slow = ingest(path, "jsonl", **kw)
    return fast, slow, bool(calls) and all(c is not None for c in calls)


def _same(a, b):
    for k in b.groups:
        np.testing.assert_array_equal(a.groups[k], b.groups[k])
        assert a.groups[k].dtype == b.groups[k].dtype, k
    for k in b.steps:
        np.testing.assert_array_equal(a.steps[k], b.steps[k])
    assert a.meta == b.meta


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_every_field_and_shape(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    rows = []
    for i in range(300):
        G = int(rng.integers(1, 6))
        row = {"step": int(i // 40), "prompt_id": f"p{int(rng.integers(0, 50))}",
               "rewards": [None if rng.random() < 0.05 else float(rng.integers(0, 2)) for _ in range(G)]}
        if rng.random() < 0.5:
            row["advantages"] = [float(x) for x in rng.normal(size=G)]
        if rng.random() < 0.3:
            row["lengths"] = [int(x) for x in rng.integers(1, 99, G)]
        if rng.random() < 0.2:
            row["kept"] = bool(rng.random() < 0.5)
        if rng.random() < 0.3:
            row["prompt"] = f"What is {i} <b>+</b> 1?"
        row["extra"] = {"nested": [[1, 2], {"a": None}]}
        rows.append(row)
    rows.insert(5, "")  # a blank line
    fast, slow, arrow = _both(_write(tmp_path / "g.jsonl", rows), monkeypatch, tolerance=0.1)
    assert arrow
    assert fast.meta["num_generations"] is None and fast.groups["rewards"].shape == (300, 5)
    _same(fast, slow)


def test_integer_ids_boolean_rewards_and_a_folder_of_files(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    _write(run / "a.jsonl", [{"step": s, "prompt_id": s % 3, "rewards": [True, s % 2 == 0, False]} for s in range(9)])
    _write(run / "b.jsonl", [{"step": 9 + s, "prompt_id": str(s % 4), "rewards": [1, 0, 1], "lengths": [3, 4, 5]}
                             for s in range(6)])  # "1" and 1 are different prompts
    fast, slow, arrow = _both(run, monkeypatch)
    assert arrow and fast.n_prompts == 7 and fast.meta["num_generations"] == 3
    assert "advantages" in fast.meta["missing"] and "lengths" not in fast.meta["missing"]
    _same(fast, slow)


@pytest.mark.parametrize("odd", [
    {"step": 2, "data": {"loss": 0.5}},  # a scalar line
    {"step": 2, "prompt_id": 7, "rewards": [1, 0]},  # an integer id in a file of text ids
    {"step": 2, "prompt_id": "q", "rewards": [1, True]},  # numbers and booleans in one list
    {"step": 2, "prompt_id": "q", "rewards": [1, 0], "prompt": 5},  # a prompt that is not text
])
def test_what_pyarrow_does_not_take_is_read_line_by_line(tmp_path, monkeypatch, odd):
    rows = [{"step": 1, "prompt_id": "p", "rewards": [0, 1]}, odd, {"step": 3, "prompt_id": "p", "rewards": [1, 1]}]
    fast, slow, arrow = _both(_write(tmp_path / "g.jsonl", rows), monkeypatch)
    assert not arrow
    _same(fast, slow)


@pytest.mark.parametrize("bad, message", [
    ({"step": 1.5, "prompt_id": "q", "rewards": [1]}, "'step' must be an integer"),
    ({"step": 1, "prompt_id": "q", "rewards": []}, "'rewards' must be a non-empty list"),
    ({"step": 1, "prompt_id": "q", "rewards": [1, 0], "advantages": [0.5]}, "'advantages' must be a list as long"),
    ({"step": 1, "prompt_id": "q", "rewards": [1, 0], "lengths": [3, None]}, "'lengths': expected a list of integers"),
    ({"step": -1, "prompt_id": "q", "rewards": [1]}, "'step' must be an integer >= 0"),
    ('{"step": 1, "prompt_id": "q", "rewards": [1]', "not valid JSON"),
])
def test_bad_lines_are_named_by_the_line_reader(tmp_path, bad, message):
    from grpo_lab.sims.errors import InputError

    path = _write(tmp_path / "g.jsonl", [{"step": 0, "prompt_id": "p", "rewards": [0, 1]}, bad])
    with pytest.raises(InputError, match=f"g.jsonl line 2: .*{message}" if "JSON" not in message else "line 2: not valid JSON"):
        ingest(path, "jsonl")
