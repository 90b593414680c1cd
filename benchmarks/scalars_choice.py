"""How often the scalars path's choice of drift map recovers the map that generated the run (docs/doctor.md).

Each replicate simulates a scalars-only run (``scalars_sim.simulate_shares``: every share logged, or the zero-std
share alone) from one of three truths, fits every drift map (``scalars_fit.fit_models``) and records the map kept by
the leave-future-out chooser the group path uses (``scalars_fit.best_fit``) and, beside it in the same run, the map
the smallest AIC would have kept (the rule before). Prints, per truth, the recovery rate of each rule with its
Wilson 95% interval and the seconds per replicate.

    python benchmarks/scalars_choice.py [--replicates 20] [--logged all|zero_std] [--steps 160] [--groups 48]
"""

from __future__ import annotations

import argparse
import math
import time

from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

#: truth -> (alpha, beta, rate per step, model, stuck share, the map that should be kept)
TRUTHS = {
    "logit": (1.5, 2.5, 0.012, "logit", 0.0, "logit"),
    "power": (1.5, 2.5, 0.03, "power", 0.0, "power"),
    "logit + 25% never solved": (1.5, 2.5, 0.012, "logit", 0.25, "logit_stuck"),
}
LOGGED = {"all": None, "zero_std": ("frac_reward_zero_std",)}


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k / n."""
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def replicate(truth, seed: int, steps: int, groups: int, logged, K: int = 8) -> tuple[str, str]:
    """(map kept by the leave-future-out chooser, map of the smallest AIC) for one simulated run."""
    a, b, rate, model, stuck, _ = truth
    rec = simulate_shares(a, b, rate, K, steps, groups, model=model, seed=seed, stuck=stuck, logged=logged)
    fits = fit_models(step_shares(rec))
    return best_fit(fits)["model"], min(fits.values(), key=lambda f: f["aic"])["model"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--logged", choices=list(LOGGED), default="all")
    ap.add_argument("--steps", type=int, default=160)
    ap.add_argument("--groups", type=int, default=48)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{args.replicates} replicates per truth, seeds {args.seed}..{args.seed + args.replicates - 1}, "
          f"{args.steps} steps x {args.groups} groups, K = 8, logged: {args.logged}")
    for name, truth in TRUTHS.items():
        t = time.perf_counter()
        got = [replicate(truth, args.seed + i, args.steps, args.groups, LOGGED[args.logged])
               for i in range(args.replicates)]
        sec = (time.perf_counter() - t) / args.replicates
        for rule, j in (("leave-future-out", 0), ("AIC (before)", 1)):
            k = sum(g[j] == truth[5] for g in got)
            lo, hi = wilson(k, len(got))
            kept = {m: sum(g[j] == m for g in got) for m in sorted({g[j] for g in got})}
            print(f"{name:26s} {rule:17s} recovered {k}/{len(got)} = {k / len(got):.0%} [{lo:.0%}, {hi:.0%}]  "
                  f"kept {kept}  {sec:.1f} s/replicate")


if __name__ == "__main__":
    main()
