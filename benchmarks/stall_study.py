"""Simulation study of the stall forecast (issue 32): does the 90% interval for the first stall hold the truth?

The setup (regimes, loop sizes, logging modes, the truth, what counts as covered) is
:mod:`grpo_lab.testing.stall_study`'s, shared with ``tests/test_stall_study.py``, which runs a slice of it.

Per cell: seeds whose loop stalled within the logged steps (the record shows it; not forecast), coverage of the
truth by the central 90% interval (target 90% +- 5; its binomial standard error beside), the median absolute
error of the point forecast (the median of the forecast distribution) in steps, and for the never-stall run the
false-alarm rate (a median within the horizon: a stall called more likely than not) and the mean P(stall by the
horizon).

Beside the first stall, ``--modes expiry`` (not in the default modes) scores the group path's expiry as
``diagnose`` gives it with every group logged (:func:`grpo_lab.sims.doctor.forecast.group_expiry`: the one drift
model, the ``prompts`` variant offered where prompts repeat) at the threshold 0.5, its 95% interval against
``expiry_band_study.py``'s proxy of the truth: the first step whose five rows around it average a mixed share (over
every group the loop generated that step, the whole run simulated) under 0.5; and against the set's own crossing
(:func:`set_expiry`, no sampling noise: the first step whose prompt set's expected mixed share under the loop's pass
rates is under 0.5; none for jump-on-train, whose pass rates depend on the loop's own training). Each row keeps the
variants' weights.

Resumable: every (cell, seed) result is appended to ``--cache`` (JSON lines) and skipped when already there; a
second worker on the same cache (``--reverse``: seeds from the last down) skips what the first has written.

    nice python benchmarks/stall_study.py [--seeds 20] [--cache benchmarks/results/stall_study.jsonl] [--table]
        [--regimes ...] [--modes all trained trained+rounds scalars expiry]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from expiry_band_study import THRESHOLD, _covers, _observed_expiry, _side

from grpo_lab.sims.doctor import forecast as group_forecast
from grpo_lab.sims.doctor.drift import PROMPT_VARIANTS
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.loop_sim import simulate_loop, to_record
from grpo_lab.testing.stall_study import (CAP, GEN_BATCH, K, LOGGED, MAX_STEPS, REGIMES, STUDY_MODES, TRAIN_BATCH,
                                          clopper_pearson, loop_options, one, prompt_set, summarise, table)

EXPIRY = "expiry"  #: the mode of the group path's expiry rows (every group logged)
#: the same without the prompts variant (``drift_prompts.MIN_REPEAT`` set above 1 for the call: "too few repeats"),
#: the drift the stall risk measures; to tell what the variant does to the expiry
EXPIRY_NO_PROMPTS = "expiry-noprompts"


def expiry_one(regime: str, seed: int, prompts: bool = True) -> dict:
    """One seed of the group path's expiry: the loop of :func:`one` (the same seed, so the same truth), simulated
    to its stall or MAX_STEPS with every group kept, the proxy from all of it, the forecast from the first LOGGED
    steps' groups. The measured drift is caught on its way into ``group_expiry`` to keep the variants' weights."""
    shape, params, _, _ = REGIMES[regime]
    sim = simulate_loop(*prompt_set(regime, seed), K, GEN_BATCH, TRAIN_BATCH, CAP, shape, params, MAX_STEPS,
                        seed=seed, **loop_options(regime, seed))
    st = sim["step"]
    mixed = ((sim["successes"] > 0) & (sim["successes"] < K)).astype(float)
    steps = np.unique(st)
    share = np.bincount(st, weights=mixed)[steps] / np.bincount(st)[steps]
    out = {"regime": regime, "mode": EXPIRY if prompts else EXPIRY_NO_PROMPTS, "seed": seed, "truth": sim["stall_step"],
           "truth_expiry": _observed_expiry(steps, share)}
    if out["truth"] is not None and out["truth"] <= LOGGED:
        return {**out, "stalled_in_log": True}
    groups = run_groups(to_record(sim, "all", LOGGED))
    caught, measured = [], group_forecast.measured_drift

    def catch(*a, **kw):
        caught.append(measured(*a, **kw))
        return caught[-1]

    from grpo_lab.sims.doctor import drift_prompts

    t = time.process_time()
    group_forecast.measured_drift, repeat = catch, drift_prompts.MIN_REPEAT
    drift_prompts.MIN_REPEAT = repeat if prompts else 1.01
    try:
        e = group_forecast.group_expiry(groups, THRESHOLD, predictive=False, seed=seed)
    finally:
        group_forecast.measured_drift, drift_prompts.MIN_REPEAT = measured, repeat
    w = caught[-1][2]["weights"]
    return {**out, "stalled_in_log": False, "step": e["step"], "interval": e["interval"],
            "already": e["status"].startswith("already below"), "mixed_now": e["mixed_now"],
            "prompts_offered": e["prompts_variant"]["offered"], "variants": w.get("variants"),
            "top_pair": max(w["pairs"], key=w["pairs"].get) if w.get("pairs") else None,
            "cpu_s": time.process_time() - t}


def misses(rows: list[dict]) -> str:
    """Per first-stall cell with a miss: its seeds early (the interval ends before the truth) and late (it starts
    after it), each as seed: truth [lo, hi] ("none by MAX_STEPS" read as MAX_STEPS + 1, as :func:`covered`)."""
    from grpo_lab.testing.stall_study import covered

    out = []
    for regime in REGIMES:
        for mode in STUDY_MODES:
            bad = sorted((r for r in rows if (r["regime"], r["mode"]) == (regime, mode) and not r["stalled_in_log"]
                          and not covered(r)), key=lambda r: r["seed"])
            if not bad:
                continue
            side = {"early": [], "late": []}
            for r in bad:
                big = MAX_STEPS + 1
                truth, hi = (big if r["truth"] is None else r["truth"]), (big if r["hi"] is None else r["hi"])
                side["early" if hi < truth else "late"].append(f"{r['seed']}: {r['truth']} [{r['lo']}, {r['hi']}]")
            out.append(f"{regime} / {mode}: " + "; ".join(f"{k} {', '.join(v)}" for k, v in side.items() if v))
    return "\n".join(out)


def set_expiry(regime: str, seed: int) -> int | None:
    """The first step s (1..MAX_STEPS) whose prompt set's expected mixed share at the loop's pass rates
    (:func:`loop_sim.pass_rates` at offset s - 1; a group binomial, or beta-binomial with the regime's ``icc``) is
    under THRESHOLD; None where none is, or for a regime whose pass rates depend on the loop (``train_jump``)."""
    from scipy.stats import betabinom

    from grpo_lab.sims.doctor.loop_sim import pass_rates

    shape, params, _, _ = REGIMES[regime]
    opt = loop_options(regime, seed)
    if opt.get("train_jump"):
        return None
    p0 = prompt_set(regime, seed)[0]
    for s in range(1, MAX_STEPS + 1):
        p = pass_rates(p0, s - 1, shape, params, opt.get("frozen"), opt.get("rates"))
        unanimous = p ** K + (1 - p) ** K
        if opt.get("icc"):
            c, inner = (1 - opt["icc"]) / opt["icc"], (p > 0) & (p < 1)
            a, b = p[inner] * c, (1 - p[inner]) * c
            unanimous[inner] = betabinom.pmf(0, K, a, b) + betabinom.pmf(K, K, a, b)
        if 1 - unanimous.mean() < THRESHOLD:
            return s
    return None


def expiry_table(rows: list[dict], mode: str = EXPIRY) -> str:
    """Per regime: seeds (stalled in the log), the proxy's range, the 95% interval's coverage of it [exact 95% CI]
    with its misses' side, the median |point - proxy|, the prompts variant's mean weight, CPU s a forecast."""
    out = ["| regime | seeds (stalled in the log) | proxy: mixed share under 0.5 | 95% interval covers the proxy "
           "[95% CI] | misses | set's crossing | covers the set's crossing | misses | median abs. error from the "
           "proxy (steps) | prompts variant: offered, mean weight | CPU s / fit |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for regime in REGIMES:
        cell = [r for r in rows if r["regime"] == regime and r["mode"] == mode]
        fc = [r for r in cell if not r["stalled_in_log"]]
        if not fc:
            continue
        ok = [_covers(r, r["truth_expiry"]) for r in fc]
        sides = [_side(r, r["truth_expiry"]) for r in fc]
        lo, hi = clopper_pearson(sum(ok), len(ok))
        tr = [r["truth_expiry"] for r in fc if r["truth_expiry"] is not None]
        proxy = (f"{min(tr)}-{max(tr)}" if tr else "none") + (f", none x{len(fc) - len(tr)}" if len(tr) < len(fc) else "")
        err = [abs(r["step"] - r["truth_expiry"]) for r in fc
               if not r["already"] and r["step"] is not None and r["truth_expiry"] is not None]
        beyond = sum(r["step"] is None and not r["already"] for r in fc)
        miss = ", ".join(f"{sides.count(s)} {s}" for s in ("early", "late") if sides.count(s)) or "-"
        pw = [sum((r["variants"] or {}).get(v, 0.0) for v in PROMPT_VARIANTS) for r in fc]  # either prior
        exact = [(r, set_expiry(regime, r["seed"])) for r in fc] if regime not in ("jump-on-train",) else []
        ex_ok = [_covers(r, t) for r, t in exact]
        ex_sides = [_side(r, t) for r, t in exact]
        ex_t = [t for _, t in exact if t is not None]
        ex_range = (f"{min(ex_t)}-{max(ex_t)}" if ex_t else "none") if exact else "-"
        ex_cov = f"{100 * np.mean(ex_ok):.0f}% ({sum(ex_ok)}/{len(ex_ok)})" if exact else "-"
        ex_miss = (", ".join(f"{ex_sides.count(s)} {s}" for s in ("early", "late") if ex_sides.count(s)) or "-") \
            if exact else "-"
        out.append(f"| {regime} | {len(cell)} ({len(cell) - len(fc)}) | {proxy} | {100 * np.mean(ok):.0f}% "
                   f"({sum(ok)}/{len(ok)}) [{100 * lo:.0f}, {100 * hi:.0f}] | {miss} | {ex_range} | {ex_cov} | {ex_miss} | "
                   f"{np.median(err) if err else float('nan'):.0f}{f' (beyond the horizon x{beyond})' if beyond else ''} | {sum(r['prompts_offered'] for r in fc)}/{len(fc)}, "
                   f"{np.mean(pw):.2f} | {np.mean([r['cpu_s'] for r in fc]):.1f} |")
    return "\n".join(out)


def _load(cache: Path) -> list[dict]:
    """The cached rows, one per (regime, mode, seed) (the first where two workers both wrote one)."""
    rows = {}
    for line in cache.read_text().splitlines() if cache.exists() else []:
        r = json.loads(line)
        rows.setdefault((r["regime"], r["mode"], r["seed"]), r)
    return list(rows.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--cache", type=Path, default=Path(__file__).parent / "results" / "stall_study.jsonl")
    ap.add_argument("--regimes", nargs="*", default=list(REGIMES))
    ap.add_argument("--modes", nargs="*", default=list(STUDY_MODES))
    ap.add_argument("--table", action="store_true", help="only print the table of what the cache holds")
    ap.add_argument("--reverse", action="store_true", help="seeds from the last down (a second worker, same cache)")
    args = ap.parse_args()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    rows = _load(args.cache)
    done = {(r["regime"], r["mode"], r["seed"]) for r in rows}
    if not args.table:
        order = range(args.seeds - 1, -1, -1) if args.reverse else range(args.seeds)
        for seed in order:  # seed-major: every cell fills up evenly, so a partial run is usable
            for regime in args.regimes:
                for mode in args.modes:
                    if (regime, mode, seed) in done:
                        continue
                    if (regime, mode, seed) in {(r["regime"], r["mode"], r["seed"]) for r in _load(args.cache)}:
                        continue  # done meanwhile by another worker on the same cache
                    row = expiry_one(regime, seed, mode == EXPIRY) if mode in (EXPIRY, EXPIRY_NO_PROMPTS) else \
                        one(regime, mode, seed)
                    rows.append(row)
                    with args.cache.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(json.dumps(row), flush=True)
    rows = _load(args.cache)
    print(table(summarise(rows)))
    print("\nMisses (seed: truth [interval]):\n" + misses(rows))
    for mode, what in ((EXPIRY, "the group path's expiry (every group logged)"),
                       (EXPIRY_NO_PROMPTS, "the same without the prompts variant")):
        if any(r["mode"] == mode for r in rows):
            print(f"\n{what[0].upper()}{what[1:]}:\n" + expiry_table(rows, mode))


if __name__ == "__main__":
    main()
