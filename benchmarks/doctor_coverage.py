"""Coverage of the doctor's 95% intervals for alpha and beta over simulated runs (docs/doctor.md, "Doctor honesty").

Each replicate draws P prompts from Beta(0.7, 1.6), draws each prompt r times as a group of K = 8 rollouts,
fits the single Beta by ML and takes (a) the Fisher intervals (``fit_beta``'s SEs, what the doctor reported
before issue 26) and (b) the prompt-level cluster-bootstrap intervals (``honesty.cluster_bootstrap``, what it
reports now); it prints how often each covers the true alpha and beta, with the Monte Carlo SE of a coverage
of 95% over R replicates.

    python benchmarks/doctor_coverage.py [--replicates 500] [--scenario P:r ...]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from grpo_lab.sims.doctor.fit import fit_beta
from grpo_lab.sims.doctor.groups import RunGroups
from grpo_lab.sims.doctor.honesty import cluster_bootstrap

A, B, K = 0.7, 1.6, 8


def coverage(P: int, r: int, R: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    fisher, cluster = np.zeros((R, 2), bool), np.zeros((R, 2), bool)
    for i in range(R):
        pid = np.repeat(np.arange(P), r)
        S = rng.binomial(K, rng.beta(A, B, P)[pid]).astype(np.int64)
        g = RunGroups(K=K, successes=S, step=np.arange(len(S)), prompt_id=pid, n_prompts=P)
        f = fit_beta(g.counts(), K)
        fisher[i] = (abs(f["alpha"] - A) <= 1.96 * f["se_alpha"], abs(f["beta"] - B) <= 1.96 * f["se_beta"])
        c = cluster_bootstrap(g, f["alpha"], f["beta"], seed=i)
        cluster[i] = (c["interval_alpha"][0] <= A <= c["interval_alpha"][1],
                      c["interval_beta"][0] <= B <= c["interval_beta"][1])
    return {"fisher": fisher.mean(axis=0), "cluster": cluster.mean(axis=0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=500)
    ap.add_argument("--scenario", nargs="*", default=["100:8", "30:10", "400:1"], help="P:r (prompts, draws each)")
    args = ap.parse_args()
    R = args.replicates
    print(f"Beta({A}, {B}), K = {K}, {R} replicates; Monte Carlo SE of a 95% coverage: "
          f"{100 * math.sqrt(0.95 * 0.05 / R):.2f} points")
    print("| prompts x draws (groups) | Fisher: alpha / beta | cluster bootstrap: alpha / beta |")
    print("| --- | --- | --- |")
    for sc in args.scenario:
        P, r = map(int, sc.split(":"))
        c = coverage(P, r, R)
        print(f"| {P} x {r} ({P * r:,}) | {100 * c['fisher'][0]:.1f}% / {100 * c['fisher'][1]:.1f}% | "
              f"{100 * c['cluster'][0]:.1f}% / {100 * c['cluster'][1]:.1f}% |")


if __name__ == "__main__":
    main()
