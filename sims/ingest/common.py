r"""What every ingester shares: untrusted-file access, JSON lines, and building the run record.

Untrusted input rules (issue 6), enforced here once for all formats:

- **Size cap.** Every byte read goes through :meth:`Bundle.read`, which refuses
  a file before reading it when the running total would pass ``max_bytes``
  (200 MB by default); zip members are capped on their declared *and* actual
  uncompressed size, so a zip bomb stops at the cap. A zip is checked whole first, by the project's one check
  of archives (:func:`.archive.check_archive`: paths outside the folder, links, drive letters, encrypted
  members, bombs, too many members; an upload's declared total against the cap too).
- **No code execution.** Nothing is unpickled or evaluated: JSON goes through
  :func:`json.loads`, parquet through pyarrow's column reader. A file whose
  first bytes are a pickle header, or whose name says pickle/torch, is refused
  before any parsing.
- **Groups no trainer makes.** A group of more than :data:`MAX_GROUP` rollouts (TRL's ``num_generations``,
  verl's ``rollout.n``; one JSONL line's ``rewards``) is refused as soon as it is read (:func:`check_group`),
  with one line naming the limit and ``--max-group``, which raises it (:func:`group_limit`); a one-line JSONL of
  4.7 million rewards was one group, its record's arrays 3x the server's memory for a moment (issue #35).
- **Errors point at the data.** A malformed line is reported as
  ``FILE line N: ...``, a missing column as ``FILE: missing column 'x'``, and a
  file of another format as such (:func:`describe`).

The record built by :func:`build_record` is an ordinary
:class:`sims.record.RunRecord`; per-step metrics are recomputed from the groups
with :func:`sims.record.group_outcomes` (degenerate when max - min of the
group's rewards is at most the tolerance).
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import io
import json
import math
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np

from ..errors import InputError
from ..record import STEP_METRICS, RunRecord, group_outcomes
from .budget import CHECK_EVERY_LINES, charge, count_rows

__all__ = [
    "DEFAULT_MAX_BYTES", "MAX_ZIP_MEMBERS", "MAX_GROUP", "check_group", "group_limit", "LABEL_CHARS", "Bundle", "GroupTable", "describe", "iter_json_lines", "intern_codes",
    "build_record", "record_from_arrays", "parse_float", "check_tolerance", "outcome_summary", "steps_text", "steps_phrase",
]

DEFAULT_MAX_BYTES = 200 * 1024 * 1024  #: size cap on everything one ingest reads
#: members a group dump's zip may hold (verl's rollout dump writes one file a step; a tracker upload holds fewer,
#: :data:`.archive.MAX_MEMBERS`)
MAX_ZIP_MEMBERS = 20_000
#: the largest group read by default: more rollouts per prompt than TRL's and verl's documented settings use
#: (their examples use 2-64; ``grpo-lab ingest --max-group`` raises it)
MAX_GROUP = 4096
_MAX_GROUP = contextvars.ContextVar("grpo_lab_ingest_max_group", default=MAX_GROUP)


@contextlib.contextmanager
def group_limit(max_group: int | None):
    """Within the block, :func:`check_group` refuses groups of more than ``max_group`` rollouts (None: the default
    :data:`MAX_GROUP`); an ingest's ``max_group`` parameter sets it for its read."""
    if max_group is None:
        max_group = MAX_GROUP
    if isinstance(max_group, bool) or not isinstance(max_group, int) or max_group < 1:
        raise InputError(f"--max-group must be a positive integer, got {max_group!r}")
    mark = _MAX_GROUP.set(max_group)
    try:
        yield max_group
    finally:
        _MAX_GROUP.reset(mark)


def check_group(size: int, where: str) -> None:
    """Raise InputError if a group of ``size`` rollouts (found at ``where``) passes the limit in force."""
    limit = _MAX_GROUP.get()
    if size > limit:
        raise InputError(f"{where}: a group of {size:,} rollouts is more than the limit of {limit:,} (no trainer "
                         f"makes groups this large; raise the limit with --max-group)")
LABEL_CHARS = 300  #: prompt labels kept in run.json are cut to this many characters
_PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth", ".bin", ".ckpt", ".joblib", ".npy", ".npz")


def describe(data: bytes) -> str:
    """Name what a file's first bytes look like (used in wrong-format messages)."""
    head = data[:64]
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a Python pickle"
    if head.startswith(b"PAR1"):
        return "a parquet file"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive"
    if head.startswith(b"\x1f\x8b"):
        return "a gzip file"
    if head.startswith(b"\x93NUMPY"):
        return "a numpy array file"
    text = head.lstrip()
    if text.startswith(b"{") or text.startswith(b"["):
        return "JSON"
    if b"\x00" in head or not _utf8(head):
        return "a binary file"
    return "text"


def _utf8(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes, maybe cut inside a character) is UTF-8."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _refuse_pickle(name: str, head: bytes) -> None:
    """Refuse a Python pickle (by its first bytes ``head``) and any file named as a pickle, torch or numpy object
    file (``head`` empty: checked by its name before it is read), saying what its bytes are where known: "a Python
    pickle", "a zip archive" (a torch checkpoint is one), "a numpy array file", "a binary file" (random bytes are
    never called a pickle)."""
    kind = describe(head) if head else ""
    suffix = name.lower().endswith(_PICKLE_SUFFIXES)
    if kind != "a Python pickle" and not suffix:
        return
    if kind == "a Python pickle":
        what = "a Python pickle"
    else:
        ext = "." + name.rsplit(".", 1)[-1]
        what = (f"{kind} named {ext}" if kind else f"a file named {ext}") + \
            " (the name of a pickle, torch or numpy object file)"
    raise InputError(f"{name}: refusing {what}; grpo-lab never unpickles input (give the trainer's JSON, JSONL or "
                     "parquet logs)")


@dataclass
class Bundle:
    """A set of named files (a directory, a zip, or one uploaded file) read under one size cap.

    ``entries`` maps a POSIX relative name to ``(size, loader)``; the loader is
    called only through :meth:`read`, after the cap and the pickle check.
    """

    origin: str
    entries: dict[str, tuple[int, object]]
    max_bytes: int = DEFAULT_MAX_BYTES
    read_bytes: int = 0
    single: bool = False  # one file given directly (not a folder or archive)
    progress: object = None  # anything with update(n_bytes), e.g. a tqdm bar; see read()
    workers: int = 1  # processes that may parse a large folder's files (.parallel); 1: this one only
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_path(cls, path, max_bytes: int = DEFAULT_MAX_BYTES) -> "Bundle":
        path = Path(path)
        _check_cap(max_bytes)
        if not path.exists():
            raise InputError(f"{str(path)!r} does not exist")
        if path.is_dir():
            entries = {}
            for f in sorted(path.rglob("*")):
                rel = f.relative_to(path)
                if len(rel.parts) > 3 or not f.is_file() or f.is_symlink():
                    continue
                entries[rel.as_posix()] = (f.stat().st_size, (lambda f=f: f.read_bytes()))
            return cls(str(path), entries, max_bytes)
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"{path}: {size} bytes is over the size cap of {max_bytes} bytes (--max-mb)")
        with open(path, "rb") as fh:
            head = fh.read(8)
        if head.startswith(b"PK\x03\x04") and path.suffix.lower() == ".zip":  # reads capped as they go (--max-mb)
            return cls.from_zip(str(path), path.read_bytes(), max_bytes, cap_total=False)
        return cls(str(path.parent), {path.name: (size, (lambda: path.read_bytes()))}, max_bytes, single=True)

    @classmethod
    def from_bytes(cls, filename: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> "Bundle":
        """An uploaded file: a zip of an output folder is opened as a folder, anything else is one file."""
        _check_cap(max_bytes)
        name = PurePosixPath(str(filename).replace("\\", "/")).name or "upload"
        if len(data) > max_bytes:
            raise InputError(f"{name}: {len(data)} bytes is over the size cap of {max_bytes} bytes")
        if data.startswith(b"PK\x03\x04") and name.lower().endswith(".zip"):
            return cls.from_zip(name, data, max_bytes)
        return cls("upload", {name: (len(data), (lambda: data))}, max_bytes, single=True)

    @classmethod
    def from_zip(cls, origin: str, data: bytes, max_bytes: int, *, cap_total: bool = True) -> "Bundle":
        """A zip of an output folder, checked whole first (:func:`.archive.check_archive`: paths outside the folder,
        links, drive letters, encrypted members, bombs, more than :data:`MAX_ZIP_MEMBERS` members, and with
        ``cap_total`` more than ``max_bytes`` declared in all); each member then read capped as it expands."""
        from .archive import check_archive

        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
            infos = check_archive(zf, origin, max_bytes, max_members=MAX_ZIP_MEMBERS, cap_total=cap_total)
        except (zipfile.BadZipFile, OSError) as exc:
            raise InputError(f"{origin}: not a readable zip archive ({exc})") from None
        entries = {}
        for info in infos:
            entries[info.filename] = (info.file_size, (lambda info=info: _read_member(zf, info, max_bytes, origin)))
        # an archive of one top folder (zip -r run.zip run/) reads like the folder itself
        tops = {PurePosixPath(n).parts[0] for n in entries}
        if len(tops) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in entries):
            top = tops.pop()
            entries = {n[len(top) + 1:]: v for n, v in entries.items()}
        return cls(origin, entries, max_bytes)

    def names(self) -> list[str]:
        return list(self.entries)

    def label(self, name: str) -> str:
        """How a file is named in messages."""
        if self.single or self.origin == "upload":
            return name
        return str(PurePosixPath(self.origin) / name) if not self.origin.endswith(".zip") else f"{self.origin}:{name}"

    def read(self, name: str, cache: bool = True) -> bytes:
        """The bytes of one file, after the size cap and the pickle check.

        Read once, then kept for a second call unless ``cache`` is false (large dumps are read
        file by file and let go, so memory holds one file at a time). ``progress``, when set,
        is advanced by each file's size (a tqdm bar, or anything with ``update(n)``).
        """
        if name in self._cache:
            return self._cache[name]
        size, loader = self.entries[name]
        if self.read_bytes + size > self.max_bytes:
            raise InputError(f"{self.label(name)}: reading it would pass the size cap of {self.max_bytes} bytes "
                             f"({self.read_bytes + size} bytes in all; raise --max-mb if you trust the files)")
        _refuse_pickle(self.label(name), b"")
        try:
            data = loader()
        except OSError as exc:
            raise InputError(f"{self.label(name)}: cannot be read ({exc.strerror or exc})") from None
        self.read_bytes += len(data)
        if self.read_bytes > self.max_bytes:
            raise InputError(f"{self.label(name)}: over the size cap of {self.max_bytes} bytes")
        _refuse_pickle(self.label(name), data[:8])
        charge(rows=count_rows(data), where=self.label(name))  # an upload's row/time budget (.budget)
        if cache:
            self._cache[name] = data
        if self.progress is not None:
            self.progress.update(len(data))
        return data


def _check_cap(max_bytes) -> None:
    if not isinstance(max_bytes, (int, np.integer)) or max_bytes <= 0:
        raise InputError(f"the size cap must be a positive number of bytes, got {max_bytes!r}")


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int, origin: str) -> bytes:
    """One member's bytes, stopped at the cap as they expand; a member whose bytes do not match what it declares
    (a forged size, a bad CRC) or cannot be decompressed is an InputError naming it."""
    out = bytearray()
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(1 << 20):
                out += chunk
                if len(out) > max_bytes:
                    raise InputError(f"{origin}:{info.filename}: expands past the size cap of {max_bytes} bytes")
                charge(nbytes=len(chunk), where=f"{origin}:{info.filename}")  # an upload's time budget (.budget)
    except (zipfile.BadZipFile, EOFError, NotImplementedError, zlib.error) as exc:
        raise InputError(f"{origin}:{info.filename}: refused: the member cannot be read as it declares ({exc})") \
            from None
    return bytes(out)


#: (format, keys a line of it has, how to name it), for telling a user which --format a file needs
_LINE_SHAPES = (
    ("verl", ("input", "score"), "a verl rollout dump"),
    ("jsonl", ("rewards", "prompt_id"), "the plain group format"),
    ("trl", ("prompt", "completion"), "a per-completion log (TRL?)"),
)


def format_hint(obj: dict, fmt: str) -> str:
    """``"; it looks like ...: use --format X"`` when a JSON line has another format's shape, else ``""``."""
    for name, keys, what in _LINE_SHAPES:
        if name != fmt and all(k in obj for k in keys):
            return f"; it looks like {what}: use --format {name}"
    return ""


def iter_json_lines(data: bytes, label: str):
    """Yield ``(line_number, object)`` for each non-blank line; a bad line is an InputError naming it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: not UTF-8 text ({describe(data)}; byte {exc.start})") from None
    loads = json.loads
    for n, line in enumerate(text.split("\n"), 1):
        if not n % CHECK_EVERY_LINES:
            charge(where=f"{label} line {n}")  # an upload's time budget (.budget)
        if not line or line.isspace():
            continue
        try:
            obj = loads(line)
        except ValueError as exc:
            msg = getattr(exc, "msg", str(exc))
            raise InputError(f"{label} line {n}: not valid JSON ({msg})") from None
        except RecursionError:
            raise InputError(f"{label} line {n}: JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise InputError(f"{label} line {n}: expected a JSON object, got {type(obj).__name__}")
        yield n, obj


def parse_float(value, where: str) -> float:
    """A reward value: a JSON number or boolean (null -> NaN, meaning unscored)."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    raise InputError(f"{where}: expected a number, got {json.dumps(value)[:40]}")


def check_tolerance(tolerance) -> float:
    try:
        tol = float(tolerance)
    except (TypeError, ValueError):
        raise InputError(f"--tolerance must be a number, got {tolerance!r}") from None
    if not math.isfinite(tol) or tol < 0:
        raise InputError(f"--tolerance must be a finite number >= 0, got {tolerance!r}")
    return tol


def intern_codes(keys, index: dict, labels: list, shown=None) -> np.ndarray:
    """Integer codes of ``keys`` in ``index`` (key -> code); a new key appends its label to ``labels``.

    The label is the key itself, or ``shown[i]`` when given (a prompt keyed by its JSON text but labelled
    by its last user turn). Codes are assigned in order of first appearance, across calls.
    """
    codes = np.empty(len(keys), np.int64)
    for i, key in enumerate(keys):
        code = index.get(key)
        if code is None:
            code = index[key] = len(labels)
            labels.append(key if shown is None else shown[i])
        codes[i] = code
    return codes


def prompt_label(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "\u2026"


@dataclass
class GroupTable:
    """Groups as they are parsed: one entry per group, prompts interned in order of first appearance."""

    steps: list[int] = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)
    rewards: list[list[float]] = field(default_factory=list)
    advantages: dict[int, list[float]] = field(default_factory=dict)  # group index -> advantages
    lengths: dict[int, list[int]] = field(default_factory=dict)
    kept: dict[int, bool] = field(default_factory=dict)  # only groups a source marks as dropped
    labels: list[str] = field(default_factory=list)
    _index: dict = field(default_factory=dict)

    def prompt(self, key, label: str | None = None) -> int:
        pid = self._index.get(key)
        if pid is None:
            pid = self._index[key] = len(self.labels)
            self.labels.append(prompt_label(label if label is not None else str(key)))
        return pid

    def add(self, step: int, pid: int, rewards: list[float], advantages=None, lengths=None, kept=None) -> None:
        check_group(len(rewards), f"group {len(self.steps) + 1}")
        i = len(self.steps)
        self.steps.append(step)
        self.prompt_ids.append(pid)
        self.rewards.append(rewards)
        if advantages is not None:
            self.advantages[i] = advantages
        if lengths is not None:
            self.lengths[i] = lengths
        if kept is not None:
            self.kept[i] = kept

    def __len__(self) -> int:
        return len(self.steps)


def _pad(rows, idx: dict, n: int, G: int, fill, dtype) -> np.ndarray:
    out = np.full((n, G), fill, dtype=dtype)
    for i, row in (idx.items() if isinstance(idx, dict) else enumerate(rows)):
        out[i, :len(row)] = row
    return out


def build_record(table: GroupTable, *, source: dict, tolerance: float, scalars: dict[int, dict[str, float]] | None,
                 missing: list[str], name: str | None = None, config: dict | None = None) -> RunRecord:
    """Assemble a :class:`RunRecord` from parsed groups and a per-step scalar history.

    ``steps`` of the record is the union of the steps that have groups and the
    steps that have scalars. Recomputed metrics (``frac_reward_zero_std``,
    ``frac_all_pass``, ``frac_all_fail``, ``reward_mean``, ``max_abs_advantage``,
    ``rollouts_generated``, ``rollouts_kept``) are NaN at steps without groups;
    ``kl`` and ``wall_time_s`` are NaN (the source's own figures are kept as
    ``scalar/<name>``). Evaluations are left empty and listed as missing: real
    sources have no periodic evaluation of every prompt.
    """
    n = len(table)
    widths = [len(r) for r in table.rewards]
    G = max(widths) if n else 0
    rewards = np.full((n, G), np.nan)
    for i, r in enumerate(table.rewards):
        rewards[i, :len(r)] = r
    kept = np.ones(n, bool)
    for i, k in table.kept.items():
        kept[i] = k
    groups = {
        "step": np.asarray(table.steps, np.int64).reshape(n),
        "prompt_id": np.asarray(table.prompt_ids, np.int64).reshape(n),
        "rewards": rewards,
        "advantages": _pad(None, table.advantages, n, G, np.nan, float),
        "lengths": _pad(None, table.lengths, n, G, -1, np.int64),
        "kept": kept,
    }
    fixed = n > 0 and min(widths) == G
    if n and not table.advantages and "advantages" not in missing:
        missing = [*missing, "advantages"]
    if n and not table.lengths and "lengths" not in missing:
        missing = [*missing, "lengths"]
    return record_from_arrays(groups, table.labels, source=source, tolerance=tolerance, scalars=scalars,
                              missing=missing, name=name, config=config, fixed_width=fixed)


def record_from_arrays(groups: dict[str, np.ndarray], labels: list[str], *, source: dict, tolerance: float,
                       scalars: dict[int, dict[str, float]] | None, missing: list[str], name: str | None = None,
                       config: dict | None = None, fixed_width: bool = True) -> RunRecord:
    """The record of already-built group arrays (``step``, ``prompt_id``, ``rewards`` (n, G), ``advantages``,
    ``lengths``, ``kept``, as in :mod:`sims.record`); :func:`build_record` without the per-group lists.

    ``fixed_width``: every group has G rewards (else ``num_generations`` is recorded as null).
    """
    scalars = scalars or {}
    n, G = groups["rewards"].shape if groups["rewards"].ndim == 2 else (0, 0)
    check_group(G, source.get("path") or "the run")
    fixed = fixed_width and n > 0
    steps_tab = _step_table(groups, scalars, tolerance)
    meta = {
        "name": name,
        "source": source,
        "reward_tolerance": tolerance,
        "n_prompts": len(labels),
        "prompt_labels": list(labels),
        "num_generations": G if fixed else None,
        "missing": sorted(set(missing) | {"evals"}),
        "scalars_only": n == 0,
        "config": config or {},
    }
    evals = {"step": np.zeros(0, np.int64), "pass_rate": np.zeros((0, len(labels))),
             "samples": np.zeros(0, np.int64)}
    return RunRecord(meta=meta, groups=groups, steps=steps_tab, evals=evals)


def _step_table(groups: dict, scalars: dict[int, dict[str, float]], tolerance: float) -> dict[str, np.ndarray]:
    gsteps = groups["step"]
    all_steps = np.union1d(np.unique(gsteps), np.asarray(sorted(scalars), np.int64)).astype(np.int64)
    m = len(all_steps)
    out = {"step": all_steps}
    for k in STEP_METRICS:
        out[k] = np.full(m, np.nan)
    if len(gsteps):
        degenerate, all_pass, all_fail = group_outcomes(groups["rewards"], tolerance)
        pos = np.searchsorted(all_steps, gsteps)
        count = np.bincount(pos, minlength=m).astype(float)
        has = count > 0
        r = groups["rewards"]
        valid = ~np.isnan(r)
        width = valid.sum(axis=1).astype(float)
        rsum = np.bincount(pos, weights=np.where(valid, r, 0.0).sum(axis=1), minlength=m)
        rcount = np.bincount(pos, weights=width, minlength=m)
        kept = groups["kept"]
        for key, mask in (("frac_reward_zero_std", degenerate), ("frac_all_pass", all_pass),
                          ("frac_all_fail", all_fail)):
            out[key][has] = np.bincount(pos, weights=mask.astype(float), minlength=m)[has] / count[has]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["reward_mean"][has] = rsum[has] / rcount[has]
        out["rollouts_generated"][has] = rcount[has]
        out["rollouts_kept"][has] = np.bincount(pos, weights=width * kept, minlength=m)[has]
        a = np.abs(groups["advantages"])
        amax = np.where(np.isnan(a), -np.inf, a).max(axis=1) if a.shape[1] else np.full(len(a), -np.inf)
        best = np.full(m, -np.inf)
        np.maximum.at(best, pos, amax)
        out["max_abs_advantage"] = np.where(np.isfinite(best), best, np.nan)
    names = sorted({k for row in scalars.values() for k in row})
    index = {s: i for i, s in enumerate(all_steps.tolist())}
    for k in names:
        col = np.full(m, np.nan)
        for s, row in scalars.items():
            if k in row:
                col[index[s]] = row[k]
        out[f"scalar/{k}"] = col
    return out


def numeric_scalars(row: dict) -> dict[str, float]:
    """The finite-or-NaN numeric entries of a logged dict (strings, lists and nested objects are skipped)."""
    out = {}
    for k, v in row.items():
        if isinstance(v, bool):
            out[str(k)] = float(v)
        elif isinstance(v, (int, float)):
            out[str(k)] = float(v)
        elif v is None:
            out[str(k)] = math.nan
    return out


def outcome_summary(rewards: np.ndarray, tolerance: float) -> dict[str, float]:
    """Shares of degenerate / all-pass / all-fail groups and the mean reward of a (groups, G) array.

    Used for the rewards a record does *not* classify (another reward column, the correctness
    score beside the training reward), so a reader sees both answers. Empty input gives NaNs.
    """
    degenerate, all_pass, all_fail = group_outcomes(rewards, tolerance)
    n = len(degenerate)
    share = (lambda m: float(np.mean(m)) if n else math.nan)
    with np.errstate(invalid="ignore"):
        mean = float(np.nanmean(rewards)) if n and not np.isnan(rewards).all() else math.nan
    return {"frac_reward_zero_std": share(degenerate), "frac_all_pass": share(all_pass),
            "frac_all_fail": share(all_fail), "reward_mean": mean}


def steps_text(steps) -> str:
    """``1-3, 5, 7-9`` for a collection of integer steps."""
    steps = sorted(set(int(s) for s in steps))
    parts, i = [], 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        parts.append(str(steps[i]) if i == j else f"{steps[i]}-{steps[j]}")
        i = j + 1
    return ", ".join(parts)


def steps_phrase(steps) -> str:
    """``step 3`` or ``steps 1-3, 5`` (:func:`steps_text` with its noun)."""
    steps = set(int(s) for s in steps)
    return ("step " if len(steps) == 1 else "steps ") + steps_text(steps)
