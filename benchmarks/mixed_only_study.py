"""Logs of the mixed share only, on the stall study's loops: the drift shapes (each step's shift on one mirror
branch) against the drift maps, paired on the same seeds.

The study's loops (:mod:`grpo_lab.testing.stall_study`: 500 prompts, K 8, 64 prompts a round, 40 trained, cap 3)
logged for the first 60 steps as a tracker that gives the mixed share only: ``zero_std`` (TRL's
``frac_reward_zero_std`` alone) or ``rounds`` (verl's ``train/num_gen_batches`` alone, the batch sizes known). Per
loop, from those 60 rows:

* **first stall** (the loop's first step at its cap, None: none by step 600): the drift shapes' stall risk
  (:func:`grpo_lab.sims.doctor.drift_shares.shares_risk`, its 90% interval) against the drift map's first cap hit
  (:func:`grpo_lab.sims.doctor.scalars_forecast.stall_forecast`, its 95% predictive interval), "none by 600" read
  as 601 on both sides (:func:`grpo_lab.testing.stall_study.covered`);
* **expiry** (the mixed share under 0.5): each model's 95% interval against the proxy of
  ``benchmarks/expiry_band_study.py`` (the first step whose five logged rows around it average under 0.5, from the
  loop's own logged mixed share over every step it ran);
* **band**: each model's 90% predictive band of the mixed share scored on every later row the loop logs, at its
  own groups (the drift maps' as ``expiry_band_study.py`` draws it; the shapes' :func:`.drift_expiry.drift_band`).

Resumable: rows appended to ``--cache`` (JSON lines), skipped when there.

    nice python benchmarks/mixed_only_study.py [--regimes logit-up plateau] [--modes zero_std rounds] [--seeds 4]
        [--cache FILE] [--table]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from expiry_band_study import THRESHOLD, _covers, _observed_expiry
from grpo_lab.sims.doctor.backtest import observed_mixed
from grpo_lab.sims.doctor.drift_expiry import drift_band
from grpo_lab.sims.doctor.drift_shares import logged_rows, shares_drift, shares_expiry, shares_risk
from grpo_lab.sims.doctor.loop_sim import simulate_loop, to_scalars
from grpo_lab.sims.doctor.predictive import band
from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_forecast import _draw_mixed, expiry_forecast, mixed_dispersion, quasi_fit, \
    stall_forecast
from grpo_lab.sims.scalars_record import scalars_record
from grpo_lab.testing.stall_study import (CAP, GEN_BATCH, K, LOGGED, MAX_STEPS, REGIMES, SETTINGS, TRAIN_BATCH,
                                          clopper_pearson, covered, loop_options, prompt_set)

MODES = ("zero_std", "rounds")
DEFAULT_REGIMES = ("logit-up", "plateau", "logit-down", "power", "step")


def logged(sim: dict, mode: str):
    """The first LOGGED steps of the loop as a tracker logging the mixed share only (module docstring)."""
    if mode == "zero_std":
        return step_shares(to_scalars(sim, LOGGED, columns=("frac_reward_zero_std",), trainer="trl"))
    rec = to_scalars(sim, LOGGED, columns=())
    r = rec.steps["scalar/gen_batches"]
    rr = scalars_record("rounds-only", np.asarray(rec.steps["step"]), {"rounds": np.asarray(r, float)},
                        num_generations=K, n_prompts=int(sim["n_prompts"]), source=rec.meta["source"])
    return step_shares(rr, settings=SETTINGS)


def one(regime: str, mode: str, seed: int) -> dict:
    shape, params, _, _ = REGIMES[regime]
    sim = simulate_loop(*prompt_set(regime, seed), K, GEN_BATCH, TRAIN_BATCH, CAP, shape, params, MAX_STEPS,
                        seed=seed, **loop_options(regime, seed))
    out = {"regime": regime, "mode": mode, "seed": seed, "truth": sim["stall_step"]}
    if sim["stall_step"] is not None and sim["stall_step"] <= LOGGED:
        return {**out, "stalled_in_log": True}
    d_fit = logged(sim, mode)
    d_all = step_shares(to_scalars(sim, None))
    obs = observed_mixed(d_all)
    later = np.flatnonzero((d_all.step > LOGGED) & np.isfinite(obs))
    steps, n, y = d_all.step[later].astype(float), d_all.n[later], obs[later]
    truth_expiry = _observed_expiry(d_all.step, obs)

    def held(b):
        return int(np.sum((y >= b["lo"] - 1e-12) & (y <= b["hi"] + 1e-12)))

    def exp(e):
        return {"step": e["step"], "interval": e["interval"], "already": e["status"].startswith("already below")}

    t = time.process_time()
    fit = best_fit(fit_models(d_fit))
    sf = stall_forecast(fit, SETTINGS)
    hit = sf.get("first_cap_hit") or {}
    e0 = expiry_forecast(fit, THRESHOLD, predictive=False)
    b0 = band(_draw_mixed(quasi_fit(fit), steps, K, 240, 0), n, 0.9, mixed_dispersion(fit)) if later.size else None
    cpu0 = time.process_time() - t
    t = time.process_time()
    ev, dr = shares_drift(d_fit)
    r = shares_risk(d_fit, SETTINGS, MAX_STEPS, n_prompts=int(sim["n_prompts"]), seed=seed, measured=(ev, dr))
    fs = r["first_stall"]
    e1 = shares_expiry(d_fit, THRESHOLD, (ev, dr), predictive=False)
    b1 = drift_band(dr, ev, steps, n, logged_rows(d_fit)) if later.size and np.isfinite(observed_mixed(d_fit)).any() \
        else None
    if later.size and b1 is None:  # rounds only: no logged share for phi (1)
        b1 = drift_band(dr, ev, steps, n, {"step": np.array([]), "mixed": np.array([]), "groups": np.array([])})
    cpu1 = time.process_time() - t
    pred = hit.get("predictive") or [None, None]
    return {**out, "stalled_in_log": False, "truth_expiry": truth_expiry, "later_rows": int(later.size),
            "maps": {"model": fit["model"], "median": hit.get("median"), "lo": pred[0], "hi": pred[1],
                     "expiry": exp(e0), "held": None if b0 is None else held(b0), "cpu_s": cpu0},
            "shapes": {"median": fs["median"], "lo": fs["interval"][0], "hi": fs["interval"][1], "cause": r["cause"],
                       "weights": dr["weights"]["weights"], "expiry": exp(e1),
                       "held": None if b1 is None else held(b1), "cpu_s": cpu1}}


def _cell(rows, key) -> str:
    fc = [r for r in rows if not r["stalled_in_log"]]
    k = sum(covered({"truth": r["truth"], **r[key]}) for r in fc)
    lo, hi = clopper_pearson(k, len(fc))
    return f"{k}/{len(fc)} [{100 * lo:.0f}, {100 * hi:.0f}]"


def table(rows: list[dict]) -> str:
    out = ["| regime | logged | seeds (stalled in log) | first stall | maps: 95% covers | shapes: 90% covers | "
           "maps: expiry covers | shapes: expiry covers | maps: band held | shapes: band held | CPU s maps / shapes |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for mode in MODES:
        for regime in REGIMES:
            cell = [r for r in rows if r["regime"] == regime and r["mode"] == mode]
            if not cell:
                continue
            fc = [r for r in cell if not r["stalled_in_log"]]
            tr = [r["truth"] for r in cell if r["truth"] is not None]
            truth = f"{min(tr)}-{max(tr)}" if tr else "none"
            ex = [sum(_covers(r[k]["expiry"], r["truth_expiry"]) for r in fc) for k in ("maps", "shapes")]
            tot = sum(r["later_rows"] for r in fc)
            held = [sum(r[k]["held"] or 0 for r in fc) for k in ("maps", "shapes")]
            cpu = [np.mean([r[k]["cpu_s"] for r in fc]) if fc else float("nan") for k in ("maps", "shapes")]
            out.append(f"| {regime} | {mode} | {len(cell)} ({len(cell) - len(fc)}) | {truth} | {_cell(cell, 'maps')} | "
                       f"{_cell(cell, 'shapes')} | {ex[0]}/{len(fc)} | {ex[1]}/{len(fc)} | "
                       f"{held[0]}/{tot} | {held[1]}/{tot} | {cpu[0]:.1f} / {cpu[1]:.1f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--regimes", nargs="*", default=list(DEFAULT_REGIMES))
    ap.add_argument("--modes", nargs="*", default=list(MODES))
    ap.add_argument("--cache", type=Path, default=Path(__file__).parent / "results" / "mixed_only_study.jsonl")
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    load = lambda: [json.loads(x) for x in args.cache.read_text().splitlines()] if args.cache.exists() else []  # noqa: E731
    done = {(r["regime"], r["mode"], r["seed"]) for r in load()}
    if not args.table:
        for seed in range(args.seeds):
            for regime in args.regimes:
                for mode in args.modes:
                    if (regime, mode, seed) in done:
                        continue
                    row = one(regime, mode, seed)
                    with args.cache.open("a") as fh:
                        fh.write(json.dumps(row, default=float) + "\n")
                    print(json.dumps({k: row.get(k) for k in ("regime", "mode", "seed", "truth")}),
                          {k: (row[k]["median"], row[k]["lo"], row[k]["hi"], row[k]["expiry"]["interval"])
                           for k in ("maps", "shapes") if k in row}, row.get("truth_expiry"), flush=True)
    print(table(load()))


if __name__ == "__main__":
    main()
