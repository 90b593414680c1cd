r"""Write a run record while the run is still going, in memory bounded by one segment.

:func:`grpo_lab.sims.record.write_record` writes a whole record at once; a trainer that
wants the record readable after every step would have to hold and rewrite every group
of the run each time. :class:`RecordAppender` instead lists the ``groups`` and ``steps``
tables in run.json as *chunks* (``files.groups = [{name, sha256}, ...]``, which
:func:`~grpo_lab.sims.record.read_record` concatenates row-wise):

* sealed chunks: full segments (``segment_rows`` rows), written once and never again;
* one open chunk per table: the rows appended since the last seal, plus ``pending``
  rows the caller may still change (the current generation batch), rewritten at each
  :meth:`RecordAppender.flush`.

Each flush writes the open chunks under fresh content-addressed names, replaces
run.json in one ``os.replace``, then removes the chunk files run.json no longer
names (those of the run.json just replaced stay until the next flush, for a reader that
opened it a moment before), so a reader sees a consistent record after any flush and after a kill at any
point (the same guarantee as ``write_record``). The ``evals`` table (small: evaluations x
prompts) is set whole in ``RecordAppender.evals`` and written as one chunk. Memory held: one
open segment per table plus the caller's pending rows; the run.json file table grows by one
short entry per sealed segment.

With ``background=True`` a flush only copies the rows it will write (the caller's thread pays
for a few small array copies) and a writer thread does the compression, the writes and the
fsyncs, in order; when flushes arrive faster than the disk takes them, the writer writes
every sealed segment but only the newest open chunk and run.json. :meth:`RecordAppender.wait`
blocks until everything submitted is on disk; a write error is raised by the next call.
"""

from __future__ import annotations

import copy
import hashlib
import json
import queue
import threading
from pathlib import Path

import numpy as np

from .errors import InputError
from .jsonable import jsonable
from .record import FORMAT, FORMAT_VERSION, _check_groups, _npz_bytes, atomic_write_bytes

__all__ = ["RecordAppender", "SEGMENT_ROWS"]

SEGMENT_ROWS = 4096  #: rows per sealed chunk (groups or steps)
_TABLES = ("groups", "steps")


def _stack(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    parts = [p for p in parts if p]
    if not parts:
        return {}
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def _rows(table: dict[str, np.ndarray]) -> int:
    return len(next(iter(table.values()))) if table else 0


class RecordAppender:
    """Append rows to a record directory and keep it readable (see the module docstring).

    Parameters
    ----------
    path : directory of the record (created; must be writable).
    meta : run.json metadata besides the file table (must hold ``n_prompts`` by the first flush).
    segment_rows : rows per sealed chunk; the open chunk holds fewer.
    background : write in a writer thread (see the module docstring).
    """

    def __init__(self, path, meta: dict, segment_rows: int = SEGMENT_ROWS, background: bool = False):
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create run directory {str(self.path)!r}: {exc.strerror}") from None
        self.meta = dict(meta)
        self.segment_rows = int(segment_rows)
        self.sealed: dict[str, list[dict]] = {t: [] for t in _TABLES}
        self.open: dict[str, list[dict[str, np.ndarray]]] = {t: [] for t in _TABLES}
        self.evals: dict[str, np.ndarray] = {}  # small (evaluations x prompts): rewritten whole at each flush
        # array files of an earlier record in this directory: removed at the first flush
        self._written = {f.name for f in self.path.glob("*.npz") if f.name.split("-")[0] in (*_TABLES, "evals")}
        self._previous: set[str] = set()
        self._jobs: queue.Queue | None = queue.Queue() if background else None
        self._error: BaseException | None = None
        self._idle = threading.Event()
        self._idle.set()
        if background:
            threading.Thread(target=self._writer, name="grpo-lab-record-writer", daemon=True).start()

    def append(self, table: str, rows: dict[str, np.ndarray]) -> None:
        """Add final rows (columns of equal length) to ``table`` ("groups" or "steps")."""
        self.open[table].append({k: np.asarray(v) for k, v in rows.items()})

    def _write_chunk(self, table: str, arrays: dict[str, np.ndarray]) -> dict:
        data = _npz_bytes(arrays)
        digest = hashlib.sha256(data).hexdigest()
        name = f"{table}-{digest[:16]}.npz"
        if not (self.path / name).exists():
            atomic_write_bytes(self.path / name, data)
        return {"name": name, "sha256": digest}

    def flush(self, pending: dict[str, dict[str, np.ndarray]] | None = None, **meta_updates) -> None:
        """Write the open chunks (with ``pending`` rows per table appended) and run.json.

        ``pending`` rows are written but not kept: pass them again (changed or not) at the
        next flush until they are final, then :meth:`append` them.
        """
        self._raise()
        pending = pending or {}
        self.meta.update(meta_updates)
        if "n_prompts" not in self.meta:
            raise InputError("run record: n_prompts is required")
        job = {"seal": {}, "tail": {}}
        for table in _TABLES:
            opened = _stack(self.open[table])
            if _rows(opened) >= self.segment_rows:
                job["seal"][table] = opened
                opened = {}
            tail = _stack([opened, pending.get(table) or {}])  # fresh arrays: the caller may change pending
            if table == "groups" and tail:
                _check_groups(tail)
            job["tail"][table] = tail
            self.open[table] = [opened] if opened else []
        job["evals"] = {k: np.array(v) for k, v in self.evals.items()}
        job["meta"] = copy.deepcopy(self.meta)
        if self._jobs is None:
            self._write([job])
        else:
            self._idle.clear()
            self._jobs.put(job)

    def wait(self) -> None:
        """Block until every flush so far is on disk (background mode); raise a write error."""
        self._idle.wait()
        self._raise()

    def close(self) -> None:
        """Wait for the writer, then remove the files the last run.json does not name (a finished record)."""
        self.wait()
        for old in self._written - self._previous:
            (self.path / old).unlink(missing_ok=True)
        self._written = set(self._previous)

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _writer(self) -> None:
        while True:
            jobs = [self._jobs.get()]
            while not self._jobs.empty():
                jobs.append(self._jobs.get_nowait())
            try:
                self._write(jobs)
            except BaseException as exc:  # handed to the caller's thread at its next call
                self._error = exc
            if self._jobs.empty():
                self._idle.set()

    def _write(self, jobs: list[dict]) -> None:
        """Write every sealed segment of ``jobs`` in order, then the last job's open chunks and run.json."""
        for job in jobs:
            for table, arrays in job["seal"].items():
                self.sealed[table].append(self._write_chunk(table, arrays))
        last = jobs[-1]
        files = {}
        for table in _TABLES:
            tail = last["tail"][table]
            files[table] = self.sealed[table] + ([self._write_chunk(table, tail)] if tail else [])
        files["evals"] = [self._write_chunk("evals", last["evals"])] if last["evals"] else []
        meta = last["meta"]
        meta.update(format=FORMAT, format_version=FORMAT_VERSION, files=files)
        text = json.dumps(jsonable(meta), indent=2, allow_nan=False) + "\n"
        atomic_write_bytes(self.path / "run.json", text.encode())
        keep = {e["name"] for t in (*_TABLES, "evals") for e in files[t]}
        # the files of the run.json just replaced stay one more flush: a reader that opened it
        # a moment ago can still read them
        for old in self._written - keep - self._previous:
            (self.path / old).unlink(missing_ok=True)
        self._written, self._previous = keep | self._previous, keep
