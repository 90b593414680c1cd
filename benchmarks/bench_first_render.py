"""A visit's first render: its Bokeh models and the server CPU it costs, this tree beside a baseline commit.

Each tree (this working tree, and ``--baseline REV``'s ``lab/ sims/ train/ trl_recorder/`` from git, main's commit
by default) is assembled as a ``grpo_lab`` package in a temporary folder and measured in its own Python process,
the two processes taking turns: the page a plain visit gets (``build_app({})`` rendered into a Bokeh document)
and a replay link's (``?replay=sign-vs-dr_grpo``), ``--reps`` times each after one warm-up. Figures: the
document's model count and the process CPU time (``time.process_time``) of each build and render, p50 and p95.

Usage: python benchmarks/bench_first_render.py [--baseline main] [--reps 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from grpo_lab.testing.snapshot import PACKAGE_FOLDERS, snapshot
from grpo_lab.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]
QUERIES = {"plain visit": {}, "replay link": {"replay": "sign-vs-dr_grpo"}}

WORKER = r"""
import json, sys, time
from bokeh.document import Document
from panel.io.state import set_curdoc
import grpo_lab
from grpo_lab.app import build_app
reps, queries = int(sys.argv[1]), json.loads(sys.argv[2])
out = {"package": grpo_lab.__file__}
for name, query in queries.items():
    cpu, models = [], 0
    for i in range(reps + 1):
        doc = Document()
        t0 = time.process_time()
        with set_curdoc(doc):
            build_app(dict(query)).server_doc(doc)
        if i:  # the first is the warm-up (imports, caches)
            cpu.append((time.process_time() - t0) * 1000)
        models = len(doc.models)
    out[name] = {"models": models, "cpu_ms": cpu}
print(json.dumps(out))
"""


def assemble(dest: Path, rev: str | None) -> Path:
    """A folder holding a ``grpo_lab`` package: this tree's folders (linked) or ``rev``'s (grpo_lab.testing.snapshot)."""
    pkg = dest / "pkg"
    if rev is not None:
        snapshot(rev, pkg)
    else:
        for folder, target in PACKAGE_FOLDERS.items():  # grpo_lab first, then the folders inside it
            (pkg / target).mkdir(parents=True)  # a folder of links to the tree's files (never links inside the tree)
            for entry in (ROOT / folder).iterdir():
                if entry.name != "__pycache__":
                    (pkg / target / entry.name).symlink_to(entry)
    runs = pkg / "grpo_lab" / "runs"
    if not runs.exists():
        runs.symlink_to(ROOT / "runs")  # the shipped records (data), the same for both
    return pkg


def measure(pkg: Path, reps: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    proc = subprocess.run([sys.executable, "-c", WORKER, str(reps), json.dumps(QUERIES)], env=env, cwd=pkg,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"the worker failed for {pkg}: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="main", help="the baseline commit (default main)")
    ap.add_argument("--reps", type=int, default=20, help="builds per page and tree (default 20)")
    ap.add_argument("--rounds", type=int, default=2, help="turns each tree takes (default 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline], capture_output=True,
                         text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        for sub in ("this", "base"):
            (Path(tmp) / sub).mkdir()
        trees = {"this tree": assemble(Path(tmp) / "this", None), f"baseline {rev}": assemble(Path(tmp) / "base", rev)}
        results = {name: {q: {"models": 0, "cpu_ms": []} for q in QUERIES} for name in trees}
        for _ in range(args.rounds):
            for name, pkg in trees.items():
                got = measure(pkg, args.reps)
                if not got["package"].startswith(str(pkg)):  # an installed grpo_lab would hide the tree's
                    raise SystemExit(f"{name}: imported {got['package']}, not the tree's")
                for q in QUERIES:
                    results[name][q]["models"] = got[q]["models"]
                    results[name][q]["cpu_ms"] += got[q]["cpu_ms"]
    summary = {name: {q: {"models": r["models"], "cpu_p50_ms": round(percentile(r["cpu_ms"], 0.50), 1),
                          "cpu_p95_ms": round(percentile(r["cpu_ms"], 0.95), 1), "n": len(r["cpu_ms"])}
                      for q, r in per.items()} for name, per in results.items()}
    summary["load"] = os.getloadavg()
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    print(f"first render, {args.reps} x {args.rounds} builds per page and tree; load {summary['load'][0]:.2f}")
    for name, per in summary.items():
        if name == "load":
            continue
        for q, s in per.items():
            print(f"  {name:>16}  {q:<12} models {s['models']:>4}   server CPU p50 {s['cpu_p50_ms']:7.1f} ms  "
                  f"p95 {s['cpu_p95_ms']:7.1f} ms  (n={s['n']})")


if __name__ == "__main__":
    main()
