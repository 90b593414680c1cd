"""The runs the replay tab lists: every record directory (one holding ``run.json``) under a runs folder."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_RUNS_DIR", "FEATURED", "PAIRS", "runs_dir", "list_runs", "pairs_in"]

_INSTALLED_RUNS = Path(__file__).resolve().parents[1] / "runs"  # grpo_lab/runs, in an installed wheel (setup.py)
#: the shipped runs: the installed package's copy, else the repository's (a checkout, an editable install)
DEFAULT_RUNS_DIR = _INSTALLED_RUNS if _INSTALLED_RUNS.is_dir() else Path(__file__).resolve().parents[2] / "runs"
MAX_DEPTH = 3  #: runs/<name>/run.json, runs/<estimator>/<seed>/run.json, ...
#: the shipped run listed first (the tab opens on it): a healthy run whose environment expires from the easy end
#: (the full study's broad-start dr_grpo at its tuned rate, seed 1: pass rate 0.470 -> 0.771 while the all-pass
#: share of its groups grows from 0.23 to 0.50 and the all-fail share falls from 0.40 to 0.11)
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


def runs_dir() -> Path:
    """The folder listed: ``$GRPO_LAB_RUNS`` if set, else the shipped runs (:data:`DEFAULT_RUNS_DIR`)."""
    env = os.environ.get("GRPO_LAB_RUNS")
    return Path(env) if env else DEFAULT_RUNS_DIR


def list_runs(root=None) -> dict[str, Path]:
    """``{label: directory}`` of the record directories under ``root`` (label = path relative to it), sorted,
    :data:`FEATURED` first when it is there."""
    root = Path(root) if root is not None else runs_dir()
    if not root.is_dir():
        return {}
    found = {}
    for depth in range(1, MAX_DEPTH + 1):
        for meta in root.glob("/".join(["*"] * depth) + "/run.json"):
            if meta.is_file():
                found[meta.parent.relative_to(root).as_posix()] = meta.parent
    return dict(sorted(found.items(), key=lambda item: (item[0] != FEATURED, item[0])))


def pairs_in(choices) -> dict[str, tuple[str, str, str]]:
    """The entries of :data:`PAIRS` whose two runs are both among ``choices`` (labels), in order."""
    return {name: p for name, p in PAIRS.items() if p[1] in choices and p[2] in choices}
