"""Turning a file a visitor uploads into a run record for this session only, without stalling the others.

Limits, declared once in :data:`UPLOAD_LIMITS`:

* the file as sent: at most ``file_bytes`` (10 MiB). The browser refuses a larger file before
  sending anything (:class:`grpo_lab.replay.upload_input.UploadInput`); the server refuses it too.
  Sent base64-encoded in one websocket message, 10 MiB is 13.4 MiB, inside Bokeh's default 20 MiB
  message limit (tests/test_upload_limits.py checks the two stay consistent);
* what it holds once read: ``decompressed_bytes`` (64 MiB, a zip's members counted as they
  expand), ``rows`` (lines of JSONL, rows of parquet) and ``seconds`` of reading, checked while
  reading (:mod:`grpo_lab.sims.ingest.budget`), not after.

Each read runs in a process of its own that ends with it (:func:`start_upload`,
:mod:`grpo_lab.replay.upload_pool`), never on the event loop that serves every page: while one
visitor's upload is read, the others' pages load and respond, and the read's peak memory goes back
to the system when it ends. Up to ``parallel_reads`` large files are read at once per process (at
most half the machine's cores) and files up to ``small_file_bytes`` in a lane of their own, so a small upload is
never queued behind large ones. The record comes back, and is kept by the tab, in the compact form of
:mod:`grpo_lab.replay.compact`. What one visitor may use at once (reads in progress, bytes held by
its tabs) is counted by :mod:`grpo_lab.replay.upload_quota` under the same limits.

The bytes go to :func:`sims.ingest.ingest_upload` (no unpickling, errors that name the line or
row); every failure becomes a message for the page's error notice, in words about what a web visitor
can do (:func:`grpo_lab.replay.upload_words.for_web`), so a bad file never stops the app. Nothing is
written to disk.
"""

from __future__ import annotations

import io
import logging
import os
import zipfile
from dataclasses import dataclass

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest_upload
from grpo_lab.sims.ingest.budget import Budget, use_budget
from grpo_lab.sims.record import RunRecord

from .compact import pack, unpack
from .upload_pool import Read, ReadLanes, ReaderDied
from .upload_words import for_web

__all__ = ["UploadLimits", "UPLOAD_LIMITS", "MAX_UPLOAD_BYTES", "load_upload", "read_packed", "start_upload",
           "upload_failed", "new_budget", "describe_limits", "large_slots", "read_size"]

_log = logging.getLogger(__name__)
_MiB = 1 << 20


@dataclass(frozen=True)
class UploadLimits:
    """What one upload may cost the server (see the module docstring)."""

    file_bytes: int = 10 * _MiB  #: the file as the browser sends it
    decompressed_bytes: int = 64 * _MiB  #: everything read from it (zip members as they expand)
    rows: int = 1_000_000  #: JSONL lines / parquet rows in all
    seconds: float = 60.0  #: wall time of the reading
    # how reads share a server process (each read is a process of its own that ends with it)
    parallel_reads: int = 4  #: large files read at once per server process, at most half the machine's cores
    small_file_bytes: int = 1 * _MiB  #: files up to this size are read in a lane of their own
    small_reads: int = 2  #: small files read at once per server process
    # what one visitor may use at once, per server process (grpo_lab.replay.upload_quota)
    visitor_reads: int = 2  #: uploads being read at once per visitor (browser cookie)
    address_reads: int = 8  #: uploads being read at once per client address (a class may share one)
    visitor_held_bytes: int = 128 * _MiB  #: runs held by one visitor's open tabs (two at the limit)
    address_held_bytes: int = 512 * _MiB  #: runs held by the open tabs of one client address


UPLOAD_LIMITS = UploadLimits()
MAX_UPLOAD_BYTES = UPLOAD_LIMITS.file_bytes


def large_slots(limits: UploadLimits = UPLOAD_LIMITS) -> int:
    """Large files read at once in this process: ``parallel_reads``, at most half the cores (``grpo-lab serve``
    runs two processes: together they read on every core, no more; more at once made each read slower, past
    its time limit), at least 1."""
    return max(1, min((os.cpu_count() or 1) // 2, limits.parallel_reads))


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
    The record is in the compact form (:mod:`grpo_lab.replay.compact`); the message speaks to a web visitor.
    """
    rec, error = _read(filename, data, fmt, tolerance, limits, budget)
    return (None if rec is None else unpack(pack(rec))), error


def read_packed(filename: str, data: bytes, fmt: str, tolerance: float,
                limits: UploadLimits = UPLOAD_LIMITS) -> tuple[dict | None, str]:
    """:func:`load_upload` as a reading process returns it: ``(pack(record) or None, message)``."""
    rec, error = _read(filename, data, fmt, tolerance, limits, None)
    return (None if rec is None else pack(rec)), error


def _read(filename: str, data: bytes | None, fmt: str, tolerance: float, limits: UploadLimits,
          budget: Budget | None) -> tuple[RunRecord | None, str]:
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
        return None, for_web(str(exc), limits)
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


_LANES: ReadLanes | None = None


def start_upload(filename: str, data: bytes, fmt: str, tolerance: float,
                 limits: UploadLimits = UPLOAD_LIMITS) -> Read:
    """:func:`read_packed` in a reading process of its own (:mod:`grpo_lab.replay.upload_pool`); the returned
    :class:`Read`'s ``future`` gets its ``(packed record or None, message)``.

    A process, not a thread: parsing JSON is Python code holding the interpreter lock, so a reading
    thread halves the time the event loop gets; the process also frees the read's peak memory when it
    ends. The lanes start on the first upload. The budget's clock starts when the read starts, so
    waiting for a lane is not charged.
    """
    global _LANES
    if _LANES is None:
        _LANES = ReadLanes(large_slots(limits), limits.small_reads, limits.small_file_bytes, preload=__name__)
    return _LANES.submit(read_size(data), read_packed, filename, data, fmt, tolerance, limits)


def read_size(data: bytes) -> int:
    """How much a read of ``data`` will go through, for choosing its lane: a zip's members as their headers
    declare them (a forged small size still stops at ``decompressed_bytes``), else the file's own size."""
    if data[:4] != b"PK\x03\x04":
        return len(data)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return max(len(data), sum(info.file_size for info in zf.infolist()))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return len(data)


def upload_failed(future, name: str) -> str | None:
    """The message for a read that ended without a result (worker died or cancelled), else None."""
    if future.cancelled():
        return f"{name}: not read (cancelled)"
    exc = future.exception()
    if exc is None:
        return None
    if isinstance(exc, ReaderDied):
        return f"{name}: the server's reader stopped while reading it (too large for this server?)"
    return f"{name}: not read ({type(exc).__name__})"
