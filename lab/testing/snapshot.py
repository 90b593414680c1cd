"""A commit's package laid out as installed, for the benchmarks that measure this tree beside a baseline commit."""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  #: the checkout
#: the repository's package folders and where the installed package has them (setup.py's mapping)
PACKAGE_FOLDERS = {"lab": "grpo_lab", "sims": "grpo_lab/sims", "train": "grpo_lab/train",
                   "trl_recorder": "grpo_lab/trl_recorder"}


def snapshot(ref: str, dest: Path | None = None) -> Path:
    """A folder to put first on ``PYTHONPATH`` (``dest``, or a new temporary one) holding commit ``ref``'s package
    folders (those it has: an older commit has no ``train/``) laid out as the installed package."""
    out = Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="grpo-lab-base-"))
    listed = subprocess.run(["git", "ls-tree", "--name-only", ref], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    folders = {k: v for k, v in PACKAGE_FOLDERS.items() if k in listed}
    data = subprocess.run(["git", "archive", "--format=tar", ref, *folders], cwd=REPO, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(out / "src", filter="data")
    for folder, target in folders.items():  # lab/ first: the others go inside it
        (out / "src" / folder).rename(out / target)
    return out
