r"""Writers of the forecast into the run's own tracker (``grpo-lab watch --emit``, the TRL callback).

Each writer puts the ``grpo_lab/...`` scalars of :func:`grpo_lab.sims.doctor.tracker_values.tracker_values` at the
trainer's step into the same tracker and run the trainer logs to, and raises an alert through the tracker's own
alert API. The tracker's library is imported only when its writer is made.

===========  =================================================================================================
tensorboard  a new event file in the run's log dir (tensorboard's own ``EventFileWriter``; no torch), scalars as
             ``Summary.Value(simple_value)`` at the step, the alert as a text summary ``grpo_lab/alert`` (the
             text plugin's ``text_pb``: TensorBoard has no alert API)
wandb        the run resumed (``wandb.init(id=<the run's id>, resume="allow")``), offline by default (a new
             ``offline-run-*-<id>-N`` folder that ``wandb sync`` uploads into the same run), online when asked;
             ``define_metric("grpo_lab/*", step_metric="grpo_lab/step")`` so each value sits at the trainer's step
             whatever W&B's own row counter is; the alert is ``run.alert(title, text, level="WARN")``
mlflow       ``MlflowClient.log_batch`` into the run (its store and run id), the alert as the tag ``grpo_lab.alert``
             (MLflow has no alert API)
trackio      ``trackio.init(project, name=<the run>, resume="must")``, ``trackio.log(values, step)`` and
             ``trackio.alert(title, text, level="WARN")``
===========  =================================================================================================

:func:`open_writer` picks the writer for a followed log (its format as :mod:`grpo_lab.sims.ingest.trackers`
detects it). A writer's ``write(step, values)`` and ``alert(step, title, text)``; ``close()`` flushes.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["TensorBoardWriter", "WandbWriter", "MlflowWriter", "TrackioWriter", "open_writer", "ALERT_TAG"]

ALERT_TAG = "grpo_lab/alert"  #: the text summary / tag that carries the alert where the tracker has no alert API
STEP_KEY = "grpo_lab/step"  #: the W&B step metric of the grpo_lab/ curves


class TensorBoardWriter:
    """Scalars and the alert into a new event file of ``logdir`` (the trainer's own log dir)."""

    def __init__(self, logdir):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        from grpo_lab.sims.doctor.tracker_values import EVENT_SUFFIX

        self.logdir = Path(logdir)
        self._w = EventFileWriter(str(self.logdir), filename_suffix=EVENT_SUFFIX)

    def _event(self, step: int, summary) -> None:
        from tensorboard.compat.proto import event_pb2

        self._w.add_event(event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary))

    def write(self, step: int, values: dict) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary

        self._event(step, Summary(value=[Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()]))
        self._w.flush()

    def alert(self, step: int, title: str, text: str) -> None:
        from tensorboard.plugins.text.summary_v2 import text_pb

        self._event(step, text_pb(ALERT_TAG, f"{title}: {text}"))
        self._w.flush()

    def close(self) -> None:
        self._w.close()


def _wandb_run_file(path: Path) -> Path:
    """The ``run-<id>.wandb`` log of a W&B offline run folder (or the file itself)."""
    if path.is_file():
        return path
    found = sorted(path.glob("run-*.wandb")) or sorted(f for f in path.glob("*/run-*.wandb")
                                                      if not f.parent.is_symlink())  # wandb's latest-run link
    if len(found) != 1:
        raise InputError(f"{str(path)!r}: --emit to W&B needs one run folder (offline-run-*), found "
                         f"{len(found)} run logs")
    return found[0]


def _wandb_project(log: Path) -> str | None:
    """The project the run's own ``run`` record names (None where it names none)."""
    from wandb.proto import wandb_internal_pb2

    from grpo_lab.sims.ingest.trackers.wandb import _payloads

    for _, payload, _end in _payloads(log.read_bytes(), str(log), True):
        rec = wandb_internal_pb2.Record.FromString(payload)
        if rec.WhichOneof("record_type") == "run":
            return rec.run.project or None
    return None


class WandbWriter:
    """The W&B run of ``path`` (an offline run folder or its ``.wandb`` file) resumed, offline unless ``online``."""

    def __init__(self, path, online: bool = False):
        import wandb

        log = _wandb_run_file(Path(path))
        m = re.fullmatch(r"run-([A-Za-z0-9_-]+)\.wandb", log.name)
        if not m:
            raise InputError(f"{str(log)!r} is not named run-<id>.wandb")
        self.run_id = m.group(1)
        root = log.parent.parent.parent  # <dir>/wandb/offline-run-*/run-<id>.wandb: wandb.init's dir is <dir>
        self.run = wandb.init(id=self.run_id, resume="allow", project=_wandb_project(log), dir=str(root),
                              mode="online" if online else "offline", settings=wandb.Settings(silent=True))
        self.run.define_metric(STEP_KEY)
        self.run.define_metric("grpo_lab/*", step_metric=STEP_KEY)
        self.folder = Path(self.run.dir).parent

    def write(self, step: int, values: dict) -> None:
        self.run.log({**values, STEP_KEY: int(step)})

    def alert(self, step: int, title: str, text: str) -> None:
        self.run.alert(title=title[:63], text=text, level="WARN")

    def close(self) -> None:
        self.run.finish()


class MlflowWriter:
    """The MLflow run ``run_id`` of the file store ``store`` (an ``mlruns`` folder)."""

    def __init__(self, store, run_id: str):
        from grpo_lab.sims.ingest.trackers.mlflow import _client, _file_store_allowed

        self._allowed = _file_store_allowed
        with self._allowed():
            self.client = _client(Path(store))
        self.run_id = run_id

    def write(self, step: int, values: dict) -> None:
        from mlflow.entities import Metric

        ms = int(time.time() * 1000)
        with self._allowed():
            self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), ms, int(step)) for k, v in values.items()])

    def alert(self, step: int, title: str, text: str) -> None:
        with self._allowed():
            self.client.set_tag(self.run_id, "grpo_lab.alert", f"step {step}: {title}: {text}")

    def close(self) -> None:
        return None


class TrackioWriter:
    """The trackio run ``name`` of the store ``db`` (``<TRACKIO_DIR>/<project>.db``), resumed. trackio reads its
    folder from ``TRACKIO_DIR`` when first imported: set here where it is not imported yet, else it must agree."""

    def __init__(self, db, name: str):
        import os
        import sys

        folder = Path(db).resolve().parent
        if "trackio" not in sys.modules:
            os.environ["TRACKIO_DIR"] = str(folder)
        import trackio
        from trackio.utils import TRACKIO_DIR

        if Path(TRACKIO_DIR).resolve() != folder:
            raise InputError(f"trackio already writes to {TRACKIO_DIR}, not to {folder}: set TRACKIO_DIR={folder}")
        self.trackio = trackio
        self.run = trackio.init(project=Path(db).stem, name=name, resume="must", embed=False, auto_log_gpu=False,
                                auto_log_cpu=False)  # this process's system metrics are not the run's

    def write(self, step: int, values: dict) -> None:
        self.run.log(values, step=int(step))

    def alert(self, step: int, title: str, text: str) -> None:
        self.trackio.alert(title=title, text=text, level=self.trackio.AlertLevel.WARN)

    def close(self) -> None:
        self.run.finish()


def _one_run(path: Path, fmt: str, run: str | None):
    from grpo_lab.sims.ingest.trackers import list_runs

    _, runs = list_runs(path, fmt)
    name = run or (next(iter(runs)) if len(runs) == 1 else None)
    if name is None or name not in runs:
        raise InputError(f"--emit to {fmt} needs the run (--run NAME): the store holds {len(runs)} "
                         f"({', '.join(sorted(runs)[:5])})")
    return runs[name]


def open_writer(path, fmt: str, run: str | None = None, *, wandb_online: bool = False):
    """The writer for the followed log ``path`` of format ``fmt`` (``run``: the run where the store holds several)."""
    p = Path(path)
    if fmt == "tensorboard":  # into the followed run's own folder (a log dir may hold several runs)
        handle = _one_run(p, fmt, run)
        return TensorBoardWriter(Path(handle["files"][0]).parent)
    if fmt == "wandb":
        return WandbWriter(p, online=wandb_online)
    if fmt == "mlflow":
        root, run_id = _one_run(p, fmt, run)
        return MlflowWriter(root, run_id)
    if fmt == "trackio":
        db, _, _ = _one_run(p, fmt, run)
        name = (run or "").split("/", 1)[-1] or None
        if name is None:
            from grpo_lab.sims.ingest.trackers import list_runs

            name = next(iter(list_runs(p, fmt)[1])).split("/", 1)[1]
        return TrackioWriter(Path(db), name)
    raise InputError(f"--emit writes to tensorboard, wandb, mlflow or trackio logs, not to a {fmt} log")
