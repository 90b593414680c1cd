"""A run record in the compact form an upload's reader sends back and a tab keeps.

A read at the upload limit (990k JSONL rows of 8 rollouts) gives a record of 178 MB as ingested: rewards,
advantages and lengths as n x G float64 / int64 arrays, the last two filled with NaN / -1 when the source
has none (plain JSONL has neither). :func:`pack` turns a record into the same columns without the waste:

* a column holding one value everywhere (NaN advantages, -1 lengths) becomes ``("fill", value, shape,
  dtype)``, and :func:`unpack` gives it back as a read-only broadcast view of that one value (0 bytes);
* an integer column whose values fit in 32 bits is stored as int32 (still an integer column for
  :func:`grpo_lab.sims.record.write_record`'s checks); rewards stay float64, their values untouched.

That record at the limit is then 62 MB, in what crosses the pipe and in what the tab holds. Every value
of the record is unchanged (``unpack(pack(r))`` equals ``r`` column by column, NaN where NaN);
:func:`held_bytes` is what a record occupies, for the per-visitor quota.
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.record import RunRecord

__all__ = ["pack", "unpack", "held_bytes"]

_FILL = "fill"


def _pack_array(a):
    a = np.asarray(a)
    if a.ndim == 0 or a.size < 2:
        return a
    first = a.flat[0]
    if a.dtype.kind == "f" and np.isnan(first):
        same = bool(np.isnan(a).all())
    else:
        same = bool((a == first).all())
    if same:
        return (_FILL, first.item(), a.shape, a.dtype.str)
    if a.dtype.kind in "iu" and a.dtype.itemsize > 4:
        lo, hi = int(a.min()), int(a.max())
        if np.iinfo(np.int32).min <= lo and hi <= np.iinfo(np.int32).max:
            return a.astype(np.int32)
    return a


def _unpack_array(v):
    if isinstance(v, tuple) and len(v) == 4 and v[0] == _FILL:
        _, value, shape, dtype = v
        return np.broadcast_to(np.array(value, dtype=np.dtype(dtype)), tuple(shape))
    return v


def pack(rec: RunRecord) -> dict:
    """The record as plain data (a dict of meta and three tables of packed columns), small to pickle."""
    return {"meta": rec.meta, **{t: {k: _pack_array(v) for k, v in getattr(rec, t).items()}
                                 for t in ("groups", "steps", "evals")}}


def unpack(packed: dict) -> RunRecord:
    """The record :func:`pack` was given, its constant columns as read-only views of one value."""
    return RunRecord(meta=packed["meta"], **{t: {k: _unpack_array(v) for k, v in packed[t].items()}
                                             for t in ("groups", "steps", "evals")})


def held_bytes(rec: RunRecord) -> int:
    """Bytes the record's arrays occupy (a broadcast view of one value counts its one element)."""
    total = 0
    for table in (rec.groups, rec.steps, rec.evals):
        for a in table.values():
            a = np.asarray(a)
            total += a.itemsize if 0 in a.strides and a.size else a.nbytes
    return total
