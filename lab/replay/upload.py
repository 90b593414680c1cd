"""Turning a file a visitor uploads into a run record for this session only, without stalling the others.

Limits, declared once in :data:`UPLOAD_LIMITS`:

* the file as sent: at most ``file_bytes`` (10 MiB). The browser refuses a larger file before
  sending anything (:class:`grpo_lab.replay.upload_input.UploadInput`); the server refuses it too.
  Sent base64-encoded in one websocket message, 10 MiB is 13.4 MiB, inside Bokeh's default 20 MiB
  message limit (tests/test_upload_limits.py checks the two stay consistent);
* what it holds once read: ``decompressed_bytes`` (64 MiB, a zip's members counted as they
  expand), ``rows`` (lines of JSONL, rows of parquet) and ``seconds`` of reading, checked while
  reading (:mod:`grpo_lab.sims.ingest.budget`), not after.

The reading runs in :data:`UPLOAD_WORKERS` worker process(es) shared by the server's sessions
(:func:`start_upload`), never on the event loop that serves every page: while one visitor's upload
is read, the others' pages load and respond. The bytes go to :func:`sims.ingest.ingest_upload` (no
unpickling, errors that name the line or row); every failure becomes a message for the page's error
notice, so a bad file never stops the app. Nothing is written to disk.
"""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest_upload
from grpo_lab.sims.ingest.budget import Budget, use_budget
from grpo_lab.sims.record import RunRecord

__all__ = ["UploadLimits", "UPLOAD_LIMITS", "MAX_UPLOAD_BYTES", "UPLOAD_WORKERS", "load_upload", "start_upload",
           "upload_failed", "new_budget", "describe_limits"]

_log = logging.getLogger(__name__)
_MiB = 1 << 20


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may cost the server (see the module docstring)."""

    file_bytes: int = 10 * _MiB  #: the file as the browser sends it
    decompressed_bytes: int = 64 * _MiB  #: everything read from it (zip members as they expand)
    rows: int = 1_000_000  #: JSONL lines / parquet rows in all
    seconds: float = 60.0  #: wall time of the reading


UPLOAD_LIMITS = UploadLimits()
MAX_UPLOAD_BYTES = UPLOAD_LIMITS.file_bytes
UPLOAD_WORKERS = 1  #: uploads read at once, server-wide (the rest wait their turn); each holds one core


def describe_limits(limits: UploadLimits = UPLOAD_LIMITS) -> str:
    """The limits in words, for the page."""
    return (f"Files up to {limits.file_bytes / _MiB:g} MB; what they hold (a .zip's contents) up to "
            f"{limits.decompressed_bytes / _MiB:g} MB and {limits.rows:,} rows.")


def new_budget(limits: UploadLimits = UPLOAD_LIMITS) -> Budget:
    """A fresh row/time budget for one upload (its clock starts now)."""
    return Budget(max_rows=limits.rows, max_seconds=limits.seconds)


def load_upload(filename: str, data: bytes | None, fmt: str, tolerance: float,
                limits: UploadLimits = UPLOAD_LIMITS, budget: Budget | None = None) -> tuple[RunRecord | None, str]:
    """``(record, "")`` for a good file, ``(None, message)`` for a bad one; never raises.

    Reads under ``limits``: the file's size first, then ``budget`` (a fresh one when None) while reading.
    """
    name = filename or "the upload"
    if not data:
        return None, f"{name}: the file is empty"
    if len(data) > limits.file_bytes:
        return None, (f"{name}: {len(data) / _MiB:.1f} MB is over this server's upload limit of "
                      f"{limits.file_bytes / _MiB:g} MB")
    try:
        with use_budget(budget or new_budget(limits)):
            rec = ingest_upload(filename or "upload", data, fmt, tolerance=tolerance,
                                max_bytes=limits.decompressed_bytes)
    except InputError as exc:
        return None, str(exc)
    except MemoryError:
        return None, f"{name}: too large to read on this server"
    except Exception as exc:  # a defect the ingester did not anticipate must not take the page down
        _log.exception("unexpected error ingesting an upload")
        return None, f"{name}: could not be read as {fmt} ({type(exc).__name__})"
    if rec.n_prompts == 0 and len(rec.groups["step"]) == 0 and len(rec.steps.get("step", ())) == 0:
        return None, f"{name}: no groups and no per-step scalars found for format {fmt}"
    rec.meta.setdefault("name", None)
    if not rec.meta.get("name"):
        rec.meta["name"] = filename
    return rec, ""


_POOL: ProcessPoolExecutor | None = None


def start_upload(filename: str, data: bytes, fmt: str, tolerance: float,
                 limits: UploadLimits = UPLOAD_LIMITS) -> "Future[tuple[RunRecord | None, str]]":
    """:func:`load_upload` in the server's upload worker process; the future's result is its return value.

    A process, not a thread: parsing JSON is Python code holding the interpreter lock, so a reading
    thread halves the time the event loop gets; the process also frees the read's peak memory with
    it. The worker starts on the first upload (``spawn``: it imports the readers, not the app) and
    stays for the next. Its budget's clock starts when the read starts, so waiting for another
    upload is not charged. If the worker dies (killed for memory), the next upload gets a new one.
    """
    global _POOL
    if _POOL is None:
        _POOL = ProcessPoolExecutor(max_workers=UPLOAD_WORKERS, mp_context=multiprocessing.get_context("spawn"))
    try:
        return _POOL.submit(load_upload, filename, data, fmt, tolerance, limits)
    except BrokenProcessPool:
        _POOL = None
        return start_upload(filename, data, fmt, tolerance, limits)


def upload_failed(future: Future, name: str) -> str | None:
    """The message for a future that ended without a result (worker died or cancelled), else None."""
    global _POOL
    if future.cancelled():
        return f"{name}: not read (cancelled)"
    exc = future.exception()
    if exc is None:
        return None
    if isinstance(exc, BrokenProcessPool):
        _POOL = None  # the next upload starts a fresh worker
        return f"{name}: the server's reader stopped while reading it (too large for this server?)"
    return f"{name}: not read ({type(exc).__name__})"
