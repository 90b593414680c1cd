r"""A trainer's own per-step scalars as JSON lines (``metrics.jsonl``).

Two shapes, one object a line:

- verl's file logger (``verl/utils/tracking.py`` ``FileLogger.log``): ``{"step": N, "data": {name: value}}``;
- tinker-cookbook's ``JsonLogger`` (``tinker_cookbook/stores/training_store.py`` ``write_metrics``):
  ``{"step": N, name: value, ...}``, with the run's config in ``config.json`` beside it;
- and, read the same way, the HF Trainer's ``trainer_state.json`` (TRL's own log whatever it reports to):
  its ``log_history`` list of ``{"step": N, name: value}``; no K in it (``--num-generations``).

Numbers (and booleans as 0/1) are read; strings, lists and nested objects other than ``data`` are skipped;
``null`` is NaN. A line that is not JSON is an InputError naming it, except a cut last line (no newline at
the end) when ``partial_ok`` (a file still being written). A folder is read as one run when it holds one
``metrics.jsonl`` (or one ``*.jsonl``), else each ``*.jsonl`` is a run named by its path.

A JSONL whose lines hold ``rewards`` is a *groups* file (:mod:`grpo_lab.sims.ingest.jsonl`), not scalars:
:func:`is_metrics_jsonl` tells them apart for ``--format auto`` and ``jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, add_row, charge_files, flatten, number, series_from_rows

__all__ = ["find_runs", "read_run", "is_metrics_jsonl", "scalars_line"]


def find_runs(path: Path) -> dict[str, Path]:
    if path.is_file():
        return {path.parent.name or path.stem: path}
    files = sorted(f for f in path.rglob("*.jsonl") if f.is_file() and len(f.relative_to(path).parts) <= 4)
    named = [f for f in files if f.name == "metrics.jsonl"]
    if len(named) == 1 and len(files) > 1:
        files = named
    return {(f.relative_to(path).parent / f.stem).as_posix() if len(files) > 1 else (path.name or f.stem): f
            for f in files}


def is_metrics_jsonl(path: Path) -> bool:
    """True when ``path`` (a file, or every .jsonl in a folder, the first 20 looked at) is per-step scalars: the
    first JSON line of each an object with an integer ``step`` (or ``_step``), no ``rewards`` or ``prompt_id``
    (a groups line), and numbers for at least half its other values (or a ``data`` object of them, verl's
    file logger). Anything else (a groups JSONL, a verl output folder with its rollout dumps, a file that is
    not JSON) is left to the group readers, whose errors name the format it looks like."""
    files = [path] if path.is_file() else sorted(path.rglob("*.jsonl"))[:20]
    return bool(files) and all(_first_line_is_scalars(f) for f in files)


def _first_line_is_scalars(f: Path) -> bool:
    try:
        with open(f, "rb") as fh:
            for _ in range(50):
                line = fh.readline(1 << 20)
                if not line:
                    return False
                if line.strip():
                    break
    except OSError:
        return False
    return scalars_line(line)


def scalars_line(line: bytes) -> bool:
    """Whether one JSON line is a line of per-step scalars (see :func:`is_metrics_jsonl`)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False
    if not isinstance(obj, dict) or "rewards" in obj or "prompt_id" in obj:
        return False
    step = obj.get("step", obj.get("_step"))
    if isinstance(step, bool) or not isinstance(step, int):
        return False
    values = obj["data"] if isinstance(obj.get("data"), dict) else {k: v for k, v in obj.items()
                                                                   if k not in ("step", "_step")}
    numeric = sum(number(v) is not None for v in values.values())
    return numeric > 0 and 2 * numeric >= len(values)


def _trainer_state(path: Path, data: bytes) -> RunScalars:
    try:
        state = json.loads(data)
    except (ValueError, RecursionError):
        raise InputError(f"{path}: not valid JSON") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{path}: no log_history list (not an HF Trainer's trainer_state.json)")
    rows: dict = {}
    for n, entry in enumerate(history):
        step = entry.get("step") if isinstance(entry, dict) else None
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InputError(f"{path}: log_history[{n}] has no integer step")
        add_row(rows, step, entry, skip=("step", "epoch"))
    return RunScalars(name=path.parent.name or "trainer_state", series=series_from_rows(rows), fmt="jsonl",
                      notes=["TRL's trainer_state.json: no num_generations in it (--num-generations)"])


def read_run(name: str, path: Path, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    config_file = path.parent / "config.json"
    charge_files([path, *([config_file] if config_file.is_file() else [])], max_bytes, str(path))
    data = path.read_bytes()
    if path.name == "trainer_state.json":
        return _trainer_state(path, data)
    rows: dict = {}
    lines = data.split(b"\n")
    last = len(lines)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            if n == last and partial_ok:
                break  # the writer is mid-line
            cut = " (a cut last line: the file is incomplete or still being written)" if n == last else ""
            raise InputError(f"{path} line {n}: not valid JSON{cut}") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path} line {n}: expected a JSON object, got {type(obj).__name__}")
        if "rewards" in obj:
            raise InputError(f"{path} line {n}: a line of group rewards; this is a groups JSONL: "
                             "use --format jsonl-groups")
        step = obj.get("step", obj.get("_step"))
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InputError(f"{path} line {n}: 'step' must be an integer >= 0, got {step!r}")
        values = obj["data"] if isinstance(obj.get("data"), dict) else obj
        add_row(rows, step, values, skip=("step", "_step"))
    config = {}
    if config_file.is_file():
        try:
            config = flatten(json.loads(config_file.read_bytes()))
        except (ValueError, RecursionError):
            raise InputError(f"{config_file}: not valid JSON") from None
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="jsonl")
