"""Coverage of the scalars-only fit's 95% intervals over simulated runs (docs/doctor.md, "The doctor on scalars").

Each replicate simulates a run of S steps of G groups of K rollouts, prompts drawn afresh from Beta(alpha, beta)
moved by a logit-linear drift (``scalars_sim.simulate_shares``), logs the per-step shares, fits
``scalars_fit.fit_scalars`` on them and checks whether the 95% intervals hold the truth: alpha, beta, the drift
g (the logit change over the run) and the all-pass / all-fail shares at the last step (the truth's own
E[p^K], E[(1 - p)^K] there, by quadrature). Prints, per scenario, the coverage of each with the Monte Carlo
SE of a 95% coverage over R replicates.

    python benchmarks/scalars_coverage.py [--replicates 200] [--logged all|pass_fail|zero_std_mean]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from grpo_lab.sims.doctor.scalars_fit import fit_scalars, population_moments, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

#: name -> (alpha, beta, rate per step, K, steps, groups per step)
SCENARIOS = {
    "saturation": (1.5, 2.0, 0.02, 8, 100, 128),
    "collapse": (2.0, 1.2, -0.03, 8, 100, 128),
    "flat, K = 4": (0.7, 1.6, 0.0, 4, 60, 64),
    "steep, K = 16": (0.8, 3.0, 0.015, 16, 200, 256),
}
LOGGED = {"all": None, "pass_fail": ("frac_all_pass", "frac_all_fail"),
          "zero_std_mean": ("frac_reward_zero_std", "reward_mean")}
KEYS = ("alpha", "beta", "drift", "all_pass_last", "all_fail_last")


def replicate(scenario, seed: int, logged=None) -> dict:
    """{key: covered (bool)} for one simulated run."""
    a, b, rate, K, S, G = scenario
    rec = simulate_shares(a, b, rate, K, S, G, seed=seed, logged=logged)
    f = fit_scalars(step_shares(rec))
    g_true = rate * (S - 1)
    truth = population_moments(np.array([np.log(a), np.log(b), g_true]), [1.0], K)
    iv = f["intervals"]
    last = f["last"]
    return {"alpha": iv["alpha"][0] <= a <= iv["alpha"][1], "beta": iv["beta"][0] <= b <= iv["beta"][1],
            "drift": iv["drift"][0] <= g_true <= iv["drift"][1],
            "all_pass_last": last["all_pass_interval"][0] <= truth["all_pass"][0] <= last["all_pass_interval"][1],
            "all_fail_last": last["all_fail_interval"][0] <= truth["all_fail"][0] <= last["all_fail_interval"][1]}


def coverage(scenario, R: int, logged=None, seed: int = 0) -> dict:
    hits = [replicate(scenario, seed + i, logged) for i in range(R)]
    return {k: float(np.mean([h[k] for h in hits])) for k in KEYS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--logged", choices=list(LOGGED), default="all")
    ap.add_argument("--scenario", nargs="*", default=list(SCENARIOS))
    args = ap.parse_args()
    R = args.replicates
    print(f"{R} replicates per scenario, shares logged: {args.logged}; Monte Carlo SE of a 95% coverage: "
          f"{100 * math.sqrt(0.95 * 0.05 / R):.2f} points")
    print("| scenario (alpha, beta, rate/step, K, steps, groups) | alpha | beta | drift g | all-pass at last step "
          "| all-fail at last step | s per fit |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in args.scenario:
        sc = SCENARIOS[name]
        t = time.perf_counter()
        c = coverage(sc, R, LOGGED[args.logged])
        per = (time.perf_counter() - t) / R
        print(f"| {name} {sc} | " + " | ".join(f"{100 * c[k]:.1f}%" for k in KEYS) + f" | {per:.2f} |", flush=True)


if __name__ == "__main__":
    main()
