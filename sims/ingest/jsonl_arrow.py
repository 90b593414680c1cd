r"""The plain JSONL group format read column-wise by pyarrow's JSON reader (:mod:`.jsonl` describes the format).

:func:`read_groups` parses one file with an explicit schema (``step`` int64, ``prompt_id`` text or
integer, ``rewards`` / ``advantages`` lists of numbers or booleans, ``lengths`` a list of integers,
``kept`` boolean, ``prompt`` text; other keys ignored) and checks, on the columns, everything the
line reader checks on each line. It returns None, and the caller reads the files line by line
(:func:`.jsonl.parse_groups`, whose errors name the line), whenever the file holds anything it
does not take as it is: a malformed or non-object line, a missing or mistyped field, an empty
``rewards``, ``advantages`` / ``lengths`` of another length, prompt ids of both kinds in one file,
a scalar line (``{"step": N, "data": {...}}``). So both readers give the same record (tested).
Under an upload's reading budget (:mod:`.budget`, which looks at the clock every
:data:`.budget.CHECK_EVERY_LINES` lines while a file is parsed) the line reader reads every file.

:func:`build_groups` pads the files' reward lists into the record's ``(groups, G)`` arrays with
numpy (no per-group Python list) and numbers prompts in order of first appearance, keyed as the
line reader keys them (a text id and an integer id never name the same prompt).
"""

from __future__ import annotations

import math

import numpy as np

from .budget import _ACTIVE
from .common import check_group, intern_codes, prompt_label

__all__ = ["read_groups", "build_groups"]

#: (column, its retry type after an error naming it): a JSON boolean list or an integer id in the file
_RETRY = {"/prompt_id": ("prompt_id", "int"), "/rewards/[]": ("rewards", "bool"), "/advantages/[]": ("advantages", "bool")}


def _schema(pa, kinds: dict):
    item = {"float": pa.float64(), "bool": pa.bool_()}
    return pa.schema([("step", pa.int64()), ("prompt_id", pa.int64() if kinds["prompt_id"] == "int" else pa.string()),
                      ("rewards", pa.list_(item[kinds["rewards"]])), ("advantages", pa.list_(item[kinds["advantages"]])),
                      ("lengths", pa.list_(pa.int64())), ("kept", pa.bool_()), ("prompt", pa.string())])


def _parse(data: bytes):
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        return None, None
    kinds = {"prompt_id": "str", "rewards": "float", "advantages": "float"}
    for _ in range(len(_RETRY) + 1):
        try:
            return pa, pj.read_json(pa.py_buffer(data), read_options=pj.ReadOptions(block_size=max(1 << 20, len(data) + 1),
                                                                                    use_threads=False),
                                    parse_options=pj.ParseOptions(explicit_schema=_schema(pa, kinds),
                                                                  unexpected_field_behavior="ignore"))
        except pa.ArrowInvalid as exc:
            retry = next((v for k, v in _RETRY.items() if f"Column({k})" in str(exc)), None)
            if retry is None or kinds[retry[0]] == retry[1]:
                return pa, None
            kinds[retry[0]] = retry[1]
    return pa, None


def _lists(pa, col, dtype):
    """``(values, widths, null items)`` of a list column: the items in row order as ``dtype`` (null items NaN),
    each row's list length (-1 where the field is absent), and how many items were null."""
    col = col.combine_chunks()
    values = col.flatten()
    if values.type == pa.bool_():
        values = values.cast(pa.float64())
    widths = np.where(col.is_null().to_numpy(zero_copy_only=False), -1, np.diff(col.offsets.to_numpy()))
    vals = values.to_numpy(zero_copy_only=False)  # float with NaN where an item is null
    return (vals.astype(dtype) if dtype is float or not values.null_count else vals), widths, values.null_count


def read_groups(data: bytes, label: str) -> dict | None:
    """One file's groups as columns, or None: read it line by line instead (see the module docstring)."""
    if _ACTIVE.get() is not None:
        return None  # an upload's budget checks the clock every few thousand lines: the line reader does
    try:
        data.decode("utf-8")  # as the line reader demands (it names the byte)
    except UnicodeDecodeError:
        return None
    pa, tab = _parse(data)
    if tab is None:
        return None
    n = tab.num_rows
    if n == 0 or any(tab.column(c).null_count for c in ("step", "prompt_id", "rewards")):
        return None  # no rows, or a row that is not a group (a scalar line, a missing field): the line reader
    step = tab.column("step").to_numpy()
    if step.min() < 0:
        return None
    rewards, widths, _ = _lists(pa, tab.column("rewards"), float)
    if widths.min() < 1:
        return None
    check_group(int(widths.max()), f"{label} line {int(np.argmax(widths)) + 1}")
    out = {"step": step.astype(np.int64), "widths": widths, "rewards": rewards}
    for name, fill in (("advantages", float), ("lengths", None)):  # None: integers, no null item
        col = tab.column(name)
        if col.null_count == n:
            out[name] = None
            continue
        vals, w, nulls = _lists(pa, col, float if fill is float else np.int64)
        if np.any((w != -1) & (w != widths)) or (fill is None and nulls):
            return None  # another length than rewards, or a null length: the line reader says which line
        out[name] = (vals, w)
    kept = tab.column("kept")
    out["kept"] = None if kept.null_count == n else np.asarray(kept.fill_null(True).to_numpy(zero_copy_only=False), bool)
    pid = tab.column("prompt_id").combine_chunks().dictionary_encode()
    out["pid_codes"] = pid.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    out["pid_values"] = pid.dictionary.to_pylist()
    out["pid_kind"] = "i" if pa.types.is_integer(pid.dictionary.type) else "s"
    _, first = np.unique(out["pid_codes"], return_index=True)  # each distinct id's first row: its label
    texts = tab.column("prompt").take(pa.array(first)).to_pylist()
    out["pid_labels"] = [t if isinstance(t, str) else str(v) for t, v in zip(texts, out["pid_values"])]
    return out


def _pad(parts: list[dict], key: str, n: int, G: int, fill, dtype) -> np.ndarray | None:
    if all(p[key] is None for p in parts):
        return None
    out = np.full((n, G), fill, dtype=dtype)
    row0 = 0
    for p in parts:
        if p[key] is not None:
            vals, w = p[key] if isinstance(p[key], tuple) else (p[key], p["widths"])
            has = np.maximum(w, 0)
            rows = np.repeat(np.arange(row0, row0 + len(w)), has)
            starts = np.concatenate([[0], np.cumsum(has)[:-1]])
            cols = np.arange(len(vals)) - np.repeat(starts, has)
            out[rows, cols] = vals
        row0 += len(p["widths"])
    return out


def build_groups(parts: list[dict]) -> tuple[dict[str, np.ndarray], list[str], bool, list[str]]:
    """``(groups, prompt labels, every group as wide as the widest, fields absent from every file)`` from the
    files' :func:`read_groups` results, in file order."""
    n = sum(len(p["widths"]) for p in parts)
    G = max(int(p["widths"].max()) for p in parts)
    index: dict = {}
    labels: list[str] = []
    prompt_id = np.empty(n, np.int64)
    row0 = 0
    for p in parts:
        keys = [(p["pid_kind"], v) for v in p["pid_values"]]
        local = intern_codes(keys, index, labels, [prompt_label(t) for t in p["pid_labels"]])
        prompt_id[row0:row0 + len(p["widths"])] = local[p["pid_codes"]]
        row0 += len(p["widths"])
    rewards = _pad(parts, "rewards", n, G, math.nan, float)
    advantages = _pad(parts, "advantages", n, G, math.nan, float)
    lengths = _pad(parts, "lengths", n, G, -1, np.int64)
    kept = np.concatenate([p["kept"] if p["kept"] is not None else np.ones(len(p["widths"]), bool) for p in parts])
    missing = [name for name, arr in (("advantages", advantages), ("lengths", lengths)) if arr is None]
    groups = {"step": np.concatenate([p["step"] for p in parts]), "prompt_id": prompt_id, "rewards": rewards,
              "advantages": advantages if advantages is not None else np.full((n, G), np.nan),
              "lengths": lengths if lengths is not None else np.full((n, G), -1, np.int64), "kept": kept}
    fixed = all(int(p["widths"].min()) == G for p in parts)
    return groups, labels, fixed, missing
