r"""A run record's per-step table and groups per step, re-read as the record grows with only its new chunks read.

A record written while its run goes on (:mod:`grpo_lab.sims.record_append`) lists each table as chunks named by
their content (``{name, sha256}``): a sealed chunk never changes, the open one is rewritten under a new name at each
flush. :class:`StepsReader` keeps what it read of each chunk, keyed by ``(name, sha256)``, so a re-read of a grown
record reads ``run.json`` and the chunks it has not seen, nothing else; each chunk is verified as
:func:`grpo_lab.sims.record.read_record` verifies it (its checksum, no pickles). Of the ``groups`` table only the
groups held per step are kept (``{step: count}``), which is what the fleet needs where the steps table does not log
``groups_per_step``; the evals table is not read. ``bytes_read`` / ``chunks_read`` count the last read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .errors import InputError
from .record import FORMAT, _concat_chunks, _read_npz

__all__ = ["StepsReader"]


class StepsReader:
    """See the module docstring. ``read()`` -> ``(meta, steps table, {step: groups held})``; InputError as
    :func:`~grpo_lab.sims.record.read_record`."""

    def __init__(self, path):
        self.path = Path(path)
        self._chunks: dict = {}
        self.bytes_read = 0
        self.chunks_read = 0
        self.signature = None  #: (mtime_ns, size) of run.json at the last read

    def changed(self) -> bool:
        """Whether run.json changed since the last read (or was never read)."""
        try:
            st = (self.path / "run.json").stat()
        except OSError:
            return True
        return (st.st_mtime_ns, st.st_size) != self.signature

    def read(self):
        self.bytes_read = self.chunks_read = 0
        meta_path = self.path / "run.json"
        try:
            st = meta_path.stat()
            text = meta_path.read_bytes()
        except OSError as exc:
            raise InputError(f"{str(self.path)!r} is not a readable run record ({exc.strerror})") from None
        self.bytes_read += len(text)
        try:
            meta = json.loads(text)
        except (UnicodeDecodeError, ValueError):
            raise InputError(f"{str(meta_path)!r} is not valid JSON") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"{str(meta_path)!r} is not a {FORMAT} record")
        files = meta.pop("files", None) or {}
        steps = self._table(files.get("steps"), "steps", keep=None)
        held = self._table(files.get("groups"), "groups", keep="step")
        counts: dict[int, int] = {}
        for part in held:
            for s, c in part.items():
                counts[s] = counts.get(s, 0) + c
        live = {(e["name"], e["sha256"]) for t in ("steps", "groups") for e in _entries(files.get(t))}
        self._chunks = {k: v for k, v in self._chunks.items() if k[:2] in live}
        self.signature = (st.st_mtime_ns, st.st_size)
        table = _concat_chunks(steps, "steps") if steps else {}
        return meta, table, counts

    def _table(self, entry, table: str, keep):
        out = []
        for e in _entries(entry):
            if not (isinstance(e, dict) and "name" in e and "sha256" in e):
                raise InputError(f"run record: run.json lists no {table} file")
            key = (e["name"], e["sha256"], table)
            if key not in self._chunks:
                try:
                    self.bytes_read += (self.path / Path(e["name"]).name).stat().st_size
                except OSError:
                    raise InputError(f"run record: {e['name']} is missing") from None
                self.chunks_read += 1
                arrays = _read_npz(self.path, e)
                if keep == "step":
                    s, c = np.unique(np.asarray(arrays.get("step", []), np.int64), return_counts=True)
                    arrays = dict(zip(s.tolist(), c.tolist()))
                self._chunks[key] = arrays
            out.append(self._chunks[key])
        return out


def _entries(entry) -> list:
    if entry is None:
        return []
    return entry if isinstance(entry, list) else [entry]
