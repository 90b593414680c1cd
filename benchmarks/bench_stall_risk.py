"""Benchmark: the stall risk (issue 32). Prints, beside a baseline from the same run:

* the forecast for the lab's own population (Beta(2, 3), 600 prompts, K = 8; verl's loop, 64 prompts a round,
  40 groups a step, cap 3; logit drift +0.02 a step) over 1,000 future steps
  (:func:`grpo_lab.sims.doctor.stall_risk.population_risk`; target under 100 ms);
* the fitted risk with its bootstrap (:func:`grpo_lab.sims.doctor.stall_risk.risk_for_groups`) on a 200,000-group
  record (1,000 steps x 200 groups) and on the 60-step study record, CPU seconds of this process.

The baseline: one ``grpo_lab.sims.doctor.fit.fit_beta`` of the same record's cell counts, timed here.
``diagnose`` as a whole (the risk included) on 200,000 groups: ``python benchmarks/bench_doctor.py --groups 200000``.

    python benchmarks/bench_stall_risk.py
"""

from __future__ import annotations

import os
import time

import numpy as np

from grpo_lab.sims.doctor.fit import fit_beta
from grpo_lab.sims.doctor.groups import RunGroups
from grpo_lab.sims.doctor.stall_risk import population_risk, risk_for_groups

SETTINGS = {"gen_batch": 64, "train_batch": 40, "cap": 3, "cap_effective": 3, "pool": None, "enable": True}


def _cpu(fn, repeats=1):
    t = time.process_time()
    for _ in range(repeats):
        out = fn()
    return (time.process_time() - t) / repeats, out


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    s, r = _cpu(lambda: population_risk(2.0, 3.0, 8, SETTINGS, "logit", {"beta": 0.02}, np.arange(1000), 600), 20)
    print(f"lab population, 1,000 steps: {1000 * s:.1f} ms CPU (target 100 ms); P(stall by step 200) "
          f"{r['cumulative'][200]:.3f}")
    rng = np.random.default_rng(0)
    steps = np.repeat(np.arange(1000), 200)
    pid = rng.integers(0, 5000, len(steps))
    alpha = rng.normal(-0.5, 2.0, 5000)
    p = 1 / (1 + np.exp(-(alpha[pid] + 2.0 * steps / 999)))
    g = RunGroups(K=8, successes=rng.binomial(8, p), step=steps, prompt_id=pid, n_prompts=5000)
    base, _ = _cpu(lambda: fit_beta(g.counts(), 8))
    s, r = _cpu(lambda: risk_for_groups(g, SETTINGS, None, 3000))
    print(f"200,000 groups, 1,000 steps: risk {s:.2f} s CPU (baseline: one beta-binomial fit {base:.3f} s); first "
          f"stall {r['first_stall']['median']} {r['first_stall']['interval']}")


if __name__ == "__main__":
    main()
