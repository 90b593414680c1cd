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

Followed as it grows (:mod:`.follow`), a run's folder is read without the client: the file store appends each
logged value to ``metrics/<key>`` as one text line (``FileStore._log_run_metric``, mlflow 3.17.2:
``"{timestamp} {value} {step}\n"``, or with ``" {dataset_name} {dataset_digest}"`` after it), so each metric file
is read from the byte its last complete line ended at, its lines parsed as ``FileStore._get_metric_from_line``
parses them (:func:`metric_lines`); ``params/<key>`` hold the params, one value a file (:func:`run_params`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, charge_files, series_from_rows

__all__ = ["find_runs", "read_run", "run_dir", "metric_files", "metric_lines", "run_params"]


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


def run_dir(root: Path, run_id: str) -> Path | None:
    """The run's folder in the file store: ``<root>/<experiment id>/<run id>`` (``FileStore._get_run_dir``), None
    where it is gone."""
    for d in sorted(Path(root).glob(f"*/{run_id}")):
        if d.is_dir() and not d.parent.name.startswith("."):  # not the store's .trash
            return d
    return None


def _walk_files(folder: Path) -> dict[str, Path]:
    """``{key: file}`` of the files under ``folder``, the key being the path below it (a key holding ``/`` is a
    nested folder, as ``FileStore._get_resource_files`` lists it)."""
    out = {}
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            full = Path(dirpath) / f
            if not full.is_symlink():
                out[full.relative_to(folder).as_posix()] = full
    return out


def metric_files(run: Path) -> dict[str, Path]:
    """``{metric key: its file}`` of a run's folder."""
    return _walk_files(run / "metrics") if (run / "metrics").is_dir() else {}


def metric_lines(data: bytes, label: str, base: int, rows: tuple[list, list]) -> tuple[int, int]:
    """Parse the complete lines of ``data`` (a metric file from byte ``base``) into ``rows`` (its steps and values),
    as ``FileStore._get_metric_from_line`` does: ``timestamp value [step [dataset_name dataset_digest]]``, the step
    being the third field of a 3-field line and 0 otherwise (MLflow's own rule, kept so a followed run reads as the
    client reads it). Returns ``(lines, bytes used)``: a cut last line (no newline yet) waits."""
    end = data.rfind(b"\n") + 1
    n = 0
    at = base
    for line in data[:end].split(b"\n")[:-1]:
        parts = line.decode("utf-8", "replace").strip().split(" ")
        if len(parts) not in (2, 3, 5):
            raise InputError(f"{label} at byte {at}: a malformed metric line ({len(parts)} fields; MLflow writes "
                             "2, 3 or 5)")
        try:
            int(parts[0])
            value = float(parts[1])
            step = int(parts[2]) if len(parts) == 3 else 0
        except ValueError:
            raise InputError(f"{label} at byte {at}: a malformed metric line (not numbers)") from None
        rows[0].append(step)
        rows[1].append(value)
        n += 1
        at += len(line) + 1
    return n, end


def run_params(run: Path) -> dict:
    """The run's params as its config, read from ``params/<key>`` (a value a file, ``FileStore._get_param_from_file``),
    numbers read as numbers as :func:`read_run` reads them."""
    out = {}
    for key, f in (_walk_files(run / "params") if (run / "params").is_dir() else {}).items():
        try:
            out[key] = _as_number(f.read_bytes().decode("utf-8"))  # codecs.open: no newline translation
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{f}: MLflow cannot read it ({exc})") from None
    return out
