"""The stall forecast inside a real TRL GRPOTrainer on CPU (trl_recorder/stall_forecast.py): DAPO dynamic sampling with
a cap on a reward that drifts to all-pass (lab/testing/trl_stall.py) stalls for real (BatchNotFilled); the callback
writes the forecast into TensorBoard and W&B offline as the run trains, read back by TensorBoard's EventAccumulator
and W&B's own records equal to the doctor's diagnosis of the logged metrics at the same step, and its alert comes
before the stall. A run whose groups are all dead stops cleanly with a checkpoint that resumes."""

from __future__ import annotations

import json
import time

import pytest

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.tracker_values import PREFIX
from grpo_lab.sims.ingest.trackers import read_run_scalars, record_from_scalars
from grpo_lab.testing.trl_stall import stalling_trainer
from grpo_lab.testing.trl_tiny import make_trainer
from grpo_lab.trl_recorder import BatchNotFilled, StallForecast

CAP = 4


def _as_of(folder, step):
    """What the callback read when ``step`` was the last step logged: W&B's series cut there, read as ingest does."""
    rs = read_run_scalars(folder, fmt="wandb")
    rs.series = {k: (s[s <= step], v[s <= step]) for k, (s, v) in rs.series.items() if (s <= step).any()}
    return record_from_scalars(rs, str(folder), num_generations=4)


def _wandb_env(monkeypatch, tmp_path):
    import wandb

    monkeypatch.delenv("WANDB_DISABLED", raising=False)
    for k, v in dict(WANDB_MODE="offline", WANDB_DIR=str(tmp_path), WANDB_SILENT="true",
                     WANDB_PROJECT="grpo-lab-test").items():
        monkeypatch.setenv(k, v)
    # W&B keeps one set of settings per process, read when it was first set up: another test file on this worker
    # may have set it up before this environment (TRL's callback then resolved to online and asked for a key)
    wandb.teardown()


def _wandb_series(folder, key, step, polls=600):
    """W&B's service may still be writing the log after the run ends: wait (generously) for ``key`` at ``step``."""
    for _ in range(polls):
        series = read_run_scalars(folder, fmt="wandb", partial_ok=True).series
        if key in series and step in series[key][0]:
            return series
        time.sleep(0.1)
    raise AssertionError(f"{key} never reached {folder}")


def test_the_forecast_lands_in_tensorboard_and_wandb_and_the_alert_comes_before_the_stall(tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    import wandb
    from wandb.proto import wandb_internal_pb2

    from grpo_lab.sims.ingest.trackers.wandb import _payloads

    _wandb_env(monkeypatch, tmp_path)
    trainer, _ = stalling_trainer(tmp_path, cap=CAP, report_to=["tensorboard", "wandb"])
    fc = StallForecast(alert_before=10, every=4).attach(trainer)  # the two lines of a training script
    assert (fc.settings["gen_batch"], fc.settings["train_batch"], fc.settings["cap"], fc.K) == (4, 4, CAP, 4)
    with pytest.raises(BatchNotFilled, match=f"max_num_gen_batches = {CAP} rounds"):
        trainer.train()
    wandb.finish()  # the exception skipped the HF callback's on_train_end: the script's exit would finish the run
    stall = trainer.state.global_step + 1  # the step that could not fill its batch
    events = [e for e in fc.events if "tracker" in e]
    assert len(events) >= 5 and not [e for e in fc.events if "error" in e]
    alerts = [e for e in events if e["alert"]]
    assert len(alerts) == 1 and alerts[0]["step"] < stall
    assert any(r["rule"] == "cap_hit" for r in alerts[0]["rules"])

    # TensorBoard: the trainer's own SummaryWriter's log dir, read by TensorBoard's reader
    (tb,) = [cb for cb in trainer.callback_handler.callbacks if type(cb).__name__ == "TensorBoardCallback"]
    ea = EventAccumulator(tb.tb_writer.log_dir, size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    for key in events[-1]["tracker"]:
        got = {e.step: e.value for e in ea.Scalars(key)}
        want = {e["step"]: e["tracker"][key] for e in events if key in e["tracker"]}
        assert sorted(got) == sorted(want)
        assert [got[s] for s in sorted(got)] == pytest.approx([want[s] for s in sorted(want)], rel=1e-6, abs=1e-7)
    text = ea.Tensors("grpo_lab/alert/text_summary")
    assert [t.step for t in text] == [alerts[0]["step"]]

    # W&B offline: the trainer's run holds the curves on its train/global_step axis, and the alert
    (folder,) = (tmp_path / "wandb").glob("offline-run-*")
    series = _wandb_series(folder, PREFIX + "mixed_now", events[-1]["step"])
    for key in (PREFIX + "mixed_now", PREFIX + "first_stall_median", PREFIX + "p_stall_next"):
        steps, values = series[key]
        want = {e["step"]: e["tracker"][key] for e in events if key in e["tracker"]}
        assert dict(zip(steps.tolist(), values.tolist())) == want
    (log,) = folder.glob("run-*.wandb")
    records = [wandb_internal_pb2.Record.FromString(p) for _, p, _end in _payloads(log.read_bytes(), str(log), True)]
    alert = [x.alert for x in records if x.WhichOneof("record_type") == "alert"]
    assert len(alert) == 1 and alert[0].level == "WARN" and f"At step {alerts[0]['step']} " in alert[0].text

    # the doctor on the metrics as W&B holds them (float64, as logged), cut at a step, says what was written then
    # (each step once, the last first: the forecast's last measurement is kept by content, measure_drift)
    for e in {e["step"]: e for e in (events[-1], events[0], alerts[0], events[len(events) // 2])}.values():
        assert diagnose(_as_of(folder, e["step"]), trainer_config=fc.settings)["tracker"] == e["tracker"]
    # grpo-lab diagnose --json is that diagnosis on a record: tests/test_watch_emit.py runs the command


def _constant(value):
    def correct(prompts, completions, **kwargs):
        return [value] * len(completions)

    return correct


def test_every_group_dead_stops_with_a_checkpoint_that_resumes(tmp_path):
    trainer = make_trainer(tmp_path, [], funcs=1, max_steps=20)
    trainer.reward_funcs[0] = _constant(1.0)  # every group all-pass: no gradient, rollouts burnt
    fc = StallForecast(stop_after=3).attach(trainer)
    trainer.train()
    assert trainer.state.global_step == 3
    assert [e for e in fc.events if "stop" in e] == [{"step": 3, "stop": "every group unanimous at 3 logs in a row"}]
    ckpt = tmp_path / "trl" / "checkpoint-3"
    assert (ckpt / "trainer_state.json").is_file()
    assert json.loads((ckpt / "trainer_state.json").read_text())["global_step"] == 3

    resumed = make_trainer(tmp_path, [], funcs=1, max_steps=5)
    resumed.reward_funcs[0] = _constant(1.0)
    resumed.train(resume_from_checkpoint=str(ckpt))
    assert resumed.state.global_step == 5
    logged = [e["step"] for e in resumed.state.log_history if "loss" in e]
    assert logged[:3] == [1, 2, 3] and logged[3:] == [4, 5]  # the checkpoint's history, then the steps after it
