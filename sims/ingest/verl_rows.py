r"""Reading one verl rollout dump file into columns: pyarrow's JSON reader, or a line-by-line fallback.

A dump line is ``{"input": ..., "output": ..., "score": ..., "step": ..., <reward extras>}``; the
reader needs only ``input``, ``step`` and the reward keys. pyarrow's JSON reader parses a
file with an explicit schema of just those fields (the long ``output`` text is skipped,
not converted), several times faster than ``json.loads`` per line. Whatever it cannot
take as it is (a malformed line, a missing key, a reward written as the text of a torch
tensor by older verl trainers, a prompt that is not text) goes through the line-by-line
reader, which either reads it or raises an :class:`InputError` naming the line.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np

from ..errors import InputError
from .common import format_hint, intern_codes, iter_json_lines

__all__ = ["DumpRows", "parse_dump", "number"]

_TENSOR_TEXT = re.compile(r"^tensor\((-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|True|False)\.?\)$")
_BOOL_COLUMN = re.compile(r"Column\(/([^)]*)\) changed from (?:number to boolean|boolean to number)")
#: pyarrow's JSON block size: the same CPU time as 16 MB blocks, and on the shared machine faster in wall time
#: (a block that fits the cache); files are parsed on several threads by :mod:`.parallel`, so not within a file
BLOCK_BYTES = 1 << 21


def number(value, key: str, where: str) -> float:
    """A per-row value as a float: a number, a boolean, None (NaN), or the text of a 0-d torch tensor.

    Older verl trainers passed the reward manager's lists of 0-d tensors to the dump, which
    ``json.dumps(..., default=str)`` writes as ``"tensor(-0.2500)"`` / ``"tensor(True)"``.
    """
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str) and (m := _TENSOR_TEXT.match(value.strip())):
        text = m.group(1)
        return 1.0 if text == "True" else 0.0 if text == "False" else float(text)
    raise InputError(f"{where}: {key!r} must be a number, got {str(value)[:40]!r}")


class DumpRows:
    """Rows of one file: ``step`` (int64), ``prompt`` (codes into a shared text index), ``cols`` (float64)."""

    def __init__(self, step: np.ndarray, prompt: np.ndarray, cols: dict[str, np.ndarray]):
        self.step, self.prompt, self.cols = step, prompt, cols


def _fast(data: bytes, keys: tuple[str, ...], need: str, bools: set):
    """``(rows, the file's distinct prompts as a pyarrow string array)``, or None: the line reader's turn."""
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        return None
    block = BLOCK_BYTES
    for _ in range(2 * len(keys) + 2):
        schema = pa.schema([("input", pa.string()), ("step", pa.int64())] +
                           [(k, pa.bool_() if k in bools else pa.float64()) for k in keys])
        try:
            tab = pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(block_size=block, use_threads=False),
                               parse_options=pj.ParseOptions(explicit_schema=schema,
                                                             unexpected_field_behavior="ignore"))
            break
        except pa.ArrowInvalid as exc:
            if "straddling" in str(exc) and block <= len(data):
                block = len(data) + 1  # a line longer than a block: the file in one block
                continue
            m = _BOOL_COLUMN.search(str(exc))
            if not m or m.group(1) not in keys:
                return None
            bools.symmetric_difference_update({m.group(1)})
    else:
        return None
    step, text = tab.column("step"), tab.column("input")
    if step.null_count or text.null_count or tab.column(need).null_count:
        return None  # a line without step / input / the reward: the line reader names it
    steps = step.to_numpy()
    if len(steps) and steps.min() < 0:
        return None
    # the file's distinct prompts stay in arrow: codes into them, interned across files by .prompts
    enc = text.combine_chunks().dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    cols = {}
    for k in keys:
        c = tab.column(k)
        if c.null_count == len(c):
            continue  # the key is in no line of this file
        cols[k] = np.asarray(c.to_numpy(zero_copy_only=False), dtype=float) if c.null_count == 0 else \
            np.asarray(c.cast(pa.float64()).fill_null(math.nan).to_numpy(zero_copy_only=False), dtype=float)
    return DumpRows(steps.astype(np.int64), codes, cols), enc.dictionary


def _slow(data: bytes, label: str, keys: tuple[str, ...], need: str, labels: list) -> DumpRows:
    steps: list[int] = []
    texts: list[str] = []
    cols: dict[str, list] = {}
    for n, obj in iter_json_lines(data, label):
        lacking = [k for k in ("input", need, "step") if k not in obj]
        if lacking:
            raise InputError(f"{label} line {n}: missing {', '.join(repr(k) for k in lacking)} "
                             f"(a verl rollout dump line has input, output, score, step){format_hint(obj, 'verl')}")
        step, text = obj["step"], obj["input"]
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise InputError(f"{label} line {n}: 'step' must be an integer >= 0, got {step!r}")
        if not isinstance(text, str):
            raise InputError(f"{label} line {n}: 'input' must be the prompt text")
        i = len(steps)
        steps.append(step)
        texts.append(text)
        for k in keys:
            if k in obj:
                col = cols.setdefault(k, [])
                col.extend([math.nan] * (i - len(col)))
                col.append(number(obj[k], k, f"{label} line {n}"))
    for col in cols.values():  # rows without a key read as NaN
        col.extend([math.nan] * (len(steps) - len(col)))
    return DumpRows(np.asarray(steps, np.int64), intern_codes(texts, {}, labels),
                    {k: np.asarray(v, float) for k, v in cols.items()})


def parse_dump(data: bytes, label: str, keys: tuple[str, ...], need: str, bools: frozenset = frozenset()
               ) -> tuple[DumpRows, object, frozenset]:
    """One dump file on its own (in a worker thread or process): rows with prompt codes into the returned
    texts, and the keys found to be JSON booleans (``bools``: those known from earlier files, so later files
    parse on the first try). The texts are the file's distinct prompts: a pyarrow string array from pyarrow's
    reader, a list of str from the line reader; :mod:`.prompts` interns either across files."""
    found = set(bools)
    fast = _fast(data, keys, need, found)
    if fast is not None:
        return (*fast, frozenset(found))
    texts: list[str] = []
    return _slow(data, label, keys, need, texts), texts, frozenset(found)
