"""Speed of the default GRPO run: rollouts/s, steps/s and the split of wall time.

    python benchmarks/bench_trainer.py                 # train the default config (200 steps) in a temp dir
    python benchmarks/bench_trainer.py --steps 50      # a shorter run, same per-step figures
    python benchmarks/bench_trainer.py --estimator sign  # every completion carries advantage: no rows skipped
    python benchmarks/bench_trainer.py --record runs/broad-g4-sign-lr0.0004-s1   # figures from an existing record
    python benchmarks/bench_trainer.py --findings runs            # the findings table of docs/trainer.md

The warm start is timed separately (it is cached per seed after the first run; pass
--no-cache to include it). Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"
    except OSError:
        return "unknown"


def report(rec, sft_s: float | None = None) -> None:
    st = rec.steps
    gen, upd, ev = (float(np.sum(st[k])) for k in ("time_generate_s", "time_update_s", "time_eval_s"))
    wall = float(rec.meta["wall_time_s"])
    n_steps = len(st["step"])
    rollouts = int(np.sum(st["rollouts_generated"]))
    ev_rollouts = int(np.sum(rec.evals["samples"])) * int(rec.meta["n_prompts"])
    print(f"run             {rec.meta['name']}  ({rec.meta['config']['estimator']}, device {rec.meta['device']}, "
          f"{rec.meta.get('torch_threads')} threads)")
    if sft_s is not None:
        print(f"warm start      {sft_s:8.1f} s")
    print(f"wall (training) {wall:8.1f} s for {n_steps} steps  -> {n_steps / wall:6.2f} steps/s")
    print(f"generation      {gen:8.1f} s  ({100 * gen / wall:4.1f}%)  {rollouts / gen:8.0f} rollouts/s")
    print(f"update          {upd:8.1f} s  ({100 * upd / wall:4.1f}%)")
    print(f"evaluation      {ev:8.1f} s  ({100 * ev / wall:4.1f}%)  {ev_rollouts / max(ev, 1e-9):8.0f} rollouts/s "
          f"({len(rec.evals['step'])} evals x {ev_rollouts // max(len(rec.evals['step']), 1)} completions)")
    print(f"other (record, checkpoint) {wall - gen - upd - ev:6.1f} s")
    print(f"load average    {load_average()} (1, 5, 15 min, now)")


def findings(root: str) -> None:
    """Mean and spread (sample sd) over seeds of each shipped configuration, as a Markdown table.

    ``zero_std``, ``all_pass``, ``all_fail``: shares of the groups *trained on* (a dynamic-sampling run
    trains on mixed groups only, so 0 there; its drawn groups are in ``grpo-lab study``'s own table)."""
    from collections import defaultdict

    from grpo_lab.sims.record import group_outcomes, read_record, summarise

    rows = defaultdict(list)
    for path in sorted(p for p in Path(root).iterdir() if (p / "run.json").is_file()):
        if not (path / "run.json").is_file():
            continue
        rec = read_record(path)
        if not rec.meta.get("complete"):
            continue
        s = summarise(rec)
        kept = rec.groups["kept"]
        trained = group_outcomes(rec.groups["rewards"][kept], rec.reward_tolerance)  # never drawn-group shares
        a = rec.groups["advantages"]
        nonzero = np.any(a != 0, axis=1) & rec.groups["kept"]
        last, first = s["evals"][-1], s["evals"][0]
        rows[path.name.rsplit("-s", 1)[0]].append({
            "seed": rec.meta["seed"], "zero_std": trained[0].mean(), "all_pass": trained[1].mean(),
            "all_fail": trained[2].mean(), "d_real": last["d_real"], "d_iid": last["d_iid"],
            "gap": last["d_real"] - last["d_iid"], "never0": float(np.mean(rec.evals["pass_rate"][0] == 0)),
            "always0": float(np.mean(rec.evals["pass_rate"][0] == 1)), "pass0": first["mean_pass_rate"],
            "pass": last["mean_pass_rate"], "gain": last["mean_pass_rate"] - first["mean_pass_rate"],
            "per_kept": s["rollouts_per_kept_group"], "per_signal": s["rollouts_generated"] / max(nonzero.sum(), 1),
        })
    cols = ["zero_std", "all_pass", "all_fail", "d_real", "d_iid", "gap", "never0", "always0", "pass0", "pass",
            "gain", "per_kept", "per_signal"]
    print("| run | seeds | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, rs in rows.items():
        cells = []
        for c in cols:
            v = np.array([r[c] for r in rs])
            sd = v.std(ddof=1) if len(v) > 1 else float("nan")
            cells.append(f"{v.mean():.3f} ± {sd:.3f}" if len(v) > 1 else f"{v.mean():.3f}")
        print(f"| {name} | {','.join(str(r['seed']) for r in rs)} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--estimator", default="dr_grpo")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--record", help="report from this run record instead of training")
    ap.add_argument("--findings", metavar="DIR", help="print the findings table of the runs in DIR")
    ap.add_argument("--no-cache", action="store_true")
    args = ap.parse_args()
    from grpo_lab.sims.record import read_record

    if args.findings:
        findings(args.findings)
        return
    if args.record:
        report(read_record(args.record))
        return
    from grpo_lab.train.config import GRPOConfig
    from grpo_lab.train.loop import train

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        rec = train(GRPOConfig(steps=args.steps, estimator=args.estimator), Path(tmp) / "bench", device=args.device, threads=args.threads,
                    sft_cache=None if args.no_cache else "default")
        total = time.perf_counter() - t0
        report(rec, sft_s=total - float(rec.meta["wall_time_s"]))
        print(f"total           {total:8.1f} s (warm start + training + final eval)")


if __name__ == "__main__":
    main()
