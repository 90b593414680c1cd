r"""The run doctor in one call: fit, check, what-ifs, forecast, skip/reallocate, prompt lists.

:func:`diagnose` takes a :class:`~grpo_lab.sims.record.RunRecord` and returns one
plain dict (strict-JSON-able through :func:`grpo_lab.sims.jsonable.jsonable`):

``run``                  name, groups, steps, prompts, K, whether rewards were binarised
``fit``                  the single-Beta ML fit of all groups (``alpha``, ``beta``, SEs, GOF); ``fit.cluster``
                         its prompt-level bootstrap SEs and 95% intervals, which hold where prompts repeat
                         (:mod:`.honesty`; a record of fewer than 9 distinct prompts is refused there)
``mixture``              the two-component fit (or why not), ``model`` the one BIC prefers
``pooled``               prompt-pooled Beta and mixture over the last quarter of the steps, with a check
                         against that stretch's unanimous shares (:mod:`.pooled`)
``correlation``          within-prompt correlation (tau, icc, rho) where prompts repeat
``observed_unanimous``   all-pass / all-fail / total shares at the run's K with 95% intervals
``predicted_unanimous``  the same from the single Beta (and ``predicted_unanimous_mixture``)
``windows``              per-window fits and their checks (:mod:`.windows`)
``what_if``              ``[{K, effective_group_rate, rollouts_per_useful_group, ...}]`` on the
                         preferred model; ``dapo``, ``band``, ``coverage`` (:mod:`.whatif`);
                         ``what_if_recent`` on the last window's Beta, ``what_if_pooled`` on the
                         pooled model
``samplers``             seven samplers side by side on the preferred population at the trainer's sizes, with
                         intervals from the cluster bootstrap's populations (:mod:`.samplers`)
``forecast``             trend, crossing step, interval and backtest (:mod:`.forecast`)
``skip``                 temporal consistency, skip-rule backtest, allocation (:mod:`.skip`)
``prompts``              retire / hard / live lists and counts (:mod:`.prompts`)
``audit``                the trainer's logged scalars recomputed, disagreements with causes, the correctness
                         split and phantom-gradient groups (:mod:`.audit`)
``stall_forecast``       dynamic-sampling rounds per future step and the stall step (:mod:`.stall`), and ``risk``:
                         P(first stall by step n) with the whole fit's uncertainty (:mod:`.stall_risk`)
``cost_forecast``        prompts and rollouts per trained step over the stall forecast's future steps under the
                         trainer's own loop (verl V1, OpenRLHF, ... :mod:`.cost`)
``transitions``          per-prompt all-fail / mixed / all-pass transitions (:mod:`.transitions`)
``lab_query``            URL query that opens the fitted single Beta at the run's K in the live lab
``scalars_fit``          the record's per-step shares diagnosed alone (the scalars doctor's ``only="when"``
                         stages) beside the group-level fit (:func:`.scalars_diagnose.side_by_side`; "not
                         available" where it logs none)
``rules``                the rules from the field's threads that fire, each ``{rule, title, evidence, advice}``
                         (:mod:`.rules`; on a scalars-only record too)
``tracker``              the forecast as the ``grpo_lab/...`` scalars ``watch --emit`` writes (:mod:`.tracker_values`)
``timings``              seconds per stage (``fit`` = the beta-binomial fits, windows included)

A record of per-step scalars only (:func:`grpo_lab.sims.scalars_record.is_scalars_only`) is diagnosed by
:func:`.scalars_diagnose.diagnose_scalars` instead (a dict with ``scalars_only: True``; its keys there).

**Only "when"** (``only="when"``, what the fleet keeps): the stages the one answer to "when" (:func:`.when.when`) and
the tracker's figures (:func:`.tracker_values.tracker_values`) read, run by the same stage functions as the full
diagnosis and nothing else: for a record with groups the groups, the trend forecast and the stall forecast with its
risk; for a scalars-only record the fit (the shares' measured drift, or the drift maps' fits and their choice where
the rows give no side), the tie-share trend, the expiry (without its predictive band) and the stall forecast. Every stage draws from its own seeded generator, so leaving stages out
changes no draw: ``when`` and ``tracker`` equal the full diagnosis's (``tracker`` without ``rules``: the rules are
not fired). ``only="tracker"`` fires the rules too (they read the record and the stall forecast only), so
``tracker`` and ``rules`` equal the full diagnosis's (what ``grpo-lab watch --emit`` writes). The result holds
``run``, the stages' own entries, ``when``, ``tracker``, ``timings`` and ``only``.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import numpy as np

from .._checks import band as check_band
from ..errors import InputError
from ..record import RunRecord
from ..scalars_record import is_scalars_only
from .audit import audit as audit_logged
from .backtest import backtest as run_backtest, backtest_trend
from .correlation import within_prompt_correlation
from .cost import cost_forecast
from .fit import MIXTURE_MIN_K, bic, fit_beta, fit_mixture, share_interval
from .forecast import DEFAULT_THRESHOLD, forecast as run_forecast
from .groups import run_groups
from .honesty import bootstrap_resamples, check_population, cluster_bootstrap
from .pooled import pooled_fit
from .prompts import DEFAULT_RETIRE_AFTER, prompt_lists
from .rewards import classify_groups
from .rules import fire_rules
from .tracker_values import tracker_values
from .samplers import samplers_section
from .scalars_diagnose import diagnose_scalars, side_by_side
from .scalars_fit import step_shares
from .skip import allocation_from_trend, skip_backtest, temporal_consistency
from .stall import for_record as stall_for_record
from .tie_trend import thin_series
from .trainer_config import step_settings
from .transitions import transitions
from .whatif import DEFAULT_BAND, WHAT_IF_K, what_if_K, what_ifs
from .when import when
from .windows import window_fits

__all__ = ["diagnose", "ONLY"]

LAB_DIGITS = 4  #: significant digits of the fitted parameters in the lab link
ONLY = ("when", "tracker")  #: the partial diagnoses (``only``; module docstring)


def _observed(counts: np.ndarray, K: int) -> dict:
    n = counts.sum()
    out = {}
    for key, k in (("all_pass", counts[K]), ("all_fail", counts[0]), ("total", counts[K] + counts[0])):
        lo, hi = share_interval(k, n)
        out[key] = float(k / n)
        out[f"{key}_interval"] = [float(lo), float(hi)]
    return out


def _predicted(fit: dict) -> dict:
    ap, af = fit["predicted_all_pass"], fit["predicted_all_fail"]
    return {"all_pass": ap, "all_fail": af, "total": ap + af}


def diagnose(record: RunRecord, *, tolerance: float | None = None, threshold: float = DEFAULT_THRESHOLD,
             window: int | None = None, stride: int | None = None, batch: int | None = None, band=DEFAULT_BAND,
             retire_after: int = DEFAULT_RETIRE_AFTER, Ks=WHAT_IF_K, trainer_config: dict | None = None,
             num_generations: int | None = None, groups_per_step: int | None = None, backtest: bool = False,
             only: str | None = None) -> dict:
    """Diagnose ``record`` (see the module docstring). Raises InputError for a record the doctor cannot fit.

    Parameters
    ----------
    tolerance : allow non-binary rewards, counting a reward above 0.5 as a pass (see :mod:`.groups`).
    threshold : effective group rate the forecast watches (default 0.5).
    window : steps per check window (default: about 20 windows).
    stride : steps between the starts of check windows (default: ``window``; smaller: rolling windows).
    batch : DAPO batch size in groups (default: the run's mean groups per step).
    band : (lo, hi) difficulty band of the what-if.
    retire_after : all-pass draws in a row that make a retire candidate.
    trainer_config : settings from :func:`.trainer_config.read_trainer_config` for the stall forecast and the
        samplers' sizes (default: the record's own config when it is a grpo-lab dynamic-sampling run), resolved
        once by :func:`.trainer_config.step_settings`.
    backtest : refit the forecast on the first part of the run and score the rest (:mod:`.backtest`; the result's
        ``backtest``: the group trend's, with the per-step shares' fit's under ``backtest.scalars``).
    num_generations, groups_per_step : K and the groups per step of a scalars-only record where it does not
        say them (ignored for a record with groups).
    only : ``"when"`` or ``"tracker"``: the stages those read and nothing else (module docstring); None: all.
    """
    if not (0.0 < float(threshold) < 1.0):
        raise InputError(f"threshold must lie strictly between 0 and 1, got {threshold!r}")
    if only is not None and only not in ONLY:
        raise InputError(f"only must be one of {', '.join(ONLY)} (or None: the whole diagnosis), got {only!r}")
    if is_scalars_only(record):
        out = diagnose_scalars(record, threshold=threshold, trainer_config=trainer_config,
                               num_generations=num_generations, groups_per_step=groups_per_step, batch=batch,
                               backtest=backtest, only="when" if only else None)
        if only:
            out["only"] = only
        return _finish(record, out, None, only)
    lo, hi = check_band(*band)
    t_all = time.perf_counter()
    timings = {}
    groups = run_groups(record, tolerance)
    check_population(groups)
    K = groups.K
    counts = groups.counts()
    steps = np.unique(groups.step)
    if batch is None:
        batch = max(1, int(round(groups.n / len(steps))))
    elif not isinstance(batch, (int, np.integer)) or batch < 1:
        raise InputError(f"batch must be a positive integer, got {batch!r}")
    run = {"name": groups.name, "groups": groups.n, "steps": int(len(steps)), "prompts": groups.n_prompts, "K": K,
           "binarised": groups.binarised, "batch_groups": int(batch), **classify_groups(groups.binarised)}

    t = time.perf_counter()
    fc = run_forecast(groups, threshold, full=not only)
    trend = fc.pop("_trend")
    timings["forecast"] = time.perf_counter() - t
    t = time.perf_counter()
    sizes = step_settings(record.meta, trainer_config, K)  # one dict for the samplers and the stall forecast
    stall = stall_for_record(record, groups, trend, sizes)
    timings["stall"] = time.perf_counter() - t
    if only:
        timings["total"] = time.perf_counter() - t_all
        out = {"run": run, "forecast": fc, "stall_forecast": stall, "timings": timings, "only": only}
        out["when"] = when(out)
        return _finish(record, out, tolerance, only)

    t = time.perf_counter()
    fit = fit_beta(counts, K)
    if K >= MIXTURE_MIN_K:
        mixture = fit_mixture(counts, K)
        mixture["available"] = True
        b1, b2 = bic(fit["loglik"], 2, groups.n), bic(mixture["loglik"], 5, groups.n)
        mixture.update(bic=b2, lr_statistic=2 * (mixture["loglik"] - fit["loglik"]))
        fit["bic"] = b1
        model = "mixture" if b2 < b1 else "beta"
    else:
        mixture = {"available": False,
                   "reason": f"K = {K}: a two-component mixture (5 parameters) needs K >= {MIXTURE_MIN_K}"}
        model = "beta"
    windows = window_fits(groups, window, stride)
    pooled = pooled_fit(groups)
    timings["fit"] = time.perf_counter() - t
    t = time.perf_counter()
    resamples = bootstrap_resamples(groups)
    fit["cluster"] = cluster_bootstrap(groups, fit["alpha"], fit["beta"], resamples=resamples)
    timings["intervals"] = time.perf_counter() - t

    t = time.perf_counter()
    correlation = within_prompt_correlation(groups)
    timings["correlation"] = time.perf_counter() - t

    t = time.perf_counter()
    if model == "mixture":
        pop = [(mixture["w"], mixture["components"][0]["alpha"], mixture["components"][0]["beta"]),
               (1 - mixture["w"], mixture["components"][1]["alpha"], mixture["components"][1]["beta"])]
    else:
        pop = (fit["alpha"], fit["beta"])
    wi = what_ifs(pop, K, batch, lo, hi, Ks)
    recent = windows[-1]
    what_if_recent = what_if_K((recent["alpha"], recent["beta"]), Ks)
    what_if_pooled = what_if_K(pooled["population"], Ks) if pooled["available"] else []
    timings["what_if"] = time.perf_counter() - t

    t = time.perf_counter()
    samplers = samplers_section(pop, K, groups.n_prompts, len(steps), batch, threshold, sizes, resamples)
    timings["samplers"] = time.perf_counter() - t

    t = time.perf_counter()
    skip = {"temporal_consistency": temporal_consistency(groups), "backtest": skip_backtest(groups),
            "allocation": allocation_from_trend(trend)}
    timings["skip"] = time.perf_counter() - t

    t = time.perf_counter()
    lists = prompt_lists(groups, retire_after)
    timings["prompts"] = time.perf_counter() - t

    t = time.perf_counter()
    logged = audit_logged(record)
    timings["audit"] = time.perf_counter() - t
    t = time.perf_counter()
    cost = cost_forecast(stall, sizes)
    moves = transitions(groups)
    timings["cost_transitions"] = time.perf_counter() - t
    t = time.perf_counter()
    partial = {"forecast": fc, "fit": fit, "stall_forecast": stall}
    beside = side_by_side(record, groups, partial, sizes, threshold)
    timings["scalars_fit"] = time.perf_counter() - t
    bt = None
    if backtest:
        t = time.perf_counter()
        bt = backtest_trend(groups)
        try:
            bt["scalars"] = run_backtest(step_shares(record), groups.binarised)  # the model shown beside
        except InputError as exc:
            bt["scalars"] = {"available": False, "reason": str(exc)}
        timings["backtest"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all

    fit_out = {k: v for k, v in fit.items() if k not in ("cell_probs",)}
    out = {
        "run": run,
        "fit": fit_out,
        "cells": {"observed": counts, "fitted": fit["cell_probs"] * groups.n},
        "mixture": {k: v for k, v in mixture.items() if k != "cell_probs"},
        "model": model,
        "correlation": correlation,
        "observed_unanimous": _observed(counts, K),
        "predicted_unanimous": _predicted(fit),
        "windows": windows,
        "pooled": pooled,
        "what_if_population": "mixture" if model == "mixture" else "beta",
        "what_if": wi["K_table"], "dapo": wi["dapo"], "band": wi["band"], "coverage": wi["coverage"],
        "what_if_recent": {"steps": [recent["step_first"], recent["step_last"]],
                           "alpha": recent["alpha"], "beta": recent["beta"], "table": what_if_recent},
        "what_if_pooled": what_if_pooled,
        "samplers": samplers,
        "forecast": fc,
        "skip": skip,
        "prompts": lists,
        "audit": logged,
        "stall_forecast": stall, "cost_forecast": cost, "transitions": moves, "scalars_fit": beside,
        "lab_query": urlencode({"a": f"{fit['alpha']:.{LAB_DIGITS}g}", "b": f"{fit['beta']:.{LAB_DIGITS}g}",
                                "K": K}),
        "timings": timings,
    }
    if mixture.get("available"):
        out["predicted_unanimous_mixture"] = _predicted(mixture)
    if bt is not None:
        out["backtest"] = bt
    out["when"] = when(out)
    return _finish(record, out, tolerance, None)


def _finish(record: RunRecord, out: dict, tolerance: float | None, only: str | None) -> dict:
    """``out`` with its rules fired (not for ``only="when"``) and its tracker values; the rules' seconds are
    timed after the total (the stages before them are the diagnosis proper)."""
    if only != "when":
        t = time.perf_counter()
        out["rules"] = fire_rules(record, out, tolerance=tolerance)
        out["timings"]["rules"] = time.perf_counter() - t
    out["tracker"] = tracker_values(out)
    if out.get("tie_fit"):  # read in full above; what is returned (and printed as JSON) keeps a bounded series
        out["tie_fit"] = thin_series(out["tie_fit"])
    return out
