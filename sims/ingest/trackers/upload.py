r"""A tracker log uploaded to the lab: its bytes into a private temporary folder, checked first, read as ``ingest``
reads.

The readers of :mod:`grpo_lab.sims.ingest.trackers` read files (MLflow's client and trackio's SQLite store want
paths), so :func:`read_uploaded_tracker` writes the upload into a :class:`tempfile.TemporaryDirectory` of its own,
reads it with :func:`~grpo_lab.sims.ingest.trackers.read_scalars` (``fmt="auto"``), and removes it, whatever
happens. What it takes, as ``grpo-lab ingest`` does:

* one file: a TensorBoard event file (``*tfevents*``), a W&B transaction log (``.wandb``) or history export
  (``.csv``), a trackio store (``.db``, an SQLite file by its header), a ``metrics.jsonl``, a ``trainer_state.json``;
* a ``.zip`` of a run's folder: a TensorBoard log dir, a W&B run folder (``offline-run-*``), an MLflow run or store
  (``mlruns``), a folder holding a ``metrics.jsonl``.

**An archive is checked whole before anything is written** (:func:`grpo_lab.sims.ingest.archive.check_archive`, the
one check of every zip the project opens), on what its central directory declares, and refused in one line when it
holds anything but a run's files: a member whose path leaves the folder (absolute, a drive, ``..``), a link or a
device or anything not a plain file or folder (its Unix mode), more than :data:`MAX_MEMBERS` members, more than
``max_bytes`` declared in all, a member that declares it expands more than :data:`MAX_RATIO` times its compressed
size (a zip bomb), an encrypted member. Extraction then writes each member
under a *safe name* (each path part's characters outside ``[A-Za-z0-9._ +=@,-]`` replaced by ``_``; a part made
only of dots refused above), streaming it with the sizes counted as they expand, so a member that declared a small
size and expands past it is cut off at its declaration (and at ``max_bytes`` in all): the declaration is not
trusted. Nothing is followed outside the folder: the readers skip links, and none can be made.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from ...errors import InputError
from ...record import RunRecord
from ..archive import MAX_MEMBERS, MAX_RATIO, check_archive

__all__ = ["MAX_MEMBERS", "MAX_RATIO", "check_archive", "read_uploaded_tracker", "is_tracker_upload", "safe_name"]

_SAFE = re.compile(r"[^A-Za-z0-9._ +=@,-]")
_TRACKER_SUFFIXES = (".wandb", ".db", ".csv")
_SQLITE = b"SQLite format 3\x00"


def safe_name(part: str) -> str:
    """One path part with every character outside ``[A-Za-z0-9._ +=@,-]`` replaced by ``_``."""
    return _SAFE.sub("_", part)[:255] or "_"


def is_tracker_upload(filename: str, data: bytes) -> bool:
    """Whether an uploaded single file is a tracker's log by its name or first bytes (an event file, a ``.wandb``
    log, a trackio store, a history export); a ``metrics.jsonl`` of scalars is told apart by its first line
    (:func:`.jsonl.is_metrics_jsonl`) by the caller."""
    name = PurePosixPath(str(filename).replace("\\", "/")).name.lower()
    return "tfevents" in name or name.endswith(_TRACKER_SUFFIXES) or data[:16] == _SQLITE


def _extract(zf: zipfile.ZipFile, files, into: Path, origin: str, max_bytes: int) -> None:
    from ..budget import charge

    written = 0
    for info in files:
        parts = [safe_name(p) for p in PurePosixPath(info.filename.replace("\\", "/")).parts]
        target = into.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        size = 0
        with zf.open(info) as src, open(target, "xb") as dst:
            while chunk := src.read(1 << 20):
                size += len(chunk)
                written += len(chunk)
                if size > info.file_size or written > max_bytes:
                    raise InputError(f"{origin}: refused: member {info.filename!r} expands past what it declares")
                dst.write(chunk)
                charge(nbytes=len(chunk), where=f"{origin}:{info.filename}")


def _output_folder(root: Path) -> Path:
    """Where an extracted archive is read from: ``root``, or the one folder it holds when that folder is a TRL /
    Unsloth output folder (its own or a checkpoint's ``trainer_state.json``: ``zip -r out.zip out/``), which
    the reader takes as the folder itself, not a folder above it."""
    from .jsonl import output_folder_state

    inside = list(root.iterdir())
    if len(inside) == 1 and inside[0].is_dir() and output_folder_state(inside[0]) is not None:
        return inside[0]
    return root


def read_uploaded_tracker(filename: str, data: bytes, max_bytes: int, num_generations: int | None = None) -> RunRecord:
    """The scalars-only record of an uploaded tracker log or zipped run folder (see the module docstring).
    InputError (one line) for anything else."""
    from . import read_scalars

    origin = safe_name(PurePosixPath(str(filename).replace("\\", "/")).name or "upload")
    if len(data) > max_bytes:
        raise InputError(f"{origin}: {len(data)} bytes is over the size cap of {max_bytes} bytes")
    with tempfile.TemporaryDirectory(prefix="grpo-lab-upload-") as tmp:
        root = Path(tmp) / "run"
        root.mkdir()
        if data[:4] == b"PK\x03\x04":
            try:
                zf = zipfile.ZipFile(io.BytesIO(data))
            except (zipfile.BadZipFile, OSError, ValueError) as exc:
                raise InputError(f"{origin}: not a readable zip archive ({exc})") from None
            with zf:
                files = check_archive(zf, origin, max_bytes)
                if not files:
                    raise InputError(f"{origin}: the archive holds no file")
                try:
                    _extract(zf, files, root, origin, max_bytes)
                except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                    raise InputError(f"{origin}: a member cannot be extracted ({exc})") from None
            target = _output_folder(root)
        else:
            target = root / origin
            target.write_bytes(data)
        rec = read_scalars(target, fmt="auto", max_bytes=max_bytes, num_generations=num_generations)
    rec.meta["source"] = {**rec.meta.get("source", {}), "path": origin}
    return rec
