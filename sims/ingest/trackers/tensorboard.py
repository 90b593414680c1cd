r"""TensorBoard event files: a log dir with one run or many (``grpo-lab ingest DIR --format tensorboard``).

A **run** is a folder holding ``events.out.tfevents.*`` files (TensorBoard's own rule); its name is the
folder's path under the log dir (``.`` when the log dir itself is the run). A run's files are read in name
order (their names start with the creation time) and merged; a step logged twice keeps the later value.

Reading
    Each file is TFRecord framing around ``tensorboard.compat.proto.event_pb2.Event`` protos (TensorBoard's
    own message, parsed by protobuf): ``uint64 length, uint32 masked_crc32c(length), data[length],
    uint32 masked_crc32c(data)``. Scalars are ``summary.value`` entries with a ``simple_value`` (PyTorch's
    and TensorBoard's ``SummaryWriter``) or a one-element float ``tensor`` (tf.summary v2), read with
    ``tensorboard.util.tensor_util.make_ndarray``. The run's config comes from two places a trainer puts it:
    a text summary whose content is a JSON object (HF Trainer's ``args``, so TRL's ``num_generations``)
    and the hparams plugin's ``session_start_info`` (``SummaryWriter.add_hparams``, which PyTorch writes
    into a sub-folder of its own; such a folder of hparams alone is merged into its parent run).

Deviation from ``tensorboard.backend.event_processing`` (named): the framing is walked here, not by
``event_file_loader.RawEventFileLoader``, for two reasons measured on this machine. Without TensorFlow,
that loader checks CRC32C one byte at a time in Python (5.6 s for a 21 MB file of 400,000 scalars, before
parsing), and it *swallows* a failed checksum or a cut record (``DataLossError`` is logged at debug level
and the file simply ends), so a corrupt file would read as a shorter run. Here the checksums are the same
masked CRC32C (Castagnoli, table-driven, numpy across all records at once) and a bad one is an InputError
naming the file and byte offset. A cut last record is an error too, unless ``partial_ok`` (a file still
being written, for ``watch``), where the cut tail is left for the next read.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from ...errors import InputError
from .common import RunScalars, charge_files, flatten, series_from_rows

__all__ = ["is_event_file", "find_runs", "read_run", "masked_crc32c", "parse_events"]

EVENT_MARK = "tfevents"
_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected
_MASK_DELTA = 0xA282EAD8
_VECTOR_MAX = 1 << 16  # records up to this long are checked together; longer ones one by one, when used


def _table() -> np.ndarray:
    t = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        t = np.where(t & 1, (t >> 1) ^ np.uint32(_POLY), t >> 1).astype(np.uint32)
    return t


_TABLE = _table()


def _crc_many(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CRC-32C of ``buf[starts[i]:starts[i]+lengths[i]]`` for every i, byte position by byte position."""
    n = len(starts)
    crc = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
    if n == 0:
        return crc
    order = np.argsort(-lengths, kind="stable")  # longest first: the records still going are a prefix
    s, L = starts[order], lengths[order]
    out = np.empty(n, np.uint32)
    c = crc
    active = n
    for i in range(int(L[0]) if n else 0):
        while active and L[active - 1] <= i:
            active -= 1
        b = buf[s[:active] + i]
        c[:active] = _TABLE[(c[:active] ^ b) & 0xFF] ^ (c[:active] >> 8)
    out[order] = c ^ np.uint32(0xFFFFFFFF)
    return out


def _mask(crc: np.ndarray) -> np.ndarray:
    crc = crc.astype(np.uint64)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA).astype(np.uint64) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data`` (equal to tensorboard's ``pywrap_tensorflow.masked_crc32c``)."""
    buf = np.frombuffer(data, np.uint8)
    return int(_mask(_crc_many(buf, np.zeros(1, np.int64), np.array([len(data)], np.int64)))[0])


def is_event_file(path: Path) -> bool:
    return path.is_file() and EVENT_MARK in path.name


def _event_folders(root: Path, max_depth: int = 6) -> dict[str, list[Path]]:
    """``{run name: [event files]}`` under ``root`` (a folder, or one event file)."""
    if root.is_file():
        return {root.parent.name or ".": [root]} if is_event_file(root) else {}
    runs: dict[str, list[Path]] = {}
    for f in sorted(root.rglob(f"*{EVENT_MARK}*")):
        rel = f.relative_to(root)
        if len(rel.parts) > max_depth or not is_event_file(f) or f.is_symlink():
            continue
        runs.setdefault(rel.parent.as_posix(), []).append(f)
    return runs


def _length_corrupt(buf: np.ndarray, head: int) -> bool:
    """Whether the record at ``head`` has a length field whose masked CRC-32C differs from the one stored after it
    (a corrupt length, not a cut record)."""
    crc = _mask(_crc_many(buf, np.array([head], np.int64), np.array([8], np.int64)))[0]
    stored = int(buf[head + 8:head + 12].astype(np.uint64) @ (256 ** np.arange(4, dtype=np.uint64)))
    return int(crc) != stored


def _frame(data: bytes, label: str, partial_ok: bool):
    """(starts, lengths) of every complete record's data; checks both checksums of each."""
    n = len(data)
    starts, lengths = [], []
    pos = 0
    unpack = struct.unpack_from
    while pos < n:
        if pos + 12 > n:
            break
        (length,) = unpack("<Q", data, pos)
        if pos + 16 + length > n:
            break
        starts.append(pos + 12)
        lengths.append(length)
        pos += 16 + length
    if not starts and n and not partial_ok:
        raise InputError(f"{label}: not a TensorBoard event file (no event record at its start)")
    buf = np.frombuffer(data, np.uint8)
    if pos < n and not partial_ok:
        if pos + 12 <= n and _length_corrupt(buf, pos):
            raise InputError(f"{label}: corrupt event record at byte {pos} (its length field fails its checksum)")
        raise InputError(f"{label}: truncated at byte {pos} of {n} (a cut event record; the file is "
                         "incomplete or still being written)")
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(lengths, np.int64)
    if len(starts) == 0:
        return starts, lengths
    heads = starts - 12
    head_crc = _mask(_crc_many(buf, heads, np.full(len(heads), 8, np.int64)))
    stored_head = buf[(heads + 8)[:, None] + np.arange(4)].astype(np.uint64) @ (256 ** np.arange(4, dtype=np.uint64))
    bad = np.flatnonzero(head_crc != stored_head)
    if len(bad):
        raise InputError(f"{label}: corrupt event record at byte {int(heads[bad[0]])} (length checksum mismatch)")
    short = lengths <= _VECTOR_MAX
    data_crc = _mask(_crc_many(buf, starts[short], lengths[short]))
    tails = starts[short] + lengths[short]
    stored = buf[tails[:, None] + np.arange(4)].astype(np.uint64) @ (256 ** np.arange(4, dtype=np.uint64))
    bad = np.flatnonzero(data_crc != stored)
    if len(bad):
        raise InputError(f"{label}: corrupt event record at byte {int(heads[short][bad[0]])} "
                         "(data checksum mismatch)")
    return starts, lengths


def _check_long(data: bytes, start: int, length: int, label: str) -> None:
    (stored,) = struct.unpack_from("<I", data, start + length)
    if masked_crc32c(data[start:start + length]) != stored:
        raise InputError(f"{label}: corrupt event record at byte {start - 12} (data checksum mismatch)")


def _read_file(path: Path, rows: dict, config: dict, partial_ok: bool) -> int:
    """Add one event file's scalars to ``rows`` and its config to ``config``; returns the records read."""
    label = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    return parse_events(data, label, rows, config, partial_ok, header=True)[0]


def parse_events(data: bytes, label: str, rows: dict, config: dict, partial_ok: bool, header: bool,
                 base: int = 0) -> tuple[int, int]:
    """Add the scalars of the event records in ``data`` (a file's bytes from byte ``base``: its start when
    ``header``, whose first record must be the ``file_version``) to ``rows`` and ``config``.

    Returns ``(records read, bytes consumed)``: the bytes up to the end of the last complete record (a cut tail,
    tolerated when ``partial_ok``, is left for the next read from there: :mod:`.follow`)."""
    from google.protobuf.message import DecodeError
    from tensorboard.compat.proto import event_pb2

    starts, lengths = _frame(data, label, partial_ok)
    parse = event_pb2.Event.FromString
    first = header
    for start, length in zip(starts.tolist(), lengths.tolist()):
        raw = data[start:start + length]
        try:
            ev = parse(raw)
        except DecodeError:
            raise InputError(f"{label}: event record at byte {base + start - 12} is not a TensorBoard event") from None
        if first:
            first = False
            if ev.WhichOneof("what") != "file_version":
                raise InputError(f"{label}: not a TensorBoard event file (it does not start with a file_version)")
            continue
        if ev.WhichOneof("what") != "summary":
            continue
        step = ev.step
        for v in ev.summary.value:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                entry = rows.get(v.tag)
                if entry is None:
                    entry = rows[v.tag] = ([], [])
                entry[0].append(step)
                entry[1].append(v.simple_value)
            elif kind == "tensor":
                if length > _VECTOR_MAX:
                    _check_long(data, start, length, label)
                _tensor_value(v, step, rows, config)
    consumed = int(starts[-1] + lengths[-1] + 4) if len(starts) else 0
    return len(starts), consumed


def _tensor_value(v, step: int, rows: dict, config: dict) -> None:
    from tensorboard.util import tensor_util

    plugin = v.metadata.plugin_data.plugin_name
    if plugin == "hparams":
        _hparams(v.metadata.plugin_data.content, config)
        return
    try:
        arr = tensor_util.make_ndarray(v.tensor)
    except Exception:  # a tensor of a dtype TensorBoard itself cannot decode: not a scalar we read
        return
    if plugin == "text" or arr.dtype.kind in "OSU":
        if arr.size == 1:
            text = arr.reshape(-1)[0]
            text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
            try:
                obj = json.loads(text)
            except ValueError:
                return
            if isinstance(obj, dict):
                for k, val in flatten(obj).items():
                    config.setdefault(k, val)
        return
    if arr.size == 1 and arr.dtype.kind in "fiub":
        entry = rows.setdefault(v.tag, ([], []))
        entry[0].append(step)
        entry[1].append(float(arr.reshape(-1)[0]))


def _hparams(content: bytes, config: dict) -> None:
    from tensorboard.plugins.hparams import plugin_data_pb2

    try:
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
    except Exception:  # a malformed hparams payload carries no config we can use
        return
    if data.WhichOneof("data") != "session_start_info":
        return
    for key, val in data.session_start_info.hparams.items():
        kind = val.WhichOneof("kind")
        if kind == "number_value":
            config.setdefault(key, val.number_value)
        elif kind == "string_value":
            config.setdefault(key, val.string_value)
        elif kind == "bool_value":
            config.setdefault(key, val.bool_value)


def read_run(name: str, handle: dict, *, max_bytes: int, partial_ok: bool = False) -> RunScalars:
    """Read one run of :func:`find_runs` (its event files, and hparams-only sub-folders for the config)."""
    files, extra_files = handle["files"], handle["extra"]
    charge_files([*files, *extra_files], max_bytes, name)
    rows: dict = {}
    config: dict = {}
    for f in files:
        _read_file(f, rows, config, partial_ok)
    for f in extra_files:
        _read_file(f, {}, config, partial_ok)
    return RunScalars(name=name, series=series_from_rows(rows), config=config, fmt="tensorboard")


def find_runs(path: Path) -> dict[str, dict]:
    """``{run: {"files": [...], "extra": [...]}}``: folders of scalars are runs; a folder below a run that
    holds only hparams (PyTorch ``add_hparams``) is that run's extra config."""
    found = _event_folders(path)
    out: dict[str, dict] = {name: {"files": files, "extra": []} for name, files in found.items()}
    for name in list(out):
        parent = str(Path(name).parent)
        if parent in out and parent != name and _hparams_only(out[name]["files"]):
            out[parent]["extra"].extend(out.pop(name)["files"])
    if "." in out:  # the log dir itself is a run: name it after the folder
        out[path.name or "run"] = out.pop(".")
    return out


def _hparams_only(files: list[Path]) -> bool:
    """A small file whose summaries are all hparams plugin data (read to tell; capped at 1 MB)."""
    from tensorboard.compat.proto import event_pb2

    for f in files:
        try:
            if f.stat().st_size > 1 << 20:
                return False
            data = f.read_bytes()
        except OSError:
            return False
        try:
            starts, lengths = _frame(data, str(f), True)
        except InputError:
            return False
        for s, L in zip(starts.tolist(), lengths.tolist()):
            try:
                ev = event_pb2.Event.FromString(data[s:s + L])
            except Exception:
                return False
            for v in ev.summary.value:
                if v.metadata.plugin_data.plugin_name != "hparams":
                    return False
    return True
