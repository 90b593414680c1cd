"""``grpo-lab watch`` follows the log incrementally (lab/commands/watch.py through
sims/ingest/trackers/follow.py's LogFollower): each poll reads what the trainer appended since the last, and what it
prints equals what a full re-read of the log as it stood gives at the same poll.

The logs are written by the trackers' own libraries as the trainer would write them, a few steps between two polls
(torch's SummaryWriter; MLflow's client into a file store; a tinker-cookbook metrics.jsonl, written line by line as
its JsonLogger writes it). The reference is the doctor's StallWatch fed, at each poll, the whole log read again
(:func:`grpo_lab.commands.watch.read_tracker`, what watch did before #40). A log truncated, replaced or no longer
growing is said in words, and the last forecast printed stands."""

from __future__ import annotations

import json
import os

import pytest

from grpo_lab.commands.watch import _line, read_tracker, watch
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.doctor.scalars_watch import StallWatch
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.ingest.trackers import follow

SETTINGS = read_trainer_config(None, gen_batch_size=96, train_batch_size=64, max_num_gen_batches=3)
NAMES = ("env/all/by_group/frac_all_good", "env/all/by_group/frac_all_bad")  # tinker-cookbook's shares
PER_POLL = 6
FIRST = 30  #: steps the trainer appends at its first turn (then PER_POLL a turn)
POLLS = (70 - FIRST) // PER_POLL + 1  #: watch's polls: the log's last read holds 60 (TensorBoard) / 66 (MLflow) steps


@pytest.fixture(scope="module")
def rows():
    rec, stall = simulate_dapo(1.5, 2.0, 0.06, 8, 300, 96, 64, 3, seed=4)
    assert stall is not None and stall > 40
    st = rec.steps
    return [(int(s), float(a), float(b)) for s, a, b in zip(st["step"], st["frac_all_pass"], st["frac_all_fail"])]


def _watch_beside_a_full_read(path, log, polls: int):
    """Run watch on ``path`` while ``log(i, n)`` appends ``n`` steps from the i-th between polls (:data:`FIRST`, then
    :data:`PER_POLL`); beside it, a StallWatch fed the whole log re-read at each poll. Returns (watch's events, its
    lines, the reference's events)."""
    ref, ref_events, state = StallWatch(SETTINGS, warn_steps=12, num_generations=8), [], {"i": 0}

    def full_read():
        if os.path.exists(path):
            ev = ref.update(read_tracker(path, num_generations=8))
            if ev is not None:
                ref_events.append(ev)

    def sleep(_):
        full_read()  # the log as the watch has just read it
        n = PER_POLL if state["i"] else FIRST
        log(state["i"], n)
        state["i"] += n

    out = []
    events = watch(path, SETTINGS, num_generations=8, warn_steps=12, interval=0, max_polls=polls, write=out.append,
                   sleep=sleep)
    full_read()
    return events, out, ref_events


def _assert_same_events(events, out, ref_events) -> None:
    assert len(events) >= 5 and [e["step"] for e in events] == [e["step"] for e in ref_events]
    for e, r in zip(events, ref_events):
        assert (e["steps"], e["forecast"], e.get("fit"), e["warn"]) == (r["steps"], r["forecast"], r.get("fit"),
                                                                         r["warn"])
    assert [line for line in out if line.startswith("step ")] == [_line(r) for r in ref_events]
    assert any(e["forecast"] is not None for e in events) and any(e["warn"] for e in events)


def test_watch_on_a_growing_tensorboard_log_prints_what_a_full_reread_gives(tmp_path, rows):
    from torch.utils.tensorboard import SummaryWriter

    logdir = tmp_path / "tb"
    tb = {}

    def log(i, n):
        if "w" not in tb:
            tb["w"] = SummaryWriter(log_dir=str(logdir))
        for s, a, b in rows[i:i + n]:
            tb["w"].add_scalar(NAMES[0], a, s)
            tb["w"].add_scalar(NAMES[1], b, s)
        tb["w"].flush()

    try:
        events, out, ref = _watch_beside_a_full_read(logdir, log, POLLS)
    finally:
        tb["w"].close()
    assert out[0].startswith("waiting for")  # started before the trainer's first event
    _assert_same_events(events, out, ref)


def test_watch_on_a_growing_mlflow_run_prints_what_a_full_reread_gives(tmp_path, rows, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    store = tmp_path / "mlruns"
    client = MlflowClient(tracking_uri=store.resolve().as_uri())
    run_id = client.create_run(client.create_experiment("dapo"), run_name="trainer").info.run_id

    def log(i, n):
        for s, a, b in rows[i:i + n]:
            client.log_batch(run_id, metrics=[Metric(NAMES[0], a, 0, s), Metric(NAMES[1], b, 0, s)])

    log(0, PER_POLL)
    events, out, ref = _watch_beside_a_full_read(store, lambda i, n: log(i + PER_POLL, n), POLLS)
    _assert_same_events(events, out, ref)


def test_a_truncated_replaced_or_stopped_log_is_said_and_the_last_forecast_stands(tmp_path, rows, monkeypatch):
    monkeypatch.setattr(follow, "STALE_S", 0.0)  # "has not grown" at the first look that finds it unchanged
    path = tmp_path / "metrics.jsonl"
    lines = [json.dumps({"step": s, NAMES[0]: a, NAMES[1]: b}) + "\n" for s, a, b in rows]
    path.write_text("".join(lines[:30]))

    def truncate():  # cut back in place
        with open(path, "r+") as fh:
            fh.truncate(len("".join(lines[:10])))

    def grow():  # the new log grows
        with open(path, "a") as fh:
            fh.write("".join(lines[10:40]))

    def replace():  # a restarted run's log renamed over it
        new = tmp_path / "next.jsonl"
        new.write_text("".join(lines[:20]))
        os.replace(new, path)

    actions = [truncate, lambda: None, grow, replace]  # between the polls; the second: no growth (stopped)
    out = []
    events = watch(tmp_path, SETTINGS, num_generations=8, warn_steps=12, interval=0, max_polls=5, write=out.append,
                   sleep=lambda _: actions.pop(0)())
    assert [e["step"] for e in events] == [30, 40]
    said = [line for line in out if not line.startswith(("step ", "RULE", "WARNING"))]
    stall = events[0]["forecast"]["step"]
    assert said[0] == (f"the log changed while followed: metrics.jsonl was truncated (now "
                       f"{len(''.join(lines[:10]).encode()):,} bytes, {len(''.join(lines[:30]).encode()):,} were read). "
                       f"the last forecast (at step 30: stall {stall:.0f}) stands; the new log is forecast from its "
                       "start as it grows")
    assert said[1] == ("the log has not grown for 0 min (last step 10): the trainer may have stopped or be stalled; "
                       "the last forecast printed is from the last step read")
    assert said[2].startswith("the log changed while followed: metrics.jsonl was replaced by another file. the last "
                              "forecast (at step 40: ")
    # the new log's forecast is the new log's alone: a fresh StallWatch on the 40 steps as they stood
    fresh = StallWatch(SETTINGS, warn_steps=12, num_generations=8)
    tmp = tmp_path / "as_of.jsonl"
    tmp.write_text("".join(lines[:40]))
    assert events[1]["forecast"] == fresh.update(read_tracker(tmp, num_generations=8))["forecast"]


def test_a_changed_log_whose_last_forecast_is_beyond_the_horizon_is_said_without_a_step():
    """The last forecast printed had no stall step (beyond the horizon): the change is still said, in words."""
    from types import SimpleNamespace

    from grpo_lab.commands.watch import _changed

    out = []
    follower = SimpleNamespace(status="metrics.jsonl was truncated (now 10 bytes, 900 were read); read again")
    _changed(follower, [{"step": 12, "forecast": {"step": None}}], out.append)
    assert out == ["the log changed while followed: metrics.jsonl was truncated (now 10 bytes, 900 were read). the "
                   "last forecast (at step 12: stall not within the horizon) stands; the new log is forecast from its "
                   "start as it grows"]
