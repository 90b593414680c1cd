"""Coverage of the scalars fit on a DAPO run that logs only its rounds per step (verl's ``train/num_gen_batches``).

Each replicate runs the DAPO loop (``scalars_sim.simulate_dapo``: rounds of ``gen_batch`` fresh prompts from
Beta(alpha, beta) moved by a logit drift, K rollouts each, until ``train_batch`` mixed groups are kept), keeps only
the rounds of the steps that trained (a step that raised at the cap is not logged, as in verl), fits the logit map
by the rounds' likelihood (``scalars_fit.fit_scalars`` on ``step_shares(..., settings=...)``) and checks whether
the 95% intervals hold the truth: the mixed share at the last logged step (what the rounds identify) and the drift
g (the logit change over the logged steps), up to its sign (from the rounds alone (alpha, beta, g) and
(beta, alpha, -g) fit alike), by the fit's profile-likelihood interval (``drift``) and, on the same seeds, by the
Wald interval from the fit's Hessian that it replaced (``drift_wald``). Prints, per scenario, each coverage with its
Clopper-Pearson 95% interval, the seeds and the seconds per replicate.

``--cache FILE`` appends each replicate as a JSON line and skips the (scenario, seed) pairs already there, so an
interrupted run resumes (run it ``nice`` in the background).

    python benchmarks/rounds_coverage.py [--replicates 100] [--seed 0] [--cache FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from grpo_lab.sims.doctor.scalars_fit import DRIFT_BOUNDS, Z95, fit_scalars, population_moments, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.scalars_record import scalars_record

from scipy import stats

#: name -> (alpha, beta, rate per step, K, steps, gen_batch, train_batch, cap)
SCENARIOS = {
    "saturation, no cap": (1.5, 1.5, 0.02, 8, 150, 32, 24, 0),
    "collapse, cap 6": (2.0, 1.2, -0.02, 8, 150, 32, 16, 6),
}


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a binomial proportion k / n."""
    a = (1 - level) / 2
    return (float(stats.beta.ppf(a, k, n - k + 1)) if k > 0 else 0.0,
            float(stats.beta.ppf(1 - a, k + 1, n - k)) if k < n else 1.0)


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
    wlo, whi = np.clip([f["drift"] - Z95 * f["se_drift"], f["drift"] + Z95 * f["se_drift"]], *DRIFT_BOUNDS["logit"])
    ulo, uhi = f["last"]["mixed_interval"]
    return {"drift": bool(lo <= g <= hi or lo <= -g <= hi), "drift_wald": bool(wlo <= g <= whi or wlo <= -g <= whi),
            "mixed_last": bool(ulo <= u <= uhi), "steps": len(d.step), "g": g, "interval": [lo, hi],
            "wald": [float(wlo), float(whi)], "method": f.get("interval_method", {}).get("drift", "wald")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=None, help="JSON lines of replicates: appended to, resumed from")
    ap.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), help="scenario names (default all)")
    args = ap.parse_args()
    done = {}
    if args.cache is not None and args.cache.exists():
        for line in args.cache.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[(row["scenario"], row["seed"])] = row
    for name in args.scenarios:
        sc = SCENARIOS[name]
        hits, secs = [], []
        for seed in range(args.seed, args.seed + args.replicates):
            if (name, seed) not in done:
                t = time.perf_counter()
                row = {"scenario": name, "seed": seed, **replicate(sc, seed), "seconds": time.perf_counter() - t}
                if args.cache is not None:
                    with args.cache.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                done[(name, seed)] = row
            hits.append(done[(name, seed)])
            secs.append(done[(name, seed)]["seconds"])
        cells = []
        for k in ("mixed_last", "drift", "drift_wald"):
            n = sum(h[k] for h in hits)
            lo, hi = clopper_pearson(n, len(hits))
            cells.append(f"{k} {n}/{len(hits)} = {n / len(hits):.0%} [{lo:.0%}, {hi:.0%}]")
        print(f"{name}: seeds {args.seed}..{args.seed + args.replicates - 1}, median {np.median([h['steps'] for h in hits]):.0f} "
              f"steps logged; 95% interval held " + "; ".join(cells) + f"; {np.mean(secs):.1f} s/replicate", flush=True)


if __name__ == "__main__":
    main()
