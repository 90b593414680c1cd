"""Following a growing tracker log reads only what was appended (sims/ingest/trackers/follow.py) and equals a full
read.

The logs are the fixtures the real libraries wrote (tests/fixtures/trackers/make_fixtures.py: tensorboard, wandb
offline, trackio, a tinker-cookbook metrics.jsonl), grown as their writers grow them: the file's bytes landing in
pieces cut anywhere (mid-record, mid-line), the trackio store's rows inserted. After every piece the follower's
record equals ``read_scalars`` of the files as they stand, and what it read is counted: the bytes from where its
last complete record ended to the file's end, and the records, lines or rows in them counted independently.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.replay import trackers as lab_trackers
from grpo_lab.replay.trackers import TrackerFollower, TrackerSource, read_shared
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.ingest.trackers.follow import LogFollower
from grpo_lab.sims.ingest.trackers.tensorboard import _frame
from grpo_lab.sims.ingest.trackers.wandb import _payloads
from grpo_lab.testing.follow_check import assert_same_scalars

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"


_same = assert_same_scalars


def _records_in(fmt: str, data: bytes, start: int, stop: int) -> int:
    """Complete records of ``data[:stop]`` that end after ``start``, counted by the whole-file framers."""
    if fmt == "jsonl":  # a line is complete with its newline, or as a whole JSON object without one
        *done, tail = data[start:stop].split(b"\n")
        try:
            whole = isinstance(json.loads(tail), dict)
        except ValueError:
            whole = False
        return sum(1 for line in done if line.strip()) + whole
    if fmt == "tensorboard":
        starts, lengths = _frame(data[:stop], "x", True)
        return int(np.sum(starts - 12 >= start))
    return sum(1 for offset, _, _ in _payloads(data[:stop], "x", True) if offset >= start)


CASES = [("jsonl", FIXTURES / "jsonl", "metrics.jsonl"),
         ("tensorboard", FIXTURES / "tensorboard" / "trl", None),
         ("wandb", next((FIXTURES / "trl_wandb").iterdir()), None),
         ("wandb", next((FIXTURES / "wandb").iterdir()), None)]


@pytest.mark.parametrize("fmt,src,name", CASES, ids=["jsonl", "tensorboard", "wandb-trl", "wandb-verl"])
def test_each_refresh_reads_only_the_appended_bytes_and_equals_a_full_read(tmp_path, fmt, src, name):
    root = tmp_path / "run"
    shutil.copytree(src, root)
    if name is None:
        name = next(p for p in root.iterdir() if p.is_file() and ("tfevents" in p.name or p.suffix == ".wandb")).name
    log = root / name
    data = log.read_bytes()
    log.write_bytes(b"")
    # the run's other files, whole from the start (TensorBoard's hparams subfolder): read once, at the first refresh
    others = [f.read_bytes() for f in root.rglob("*tfevents*") if f != log] if fmt == "tensorboard" else []
    follower = LogFollower(str(root if fmt != "jsonl" else log), fmt)
    cuts = sorted(set(np.linspace(0, len(data), 11).astype(int)[1:].tolist() + [len(data)]))
    prev = 0
    total_rows = 0
    for cut in cuts:
        with open(log, "ab") as fh:
            fh.write(data[os.path.getsize(log):cut])
        offset = follower.offsets().get(str(log), 0)
        try:
            full = read_scalars(str(root if fmt != "jsonl" else log), fmt=fmt, partial_ok=True)
        except InputError as exc:  # the first rows name no trainer metric yet (TRL's timings come first): so does
            with pytest.raises(InputError, match=re.escape(str(exc)[:60])):  # the follower, and it reads on
                follower.refresh()
        else:
            _same(follower.refresh(), full)
        first = sum(len(o) for o in others) if cut == cuts[0] else 0
        assert follower.bytes_read == cut - offset + first  # from the end of the last whole record, no more
        assert offset >= 0 and offset <= prev
        first = sum(_records_in(fmt, o, 0, len(o)) for o in others) if cut == cuts[0] else 0
        assert follower.rows_parsed == _records_in(fmt, data, offset, cut) + first
        total_rows += follower.rows_parsed
        prev = cut
    every = _records_in(fmt, data, 0, len(data)) + sum(_records_in(fmt, o, 0, len(o)) for o in others)
    assert total_rows == every  # every record parsed once in all
    assert follower.refresh() is not None and follower.bytes_read == 0 and follower.change == "unchanged"


def test_a_trackio_store_is_followed_by_row_id(tmp_path):
    db = tmp_path / "miles.db"
    shutil.copy(FIXTURES / "trackio" / "miles.db", db)
    whole = read_scalars(str(db), fmt="trackio")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT * FROM metrics WHERE id > 10 ORDER BY id").fetchall()
    cols = [d[0] for d in conn.execute("SELECT * FROM metrics").description]
    conn.execute("DELETE FROM metrics WHERE id > 10")
    conn.commit()
    follower = LogFollower(str(db), "trackio")
    assert len(follower.refresh().steps["step"]) == 10 and follower.rows_parsed == 10
    for chunk in (rows[:7], rows[7:]):
        conn.executemany(f"INSERT INTO metrics ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", chunk)
        conn.commit()
        rec = follower.refresh()
        assert follower.rows_parsed == len(chunk)  # only the rows inserted since
        _same(rec, read_scalars(str(db), fmt="trackio"))
    conn.close()
    _same(rec, whole)


def _jsonl(tmp_path, n: int) -> Path:
    d = tmp_path / "exp"
    d.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "jsonl" / "config.json", d / "config.json")
    lines = (FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()
    (d / "metrics.jsonl").write_text("".join(line + "\n" for line in lines[:n]))
    return d / "metrics.jsonl"


def test_a_finished_jsonl_without_a_last_newline_keeps_its_last_row_and_a_cut_line_waits(tmp_path):
    log = _jsonl(tmp_path, 6)
    whole = log.read_bytes()
    assert whole.endswith(b"\n")
    log.write_bytes(whole[:-1])  # a finished file whose writer put no newline after its last line
    follower = LogFollower(str(log), "jsonl")
    rec = follower.refresh()
    assert len(rec.steps["step"]) == 6
    _same(rec, read_scalars(str(log), fmt="jsonl", partial_ok=True))
    _same(rec, read_scalars(str(log), fmt="jsonl"))
    nxt = json.loads(whole.splitlines()[-1])
    nxt["step"] += 1
    line = json.dumps(nxt).encode()
    with open(log, "ab") as fh:  # the writer goes on: its newline, then a line cut mid-write
        fh.write(b"\n" + line[:len(line) // 2])
    rec = follower.refresh()
    assert len(rec.steps["step"]) == 6 and follower.rows_parsed == 0
    _same(rec, read_scalars(str(log), fmt="jsonl", partial_ok=True))
    with open(log, "ab") as fh:
        fh.write(line[len(line) // 2:] + b"\n")
    assert len(follower.refresh().steps["step"]) == 7


def test_a_truncated_and_a_replaced_log_are_said_and_read_again(tmp_path):
    log = _jsonl(tmp_path, 20)
    follower = LogFollower(str(log), "jsonl")
    assert len(follower.refresh().steps["step"]) == 20
    lines = log.read_text().splitlines(keepends=True)
    with open(log, "r+") as fh:  # truncated in place (the same file, shorter)
        fh.truncate(len("".join(lines[:5])))
    rec = follower.refresh()
    assert follower.change == "truncated" and "metrics.jsonl was truncated" in follower.status
    assert "read again from the start: 5 steps" in follower.status
    _same(rec, read_scalars(str(log), fmt="jsonl"))
    new = log.with_name("next.jsonl")  # replaced: another file renamed over it (a restarted run)
    new.write_text("".join(lines[:8]))
    os.replace(new, log)
    rec = follower.refresh()
    assert follower.change == "replaced" and "was replaced by another file" in follower.status
    assert len(rec.steps["step"]) == 8


def test_the_page_keeps_the_last_good_read_and_says_why(tmp_path, monkeypatch):
    log = _jsonl(tmp_path, 20)
    source = TrackerSource(str(log), "jsonl")
    read_shared(source)
    f = TrackerFollower(source)
    with open(log, "a") as fh:
        fh.write((FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()[20] + "\n")
    assert len(f.poll().steps["step"]) == 21 and f.notice == ""
    with open(log, "r+") as fh:
        fh.truncate(100)  # cut mid-line: fewer steps than shown
    assert f.poll() is None  # the page keeps its record, and its forecast
    assert f.notice.startswith("The log changed while followed: metrics.jsonl was truncated")
    assert "the last good read (to step 21)" in f.notice
    monkeypatch.setattr(lab_trackers, "STALE_S", 0.0)
    g = TrackerFollower(source)
    g.last_step = 21
    assert g.poll() is None
    assert g.notice.startswith("The log has not grown for 0 min (last step 21): the trainer may have stopped")


def test_every_store_kind_is_listed_for_following(tmp_path):
    shutil.copytree(FIXTURES / "mlflow", tmp_path / "ml")
    shutil.copytree(FIXTURES / "trackio", tmp_path / "tr")
    shutil.copytree(FIXTURES / "wandb_export", tmp_path / "wx")
    (tmp_path / "wx" / "notes.csv").write_text("a,b\n1,2\n")  # a csv that is no history export: not listed
    found = lab_trackers.tracker_logs(tmp_path)
    assert {(s.fmt, s.run) for s in found.values()} == {("mlflow", "slime/slime-run"), ("trackio", "miles/miles-run"),
                                                       ("wandb", None)}
    for source in found.values():  # each as the whole reader reads it
        rec = read_shared(source)
        _same(rec, read_scalars(source.path, fmt=source.fmt, run=source.run))
        assert len(rec.steps["step"]) == 30


def test_the_replay_shows_the_live_forecast_and_keeps_it_when_the_log_is_cut(tmp_path):
    from grpo_lab.fleet_doctor import diagnose_entry
    from grpo_lab.replay.live_forecast import doctor_line
    from grpo_lab.replay.view import ReplayView

    def live_forecast(record):  # the doctor's forecast (lab/replay/live_forecast.py)
        return doctor_line(diagnose_entry(record, None, 0.5))

    log = _jsonl(tmp_path, 20)
    view = ReplayView(runs_root=tmp_path)
    line = view.follow_pane.lines["replay-live-forecast"]
    assert line == live_forecast(read_scalars(str(log), fmt="jsonl")) and line.startswith("Live forecast at step 20 (the doctor's)")
    with open(log, "a") as fh:
        fh.write((FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()[20] + "\n")
    view.poll()
    line = view.follow_pane.lines["replay-live-forecast"]
    assert line == live_forecast(read_scalars(str(log), fmt="jsonl")) and line.startswith("Live forecast at step 21")
    with open(log, "r+") as fh:
        fh.truncate(300)
    view.poll()
    assert view.follow_pane.lines["replay-live-forecast"] == line  # the last good forecast, kept
    assert view.follow_pane.lines["replay-follow"].startswith("The log changed while followed: metrics.jsonl was "
                                                              "truncated")
    assert list(view.axis.data["step"])[-1] == 21


def test_a_resumed_run_relogging_steps_reads_as_the_whole_reader_reads_it(tmp_path):
    """A trainer resumed from a checkpoint logs again the steps after it: the later value of a step wins, as in a
    full read (the follower's fast path, appending steps in order, must not apply)."""
    log = _jsonl(tmp_path, 12)
    follower = LogFollower(str(log), "jsonl")
    follower.refresh()
    lines = (FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()
    with open(log, "a") as fh:  # resumed at step 8: steps 8.. logged again (other values), then on to 16
        for line in lines[7:16]:
            row = json.loads(line)
            row["env/all/reward/total"] = row["env/all/reward/total"] / 2
            fh.write(json.dumps(row) + "\n")
    rec = follower.refresh()
    _same(rec, read_scalars(str(log), fmt="jsonl"))
    assert list(rec.steps["step"]) == list(range(1, 17))
