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


def _add(app, expect, step, n, steps=False):
    """Append ``n`` groups of ``step`` (and its steps row), remember them in ``expect``, flush."""
    g = _groups(step, n)
    expect.append(g)
    app.append("groups", g)
    if steps:
        app.append("steps", _steps(step))
    app.flush(steps_completed=step)


def _assert_rows(rec, expect):
    for k in expect[0]:
        assert np.array_equal(rec.groups[k], np.concatenate([e[k] for e in expect]))


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
        _add(app, expect, s, 2, steps=True)
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
    _assert_rows(rec, expect)


def test_open_chunks_are_stored_sealed_ones_compressed_and_equal_rows_are_not_rewritten(tmp_path):
    import zipfile

    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=6)
    app.append("groups", _groups(1, 4))
    app.flush()
    app.flush()  # nothing changed: the same open chunk, same bytes, same name
    assert len(list(tmp_path.glob("groups-*.npz"))) == 1
    app.append("groups", _groups(2, 4))
    app.flush()  # 8 rows >= 6: sealed
    app.append("groups", _groups(3, 1))
    app.flush()
    named = {e["name"]: e for e in __import__("json").loads((tmp_path / "run.json").read_text())["files"]["groups"]}
    kinds = []
    for name in named:
        with zipfile.ZipFile(tmp_path / name) as zf:
            kinds.append({i.compress_type for i in zf.infolist()})
    assert kinds == [{zipfile.ZIP_DEFLATED}, {zipfile.ZIP_STORED}]  # the sealed segment, then the open chunk
    rec = read_record(tmp_path)
    _assert_rows(rec, [_groups(1, 4), _groups(2, 4), _groups(3, 1)])


def test_run_json_text_and_frozen_tuples(tmp_path):
    """run.json is json.dumps(meta, indent=2); a tuple value's text is made once and reused while the same tuple
    is passed, and remade for a new one."""
    import json

    from grpo_lab.sims.jsonable import jsonable

    labels = tuple(f"prompt {i} <&>\n" for i in range(5))
    app = RecordAppender(tmp_path, {"n_prompts": 5, "prompt_labels": labels, "config": {"lr": np.float64(0.1)}})
    app.append("groups", _groups(1, 2))
    app.flush(wall_time_s=float("nan"))
    text = (tmp_path / "run.json").read_text()
    meta = json.loads(text)
    assert text == json.dumps(jsonable(meta), indent=2, allow_nan=False) + "\n"
    assert meta["prompt_labels"] == list(labels) and meta["wall_time_s"] is None
    cached = app._json_cache["prompt_labels"][1]
    app.flush(steps_completed=1)
    assert app._json_cache["prompt_labels"][1] is cached  # same tuple: its text reused
    app.flush(prompt_labels=labels + ("new",), n_prompts=6)
    assert json.loads((tmp_path / "run.json").read_text())["prompt_labels"] == [*labels, "new"]


def test_flushes_wait_merged_while_the_writer_is_busy(tmp_path, monkeypatch):
    """A slow disk: the flushes made meanwhile wait as one job (memory of one open chunk, not one per flush),
    and every row still lands."""
    import threading

    import grpo_lab.sims.record_append as ra

    gate, entered = threading.Event(), threading.Event()
    real = ra.atomic_write_bytes

    def slow(path, data, mode=None):
        entered.set()
        gate.wait()
        real(path, data, mode)

    monkeypatch.setattr(ra, "atomic_write_bytes", slow)
    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=4, background=True)
    expect = []
    for s in range(1, 21):
        _add(app, expect, s, 1)
        if s == 1:
            assert entered.wait(30)  # the writer is stuck in the first flush's first write
    with app._cond:
        waiting = app._job
    assert waiting is not None and waiting["meta"]["steps_completed"] == 20
    assert len(waiting["seal"]) == 5  # the merged flushes' segments accumulate (rows 1-4, ..., 17-20)
    gate.set()
    app.close()
    rec = read_record(tmp_path)
    assert rec.meta["steps_completed"] == 20
    _assert_rows(rec, expect)


def test_close_compresses_the_last_open_chunks_once(tmp_path):
    """A finished record's last rows are compressed like its sealed segments; the rows and nothing else remain."""
    import json
    import zipfile

    def kinds():
        files = json.loads((tmp_path / "run.json").read_text())["files"]
        out = []
        for name in [e["name"] for t in ("groups", "steps", "evals") for e in files[t]]:
            with zipfile.ZipFile(tmp_path / name) as zf:
                out.append({i.compress_type for i in zf.infolist()})
        return out, {e["name"] for t in ("groups", "steps", "evals") for e in files[t]}

    app = RecordAppender(tmp_path, {"n_prompts": 10}, segment_rows=6, background=True)
    expect = []
    for step in range(1, 4):
        _add(app, expect, step, 4, steps=True)
        app.evals = {"step": np.array([step]), "pass_rate": np.full((1, 10), 0.5)}
        app.flush()
    app.wait()
    before, _ = kinds()
    assert {zipfile.ZIP_STORED} in before  # open chunks: stored while the run goes on
    app.close()
    after, named = kinds()
    assert after and all(k == {zipfile.ZIP_DEFLATED} for k in after)
    assert {p.name for p in tmp_path.glob("*.npz")} == named
    rec = read_record(tmp_path)
    _assert_rows(rec, expect)
    np.testing.assert_array_equal(rec.evals["pass_rate"], np.full((1, 10), 0.5))
