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
console         an HF Trainer's (TRL's, Unsloth's) captured stdout / stderr: the metric dicts it printed
                (:mod:`.console`)
==============  ==========================================================================================

Each reader lists a path's runs (``find_runs``) and reads one (``read_run``) into
:class:`.common.RunScalars`; :mod:`.dialects` maps its metric names onto the standard columns of
:func:`grpo_lab.sims.scalars_record.scalars_record` (trainer detected from the names, or ``trainer=``).
Bad input of any kind is one :class:`~grpo_lab.sims.errors.InputError` line.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...record import RunRecord
from ...scalars_record import COLUMNS, scalars_record
from ..common import DEFAULT_MAX_BYTES
from . import dialects as _dialects
from . import jsonl as _jsonl
from .common import OWN_PREFIX

__all__ = ["FORMATS", "DEFAULT_MAX_BYTES", "read_scalars", "scalars_from", "record_from_scalars", "detect_format",
           "list_runs", "read_run_scalars"]

FORMATS = ("tensorboard", "wandb", "mlflow", "trackio", "jsonl", "console")  #: tracker formats; "auto" detects one


def detect_format(path) -> str:
    """The tracker format of ``path`` from its files (names first, then the first bytes of a JSONL).

    tensorboard: an ``*tfevents*`` file in it; wandb: a ``.wandb`` file, or a history export (``.csv``, or a
    ``.json`` of rows with ``_step``); mlflow: an ``mlruns`` folder or a store with ``meta.yaml`` files;
    trackio: a ``.db`` file; jsonl: a ``.jsonl`` file of per-step scalars, or an HF Trainer state told by its
    content (a JSON object with ``log_history`` under any name, a bare list of its rows), or a TRL / Unsloth output
    folder whose only log is its (or its checkpoints') ``trainer_state.json``; console: an HF Trainer's captured
    console (a file of any other name, or a folder's ``.log`` / ``.out`` / ``.txt`` files, told by the metric dicts
    printed in it: :func:`.console.is_console`). InputError when none fits.
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
        if name.endswith(".json") and _jsonl.trainer_state_kind(p):  # the same under another name, or its rows
            return "jsonl"
        if name.endswith(".wandb") or name.endswith(".csv") or name.endswith(".json"):
            return "wandb"
        if name.endswith(".db"):
            return "trackio"
        if name.endswith(".jsonl"):
            return "jsonl"
        from .console import is_console

        if is_console(p):
            return "console"
        raise InputError(f"{p}: not a tracker file this reader knows (tfevents, .wandb, .csv/.json history, "
                         ".db, .jsonl, a trainer's console log); pass --format")
    found = {"tensorboard": False, "wandb": False, "mlflow": False, "trackio": False, "jsonl": False}
    state = parquet = False  # a TRL / Unsloth output folder's trainer_state.json (its own or a checkpoint's)
    for f in _walk(p, 6):
        n = f.name
        if n == "trainer_state.json":
            state = True
        elif n.endswith(".parquet"):  # TRL's completion logs: a group dump, read by --format trl
            parquet = True
        elif "tfevents" in n:
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
    if not hits and state and not parquet:  # the HF Trainer's own log alone (another tracker's, where present, also holds K)
        return "jsonl"
    if len(hits) == 1:
        return hits[0]
    if not hits and not state:
        from .console import find_runs as console_runs

        if console_runs(p):
            return "console"
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


def check_num_generations(num_generations) -> None:
    """InputError unless ``num_generations`` (a reader's K flag) is None or a positive integer."""
    if num_generations is not None and (isinstance(num_generations, bool) or not isinstance(num_generations, int)
                                        or num_generations < 1):
        raise InputError(f"--num-generations must be a positive integer, got {num_generations!r}")


def read_scalars(path, *, fmt: str = "auto", run: str | None = None, trainer: str | None = None,
                 num_generations: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                 partial_ok: bool = False, config: dict | None = None) -> RunRecord:
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
    config : the run's settings as a flattened dict (``--trainer-config``, :func:`.common.load_config`), laid over
        any the tracker stored: K, batch sizes, TRL's gradient accumulation and processes.

    Returns a record of :func:`grpo_lab.sims.scalars_record.scalars_record` with ``source`` = ``{format,
    trainer, run, dialect: {column: metric read}, missing, notes, path, groups_per_row}``, ``groups_per_row`` being
    :func:`groups_per_row`'s dict (the figure used, from the config's arithmetic or the lattice of the logged
    shares, both shown and their disagreement named).
    """
    check_num_generations(num_generations)
    rs = read_run_scalars(path, fmt=fmt, run=run, max_bytes=max_bytes, partial_ok=partial_ok)
    return scalars_from(rs, path, trainer=trainer, num_generations=num_generations, partial_ok=partial_ok,
                        config=config)


def scalars_from(rs, path, *, trainer: str | None = None, num_generations: int | None = None,
                 partial_ok: bool = False, config: dict | None = None) -> RunRecord:
    """The scalars-only record of one run's series as read (:class:`.common.RunScalars`): the dialect detected (or
    ``trainer``'s) mapped onto the standard columns; the rest of :func:`read_scalars`, shared with the incremental
    reader (:mod:`.follow`)."""
    if not rs.series:
        if partial_ok:  # a log still being written may hold nothing yet: an empty record, for the next poll
            source = {"format": rs.fmt, "trainer": trainer, "run": rs.name, "dialect": {},
                      "missing": list(COLUMNS[1:]), "notes": ["nothing logged yet"], "path": str(path),
                      "groups_per_row": None}
            return scalars_record(rs.name, [], {}, num_generations=num_generations, source=source)
        raise InputError(f"{path}: run {rs.name!r} holds no scalars")
    return record_from_scalars(rs, str(path), trainer=trainer, num_generations=num_generations, config=config)


def record_from_scalars(rs, path: str, *, trainer: str | None = None, num_generations: int | None = None,
                        config: dict | None = None) -> RunRecord:
    """The scalars-only record of one run's series as logged (:class:`.common.RunScalars`, not empty): the dialect
    applied as :func:`read_scalars` does (its parameters); also what the TRL callback builds from the logs it sees
    (:mod:`grpo_lab.trl_recorder.stall_forecast`), so both read the same metrics the same way. Series named
    :data:`OWN_PREFIX` (``grpo_lab/...``: the forecast ``watch --emit`` and the TRL callback write into the same run)
    are left out (silently: a follower, :mod:`.follow`, never reads them, and both records are equal): a watch must
    not read its own output as the trainer's."""
    if config:
        rs.config = {**rs.config, **config}  # --trainer-config: the run's settings, over any the tracker stored
        rs.notes.append("config keys from --trainer-config")
    if any(k.startswith(OWN_PREFIX) for k in rs.series):  # the forecast written back: not the trainer's data
        rs.series = {k: v for k, v in rs.series.items() if not k.startswith(OWN_PREFIX)}
    d = _dialects.detect(rs.series) if trainer is None else _dialects.dialect(trainer)
    steps, cols, raw, read, missing, notes, K = _dialects.map_run(rs.series, rs.config, d, num_generations)
    if K is None:
        notes.append("K unknown: the run's config does not say it; pass --num-generations")
    if d.trainer == "trl" and "frac_reward_zero_std" not in read:
        notes.append("no frac_reward_zero_std in this TRL log (an early TRL logged reward and reward_std only): "
                     "the zero-std share was not logged, so the doctor has no share to fit")
    gpr = groups_per_row(steps, cols, read, notes)
    from ...doctor.trainer_config import settings_at_ingest

    kept, kept_note = settings_at_ingest(rs.config, K, gpr)  # the run's batch sizes, for diagnose / watch / fleet
    if kept_note:
        notes.append(kept_note)
    missing = [c for c in COLUMNS[1:] if c not in cols]  # after the groups per row is resolved
    source = {"format": rs.fmt, "trainer": d.trainer, "run": rs.name, "dialect": read, "missing": missing,
              "notes": [*rs.notes, *notes], "path": str(path), "dialect_source": f"{d.repo} {d.source} @ {d.version}",
              "groups_per_row": gpr}
    return scalars_record(rs.name, steps, cols, num_generations=K, source=source, raw=raw,
                          extra_meta={"trainer_settings": kept} if kept else None)


_SHARE_COLUMNS = ("frac_reward_zero_std", "frac_all_pass", "frac_all_fail")


def groups_per_row(steps, cols: dict, read: dict, notes: list) -> dict:
    """Resolve the groups behind each logged row (:func:`.lattice.resolve`) and set ``cols["groups_per_step"]``.

    A constant figure from the config (``read["groups_per_step"]`` names a config) is checked against the
    lattice of the logged shares and replaced by the lattice's figure where they disagree; a per-row figure the
    trainer logs (verl's generation batches, V1's evictions) is kept, with whether every row's shares are
    multiples of one over it; with no figure, the lattice's is used where informative. The decision is appended
    to ``notes``; the returned dict (``{value, from, config, config_how, lattice, agree, note}``, ``from`` also
    ``"logged"``) is what the record's ``source.groups_per_row`` holds."""
    from .lattice import resolve

    shares = [cols[c] for c in _SHARE_COLUMNS if c in cols]
    n = np.asarray(cols.get("groups_per_step", ()), float)
    fin = n[np.isfinite(n)]
    how = read.get("groups_per_step")
    config_how = next((x for x in notes if x.startswith("groups per logged row =")), how)
    if fin.size and np.ptp(fin) > 0:  # logged per row: each row's shares checked against its own count
        res = resolve(None, None, shares)
        ok = all(np.all(np.abs(np.where(np.isfinite(v) & np.isfinite(n), v * n - np.round(v * n), 0.0))
                        <= n * 1e-6) for v in shares)
        res.update({"value": float(np.median(fin)), "from": "logged", "config": None, "config_how": how,
                    "agree": ok if shares else None,
                    "note": f"groups per row logged by the trainer ({how}); every row's shares are "
                            f"{'' if ok else 'not all '}multiples of one over its count"})
        notes.append(res["note"])
        return res
    res = resolve(float(fin[0]) if fin.size else None, config_how, shares)
    if res["value"] is not None:
        cols["groups_per_step"] = np.full(len(steps), res["value"])
        read["groups_per_step"] = (read.get("groups_per_step") if res["from"] == "config" else
                                   "lattice of the logged shares (smallest g with every share k/g)")
    else:  # a config figure found wrong (not a whole number) is not kept
        cols.pop("groups_per_step", None)
        read.pop("groups_per_step", None)
    if res["note"]:
        notes.append(res["note"])
    return res
