"""The stall forecast from scalars against a direct simulation of the trainer's loop (docs/doctor.md, "The doctor on
scalars").

Per regime and replicate: ``scalars_sim.simulate_dapo`` runs DAPO dynamic sampling step by step (rounds of B fresh
prompts of a Beta population under a logit-linear drift, K rollouts each, mixed groups kept until T, at most C
rounds; the run stops at the first step over the cap) and logs the shares over the drawn groups. The scalars of
the first W steps are fitted (``scalars_fit``) and the stall forecast (``scalars_forecast.stall_forecast``, the
verl settings B, T, C) is compared with the step at which the simulated run actually hit its cap: the forecast's
median first step over the cap, its predictive 95% interval (fit uncertainty and the trainer's own randomness)
and whether that interval holds the simulated step.

    python benchmarks/scalars_stall.py [--replicates 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from grpo_lab.sims.doctor.scalars_fit import fit_scalars, step_shares
from grpo_lab.sims.doctor.scalars_forecast import stall_forecast
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.record import RunRecord

K, B, T, CAP = 8, 96, 64, 3
#: regime -> (alpha, beta, rate per step, steps watched W, steps simulated at most)
REGIMES = {
    "saturation": (1.5, 2.0, 0.03, 60, 600),
    "collapse": (2.0, 1.2, -0.03, 60, 600),
    "slow saturation": (2.0, 2.0, 0.012, 120, 900),
    "never (no drift)": (1.0, 1.0, 0.0, 60, 600),
}


def head(record: RunRecord, n: int) -> RunRecord:
    """The record's first n steps (what a watch would have seen at step n)."""
    return RunRecord(meta=record.meta, groups=record.groups, steps={k: v[:n] for k, v in record.steps.items()})


def one(regime, seed: int) -> dict:
    a, b, rate, W, n_max = regime
    rec, stall = simulate_dapo(a, b, rate, K, n_max, B, T, CAP, seed=seed)
    if stall is not None and stall <= W:
        return {"skipped": True}
    fit = fit_scalars(step_shares(head(rec, W)))
    sf = stall_forecast(fit, {"trainer": "verl", "gen_batch": B, "train_batch": T, "cap": CAP, "pool": None,
                              "K": K, "enable": True, "source": "benchmark"})
    h = sf["first_cap_hit"]
    lo, hi = h["predictive"]
    sim = np.inf if stall is None else stall
    inside = (lo is None or lo <= sim) and (hi is None or sim <= hi) if lo is not None or stall is None else False
    return {"skipped": False, "sim": sim, "median": np.inf if h["median"] is None else h["median"],
            "lo": lo, "hi": hi, "inside": bool(inside), "level": sf["stall"]["0.5"]["step"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=20)
    args = ap.parse_args()
    print(f"K = {K}, gen_batch {B}, train_batch {T}, cap {CAP}; {args.replicates} replicates per regime; the fit sees "
          "the first W steps")
    print("| regime (alpha, beta, rate/step, W) | simulated stall step: median [2.5%, 97.5%] | forecast median "
          "first step over the cap: median over replicates | median abs. error (steps) | predictive 95% interval holds "
          "the simulated step | s per replicate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, reg in REGIMES.items():
        t = time.perf_counter()
        rows = [one(reg, seed) for seed in range(args.replicates)]
        per = (time.perf_counter() - t) / args.replicates
        rows = [r for r in rows if not r["skipped"]]
        sim = np.array([r["sim"] for r in rows])
        med = np.array([r["median"] for r in rows])

        def fmt(x):
            return "never" if not np.isfinite(x) else f"{x:.0f}"

        q = np.quantile(sim, [0.5, 0.025, 0.975], method="inverted_cdf")
        both = np.isfinite(sim) & np.isfinite(med)
        err = f"{np.median(np.abs(sim[both] - med[both])):.1f}" if both.any() else "-"
        print(f"| {name} {reg[:4]} | {fmt(q[0])} [{fmt(q[1])}, {fmt(q[2])}] | {fmt(np.median(med))} | {err} | "
              f"{sum(r['inside'] for r in rows)}/{len(rows)} | {per:.1f} |", flush=True)


if __name__ == "__main__":
    main()
