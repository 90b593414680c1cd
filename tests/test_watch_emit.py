"""``grpo-lab watch --emit`` (lab/commands/watch.py, lab/tracker_emit.py, sims/doctor/tracker_values.py): a simulated
DAPO run is logged step by step by the real trackers (torch's SummaryWriter; wandb offline); watch follows the log,
writes the forecast back into the same log dir / the same W&B run (resumed offline) and alerts before the simulated
stall. The curves are read back by TensorBoard's own EventAccumulator and W&B's own protobuf records and must
equal the doctor's diagnosis (``diagnose --json``'s ``tracker``) of the record as it stood at each step."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from grpo_lab.commands.watch import watch
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.doctor.tracker_values import PREFIX
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.ingest.trackers import read_run_scalars, read_scalars, record_from_scalars
from grpo_lab.testing.cli import run_cli

FLAGS = ["--gen-batch-size", "96", "--train-batch-size", "64", "--max-num-gen-batches", "3"]
SETTINGS = read_trainer_config(None, gen_batch_size=96, train_batch_size=64, max_num_gen_batches=3)
PER_POLL = 6
FIRST = 30  #: steps the trainer has logged at the first poll that finds the log (then PER_POLL a poll)
NAMES = ("env/all/by_group/frac_all_good", "env/all/by_group/frac_all_bad")  # tinker-cookbook's shares


@pytest.fixture(scope="module")
def run():
    rec, stall = simulate_dapo(1.5, 2.0, 0.06, 8, 300, 96, 64, 3, seed=4)
    assert stall is not None and stall > 40
    st = rec.steps
    rows = [(int(s), float(a), float(b)) for s, a, b in zip(st["step"], st["frac_all_pass"], st["frac_all_fail"])]
    return rows, stall


def _as_of(path, step, **kw):
    """The scalars record of the log at ``path`` as it stood when ``step`` was its last step: every series cut
    there, then read as ingest reads a log (the reader's inferences, e.g. the groups per row, see only that)."""
    rs = read_run_scalars(path, **kw)
    rs.series = {k: (s[s <= step], v[s <= step]) for k, (s, v) in rs.series.items() if (s <= step).any()}
    return record_from_scalars(rs, str(path), num_generations=8)


def _tracker_at(path, step):
    return diagnose(_as_of(path, step), trainer_config=SETTINGS, num_generations=8)["tracker"]


def test_tensorboard_curves_equal_the_diagnosis_and_the_alert_comes_first(tmp_path, run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    rows, stall = run
    logdir = tmp_path / "tb"
    tb = {}

    def sleep(_):  # between two polls the trainer logs its next steps (the writer is made with the first)
        if "w" not in tb:
            tb["w"], tb["i"] = SummaryWriter(log_dir=str(logdir)), 0
        n = PER_POLL if tb["i"] else FIRST
        for s, a, b in rows[tb["i"]:tb["i"] + n]:
            tb["w"].add_scalar(NAMES[0], a, s)
            tb["w"].add_scalar(NAMES[1], b, s)
        tb["w"].flush()
        tb["i"] += n

    out = []
    try:  # a poll finding nothing, then the log at FIRST steps and every PER_POLL steps after until the stall
        events = watch(logdir, SETTINGS, num_generations=8, interval=0, max_polls=(stall - FIRST) // PER_POLL + 2,
                       write=out.append, sleep=sleep, emit=True, alert_before=12)
    finally:
        tb["w"].close()
    # it started before the log existed and waited for it
    assert out[0].startswith("waiting for")
    emitted = [e for e in events if "tracker" in e]
    assert len(emitted) >= 5
    alerts = [e for e in events if e.get("alert")]
    assert len(alerts) == 1 and alerts[0]["step"] < stall, out
    assert any(line.startswith("ALERT") for line in out)

    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    keys = (PREFIX + "expiry_step", PREFIX + "first_stall_median", PREFIX + "p_stall_next", PREFIX + "mixed_now")
    got = {key: {e.step: e.value for e in ea.Scalars(key)} for key in keys}
    for key in keys:
        assert sorted(got[key]) == sorted(e["step"] for e in emitted if key in e["tracker"])
    checked = 0
    # each checked step recomputed from the log as it stood then (the last first: the watch's last measurement is
    # kept by content, measure_drift)
    for e in {e["step"]: e for e in emitted[-1:] + emitted[::2]}.values():
        want = _tracker_at(logdir, e["step"])
        assert want == e["tracker"]
        for key in keys:
            if key in want:
                checked += 1
                assert got[key][e["step"]] == pytest.approx(want[key], rel=1e-6, abs=1e-7)  # float32 in the file
    assert checked >= 10
    alert = ea.Tensors("grpo_lab/alert")
    assert [t.step for t in alert] == [alerts[0]["step"]]
    text = alert[0].tensor_proto.string_val[0].decode()
    assert f"step {alerts[0]['step']}" in text and "cap of 3" in text


def _wait_for_step(folder, step, polls=600):
    """W&B's service may still be writing the log after ``finish()`` returns: wait (generously) until it holds
    ``step``, as a watch would."""
    from grpo_lab.commands.watch import read_tracker

    for _ in range(polls):
        got = read_tracker(folder, num_generations=8).steps.get("step", [])
        if len(got) and got[-1] == step:
            return
        time.sleep(0.1)
    raise AssertionError(f"the W&B log never held step {step}")


def test_wandb_run_resumed_offline_holds_the_forecast_and_the_alert(tmp_path, run, monkeypatch):
    import wandb
    from wandb.proto import wandb_internal_pb2

    from grpo_lab.sims.ingest.trackers.wandb import _payloads

    rows, stall = run
    monkeypatch.setenv("WANDB_SILENT", "true")
    last = stall - 8  # the trainer has logged up to here when watch starts
    r = wandb.init(project="grpo-lab-test", id="trainrun1", mode="offline", dir=str(tmp_path))
    for s, a, b in rows:
        if s <= last:
            r.log({NAMES[0]: a, NAMES[1]: b}, step=s)
    r.finish()
    (trainer_folder,) = (tmp_path / "wandb").glob("offline-run-*")
    _wait_for_step(trainer_folder, last)
    out = []
    events = watch(tmp_path / "wandb", SETTINGS, num_generations=8, interval=0, max_polls=1, write=out.append,
                   emit=True, alert_before=12)
    assert [e["step"] for e in events] == [last] and events[0].get("alert"), out
    assert sum(line.startswith("RULE cap_hit") for line in out) == 1  # the rule that fires, said in watch
    folders = sorted((tmp_path / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and all(f.name.endswith(("-trainrun1", "-trainrun1-1")) for f in folders)
    resumed = next(f for f in folders if f != trainer_folder)
    for _ in range(600):  # W&B's service may still be writing the resumed run's log (a generous wait)
        if PREFIX + "mixed_now" in read_run_scalars(resumed, fmt="wandb", partial_ok=True).series:
            break
        time.sleep(0.1)
    # W&B's own records: the resumed run's history (on the grpo_lab/step axis) and its alert
    rs = read_run_scalars(resumed, fmt="wandb")
    want = diagnose(read_scalars(trainer_folder, num_generations=8), trainer_config=SETTINGS)["tracker"]
    assert want == events[0]["tracker"]
    for key, value in want.items():
        steps, values = rs.series[key]
        assert list(steps) == [last] and values[0] == value  # JSON keeps the float64 exactly
    (log,) = resumed.glob("run-*.wandb")
    records = [wandb_internal_pb2.Record.FromString(p) for _, p, _end in _payloads(log.read_bytes(), str(log), True)]
    alerts = [x.alert for x in records if x.WhichOneof("record_type") == "alert"]
    assert len(alerts) == 1 and alerts[0].level == "WARN" and f"At step {last} " in alerts[0].text
    runs = [x.run for x in records if x.WhichOneof("record_type") == "run"]
    assert runs and runs[0].run_id == "trainrun1" and runs[0].project == "grpo-lab-test"
    # diagnose --json on the same log says the same (the command reads a record: ingest it first)
    rec_dir = tmp_path / "rec"
    assert run_cli("ingest", trainer_folder, "--out", rec_dir, "--num-generations", "8").returncode == 0
    proc = run_cli("diagnose", rec_dir, "--json", *FLAGS)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tracker"] == pytest.approx(want, rel=1e-12)


def test_mlflow_run_gets_the_curves_and_the_alert_tag(tmp_path, run, monkeypatch):
    rows, stall = run
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    import mlflow
    from mlflow.tracking import MlflowClient

    last = stall - 8
    uri = (tmp_path / "mlruns").resolve().as_uri()
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("dapo")
    run_id = client.create_run(exp, run_name="trainer").info.run_id
    for s, a, b in rows:
        if s <= last:
            client.log_batch(run_id, metrics=[mlflow.entities.Metric(NAMES[0], a, 0, s),
                                              mlflow.entities.Metric(NAMES[1], b, 0, s)])
    client.set_terminated(run_id)
    events = watch(tmp_path / "mlruns", SETTINGS, num_generations=8, interval=0, max_polls=1, write=lambda s: None,
                   emit=True, alert_before=12)
    assert [e["step"] for e in events] == [last] and events[0]["alert"]
    # MLflow's own client reads the run back: each grpo_lab/ curve at the step, and the alert's tag
    for key, value in events[0]["tracker"].items():
        (m,) = client.get_metric_history(run_id, key)
        assert (m.step, m.value) == (last, value)
    assert client.get_run(run_id).data.tags["grpo_lab.alert"].startswith(f"step {last}: grpo-lab")


def test_trackio_run_resumed_gets_the_curves_and_the_alert(tmp_path, run):
    import subprocess
    import sys

    rows, stall = run
    last = stall - 8
    env = {**__import__("os").environ, "TRACKIO_DIR": str(tmp_path / "trackio")}
    lines = [[s, a, b] for s, a, b in rows if s <= last]
    make = ("import json, sys, trackio\n"
            "trackio.init(project='dapo', name='trainer', auto_log_gpu=False, embed=False)\n"
            f"for s, a, b in json.loads(sys.argv[1]): trackio.log({{{NAMES[0]!r}: a, {NAMES[1]!r}: b}}, step=s)\n"
            "trackio.finish()\n")
    subprocess.run([sys.executable, "-c", make, json.dumps(lines)], env=env, check=True, capture_output=True,
                   timeout=600)
    proc = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "watch", str(tmp_path / "trackio"), *FLAGS,
                           "--num-generations", "8", "--max-polls", "1", "--emit", "--alert-before", "12"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "ALERT sent to the tracker" in proc.stdout and "alert() failed" not in proc.stderr
    # trackio's own store: the curves at the step in the same run, and the alert
    from trackio.sqlite_storage import SQLiteStorage

    db = tmp_path / "trackio" / "dapo.db"
    with SQLiteStorage._get_connection(db, timeout=5.0, configure_pragmas=False) as conn:
        rows_db = conn.execute("SELECT run_name, step, metrics FROM metrics "
                               "WHERE CAST(metrics AS TEXT) LIKE '%grpo_lab/%'").fetchall()
        alerts = conn.execute("SELECT * FROM alerts").fetchall()
    assert [(r["run_name"], r["step"]) for r in rows_db] == [("trainer", last)]
    written = {k: v for k, v in json.loads(rows_db[0]["metrics"]).items() if k.startswith(PREFIX)}
    want = diagnose(read_scalars(tmp_path / "trackio", num_generations=8, run="dapo/trainer"),
                    trainer_config=SETTINGS)["tracker"]
    assert written == pytest.approx(want, rel=1e-12)
    assert len(alerts) == 1 and alerts[0]["level"] == "warn" and f"At step {last} " in alerts[0]["text"]


def test_emit_refuses_what_it_cannot_write_in_one_line(tmp_path, run, capsys):
    from grpo_lab.cli import main

    rows, _ = run
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps({"step": s, NAMES[0]: a, NAMES[1]: b}) + "\n"
                                                    for s, a, b in rows[:10]))
    args = ["watch", str(tmp_path), *FLAGS, "--num-generations", "8", "--max-polls", "1", "--emit"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not to a jsonl log" in err
    assert main([*args, "--alert-before", "-1"]) == 2
    assert "--alert-before must be >= 0" in capsys.readouterr().err


def test_tensorboard_writer_goes_into_the_followed_run_folder(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from grpo_lab.sims.errors import InputError
    from grpo_lab.tracker_emit import open_writer

    for name in ("a", "b"):
        with SummaryWriter(log_dir=str(tmp_path / name)) as w:
            w.add_scalar(NAMES[0], 0.5, 1)
    with pytest.raises(InputError, match="needs the run"):
        open_writer(tmp_path, "tensorboard")
    w = open_writer(tmp_path, "tensorboard", run="b")
    w.write(1, {PREFIX + "mixed_now": 0.25})
    w.close()
    assert len(list((tmp_path / "b").glob("*.grpo_lab"))) == 1 and not list((tmp_path / "a").glob("*.grpo_lab"))
