r"""Write a run record while the run is still going, in memory bounded by one segment.

:func:`grpo_lab.sims.record.write_record` writes a whole record at once; a trainer that
wants the record readable after every step would have to hold and rewrite every group
of the run each time. :class:`RecordAppender` instead lists the ``groups`` and ``steps``
tables in run.json as *chunks* (``files.groups = [{name, sha256}, ...]``, which
:func:`~grpo_lab.sims.record.read_record` concatenates row-wise):

* sealed chunks: full segments (``segment_rows`` rows or a little more), compressed
  (``numpy.savez_compressed``), written once and never again;
* one open chunk per table: the rows appended since the last seal, plus ``pending``
  rows the caller may still change (the current generation batch), rewritten at each
  :meth:`RecordAppender.flush` *uncompressed* (a stored zip member per column, with a
  fixed timestamp, so equal rows give equal bytes and an unchanged chunk is not written
  again): its cost is a copy and a checksum, not a compression, at every flush.
  :meth:`RecordAppender.close` (the record is finished) writes them once more, compressed.

Each flush writes the open chunks under fresh content-addressed names, replaces
run.json in one ``os.replace``, then removes the chunk files run.json no longer
names (those of the run.json just replaced stay until the next flush, for a reader that
opened it a moment before), so a reader sees a consistent record after any flush and after a kill at any
point (the same guarantee as ``write_record``: every file is written to a temporary name,
fsynced, then renamed). The ``evals`` table (small: evaluations x
prompts) is set whole in ``RecordAppender.evals`` and written as one chunk. Memory held: one
open segment per table (the appended arrays themselves, not copies) plus the caller's pending
rows; the run.json file table grows by one short entry per sealed segment.

With ``background=True`` a flush only hands over references to the appended arrays and a
copy of the pending rows (the caller's thread pays for the pending copy and a shallow copy of
the metadata), and a writer thread concatenates, compresses, writes and fsyncs, in order.
Flushes that arrive while the writer is busy are merged into one waiting job (its sealed
segments accumulate; the newest open chunk, evals and metadata replace the older ones), so
memory stays bounded when the disk is slower than the flushes. :meth:`RecordAppender.wait`
blocks until everything submitted is on disk; a write error is raised by the next call.

Metadata: a *tuple* value (for example a run's prompt labels) is taken as frozen: it is not
copied, and its JSON text is computed once and reused while the same tuple object is passed
(pass a new tuple when it changes). Other values are deep-copied at each flush.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import threading
import zipfile
from pathlib import Path

import numpy as np

from .errors import InputError
from .jsonable import jsonable
from .record import FORMAT, FORMAT_VERSION, _check_groups, _npz_bytes, atomic_write_bytes

__all__ = ["RecordAppender", "SEGMENT_ROWS"]

SEGMENT_ROWS = 4096  #: rows per sealed chunk (groups or steps)
_TABLES = ("groups", "steps")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  #: the stored members' timestamp: fixed, so equal arrays give equal bytes
_FROZEN = (tuple, str, bytes, int, float, bool, type(None))  #: metadata values taken as they are


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Row-wise concatenation of a table's parts (the one part itself when there is one)."""
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return parts[0] if parts else {}
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _rows(table: dict[str, np.ndarray]) -> int:
    return len(next(iter(table.values()))) if table else 0


def npz_stored(arrays: dict[str, np.ndarray]) -> bytes:
    """An uncompressed ``.npz`` (what ``numpy.savez`` writes, read back by ``numpy.load``) whose bytes
    depend on the arrays alone: each column is a stored zip member ``<name>.npy`` with a fixed timestamp."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arr), allow_pickle=False)
            zf.writestr(zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_TIME), member.getvalue())
    return buf.getvalue()


def _json_value(value) -> str:
    """``value`` as it appears one level inside ``json.dumps(meta, indent=2)`` (strict JSON)."""
    return json.dumps(jsonable(value), indent=2, allow_nan=False).replace("\n", "\n  ")


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
        # appended parts since the last seal (the caller's arrays, not copies) and their row count
        self.open: dict[str, list[dict[str, np.ndarray]]] = {t: [] for t in _TABLES}
        self._open_rows = dict.fromkeys(_TABLES, 0)
        self.evals: dict[str, np.ndarray] = {}  # small (evaluations x prompts): rewritten whole at each flush
        # array files of an earlier record in this directory: removed at the first flush
        self._written = {f.name for f in self.path.glob("*.npz") if f.name.split("-")[0] in (*_TABLES, "evals")}
        self._previous: set[str] = set()
        self._json_cache: dict[str, tuple] = {}  # key -> (tuple value, its JSON text)
        self._error: BaseException | None = None
        self._background = bool(background)
        self._cond = threading.Condition()
        self._job: dict | None = None  # submitted, not yet taken by the writer (merged flushes)
        self._busy = False  # the writer is writing a job
        self._last: dict | None = None  # the last job written: its open chunks, compressed by close()
        if background:
            threading.Thread(target=self._writer, name="grpo-lab-record-writer", daemon=True).start()

    def append(self, table: str, rows: dict[str, np.ndarray]) -> None:
        """Add final rows (columns of equal length) to ``table`` ("groups" or "steps").

        The arrays are kept as they are (not copied) until written: do not change them afterwards."""
        part = {k: np.asarray(v) for k, v in rows.items()}
        if table == "groups" and part:
            _check_groups(part)
        self.open[table].append(part)
        self._open_rows[table] += _rows(part)

    def _write_chunk(self, table: str, arrays: dict[str, np.ndarray], compress: bool) -> dict:
        data = _npz_bytes(arrays) if compress else npz_stored(arrays)
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
        job = {"seal": [], "tail": {}}
        for table in _TABLES:
            if self._open_rows[table] >= self.segment_rows:
                job["seal"].append((table, self.open[table]))
                self.open[table], self._open_rows[table] = [], 0
            extra = {k: np.array(v) for k, v in (pending.get(table) or {}).items()}  # the caller may change pending
            if table == "groups" and extra:
                _check_groups(extra)
            job["tail"][table] = [*self.open[table], extra]
        job["evals"] = {k: np.array(v) for k, v in self.evals.items()}
        job["meta"] = {k: v if isinstance(v, _FROZEN) else copy.deepcopy(v) for k, v in self.meta.items()}
        if not self._background:
            self._write(job)
            return
        with self._cond:
            if self._job is not None:  # the writer has not started the previous flush: merge into it
                job["seal"] = self._job["seal"] + job["seal"]
            self._job = job
            self._cond.notify_all()

    def wait(self) -> None:
        """Block until every flush so far is on disk (background mode); raise a write error."""
        with self._cond:
            while self._job is not None or self._busy:
                self._cond.wait()
        self._raise()

    def close(self) -> None:
        """Wait for the writer; write the last flush's open chunks once more, compressed (a finished record is not
        rewritten again, so its last rows are stored as small as its sealed ones); then remove the files the last
        run.json does not name."""
        self.wait()
        if self._last is not None:
            self._write({**self._last, "seal": [], "final": True})
            self._last = None
        for old in self._written - self._previous:
            (self.path / old).unlink(missing_ok=True)
        self._written = set(self._previous)

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _writer(self) -> None:
        while True:
            with self._cond:
                while self._job is None:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait()
                job, self._job, self._busy = self._job, None, True
            try:
                self._write(job)
            except BaseException as exc:  # handed to the caller's thread at its next call
                self._error = exc

    def _meta_text(self, meta: dict) -> str:
        """``json.dumps(jsonable(meta), indent=2)`` + newline, with each tuple value's text reused."""
        parts = []
        for key, value in meta.items():
            if isinstance(value, tuple):
                hit = self._json_cache.get(key)
                if hit is None or hit[0] is not value:
                    hit = self._json_cache[key] = (value, _json_value(value))
                text = hit[1]
            else:
                text = _json_value(value)
            parts.append(f"  {json.dumps(str(key))}: {text}")
        return "{\n" + ",\n".join(parts) + "\n}\n"

    def _write(self, job: dict) -> None:
        """Write the job's sealed segments in order, then its open chunks (compressed for the ``final`` job of
        :meth:`close`) and run.json."""
        for table, parts in job["seal"]:
            self.sealed[table].append(self._write_chunk(table, _concat(parts), compress=True))
        final = job.get("final", False)
        files = {}
        for table in _TABLES:
            tail = _concat(job["tail"][table])
            files[table] = self.sealed[table] + ([self._write_chunk(table, tail, compress=final)] if tail else [])
        files["evals"] = [self._write_chunk("evals", job["evals"], compress=final)] if job["evals"] else []
        meta = job["meta"]
        meta.update(format=FORMAT, format_version=FORMAT_VERSION, files=files)
        atomic_write_bytes(self.path / "run.json", self._meta_text(meta).encode())
        keep = {e["name"] for t in (*_TABLES, "evals") for e in files[t]}
        # the files of the run.json just replaced stay one more flush: a reader that opened it
        # a moment ago can still read them
        for old in self._written - keep - self._previous:
            (self.path / old).unlink(missing_ok=True)
        self._written, self._previous = keep | self._previous, keep
        self._last = job  # what close() compresses
