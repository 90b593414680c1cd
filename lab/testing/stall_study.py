"""The stall forecast's simulation study (issue 32), shared by ``benchmarks/stall_study.py`` (the full study)
and ``tests/test_stall_study.py`` (a slice of it).

Each cell is a drift regime x a logging mode; each seed draws a prompt set of 500 pass rates from the regime's
Beta, runs verl's DAPO loop on it (:mod:`grpo_lab.sims.doctor.loop_sim`: rounds of 64 prompts, 40 mixed groups
of K = 8 a step, cap 3 rounds) until it first raises at its cap or completes :data:`MAX_STEPS` steps (the
truth), and gives the doctor the first :data:`LOGGED` steps under the mode (every generated group; the trained
groups only, verl's dump; those and ``train/num_gen_batches``). The doctor's forecast
(:func:`grpo_lab.sims.doctor.stall_risk.risk_for_groups`, the code ``diagnose`` runs) is asked for the first
stall up to the same :data:`MAX_STEPS`; "none by then" counts as the value MAX_STEPS + 1 on both sides
(:func:`covered`).
"""

from __future__ import annotations

import time

import numpy as np

from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.loop_sim import MODES, simulate_loop, to_record, to_scalars
from grpo_lab.sims.doctor.stall_risk import risk_for_groups

__all__ = ["REGIMES", "OPTIONS", "TINKER", "STUDY_MODES", "SETTINGS", "prompt_set", "loop_options", "LOGGED", "MAX_STEPS", "one", "covered", "summarise", "table"]

N_PROMPTS, K, GEN_BATCH, TRAIN_BATCH, CAP = 500, 8, 64, 40, 3
LOGGED, MAX_STEPS = 60, 600
#: regime -> (drift shape, its parameters, the Beta of the base pass rates, what it shows)
REGIMES = {
    "power": ("power", {"g": 0.3}, (1.5, 2.5), "saturation, p_t = p_0^(1/(1+0.3 t))"),
    "logit-up": ("logit", {"beta": 0.02}, (1.5, 1.5), "saturation, logit drift +0.02 per step"),
    "logit-down": ("logit", {"beta": -0.02}, (1.5, 1.5), "collapse, logit drift -0.02 per step"),
    "plateau": ("plateau", {"A": 4.0, "lam": 40.0}, (1.5, 1.5), "saturation that levels off, 4 (1 - e^(-t/40))"),
    "step": ("step", {"beta": 0.012, "J": 0.8, "t_jump": 30}, (1.5, 1.5), "step change +0.8 at step 31 on +0.012"),
    "static": ("static", {}, (0.2, 2.0), "static hard set, Beta(0.2, 2.0)"),
    "never": ("logit", {"beta": 0.002}, (1.5, 1.5), "never stalls, logit drift +0.002"),
    # prompts that do not move together (issue 39): regimes the drift model does not assume
    "never-solvable-30": ("logit", {"beta": 0.02}, (1.5, 1.5), "30% of prompts never solvable (p = 0), the rest "
                          "logit drift +0.02"),
    "never-solved-20": ("logit", {"beta": 0.02}, (1.5, 1.5), "20% of prompts never solved (p = 0), the rest logit "
                        "drift +0.02 (the tinker-names regime of issue 39)"),
    "jump-on-train": ("logit", {"beta": 0.01}, (1.5, 1.5), "each prompt's logit jumps +1.5 once it has trained, "
                      "on a drift of +0.01"),
    "correlated": ("logit", {"beta": 0.02}, (1.5, 1.5), "correlated rollouts (intra-group correlation 0.3), "
                   "logit drift +0.02"),
    "rates": ("logit", {"beta": 0.02}, (1.5, 1.5), "prompts learn at different rates (log-normal multipliers, "
              "sd 0.8), logit drift +0.02"),
    "solved-20-down": ("logit", {"beta": -0.02}, (1.5, 1.5), "20% of prompts never failed (p = 1), the rest "
                       "collapse, logit drift -0.02"),
}
#: regime -> the loop's options for prompts that do not move together (:func:`simulate_loop`): ``never`` / ``always``
#: the shares frozen at p = 0 / 1, ``rates_sd`` the sd of the log rate multipliers, ``train_jump``, ``icc``
OPTIONS = {"never-solvable-30": {"never": 0.3}, "never-solved-20": {"never": 0.2}, "jump-on-train": {"train_jump": 1.5}, "correlated": {"icc": 0.3},
           "rates": {"rates_sd": 0.8}, "solved-20-down": {"always": 0.2}}
#: the scalars mode: the shares over every drawn group as tinker-cookbook names them (env/all/by_group/...; no
#: zero-std column, no group), fitted from the scalars alone (``scalars_fit``, the model
#: ``scalars_diagnose`` keeps: ``best_fit``, the group path's leave-future-out chooser) and forecast by ``scalars_forecast.stall_forecast`` (its 95% predictive interval)
TINKER = {"frac_all_pass": "env/all/by_group/frac_all_good", "frac_all_fail": "env/all/by_group/frac_all_bad",
          "reward_mean": "env/all/reward/total"}
STUDY_MODES = (*MODES, "scalars")  #: the logging modes of the study: the record's three and the tracker's scalars
SETTINGS = {"trainer": "verl", "gen_batch": GEN_BATCH, "train_batch": TRAIN_BATCH, "cap": CAP, "cap_effective": CAP,
            "pool": None, "K": K, "enable": True, "source": "study"}


def prompt_set(regime: str, seed: int) -> tuple:
    """The seed's base pass rates (the same prompt set in every mode): the regime's Beta, with its frozen shares
    set to 0 (never solved) and 1 (never failed)."""
    rng = np.random.default_rng(10_000 + seed)
    p0 = rng.beta(*REGIMES[regime][2], N_PROMPTS)
    opt = OPTIONS.get(regime, {})
    if opt.get("never") or opt.get("always"):
        u = np.random.default_rng(20_000 + seed).random(N_PROMPTS)
        p0[u < opt.get("never", 0.0)] = 0.0
        p0[u >= 1.0 - opt.get("always", 0.0)] = 1.0
    return (p0,)


def loop_options(regime: str, seed: int) -> dict:
    """The keyword options of :func:`simulate_loop` for the regime (``frozen``, ``rates``, ``train_jump``, ``icc``)."""
    opt = OPTIONS.get(regime, {})
    out = {}
    if opt.get("never") or opt.get("always"):
        p0 = prompt_set(regime, seed)[0]
        out["frozen"] = (p0 == 0.0) | (p0 == 1.0)
    if opt.get("rates_sd"):
        out["rates"] = np.exp(np.random.default_rng(30_000 + seed).normal(0.0, opt["rates_sd"], N_PROMPTS))
    for key in ("train_jump", "icc"):
        if opt.get(key):
            out[key] = opt[key]
    return out


def one(regime: str, mode: str, seed: int, draws: int | None = None) -> dict:
    """One seed of one cell: the truth and the doctor's forecast."""
    shape, params, ab, _ = REGIMES[regime]
    sim = simulate_loop(*prompt_set(regime, seed), K, GEN_BATCH, TRAIN_BATCH, CAP, shape, params, MAX_STEPS, seed=seed,
                        record_until=LOGGED, **loop_options(regime, seed))
    truth = sim["stall_step"]
    out = {"regime": regime, "mode": mode, "seed": seed, "truth": truth}
    if truth is not None and truth <= LOGGED:
        return {**out, "stalled_in_log": True}
    if mode == "scalars":
        return {**out, "stalled_in_log": False, **_scalars_forecast(sim, seed)}
    rec = to_record(sim, mode, LOGGED)
    groups = run_groups(rec)
    observed = None
    if rec.steps:
        observed = (rec.steps["step"], rec.steps["scalar/train/num_gen_batches"])
    t = time.process_time()
    kw = {} if draws is None else {"draws": draws}
    r = risk_for_groups(groups, SETTINGS, observed, MAX_STEPS, seed=seed, **kw)
    fs = r["first_stall"]
    return {**out, "stalled_in_log": False, "median": fs["median"], "lo": fs["interval"][0], "hi": fs["interval"][1],
            "p_by_horizon": fs["p_by_horizon"], "survivors": r["survivors"], "cause": r["cause"],
            "weights": r["shapes"]["weights"],
            "variants": r["shapes"].get("variants"), "cpu_s": time.process_time() - t}


def _scalars_forecast(sim: dict, seed: int = 0) -> dict:
    """The scalars path's stall forecast of the loop's first :data:`LOGGED` steps logged in tinker's names: the
    shares' per-step likelihood on the group path's grid (:mod:`grpo_lab.sims.doctor.drift_shares`), the group
    path's shapes, chooser and stall risk (its 90% interval), as ``diagnose`` gives it (``stall_forecast.risk``)."""
    from grpo_lab.sims.doctor.drift_shares import shares_risk
    from grpo_lab.sims.doctor.scalars_fit import step_shares

    rec = to_scalars(sim, LOGGED, columns=tuple(TINKER), raw_names=TINKER, trainer="tinker-cookbook")
    t = time.process_time()
    r = shares_risk(step_shares(rec), SETTINGS, MAX_STEPS, n_prompts=int(sim["n_prompts"]), seed=seed)
    fs = r["first_stall"]
    return {"median": fs["median"], "lo": fs["interval"][0], "hi": fs["interval"][1], "level": r["level"],
            "p_by_horizon": fs["p_by_horizon"], "survivors": False, "cause": r["cause"], "weights": r["shapes"]["weights"],
            "variants": r["shapes"].get("variants"), "cpu_s": time.process_time() - t}


def covered(row: dict) -> bool:
    """The truth inside the interval, "none by MAX_STEPS" read as MAX_STEPS + 1 on both sides."""
    big = MAX_STEPS + 1
    truth = big if row["truth"] is None else row["truth"]
    lo = big if row["lo"] is None else row["lo"]
    hi = big if row["hi"] is None else row["hi"]
    return lo <= truth <= hi


def summarise(rows: list[dict]) -> list[dict]:
    """Per cell: n, stalled in the log, coverage and its SE, median |error| of the point forecast, false alarms."""
    out = []
    big = MAX_STEPS + 1
    for regime in REGIMES:
        for mode in STUDY_MODES:
            cell = [r for r in rows if r["regime"] == regime and r["mode"] == mode]
            if not cell:
                continue
            fc = [r for r in cell if not r["stalled_in_log"]]
            cov = float(np.mean([covered(r) for r in fc])) if fc else float("nan")
            err = [abs((big if r["median"] is None else r["median"]) - (big if r["truth"] is None else r["truth"]))
                   for r in fc]
            truths = [r["truth"] for r in cell if r["truth"] is not None]
            out.append({"regime": regime, "mode": mode, "seeds": len(cell), "stalled_in_log": len(cell) - len(fc),
                        "forecast": len(fc), "coverage": cov,
                        "coverage_se": float(np.sqrt(0.9 * 0.1 / len(fc))) if fc else float("nan"),
                        "coverage_ci": clopper_pearson(sum(covered(r) for r in fc), len(fc)),
                        "level": fc[0].get("level", 0.9) if fc else 0.9,
                        "median_abs_error": float(np.median(err)) if err else float("nan"),
                        "truth_range": [min(truths), max(truths)] if truths else None,
                        "no_stall_by_horizon": sum(r["truth"] is None for r in cell),
                        "false_alarm": float(np.mean([r["median"] is not None for r in fc])) if regime == "never" and fc
                        else None,
                        "mean_p_by_horizon": float(np.mean([r["p_by_horizon"] for r in fc]))
                        if fc and fc[0]["p_by_horizon"] is not None else float("nan"),
                        "cpu_s": float(np.mean([r["cpu_s"] for r in fc])) if fc else float("nan")})
    return out


def clopper_pearson(k: int, n: int, level: float = 0.95) -> list:
    """The exact (Clopper-Pearson) ``level`` interval of a binomial proportion k / n ([nan, nan] for n = 0)."""
    from scipy.stats import beta

    if n == 0:
        return [float("nan"), float("nan")]
    t = (1 - level) / 2
    return [float(beta.ppf(t, k, n - k + 1)) if k > 0 else 0.0, float(beta.ppf(1 - t, k + 1, n - k)) if k < n else 1.0]


def table(summary: list[dict]) -> str:
    """The study's table: per cell the seeds, the truth's range, the coverage with its exact 95% interval (the
    scalars mode's interval is its 95% predictive one, said in the cell), the median error, P(stall by 600), CPU."""
    lines = ["| regime | logged | seeds (stalled in the log) | truth: first stall | 90% interval covers [95% CI] | "
             "median abs. error (steps) | P(stall by 600), mean | CPU s / fit |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in summary:
        tr = c["truth_range"]
        truth = (f"{tr[0]}-{tr[1]}" if tr else "none") + (f", none x{c['no_stall_by_horizon']}"
                                                          if tr and c["no_stall_by_horizon"] else "")
        lo, hi = c["coverage_ci"]
        cov = (f"{100 * c['coverage']:.0f}% ({round(c['coverage'] * c['forecast'])}/{c['forecast']}) "
               f"[{100 * lo:.0f}, {100 * hi:.0f}]" + (" (its 95% interval)" if c["level"] != 0.9 else ""))
        fa = f"; false alarm {100 * c['false_alarm']:.0f}%" if c["false_alarm"] is not None else ""
        lines.append(f"| {c['regime']} | {c['mode']} | {c['seeds']} ({c['stalled_in_log']}) | {truth} | {cov}{fa} | "
                     f"{c['median_abs_error']:.0f} | {c['mean_p_by_horizon']:.2f} | {c['cpu_s']:.1f} |")
    return "\n".join(lines)
