r"""A run's console: the metrics the HF Trainer printed (TRL, Unsloth), read from a captured stdout / stderr.

Often all that is left of a run is ``python train.py > train.log 2>&1``. What the trainer printed there
(transformers ``trainer_callback.py``): at each logging step ``ProgressCallback.on_log`` writes ``str(logs)``, the
logged metrics as a Python dict literal, through tqdm between the training bar's redraws (transformers 5 formats
each float with ``:.4g`` as a string, ``'0.3536'``; 4.x printed the float itself, ``nan`` bare);
``PrinterCallback`` (``disable_tqdm=True``) prints the same dict with ``print``. ``total_flos`` is dropped.

**Rows**: every dict literal on a line (from its first ``{'`` to the line's last ``}``), parsed with
:func:`ast.literal_eval` (a literal only: nothing is evaluated), bare ``nan`` / ``inf`` quoted first. Numbers and
numeric strings are read; other strings skipped. A line longer than :data:`MAX_LINE` bytes, or one that looks like a
metrics dict but does not parse, is skipped and counted in a note. The run's summary row (``train_runtime``, ...)
and evaluation rows are rows as they are in ``log_history``.

**Steps**: the logged dict carries no step (``log_history`` adds it; the console does not). Each row's step is the
training bar's last counter ``N/T`` printed before it (tqdm's redraw ``\r ... N/T [...]`` on the same line: the bar
is updated to the global step before ``on_log``); the training bar is the one whose total ``T`` is the most counted
(an evaluation bar has its own total). A console with no bar (``disable_tqdm``), or whose counters go backwards,
numbers its training rows 1, 2, ...: the step axis then counts logged rows, said in a note (row n is optimizer step
n x ``logging_steps``); an evaluation row (``eval_*``) or the summary (``train_*``) takes the row before's number, the
step ``log_history`` gives it. Where the bar gives steps, their common spacing is kept as ``logging_steps`` (config key)
for the groups per logged row (:func:`.dialects.trl_groups_per_log`), said in a note.

Rounding: transformers 5's 4 significant digits bound the shares' lattice test (:mod:`.lattice` takes the logged
values as they are).
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np

from ...errors import InputError
from .common import RunScalars, add_row, charge_files, series_from_rows

__all__ = ["MAX_LINE", "SUFFIXES", "console_kind", "is_console", "find_runs", "read_run", "parse_console"]

MAX_LINE = 1 << 18  #: bytes; a longer console line is skipped (counted in a note)
SUFFIXES = (".log", ".out", ".txt", ".err")  #: what a folder's console files are named
_SNIFF = 1 << 20  #: bytes looked at to tell a console log
_DICT = re.compile(r"\{'[^\n]*\}")
_KEY = re.compile(r"\{'([A-Za-z_][\w/.\-]*)'\s*:")
_BAR = re.compile(r"\|\s*(\d+)/(\d+)\s*\[")
_BARE = re.compile(r"(?<=[:,\[]\s)(-?(?:nan|inf))(?=\s*[,}\]])")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")
#: keys the HF Trainer logs at every logging step; a console dict holding one of them is a metrics row
_SAME_STEP = ("eval_", "train_")  #: a row of only these (and epoch) is logged at the last training row's step
_TRAINER_KEYS = frozenset({"loss", "grad_norm", "learning_rate", "epoch", "reward", "reward_std",
                           "frac_reward_zero_std", "train_runtime", "eval_loss"})


def _value(v):
    """A printed value as a float: numbers (bools 0/1), numeric strings (transformers 5's ``:.4g``); else None."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and len(v) < 64 and _NUMBER.fullmatch(v.strip()):
        return float(v)
    return None


def _row(text: str) -> dict | None:
    """One printed dict as ``{name: float}`` (None where it is not a literal dict of string keys)."""
    try:
        obj = ast.literal_eval(_BARE.sub(r"'\1'", text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(obj, dict) or not obj or not all(isinstance(k, str) for k in obj):
        return None
    out = {}
    for k, v in obj.items():
        x = _value(v) if v is not None else math.nan
        if x is not None:
            out[k] = x
    return out if out and _TRAINER_KEYS.intersection(out) else None


def console_kind(head: bytes) -> bool:
    """Whether a file's first bytes are an HF Trainer console: a line holding a dict literal of the trainer's
    logged metrics (:data:`_TRAINER_KEYS`) that parses."""
    text = head[:_SNIFF].decode("utf-8", "replace")
    for line in text.split("\n"):
        if len(line) <= MAX_LINE and _KEY.search(line):
            for piece in line.split("\r"):
                m = _DICT.search(piece)
                if m and _row(m.group(0)) is not None:
                    return True
    return False


def is_console(path: Path) -> bool:
    """:func:`console_kind` of a file (False where it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return console_kind(fh.read(_SNIFF))
    except OSError:
        return False


def parse_console(text: str) -> tuple[list[tuple[int | None, dict]], int]:
    """``([(bar counter or None, row)], skipped)``: the metric rows in order, each with the training bar's last
    counter printed before it and its total as ``(N, T)`` (None where no bar came before), and how many lines
    that looked like a metrics dict were skipped (too long, or not a literal)."""
    out, skipped, bar = [], 0, None
    for line in text.split("\n"):
        if len(line) > MAX_LINE:
            skipped += bool(_KEY.search(line[:MAX_LINE]))
            continue
        for piece in line.split("\r"):
            for m in _BAR.finditer(piece):
                bar = (int(m.group(1)), int(m.group(2)))
            d = _DICT.search(piece)
            if d is None or not _KEY.search(d.group(0)):
                continue
            row = _row(d.group(0))
            if row is None:
                skipped += 1
            else:
                out.append((bar, row))
    return out, skipped


def _steps(parsed: list, notes: list) -> tuple[list[int], int | None]:
    """Each row's step from the training bar (see the module docstring); ``(steps, logging_steps or None)``."""
    totals = Counter(b[1] for b, _ in parsed if b is not None)
    if totals:
        total = totals.most_common(1)[0][0]
        steps, last = [], None
        for b, _ in parsed:
            if b is not None and b[1] == total:
                last = b[0]
            steps.append(last)
        ok = all(s is not None for s in steps) and all(a <= b for a, b in zip(steps, steps[1:]))
        if ok:
            gaps = np.diff(sorted(set(steps)))
            every = int(Counter(gaps.tolist()).most_common(1)[0][0]) if len(gaps) else None
            notes.append("steps from the training bar's counter printed before each row"
                         + (f"; logged every {every} steps (logging_steps)" if every else ""))
            return steps, every
        notes.append("the training bar's counters do not give every row a step in order")
    notes.append("no training bar before the rows (disable_tqdm?): steps are the logged rows' order, 1, 2, ... "
                 "(row n is optimizer step n x logging_steps); the step axis counts logged rows")
    steps, n = [], 0
    for _, row in parsed:  # an evaluation or the run's summary row is logged at the training row's step
        n += any(not k.startswith(_SAME_STEP) and k != "epoch" for k in row) or n == 0
        steps.append(n)
    return steps, None


def find_runs(path: Path) -> dict[str, Path]:
    """A console file is one run; a folder's runs are its console files (:data:`SUFFIXES`, up to 2 levels down,
    told by content)."""
    if path.is_file():
        return {path.stem: path}
    files = sorted(f for f in [*path.glob("*"), *path.glob("*/*")] if f.suffix.lower() in SUFFIXES
                   and f.is_file() and not f.is_symlink() and is_console(f))
    return {(f.relative_to(path).with_suffix("")).as_posix() if len(files) > 1 else (path.name or f.stem): f
            for f in files}


def read_run(name: str, path: Path, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    """One console file's metric rows as a run's scalars (see the module docstring). ``partial_ok``: a last line
    cut mid-write is simply not a whole dict yet (it does not parse), so nothing more is needed to follow it."""
    charge_files([path], max_bytes, str(path))
    text = path.read_bytes().decode("utf-8", "replace")
    parsed, skipped = parse_console(text)
    if not parsed and not partial_ok:
        raise InputError(f"{path}: no metrics printed by an HF Trainer (a line holding {{'loss': ...}}) in it")
    notes = [f"an HF Trainer console log ({len(parsed)} metric rows printed)"]
    steps, every = _steps(parsed, notes)
    if skipped:
        notes.append(f"{skipped} lines that look like metrics could not be read (cut, or over {MAX_LINE} bytes)")
    rows: dict = {}
    for step, (_, row) in zip(steps, parsed):
        add_row(rows, step, row, skip=("epoch", "total_flos"))
    config = {"logging_steps": every} if every else {}
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="console", notes=notes)
