"""The Replay lists the tracker logs in its runs folders and follows one as it grows (lab/replay/trackers.py).

The log is tinker-cookbook's ``metrics.jsonl`` fixture (tests/fixtures/trackers/jsonl), written a few lines at a
time; what the view shows is checked against the lines written (the dialect maps ``frac_all_good`` onto the
all-pass share, ``env/all/reward/total`` onto the mean reward).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.replay.trackers import MAX_ENTRIES, PREFIX, TrackerFollower, TrackerSource, read_shared, tracker_logs
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed
from grpo_lab.testing.growing_record import growing_record
from grpo_lab.testing.lab_server import READ_CLASS, TEXTS_OF_CLASS, free_port, open_local, serve

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"
LINES = (FIXTURES / "jsonl" / "metrics.jsonl").read_text().splitlines()
LABEL = f"{PREFIX}exp/tinker/metrics.jsonl (jsonl)"


def _log(root: Path, n: int) -> Path:
    """A tinker-cookbook run folder under ``root`` with the fixture's first ``n`` lines written."""
    d = root / "exp" / "tinker"
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / "jsonl" / "config.json", d / "config.json")
    (d / "metrics.jsonl").write_text("".join(line + "\n" for line in LINES[:n]))
    return d / "metrics.jsonl"


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)


def test_lists_tracker_logs_and_skips_what_is_not_one(tmp_path):
    _log(tmp_path, 3)
    shutil.copytree(FIXTURES / "tensorboard" / "trl", tmp_path / "tb" / "trl")  # with its hparams subfolder
    groups = tmp_path / "groups"  # a groups JSONL named metrics.jsonl is no tracker log
    groups.mkdir()
    (groups / "metrics.jsonl").write_text(json.dumps({"step": 1, "prompt_id": 0, "rewards": [1, 0]}) + "\n")
    broken = tmp_path / "broken"  # not JSON at all: skipped, the listing goes on
    broken.mkdir()
    (broken / "metrics.jsonl").write_bytes(b"\x00\xff not json\n")
    growing_record(tmp_path / "rec", 1)  # a run record: the catalogue's, and nothing below it is walked
    _log(tmp_path / "rec", 2)
    wandb = tmp_path / "wb" / "wandb"  # a W&B offline folder as wandb leaves it: a folder of offline runs
    shutil.copytree(FIXTURES / "wandb", wandb)
    mixed = tmp_path / "mixed"  # a TensorBoard folder that is a run and holds another: each of its runs by its own
    shutil.copytree(FIXTURES / "tensorboard" / "prime", mixed)
    shutil.copytree(FIXTURES / "tensorboard" / "orlhf", mixed / "orlhf")
    found = tracker_logs(tmp_path)
    offline = next(wandb.iterdir())
    assert found == {LABEL: TrackerSource(str(tmp_path / "exp" / "tinker" / "metrics.jsonl"), "jsonl"),
                     f"{PREFIX}tb/trl (tensorboard)": TrackerSource(str(tmp_path / "tb" / "trl"), "tensorboard"),
                     f"{PREFIX}wb/wandb/{offline.name} (wandb)": TrackerSource(str(offline), "wandb"),
                     f"{PREFIX}mixed/orlhf (tensorboard)": TrackerSource(str(mixed / "orlhf"), "tensorboard")}
    for source in found.values():  # each opens: its last step, as the trackers package reads it
        assert len(source.read().steps["step"]) > 0


def test_walk_is_bounded(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"a{i:02d}").mkdir()
    _log(tmp_path / "zz", 2)  # past the bound in breadth-first order
    assert LABEL.replace("exp/", "zz/exp/") in tracker_logs(tmp_path)
    monkeypatch.setattr("grpo_lab.replay.trackers.MAX_ENTRIES", 10)
    assert tracker_logs(tmp_path) == {} and MAX_ENTRIES > 10


def test_follower_reads_new_steps_and_skips_a_cut_line(tmp_path):
    path = _log(tmp_path, 3)
    f = TrackerFollower(TrackerSource(str(path), "jsonl"))
    assert f.poll() is None  # nothing new
    _append(path, LINES[3] + "\n" + LINES[4][:25])  # a step and half of the next
    rec = f.poll()
    assert list(rec.steps["step"]) == [1, 2, 3, 4]
    assert f.poll() is None
    _append(path, LINES[4][25:] + "\n")
    rec = f.poll()
    last = json.loads(LINES[4])
    assert list(rec.steps["step"]) == [1, 2, 3, 4, 5]
    assert rec.steps["frac_all_pass"][-1] == last["env/all/by_group/frac_all_good"]
    assert rec.steps["reward_mean"][-1] == last["env/all/reward/total"]
    _append(path, "not json\n" + LINES[5] + "\n")  # a bad line in the middle: that poll is skipped, no crash
    assert f.poll() is None and f.active


def test_view_opens_the_log_at_its_last_step_and_follows_it(tmp_path):
    path = _log(tmp_path, 0)  # nothing logged yet: an empty run, then its steps as they land
    view = ReplayView(runs_root=tmp_path)
    assert view.state.run == LABEL and view.state.error == "" and len(view.axis.data["step"]) == 0
    _append(path, "".join(line + "\n" for line in LINES[:4]))
    view.poll()
    assert list(view.axis.data["step"]) == [1, 2, 3, 4] and view.slider.value == 3
    _append(path, LINES[4] + "\n" + LINES[5][:40])
    view.poll()
    shown = view.slots[0].view
    assert list(view.axis.data["step"]) == [1, 2, 3, 4, 5] and view.slider.value == 4  # pinned to the latest
    assert np.isclose(shown.series["all_pass"][-1], json.loads(LINES[4])["env/all/by_group/frac_all_good"])
    assert view.slots[0].series.data["step"][-1] == 5  # the time plots' source has the new step
    assert f"{LABEL}: per-group rewards (scalars only)" in view.state.notice  # says what the metrics lack
    assert f"{LABEL}: K = 8 from the run's config" in view.state.notice  # config.json beside the log
    assert list(view.diagnose._record.steps["step"]) == [1, 2, 3, 4, 5]  # Diagnose runs on the newest steps


def test_serve_runs_adds_its_folders_for_the_server(tmp_path, monkeypatch):
    from grpo_lab.commands.serve import serve_env
    from grpo_lab.testing.cli import run_cli

    monkeypatch.delenv("GRPO_LAB_RUNS", raising=False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    env = serve_env([tmp_path / "a", tmp_path / "b"], {"GRPO_LAB_RUNS": "/srv/runs", "HOME": "/h"})
    assert env == {"GRPO_LAB_RUNS": os.pathsep.join(["/srv/runs", str(tmp_path / "a"), str(tmp_path / "b")]),
                   "HOME": "/h"}
    assert serve_env([], {"HOME": "/h"}) == {"HOME": "/h"}
    said = run_cli("serve", "--runs", tmp_path / "none", "--dry-run")
    assert said.returncode == 2 and said.stderr.strip().splitlines() == [f"grpo-lab serve: error: --runs "
                                                                          f"{tmp_path / 'none'}: not a folder"]
    said = run_cli("serve", "--runs", tmp_path / "a", "--dry-run")
    assert said.returncode == 0 and said.stdout.startswith(f"GRPO_LAB_RUNS={tmp_path / 'a'} ")


def test_grpo_lab_runs_lists_the_tracker_logs(tmp_path):
    from grpo_lab.testing.cli import run_cli

    path = _log(tmp_path, 2)
    said = run_cli("runs", "--runs", tmp_path, "--json")
    assert said.returncode == 0 and {"label": LABEL, "format": "jsonl", "path": str(path)} in json.loads(
        said.stdout)["trackers"]
    said = run_cli("runs", "--runs", tmp_path)
    assert f"{LABEL}: {path} (the lab's Replay follows it; grpo-lab ingest or watch this path)\n" in said.stdout


@pytest.mark.browser
def test_browser_lists_opens_and_follows_a_growing_metrics_jsonl(tmp_path, page):
    """``grpo-lab serve --runs DIR``: the Replay lists the log beside the shipped runs and opens it before its first
    step; never reloaded, it shows the steps a trainer writes after (each line cut once mid-way, as a flush may leave
    it), pinned to the last."""
    path = _log(tmp_path, 0)  # the trainer has not logged its first step yet
    port = free_port()
    cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--runs", str(tmp_path), "--port", str(port),
           "--num-procs", "1"]
    with serve(cmd=cmd, port=port) as url:
        outside = open_local(page, url + "?tab=replay", f"({READ_CLASS})('replay-step') !== null", timeout=300_000)
        page.locator(".replay-run select").select_option(LABEL)  # listed beside the shipped runs, by its label
        page.wait_for_function(f"(want) => ({TEXTS_OF_CLASS})('replay-missing').join(' ').includes(want)",
                               arg=f"{LABEL}: nothing logged yet", timeout=120_000)
        step = f"({READ_CLASS})('replay-step')"  # the step readout's text

        def write_more():  # the trainer logging
            for n in range(12):
                time.sleep(0.3)
                _append(path, LINES[n][:20])
                time.sleep(0.3)
                _append(path, LINES[n][20:] + "\n")

        t = threading.Thread(target=write_more)
        t.start()
        t.join()
        page.wait_for_function(f"() => {step} === '{fixed(12.0, 0)}'", timeout=120_000)
        reward = json.loads(LINES[11])["env/all/reward/total"]
        assert page.evaluate(READ_CLASS, "replay-reward") == fixed(reward, 3)  # the new step's own value
        assert outside == [] and page.console_errors == []


def test_follower_follows_a_tensorboard_log_as_its_writer_flushes(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "logs" / "prime"))  # TensorBoard's own writer, prime-rl's metric names

    def log(step, solved_all, solved_none):
        values = [summary_pb2.Summary.Value(tag=f"train/agg/all/agent/{k}", simple_value=v)
                  for k, v in (("solved_all", solved_all), ("solved_none", solved_none),
                               ("solved_some", 1 - solved_all - solved_none))]
        w.add_event(event_pb2.Event(step=step, summary=summary_pb2.Summary(value=values)))
        w.flush()

    for step in range(1, 4):
        log(step, 0.125 * step, 0.5 - 0.125 * step)
    (label, source), = tracker_logs(tmp_path).items()
    assert (label, source.fmt) == (f"{PREFIX}logs/prime (tensorboard)", "tensorboard")
    f = TrackerFollower(source)
    assert f.poll() is None
    log(4, 0.375, 0.0625)
    events = next((tmp_path / "logs" / "prime").glob("*tfevents*"))
    _append(events, "\x1a\x00\x00\x00")  # the start of a record the writer has not finished: left for later
    rec = f.poll()
    assert list(rec.steps["step"]) == [1, 2, 3, 4]
    assert np.isclose(rec.steps["frac_all_pass"][-1], 0.375) and np.isclose(rec.steps["frac_all_fail"][-1], 0.0625)
    w.close()


def test_sessions_following_one_log_read_it_once_per_change(tmp_path, monkeypatch):
    path = _log(tmp_path, 2)
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    reads, real = [], LogFollower.refresh
    monkeypatch.setattr(LogFollower, "refresh", lambda self: reads.append(self) or real(self))
    a, b = (TrackerFollower(TrackerSource(str(path), "jsonl")) for _ in range(2))  # two visitors' tabs
    read_shared(TrackerSource(str(path), "jsonl"))  # the log opened: its two lines read
    reads.clear()
    _append(path, LINES[2] + "\n")
    ra, rb = a.poll(), b.poll()
    assert ra is rb and len(reads) == 1 and list(ra.steps["step"]) == [1, 2, 3]
    assert reads[0].bytes_read == len(LINES[2]) + 1  # the one line appended, not the log whole


def test_a_diagnosis_stays_while_the_log_grows_and_says_what_it_covers(tmp_path):
    path = _log(tmp_path, 27)
    view = ReplayView(runs_root=tmp_path)
    view.diagnose.render()
    report = view.diagnose.report.object
    assert "doctor-lab-link" in report and not view.diagnose.notice.visible
    _append(path, LINES[27] + "\n")
    view.poll()
    assert view.diagnose.report.object == report  # a new step does not wipe the report being read
    assert view.diagnose.notice.object == ("This report covers the run up to step 27; it has reached step 28 since: "
                                           "press Diagnose this run again to include the new steps.")
    view.diagnose.render()  # diagnosed again: of all 28 steps, and the note goes
    assert list(view.diagnose._shown.steps["step"])[-1] == 28 and not view.diagnose.notice.visible


def test_follower_follows_a_wandb_offline_log_as_its_bytes_land(tmp_path):
    src = next((FIXTURES / "wandb").iterdir())  # written by wandb in offline mode (make_fixtures.py)
    run = tmp_path / "wandb" / src.name
    shutil.copytree(src, run)
    log = next(run.glob("*.wandb"))
    data = log.read_bytes()
    whole = TrackerSource(str(src), "wandb").read()
    log.write_bytes(data[:len(data) // 2])  # the writer part-way: its last block cut
    (label, source), = tracker_logs(tmp_path).items()
    assert label == f"{PREFIX}wandb/{src.name} (wandb)"
    first = source.read()
    f = TrackerFollower(source)
    assert 0 < len(first.steps["step"]) < len(whole.steps["step"]) and f.poll() is None
    log.write_bytes(data)
    rec = f.poll()
    assert list(rec.steps["step"]) == list(whole.steps["step"])
    assert np.array_equal(rec.steps["frac_all_pass"], whole.steps["frac_all_pass"], equal_nan=True)


def test_in_the_background_the_read_is_picked_up_at_the_poll_after_it(tmp_path):
    path = _log(tmp_path, 2)
    f = TrackerFollower(TrackerSource(str(path), "jsonl"), background=True)  # as in a served session
    _append(path, LINES[2] + "\n")
    assert f.poll() is None and f.pending is not None  # the read started, off the caller's thread
    f.pending.result()  # (waits for it: no timing involved)
    assert list(f.poll().steps["step"]) == [1, 2, 3] and f.pending is None
    _append(path, "not json\n" + LINES[3] + "\n")  # a read that fails: skipped, no crash
    assert f.poll() is None
    f.pending.exception()
    assert f.poll() is None and f.pending is None and f.poll() is None


def test_a_step_written_while_the_view_redraws_is_not_lost(tmp_path, monkeypatch):
    path = _log(tmp_path, 2)
    view = ReplayView(runs_root=tmp_path)
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    real = LogFollower.refresh

    def read_then_more_lands(self):  # the trainer writes its next step while the view reads the last one
        rec = real(self)
        if len(rec.steps["step"]) == 3:
            _append(path, LINES[3] + "\n")
        return rec

    monkeypatch.setattr(LogFollower, "refresh", read_then_more_lands)
    _append(path, LINES[2] + "\n")
    view.poll()
    assert len(view.axis.data["step"]) == 3
    view.poll()  # the step that landed during the redraw
    assert list(view.axis.data["step"]) == [1, 2, 3, 4]
