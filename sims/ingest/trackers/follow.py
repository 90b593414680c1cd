r"""Following a tracker log as it grows: each refresh reads only what was appended since the last.

:class:`LogFollower` ``(path, fmt, run=None)`` keeps, for each file the run's reader reads, the offset up to which it
has parsed it (the end of the last complete record or line: a cut tail is left for the next refresh) and the rows
parsed so far; :meth:`LogFollower.refresh` reads each file from its offset to its end, adds the new rows, and
returns the run's scalars-only record (:func:`grpo_lab.sims.ingest.trackers.scalars_from`, the mapping
:func:`~grpo_lab.sims.ingest.trackers.read_scalars` applies), equal to a full read of the files as they stand.

What is read, per kind of log (:func:`kind_of`):

=============  ===================================================================================================
jsonl          ``metrics.jsonl``: the complete lines after the offset (a cut last line waits)
tensorboard    each event file: the complete TFRecord records after the offset, checksums checked
               (:func:`.tensorboard.parse_events`); a new event file (a resumed run) read from its start; the event
               file grpo-lab writes its forecast to (``*.grpo_lab``, ``watch --emit``) is not read
wandb          a ``.wandb`` log: the leveldb records after the last whole payload (:class:`.wandb.History` keeps
               the run's step metrics between refreshes)
wandb_csv      a W&B CSV history export grown by appended rows: the complete records after the offset (a record
               ends at a newline outside quotes, :func:`.wandb.complete_csv`; :class:`.wandb.CsvRows` parses them as
               the whole reader does)
wandb_json     a W&B JSON history export: one JSON list, rewritten whole by whoever exports it, so nothing can be
               read in part: re-read whole when its size or modification time changes
mlflow         the run's folder of an MLflow file store: each ``metrics/<key>`` file from its offset (MLflow appends a
               line a value, :func:`.mlflow.metric_lines`), a new metric's file from its start; the params re-read
               when their files change; the ``grpo_lab/...`` metrics (grpo-lab's own forecast) not read
trackio        the project's SQLite store: the run's rows with an ``id`` above the last one read
console        an HF Trainer's captured console (:mod:`.console`): re-read whole when its size or modification time
               changes (a row's step is the progress bar's counter printed before it, so the rows are parsed in order
               from the start; a console is small, a row a logging step)
trainer_state  ``trainer_state.json`` (rewritten whole by the HF Trainer, so TRL, at each save): re-read when its
               size or modification time changes; JSON must be parsed whole, but only the ``log_history`` rows past
               those read are added to the series. A history that no longer starts with the rows read (a run resumed
               from an earlier checkpoint) is read again from its start, said as ``replaced``
=============  ===================================================================================================

grpo-lab's own scalars (``grpo_lab/...``, :data:`.common.OWN_PREFIX`: the forecast ``watch --emit`` writes into the
same run) are never the trainer's data: the readers leave them out of the record
(:func:`~grpo_lab.sims.ingest.trackers.record_from_scalars`), and the follower does not count them as growth.

Each refresh says what it found in ``status`` (words for a page or a terminal) and counts ``bytes_read`` and
``rows_parsed`` (what the refresh itself cost: the benchmark and the tests read them). A file is **truncated** when
it is now shorter than its offset, **replaced** when its inode or its first bytes (up to :data:`HEAD_BYTES`) changed
(a run restarted into the same path); either way the log is read again from the start, and ``status`` says so. A
log that has not grown is ``"unchanged"``, with :attr:`LogFollower.idle_s`, the seconds since it last grew
(:data:`STALE_S`: when a page or ``watch`` says it stopped). Errors are InputError lines, as the whole readers' (a
follower whose refresh failed re-reads from scratch at the next one).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...record import RunRecord
from .common import OWN_EVENT_SUFFIX, OWN_PREFIX, RunScalars, add_row, charge_files, pick_run, series_from_rows

__all__ = ["LogFollower", "HEAD_BYTES", "KINDS", "STALE_S", "kind_of"]

HEAD_BYTES = 64  #: the first bytes of a followed file kept to tell a replaced file from a grown one
KINDS = ("jsonl", "tensorboard", "wandb", "wandb_csv", "wandb_json", "mlflow", "trackio", "trainer_state", "console")
STALE_S = 120.0  #: a followed log that has not grown for this long is said to have stopped (the Replay, watch)


def kind_of(fmt: str, handle) -> str:
    """The kind of log (:data:`KINDS`) of one run's ``handle`` in tracker format ``fmt``: how it is followed."""
    if fmt == "jsonl":
        from .jsonl import is_state

        return "trainer_state" if is_state(Path(handle)) else "jsonl"
    if fmt == "wandb":
        suffix = Path(handle).suffix
        return "wandb" if suffix == ".wandb" else ("wandb_csv" if suffix == ".csv" else "wandb_json")
    return fmt


@dataclass
class _FileState:
    """One followed file: its identity (device, inode, first bytes) and how far it was parsed."""

    ident: tuple
    head: bytes
    offset: int = 0
    extra: object = None  # per file: a wandb History, a CSV export's CsvRows, a jsonl's next line number


@dataclass
class _Change:
    kind: str  # "grew", "unchanged", "truncated", "replaced", "new", "gone"
    words: str = ""


@dataclass
class LogFollower:
    """See the module docstring. ``config``: the run's settings laid over the tracker's (``--trainer-config``, as
    :func:`~grpo_lab.sims.ingest.trackers.read_scalars` takes them)."""

    path: str
    fmt: str
    run: str | None = None
    trainer: str | None = None
    num_generations: int | None = None
    max_bytes: int = 200 * 1024 * 1024
    config: dict | None = None
    bytes_read: int = 0  #: bytes read by the last refresh
    rows_parsed: int = 0  #: records / lines / rows parsed by the last refresh
    status: str = "not read yet"  #: the last refresh in words
    change: str = "new"  #: the last refresh's kind: new, grew, unchanged, truncated, replaced
    kind: str | None = None  #: the kind of log followed (:data:`KINDS`), once read
    _files: dict = field(default_factory=dict, repr=False)
    _rows: dict = field(default_factory=dict, repr=False)
    _built: dict = field(default_factory=dict, repr=False)  # name -> (steps, values, rows of _rows they hold)
    _config: dict = field(default_factory=dict, repr=False)
    _notes: list = field(default_factory=list, repr=False)
    _record: RunRecord | None = field(default=None, repr=False)
    _grown_at: float = field(default_factory=time.monotonic, repr=False)
    _sig: tuple | None = field(default=None, repr=False)  # a file read whole: (file, size, mtime_ns, inode)
    _total: int = field(default=0, repr=False)  # bytes parsed in all (the size cap)
    _state: tuple = field(default=(0, None, None, None), repr=False)  # trainer state: (rows, last row, state, path)
    _listed: tuple | None = field(default=None, repr=False)  # the run's (name, handle), as last listed

    def __post_init__(self) -> None:
        from . import check_num_generations

        check_num_generations(self.num_generations)

    def offsets(self) -> dict[str, int]:
        """``{file: offset}``: how far each followed file has been parsed (a trackio store: the last row id)."""
        return {name: st.offset for name, st in self._files.items()}

    @property
    def idle_s(self) -> float:
        """Seconds since the log last grew (or was first read)."""
        return time.monotonic() - self._grown_at

    # --- the run's files --------------------------------------------------------------------------------------
    def _handle(self):
        """The run followed: ``(name, handle)`` from the reader's own listing. An MLflow run is listed once, while
        its folder stays (MLflow's client lists a run by reading every metric file whole: what following avoids)."""
        from . import list_runs

        if self.kind == "mlflow" and self._listed is not None:
            from .mlflow import run_dir

            if run_dir(*self._listed[1]) is not None:
                return self._listed
        fmt, runs = list_runs(self.path, self.fmt)
        self.fmt = fmt
        self._listed = pick_run(runs, self.run, str(self.path), fmt)
        return self._listed

    def _reset(self) -> None:
        self._files, self._rows, self._built, self._config, self._notes, self._total = {}, {}, {}, {}, [], 0
        self._sig, self._state = None, (0, None, None, None)

    def refresh(self) -> RunRecord:
        """Read what was appended since the last refresh; the run's record as it stands (see the module
        docstring). InputError as the whole reader's: a file that cannot be parsed resets the state (the next
        refresh reads from the start); rows that parse but do not map onto a trainer's metrics yet (a log whose
        first rows are only timings) keep it, and the next refresh reads on from there."""
        self.bytes_read = self.rows_parsed = 0
        try:
            name, handle = self._handle()
            kind = kind_of(self.fmt, handle)
            if kind != self.kind:
                self._reset()
                self.kind = kind
            if kind in ("wandb_json", "console"):
                change = self._whole(name, handle)
            elif kind == "trainer_state":
                change = self._trainer_state(Path(handle))
            else:
                change = self._read(handle)
        except Exception:
            self._reset()
            self._record = self._listed = None
            raise
        if change.kind != "unchanged" or self._record is None:
            self._record = None  # until the rows map (a failed mapping is tried again at the next refresh)
            self._record = self._build(name, handle)
        self._say(change)
        return self._record

    def _say(self, change: _Change) -> None:
        self.change = change.kind
        if change.kind in ("grew", "new", "truncated", "replaced"):
            self._grown_at = time.monotonic()
        steps = 0 if self._record is None else len(self._record.steps.get("step", ()))
        self.status = {
            "new": f"read {steps} steps",
            "grew": f"grew: {self.rows_parsed} new records read ({self.bytes_read:,} bytes), {steps} steps",
            "unchanged": "has not grown since the last look",
            "truncated": f"{change.words}; read again from the start: {steps} steps",
            "replaced": f"{change.words}; read again from the start: {steps} steps",
        }[change.kind]

    def _whole(self, name: str, handle) -> _Change:
        """A W&B JSON history export or a console log: re-read whole when its size or modification time changes."""
        if self.kind == "console":
            from .console import read_run
        else:
            from .wandb import read_run

        one = isinstance(handle, tuple)  # one run of a console of several: (file, index)
        sig = _signature(Path(handle[0] if one else handle))
        if sig == self._sig:
            return _Change("unchanged")
        kind = "new" if self._sig is None else "grew"
        rs = read_run(name, handle if one else Path(handle), max_bytes=self.max_bytes, partial_ok=True)
        self._sig = sig
        self.bytes_read = sig[1]
        self.rows_parsed = sum(len(s) for s, _ in rs.series.values())
        self._rows = {k: (list(s), list(v)) for k, (s, v) in rs.series.items()}
        self._built = {}
        self._config, self._notes = dict(rs.config), list(rs.notes)
        return _Change(kind)

    def _trainer_state(self, path: Path) -> _Change:
        """A trainer_state.json: parsed whole when it changed, its log_history rows past those read added."""
        from .jsonl import add_history, state_history

        sig = _signature(path)
        if sig == self._sig:
            return _Change("unchanged")
        charge_files([path], self.max_bytes, str(path))
        data = path.read_bytes()
        state, history = state_history(path, data)
        n0, last, _, before = self._state
        words = ""
        if n0 and (len(history) < n0 or history[n0 - 1] != last):
            words = (f"{path.name}'s log_history was rewritten (it no longer holds the {n0} rows read: a run "
                     "resumed from an earlier checkpoint)")
            self._rows, self._built, n0 = {}, {}, 0
        self.rows_parsed = add_history(path, history, self._rows, n0)
        self.bytes_read = len(data)
        first = self._sig is None
        self._sig = sig
        self._state = (len(history), history[-1] if history else None, state, path)
        if first:
            return _Change("new")
        if words:
            return _Change("replaced", words)
        return _Change("grew" if self.rows_parsed or path != before else "unchanged")

    def _read(self, handle) -> _Change:
        files = self._files_of(handle)
        first = not self._files
        problem = None
        for f in files:
            c = self._check(f)
            if c.kind in ("truncated", "replaced", "gone"):
                problem = c
                break
        if problem is not None:
            self._reset()
        for f in files:
            if str(f) not in self._files:
                self._files[str(f)] = _identity(f)
        grew = False
        for f, key in files.items():
            st = self._files[str(f)]
            if self.kind == "trackio":
                grew |= self._trackio(handle, st)
                continue
            size = _size(f)
            if size <= st.offset:
                continue
            self._total += size - st.offset
            if self._total > self.max_bytes:
                raise InputError(f"{f}: {self._total} bytes is over the size cap of {self.max_bytes} bytes "
                                 "(raise --max-mb if you trust the files)")
            with open(f, "rb") as fh:
                fh.seek(st.offset)
                data = fh.read(size - st.offset)
            self.bytes_read += len(data)
            if st.offset < HEAD_BYTES:  # the first bytes, as read (to tell a replaced file from a grown one)
                st.head = (st.head[:st.offset] + data)[:HEAD_BYTES]
            n, used = self._parse(f, key, data, st)
            self.rows_parsed += n
            st.offset += used
            grew |= n > 0
        self._side(handle)
        if problem is not None:
            kind = problem.kind if problem.kind != "gone" else "replaced"
        else:
            kind = "new" if first else ("grew" if grew else "unchanged")
        return _Change(kind, problem.words if problem is not None else "")

    def _files_of(self, handle) -> dict[Path, str | None]:
        """``{file: key}`` of the files followed (the key: an MLflow metric's name, else None)."""
        if self.kind == "tensorboard":
            return {Path(f): None for f in [*handle["files"], *handle["extra"]]
                    if not str(f).endswith(OWN_EVENT_SUFFIX)}
        if self.kind == "trackio":
            return {Path(handle[0]): None}
        if self.kind == "mlflow":
            from .mlflow import metric_files

            return {f: key for key, f in metric_files(self._run_dir(handle)).items()
                    if not key.startswith(OWN_PREFIX)}
        return {Path(handle): None}

    def _run_dir(self, handle) -> Path:
        from .mlflow import run_dir

        run = run_dir(*handle)
        if run is None:
            raise InputError(f"{handle[0]}: the run {handle[1]} has no folder in the store")
        return run

    def _side(self, handle) -> None:
        """The config beside the rows: a jsonl's config file, an MLflow run's params (re-read when they change)."""
        if self.kind == "jsonl":
            from .jsonl import side_config

            self._config, self._notes = side_config(Path(handle))
        elif self.kind == "mlflow":
            from .mlflow import run_params

            run = self._run_dir(handle)
            sig = tuple(sorted(_signature(f) for f in (run / "params").rglob("*") if f.is_file()))
            if sig != self._sig:
                self._config, self._sig = run_params(run), sig

    def _check(self, f: Path) -> _Change:
        st = self._files.get(str(f))
        if st is None:
            return _Change("new")
        try:
            ident = _identity(f)
        except OSError:
            return _Change("gone", f"{f.name} is gone")
        n = min(len(st.head), len(ident.head))  # a file shorter now (truncated) is compared on what it holds
        if ident.ident != st.ident or ident.head[:n] != st.head[:n]:
            return _Change("replaced", f"{f.name} was replaced by another file")
        if self.kind == "trackio":
            if _top_id(f) < st.offset:
                return _Change("replaced", f"{f.name} was replaced (its rows were removed)")
            return _Change("unchanged")
        if _size(f) < st.offset:
            return _Change("truncated", f"{f.name} was truncated (now {_size(f):,} bytes, "
                                        f"{st.offset:,} were read)")
        return _Change("unchanged")

    def _parse(self, f: Path, key, data: bytes, st: _FileState) -> tuple[int, int]:
        """Parse the complete records of ``data`` (``f`` from byte ``st.offset``): ``(records, bytes used)``."""
        label = str(f)
        if self.kind == "tensorboard":
            from .tensorboard import parse_events

            return parse_events(data, label, self._rows, self._config, True, header=st.offset == 0,
                                base=st.offset)
        if self.kind == "wandb":
            from .wandb import History

            if st.extra is None:
                st.extra = History(label)
            before = st.offset
            n, end = st.extra.feed(data, True, base=before)
            return n, end - before
        if self.kind == "wandb_csv":
            from .wandb import CsvRows, complete_csv, csv_records

            end = complete_csv(data)
            records = csv_records(data[:end], label, st.offset == 0) if end else []
            if st.extra is None:
                if not records:
                    return 0, 0  # the header is still being written
                st.extra, records = CsvRows(label, records[0]), records[1:]
            return st.extra.add(records, self._rows), end
        if self.kind == "mlflow":
            from .mlflow import metric_lines

            return metric_lines(data, label, st.offset, self._rows.setdefault(key, ([], [])))
        from .jsonl import add_lines, complete_lines

        lines, end = complete_lines(data)
        first = st.extra or 1
        st.extra = first + len(lines)
        return add_lines(f, lines, self._rows, first), end

    def _series(self) -> dict:
        """:func:`.common.series_from_rows` of the rows parsed so far, built from the last build and the rows
        appended since: where a series' new steps all follow its last one, in order (a trainer logging), its arrays
        are extended; else (a resumed run re-logging steps) the series is sorted and de-duplicated whole, as the full
        reader does. Either way equal to a full read."""
        out = {}
        for name, (steps, values) in self._rows.items():
            done = self._built.get(name)
            n0 = done[2] if done is not None else 0
            if not len(steps):
                continue
            if n0 < len(steps):
                new_s = np.asarray(steps[n0:], np.int64)
                new_v = np.asarray(values[n0:], float)
                in_order = bool(np.all(np.diff(new_s) > 0)) and (done is None or not len(done[0]) or
                                                                 new_s[0] > done[0][-1])
                if in_order:
                    s, v = (new_s, new_v) if done is None else (np.concatenate([done[0], new_s]),
                                                                 np.concatenate([done[1], new_v]))
                else:
                    s, v = series_from_rows({name: (steps, values)})[name]
                done = self._built[name] = (s, v, len(steps))
            out[name] = (done[0], done[1])
        return out

    def _trackio(self, handle, st: _FileState) -> bool:
        """Add the run's rows with an id above ``st.offset``; whether any held the trainer's scalars (grpo-lab's own
        rows, ``watch --emit``'s, are not growth)."""
        import orjson
        from trackio.sqlite_storage import SQLiteStorage
        from trackio.utils import deserialize_values

        from .common import flatten

        db, column, ident = handle
        charge_files([db], self.max_bytes, str(db))
        last = st.offset
        n = ours = 0
        try:
            with SQLiteStorage._get_connection(db, timeout=5.0, configure_pragmas=False) as conn:
                cur = conn.execute(f"SELECT id, step, metrics FROM metrics WHERE {column} = ? AND id > ? "
                                   "ORDER BY id", (ident, last))
                for row in cur:
                    try:
                        values = deserialize_values(orjson.loads(row["metrics"]))
                    except orjson.JSONDecodeError:
                        raise InputError(f"{db}: a metrics row that is not JSON (step {row['step']})") from None
                    self.bytes_read += len(row["metrics"])
                    theirs = {k: v for k, v in values.items() if not str(k).startswith(OWN_PREFIX)}
                    ours += not theirs
                    add_row(self._rows, row["step"], theirs)
                    st.offset = max(st.offset, int(row["id"]))
                    n += 1
                cols = SQLiteStorage._table_columns(conn, "configs")
                if cols:
                    ccol = "run_id" if "run_id" in cols else "run_name"
                    crow = conn.execute(f"SELECT config FROM configs WHERE {ccol} = ?", (ident,)).fetchone()
                    if crow:
                        self._config = flatten(deserialize_values(orjson.loads(crow["config"])))
        except sqlite3.Error as exc:
            raise InputError(f"{db}: not a readable trackio store ({exc})") from None
        self.rows_parsed += n
        return n > ours

    def _build(self, name: str, handle) -> RunRecord:
        from . import scalars_from

        if self.kind == "wandb":  # a .wandb log: its History holds the rows and the step metrics
            rs = next(s.extra for s in self._files.values() if s.extra is not None).scalars(name)
        elif self.kind in ("wandb_csv", "wandb_json"):
            from .wandb import export_scalars

            rs = export_scalars(name, self._series())
        elif self.kind == "trainer_state":
            from .jsonl import state_scalars

            _, _, state, path = self._state
            rs = state_scalars(path, state, self._series())
        else:
            rs = RunScalars(name=name, series=self._series(), config=dict(self._config), fmt=self.fmt,
                            notes=list(self._notes))
        return scalars_from(rs, self.path, trainer=self.trainer, num_generations=self.num_generations,
                            partial_ok=True, config=self.config)


def _top_id(db: Path) -> int:
    """The highest row id of a trackio store's metrics table (0 when it cannot be read: read again, errors there)."""
    try:
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return 0
    try:
        return int(conn.execute("SELECT MAX(id) FROM metrics").fetchone()[0] or 0)
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0


def _identity(f: Path) -> _FileState:
    """The file's (device, inode) and its first bytes, up to :data:`HEAD_BYTES` (a shorter file: all of them)."""
    st = f.stat()
    with open(f, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    return _FileState(ident=(st.st_dev, st.st_ino), head=head)


def _signature(f: Path) -> tuple:
    """``(file, size, mtime_ns, inode)`` of a file read whole when it changes (``(file, -1, 0, 0)`` when gone)."""
    try:
        st = f.stat()
    except OSError:
        return (str(f), -1, 0, 0)
    return (str(f), st.st_size, st.st_mtime_ns, st.st_ino)
