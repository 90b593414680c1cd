"""Coverage of the scalars fit on a DAPO run that logs only its rounds per step (verl's ``train/num_gen_batches``).

Each replicate runs the DAPO loop (``scalars_sim.simulate_dapo``: rounds of ``gen_batch`` fresh prompts from
Beta(alpha, beta) moved by a logit drift, K rollouts each, until ``train_batch`` mixed groups are kept), keeps only
the rounds of the steps that trained (a step that raised at the cap is not logged, as in verl), fits the logit map
by the rounds' likelihood (``scalars_fit.fit_scalars`` on ``step_shares(..., settings=...)``) and checks whether
the 95% intervals hold the truth: the mixed share at the last logged step (what the rounds identify) and the drift
g (the logit change over the logged steps), up to its sign (from the rounds alone (alpha, beta, g) and
(beta, alpha, -g) fit alike). Prints, per scenario, each coverage with its Wilson 95% interval, the seeds and the
seconds per replicate.

    python benchmarks/rounds_coverage.py [--replicates 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from grpo_lab.sims.doctor.scalars_fit import fit_scalars, population_moments, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.scalars_record import scalars_record

try:
    from scalars_choice import wilson
except ImportError:  # run from elsewhere
    from benchmarks.scalars_choice import wilson

#: name -> (alpha, beta, rate per step, K, steps, gen_batch, train_batch, cap)
SCENARIOS = {
    "saturation, no cap": (1.5, 1.5, 0.02, 8, 150, 32, 24, 0),
    "collapse, cap 6": (2.0, 1.2, -0.02, 8, 150, 32, 16, 6),
}


def rounds_record(rec, stall):
    """The rounds of the steps that trained, as verl's file logger has them (the step that raised not logged)."""
    step = np.asarray(rec.steps["step"])
    r = np.asarray(rec.steps["scalar/gen_batches"], float)
    keep = step < stall if stall is not None else np.ones(len(step), bool)
    return scalars_record("rounds-only", step[keep], {"rounds": r[keep]}, num_generations=rec.meta["num_generations"],
                          source=rec.meta["source"])


def replicate(sc, seed: int) -> dict:
    a, b, rate, K, S, B, T, cap = sc
    rec, stall = simulate_dapo(a, b, rate, K, S, B, T, cap, seed=seed)
    d = step_shares(rounds_record(rec, stall), settings={"gen_batch": B, "train_batch": T, "cap": cap})
    f = fit_scalars(d, "logit")
    g = rate * (d.step[-1] - d.step[0])
    tru = population_moments(np.array([np.log(a), np.log(b), g]), [1.0], K)
    u = 1 - tru["all_pass"][0] - tru["all_fail"][0]
    lo, hi = f["intervals"]["drift"]
    ulo, uhi = f["last"]["mixed_interval"]
    return {"drift": bool(lo <= g <= hi or lo <= -g <= hi), "mixed_last": bool(ulo <= u <= uhi),
            "steps": len(d.step)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for name, sc in SCENARIOS.items():
        t = time.perf_counter()
        hits = [replicate(sc, args.seed + i) for i in range(args.replicates)]
        sec = (time.perf_counter() - t) / args.replicates
        cells = []
        for k in ("drift", "mixed_last"):
            n = sum(h[k] for h in hits)
            lo, hi = wilson(n, len(hits))
            cells.append(f"{k} {n}/{len(hits)} = {n / len(hits):.0%} [{lo:.0%}, {hi:.0%}]")
        print(f"{name}: seeds {args.seed}..{args.seed + args.replicates - 1}, median {np.median([h['steps'] for h in hits]):.0f} "
              f"steps logged; 95% interval held " + "; ".join(cells) + f"; {sec:.1f} s/replicate")


if __name__ == "__main__":
    main()
