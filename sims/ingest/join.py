r"""Join a group dump with the same run's tracker log (``grpo-lab ingest DUMP --metrics LOG``).

A dynamic-sampling trainer dumps only the groups that trained (verl's DAPO recipe writes the kept batch: the
unanimous groups it filtered out were never written), so a dump alone cannot say how many were drawn. The run's
tracker log can: verl DAPO's ``train/num_gen_batches``, NeMo-RL's ``dynamic_sampling_num_gen_batches`` (the
``rounds`` column of the dialect table, :mod:`.trackers.dialects`). :func:`join_metrics` reads the log with the
tracker readers (any format they read, detected from the files), and puts on the record's own steps:

- ``rounds``: the generation rounds of each step (NaN where the log has no row for it);
- ``scalar/<name>``: every logged series, as logged, where the record does not already hold that name (a series
  the dump's own scalars also hold is compared: values that differ are named in ``warnings``).

Steps the log has and the record lacks, and the reverse, are counted in a note; the log's path and format are kept
in ``meta["source"]["metrics"]``. The record's rows are never moved or added: the join is by step number.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .common import DEFAULT_MAX_BYTES

__all__ = ["join_metrics"]


def _rounds_name(names) -> str | None:
    from .trackers.dialects import DIALECTS, _find

    for d in DIALECTS:
        for r in d.rules:
            if r.column == "rounds":
                hit = _find(r.pattern, names)
                if hit:
                    return hit
    return None


def join_metrics(rec: RunRecord, path, *, fmt: str = "auto", run: str | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> RunRecord:
    """Add the tracker log at ``path`` to ``rec`` (module docstring); returns ``rec``. InputError for a log the
    tracker readers refuse, or one that shares no step with the record."""
    from .trackers import read_run_scalars

    rs = read_run_scalars(path, fmt=fmt, run=run, max_bytes=max_bytes)
    steps = np.asarray(rec.steps.get("step", ()), np.int64)
    logged = rs.steps()
    common = np.intersect1d(steps, logged)
    if not common.size:
        raise InputError(f"--metrics {path}: its steps ({_span(logged)}) share none with the record's ({_span(steps)}); "
                         "is it the same run?")
    notes = rec.meta.setdefault("notes", [])
    warns = rec.meta.setdefault("warnings", [])
    differ = []
    for name, (s, v) in rs.series.items():
        col = np.full(len(steps), np.nan)
        idx = np.searchsorted(s, steps)
        hit = (idx < len(s)) & (s[np.minimum(idx, len(s) - 1)] == steps)
        col[hit] = v[idx[hit]]
        key = f"scalar/{name}"
        if key in rec.steps:
            mine = np.asarray(rec.steps[key], float)
            both = np.isfinite(mine) & np.isfinite(col)
            if np.any(~np.isclose(mine[both], col[both], rtol=1e-6, atol=1e-9)):
                differ.append(name)
            continue
        rec.steps[key] = col
    rounds = _rounds_name(list(rs.series))
    if rounds:
        rec.steps["rounds"] = np.asarray(rec.steps[f"scalar/{rounds}"], float)
        notes.append(f"rounds per step from {rounds} in the tracker log (--metrics): the groups drawn, including "
                     "those a dynamic-sampling trainer filtered out and never dumped")
    else:
        notes.append("the tracker log (--metrics) holds no generation-rounds count (train/num_gen_batches, "
                     "dynamic_sampling_num_gen_batches): the dump's steps keep no rounds")
    only_log, only_rec = np.setdiff1d(logged, steps).size, np.setdiff1d(steps, logged).size
    if only_log or only_rec:
        notes.append(f"--metrics joined on {common.size} steps; {only_log} logged step(s) have no groups in the "
                     f"dump and {only_rec} dumped step(s) no row in the log")
    if differ:
        warns.append(f"the tracker log and the dump's own scalars differ on {', '.join(sorted(differ)[:5])}"
                     f"{' ...' if len(differ) > 5 else ''}: kept the dump's; is the log from the same run?")
    src = rec.meta.get("source") if isinstance(rec.meta.get("source"), dict) else {}
    src["metrics"] = {"path": str(path), "format": rs.fmt, "run": rs.name, "steps_joined": int(common.size),
                      "rounds": rounds}
    rec.meta["source"] = src
    return rec


def _span(steps) -> str:
    steps = np.asarray(steps)
    return "none" if not steps.size else f"{int(steps.min())}-{int(steps.max())}"
