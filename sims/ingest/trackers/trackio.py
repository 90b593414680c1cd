r"""trackio's local store: one SQLite file per project (``$TRACKIO_DIR/<project>.db``, by default
``~/.cache/huggingface/trackio``), read through trackio's own storage layer.

``trackio.sqlite_storage.SQLiteStorage`` holds a project's rows in table ``metrics`` (``run_id``,
``run_name``, ``step``, ``metrics``: a JSON object of the step's values, encoded by
``trackio.utils.serialize_values``) and its config in ``configs``. This reader opens the file with
``SQLiteStorage._get_connection``, finds each run with ``_resolve_run_identity`` and decodes rows with
``orjson`` and ``trackio.utils.deserialize_values``, the calls ``SQLiteStorage.get_metric_values`` and
``get_run_config`` (trackio 0.43.0) make.

Deviation (named): those public methods take a *project name*, resolve it against ``TRACKIO_DIR`` (a
module global fixed at import from ``$TRACKIO_DIR``) and first try to hydrate the folder from a remote
Hub dataset (``_ensure_hub_loaded``); a reader of a folder the user names, that must make no network
request, calls the same storage functions on the file's own path instead, and reads every metric of a run
in one pass (``get_metric_values`` reads all rows once per metric). A run is ``<project>/<run name>``
(``/<run id>`` appended where two share a name). A damaged file is one InputError (SQLite's message).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, add_row, charge_files, flatten, series_from_rows

__all__ = ["find_runs", "read_run"]


def _dbs(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(f for f in path.glob("*.db") if f.is_file() and not f.is_symlink())


def find_runs(path: Path) -> dict[str, tuple[Path, str, str]]:
    """``{"<project>/<run>": (db file, identity column, identity)}``."""
    from trackio.sqlite_storage import SQLiteStorage

    out = {}
    for db in _dbs(path):
        try:
            with SQLiteStorage._get_connection(db, timeout=5.0, configure_pragmas=False) as conn:
                by_id = SQLiteStorage._supports_run_ids(conn, "metrics")
                rows = conn.execute(
                    "SELECT run_name, run_id FROM metrics GROUP BY run_id ORDER BY MIN(timestamp)" if by_id else
                    "SELECT run_name, run_name AS run_id FROM metrics GROUP BY run_name ORDER BY MIN(timestamp)"
                ).fetchall()
        except sqlite3.Error as exc:
            raise InputError(f"{db}: not a readable trackio store ({exc})") from None
        names = [r["run_name"] for r in rows]
        for r in rows:
            key = f"{db.stem}/{r['run_name']}"
            if names.count(r["run_name"]) > 1:
                key += f"/{r['run_id']}"
            out[key] = (db, "run_id" if by_id else "run_name", r["run_id"])
    return out


def read_run(name: str, handle: tuple[Path, str, str], *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    import orjson
    from trackio.sqlite_storage import SQLiteStorage
    from trackio.utils import deserialize_values

    db, column, ident = handle
    charge_files([db], max_bytes, str(db))
    rows: dict = {}
    config: dict = {}
    try:
        with SQLiteStorage._get_connection(db, timeout=5.0, configure_pragmas=False) as conn:
            cur = conn.execute(f"SELECT step, metrics FROM metrics WHERE {column} = ? ORDER BY timestamp, id", (ident,))
            for row in cur:
                step = row["step"]
                try:
                    values = deserialize_values(orjson.loads(row["metrics"]))
                except orjson.JSONDecodeError:
                    raise InputError(f"{db}: run {name!r} has a metrics row that is not JSON (step {step})") from None
                add_row(rows, step, values)
            if SQLiteStorage._table_columns(conn, "configs"):
                ccol = "run_id" if "run_id" in SQLiteStorage._table_columns(conn, "configs") else "run_name"
                crow = conn.execute(f"SELECT config FROM configs WHERE {ccol} = ?", (ident,)).fetchone()
                if crow:
                    config = flatten(deserialize_values(orjson.loads(crow["config"])))
    except sqlite3.Error as exc:
        raise InputError(f"{db}: not a readable trackio store ({exc})") from None
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="trackio")
