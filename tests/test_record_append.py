"""RecordAppender: a record written chunk by chunk reads back as the rows appended, after every flush."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record
from grpo_lab.sims.record_append import RecordAppender


def _groups(step, n, G=4, seed=0):
    rng = np.random.default_rng(seed + step)
    return {"step": np.full(n, step, np.int64), "prompt_id": rng.integers(0, 10, n).astype(np.int64),
            "rewards": rng.integers(0, 2, (n, G)).astype(float), "advantages": rng.normal(size=(n, G)),
            "lengths": np.full((n, G), 3, np.int64), "kept": np.ones(n, bool)}


def _steps(step):
    return {"step": np.array([step], np.int64), "reward_mean": np.array([step / 10])}


def test_rows_read_back_in_order_across_sealed_segments(tmp_path):
    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=5)
    expect = []
    for s in range(1, 8):
        g = _groups(s, 3)
        app.append("groups", g)
        app.append("steps", _steps(s))
        expect.append(g)
        app.flush(steps_completed=s)
        rec = read_record(tmp_path)
        for k in g:
            assert np.array_equal(rec.groups[k], np.concatenate([e[k] for e in expect]))
        assert list(rec.steps["step"]) == list(range(1, s + 1))
        assert rec.meta["steps_completed"] == s
    # sealed segments: 21 rows in segments of >= 5 rows; the open chunk is all that gets rewritten
    files = sorted(p.name for p in tmp_path.glob("groups-*.npz"))
    assert len(files) == len(app.sealed["groups"]) + 1 >= 4
    assert sum(len(v) for v in app.open["groups"][0].values()) < 5 * 6  # holds one segment's rows at most


def test_pending_rows_are_written_but_replaceable(tmp_path):
    app = RecordAppender(tmp_path, {"n_prompts": 10})
    app.append("groups", _groups(1, 2))
    pend = _groups(2, 2)
    app.flush({"groups": pend})
    assert len(read_record(tmp_path).groups["step"]) == 4
    pend["step"][:] = 3
    app.flush({"groups": pend})
    rec = read_record(tmp_path)
    assert list(rec.groups["step"]) == [1, 1, 3, 3]
    app.flush({"groups": pend})
    assert len(list(tmp_path.glob("groups-*.npz"))) == 1  # the replaced chunk file is gone one flush later


def test_earlier_record_files_in_the_directory_are_replaced(tmp_path):
    (tmp_path / "groups-0123456789abcdef.npz").write_bytes(b"old")
    app = RecordAppender(tmp_path, {"n_prompts": 10})
    app.append("groups", _groups(1, 1))
    app.flush()
    assert not (tmp_path / "groups-0123456789abcdef.npz").exists()


def test_a_damaged_chunk_is_named(tmp_path):
    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=1)
    for s in (1, 2):
        app.append("groups", _groups(s, 1))
        app.flush()
    victim = sorted(tmp_path.glob("groups-*.npz"))[0]
    victim.write_bytes(victim.read_bytes()[:-5])
    with pytest.raises(InputError, match="checksum"):
        read_record(tmp_path)


def test_background_writer_lands_every_row(tmp_path):
    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=4, background=True)
    expect = []
    for s in range(1, 30):
        g = _groups(s, 2)
        expect.append(g)
        app.append("groups", g)
        app.append("steps", _steps(s))
        app.flush(steps_completed=s)
        if s == 1:
            app.wait()  # run.json exists from the first write on
        rec = read_record(tmp_path)  # consistent while the writer is busy
        assert len(rec.groups["step"]) == 2 * rec.meta["steps_completed"] <= 2 * s
    app.close()
    rec = read_record(tmp_path)
    assert rec.meta["steps_completed"] == 29
    named = {e["name"] for t in ("groups", "steps") for e in __import__("json").loads(
        (tmp_path / "run.json").read_text())["files"][t]}
    assert {p.name for p in tmp_path.glob("*.npz")} == named  # a closed record holds only what it names
    for k in expect[0]:
        assert np.array_equal(rec.groups[k], np.concatenate([e[k] for e in expect]))
