r"""The run record: every group of a GRPO run, readable with numpy and json alone.

A record is a directory::

    run.json      metadata (format, version, config, versions, seed, device, wall time,
                  summary) and the file name + SHA-256 of each array file below
    groups-*.npz  one row per recorded group
                    step (int64, n)            optimizer step the group was sampled for
                    prompt_id (int64, n)       index into the run's prompt set
                    rewards (float64, n x G)   the group's rewards (NaN-padded if G varies)
                    advantages (float64, n x G) advantages used (NaN where unknown)
                    lengths (int64, n x G)     completion lengths in tokens (-1 where unknown)
                    kept (bool, n)             the group entered the loss (False: dropped by
                                               dynamic sampling)
                    correctness (float64, n x G)  optional, ingested runs: the correctness score per
                                               rollout where the classified reward is a shaped one
                                               (verl's acc / scorer score, a TRL correctness function);
                                               read by the doctor's audit (sims/doctor/audit.py)
    steps-*.npz   one row per optimizer step: ``step`` plus the per-step metrics
                  (``frac_reward_zero_std``, ``frac_all_pass``, ``frac_all_fail``,
                  ``reward_mean``, ``max_abs_advantage``, ``kl``, ``rollouts_generated``,
                  ``rollouts_kept``, ``wall_time_s``; NaN where a source lacks one; extra
                  scalar histories of ingested runs as ``scalar/<name>``; runs with dynamic
                  sampling add ``ds/groups_drawn``, ``ds/groups_kept``,
                  ``ds/effective_group_rate``, ``ds/rollout_amplification`` and
                  ``ds/dropped_all_pass`` / ``_all_fail`` / ``_surplus``, figures of the
                  groups drawn, kept apart from the trained-group figures of plain runs)
    evals-*.npz   periodic evaluations of every prompt: ``step`` (m), ``pass_rate`` (m x N),
                  ``samples`` (m) samples per prompt; a record without evaluations has no such
                  file (run.json lists its evals as an empty list of chunks)

A table may also be listed in run.json as a list of chunk files (same columns,
concatenated row-wise in order): :mod:`grpo_lab.sims.record_append` writes a
record that way while a run is still going.

Writing is atomic at the level of the record: array files get fresh,
content-addressed names, then ``run.json`` is replaced in one ``os.replace``,
then files it no longer names are removed. A reader therefore always sees a
consistent record, even after a kill mid-write. Reading never unpickles
(``np.load(..., allow_pickle=False)``) and checks every hash, shape and dtype;
any failure is an :class:`~sims.errors.InputError` naming what is wrong.

A group is degenerate (zero variance) when its reward spread max - min is at
most the record's ``reward_tolerance`` (0 for binary rewards). A degenerate
group is all-pass when its rewards lie above :data:`sims.advantages.THRESHOLD`
and all-fail otherwise.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .advantages import THRESHOLD
from .errors import InputError
from .jsonable import jsonable
from .outcomes import p_unanimous

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "STEP_METRICS",
    "RunRecord",
    "write_record",
    "read_record",
    "group_outcomes",
    "summarise",
    "atomic_write_bytes",
    "current_umask",
    "array_hashes",
]

FORMAT = "grpo-lab-run"
FORMAT_VERSION = 1
STEP_METRICS = (
    "frac_reward_zero_std", "frac_all_pass", "frac_all_fail", "reward_mean", "max_abs_advantage",
    "kl", "rollouts_generated", "rollouts_kept", "wall_time_s",
)
_GROUP_FIELDS = {"step": "i", "prompt_id": "i", "rewards": "f", "advantages": "f", "lengths": "i", "kept": "b"}


@dataclass
class RunRecord:
    """A run in memory: ``meta`` (what run.json holds besides the file table) and three array tables."""

    meta: dict
    groups: dict[str, np.ndarray]
    steps: dict[str, np.ndarray] = field(default_factory=dict)
    evals: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def reward_tolerance(self) -> float:
        return float(self.meta.get("reward_tolerance", 0.0))

    @property
    def n_prompts(self) -> int:
        return int(self.meta["n_prompts"])


def current_umask() -> int:
    """The process's file-mode creation mask: read from ``/proc/self/status`` where the kernel gives it (Linux
    4.7+), else by setting and restoring it (``os.umask`` has no read-only form)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and ``os.replace``.

    ``mode``: the file's permission bits; None gives what ``open(path, "wb")`` would, 0o666 less the
    user's umask (0o644 under the usual 022), not the temporary file's private 0o600, so a report, a list
    or a record the user asked for can be served or shared like any file they write. On any failure,
    KeyboardInterrupt included, the temporary file is removed and ``path`` is untouched.
    """
    path = Path(path)
    if mode is None:
        mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def _check_groups(groups: dict[str, np.ndarray]) -> None:
    missing = [k for k in _GROUP_FIELDS if k not in groups]
    if missing:
        raise InputError(f"run record: groups lack {', '.join(missing)}")
    n = len(groups["step"])
    for name, kind in _GROUP_FIELDS.items():
        arr = np.asarray(groups[name])
        if arr.shape[:1] != (n,):
            raise InputError(f"run record: groups[{name!r}] has {arr.shape[0] if arr.ndim else 0} rows, expected {n}")
        if kind == "b" and arr.dtype != bool or kind == "i" and arr.dtype.kind not in "iu" or kind == "f" and arr.dtype.kind != "f":
            raise InputError(f"run record: groups[{name!r}] has dtype {arr.dtype}")
    G = np.asarray(groups["rewards"]).shape
    if len(G) != 2 or np.asarray(groups["advantages"]).shape != G or np.asarray(groups["lengths"]).shape != G:
        raise InputError("run record: rewards, advantages and lengths must share one (groups, G) shape")


def write_record(path, record: RunRecord) -> Path:
    """Write ``record`` to directory ``path`` atomically (see the module docstring). Returns the path."""
    path = Path(path)
    _check_groups(record.groups)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create run directory {str(path)!r}: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise InputError(f"run directory {str(path)!r} is not writable")
    files = {}
    for table in ("groups", "steps", "evals"):
        if table == "evals" and not any(np.size(v) for v in record.evals.values()):
            files[table] = []  # no evaluation: no file (an empty list of chunks, as grpo_lab.sims.record_append writes)
            continue
        data = _npz_bytes(getattr(record, table))
        digest = hashlib.sha256(data).hexdigest()
        name = f"{table}-{digest[:16]}.npz"
        if not (path / name).exists():
            atomic_write_bytes(path / name, data)
        files[table] = {"name": name, "sha256": digest}
    meta = dict(record.meta)
    meta.update(format=FORMAT, format_version=FORMAT_VERSION, files=files)
    text = json.dumps(jsonable(meta), indent=2, allow_nan=False) + "\n"
    atomic_write_bytes(path / "run.json", text.encode())
    keep = {f["name"] for f in files.values() if isinstance(f, dict)}
    for old in path.glob("*.npz"):
        if old.name not in keep and old.name.split("-")[0] in ("groups", "steps", "evals"):
            old.unlink(missing_ok=True)
    return path


def _read_npz(path: Path, entry: dict) -> dict[str, np.ndarray]:
    """One verified array file of a record (checksum, no pickles)."""
    fpath = path / Path(entry["name"]).name
    try:
        data = fpath.read_bytes()
    except OSError:
        raise InputError(f"run record: {entry['name']} is missing") from None
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise InputError(f"run record: {entry['name']} does not match its checksum (truncated or modified)")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as exc:  # numpy raises many types for a damaged archive
        raise InputError(f"run record: {entry['name']} cannot be read ({type(exc).__name__})") from None


def _concat_chunks(chunks: list[dict[str, np.ndarray]], table: str) -> dict[str, np.ndarray]:
    """Row-wise concatenation of a table's chunks; every chunk must hold the same columns."""
    if len(chunks) == 1:
        return chunks[0]
    keys = set(chunks[0])
    if any(set(c) != keys for c in chunks):
        raise InputError(f"run record: the {table} chunks do not hold the same columns")
    try:
        return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    except ValueError:
        raise InputError(f"run record: the {table} chunks have mismatched shapes") from None


def array_hashes(path) -> dict:
    """``{table: SHA-256}`` of a finished record's array files, as its run.json lists them (a table kept in
    chunks: the list of its chunks' hashes). :func:`read_record` checks every file against these."""
    files = json.loads((Path(path) / "run.json").read_text())["files"]
    return {k: (v["sha256"] if isinstance(v, dict) else [c["sha256"] for c in v]) for k, v in sorted(files.items())}


def read_record(path) -> RunRecord:
    """Read and verify a record directory (or its run.json). Raises InputError on any defect.

    A record may be saved again while it is read (a live run, a study worker): the
    writer replaces ``run.json`` and then removes the files only the old one named.
    A read that finds a named file gone or changed therefore looks at ``run.json``
    once more and starts over when it was replaced (a few times at most); a file
    missing under an unchanged ``run.json`` is a defect.
    """
    path = Path(path)
    if path.name == "run.json":
        path = path.parent
    meta_path = path / "run.json"
    if not meta_path.is_file():
        raise InputError(f"{str(path)!r} is not a run record (no run.json)")
    for _attempt in range(_READ_ATTEMPTS - 1):
        text = _read_meta_text(meta_path)
        try:
            return _read_record_from(path, meta_path, text)
        except InputError:
            if _read_meta_text(meta_path) == text:
                raise
    return _read_record_from(path, meta_path, _read_meta_text(meta_path))


_READ_ATTEMPTS = 5


def _read_meta_text(meta_path: Path) -> bytes:
    try:
        return meta_path.read_bytes()
    except OSError as exc:
        raise InputError(f"{str(meta_path)!r} cannot be read: {exc.strerror}") from None


def _read_record_from(path: Path, meta_path: Path, text: bytes) -> RunRecord:
    """The record whose run.json holds ``text`` (see :func:`read_record`)."""
    try:
        meta = json.loads(text.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{str(meta_path)!r} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{str(meta_path)!r} is not a {FORMAT} record")
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(f"run record format version {meta.get('format_version')!r} is not supported "
                         f"(this grpo-lab reads version {FORMAT_VERSION})")
    tables = {}
    for table in ("groups", "steps", "evals"):
        entry = (meta.get("files") or {}).get(table)
        chunks = entry if isinstance(entry, list) else [entry]  # a list: appended chunks (grpo_lab.sims.record_append)
        if not chunks and isinstance(entry, list):
            tables[table] = {}
            continue
        if not all(isinstance(e, dict) and "name" in e and "sha256" in e for e in chunks):
            raise InputError(f"run record: run.json lists no {table} file")
        tables[table] = _concat_chunks([_read_npz(path, e) for e in chunks], table)
    meta.pop("files")
    rec = RunRecord(meta=meta, groups=tables["groups"], steps=tables["steps"], evals=tables["evals"])
    _check_groups(rec.groups)
    if "n_prompts" not in meta:
        raise InputError("run record: run.json lacks n_prompts")
    return rec


def group_outcomes(rewards, tolerance: float = 0.0):
    """(degenerate, all_pass, all_fail) boolean arrays for a (groups, G) reward array (NaN = padding).

    Degenerate: max - min <= tolerance. All-pass: degenerate with mean reward above
    THRESHOLD (0.5); all-fail: degenerate otherwise.
    """
    r = np.asarray(rewards, dtype=float)
    if r.ndim != 2:
        raise InputError("rewards must have shape (groups, G)")
    if r.shape[0] == 0:
        e = np.zeros(0, bool)
        return e, e, e
    with warnings.catch_warnings():  # all-NaN rows (empty groups) warn in nanmax / nanmean
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.nanmax(r, axis=1) - np.nanmin(r, axis=1)
        mean = np.nanmean(r, axis=1)
    degenerate = spread <= tolerance
    return degenerate, degenerate & (mean > THRESHOLD), degenerate & ~(mean > THRESHOLD)


def summarise(record: RunRecord) -> dict:
    """The figures ``grpo-lab inspect --json`` prints, recomputed from the raw arrays.

    ``frac_reward_zero_std`` is the share of all recorded groups whose rewards are all
    equal (within the tolerance), split into ``frac_all_pass`` / ``frac_all_fail``.
    ``evals`` lists ``{step, mean_pass_rate, d_real, d_iid}`` from the measured
    per-prompt pass rates at the run's group size.
    """
    g = record.groups
    degenerate, all_pass, all_fail = group_outcomes(g["rewards"], record.reward_tolerance)
    n = len(degenerate)
    widths = np.sum(~np.isnan(g["rewards"]), axis=1) if n else np.zeros(0, int)
    G = record.meta.get("num_generations") or (int(np.max(widths)) if n else None)
    share = (lambda m: float(np.mean(m)) if n else float("nan"))
    evals = []
    ev = record.evals
    if "step" in ev and len(ev["step"]):
        for s, rates in zip(ev["step"], ev["pass_rate"]):
            rates = rates[~np.isnan(rates)]
            mean = float(np.mean(rates)) if rates.size else float("nan")
            evals.append({
                "step": int(s),
                "mean_pass_rate": mean,
                "d_real": float(np.mean(p_unanimous(rates, G))) if rates.size and G else float("nan"),
                "d_iid": float(p_unanimous(mean, G)) if rates.size and G else float("nan"),
            })
    kept = np.asarray(g["kept"], bool)
    steps = np.unique(g["step"]) if n else np.zeros(0, int)
    n_steps = int(len(record.steps.get("step", steps)))
    return {
        "name": record.meta.get("name"),
        "source": record.meta.get("source", {}).get("kind") if isinstance(record.meta.get("source"), dict) else record.meta.get("source"),
        "steps": n_steps,
        "groups": n,
        "num_generations": G,
        "reward_tolerance": record.reward_tolerance,
        "frac_reward_zero_std": share(degenerate),
        "frac_all_pass": share(all_pass),
        "frac_all_fail": share(all_fail),
        "groups_kept": int(kept.sum()),
        "rollouts_generated": int(widths.sum()),
        "rollouts_in_useful_groups": int(widths[~degenerate].sum()) if n else 0,
        "rollouts_per_kept_group": float(widths.sum() / kept.sum()) if kept.sum() else float("nan"),
        "reward_mean": float(np.nanmean(g["rewards"])) if n else float("nan"),
        "final_eval_pass_rate": evals[-1]["mean_pass_rate"] if evals else float("nan"),
        "evals": evals,
        # ingested runs: which reward is classified, and what the source could not tell (sims.ingest)
        "reward_classified": (record.meta.get("reward") or {}).get("classified"),
        "warnings": [str(t) for t in record.meta.get("warnings") or []],
        "notes": [str(t) for t in record.meta.get("notes") or []],
    }
