r"""The stall forecast inside TRL: the doctor's forecast written beside the trainer's metrics as it trains, an alert
before the stall, and a clean stop when every group is dead.

Two lines in a training script (beside :class:`~grpo_lab.trl_recorder.GroupRecorder`)::

    from grpo_lab.trl_recorder import StallForecast
    StallForecast(alert_before=20, stop_after=10).attach(trainer)     # <- the integration
    trainer.train()

At each log (``on_log``, after the trainer's own tracker callbacks) the callback keeps the logged numbers, and
from :data:`~grpo_lab.sims.doctor.scalars_watch.MIN_STEPS` logged steps on (every ``every`` logs) reads them as
ingest reads the same metrics from a tracker (the dialects of :mod:`grpo_lab.sims.ingest.trackers`, the config
being the trainer's arguments), diagnoses that scalars record (:func:`grpo_lab.sims.doctor.diagnose`, the
trainer's settings below; ``only="tracker"``: the stages the tracker's figures and the rules read, equal to the whole
diagnosis's, as ``grpo-lab watch --emit``) and writes :func:`~grpo_lab.sims.doctor.tracker_values.tracker_values` (the
``grpo_lab/...`` scalars) at the step into every tracker of ``report_to`` that is running: TensorBoard through
the trainer's own ``SummaryWriter`` (its TensorBoardCallback's), W&B into the active run (on the
``train/global_step`` axis the HF callback defines), trackio's and MLflow's active runs. One alert when the
forecast first stall is at most ``alert_before`` steps ahead: ``wandb.run.alert``, ``trackio.alert``; a text
summary ``grpo_lab/alert`` (TensorBoard) and a tag ``grpo_lab.alert`` (MLflow), which have no alert API.

**Settings** (the dynamic-sampling loop whose cap is forecast): ``settings`` (a dict as
:func:`~grpo_lab.sims.doctor.trainer_config.read_trainer_config` returns), else ``trainer_config`` (a file), else
the trainer's own: a :func:`~grpo_lab.trl_recorder.dynamic_sampling_trainer` draws rounds of B prompts until B
groups with a spread are kept, at most ``max_num_gen_batches`` rounds (B = the generation batch / K); a plain
GRPOTrainer has no cap (then nothing stalls and no alert is due).

**Stop** (``stop_after`` N > 0): when TRL's ``frac_reward_zero_std`` is 1 (every group of the window unanimous:
no gradient) at N logs in a row, the callback sets ``control.should_save`` and ``control.should_training_stop``:
the Trainer saves a checkpoint (resumable with ``train(resume_from_checkpoint=...)``) and ends the run instead
of burning rollouts. ``events``: one dict per forecast (``step``, ``tracker``, ``rules``, ``alert``), and the stop.
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.errors import InputError

__all__ = ["StallForecast", "DEAD_SHARE"]

DEAD_SHARE = 1.0 - 1e-9  #: a logged frac_reward_zero_std at least this: every group of the window is unanimous


class StallForecast:
    """See the module docstring. ``every``: forecast at every ``every``-th log; ``num_generations``: K where the
    trainer's arguments do not say it."""

    def __init__(self, *, settings: dict | None = None, trainer_config=None, alert_before: int = 20,
                 stop_after: int = 0, every: int = 1, num_generations: int | None = None):
        if int(alert_before) < 0 or int(stop_after) < 0 or int(every) < 1:
            raise InputError("alert_before and stop_after must be >= 0 and every >= 1")
        if settings is None and trainer_config is not None:
            from grpo_lab.sims.doctor.trainer_config import read_trainer_config

            settings = read_trainer_config(trainer_config)
        self.settings, self.alert_before, self.stop_after = settings, int(alert_before), int(stop_after)
        self.every, self.K = int(every), num_generations
        self.rows: dict = {}
        self.config: dict = {}
        self.events: list[dict] = []
        self.alerted, self.dead, self.logs = False, 0, 0
        self.writers: list = []

    # -- wiring
    def attach(self, trainer):
        """Add the callback to ``trainer``; the settings from the trainer where none were given."""
        from grpo_lab.sims.ingest.trackers.common import flatten

        args = trainer.args
        self.K = self.K or int(args.num_generations)
        self.config = flatten(args.to_dict())
        if self.settings is None:
            self.settings = _trainer_settings(trainer, self.K)
        trainer.add_callback(_make_callback(self, trainer))
        return self

    def _open_writers(self, args, callbacks) -> None:
        report = args.report_to if isinstance(args.report_to, (list, tuple)) else [args.report_to]
        for cb in callbacks:
            name = type(cb).__name__
            if name == "TensorBoardCallback" and getattr(cb, "tb_writer", None) is not None:
                self.writers.append(_SummaryWriterSink(cb.tb_writer))
        if "wandb" in report:
            import wandb

            if wandb.run is not None:
                self.writers.append(_WandbSink(wandb.run))
        if "trackio" in report:
            self.writers.append(_TrackioSink())
        if "mlflow" in report:
            import mlflow

            if mlflow.active_run() is not None:
                self.writers.append(_MlflowSink(mlflow))

    # -- each log
    def record(self):
        """The scalars-only record of what was logged so far, read as ingest reads a tracker's copy of it
        (:func:`grpo_lab.sims.ingest.trackers.record_from_scalars`)."""
        from grpo_lab.sims.ingest.trackers import record_from_scalars
        from grpo_lab.sims.ingest.trackers.common import RunScalars, series_from_rows

        rs = RunScalars(name="live", series=series_from_rows(self.rows), config=dict(self.config), fmt="trl-callback")
        return record_from_scalars(rs, "", num_generations=self.K)

    def on_log(self, step: int, logs: dict, control) -> None:
        from grpo_lab.sims.ingest.trackers.common import add_row

        add_row(self.rows, int(step), logs)
        self.logs += 1
        self._stop(step, logs, control)
        if self.settings is None or self.logs % self.every or len(self.rows.get("frac_reward_zero_std", ((),))[0]) < 5:
            return
        self.forecast(step)

    def forecast(self, step: int) -> dict | None:
        """Diagnose the record so far and write its ``grpo_lab/...`` scalars (and the alert, once) at ``step``."""
        from grpo_lab.sims.doctor import diagnose
        from grpo_lab.sims.doctor.tracker_values import alert_due, alert_text

        try:
            result = diagnose(self.record(), trainer_config=self.settings, num_generations=self.K, only="tracker")
        except InputError as exc:
            self.events.append({"step": int(step), "error": str(exc)})
            return None
        ev = {"step": int(step), "tracker": result["tracker"], "rules": result["rules"], "alert": False}
        for w in self.writers:
            w.write(step, ev["tracker"])
        if not self.alerted and alert_due(ev["tracker"], step, self.alert_before):
            self.alerted = ev["alert"] = True
            title, text = alert_text(ev["tracker"], step, self.settings["cap"])
            ev["alert_text"] = text
            for w in self.writers:
                w.alert(step, title, text)
        self.events.append(ev)
        return ev

    def _stop(self, step: int, logs: dict, control) -> None:
        z = logs.get("frac_reward_zero_std")
        if z is None:
            return
        self.dead = self.dead + 1 if z >= DEAD_SHARE else 0
        if self.stop_after and self.dead >= self.stop_after and not control.should_training_stop:
            control.should_save = True
            control.should_training_stop = True
            self.events.append({"step": int(step), "stop": f"every group unanimous at {self.dead} logs in a row"})


def _trainer_settings(trainer, K: int) -> dict:
    """The trainer's dynamic-sampling loop as stall settings (cap 0 for a plain GRPOTrainer)."""
    from grpo_lab.sims.doctor.trainer_config import settings_from_mapping

    s = settings_from_mapping({k: v for k, v in trainer.args.to_dict().items() if v is not None})
    ds = getattr(trainer, "lab_dynamic_sampling", None)
    if ds:
        s["cap"] = int(ds["max_num_gen_batches"])
    return s


class _SummaryWriterSink:
    """The trainer's own TensorBoard SummaryWriter (torch.utils.tensorboard, as the HF callback made it)."""

    def __init__(self, tb):
        self.tb = tb

    def write(self, step, values):
        for k, v in values.items():
            self.tb.add_scalar(k, v, int(step))
        self.tb.flush()

    def alert(self, step, title, text):
        from grpo_lab.tracker_emit import ALERT_TAG

        self.tb.add_text(ALERT_TAG, f"{title}: {text}", int(step))
        self.tb.flush()


class _WandbSink:
    def __init__(self, run):
        self.run = run

    def write(self, step, values):
        self.run.log({**values, "train/global_step": int(step)})

    def alert(self, step, title, text):
        self.run.alert(title=title[:63], text=text, level="WARN")


class _TrackioSink:
    def write(self, step, values):
        import trackio

        trackio.log(values, step=int(step))

    def alert(self, step, title, text):
        import trackio

        trackio.alert(title=title, text=text, level=trackio.AlertLevel.WARN)


class _MlflowSink:
    def __init__(self, mlflow):
        self.mlflow = mlflow

    def write(self, step, values):
        self.mlflow.log_metrics({k: float(v) for k, v in values.items()}, step=int(step))

    def alert(self, step, title, text):
        self.mlflow.set_tag("grpo_lab.alert", f"step {step}: {title}: {text}")


def _make_callback(fc: StallForecast, trainer):
    from transformers import TrainerCallback

    class StallForecastCallback(TrainerCallback):
        """Forecast at each log, alert before the stall, stop when every group is dead (module docstring)."""

        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero and not fc.writers:
                fc._open_writers(args, trainer.callback_handler.callbacks)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                fc.on_log(state.global_step, {k: v for k, v in logs.items() if np.isscalar(v)}, control)

    return StallForecastCallback()
