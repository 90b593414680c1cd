"""The stall risk's blocked survival against the per-step computation, on the same drawn paths (issue 39).

For simulated scalars-only logs (:func:`grpo_lab.sims.doctor.scalars_sim.simulate_shares`, Beta(1.5, 2), K = 8, 96
groups a step, a logit drift; verl's loop with 96 prompts a round, 64 groups to train, a cap of 3 rounds), the shares'
measured drift (:func:`.drift_shares.shares_drift`) is drawn by :func:`.stall_risk.drift_futures` over **every**
future step out to ``--ahead`` (default 20,000), per drawn shape alone and over the chooser's weights. On those
paths:

* per step (the computation before the blocks): q = Phi(x) at every step, survival prod (1 - q), the first stall's
  quantiles the first step whose F reaches 5%, 50%, 95%;
* blocked (:mod:`.risk_blocks`, what :func:`.stall_risk.stall_risk` now does): the same paths read at the grid's
  steps only, log lambda interpolated within each block, the quantiles found within their block.

Printed per case: both medians and intervals, the largest difference of the three in steps and as a share of the
distance past the last logged step, and where the quantiles lie (within :data:`.risk_blocks.FINE` steps, where the
grid is every step, or beyond). The walk's paths read at the grid points are its grid draws exactly; its bridge
between them is what the blocks leave out. ``--draws`` per case (default 240, the risk's own).

Run: ``nice python benchmarks/bench_risk_horizon.py [--ahead 20000] [--draws 240] [--spacing 0.01]``; far out:
``--ahead 200000 --draws 48`` (the per-step paths take draws x ahead x 8 bytes, several times).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from scipy.special import ndtr

from grpo_lab.sims.doctor.drift import H_GRID, SHAPES
from grpo_lab.sims.doctor.drift_shares import shares_drift
from grpo_lab.sims.doctor.risk_blocks import FINE, SPACING, cumulative_hazard, first_step, log_hazard, risk_grid
from grpo_lab.sims.doctor.scalars_fit import step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares
from grpo_lab.sims.doctor.stall_risk import LEVEL, drift_futures, step_z

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "cap_effective": 3, "pool": None, "K": 8}


#: (logged steps, logit drift over them, seed): first stalls about 1,300, 5,600, 5,700, 11,300, 76,000 and 114,000
#: steps past the last logged one (the last two for ``--ahead 200000 --draws 48``)
CASES = ((600, 1.2, 1), (2000, 1.0, 2), (400, 0.25, 3), (3000, 0.8, 4), (1000, 0.05, 5), (3000, 0.1, 6))


def per_step_quantile(F, steps, p):
    i = np.flatnonzero(F >= p)
    return int(steps[i[0]]) if i.size else None


def compare(dr, ev, ahead: int, draws: int, shape: str | None, spacing: float = SPACING, seed: int = 0) -> dict:
    if shape is not None:  # this shape alone (the first variant's population)
        dr = {**dr, "weights": {**dr["weights"], "pairs": {f"beta/{shape}": 1.0}}}
    last, first = int(dr["steps"][-1]), int(dr["steps"][0])
    every = np.arange(last + 1, last + ahead + 1)
    grid = risk_grid(last, last + ahead, spacing=spacing)
    at = np.searchsorted(every, grid)
    X = []
    for tab, _, paths in drift_futures(dr, ev, SETTINGS, (every - first).astype(float), draws,
                                        np.random.default_rng(seed)):
        X.append(step_z(np.interp(paths, H_GRID, tab["u"]), np.interp(paths, H_GRID, tab["u2"]), SETTINGS, None))
    X = np.concatenate(X)
    tail = (1 - LEVEL) / 2
    F_exact = 1.0 - np.mean(np.cumprod(1.0 - ndtr(X), axis=1), axis=0)
    exact = [per_step_quantile(F_exact, every, p) for p in (tail, 0.5, 1 - tail)]
    logl = log_hazard(X[:, at])
    Lam = cumulative_hazard(logl, grid)
    F = 1.0 - np.exp(-Lam).mean(axis=0)
    blocked = [first_step(p, F, Lam, logl, grid) for p in (tail, 0.5, 1 - tail)]
    diffs = [(abs(a - b), abs(a - b) / max(a - last, 1)) for a, b in zip(exact, blocked) if a is not None and b is not None]
    return {"exact": exact, "blocked": blocked, "max_steps": max((d[0] for d in diffs), default=None),
            "max_share": max((d[1] for d in diffs), default=None),
            "beyond_fine": [x is not None and x - last > FINE for x in exact],
            "one_beyond": any((a is None) != (b is None) for a, b in zip(exact, blocked)),  # one within the horizon
            "F_max_diff": float(np.max(np.abs(F - F_exact[at]))), "n": int(X.shape[0]), "last": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ahead", type=int, default=20_000)
    ap.add_argument("--draws", type=int, default=240)
    ap.add_argument("--spacing", type=float, default=SPACING, help="the grid's spacing beyond FINE (a study)")
    args = ap.parse_args()
    print(f"cores visible: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine); "
          f"{args.ahead:,} future steps, {args.draws} draws; grid every step for {FINE:,} steps, then spacing "
          f"{args.spacing:g} x the distance")
    worst_near, worst_far = 0, 0.0
    t0 = time.process_time()
    for n, drift_total, seed in CASES:
        d = step_shares(simulate_shares(1.5, 2.0, drift_total / n, 8, n, 96, seed=seed))
        ev, dr = shares_drift(d)
        for shape in (None, *SHAPES):
            r = compare(dr, ev, args.ahead, args.draws, shape, args.spacing)
            tag = "weighted" if shape is None else shape
            print(f"log of {n:,} steps, drift {drift_total:g}, {tag:>8}: per step {r['exact'][1]} "
                  f"[{r['exact'][0]}, {r['exact'][2]}], blocked {r['blocked'][1]} [{r['blocked'][0]}, "
                  f"{r['blocked'][2]}]; max |diff| {r['max_steps']} steps = "
                  f"{100 * (r['max_share'] or 0):.3f}% of the distance; max |F diff| {r['F_max_diff']:.2e}; "
                  f"beyond {FINE:,}: {r['beyond_fine']}" + ("; A QUANTILE WITHIN THE HORIZON BY ONE ONLY"
                                                               if r["one_beyond"] else ""))
            for x, y, far in zip(r["exact"], r["blocked"], r["beyond_fine"]):
                if x is None or y is None:
                    continue
                if far:
                    worst_far = max(worst_far, abs(x - y) / (x - r["last"]))
                else:
                    worst_near = max(worst_near, abs(x - y))
    print(f"worst within {FINE:,} future steps: {worst_near} steps; beyond: {100 * worst_far:.3f}% of the distance; "
          f"CPU {time.process_time() - t0:.1f} s; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
