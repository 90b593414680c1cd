"""Coverage of the doctor's samplers intervals (sims/doctor/sampler_intervals.py): records simulated from a known Beta
population, each diagnosed in its samplers section at a trainer's sizes; the share of replicates whose 95%
interval holds the true row value (the same comparison on the true population), per sampler and figure.

    python benchmarks/doctor_sampler_coverage.py [--reps 40] [--prompts 150] [--draws 4] [--a 0.6] [--b 1.2]

Prints one line per (sampler, figure): covered / replicates, the binomial 95% range of that count at a true 95%
coverage, the median interval width and the median |point - truth|. Also the time of one section with its
intervals beside one without, in the same run (wall clock; the machine may be shared: read them side by side).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from grpo_lab.sims.doctor.fit import fit_beta
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.honesty import bootstrap_resamples
from grpo_lab.sims.doctor.samplers import samplers_section
from grpo_lab.testing.beta_record import beta_record

SETTINGS = {"trainer": "flags", "train_batch": 32, "gen_batch": 48, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "bench", "scheme": "rounds", "inflight": None}
FIGURES = ("useful_per_1000", "never_trained", "expiry_t")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--prompts", type=int, default=150)
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--a", type=float, default=0.6)
    ap.add_argument("--b", type=float, default=1.2)
    args = ap.parse_args()
    K = SETTINGS["K"]
    hits, widths, errors, names = {}, {}, {}, None
    t_with = t_without = 0.0
    for seed in range(args.reps):
        g = run_groups(beta_record(args.a, args.b, args.prompts, args.draws, K, 1000 + seed))
        f = fit_beta(g.counts(), K)
        t = time.perf_counter()
        sec = samplers_section((f["alpha"], f["beta"]), K, g.n_prompts, args.draws, args.prompts, 0.5, SETTINGS,
                               bootstrap_resamples(g))
        t_with += time.perf_counter() - t
        t = time.perf_counter()
        samplers_section((f["alpha"], f["beta"]), K, g.n_prompts, args.draws, args.prompts, 0.5, SETTINGS)
        t_without += time.perf_counter() - t
        truth = samplers_section((args.a, args.b), K, g.n_prompts, args.draws, args.prompts, 0.5, SETTINGS)
        names = [r["label"] for r in sec["rows"]]
        for row, true in zip(sec["rows"], truth["rows"]):
            for key in FIGURES:
                iv, tv = row["interval"][key], true[key]
                if iv is None or tv is None:
                    continue
                hi = np.inf if iv[1] is None else iv[1]
                k = (row["label"], key)
                hits.setdefault(k, []).append(iv[0] <= tv <= hi)
                widths.setdefault(k, []).append(hi - iv[0])
                errors.setdefault(k, []).append(abs(row[key] - tv))
    lo, hi = stats.binom.ppf([0.025, 0.975], args.reps, 0.95)
    print(f"Beta({args.a:g}, {args.b:g}), {args.prompts} prompts drawn {args.draws} times, K = {K}, {args.reps} "
          f"replicates; DAPO batch 32, gen 48, cap 3. 95% binomial range of the count at 95% coverage: "
          f"{lo:.0f}-{hi:.0f} of {args.reps}")
    print(f"{'sampler':26s} {'figure':16s} covered  median width  median |error|")
    for name in names:
        for key in FIGURES:
            k = (name, key)
            if k in hits:
                print(f"{name:26s} {key:16s} {sum(hits[k]):3d}/{len(hits[k]):<3d} {np.median(widths[k]):12.4g} "
                      f"{np.median(errors[k]):14.4g}")
    print(f"section with intervals {t_with / args.reps:.3f} s, without {t_without / args.reps:.3f} s (mean wall clock)")


if __name__ == "__main__":
    main()
