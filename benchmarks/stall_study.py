"""Simulation study of the stall forecast (issue 32): does the 90% interval for the first stall hold the truth?

The setup (regimes, loop sizes, logging modes, the truth, what counts as covered) is
:mod:`grpo_lab.testing.stall_study`'s, shared with ``tests/test_stall_study.py``, which runs a slice of it.

Per cell: seeds whose loop stalled within the logged steps (the record shows it; not forecast), coverage of the
truth by the central 90% interval (target 90% +- 5; its binomial standard error beside), the median absolute
error of the point forecast (the median of the forecast distribution) in steps, and for the never-stall run the
false-alarm rate (a median within the horizon: a stall called more likely than not) and the mean P(stall by the
horizon).

Resumable: every (cell, seed) result is appended to ``--cache`` (JSON lines) and skipped when already there; a
second worker on the same cache (``--reverse``: seeds from the last down) skips what the first has written.

    nice python benchmarks/stall_study.py [--seeds 20] [--cache benchmarks/results/stall_study.jsonl] [--table]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from grpo_lab.testing.stall_study import REGIMES, STUDY_MODES, one, summarise, table


def _load(cache: Path) -> list[dict]:
    """The cached rows, one per (regime, mode, seed) (the first where two workers both wrote one)."""
    rows = {}
    for line in cache.read_text().splitlines() if cache.exists() else []:
        r = json.loads(line)
        rows.setdefault((r["regime"], r["mode"], r["seed"]), r)
    return list(rows.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cache", type=Path, default=Path(__file__).parent / "results" / "stall_study.jsonl")
    ap.add_argument("--regimes", nargs="*", default=list(REGIMES))
    ap.add_argument("--modes", nargs="*", default=list(STUDY_MODES))
    ap.add_argument("--table", action="store_true", help="only print the table of what the cache holds")
    ap.add_argument("--reverse", action="store_true", help="seeds from the last down (a second worker, same cache)")
    args = ap.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    rows = _load(args.cache)
    done = {(r["regime"], r["mode"], r["seed"]) for r in rows}
    if not args.table:
        order = range(args.seeds - 1, -1, -1) if args.reverse else range(args.seeds)
        for seed in order:  # seed-major: every cell fills up evenly, so a partial run is usable
            for regime in args.regimes:
                for mode in args.modes:
                    if (regime, mode, seed) in done:
                        continue
                    if (regime, mode, seed) in {(r["regime"], r["mode"], r["seed"]) for r in _load(args.cache)}:
                        continue  # done meanwhile by another worker on the same cache
                    row = one(regime, mode, seed)
                    rows.append(row)
                    with args.cache.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    print(table(summarise(_load(args.cache))))


if __name__ == "__main__":
    main()
