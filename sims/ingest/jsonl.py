r"""The plain JSONL group format: one line per group, writable from any trainer.

Each non-blank line is a JSON object::

    {"step": 3, "prompt_id": "p17", "rewards": [1, 0, 0, 1]}

required
    ``step`` (integer >= 0), ``prompt_id`` (string or integer; the same id is
    the same prompt across steps), ``rewards`` (list of >= 1 numbers or
    booleans; ``null`` = an unscored completion)
optional
    ``advantages`` (numbers, same length as ``rewards``), ``lengths``
    (completion lengths in tokens, integers), ``kept`` (false if the group was
    dropped before the loss, e.g. by dynamic sampling), ``prompt`` (text shown
    as the prompt's label; defaults to the id)

Groups may have different sizes (the record pads with NaN and sets
``num_generations`` to null). Files of groups only are read column-wise by pyarrow
(:mod:`.jsonl_arrow`); anything else, and any file pyarrow cannot take as it is, line by line
here, with errors that name the line. Lines of the form ``{"step": N, "data": {...}}``
or ``{"step": N, "scalars": {...}}`` add per-step scalars (``scalar/<name>``).
Other keys are ignored.
"""

from __future__ import annotations

from ..errors import InputError
from ..record import RunRecord
from .common import (Bundle, GroupTable, build_record, check_group, format_hint, iter_json_lines, numeric_scalars, parse_float,
                     record_from_arrays)
from .jsonl_arrow import build_groups, read_groups

__all__ = ["ingest_jsonl", "parse_groups"]

_REQUIRED = ("step", "prompt_id", "rewards")


def _int_list(value, where: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InputError(f"{where}: expected a list of integers")
    return value


def parse_groups(data: bytes, label: str, table: GroupTable, scalars: dict[int, dict]) -> int:
    """Parse one plain-JSONL file into ``table`` / ``scalars``; returns the number of group lines."""
    count = 0
    for n, obj in iter_json_lines(data, label):
        step = obj.get("step")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise InputError(f"{label} line {n}: 'step' must be an integer >= 0, got {step!r}{format_hint(obj, 'jsonl')}")
        extra = obj.get("data", obj.get("scalars")) if "rewards" not in obj else None
        if isinstance(extra, dict):
            scalars.setdefault(step, {}).update(numeric_scalars(extra))
            continue
        lacking = [k for k in _REQUIRED if k not in obj]
        if lacking:
            raise InputError(f"{label} line {n}: missing {', '.join(repr(k) for k in lacking)}{format_hint(obj, 'jsonl')}")
        pid = obj["prompt_id"]
        if isinstance(pid, bool) or not isinstance(pid, (str, int)):
            raise InputError(f"{label} line {n}: 'prompt_id' must be a string or integer")
        rewards = obj["rewards"]
        if not isinstance(rewards, list) or not rewards:
            raise InputError(f"{label} line {n}: 'rewards' must be a non-empty list of numbers")
        check_group(len(rewards), f"{label} line {n}")
        where = f"{label} line {n}: 'rewards'"
        try:  # fast path: plain numbers
            r = [float(v) for v in rewards if v is not None and not isinstance(v, str)]
            if len(r) != len(rewards):
                raise TypeError
        except (TypeError, ValueError):
            r = [parse_float(v, where) for v in rewards]
        adv = obj.get("advantages")
        if adv is not None:
            if not isinstance(adv, list) or len(adv) != len(r):
                raise InputError(f"{label} line {n}: 'advantages' must be a list as long as 'rewards'")
            adv = [parse_float(v, f"{label} line {n}: 'advantages'") for v in adv]
        lengths = obj.get("lengths")
        if lengths is not None:
            lengths = _int_list(lengths, f"{label} line {n}: 'lengths'")
            if len(lengths) != len(r):
                raise InputError(f"{label} line {n}: 'lengths' must be as long as 'rewards'")
        kept = obj.get("kept")
        if kept is not None and not isinstance(kept, bool):
            raise InputError(f"{label} line {n}: 'kept' must be true or false")
        text = obj.get("prompt")
        key = ("s", pid) if isinstance(pid, str) else ("i", pid)
        table.add(step, table.prompt(key, text if isinstance(text, str) else str(pid)), r, adv, lengths,
                  None if kept is None else kept)
        count += 1
    return count


def ingest_jsonl(bundle: Bundle, *, tolerance: float, name: str | None = None) -> RunRecord:
    """Read every ``*.jsonl`` file of ``bundle`` (one given file, or a folder of them, in name order)."""
    files = [f for f in bundle.names() if bundle.single or f.endswith(".jsonl")]
    if not files:
        raise InputError(f"{bundle.origin}: no .jsonl files found (the plain format is one JSON object per line)")
    source = {"kind": "jsonl", "path": bundle.origin if not bundle.single else bundle.label(files[0]),
              "files": sorted(files)}
    parts = []
    for f in sorted(files):  # column-wise by pyarrow while every file is plain groups (.jsonl_arrow)
        part = read_groups(bundle.read(f), bundle.label(f))
        if part is None:
            break
        parts.append(part)
    else:
        groups, labels, fixed, missing = build_groups(parts)
        return record_from_arrays(groups, labels, source=source, tolerance=tolerance, scalars={}, missing=missing,
                                  name=name, fixed_width=fixed)
    table, scalars = GroupTable(), {}
    for f in sorted(files):  # line by line (bytes kept by the bundle: each file is read once)
        parse_groups(bundle.read(f), bundle.label(f), table, scalars)
    if not len(table) and not scalars:
        raise InputError(f"{bundle.label(files[0])}: no groups found")
    return build_record(table, source=source, tolerance=tolerance, scalars=scalars, missing=[], name=name)
