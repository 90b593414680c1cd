r"""What the tracker readers share: one run's scalar series, the size cap, config flattening, run choice.

Every reader turns its tracker's files into :class:`RunScalars`: ``series`` maps a metric name *as logged*
to ``(steps, values)`` (steps int64 sorted without repeats; where a step was logged twice, the later value
wins, as TensorBoard and W&B show it), ``config`` is the run's configuration flattened to dotted keys
(``actor_rollout_ref.rollout.n``), where the tracker stores one.

Untrusted-input rules (docs/ingest.md): the bytes a reader may look at are capped (``max_bytes``, checked
on the files' sizes *before* a library opens them); nothing is unpickled; every defect is one
:class:`~grpo_lab.sims.errors.InputError` line naming the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InputError

OWN_PREFIX = "grpo_lab/"  #: grpo-lab's own scalars, written back into a run's tracker (the forecast): never read as data
OWN_EVENT_SUFFIX = ".grpo_lab"  #: the name suffix of the TensorBoard event file grpo-lab writes them to

__all__ = ["OWN_PREFIX", "OWN_EVENT_SUFFIX", "RunScalars", "series_from_rows", "add_row", "flatten", "charge_files", "pick_run", "number",
           "overrides_mapping", "load_config", "parse_namespace"]


@dataclass
class RunScalars:
    """One run's per-step scalars as its tracker holds them (see the module docstring)."""

    name: str
    series: dict[str, tuple[np.ndarray, np.ndarray]]
    config: dict = field(default_factory=dict)
    fmt: str = ""
    notes: list[str] = field(default_factory=list)

    def steps(self) -> np.ndarray:
        """Every step any series was logged at (sorted, unique)."""
        if not self.series:
            return np.zeros(0, np.int64)
        return np.unique(np.concatenate([s for s, _ in self.series.values()]))


def series_from_rows(rows: dict[str, tuple[list, list]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{name: (steps, values)}`` lists in log order -> arrays sorted by step, the last value of a repeated
    step kept (a resumed run re-logs the steps after its checkpoint; the later write is the one shown)."""
    out = {}
    for name, (steps, values) in rows.items():
        s = np.asarray(steps, dtype=np.int64)
        v = np.asarray(values, dtype=float)
        if len(s) == 0:
            continue
        # stable sort by step; then the last of each run of equal steps
        order = np.argsort(s, kind="stable")
        s, v = s[order], v[order]
        last = np.ones(len(s), bool)
        last[:-1] = s[1:] != s[:-1]
        out[name] = (s[last], v[last])
    return out


def number(value) -> float | None:
    """A logged value as a float (bools count 0/1), None for anything that is not a number."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return None


def add_row(rows: dict, step: int, values: dict, skip=()) -> None:
    """Append one logged step's numbers to ``rows`` ({name: (steps, values)}): numbers and bools as floats,
    ``None`` as NaN; strings, lists and objects skipped, as are the keys in ``skip``."""
    for k, v in values.items():
        if k in skip:
            continue
        x = number(v) if v is not None else math.nan
        if x is None:
            continue
        entry = rows.get(k)
        if entry is None:
            entry = rows[k] = ([], [])
        entry[0].append(step)
        entry[1].append(x)


_NAMESPACE_MAX = 1 << 20  #: a stringified namespace longer than this is kept as the string


def _literal(node):
    """A literal AST node's value: constants, -x, lists, tuples, dicts of those, and nested namespace(...)
    calls (as dicts). ValueError for anything else: nothing is evaluated."""
    import ast

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values)}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("namespace", "Namespace")
            and not node.args):
        return {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg is not None}
    raise ValueError("not a literal")


def parse_namespace(text: str) -> dict | None:
    """A config value W&B stored as a string because it was an object: ``repr()`` of a ``SimpleNamespace``
    (``namespace(batch_size=128, n_samples_per_prompt=8)``, OpenRLHF 0.11's nested ``args`` sections,
    ``openrlhf/utils/config.py`` ``hierarchize``) or of an argparse ``Namespace(...)``, as a dict (nested
    namespaces too). Read from the syntax tree (:mod:`ast`), never evaluated; None where ``text`` is not such a
    repr of literals."""
    import ast

    t = text.strip()
    if not (t.startswith(("namespace(", "Namespace(")) and t.endswith(")")) or len(t) > _NAMESPACE_MAX:
        return None
    try:
        value = _literal(ast.parse(t, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return value if isinstance(value, dict) else None


def flatten(config, prefix: str = "") -> dict:
    """A nested config as ``{"a.b.c": value}``; W&B's ``{"value": x, "desc": ...}`` wrappers are unwrapped, and a
    namespace W&B stored as its string (:func:`parse_namespace`) is read as the mapping it shows."""
    out = {}
    if isinstance(config, str) and prefix and (ns := parse_namespace(config)) is not None:
        return flatten(ns, prefix)
    if isinstance(config, dict):
        if set(config) <= {"value", "desc"} and "value" in config:
            return flatten(config["value"], prefix)
        for k, v in config.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            out.update(flatten(v, key))
    elif prefix:
        out[prefix] = config
    return out


def charge_files(files, max_bytes: int, label: str) -> int:
    """Sum the sizes of ``files``; InputError when they pass ``max_bytes`` (checked before any is opened)."""
    if not isinstance(max_bytes, (int, np.integer)) or isinstance(max_bytes, bool) or max_bytes <= 0:
        raise InputError(f"the size cap must be a positive number of bytes, got {max_bytes!r}")
    total = 0
    for f in files:
        try:
            total += Path(f).stat().st_size
        except OSError as exc:
            raise InputError(f"{f}: cannot be read ({exc.strerror or exc})") from None
    if total > max_bytes:
        raise InputError(f"{label}: {total} bytes is over the size cap of {max_bytes} bytes "
                         "(raise --max-mb if you trust the files)")
    return total


def pick_run(runs: dict, run: str | None, where: str, fmt: str):
    """The one run to read: ``run`` by name, or the only one; else InputError listing them."""
    if not runs:
        raise InputError(f"{where}: no {fmt} run found")
    if run is not None:
        if run not in runs:
            raise InputError(f"{where}: no run named {run!r}; the runs are: {', '.join(sorted(runs))}")
        return run, runs[run]
    if len(runs) > 1:
        names = sorted(runs)
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        raise InputError(f"{where} holds {len(names)} {fmt} runs; pick one with --run NAME: {shown}")
    (name, handle), = runs.items()
    return name, handle


def _scalar(text: str):
    """A hydra override's value as YAML reads it (int, float, bool, null, list), else the string."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML is a dependency of the ingest extra
        return text
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def overrides_mapping(items, label: str) -> dict:
    """Hydra's override list (``.hydra/overrides.yaml``, or a run's command line): ``["data.train_batch_size=512",
    "+trainer.x=1", "~key"]`` -> ``{"data.train_batch_size": 512, "trainer.x": 1}`` (``+``/``++`` prefixes
    dropped, ``~key`` deletions skipped, values read as YAML scalars). InputError for an item that is not
    ``key=value``."""
    out = {}
    for n, item in enumerate(items):
        if not isinstance(item, str) or ("=" not in item and not item.startswith("~")):
            raise InputError(f"{label}: item {n} ({str(item)[:60]!r}) is not a hydra override key=value")
        if item.startswith("~"):
            continue
        key, value = item.split("=", 1)
        out[key.lstrip("+").strip()] = _scalar(value)
    return out


def load_config(path) -> dict:
    """A run's config file as a flattened dict (:func:`flatten`): any file the doctor's ``--trainer-config``
    reads (:func:`grpo_lab.sims.doctor.trainer_config.load_file`: JSON, YAML, TOML, a launch command's arguments),
    a nested mapping (verl's ``.hydra/config.yaml``, a GRPOConfig dump, tinker's ``config.json``) or hydra's
    override list (``key=value`` items, :func:`overrides_mapping`). InputError (one line, naming the file) for
    anything else."""
    from ...doctor.trainer_config import load_file

    data = load_file(Path(path))
    if isinstance(data, list):
        return overrides_mapping(data, str(path))
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping of settings or a list of key=value overrides, "
                         f"got {type(data).__name__}")
    return flatten(data)
