r"""Weights & Biases: offline run folders (``wandb/offline-run-*/run-*.wandb``) and history exports.

Offline runs
    A ``.wandb`` file is W&B's transaction log: the leveldb log format as ``wandb/sdk/internal/datastore.py``
    (wandb/wandb @ b6e2950588, 2026-08-21) specifies it: a 7-byte header (``":W&B"``, magic ``0xBEE1``,
    version 0), then 32 KiB blocks of records ``uint32 checksum, uint16 length, uint8 type, data``, the
    checksum being ``zlib.crc32(data, crc32(chr(type)))``, a payload split over FIRST/MIDDLE/LAST records
    where it crosses a block. Each payload is a ``wandb.proto.wandb_internal_pb2.Record`` parsed by
    wandb's own protobuf classes: ``history`` records give the scalars (``item.key`` or the joined
    ``nested_key``, ``value_json``; the step is the ``_step`` item, else ``history.step.num``), ``run`` and
    ``config`` records give the config (``value_json`` per key; W&B's ``{"value": ...}`` wrappers unwrapped).
    Where the run defined a step metric (``run.define_metric("*", step_metric="train/global_step")``, as the HF
    Trainer's ``WandbCallback`` does, so TRL's runs), each value's step is that metric's value in its row, the
    axis W&B plots it on, not W&B's own row counter ``_step``.

    Deviation (named): wandb 0.31 no longer ships that Python reader (``wandb/sdk/internal/datastore.py``
    is gone from the wheel; the Go ``wandb-core`` reads the log), so the 40-line scan is written here from
    that file, with its checks kept and its ``assert``\ s turned into InputErrors. A bad checksum, bad
    padding or a payload that is not a Record is an InputError naming the byte offset; a cut last record is
    one too, unless ``partial_ok`` (a run still being written).

History exports
    ``run.history()`` saved as CSV or JSON (a list of row objects), or the UI's CSV export: the step column
    is the first of :data:`STEP_COLUMNS` present (``train/global_step``, an HF run's axis, then ``_step``,
    ``step``, ``Step``); the UI's ``"<run> - <metric>"`` headers lose their run prefix and its
    ``__MIN``/``__MAX`` columns are skipped. An empty cell is no value at that step. An export has no config (K
    from the flag). With ``partial_ok`` (a file still being written) a CSV's records after its last complete one
    (:func:`complete_csv`) are left for the next read; a CSV export grown by appended rows is followed by offset
    (:mod:`.follow`, :class:`CsvRows` shared), a JSON export (one list, rewritten whole) re-read when it changes.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import struct
import zlib
from pathlib import Path

from ...errors import InputError
from .common import RunScalars, add_row, charge_files, flatten, series_from_rows

__all__ = ["find_runs", "read_run", "History", "is_log", "CsvRows", "complete_csv", "csv_records",
           "export_scalars"]

HEADER = struct.pack("<4sHB", b":W&B", 0xBEE1, 0)
HEADER_LEN = 7
BLOCK = 32768
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_SEED = {t: zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in (FULL, FIRST, MIDDLE, LAST)}
_EXPORTS = (".csv", ".json")


def find_runs(path: Path) -> dict[str, Path]:
    """``{run: file}``: every ``.wandb`` log (named by its run folder), else every history export."""
    if path.is_file():
        return {path.parent.name if path.suffix == ".wandb" else path.stem: path}
    seen, logs, exports = set(), {}, {}
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path)
        if len(rel.parts) > 5 or not f.is_file() or any(p.is_symlink() for p in [f, *f.parents][:len(rel.parts)]):
            continue
        real = f.resolve()
        if real in seen:
            continue
        seen.add(real)
        if f.suffix == ".wandb":
            logs[f.parent.name if f.parent != path else f.stem] = f
        elif f.suffix in _EXPORTS and "files" not in rel.parts and not f.name.startswith("wandb-"):
            exports[rel.with_suffix("").as_posix()] = f
    return logs or exports


def _payloads(data: bytes, label: str, partial_ok: bool, base: int = 0):
    """Yield ``(offset, payload, end)`` for each record payload of a ``.wandb`` file (datastore.py's scan_data):
    ``data`` is the file from byte ``base`` (0: its start, header checked; else a record boundary an earlier scan
    ended at, :mod:`.follow`), ``end`` the file offset just past the payload's last record."""
    if base == 0 and (len(data) < HEADER_LEN or data[:HEADER_LEN] != HEADER):
        raise InputError(f"{label}: not a W&B transaction log (no ':W&B' header of version 0)")
    pos, n = (HEADER_LEN, len(data)) if base == 0 else (0, len(data))
    parts: list[bytes] = []
    start = pos
    while pos < n:
        left = BLOCK - (base + pos) % BLOCK
        if left < HEADER_LEN:
            if data[pos:pos + left].strip(b"\x00"):
                raise InputError(f"{label}: invalid block padding at byte {base + pos}")
            pos += left
            continue
        if pos + HEADER_LEN > n:
            break
        checksum, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind not in _SEED:
            raise InputError(f"{label}: corrupt record at byte {base + pos} (type {kind})")
        body = data[pos + HEADER_LEN:pos + HEADER_LEN + length]
        if len(body) < length:
            break
        if zlib.crc32(body, _SEED[kind]) & 0xFFFFFFFF != checksum:
            raise InputError(f"{label}: corrupt record at byte {base + pos} (checksum mismatch)")
        if not parts:
            start = pos
        pos += HEADER_LEN + length
        if kind == FULL:
            if parts:
                raise InputError(f"{label}: corrupt record at byte {base + start} (an unfinished FIRST record)")
            yield base + start, body, base + pos
        elif kind == FIRST:
            if parts:
                raise InputError(f"{label}: corrupt record at byte {base + start} (two FIRST records)")
            parts = [body]
        else:
            if not parts:
                raise InputError(f"{label}: corrupt record at byte {base + start} (a MIDDLE/LAST record with no FIRST)")
            parts.append(body)
            if kind == LAST:
                yield base + start, b"".join(parts), base + pos
                parts = []
    if (pos < n or parts) and not partial_ok:
        raise InputError(f"{label}: truncated at byte {base + pos} of {base + n} (a cut record: the file is incomplete "
                         "or still being written)")


def _key(item) -> str:
    return "/".join(item.nested_key) if len(item.nested_key) else item.key


class History:
    """What a ``.wandb`` log's records say, fed record by record (a whole read, or the appended records of a log
    followed, :mod:`.follow`): ``rows`` of scalars, ``config``, the run's display name and its step metrics."""

    def __init__(self, label: str):
        self.label = label
        self.rows: dict = {}
        self.config: dict = {}
        self.display = None
        self.step_of: dict[str, str] = {}  # define_metric(name or glob, step_metric=...): the x axis W&B plots it on
        self.skipped = 0

    def feed(self, data: bytes, partial_ok: bool, base: int = 0) -> tuple[int, int]:
        """Read the records of ``data`` (the file from byte ``base``); ``(records read, file offset after the last
        whole payload)`` (``base`` when none)."""
        from google.protobuf.message import DecodeError
        from wandb.proto import wandb_internal_pb2

        parse = wandb_internal_pb2.Record.FromString
        n, end = 0, base
        for offset, payload, end in _payloads(data, self.label, partial_ok, base):
            n += 1
            try:
                rec = parse(payload)
            except DecodeError:
                raise InputError(f"{self.label}: record at byte {offset} is not a W&B Record") from None
            self._record(rec)
        return n, (end if n else (base if base else 0))

    def _record(self, rec) -> None:
        kind = rec.WhichOneof("record_type")
        if kind == "metric" and rec.metric.step_metric:
            self.step_of[rec.metric.name or rec.metric.glob_name] = rec.metric.step_metric
        elif kind == "history":
            values, step = {}, None
            for item in rec.history.item:
                try:
                    v = json.loads(item.value_json)
                except ValueError:
                    continue
                k = _key(item)
                if k == "_step":
                    step = v
                elif not k.startswith("_"):
                    values[k] = v
            if step is None and rec.history.HasField("step"):
                step = rec.history.step.num
            by_axis: dict = {}
            for k, v in values.items():
                axis = _axis(k, self.step_of)
                if axis is None:
                    by_axis.setdefault(step, {})[k] = v
                elif axis != k:
                    s = values.get(axis)
                    if isinstance(s, float) and s.is_integer():
                        s = int(s)
                    if isinstance(s, int) and not isinstance(s, bool):
                        by_axis.setdefault(s, {})[k] = v
                    else:
                        self.skipped += 1
            for s, vals in by_axis.items():
                if isinstance(s, int) and not isinstance(s, bool):
                    add_row(self.rows, s, vals)
        elif kind in ("run", "config"):
            items = rec.run.config.update if kind == "run" else rec.config.update
            if kind == "run" and rec.run.display_name:
                self.display = rec.run.display_name
            for item in items:
                try:
                    v = json.loads(item.value_json)
                except ValueError:
                    continue
                self.config.update(flatten({_key(item): v}))

    def scalars(self, name: str) -> RunScalars:
        notes = [f"W&B run name {self.display!r}"] if self.display else []
        if self.step_of:
            notes.append("steps from the run's define_metric step metrics ("
                         + ", ".join(sorted(set(self.step_of.values()))) + "), not W&B's _step")
        if self.skipped:
            notes.append(f"{self.skipped} values logged without their step metric were left out")
        return RunScalars(name=name, series=series_from_rows(self.rows), config=dict(self.config), fmt="wandb",
                          notes=notes)


def _read_log(name: str, path: Path, partial_ok: bool) -> RunScalars:
    history = History(str(path))
    history.feed(path.read_bytes(), partial_ok)
    return history.scalars(name)


def _axis(name: str, step_of: dict[str, str]) -> str | None:
    """The step metric ``name`` is plotted against (an exact definition first, then a glob), or None (``_step``)."""
    if name in step_of:
        return step_of[name]
    for pattern, axis in step_of.items():
        if fnmatch.fnmatchcase(name, pattern):
            return axis
    return None


#: step columns of a history export, in order of preference: the HF Trainer's step metric (its WandbCallback plots
#: every metric on it), then W&B's row counter and the UI export's column
STEP_COLUMNS = ("train/global_step", "_step", "step", "Step")


def _step_column(header: list[str]) -> int:
    for want in STEP_COLUMNS:
        if want in header:
            return header.index(want)
    raise InputError("no step column (_step, step or Step) in this history export")


def _metric_names(header: list[str]) -> list[str | None]:
    """The UI's ``"<run> - <metric>"`` headers without their run prefix; ``__MIN``/``__MAX`` and W&B's own
    ``_``-columns dropped (None)."""
    out = []
    for h in header:
        if h.endswith("__MIN") or h.endswith("__MAX") or h.startswith("_") or h in STEP_COLUMNS:
            out.append(None)
        else:
            out.append(h.split(" - ", 1)[1] if " - " in h else h)
    return out


def complete_csv(data: bytes) -> int:
    """The bytes of ``data`` (a CSV from a record boundary) that hold complete records: up to the last newline
    outside a quoted cell (quotes pair up in CSV, ``""`` included, so a newline ends a record where the quotes
    before it are even). The rest is a record still being written."""
    end = data.rfind(b"\n") + 1
    while end and data.count(b'"', 0, end) % 2:
        end = data.rfind(b"\n", 0, end - 1) + 1
    return end


class CsvRows:
    """A CSV history export read record by record (the whole file, or the records appended to a followed one,
    :mod:`.follow`): the header's step column and metric names, then ``add`` for each batch of records."""

    def __init__(self, label: str, header: list[str]):
        self.label, self.header = label, header
        try:
            self.si = _step_column(header)
        except InputError as exc:
            raise InputError(f"{label}: {exc}") from None
        self.names = _metric_names(header)
        self.line = 2  #: the number of the next record (the header is line 1)

    def add(self, body: list[list[str]], rows: dict) -> int:
        """Add the records ``body`` to ``rows`` ({name: (steps, values)}); returns how many were read."""
        label, header, si = self.label, self.header, self.si
        for row in body:
            n, self.line = self.line, self.line + 1
            if len(row) != len(header):
                raise InputError(f"{label} line {n}: {len(row)} cells, the header has {len(header)}")
            if row[si] == "":
                continue  # a row logged off the step metric (W&B leaves its cell empty)
            try:
                step = int(float(row[si]))
            except ValueError:
                raise InputError(f"{label} line {n}: step {row[si]!r} is not a number") from None
            for name_, cell in zip(self.names, row):
                if name_ is None or cell == "":
                    continue
                try:
                    x = float(cell)
                except ValueError:
                    continue
                entry = rows.setdefault(name_, ([], []))
                entry[0].append(step)
                entry[1].append(x)
        return len(body)


def csv_records(data: bytes, label: str, first: bool) -> list[list[str]]:
    """The CSV records of ``data`` (complete records; ``first``: the file's start, a UTF-8 BOM dropped)."""
    try:
        text = data.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{label}: not UTF-8 text") from None
    return list(csv.reader(io.StringIO(text)))


def export_scalars(name: str, series: dict) -> RunScalars:
    """A history export's scalars: its ``series`` ({name: (steps, values)}), no config."""
    return RunScalars(name=name, series=series, config={}, fmt="wandb",
                      notes=["a W&B history export: no config (K from --num-generations)"])


def _read_export(name: str, path: Path, partial_ok: bool) -> RunScalars:
    """A history export read whole. ``partial_ok``: the records after the last complete one (:func:`complete_csv`:
    a cut last line, the header included) are the writer's, left for the next read, as a follower leaves them."""
    label = str(path)
    data = path.read_bytes()
    rows: dict = {}
    if path.suffix == ".csv":
        table = csv_records(data[:complete_csv(data)] if partial_ok else data, label, True)
        if not table:
            if partial_ok:
                return export_scalars(name, {})
            raise InputError(f"{label}: an empty history export")
        CsvRows(label, table[0]).add(table[1:], rows)
    else:
        try:
            obj = json.loads(data.decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise InputError(f"{label}: not UTF-8 text") from None
        except (ValueError, RecursionError):
            raise InputError(f"{label}: not valid JSON") from None
        if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
            raise InputError(f"{label}: expected a list of history rows (objects with _step)")
        for n, row in enumerate(obj):
            step = next((row[c] for c in STEP_COLUMNS if row.get(c) is not None), None)
            if isinstance(step, float) and step.is_integer():
                step = int(step)
            if not isinstance(step, int) or isinstance(step, bool):
                raise InputError(f"{label} row {n}: no integer _step")
            add_row(rows, step, {k: v for k, v in row.items() if not k.startswith("_") and k not in STEP_COLUMNS})
    return export_scalars(name, series_from_rows(rows))


def is_log(path: Path) -> bool:
    """A ``.wandb`` transaction log (else a history export)."""
    return Path(path).suffix == ".wandb"


def read_run(name: str, path: Path, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    charge_files([path], max_bytes, str(path))
    if path.suffix == ".wandb":
        return _read_log(name, path, partial_ok)
    return _read_export(name, path, partial_ok)
