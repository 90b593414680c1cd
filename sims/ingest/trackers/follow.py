r"""Following a tracker log as it grows: each refresh reads only what was appended since the last.

:class:`LogFollower` ``(path, fmt, run=None)`` keeps, for each file the run's reader reads, the offset up to which it
has parsed it (the end of the last complete record or line: a cut tail is left for the next refresh) and the rows
parsed so far; :meth:`LogFollower.refresh` reads each file from its offset to its end, adds the new rows, and
returns the run's scalars-only record (:func:`grpo_lab.sims.ingest.trackers.scalars_from`, the mapping
:func:`~grpo_lab.sims.ingest.trackers.read_scalars` applies), equal to a full read of the files as they stand.

What is read incrementally, per format:

==============  ==================================================================================================
jsonl           ``metrics.jsonl``: the complete lines after the offset (a cut last line waits)
tensorboard     each event file: the complete TFRecord records after the offset, checksums checked
                (:func:`.tensorboard.parse_events`); a new event file (a resumed run) read from its start
wandb           a ``.wandb`` log: the leveldb records after the last whole payload (:class:`.wandb.History` keeps
                the run's step metrics between refreshes)
trackio         the project's SQLite store: the run's rows with an ``id`` above the last one read
mlflow, wandb   re-read whole when their files change (MLflow's client owns its store's layout; a history
exports         export is rewritten whole by whoever exports it)
==============  ==================================================================================================

``trainer_state.json`` (rewritten whole at each save) is re-read whole too.

Each refresh says what it found in ``status`` (words for a page or a terminal) and counts ``bytes_read`` and
``rows_parsed`` (what the refresh itself cost: the benchmark and the tests read them). A file is **truncated** when
it is now shorter than its offset, **replaced** when its inode or its first bytes changed (a run restarted into the
same path); either way the log is read again from the start, and ``status`` says so. A log that has not grown is
``"unchanged"``, with :attr:`LogFollower.idle_s`, the seconds since it last grew. Errors are InputError lines, as
the whole readers' (a follower whose refresh failed re-reads from scratch at the next one).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...record import RunRecord
from .common import RunScalars, add_row, charge_files, flatten, pick_run, series_from_rows

__all__ = ["LogFollower", "HEAD_BYTES", "INCREMENTAL"]

HEAD_BYTES = 64  #: the first bytes of a followed file kept to tell a replaced file from a grown one
INCREMENTAL = ("jsonl", "tensorboard", "wandb", "trackio")  #: formats read incrementally (wandb: .wandb logs only)


@dataclass
class _FileState:
    """One followed file: its identity (device, inode, first bytes) and how far it was parsed."""

    ident: tuple
    head: bytes
    offset: int = 0
    extra: object = None  # a wandb History, per file


@dataclass
class _Change:
    kind: str  # "grew", "unchanged", "truncated", "replaced", "new", "gone"
    words: str = ""


@dataclass
class LogFollower:
    """See the module docstring."""

    path: str
    fmt: str
    run: str | None = None
    trainer: str | None = None
    num_generations: int | None = None
    max_bytes: int = 200 * 1024 * 1024
    bytes_read: int = 0  #: bytes read by the last refresh
    rows_parsed: int = 0  #: records / lines / rows parsed by the last refresh
    status: str = "not read yet"  #: the last refresh in words
    change: str = "new"  #: the last refresh's kind: new, grew, unchanged, truncated, replaced
    _files: dict = field(default_factory=dict, repr=False)
    _rows: dict = field(default_factory=dict, repr=False)
    _built: dict = field(default_factory=dict, repr=False)  # name -> (steps, values, rows of _rows they hold)
    _config: dict = field(default_factory=dict, repr=False)
    _record: RunRecord | None = field(default=None, repr=False)
    _grown_at: float = field(default_factory=time.monotonic, repr=False)
    _sig: tuple | None = field(default=None, repr=False)
    _total: int = field(default=0, repr=False)  # bytes parsed in all (the size cap)

    def offsets(self) -> dict[str, int]:
        """``{file: offset}``: how far each followed file has been parsed (a trackio store: the last row id)."""
        return {name: st.offset for name, st in self._files.items()}

    @property
    def idle_s(self) -> float:
        """Seconds since the log last grew (or was first read)."""
        return time.monotonic() - self._grown_at

    # --- the run's files --------------------------------------------------------------------------------------
    def _handle(self):
        from . import list_runs

        fmt, runs = list_runs(self.path, self.fmt)
        self.fmt = fmt
        name, handle = pick_run(runs, self.run, str(self.path), fmt)
        return name, handle

    def _reset(self) -> None:
        self._files, self._rows, self._built, self._config, self._total = {}, {}, {}, {}, 0

    def refresh(self) -> RunRecord:
        """Read what was appended since the last refresh; the run's record as it stands (see the module
        docstring). InputError as the whole reader's: a file that cannot be parsed resets the state (the next
        refresh reads from the start); rows that parse but do not map onto a trainer's metrics yet (a log whose
        first rows are only timings) keep it, and the next refresh reads on from there."""
        self.bytes_read = self.rows_parsed = 0
        try:
            name, handle = self._handle()
            incremental = self.fmt in INCREMENTAL and not (
                self.fmt == "jsonl" and Path(handle).name == "trainer_state.json") and not (
                self.fmt == "wandb" and Path(handle).suffix != ".wandb")
            change = self._read(name, handle) if incremental else self._whole(name, handle)
        except Exception:
            self._reset()
            self._record = None
            raise
        if incremental and (change.kind != "unchanged" or self._record is None):
            self._record = None  # until the rows map (a failed mapping is tried again at the next refresh)
            self._record = self._build(name)
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
        """MLflow, W&B exports, trainer_state.json: re-read whole when the signature of their files changes."""
        from . import _reader, scalars_from

        sig = _whole_signature(self.fmt, handle)
        if sig == self._sig and self._record is not None:
            return _Change("unchanged")
        kind = "new" if self._sig is None else "grew"
        rs = _reader(self.fmt).read_run(name, handle, max_bytes=self.max_bytes, partial_ok=True)
        self._sig = sig
        self.bytes_read = sum(s for _, s, _ in sig)
        self.rows_parsed = sum(len(s) for s, _ in rs.series.values())
        self._record = scalars_from(rs, self.path, trainer=self.trainer, num_generations=self.num_generations,
                                    partial_ok=True)
        return _Change(kind)

    def _read(self, name: str, handle) -> _Change:
        files = _files_of(self.fmt, handle)
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
        extra_config = {}
        for f in files:
            st = self._files[str(f)]
            if self.fmt == "trackio":
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
            if st.offset == 0 and not st.head:
                st.head = data[:HEAD_BYTES] if len(data) >= HEAD_BYTES else b""
            n, used = self._parse(f, data, st, handle, extra_config)
            self.rows_parsed += n
            st.offset += used
            grew |= n > 0
        if self.fmt == "jsonl":
            self._config = _jsonl_config(Path(handle))
        if problem is not None:
            kind = problem.kind if problem.kind != "gone" else "replaced"
        else:
            kind = "new" if first else ("grew" if grew else "unchanged")
        return _Change(kind, problem.words if problem is not None else "")

    def _check(self, f: Path) -> _Change:
        st = self._files.get(str(f))
        if st is None:
            return _Change("new")
        try:
            ident = _identity(f)
        except OSError:
            return _Change("gone", f"{f.name} is gone")
        if ident.ident != st.ident or (st.head and ident.head != st.head):
            return _Change("replaced", f"{f.name} was replaced by another file")
        if self.fmt == "trackio":
            if _top_id(f) < st.offset:
                return _Change("replaced", f"{f.name} was replaced (its rows were removed)")
            return _Change("unchanged")
        if _size(f) < st.offset:
            return _Change("truncated", f"{f.name} was truncated (now {_size(f):,} bytes, "
                                        f"{st.offset:,} were read)")
        return _Change("unchanged")

    def _parse(self, f: Path, data: bytes, st: _FileState, handle, extra_config: dict) -> tuple[int, int]:
        label = str(f)
        if self.fmt == "tensorboard":
            from .tensorboard import parse_events

            return parse_events(data, label, self._rows, self._config, True, header=st.offset == 0,
                                base=st.offset)
        if self.fmt == "wandb":
            from .wandb import History

            if st.extra is None:
                st.extra = History(label)
            before = st.offset
            n, end = st.extra.feed(data, True, base=before)
            return n, end - before
        return _jsonl_lines(f, data, st.offset, self._rows)

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
        import orjson
        from trackio.sqlite_storage import SQLiteStorage
        from trackio.utils import deserialize_values

        db, column, ident = handle
        charge_files([db], self.max_bytes, str(db))
        last = st.offset
        n = 0
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
                    add_row(self._rows, row["step"], values)
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
        return n > 0

    def _build(self, name: str) -> RunRecord:
        from . import scalars_from

        hist = next((s.extra for s in self._files.values() if s.extra is not None), None)
        if hist is not None:  # a .wandb log: its History holds the rows and the step metrics
            rs = hist.scalars(name)
        else:
            rs = RunScalars(name=name, series=self._series(), config=dict(self._config), fmt=self.fmt)
        return scalars_from(rs, self.path, trainer=self.trainer, num_generations=self.num_generations,
                            partial_ok=True)


def _files_of(fmt: str, handle) -> list[Path]:
    if fmt == "tensorboard":
        return [Path(f) for f in [*handle["files"], *handle["extra"]]]
    if fmt == "trackio":
        return [Path(handle[0])]
    return [Path(handle)]


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
    st = f.stat()
    with open(f, "rb") as fh:
        head = fh.read(HEAD_BYTES)
    return _FileState(ident=(st.st_dev, st.st_ino), head=head if len(head) == HEAD_BYTES else b"")


def _jsonl_lines(f: Path, data: bytes, base: int, rows: dict) -> tuple[int, int]:
    """Parse the complete lines of ``data`` (``f`` from byte ``base``) into ``rows``: ``(lines, bytes used)``,
    the bytes up to the last newline (a cut last line waits for the next refresh)."""
    import json

    end = data.rfind(b"\n") + 1
    n = 0
    for line in data[:end].split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError(f"{f} at byte {base}: a line that is not valid JSON") from None
        if not isinstance(obj, dict):
            raise InputError(f"{f}: expected a JSON object a line, got {type(obj).__name__}")
        if "rewards" in obj:
            raise InputError(f"{f}: a line of group rewards; this is a groups JSONL: use --format jsonl-groups")
        step = obj.get("step", obj.get("_step"))
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InputError(f"{f}: 'step' must be an integer >= 0, got {step!r}")
        add_row(rows, step, obj["data"] if isinstance(obj.get("data"), dict) else obj, skip=("step", "_step"))
        n += 1
    return n, end


def _jsonl_config(path: Path) -> dict:
    import json

    cfg = path.parent / "config.json"
    if not cfg.is_file():
        return {}
    try:
        return flatten(json.loads(cfg.read_bytes()))
    except (ValueError, RecursionError):
        raise InputError(f"{cfg}: not valid JSON") from None


def _whole_signature(fmt: str, handle) -> tuple:
    """``((file, size, mtime_ns), ...)`` of the files of a run read whole: an MLflow run's folder (its metrics and
    params), a W&B history export, a ``trainer_state.json``."""
    if fmt == "mlflow":
        root, run_id = handle
        files = sorted(f for f in Path(root).glob(f"*/{run_id}/**/*") if f.is_file() and not f.is_symlink())
    else:
        files = [Path(handle)]
    stats = [(f, _stat(f)) for f in files[:10_000]]
    return tuple((str(f), st.st_size, st.st_mtime_ns) for f, st in stats if st is not None)


def _stat(f: Path):
    try:
        return f.stat()
    except OSError:
        return None  # gone meanwhile: left out
