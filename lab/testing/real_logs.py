"""The real training logs of ``tests/fixtures/real`` (collected from public repositories, provenance in each
``SOURCE.md``), listed by ``index.json``, and each read as a scalars record with its own config and K.

``real_logs()`` gives one dict per run: ``name``, ``trainer``, ``K``, ``rows``, ``rewards`` (``"binary"``,
``"not binary"`` or ``"unknown"``, from the source), ``groups_per_row`` (the trainer's arithmetic on the config),
``lattice`` (the smallest g of the logged shares, None where they cannot say), ``repo``, ``commit``, ``licence``,
``path`` (the log) and ``config_path``. ``read_real(name)`` reads the log as ``grpo-lab ingest LOG
--num-generations K --trainer-config CONFIG`` does. For the doctor's checks on runs no one here wrote (the
back-test coverage on the binary runs, issue #39)."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["REAL", "real_logs", "read_real"]

REAL = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "real"


def real_logs() -> list[dict]:
    index = json.loads((REAL / "index.json").read_text())
    return [{**entry, "name": name, "path": REAL / name / entry["file"], "config_path": REAL / name / entry["config"]}
            for name, entry in sorted(index.items())]


def read_real(name: str):
    """The run ``name`` as a scalars-only :class:`~grpo_lab.sims.record.RunRecord` (its config and K given)."""
    from grpo_lab.sims.ingest.trackers import read_scalars
    from grpo_lab.sims.ingest.trackers.common import load_config

    entry = next(e for e in real_logs() if e["name"] == name)
    return read_scalars(entry["path"], num_generations=entry["K"], config=load_config(entry["config_path"]))
