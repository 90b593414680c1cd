r"""A trainer's own per-step scalars as JSON lines (``metrics.jsonl``).

Two shapes, one object a line:

- verl's file logger (``verl/utils/tracking.py`` ``FileLogger.log``): ``{"step": N, "data": {name: value}}``;
- tinker-cookbook's ``JsonLogger`` (``tinker_cookbook/stores/training_store.py`` ``write_metrics``):
  ``{"step": N, name: value, ...}``, with the run's config in ``config.json`` beside it;
- and, read the same way, the HF Trainer's ``trainer_state.json`` (TRL's and Unsloth's own log whatever they
  report to): its ``log_history`` list of ``{"step": N, name: value}``, told by its content, not its name
  (:func:`trainer_state_kind`): a JSON object with a ``log_history`` list under any file name, or a bare JSON
  list of such rows (``trainer.state.log_history`` dumped on its own). A TRL / Unsloth output folder with no
  ``.jsonl`` is read from its ``trainer_state.json``, else from the latest ``checkpoint-N/trainer_state.json``
  (largest N; said in the notes). The state's ``logging_steps`` and ``train_batch_size`` (the per-device batch)
  are kept as config keys (``logging_steps``, ``per_device_train_batch_size``); no K in it
  (``--num-generations``), nor the gradient accumulation or processes (``--trainer-config``), unless the
  ``training_args.bin`` saved beside it (every checkpoint has one) gives them: read without running its pickle
  (:mod:`.training_args`).

Numbers (and booleans as 0/1) are read; strings, lists and nested objects other than ``data`` are skipped;
``null`` is NaN. A line that is not JSON is an InputError naming it; when ``partial_ok`` (a file still being
written) a last line cut mid-write is left for the next read. A folder is read as one run when it holds one
``metrics.jsonl`` (or one ``*.jsonl``), else each ``*.jsonl`` is a run named by its path.

A JSONL whose lines hold ``rewards`` is a *groups* file (:mod:`grpo_lab.sims.ingest.jsonl`), not scalars:
:func:`is_metrics_jsonl` tells them apart for ``--format auto`` and ``jsonl``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, add_row, charge_files, load_config, number, series_from_rows

__all__ = ["find_runs", "read_run", "is_metrics_jsonl", "scalars_line", "state_history", "add_history", "state_scalars",
           "is_state", "side_config", "config_files", "add_lines", "state_kind", "trainer_state_kind"]


_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_SNIFF = 1 << 16  #: bytes looked at to tell a JSON file's kind


def trainer_state_kind(path: Path) -> str | None:
    """``"state"`` for a JSON object holding a ``log_history`` list (an HF Trainer's trainer_state.json under any
    name), ``"rows"`` for a bare JSON list of ``log_history`` rows (objects with an integer ``step`` and no W&B
    ``_step``), None for anything else. Decided from the first 64 KiB (:func:`state_kind`), so a large file is
    not parsed twice."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF)
    except OSError:
        return None
    return state_kind(head)


def state_kind(head: bytes) -> str | None:
    """:func:`trainer_state_kind` of a file's first bytes (at least the first 64 KiB where the file is longer): a key
    ``"log_history": [`` in an object, or a list whose first object has ``"step"``. Also what the lab's upload
    tells an uploaded file by (:func:`grpo_lab.sims.ingest.ingest_upload`), so both read it alike."""
    text = head[:_SNIFF].lstrip()
    if text.startswith(b"{"):
        return "state" if re.search(rb'"log_history"\s*:\s*\[', head[:_SNIFF]) else None
    if text.startswith(b"["):
        first = re.match(rb'\[\s*\{(.{0,4000}?)\}', text, re.S)
        body = first.group(1) if first else text[:4000]
        if re.search(rb'"step"\s*:\s*\d', body) and b'"_step"' not in body and b'"rewards"' not in body:
            return "rows"
    return None


def output_folder_state(path: Path) -> tuple[Path, str | None] | None:
    """The trainer_state.json a TRL / Unsloth output folder is read from: its own, else the latest
    ``checkpoint-N/`` one (largest N) with a note saying so; None when it holds neither."""
    own = path / "trainer_state.json"
    if own.is_file():
        return own, None
    best = None
    for d in path.iterdir() if path.is_dir() else ():
        m = _CHECKPOINT.match(d.name)
        if m and (d / "trainer_state.json").is_file() and (best is None or int(m.group(1)) > best[0]):
            best = (int(m.group(1)), d / "trainer_state.json")
    if best is None:
        return None
    return best[1], (f"read {best[1].parent.name}/trainer_state.json, the latest checkpoint's (the output folder "
                     "has no trainer_state.json of its own)")


def find_runs(path: Path) -> dict[str, Path]:
    if path.is_file():
        return {path.parent.name or path.stem: path}
    if not any(path.rglob("*.jsonl")):
        found = output_folder_state(path)
        if found is not None:
            return {path.name or "trainer_state": found[0]}
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


def state_history(path: Path, data: bytes) -> tuple[dict | None, list]:
    """``(state, log_history)`` of a trainer_state.json's bytes (any name; ``state`` None for a bare list of its
    rows). The JSON is parsed whole: a state file is rewritten whole at each save, so there is nothing to read
    incrementally in it (:mod:`.follow` parses only the rows past those it has)."""
    try:
        state = json.loads(data)
    except (ValueError, RecursionError):
        raise InputError(f"{path}: not valid JSON") from None
    bare = isinstance(state, list)
    history = state if bare else (state.get("log_history") if isinstance(state, dict) else None)
    if not isinstance(history, list):
        raise InputError(f"{path}: no log_history list (not an HF Trainer's trainer_state.json)")
    return (None if bare else state), history


def add_history(path: Path, history: list, rows: dict, start: int = 0) -> int:
    """Add ``history[start:]`` (log_history rows) to ``rows``; returns how many were added."""
    for n in range(start, len(history)):
        entry = history[n]
        step = entry.get("step") if isinstance(entry, dict) else None
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InputError(f"{path}: log_history[{n}] has no integer step")
        add_row(rows, step, entry, skip=("step", "epoch"))
    return max(0, len(history) - start)


def state_scalars(path: Path, state: dict | None, series: dict) -> RunScalars:
    """One run's scalars from a trainer state's ``series`` (of its log_history rows): the state's own settings as
    config (``logging_steps``, and ``train_batch_size`` = ``args.per_device_train_batch_size``) and the notes."""
    from .training_args import training_args_beside

    config = {}
    if state is not None:
        for key, as_key in (("logging_steps", "logging_steps"), ("train_batch_size", "per_device_train_batch_size")):
            value = state.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                config[as_key] = value
    args, args_notes = training_args_beside(path)
    config.update(args)
    what = "a bare list of log_history rows" if state is None else (
        "TRL's trainer_state.json" if path.name == "trainer_state.json" else
        f"an HF Trainer state (log_history) saved as {path.name}")
    notes = [*args_notes] if args.get("num_generations") else [
        f"{what}: no num_generations in it (--num-generations)", *args_notes]
    if _CHECKPOINT.match(path.parent.name):
        notes.append(f"read {path.parent.name}/trainer_state.json (a checkpoint's state: the run's log up to "
                     "that checkpoint)")
    return RunScalars(name=path.parent.name or path.stem or "trainer_state", series=series, config=config,
                      fmt="jsonl", notes=notes)


def is_state(path: Path) -> bool:
    """Whether the run file ``path`` is read as an HF Trainer state (a .json, or told by its content), not lines."""
    return path.suffix.lower() == ".json" or path.name == "trainer_state.json" or bool(trainer_state_kind(path))


def side_config(path: Path) -> tuple[dict, list[str]]:
    """``(config, notes)`` of a metrics.jsonl: its ``config.json`` (tinker-cookbook), else verl's hydra
    ``.hydra/config.yaml`` (or its ``overrides.yaml``) beside it; ``{}`` where there is none."""
    config_file = path.parent / "config.json"
    if config_file.is_file():
        return load_config(config_file), []
    for f in (path.parent / ".hydra" / "config.yaml", path.parent / ".hydra" / "overrides.yaml"):
        if f.is_file():  # verl's file logger under hydra: the run's resolved config (or its overrides) beside it
            return load_config(f), [f"config from {f.parent.name}/{f.name}"]
    return {}, []


def config_files(path: Path) -> list[Path]:
    """The files beside a metrics.jsonl or a trainer state that :func:`side_config` and :func:`state_scalars` may
    read (charged to the size cap)."""
    return [f for f in (path.parent / "config.json", path.parent / ".hydra" / "config.yaml",
                        path.parent / ".hydra" / "overrides.yaml", path.parent / "training_args.bin") if f.is_file()]


def add_lines(path: Path, lines: list[bytes], rows: dict, first: int = 1) -> int:
    """Add complete JSON lines (numbered from ``first``) to ``rows``; returns the lines of scalars read. InputError
    (naming the line) for a line that is not a JSON object of scalars with an integer step >= 0."""
    n_read = 0
    for n, line in enumerate(lines, first):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            raise InputError(f"{path} line {n}: not valid JSON") from None
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
        n_read += 1
    return n_read


def complete_lines(data: bytes) -> tuple[list[bytes], int]:
    """``(lines, end)``: the complete lines of a metrics.jsonl still being written, and the bytes they span. A line
    is complete with its newline, or without one when it is a whole JSON object: a writer's line cut mid-write
    is never one (its closing brace comes last), and a finished file need not end with a newline."""
    end = data.rfind(b"\n") + 1
    lines = data[:end].split(b"\n")[:-1]
    tail = data[end:]
    if tail.strip():
        try:
            whole = isinstance(json.loads(tail), dict)
        except (ValueError, RecursionError):
            whole = False
        if whole:
            lines.append(tail)
            end = len(data)
    return lines, end


def read_run(name: str, path: Path, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    """One run: a trainer state (:func:`is_state`) or the lines of a metrics.jsonl. ``partial_ok``: a last line
    cut mid-write (:func:`complete_lines`) is left for the next read (so a followed file, :mod:`.follow`, and a
    whole read of it agree); otherwise a last line that is not JSON is an error naming it as cut."""
    charge_files([path, *config_files(path)], max_bytes, str(path))
    data = path.read_bytes()
    if is_state(path):
        state, history = state_history(path, data)
        rows: dict = {}
        add_history(path, history, rows)
        return state_scalars(path, state, series_from_rows(rows))
    lines = complete_lines(data)[0] if partial_ok else data.split(b"\n")
    rows = {}
    try:
        add_lines(path, lines, rows)
    except InputError as exc:
        if str(exc).startswith(f"{path} line {len(lines)}: not valid JSON"):
            raise InputError(f"{exc} (a cut last line: the file is incomplete or still being written)") from None
        raise
    config, notes = side_config(path)
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="jsonl", notes=notes)
