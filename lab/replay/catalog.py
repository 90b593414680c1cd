"""The runs the replay tab and every command that takes a run know by label: the shipped runs, then the user's.

A *runs folder* holds record directories (one holding ``run.json``), up to :data:`MAX_DEPTH` deep; a run's
*label* is its path relative to its folder (``broad-g4-dr_grpo-lr0.0008-s1``, ``dr_grpo/seed0``). The
catalogue (:func:`runs_folders`) is, in this order:

1. the shipped runs (:data:`DEFAULT_RUNS_DIR`: the installed package's ``grpo_lab/runs``, else the
   repository's ``runs/``);
2. the user's runs folder (:func:`user_runs_dir`: ``$XDG_DATA_HOME/grpo-lab/runs``, by default
   ``~/.local/share/grpo-lab/runs``; ``grpo-lab ingest`` without ``--out`` writes there);
3. the folders of ``$GRPO_LAB_RUNS`` (several separated by ``os.pathsep``), then those given by ``--runs DIR``.

Each adds to the ones before it; where two folders hold the same label the first keeps it (a shipped label
always means the shipped run) and the other is reported as hidden (``grpo-lab runs``) and reachable by its
path. :func:`resolve_run` is the one place a command turns its argument into a record directory: an
existing path is taken as it is, else a label of the catalogue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["DEFAULT_RUNS_DIR", "FEATURED", "PAIRS", "RunsFolder", "Catalogue", "runs_folders", "user_runs_dir", "catalogue",
           "list_runs", "resolve_run", "pairs_in"]

_INSTALLED_RUNS = Path(__file__).resolve().parents[1] / "runs"  # grpo_lab/runs, in an installed wheel (setup.py)
#: the shipped runs: the installed package's copy, else the repository's (a checkout, an editable install)
DEFAULT_RUNS_DIR = _INSTALLED_RUNS if _INSTALLED_RUNS.is_dir() else Path(__file__).resolve().parents[2] / "runs"
MAX_DEPTH = 3  #: runs/<name>/run.json, runs/<estimator>/<seed>/run.json, ...
#: the shipped run listed first (the tab opens on it): a healthy run whose environment expires from the easy end
#: (the full study's broad-start dr_grpo at its tuned rate, seed 1, from the shipped warm start: pass rate
#: 0.474 -> 0.786 while the all-pass share of its groups grows from 0.21 to 0.56 and the all-fail share falls from
#: 0.39 to 0.09)
FEATURED = "broad-g4-dr_grpo-lr0.0008-s1"
#: named side-by-side views of shipped runs that share their start (the same warm start, the same RL seed), each
#: estimator at the learning rate the study chose for it: name (the URL's ``?replay=NAME``) -> (title, run, compared)
PAIRS = {
    "sign-vs-dr_grpo": ("sign vs dr_grpo, one start (broad)", FEATURED, "broad-g4-sign-lr0.0004-s1"),
    "sign-vs-dr_grpo-weak": ("sign vs dr_grpo, one start (weak)", "weak-g4-dr_grpo-lr0.0004-s1",
                             "weak-g4-sign-lr0.0004-s1"),
    "tasa-vs-dr_grpo": ("tasa vs dr_grpo, one start (broad)", FEATURED, "broad-g4-tasa-lr0.0016-s1"),
    "dynamic-sampling": ("dr_grpo: plain vs DAPO dynamic sampling (broad)", FEATURED,
                         "broad-g4-dr_grpo-ds-lr0.0008-s1"),
    "dynamic-sampling-weak": ("dr_grpo: plain vs DAPO dynamic sampling (weak)", "weak-g4-dr_grpo-lr0.0004-s1",
                              "weak-g4-dr_grpo-ds-lr0.0004-s1"),
    "retirement": ("dynamic sampling alone vs retiring prompts after 2 all-pass groups (weak)",
                   "weak-g4-dr_grpo-ds-lr0.0004-s1", "weak-g4-dr_grpo-ds-retire2-lr0.0004-s1"),
}


@dataclass(frozen=True)
class RunsFolder:
    """One folder of the catalogue: its ``path`` and ``origin`` ("shipped", "yours", "GRPO_LAB_RUNS", "--runs")."""

    path: Path
    origin: str


@dataclass(frozen=True)
class Catalogue:
    """``runs``: ``{label: (directory, origin)}`` in listing order; ``hidden``: ``(label, directory, origin)``
    of the runs whose label an earlier folder holds; ``folders``: the folders looked in, in order."""

    runs: dict
    hidden: list
    folders: list


def user_runs_dir() -> Path:
    """The user's runs folder: ``$XDG_DATA_HOME/grpo-lab/runs`` (XDG Base Directory), else
    ``~/.local/share/grpo-lab/runs``. It need not exist."""
    data = os.environ.get("XDG_DATA_HOME")
    base = Path(data) if data and Path(data).is_absolute() else Path.home() / ".local" / "share"
    return base / "grpo-lab" / "runs"


def runs_folders(extra=()) -> list[RunsFolder]:
    """The catalogue's folders in order (see the module docstring); ``extra``: the ``--runs`` folders."""
    folders = [RunsFolder(DEFAULT_RUNS_DIR, "shipped"), RunsFolder(user_runs_dir(), "yours")]
    env = os.environ.get("GRPO_LAB_RUNS", "")
    folders += [RunsFolder(Path(d), "GRPO_LAB_RUNS") for d in env.split(os.pathsep) if d.strip()]
    folders += [RunsFolder(Path(d), "--runs") for d in extra]
    seen, out = set(), []
    for f in folders:  # a folder named twice (the Dockerfile's GRPO_LAB_RUNS may be the shipped runs) counts once
        key = os.path.realpath(f.path)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _records(root: Path) -> dict[str, Path]:
    """``{label: directory}`` of the record directories under ``root`` (label = path relative to it)."""
    if not root.is_dir():
        return {}
    found = {}
    for depth in range(1, MAX_DEPTH + 1):
        for meta in root.glob("/".join(["*"] * depth) + "/run.json"):
            if meta.is_file():
                found[meta.parent.relative_to(root).as_posix()] = meta.parent
    return found


def _ordered(found: dict) -> dict:
    return dict(sorted(found.items(), key=lambda item: (item[0] != FEATURED, item[0])))


def catalogue(extra=()) -> Catalogue:
    """Every run of :func:`runs_folders` by label, sorted (:data:`FEATURED` first), each with its folder's origin."""
    runs, hidden, folders = {}, [], runs_folders(extra)
    for folder in folders:
        for label, path in _records(folder.path).items():
            if label in runs:
                if os.path.realpath(runs[label][0]) != os.path.realpath(path):
                    hidden.append((label, path, folder.origin))
            else:
                runs[label] = (path, folder.origin)
    return Catalogue(_ordered(runs), hidden, folders)


def list_runs(root=None, extra=()) -> dict[str, Path]:
    """``{label: directory}``: of the one folder ``root`` when given, else of the whole catalogue
    (:func:`catalogue`); sorted, :data:`FEATURED` first when it is there."""
    if root is not None:
        return _ordered(_records(Path(root)))
    return {label: path for label, (path, _) in catalogue(extra).runs.items()}


def resolve_run(text: str, extra=()) -> Path:
    """The record directory a command's argument names: an existing path (a directory, or its ``run.json``)
    as it is, else a label of the catalogue. Anything else raises InputError in one line."""
    path = Path(text)
    if path.exists():
        return path
    found = list_runs(extra=extra).get(text.strip("/"))
    if found is None:
        raise InputError(f"{text!r} is neither a run record directory nor the label of a run "
                         f"(grpo-lab runs lists them)")
    return found


def pairs_in(choices) -> dict[str, tuple[str, str, str]]:
    """The entries of :data:`PAIRS` whose two runs are both among ``choices`` (labels), in order."""
    return {name: p for name, p in PAIRS.items() if p[1] in choices and p[2] in choices}
