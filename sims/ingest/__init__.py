r"""Bring your own run: convert TRL, verl or plain-JSONL logs into a :class:`sims.record.RunRecord`.

Two entry points, one pipeline:

- :func:`ingest` reads a path (an output folder, one file, or a ``.zip`` of a folder);
- :func:`ingest_upload` reads the bytes of a file a user uploaded to the lab.

A run known only from its tracker's per-step scalars (TensorBoard, W&B, MLflow, trackio, a
``metrics.jsonl``) is read by :mod:`.trackers` (:func:`.trackers.read_scalars`, a scalars-only record
with zero groups; every trainer's metric names in :mod:`.trackers.dialects`).

Both enforce the untrusted-input rules of :mod:`grpo_lab.sims.ingest.common` (size cap,
no unpickling, errors that name the file and line) and raise
:class:`sims.errors.InputError` on any defect. Per-format details (and where each
field comes from) are in :mod:`.trl`, :mod:`.verl` and :mod:`.jsonl`; docs/ingest.md
is the user-facing description.

A group is degenerate when the spread of its rewards, max - min, is at most
``tolerance`` (0 for binary rewards; set it for continuous rewards); the
tolerance is stored in the record as ``reward_tolerance``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from ..errors import InputError
from ..record import RunRecord
from .common import DEFAULT_MAX_BYTES, MAX_GROUP, Bundle, check_tolerance, group_limit
from .jsonl import ingest_jsonl
from .trl import ingest_trl
from .verl import ingest_verl

__all__ = ["FORMATS", "UPLOAD_FORMATS", "TRACKER", "DEFAULT_MAX_BYTES", "MAX_GROUP", "ingest", "ingest_upload"]

FORMATS = ("trl", "verl", "jsonl")
TRACKER = "tracker"  #: the upload format of a tracker's log (:mod:`.trackers.upload`; ``ingest --format auto``)
UPLOAD_FORMATS = (*FORMATS, TRACKER)  #: what the lab's upload takes


def _is_tracker(filename: str, head: bytes) -> bool:
    """An uploaded single file that is a tracker's log whatever format was chosen: an event file, a ``.wandb`` log,
    a trackio store, a history export, a ``.jsonl`` whose first line is per-step scalars, an HF Trainer state told
    by its content as ``grpo-lab ingest`` tells it (a ``.json`` holding ``log_history`` under any name, or a bare
    list of its rows: :func:`.trackers.jsonl.state_kind`), so an upload reads it as ingest does (early TRL names,
    the groups per row from its config keys); an HF Trainer's console log (a ``.log`` / ``.out`` / ``.txt`` /
    ``.err`` whose first MiB holds a printed metrics dict, :func:`.trackers.console.console_kind`)."""
    from .trackers.console import SUFFIXES, console_kind
    from .trackers.jsonl import scalars_line, state_kind
    from .trackers.upload import is_tracker_upload

    if head[:4] == b"PK\x03\x04":
        return False  # an archive: by the chosen format
    if is_tracker_upload(filename, head):
        return True
    name = str(filename).lower()
    if name.endswith(".json") and state_kind(head):
        return True
    if name.endswith(SUFFIXES) and console_kind(head):
        return True
    first = next((line for line in head.split(b"\n")[:50] if line.strip()), b"")
    return name.endswith(".jsonl") and scalars_line(first)


def _state_only_archive(data: bytes, fmt: str) -> bool:
    """An uploaded ``.zip`` of a TRL / Unsloth output folder whose only log is a ``trainer_state.json`` (its own or a
    checkpoint's) while ``fmt`` is ``"trl"`` (no completion logs: no ``.parquet``) or ``"jsonl"`` (no ``.jsonl``):
    read as a tracker log, as ``grpo-lab ingest --format trl|jsonl FOLDER`` reads such a folder. Decided from the
    archive's central directory alone; an unreadable archive is left to the chosen reader, whose error names it."""
    if data[:4] != b"PK\x03\x04" or fmt not in ("trl", "jsonl"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = [PurePosixPath(n.replace("\\", "/")).name for n in zf.namelist()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    log = ".parquet" if fmt == "trl" else ".jsonl"
    return "trainer_state.json" in names and not any(n.lower().endswith(log) for n in names)


def _dispatch(bundle: Bundle, fmt: str, *, max_group=None, **options) -> RunRecord:
    with group_limit(max_group):
        return _read(bundle, fmt, **options)


def _read(bundle: Bundle, fmt: str, *, tolerance, name, num_generations, reward_columns, reward_weights,
          reward_key, scalars) -> RunRecord:
    tol = check_tolerance(tolerance)
    if num_generations is not None and (not isinstance(num_generations, int) or num_generations < 1):
        raise InputError(f"--num-generations must be a positive integer, got {num_generations!r}")
    if fmt == "jsonl":
        return ingest_jsonl(bundle, tolerance=tol, name=name)
    if fmt == "verl":
        sb = Bundle.from_path(scalars, bundle.max_bytes - bundle.read_bytes) if scalars else None
        return ingest_verl(bundle, tolerance=tol, name=name, num_generations=num_generations,
                           reward_key=reward_key, scalars_path=str(scalars) if scalars else None,
                           scalars_bundle=sb)
    if fmt == "trl":
        return ingest_trl(bundle, tolerance=tol, name=name, num_generations=num_generations,
                          reward_columns=reward_columns, reward_weights=reward_weights)
    raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


PROGRESS_DELAY_S = 1.0  #: a progress bar appears only on ingests that run longer than this


def _progress(bundle: Bundle, progress):
    """Attach a progress bar over the bytes to read: ``"tqdm"`` makes one (stderr, shown after
    :data:`PROGRESS_DELAY_S`), an object with ``update(n)`` is used as given, None is none."""
    if progress is None:
        return None
    if progress == "tqdm":
        from tqdm import tqdm

        total = sum(size for size, _ in bundle.entries.values())
        progress = tqdm(total=total, unit="B", unit_scale=True, desc="ingest", delay=PROGRESS_DELAY_S, leave=False)
    bundle.progress = progress
    return progress


def ingest(path, fmt: str, tolerance: float = 0.0, max_bytes: int = DEFAULT_MAX_BYTES, *, name: str | None = None,
           num_generations: int | None = None, reward_columns: list[str] | None = None,
           reward_weights=None, reward_key: str | None = None, scalars=None, progress=None,
           workers: int = 1, max_group: int | None = None) -> RunRecord:
    """Convert a run's logs at ``path`` (folder, file or .zip) in format ``fmt`` into a run record.

    Parameters
    ----------
    path : folder, file or ``.zip`` archive of a folder.
    fmt : ``"trl"``, ``"verl"`` or ``"jsonl"``.
    tolerance : a group is degenerate when max(rewards) - min(rewards) <= tolerance.
    max_bytes : cap on the bytes read in all (200 MB by default).
    num_generations : group size (TRL ``num_generations``, verl ``rollout.n``); inferred if None.
    reward_columns : TRL only: which parquet columns are rewards (default: the functions trainer_state.json
        names, in the parquet's column order, which is ``reward_funcs`` order).
    reward_weights : TRL only: ``GRPOConfig.reward_weights`` as a list in ``reward_funcs`` order, or a
        ``{function name: weight}`` dict.
    reward_key : verl only: ``"training"`` (default: the reward that trained) or a per-row key (``score``, ``acc``).
    scalars : verl only: path of the file logger's JSONL, if not inside ``path``.
    progress : None, ``"tqdm"`` (a bar on stderr for long ingests) or an object with ``update(n_bytes)``.
    max_group : the largest group read (None: :data:`MAX_GROUP`, 4,096 rollouts); a larger one raises InputError.
    workers : processes that may parse the files of a large verl folder (:mod:`.parallel`; spawned, so a
        script calling this with ``workers > 1`` needs the ``if __name__ == "__main__":`` guard).
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    bundle = Bundle.from_path(path, max_bytes)
    bundle.workers = workers
    bar = _progress(bundle, progress)
    try:
        return _dispatch(bundle, fmt, tolerance=tolerance, name=name, num_generations=num_generations,
                         reward_columns=reward_columns, reward_weights=reward_weights, reward_key=reward_key,
                         scalars=scalars, max_group=max_group)
    finally:
        if bar is not None and hasattr(bar, "close"):
            bar.close()


def ingest_upload(filename: str, data: bytes, fmt: str, tolerance: float = 0.0,
                  max_bytes: int = DEFAULT_MAX_BYTES, **options) -> RunRecord:
    """Like :func:`ingest` for an uploaded file's bytes (a ``.zip`` of an output folder works too).

    Nothing is written to disk; the record lives in memory for the session that uploaded it.
    """
    if fmt not in UPLOAD_FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(UPLOAD_FORMATS)}")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InputError("upload data must be bytes")
    if fmt == TRACKER or _is_tracker(filename, bytes(data[:1 << 20])) or _state_only_archive(bytes(data), fmt):
        from .trackers.upload import read_uploaded_tracker

        return read_uploaded_tracker(filename, bytes(data), max_bytes, options.get("num_generations"))
    bundle = Bundle.from_bytes(filename, bytes(data), max_bytes)
    options.setdefault("name", None)
    for key in ("num_generations", "reward_columns", "reward_weights", "reward_key"):
        options.setdefault(key, None)
    options["scalars"] = None
    return _dispatch(bundle, fmt, tolerance=tolerance, **options)
