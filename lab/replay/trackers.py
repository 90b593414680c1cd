"""Tracker logs in the runs folders: listed by the Replay beside the run records, opened and followed as they grow.

A runs folder (:func:`grpo_lab.replay.catalog.runs_folders`) may hold a trainer's live tracker log as well as run
records; :func:`tracker_logs` finds, in each folder, up to :data:`MAX_DEPTH` levels down:

- a folder holding a ``*tfevents*`` file (a TensorBoard run; its subfolders are its own, e.g. hparams);
- a W&B offline run folder (``offline-run-*`` or ``run-*`` holding a ``.wandb`` file);
- a ``metrics.jsonl`` of per-step scalars (verl's file logger, tinker-cookbook;
  :func:`grpo_lab.sims.ingest.trackers.jsonl.is_metrics_jsonl`, so a groups JSONL is not listed), or an empty one
  (a trainer that has not logged its first step yet: a run of zero steps until it does);
- a TRL / Unsloth output folder whose only log is its ``trainer_state.json`` or its latest ``checkpoint-N/``'s
  (one that also holds another tracker's log, e.g. TensorBoard under ``runs/``, is listed by that log alone);
- an HF Trainer's console log (a ``.log`` / ``.out`` / ``.txt`` / ``.err`` file whose first MiB holds a printed
  metrics dict, :func:`grpo_lab.sims.ingest.trackers.console.is_console`; each run of a console of several).

Each is confirmed with the trackers package's own :func:`~grpo_lab.sims.ingest.trackers.detect_format` and
:func:`~grpo_lab.sims.ingest.trackers.list_runs` (one run only: a folder of several runs is not listed, and its
subfolders are looked in as any other); a source that fails to read is skipped. The walk is bounded: at most
:data:`MAX_ENTRIES` directory entries per runs folder, no symbolic link followed, nothing below a run record
(``run.json``) or a found log.

A log's label is :data:`PREFIX` + its path in its folder + its format, e.g. ``live tracker log: exp/metrics.jsonl
(jsonl)``, so the run picker says it is a tracker log still read as it grows, not a record. :class:`TrackerSource`
reads it (:func:`~grpo_lab.sims.ingest.trackers.read_scalars` with ``partial_ok=True``: a cut last line or record is
left for later); :class:`TrackerFollower` polls it as :class:`~grpo_lab.replay.follow.RecordFollower` polls a record.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers.follow import STALE_S
from grpo_lab.sims.record import RunRecord

from .catalog import runs_folders

__all__ = ["PREFIX", "MAX_DEPTH", "MAX_ENTRIES", "TrackerSource", "TrackerFollower", "tracker_logs", "follower",
           "signature", "read_shared"]

PREFIX = "live tracker log: "  #: the start of a tracker log's label in the run picker
MAX_DEPTH = 4  #: levels below a runs folder looked in (runs/<exp>/<trainer>/wandb/offline-run-x)
MAX_ENTRIES = 5_000  #: directory entries looked at per runs folder; the walk stops there


@dataclass(frozen=True)
class TrackerSource:
    """One tracker log: ``path`` (a folder, or a metrics.jsonl) in format ``fmt`` of the trackers package."""

    path: str
    fmt: str
    run: str | None = None  #: the run, where the store holds several (a trackio project, an MLflow store)

    def read(self) -> RunRecord:
        """The log's scalars-only record as it stands (a cut last line or record left out; nothing logged yet is
        a record of zero steps), read whole. InputError for anything unreadable."""
        from grpo_lab.sims.ingest.trackers import read_scalars

        return read_scalars(self.path, fmt=self.fmt, run=self.run, partial_ok=True)

    def files(self) -> list[Path]:
        """The files the reader reads: the run's handle(s) from the reader's own listing, and a jsonl's config.json."""
        from grpo_lab.sims.ingest.trackers import list_runs

        _, runs = list_runs(self.path, self.fmt)
        out: list[Path] = []
        for name, handle in runs.items():
            if self.run is not None and name != self.run:
                continue
            if isinstance(handle, dict):  # tensorboard: {"files": [...], "extra": [...]}
                out += [Path(f) for key in ("files", "extra") for f in handle.get(key, [])]
            elif isinstance(handle, tuple) and self.fmt == "mlflow":  # (store root, run id): the run's metric files
                out += [f for f in Path(handle[0]).glob(f"*/{handle[1]}/metrics/**/*") if f.is_file()]
            elif isinstance(handle, tuple):  # trackio: (db, column, identity): the project's store and its log
                out += [Path(handle[0]), Path(str(handle[0]) + "-wal")]
            else:
                out.append(Path(handle))
        if self.fmt == "jsonl":
            out += [Path(f).parent / "config.json" for f in list(out)]
        return sorted(set(out))


#: one incremental reader per log for the whole process (thirty visitors following one log read each appended byte
#: once): :class:`~grpo_lab.sims.ingest.trackers.follow.LogFollower`, keyed by the source, the most recent
#: :data:`SHARED_LOGS` kept
_FOLLOWERS: OrderedDict = OrderedDict()
SHARED_LOGS = 16  #: logs whose incremental readers the process keeps


def signature(source: TrackerSource) -> tuple | None:
    """``((file, size, mtime_ns), ...)`` of the files the log's reader reads (:meth:`TrackerSource.files`; one that
    vanished is left out), or None where the log cannot be listed now."""
    try:
        files = source.files()
    except InputError:
        return None
    sig = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue  # a jsonl's config.json need not exist
        sig.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(sig)


def shared_follower(source: TrackerSource):
    """The process's incremental reader of ``source`` (made on first use; call under :data:`_READS_LOCK`)."""
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    f = _FOLLOWERS.get(source)
    if f is None:
        f = _FOLLOWERS[source] = LogFollower(source.path, source.fmt, run=source.run)
        f.last_sig = None
        f.last_record = None
        while len(_FOLLOWERS) > SHARED_LOGS:
            _FOLLOWERS.popitem(last=False)
    _FOLLOWERS.move_to_end(source)
    return f


def read_shared(source: TrackerSource, sig: tuple | None = None) -> RunRecord:
    """The log's record as it stands, read incrementally once per change of its files for the whole process
    (``sig``: its :func:`signature` if already taken): only what was appended since the process last looked is
    read. InputError as the read."""
    sig = signature(source) if sig is None else sig
    with _READS_LOCK:  # the reading thread and the server's loop share the readers
        f = shared_follower(source)
        if sig is not None and sig == f.last_sig and f.last_record is not None:
            return f.last_record
        f.last_record = f.refresh()
        f.last_sig = sig
        return f.last_record


def log_status(source: TrackerSource) -> tuple[str, str]:
    """``(kind, words)`` of the log's last refresh (:attr:`LogFollower.change`, :attr:`LogFollower.status`)."""
    with _READS_LOCK:
        f = _FOLLOWERS.get(source)
        return ("new", "not read yet") if f is None else (f.change, f.status)


_READS_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """The one thread that re-reads followed logs in a served session (made on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(1, thread_name_prefix="tracker-read")
    return _POOL


class TrackerFollower:
    """Poll one tracker log: read what was appended when the files its reader reads change (their names, sizes and
    modification times; :func:`read_shared`, incremental). A log has no end mark, so it stays active; a read that
    fails (a file caught mid-write the partial reader cannot take) is skipped, and the next change is read.

    ``notice`` says in words what a page should tell about the log beside its forecast: that it has not grown for
    :data:`STALE_S` seconds or more (the trainer may have stopped), or that it was truncated or replaced while
    followed. A truncated or replaced log's new contents are not shown until it grows again: the page keeps the
    last good record, and with it the last good forecast, and says so.

    ``background=True`` (a served session): the read runs in a thread of its own, and the poll after it finishes
    returns its record."""

    def __init__(self, source: TrackerSource, background: bool = False):
        self.source = source
        self.active = True
        self.background = background
        self.pending: Future | None = None  #: the re-read in progress (background)
        self.notice = ""  #: what the page should say about the log (see the class docstring)
        self.last_step: int | None = None  #: the last step of the last record shown
        self._seen = signature(source)
        self._changed_at = time.monotonic()

    def _result(self, record: RunRecord | None) -> RunRecord | None:
        """``record`` if it is to be shown, else None; ``notice`` set from the log's last refresh."""
        if record is None:
            return None
        kind, words = log_status(self.source)
        if kind in ("truncated", "replaced"):
            kept = "" if self.last_step is None else f" (to step {self.last_step})"
            self.notice = (f"The log changed while followed: {words.split(';')[0]}. The run shown and its forecast "
                           f"are the last good read{kept}; the new log is shown once it grows.")
            return None
        self.notice = ""
        steps = record.steps.get("step", ())
        self.last_step = int(steps[-1]) if len(steps) else None
        return record

    def poll(self) -> RunRecord | None:
        """The record with what was appended when the log's files changed and it reads cleanly, else None (in the
        background: the record of the read started at an earlier poll, once it is done)."""
        if self.pending is not None:
            if not self.pending.done():
                return None
            done, self.pending = self.pending, None
            try:
                return self._result(done.result())
            except (InputError, OSError):
                return None
        sig = signature(self.source)
        if sig is None or sig == self._seen:
            idle = time.monotonic() - self._changed_at
            if idle >= STALE_S and not self.notice.startswith("The log changed"):
                at = "" if self.last_step is None else f" (last step {self.last_step})"
                self.notice = (f"The log has not grown for {idle / 60:.0f} min{at}: the trainer may have stopped "
                               "or be stalled. The forecast shown is from the last step read.")
            return None
        self._seen = sig  # a failed read is not retried until the files change again
        self._changed_at = time.monotonic()
        if self.notice.startswith("The log has not grown"):
            self.notice = ""
        if self.background:
            self.pending = _pool().submit(read_shared, self.source, sig)
            return None
        try:
            return self._result(read_shared(self.source, sig))
        except (InputError, OSError):
            return None


def follower(source, record: RunRecord | None, background: bool = False):
    """The follower of a run's source: a :class:`TrackerFollower` for a tracker log (reading in the ``background``),
    else a :class:`~grpo_lab.replay.follow.RecordFollower` (a record directory, or an upload, which never changes)."""
    from .follow import RecordFollower

    if isinstance(source, TrackerSource):
        return TrackerFollower(source, background=background)
    return RecordFollower(source, record)


def _confirm(path: Path, hint: str) -> str | None:
    """The format of ``path`` when the trackers package reads it as one run of ``hint``'s format, else None."""
    from grpo_lab.sims.ingest.trackers import detect_format, list_runs
    from grpo_lab.sims.ingest.trackers.jsonl import is_metrics_jsonl

    try:
        fmt = detect_format(path)
        if fmt != hint or (fmt == "jsonl" and path.is_file() and path.stat().st_size and not is_metrics_jsonl(path)):
            return None
        _, runs = list_runs(path, fmt)
    except (InputError, OSError, ImportError):
        return None  # unreadable, mixed, or its tracker's library is not installed: not listed
    return fmt if len(runs) == 1 else None


def _stores(folder: Path, files) -> list[tuple[Path, str, str | None]]:
    """``(path, format, run)`` of the stores of several runs in ``folder`` (each run listed: an MLflow ``mlruns``
    folder, a trackio project's ``.db``) and of W&B history exports (a ``.csv`` whose header names a step column, a
    ``.json`` list of rows with ``_step``), each confirmed by the trackers package's own listing."""
    from grpo_lab.sims.ingest.trackers import list_runs
    from grpo_lab.sims.ingest.trackers.console import SUFFIXES, is_console
    from grpo_lab.sims.ingest.trackers.wandb import STEP_COLUMNS

    out = []
    if folder.name == "mlruns":
        candidates = [(folder, "mlflow")]
    else:
        candidates = [(Path(e.path), "trackio") for e in files if e.name.endswith(".db")]
        candidates += [(Path(e.path), "console") for e in files
                       if e.name.lower().endswith(SUFFIXES) and is_console(Path(e.path))]
        for e in files:
            if e.name.endswith((".csv", ".json")) and not e.name.startswith(("wandb-", "config")):
                try:
                    with open(e.path, "rb") as fh:
                        head = fh.read(4096)
                except OSError:
                    continue
                first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
                if (e.name.endswith(".csv") and any(c in first.split(",") for c in STEP_COLUMNS)) or \
                        (e.name.endswith(".json") and head.lstrip().startswith(b"[") and b'"_step"' in head):
                    candidates.append((Path(e.path), "wandb"))
    for path, fmt in candidates:
        try:
            _, runs = list_runs(path, fmt)
        except (InputError, OSError, ImportError):
            continue  # unreadable, or its tracker's library is not installed: not listed
        if fmt == "wandb" or (fmt == "console" and len(runs) == 1):
            out += [(path, fmt, None)] if len(runs) == 1 else []
        else:
            out += [(path, fmt, name) for name in sorted(runs)]
    return out


def _found_in(root: Path) -> dict[str, TrackerSource]:
    """``{label: source}`` of the tracker logs under one runs folder (see the module docstring)."""
    found: dict[str, TrackerSource] = {}
    queue, seen = [(root, 0)], 0
    while queue and seen < MAX_ENTRIES:
        folder, depth = queue.pop(0)
        try:
            with os.scandir(folder) as it:  # no more than the entries left: a folder of a million files costs no more
                entries = sorted(itertools.islice(it, MAX_ENTRIES - seen), key=lambda e: e.name)
        except OSError:
            continue
        seen += len(entries)
        names = {e.name for e in entries}
        if "run.json" in names and folder != root:
            continue  # a run record (the catalogue lists it)
        files = [e for e in entries if not e.is_symlink() and e.is_file()]
        hit = None
        if any("tfevents" in e.name for e in files):
            hit = (folder, "tensorboard")
        elif folder.name.startswith(("offline-run-", "run-")) and any(e.name.endswith(".wandb") for e in files):
            hit = (folder, "wandb")
        elif "metrics.jsonl" in {e.name for e in files}:
            hit = (folder / "metrics.jsonl", "jsonl")
        elif not folder.name.startswith("checkpoint-") and any(
                n == "trainer_state.json" or n.startswith("checkpoint-") for n in names):
            hit = (folder, "jsonl")  # a TRL / Unsloth output folder: its (latest checkpoint's) trainer_state.json
        fmt = _confirm(*hit) if hit is not None else None
        if fmt is not None:
            rel = hit[0].relative_to(root).as_posix()
            shown = "trainer_state.json" if hit[0] == folder and fmt == "jsonl" else fmt
            found[f"{PREFIX}{rel if rel != '.' else root.name} ({shown})"] = TrackerSource(str(hit[0]), fmt)
            continue  # the log's subfolders are its own (a TensorBoard run's hparams, a W&B run's files)
        stores = _stores(folder, files)
        for path, fmt, run in stores:
            rel = path.relative_to(root).as_posix()
            found[f"{PREFIX}{rel if rel != '.' else root.name}{'' if run is None else ': ' + run} ({fmt})"] = \
                TrackerSource(str(path), fmt, run)
        if folder.name == "mlruns" and stores:
            continue  # the store's folders are its own
        if depth < MAX_DEPTH:
            queue += [(Path(e.path), depth + 1) for e in entries if not e.is_symlink() and e.is_dir()]
    return found


def tracker_logs(root=None, extra=()) -> dict[str, TrackerSource]:
    """``{label: source}`` of the tracker logs in the one folder ``root`` when given, else in every folder of the
    catalogue (:func:`~grpo_lab.replay.catalog.runs_folders`, ``extra`` its ``--runs`` folders); where two folders
    give one label the first keeps it, as for records."""
    roots = [Path(root)] if root is not None else [f.path for f in runs_folders(extra)]
    out: dict[str, TrackerSource] = {}
    for r in roots:
        if r.is_dir():
            for label, src in _found_in(r).items():
                out.setdefault(label, src)
    return out
