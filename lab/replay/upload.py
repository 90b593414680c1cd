"""Turning a file a visitor uploads into a run record for this session only.

The bytes go to :func:`sims.ingest.ingest_upload` (size cap, no unpickling, errors that
name the line or row); every failure becomes a message for the page's error notice, so a
bad file never stops the app. Nothing is written to disk.
"""

from __future__ import annotations

import logging

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import DEFAULT_MAX_BYTES, ingest_upload
from grpo_lab.sims.record import RunRecord

__all__ = ["load_upload", "MAX_UPLOAD_BYTES"]

MAX_UPLOAD_BYTES = DEFAULT_MAX_BYTES
_log = logging.getLogger(__name__)


def load_upload(filename: str, data: bytes | None, fmt: str, tolerance: float,
                max_bytes: int = MAX_UPLOAD_BYTES) -> tuple[RunRecord | None, str]:
    """``(record, "")`` for a good file, ``(None, message)`` for a bad one; never raises."""
    if not data:
        return None, f"{filename or 'the upload'}: the file is empty"
    try:
        rec = ingest_upload(filename or "upload", data, fmt, tolerance=tolerance, max_bytes=max_bytes)
    except InputError as exc:
        return None, str(exc)
    except Exception as exc:  # a defect the ingester did not anticipate must not take the page down
        _log.exception("unexpected error ingesting an upload")
        return None, f"{filename}: could not be read as {fmt} ({type(exc).__name__})"
    if rec.n_prompts == 0 and len(rec.groups["step"]) == 0 and len(rec.steps.get("step", ())) == 0:
        return None, f"{filename}: no groups and no per-step scalars found for format {fmt}"
    rec.meta.setdefault("name", None)
    if not rec.meta.get("name"):
        rec.meta["name"] = filename
    return rec, ""
