"""Ingest speed: groups per second for the plain JSONL and verl formats, against a json.loads baseline.

Generates 100,000 groups (G = 4) in each format in a temporary folder, then times
(a) the baseline, ``json.loads`` of every line of the same file (the least any
JSON-lines reader can do), and (b) ``sims.ingest.ingest`` (parse, validate,
group, recompute the per-step metrics, build the record), and (c) writing the
record. Prints one row per format. Run: ``python benchmarks/bench_ingest.py [--groups N]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record


def make_plain(path: Path, groups: int, G: int, rng) -> None:
    steps = np.arange(groups) // 500
    pids = rng.integers(0, 5000, groups)
    rewards = (rng.random((groups, G)) < rng.random((groups, 1))).astype(int)
    with open(path, "w") as fh:
        for s, p, r in zip(steps.tolist(), pids.tolist(), rewards.tolist()):
            fh.write(json.dumps({"step": s, "prompt_id": f"p{p}", "rewards": r}) + "\n")


def make_verl(folder: Path, groups: int, G: int, rng, per_step: int = 500) -> None:
    folder.mkdir()
    for step in range(groups // per_step):
        prompts = rng.choice(5000, per_step, replace=False)
        rows = []
        for p in prompts.tolist():
            acc = rng.random(G) < 0.5
            rows += [{"input": f"Question {p}: what is {p} * 7?", "output": "...", "score": float(a), "step": step,
                      "acc": int(a)} for a in acc]
        order = rng.permutation(len(rows))
        with open(folder / f"{step}.jsonl", "w") as fh:
            fh.write("".join(json.dumps(rows[i]) + "\n" for i in order))


def baseline(files: list[Path]) -> float:
    t = time.perf_counter()
    for f in files:
        for line in f.read_text().split("\n"):
            if line:
                json.loads(line)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--G", type=int, default=4)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_plain(tmp / "groups.jsonl", args.groups, args.G, rng)
        make_verl(tmp / "rollouts", args.groups, args.G, rng)
        print(f"{args.groups} groups, G = {args.G}")
        print(f"{'format':>6}  {'MB':>6}  {'json.loads s':>12}  {'ingest s':>9}  {'groups/s':>10}  "
              f"{'baseline groups/s':>17}  {'ratio':>5}  {'write s':>7}")
        for fmt, path, files in (("jsonl", tmp / "groups.jsonl", [tmp / "groups.jsonl"]),
                                 ("verl", tmp / "rollouts", sorted((tmp / "rollouts").glob("*.jsonl")))):
            mb = sum(f.stat().st_size for f in files) / 1e6
            tb = baseline(files)
            t = time.perf_counter()
            rec = ingest(path, fmt, max_bytes=2 * 1024 ** 3)
            ti = time.perf_counter() - t
            assert len(rec.groups["step"]) == args.groups
            t = time.perf_counter()
            write_record(tmp / f"rec-{fmt}", rec)
            tw = time.perf_counter() - t
            print(f"{fmt:>6}  {mb:6.1f}  {tb:12.2f}  {ti:9.2f}  {args.groups / ti:10.0f}  "
                  f"{args.groups / tb:17.0f}  {ti / tb:5.2f}  {tw:7.2f}")


if __name__ == "__main__":
    main()
