"""The scalars path's 90% predictive band of the mixed share, forward on simulated loops: drift maps vs drift shapes.

The study's loops (:mod:`grpo_lab.testing.stall_study`: 500 prompts, K 8, 64 prompts a round, 40 trained, cap 3)
logged in tinker's names (all-pass, all-fail, mean reward) for the first 60 steps; the band forecast from those
steps is scored on every row the loop logs after them, up to its stall or step 600 (the stalled step included, as a
trainer logs it): before, the drift map's band (:func:`grpo_lab.sims.doctor.scalars_forecast.predictive_mixed`'s
draws and dispersion, the map ``best_fit`` keeps); after, the drift shapes' band on the shares' measured drift
(:func:`grpo_lab.sims.doctor.drift_expiry.drift_band`, what ``diagnose`` now reports). Each row is scored at its own
groups. Beside it the expiry's 95% interval against the first later step whose five logged rows around it average
a mixed share under 0.5, the logged steps included (a proxy of the truth from the log; none: the loop stalled
or ran out first; "already below" is right where the proxy lies within the 60 logged steps).

Resumable: rows appended to ``--cache`` (JSON lines), skipped when there.

    nice python benchmarks/expiry_band_study.py [--regimes plateau logit-up] [--seeds 8] [--cache FILE] [--table]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from grpo_lab.sims.doctor.backtest import observed_mixed
from grpo_lab.sims.doctor.drift_expiry import drift_band
from grpo_lab.sims.doctor.drift_shares import logged_rows, shares_drift, shares_expiry
from grpo_lab.sims.doctor.loop_sim import simulate_loop, to_scalars
from grpo_lab.sims.doctor.predictive import band
from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_forecast import _draw_mixed, expiry_forecast, mixed_dispersion, quasi_fit
from grpo_lab.testing.stall_study import (CAP, GEN_BATCH, K, LOGGED, MAX_STEPS, OPTIONS, REGIMES, TINKER,
                                          TRAIN_BATCH, loop_options, prompt_set)

#: the drifts the shapes model, then the stall study's prompts that do not move together (its ``OPTIONS``: never
#: solvable / never failed shares, jumps once trained, correlated rollouts, prompts' own rates)
DEFAULT_REGIMES = ("power", "logit-up", "logit-down", "plateau", "step", *OPTIONS)
THRESHOLD, ROLL = 0.5, 5


def _observed_expiry(step, mixed):
    """The first step whose ROLL logged rows around it average a mixed share under THRESHOLD (None: none)."""
    ok = np.isfinite(mixed)
    step, mixed = step[ok], mixed[ok]
    if len(mixed) < ROLL:
        return None
    avg = np.convolve(mixed, np.ones(ROLL) / ROLL, mode="valid")
    i = np.flatnonzero(avg < THRESHOLD)
    return None if not i.size else int(step[i[0] + ROLL // 2])


def one(regime: str, seed: int) -> dict:
    shape, params, _, _ = REGIMES[regime]
    sim = simulate_loop(*prompt_set(regime, seed), K, GEN_BATCH, TRAIN_BATCH, CAP, shape, params, MAX_STEPS,
                        seed=seed, **loop_options(regime, seed))
    kw = dict(columns=tuple(TINKER), raw_names=TINKER, trainer="tinker-cookbook")
    d_fit = step_shares(to_scalars(sim, LOGGED, **kw))
    d_all = step_shares(to_scalars(sim, None, **kw))
    obs = observed_mixed(d_all)
    later = np.flatnonzero((d_all.step > LOGGED) & np.isfinite(obs))
    out = {"regime": regime, "seed": seed, "stall": sim["stall_step"], "later_rows": int(later.size)}
    if not later.size:
        return {**out, "skipped": "the loop stalled within the logged steps"}
    steps, n, y = d_all.step[later].astype(float), d_all.n[later], obs[later]
    truth = _observed_expiry(d_all.step, obs)
    t = time.process_time()
    fit = best_fit(fit_models(d_fit))
    b0 = band(_draw_mixed(quasi_fit(fit), steps, K, 240, 0), n, 0.9, mixed_dispersion(fit))
    e0 = expiry_forecast(fit, THRESHOLD, predictive=False)
    cpu0 = time.process_time() - t
    t = time.process_time()
    ev, dr = shares_drift(d_fit)
    b1 = drift_band(dr, ev, steps, n, logged_rows(d_fit))
    e1 = shares_expiry(d_fit, THRESHOLD, (ev, dr), predictive=False)
    cpu1 = time.process_time() - t

    def held(b):
        return int(np.sum((y >= b["lo"] - 1e-12) & (y <= b["hi"] + 1e-12)))

    def exp(e):
        return {"step": e["step"], "interval": e["interval"], "already": e["status"].startswith("already below")}

    return {**out, "truth_expiry": truth, "maps": {"model": fit["model"], "held": held(b0), "expiry": exp(e0),
                                                    "cpu_s": cpu0},
            "shapes": {"held": held(b1), "expiry": exp(e1), "weights": dr["weights"]["weights"], "cpu_s": cpu1}}


def _covers(e, truth):
    """The proxy inside the expiry's 95% interval; "already below" covers a proxy within the logged steps, a
    crossing beyond the horizon (upper bound None) covers a proxy of none (the loop stalled or ran out first)."""
    if e.get("already"):
        return truth is not None and truth <= LOGGED
    big = float(MAX_STEPS * 100)
    lo, hi = e["interval"]
    lo = big if lo is None and e["step"] is None else (lo if lo is not None else -big)
    hi = big if hi is None else hi
    tr = big if truth is None else truth
    return lo <= tr <= hi


def _side(e, truth) -> str:
    """Where a miss of :func:`_covers` lies: "early" (the interval, or "already below", before the proxy) or
    "late"; "" where covered."""
    if _covers(e, truth):
        return ""
    if e.get("already"):
        return "early"
    tr = float(MAX_STEPS * 100) if truth is None else truth
    hi = e["interval"][1]
    return "early" if hi is not None and hi < tr else "late"


def _misses(cell, key) -> str:
    sides = [_side(r[key]["expiry"], r["truth_expiry"]) for r in cell]
    early, late = sides.count("early"), sides.count("late")
    return f" ({early} early, {late} late)" if early or late else ""


def table(rows: list[dict]) -> str:
    out = ["| regime | seeds | later rows | maps: 90% band held | shapes: 90% band held | maps: expiry 95% covers "
           "(proxy) | shapes: expiry 95% covers (proxy) | CPU s maps / shapes |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for regime in REGIMES:
        cell = [r for r in rows if r["regime"] == regime and "skipped" not in r]
        if not cell:
            continue
        tot = sum(r["later_rows"] for r in cell)
        h0, h1 = sum(r["maps"]["held"] for r in cell), sum(r["shapes"]["held"] for r in cell)
        per0 = ", ".join(f"{r['maps']['held']}/{r['later_rows']}" for r in cell)
        per1 = ", ".join(f"{r['shapes']['held']}/{r['later_rows']}" for r in cell)
        c0 = sum(_covers(r["maps"]["expiry"], r["truth_expiry"]) for r in cell)
        c1 = sum(_covers(r["shapes"]["expiry"], r["truth_expiry"]) for r in cell)
        cpu = (np.mean([r["maps"]["cpu_s"] for r in cell]), np.mean([r["shapes"]["cpu_s"] for r in cell]))
        out.append(f"| {regime} | {len(cell)} | {tot} | {h0}/{tot} = {100 * h0 / tot:.0f}% ({per0}) | "
                   f"{h1}/{tot} = {100 * h1 / tot:.0f}% ({per1}) | {c0}/{len(cell)}{_misses(cell, 'maps')} | "
                   f"{c1}/{len(cell)}{_misses(cell, 'shapes')} | "
                   f"{cpu[0]:.1f} / {cpu[1]:.1f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--regimes", nargs="*", default=list(DEFAULT_REGIMES))
    ap.add_argument("--cache", type=Path, default=Path(__file__).parent / "results" / "expiry_band_study.jsonl")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    load = lambda: [json.loads(x) for x in args.cache.read_text().splitlines()] if args.cache.exists() else []  # noqa: E731
    done = {(r["regime"], r["seed"]) for r in load()}
    if not args.table:
        for seed in range(args.seeds):
            for regime in args.regimes:
                if (regime, seed) in done:
                    continue
                row = one(regime, seed)
                with args.cache.open("a") as fh:
                    fh.write(json.dumps(row, default=float) + "\n")
                print(json.dumps({k: row[k] for k in ("regime", "seed", "stall", "later_rows")}), flush=True)
    print(table(load()))


if __name__ == "__main__":
    main()
