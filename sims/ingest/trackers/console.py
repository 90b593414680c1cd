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
(an evaluation bar has its own total), and the steps must rise with every training row. Where stdout and stderr
were buffered apart (``> log 2>&1`` without ``python -u``: the bar, on unbuffered stderr, runs ahead of the rows,
printed in bursts), the counters do not match the rows one by one; a *finished* run (its summary row printed)
then has its training rows placed on the multiples of ``every`` in ``(S, T]`` (S the step it started or resumed
from: the bar's smallest positive counter less one), ``every = (T - S) // rows``, kept only when exactly that many
multiples lie there and no row lands past the counter printed before it (:func:`_from_bar_total`). Otherwise (no
bar: ``disable_tqdm``; a run cut short, whose last buffered rows may never have been written) the training rows
are numbered 1, 2, ...: the step axis then counts logged rows, said in a note (row n is optimizer step n x
``logging_steps``); an evaluation row (``eval_*``) or the summary (``train_*``) takes the row before's number, the
step ``log_history`` gives it. Where the bar gives steps, their common spacing is kept as ``logging_steps``
(config key) for the groups per logged row (:func:`.dialects.trl_groups_per_log`), said in a note.

**Several runs in one console** (``all_experiments.log``: runs one after another, each ending with its summary row):
one run each, ``NAME:1``, ``NAME:2``, ... (``--run``); rows after the last summary are a run still going.

On three public repositories' TRL consoles (53 runs; read locally from their snapshots, not shipped: no licence;
docs/ingest.md) the bar or the bar's total gave the steps of 44 runs; 9 unfinished or resumed runs count rows.

Rounding: transformers 5's 4 significant digits bound the shares' lattice test (:mod:`.lattice` takes the logged
values as they are).
"""

from __future__ import annotations

import ast
import functools
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
_SUMMARY = "train_runtime"  #: the key of the summary row the HF Trainer prints when a run ends
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
    """:func:`console_kind` of a file (False where it cannot be read); remembered by the file's identity (path,
    size, modification time), so a runs folder listed at every refresh (the Replay, the Fleet) reads each console's
    head once until it changes."""
    try:
        st = Path(path).stat()
    except OSError:
        return False
    return _sniffed(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _sniffed(path: str, size: int, mtime_ns: int) -> bool:
    try:
        with open(path, "rb") as fh:
            return console_kind(fh.read(_SNIFF))
    except OSError:
        return False


def parse_console(text: str) -> tuple[list[tuple], int]:
    """``([(bar, row, low)], skipped)``: the metric rows in order, each with the last bar counter printed before it
    as ``(N, T)`` (None where no bar came before) and ``low``, each bar total's smallest positive counter printed
    since the last summary row (``{T: N}``: where a run started or resumed); and how many lines that looked like a
    metrics dict were skipped (too long, or not a literal)."""
    out, skipped, bar, low = [], 0, None, {}
    for line in text.split("\n"):
        if len(line) > MAX_LINE:
            skipped += bool(_KEY.search(line[:MAX_LINE]))
            continue
        for piece in line.split("\r"):
            for m in _BAR.finditer(piece):
                bar = (int(m.group(1)), int(m.group(2)))
                if bar[0] > 0:
                    low[bar[1]] = min(low.get(bar[1], bar[0]), bar[0])
            d = _DICT.search(piece)
            if d is None or not _KEY.search(d.group(0)):
                continue
            row = _row(d.group(0))
            if row is None:
                skipped += 1
            else:
                out.append((bar, row, dict(low)))
                if _SUMMARY in row:
                    low = {}
    return out, skipped


def _advances(row: dict) -> bool:
    """Whether a printed row is a training row (a new logging step), not an evaluation or summary row."""
    return any(not k.startswith(_SAME_STEP) and k != "epoch" for k in row)


def _order(parsed: list) -> list[int]:
    """Each row's training row number, 1, 2, ...: an evaluation or the summary row takes the row before's."""
    steps, n = [], 0
    for _, row, _ in parsed:
        n += _advances(row) or n == 0
        steps.append(n)
    return steps


def _steps(parsed: list, notes: list) -> tuple[list[int], int | None]:
    """Each row's step (see the module docstring); ``(steps, logging_steps or None)``."""
    order = _order(parsed)
    totals = Counter(item[0][1] for item in parsed if item[0] is not None)
    if totals:
        total = totals.most_common(1)[0][0]
        steps, last = [], None
        for b, _, _ in parsed:
            if b is not None and b[1] == total:
                last = b[0]
            steps.append(last)
        ok = steps[0] is not None and all(
            (b is not None and (b > a if n1 > n0 else b == a))
            for a, b, n0, n1 in zip(steps, steps[1:], order, order[1:]))
        if ok:
            gaps = np.diff(sorted(set(steps)))
            every = int(Counter(gaps.tolist()).most_common(1)[0][0]) if len(gaps) else None
            notes.append("steps from the training bar's counter printed before each row"
                         + (f"; logged every {every} steps (logging_steps)" if every else ""))
            return steps, every
        fitted = _from_bar_total(parsed, order, total)
        if fitted is not None:
            first, every = fitted
            notes.append(f"the training bar's counters are out of step with the rows (stdout and stderr buffered "
                         f"apart): the finished run's {order[-1]} training rows are the multiples of {every} from "
                         f"step {first} to the bar's total {total} (logging_steps {every})")
            return [first + (n - 1) * every for n in order], every
        notes.append("the training bar's counters are out of step with the rows (stdout and stderr buffered apart)")
    notes.append("steps are the logged rows' order, 1, 2, ... (row n is optimizer step n x logging_steps; no "
                 "training bar gives them): the step axis counts logged rows")
    return order, None


def _from_bar_total(parsed: list, order: list, total: int) -> tuple[int, int] | None:
    """``(first step, logging_steps)`` of a finished run whose rows cannot be matched to the bar's counters one by
    one: the training rows are taken as the multiples of ``every`` in ``(S, total]``, S the step the run started
    from (the bar's smallest positive counter less one: 0, or the step a resumed run went on from), ``every`` =
    (total - S) // rows, kept only when exactly that many multiples lie there and no row's step is past the bar's
    counter printed before it (the bar, on unbuffered stderr, is ahead of the rows, on buffered stdout); None
    otherwise, and for a run that did not end (its last rows may never have been flushed)."""
    if not any(_SUMMARY in item[1] for item in parsed):
        return None
    start, n_rows = parsed[-1][2].get(total, 1) - 1, order[-1]
    every = (total - start) // n_rows if n_rows else 0
    if every < 1 or total // every - start // every != n_rows:
        return None
    first = (start // every + 1) * every
    for (bar, _, _), n in zip(parsed, order):  # the bar (stderr, unbuffered) runs ahead of the rows, never behind
        if bar is not None and bar[1] == total and first + (n - 1) * every > bar[0]:
            return None
    return first, every


def _segments(parsed: list) -> list[list]:
    """The runs one console holds, in order: each ends with its summary row (``train_runtime``); rows after the last
    summary are a run still going. Segments without a training row (a lone summary) are dropped."""
    segs, cur = [], []
    for item in parsed:
        cur.append(item)
        if _SUMMARY in item[1]:
            segs.append(cur)
            cur = []
    if cur:
        segs.append(cur)
    return [seg for seg in segs if any(_advances(item[1]) for item in seg)] or segs[:1]


def _summaries(path: Path) -> int:
    """How many runs a console file holds, counted from its bytes (its summary rows; 1 at least): what
    :func:`find_runs` names without parsing, remembered by the file's identity as :func:`is_console` is. A file over
    the default size cap is one run (its read refuses it)."""
    try:
        st = path.stat()
    except OSError:
        return 1
    return _counted(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _counted(path: str, size: int, mtime_ns: int) -> int:
    from ..common import DEFAULT_MAX_BYTES

    if size > DEFAULT_MAX_BYTES:
        return 1
    try:
        data = Path(path).read_bytes()
    except OSError:
        return 1
    marks = [m.start() for m in re.finditer(rb"\{'" + _SUMMARY.encode() + rb"'", data)]
    more = bool(marks) and re.search(rb"\{'(?:loss|reward|grad_norm)'", data[marks[-1]:]) is not None
    return max(1, len(marks) + more)


def find_runs(path: Path) -> dict:
    """A console file is one run, or, where it holds several (each ended by its summary row: ``all_runs.log``),
    one run each, named ``NAME:1``, ``NAME:2``, ... (handle ``(path, index)``); a folder's runs are its console files
    (:data:`SUFFIXES`, up to 2 levels down, told by content; no link followed, to a file or a folder)."""
    files = [path] if path.is_file() else sorted(
        f for f in [*path.glob("*"), *path.glob("*/*")] if f.suffix.lower() in SUFFIXES
        and f.is_file() and not f.is_symlink() and not f.parent.is_symlink() and is_console(f))
    runs: dict = {}
    for f in files:
        name = f.stem if path.is_file() else (
            f.relative_to(path).with_suffix("").as_posix() if len(files) > 1 else (path.name or f.stem))
        n = _summaries(f)
        runs.update({name: f} if n == 1 else {f"{name}:{i + 1}": (f, i) for i in range(n)})
    return runs


def read_run(name: str, handle, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    """One run of a console file (``handle``: the file, or ``(file, index)`` for one of several runs in it) as a
    run's scalars (see the module docstring). ``partial_ok``: a last line cut mid-write is simply not a whole dict
    yet (it does not parse), so nothing more is needed to follow it."""
    path, index = handle if isinstance(handle, tuple) else (handle, None)
    path = Path(path)
    charge_files([path], max_bytes, str(path))
    text = path.read_bytes().decode("utf-8", "replace")
    parsed, skipped = parse_console(text)
    if not parsed and not partial_ok:
        raise InputError(f"{path}: no metrics printed by an HF Trainer (a line holding {{'loss': ...}}) in it")
    segs = _segments(parsed) if parsed else [[]]
    notes = [f"an HF Trainer console log ({len(parsed)} metric rows printed)"]
    if len(segs) > 1 or index:
        if index is None or index >= len(segs):
            raise InputError(f"{path}: holds {len(segs)} runs (each ended by its summary row); pick one with --run")
        parsed = segs[index]
        notes.append(f"run {index + 1} of the {len(segs)} this console holds ({len(parsed)} rows)")
    steps, every = _steps(parsed, notes) if parsed else ([], None)
    if skipped:
        notes.append(f"{skipped} lines that look like metrics could not be read (cut, or over {MAX_LINE} bytes)")
    rows: dict = {}
    for step, (_, row, _) in zip(steps, parsed):
        add_row(rows, step, row, skip=("epoch", "total_flos"))
    config = {"logging_steps": every} if every else {}
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="console", notes=notes)
