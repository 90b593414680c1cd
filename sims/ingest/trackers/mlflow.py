r"""MLflow's local file store (``mlruns/``), read with MLflow's own client.

``mlflow.tracking.MlflowClient(tracking_uri="file:<root>")`` lists the experiments and their runs
(``search_experiments``, ``search_runs``), and gives each metric's history (``get_metric_history``:
``Metric(key, value, timestamp, step)``) and the run's params (the config: ``run.data.params``, strings,
read as numbers where they are). A run is named ``<experiment>/<run name>`` (``/<run id>`` appended where
two share a name). PATH may be the ``mlruns`` folder, a folder holding one, or one run's folder.

MLflow 3 keeps the file store in maintenance mode and refuses to open one unless
``MLFLOW_ALLOW_FILE_STORE=true``; the reader sets it for its own calls only (and restores it), since it
only reads. Malformed metric files (MLflow's ``MlflowException``) are one InputError line. The database
stores (``sqlite:///mlflow.db``) are not read here.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, charge_files, series_from_rows

__all__ = ["find_runs", "read_run"]


@contextlib.contextmanager
def _file_store_allowed():
    old = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = old


def _root(path: Path) -> tuple[Path, str | None]:
    """(the store's root, a run id when PATH is one run's folder)."""
    if (path / "metrics").is_dir() and (path / "meta.yaml").is_file():
        return path.parent.parent, path.name
    if (path / "mlruns").is_dir():
        return path / "mlruns", None
    return path, None


def _client(root: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=root.resolve().as_uri())


def _errors(label: str):
    from mlflow.exceptions import MlflowException

    @contextlib.contextmanager
    def wrap():
        try:
            yield
        except MlflowException as exc:
            raise InputError(f"{label}: MLflow cannot read it ({str(exc.message).splitlines()[0]})") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{label}: MLflow cannot read it ({str(exc).splitlines()[0] if str(exc) else exc})") from None
    return wrap()


def find_runs(path: Path) -> dict[str, tuple[Path, str]]:
    """``{"<experiment>/<run name>": (store root, run id)}``."""
    root, only = _root(path)
    out: dict[str, tuple[Path, str]] = {}
    with _file_store_allowed(), _errors(str(path)):
        client = _client(root)
        for exp in client.search_experiments():
            runs = client.search_runs([exp.experiment_id], max_results=50000)
            names = [r.info.run_name or r.info.run_id for r in runs]
            for r, name in zip(runs, names):
                if only is not None and r.info.run_id != only:
                    continue
                key = f"{exp.name}/{name}"
                if names.count(name) > 1:
                    key += f"/{r.info.run_id}"
                out[key] = (root, r.info.run_id)
    return out


def _as_number(text):
    try:
        return float(text) if "." in text or "e" in text.lower() else int(text)
    except (TypeError, ValueError):
        return text


def read_run(name: str, handle: tuple[Path, str], *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    root, run_id = handle
    with _file_store_allowed(), _errors(name):
        client = _client(root)
        run = client.get_run(run_id)
        run_dir = root / run.info.experiment_id / run_id  # the file store's layout (FileStore._get_run_dir)
        if (run_dir / "metrics").is_dir():
            charge_files([f for f in (run_dir / "metrics").rglob("*") if f.is_file()], max_bytes, name)
        rows = {}
        for key in run.data.metrics:
            hist = client.get_metric_history(run_id, key)
            rows[key] = ([m.step for m in hist], [m.value for m in hist])
        config = {k: _as_number(v) for k, v in run.data.params.items()}
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="mlflow")
