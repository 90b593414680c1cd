r"""Tracker scalars: a run's per-step scalars from the tracker it logged to, as a scalars-only record.

Entry point: :func:`read_scalars` (``grpo-lab ingest PATH --format tensorboard|wandb|mlflow|trackio|jsonl|auto``).

Readers, one module each, every one importing its tracker's library only when called:

==============  ==========================================================================================
tensorboard     event files (a log dir of one run or many): :mod:`.tensorboard`
wandb           offline run folders (``wandb/offline-run-*/run-*.wandb``) and history exports (CSV/JSON):
                :mod:`.wandb`
mlflow          a local file store (``mlruns/``): :mod:`.mlflow`
trackio         trackio's local store (``<project>.db``): :mod:`.trackio`
jsonl           a trainer's ``metrics.jsonl`` (verl's file logger, tinker-cookbook): :mod:`.jsonl`
==============  ==========================================================================================

Each reader lists a path's runs (``find_runs``) and reads one (``read_run``) into
:class:`.common.RunScalars`; :mod:`.dialects` maps its metric names onto the standard columns of
:func:`grpo_lab.sims.scalars_record.scalars_record` (trainer detected from the names, or ``trainer=``).
Bad input of any kind is one :class:`~grpo_lab.sims.errors.InputError` line.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ...errors import InputError
from ...record import RunRecord
from ...scalars_record import COLUMNS, scalars_record
from ..common import DEFAULT_MAX_BYTES
from . import dialects as _dialects

__all__ = ["FORMATS", "DEFAULT_MAX_BYTES", "read_scalars", "scalars_from", "detect_format", "list_runs",
           "read_run_scalars"]

FORMATS = ("tensorboard", "wandb", "mlflow", "trackio", "jsonl")  #: tracker formats; "auto" detects one


def detect_format(path) -> str:
    """The tracker format of ``path`` from its files (names first, then the first bytes of a JSONL).

    tensorboard: an ``*tfevents*`` file in it; wandb: a ``.wandb`` file, or a history export (``.csv``, or a
    ``.json`` of rows with ``_step``); mlflow: an ``mlruns`` folder or a store with ``meta.yaml`` files;
    trackio: a ``.db`` file; jsonl: a ``.jsonl`` file of per-step scalars, or a ``trainer_state.json``. InputError
    when none fits.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{str(p)!r} does not exist")
    if p.is_file():
        name = p.name.lower()
        if "tfevents" in name:
            return "tensorboard"
        if name == "trainer_state.json":  # the HF Trainer's (TRL's) own log: read with the JSON lines
            return "jsonl"
        if name.endswith(".wandb") or name.endswith(".csv") or name.endswith(".json"):
            return "wandb"
        if name.endswith(".db"):
            return "trackio"
        if name.endswith(".jsonl"):
            return "jsonl"
        raise InputError(f"{p}: not a tracker file this reader knows (tfevents, .wandb, .csv/.json history, "
                         ".db, .jsonl); pass --format")
    found = {"tensorboard": False, "wandb": False, "mlflow": False, "trackio": False, "jsonl": False}
    for f in _walk(p, 6):
        n = f.name
        if "tfevents" in n:
            found["tensorboard"] = True
        elif n.endswith(".wandb"):
            found["wandb"] = True
        elif n == "meta.yaml":
            found["mlflow"] = True
        elif n.endswith(".db"):
            found["trackio"] = True
        elif n.endswith(".jsonl"):
            found["jsonl"] = True
    hits = [k for k, v in found.items() if v]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(f"{p}: no tracker files found (TensorBoard events, W&B .wandb, MLflow mlruns, trackio "
                         ".db, metrics.jsonl)")
    raise InputError(f"{p} holds {' and '.join(hits)} logs; pick one with --format")


def _walk(root: Path, depth: int):
    stack = [(root, 0)]
    seen = 0
    while stack:
        d, k = stack.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for e in entries:
            seen += 1
            if seen > 100_000:
                raise InputError(f"{root}: more than 100,000 files; point at one run's folder")
            if e.is_symlink():
                continue
            if e.is_dir():
                if k + 1 < depth:
                    stack.append((e, k + 1))
            else:
                yield e


def _reader(fmt: str):
    if fmt not in FORMATS:
        raise InputError(f"unknown tracker format {fmt!r}; choose one of {', '.join(FORMATS)} or auto")
    return importlib.import_module(f"{__name__}.{fmt}")


def list_runs(path, fmt: str = "auto") -> tuple[str, dict]:
    """``(format, {run name: handle})`` for the runs at ``path``."""
    p = Path(path)
    fmt = detect_format(p) if fmt == "auto" else fmt
    if not p.exists():
        raise InputError(f"{str(p)!r} does not exist")
    return fmt, _reader(fmt).find_runs(p)


def read_run_scalars(path, *, fmt: str = "auto", run: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                     partial_ok: bool = False):
    """One run's series as logged (:class:`.common.RunScalars`), before any dialect is applied."""
    from .common import pick_run

    fmt, runs = list_runs(path, fmt)
    name, handle = pick_run(runs, run, str(path), fmt)
    return _reader(fmt).read_run(name, handle, max_bytes=max_bytes, partial_ok=partial_ok)


def read_scalars(path, *, fmt: str = "auto", run: str | None = None, trainer: str | None = None,
                 num_generations: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 partial_ok: bool = False) -> RunRecord:
    """A scalars-only run record from a tracker log.

    Parameters
    ----------
    path : a tracker's folder or file (see :func:`detect_format`).
    fmt : one of :data:`FORMATS`, or ``"auto"`` (detected from the files).
    run : the run to read where ``path`` holds several (else InputError listing them).
    trainer : a dialect of :data:`.dialects.TRAINERS`; None detects it from the metric names.
    num_generations : K where the run's config does not say it (a flag overrides the config).
    max_bytes : cap on the bytes of the files read (checked before reading).
    partial_ok : tolerate a file still being written: a cut last record or line is left out, and a run with
        nothing logged yet is an empty record (zero steps) rather than an error.

    Returns a record of :func:`grpo_lab.sims.scalars_record.scalars_record` with ``source`` = ``{format,
    trainer, run, dialect: {column: metric read}, missing, notes, path}``.
    """
    if num_generations is not None and (isinstance(num_generations, bool) or not isinstance(num_generations, int)
                                        or num_generations < 1):
        raise InputError(f"--num-generations must be a positive integer, got {num_generations!r}")
    rs = read_run_scalars(path, fmt=fmt, run=run, max_bytes=max_bytes, partial_ok=partial_ok)
    return scalars_from(rs, path, trainer=trainer, num_generations=num_generations, partial_ok=partial_ok)


def scalars_from(rs, path, *, trainer: str | None = None, num_generations: int | None = None,
                 partial_ok: bool = False) -> RunRecord:
    """The scalars-only record of one run's series as read (:class:`.common.RunScalars`): the dialect detected (or
    ``trainer``'s) mapped onto the standard columns; the rest of :func:`read_scalars`, shared with the incremental
    reader (:mod:`.follow`)."""
    if not rs.series:
        if partial_ok:  # a log still being written may hold nothing yet: an empty record, for the next poll
            source = {"format": rs.fmt, "trainer": trainer, "run": rs.name, "dialect": {},
                      "missing": list(COLUMNS[1:]), "notes": ["nothing logged yet"], "path": str(path)}
            return scalars_record(rs.name, [], {}, num_generations=num_generations, source=source)
        raise InputError(f"{path}: run {rs.name!r} holds no scalars")
    d = _dialects.detect(rs.series) if trainer is None else _dialects.dialect(trainer)
    steps, cols, raw, read, missing, notes, K = _dialects.map_run(rs.series, rs.config, d, num_generations)
    if K is None:
        notes.append("K unknown: the run's config does not say it; pass --num-generations")
    source = {"format": rs.fmt, "trainer": d.trainer, "run": rs.name, "dialect": read, "missing": missing,
              "notes": [*rs.notes, *notes], "path": str(path), "dialect_source": f"{d.repo} {d.source} @ {d.version}"}
    return scalars_record(rs.name, steps, cols, num_generations=K, source=source, raw=raw)
