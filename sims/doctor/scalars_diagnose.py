r"""The doctor on a run known from its per-step scalars: :func:`diagnose_scalars`, and the scalars fit beside
the group-level fit where a record has both (:func:`side_by_side`).

:func:`diagnose_scalars` returns one plain dict (JSON-able through :func:`grpo_lab.sims.jsonable.jsonable`):

``scalars_only``   True (the report renderers dispatch on it)
``run``            name, steps, K (and where it came from), groups per step (and where from), prompts
``fit``            for binary rewards: the shares' measured drift, the one the expiry, its band and the first stall
                   read (:func:`.shares_fit.drift_fit`: the chooser's (variant, shape) pair of largest weight, its
                   population, shape parameters and intervals, ``source`` "drift shapes"); ``fits`` each pair's
                   leave-future-out ``weight`` and ``score``; ``model`` "variant/shape". The drift maps are not
                   fitted on that path. A log most of whose rows give the mixed share only (the zero-std share, the
                   rounds) is measured on one mirror branch (:mod:`.drift`'s "Mixed share only"; ``identified``
                   says the split and the population are not, the cause "not identified"). Otherwise (rewards not
                   binary, or ``mixed_only_shapes`` False on a log of the mixed share only): the preferred drift map's fit
                   (:func:`.scalars_fit.fit_scalars`: the logit map, the power map and the logit map beside a
                   never-solved share, kept by the group path's leave-future-out chooser,
                   :func:`.scalars_fit.best_fit`); ``fits`` each map's log-likelihood, AIC and its leave-future-out
                   ``weight`` and ``score``
``expiry``         the step the mixed share falls below the threshold and its predictive band: for binary rewards
                   from the shares' measured drift, the same drift shapes and draws the stall risk reads
                   (:func:`.drift_shares.shares_expiry`); where a log of the mixed share only is kept on the maps,
                   the drift map's (:func:`.scalars_forecast.expiry_forecast`, with ``shapes_reason``); the tie-share trend's
                   for rewards that are not binary
``stall_forecast`` rounds per step and the stall step for the trainer config: on the measured drift, the expiry's
                   own drawn mixed shares (:func:`.shares_fit.drift_stall_forecast`, ``source`` "drift shapes"),
                   else the drift map's or the tie trend's (:func:`.scalars_forecast.stall_forecast`);
                   for binary rewards with a cap its ``risk``: the first stall by the group path's drift shapes,
                   chooser and stall risk on the shares' per-step likelihood (:func:`.drift_shares.with_risk`), the
                   one first stall :func:`.when.when` says
``samplers``       :func:`.samplers.samplers_section` on the population at the last step (the Beta with the same
                   mean and variance of p as the fitted population there: the measured drift's, or the map's)
``consistency``    checks among the logged shares (zero-std = all-pass + all-fail; shares in [0, 1]; the
                   mean reward within [all-pass, 1 - all-fail])
``audit``          :func:`.audit.audit` (a trainer scalar recomputed from groups: none here, so it lists nothing)
``unavailable``    what needs each group's rewards, one line each
``lab_query``      URL query that opens the last step's population (``samplers_population``) at K in the lab
``timings``        seconds per stage

``only="when"`` (:func:`.diagnose.diagnose`'s, what the fleet keeps): ``run``, ``fit``, ``fits``, ``model``,
``expiry`` (without its predictive band: ``projection.predictive`` None), ``stall_forecast``, ``tie_fit``, ``when``
and ``timings`` only, each as the full diagnosis gives it; for rewards that are not binary without ``fit``, ``fits``
and ``model`` (the tie-share trend gives the expiry and the stall forecast; the drift maps are not fitted).

Changed (issue 39, "One doctor"): the fit section of a sided binary log was the drift maps' fit, fitted beside the
drift shapes that gave its expiry and first stall (about half a 10,000-step log's diagnosis); it is now the
measured drift's chosen pair, so one model gives the fit, the expiry, the stall forecast, the risk and the
samplers' population. The cap rule's changes read the risk (a change of K too); past the risk's horizon
(:data:`.drift_shares.RISK_MAX_STEPS`) the same drift's futures (:func:`.shares_fit.changed_cap_hit`).

K comes from ``num_generations``, else the record (``meta['num_generations']``), else the trainer config;
groups per step from the record's ``groups_per_step`` column, else ``groups_per_step``, else the trainer
config's generation batch (prompts per round: the groups a step logs over when it draws one round). Either
unknown: InputError, one line. A record that logs rounds per step and no share (verl DAPO's
``train/num_gen_batches`` alone) is fitted by the rounds' likelihood (:func:`.drift.rounds_logp`, on the drift
shapes or the maps as above), the batch sizes from the trainer config or flags (missing: InputError naming them);
its groups per step are rounds x gen_batch. The drift maps stay only where a log of the mixed share only is kept on
them (``mixed_only_shapes`` False) and beside a record with groups (:func:`side_by_side`); rewards that are not
binary have the tie-share trend.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .audit import audit as audit_logged
from .backtest import backtest as run_backtest
from .forecast import DEFAULT_THRESHOLD
from .rewards import classify_scalars
from .tie_trend import alternative_expiry, fit_tie_trend, tie_expiry
from .when import when
from .samplers import MAX_PROMPTS, samplers_section
from .scalars_fit import best_fit, fit_models, fit_scalars, population_moments, step_shares, usable_rows
from .scalars_forecast import expiry_forecast, stall_forecast
from .drift_shares import MIXED_ONLY, on_shapes, shares_drift, shares_evidence, shares_expiry, with_risk
from .shares_fit import Z95, drift_fit, drift_stall_forecast, pair_fits
from .trainer_config import resolve_settings, step_settings

__all__ = ["diagnose_scalars", "side_by_side", "scalars_view", "UNAVAILABLE", "beta_at_last"]

#: what the doctor cannot give from scalars, and why
UNAVAILABLE = (
    "prompt lists (retire / hard / live): need each prompt's groups",
    "transitions between visits: need each prompt's groups at each visit",
    "skipping backtest and temporal consistency: need each prompt's history",
    "within-prompt correlation and the prompt-level bootstrap: need prompt identities",
    "the beta-binomial shape check (chi-square over the K + 1 success counts) and the two-component mixture: "
    "need the success count of each group; the shares give two moments per step",
)
BESIDE_DRAWS = 60  #: parameter draws of the drift maps' intervals beside a group-level diagnosis (rewards not binary)
CONSISTENCY_TOL = 1e-3  #: a logged zero-std share further than this from all-pass + all-fail is reported


def beta_at_last(fit: dict) -> tuple[float, float]:
    """(alpha, beta) of the Beta with the mean and variance of the fitted pass rates at the last step (the measured
    drift's fit: :mod:`.shares_fit`'s ``last["population_beta"]``)."""
    if fit.get("source") == "drift shapes":
        return tuple(fit["last"]["population_beta"])
    mo = population_moments(fit["theta"], [1.0], fit["K"], fit["model"])
    m, v = float(mo["mean"][0]), float(mo["second"][0] - mo["mean"][0] ** 2)
    m = min(max(m, 1e-4), 1 - 1e-4)
    total = max(m * (1 - m) / max(v, 1e-9) - 1.0, 1e-3)
    return m * total, (1 - m) * total


def _consistency(steps: dict) -> list[str]:
    """One line per kind of inconsistency among the logged shares."""
    out = []
    get = {k: np.asarray(steps.get(k, []), float) for k in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std",
                                                           "reward_mean")}
    n = len(steps.get("step", []))
    get = {k: v if len(v) == n else np.full(n, np.nan) for k, v in get.items()}
    for k in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std"):
        bad = np.isfinite(get[k]) & ((get[k] < -1e-9) | (get[k] > 1 + 1e-9))
        if bad.any():
            out.append(f"{k} outside [0, 1] at {int(bad.sum())} step(s) (e.g. a share of rollouts times K)")
    both = np.isfinite(get["frac_all_pass"]) & np.isfinite(get["frac_all_fail"]) & np.isfinite(get["frac_reward_zero_std"])
    gap = np.abs(get["frac_reward_zero_std"] - get["frac_all_pass"] - get["frac_all_fail"])
    if np.any(both & (gap > CONSISTENCY_TOL)):
        out.append(f"frac_reward_zero_std differs from all-pass + all-fail at {int(np.sum(both & (gap > CONSISTENCY_TOL)))} "
                   f"step(s) (largest {float(np.max(np.where(both, gap, 0))):.3f}): non-binary rewards, or the shares "
                   "count different groups")
    return out


def _rounds_only(steps: dict) -> bool:
    """The record logs rounds per step (verl's ``train/num_gen_batches``) and no share: the fit reads the rounds."""
    has = lambda k: np.isfinite(np.asarray(steps.get(k, []), float)).any()  # noqa: E731
    return has("rounds") and not any(has(k) for k in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std",
                                                      "reward_mean"))


def _settings_K(settings):
    return settings.get("K") if settings else None


NOT_BINARY = ("the rewards are not binary: pass-rate statements (the Beta population, all-pass / all-fail, the "
              "samplers on the population) do not apply; the tie share (groups whose K rewards all tie) is modelled "
              "with its own trend, and the expiry and the stall forecast are the tie trend's")


def bad_rows(steps: dict) -> str | None:
    """A note counting the rows whose logged shares are NaN or inf (in a column the run does log)."""
    n = len(steps.get("step", []))
    bad = np.zeros(n, bool)
    cols = []
    for k in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean", "groups_per_step"):
        v = np.asarray(steps.get(k, []), float)
        if len(v) != n or not np.isfinite(v).any():
            continue
        b = ~np.isfinite(v)
        if b.any():
            bad |= b
            cols.append(f"{k} {int(b.sum())} ({int(np.isnan(v).sum())} NaN, {int(np.isinf(v).sum())} inf)")
    if not bad.any():
        return None
    return (f"{int(bad.sum())} of {n} rows hold a NaN or inf share and were left out where it matters: "
            + ", ".join(cols))


def diagnose_scalars(record: RunRecord, *, threshold: float = DEFAULT_THRESHOLD, trainer_config: dict | None = None,
                     num_generations: int | None = None, groups_per_step: int | None = None,
                     batch: int | None = None, backtest: bool = False, only: str | None = None,
                     mixed_only_shapes: bool | None = None) -> dict:
    """The doctor on a scalars-only record (see the module docstring). Raises InputError. ``backtest``: refit on
    the first part of the log and score the rest (:mod:`.backtest`; under ``backtest``). ``only="when"``: the
    stages :func:`.when.when` reads and nothing else (module docstring). ``mixed_only_shapes``: a log most of whose
    rows give the mixed share only is measured on the drift shapes (True) or keeps the drift maps (False); default
    :data:`.drift_shares.MIXED_ONLY_SHAPES`."""
    if not (0.0 < float(threshold) < 1.0):
        raise InputError(f"threshold must lie strictly between 0 and 1, got {threshold!r}")
    t_all = time.perf_counter()
    timings = {}
    meta = record.meta
    # the flags over --trainer-config over the sizes kept in the record at ingest
    trainer_config = resolve_settings(meta, trainer_config)
    K_from = "--num-generations" if num_generations else "the record" if meta.get("num_generations") else \
        "the trainer config" if _settings_K(trainer_config) else None
    K = num_generations or meta.get("num_generations") or _settings_K(trainer_config)
    if not K:
        raise InputError("the number of rollouts per prompt (K) is unknown: the record does not say it; give "
                         "--num-generations or a --trainer-config that sets it")
    steps = record.steps or {}
    col = np.asarray(steps.get("groups_per_step", []), float)
    has_col = len(col) and np.isfinite(col).any()
    gps, gps_from = groups_per_step, "--groups-per-step"
    if gps is None and trainer_config is not None and not has_col:
        gps, gps_from = int(trainer_config["gen_batch"]), "the trainer config's generation batch"
    rounds_only = _rounds_only(steps)
    if not has_col and gps is None and not rounds_only:
        raise InputError("the groups per step are unknown: the record does not say them; give --groups-per-step or "
                         "a --trainer-config with the batch sizes")
    d = step_shares(record, num_generations=int(K), groups_per_step=None if rounds_only else gps,
                    settings=trainer_config)
    t = time.perf_counter()
    rewards = classify_scalars(steps, d.K, meta.get("source"))
    not_binary = rewards["rewards"] == "not binary"
    measured = None
    if not not_binary:  # the shares' drift, measured once: the fit, the expiry, its band and the first stall read it
        ev = shares_evidence(d)
        measured = (ev, shares_drift(d, ev)[1]) if on_shapes(ev, mixed_only_shapes) else None
    timings["drift"] = time.perf_counter() - t
    t = time.perf_counter()
    if measured is not None:  # the measured drift's chosen (variant, shape) as the fit: the maps are not fitted
        fit, fits = drift_fit(d, *measured), pair_fits(measured[1])
    elif only and not_binary:  # the tie-share trend says "when": the pass-rate fits are not read
        fits = fit = None
    else:
        fits = fit_models(d)
        fit = best_fit(fits)
        fits = {m: {"loglik": f["loglik"], "aic": f["aic"], "drift": f["drift"], **f["choice"]}
                for m, f in fits.items()}
    n_steps, groups = usable_rows(d) if fit is None else (fit["n_steps"], fit["groups"])
    tie_fit = None
    if not_binary:
        tie = np.where(np.isfinite(d.zero_std), d.zero_std, d.all_pass + d.all_fail)
        tie_fit = fit_tie_trend(d.step, d.n, tie, d.all_pass, d.all_fail)  # two sides where the log splits ties
    timings["fit"] = time.perf_counter() - t
    t = time.perf_counter()
    if not_binary:
        expiry = tie_expiry(tie_fit, threshold)
        # the trend the log cannot rule out: the verdict must hold under it too (when.check_expiry)
        expiry["alternatives"] = alternative_expiry(tie_fit, threshold)
    elif measured is not None:
        expiry = shares_expiry(d, threshold, measured, predictive=not only, keep_draws=True, mixed_only_shapes=True)
    else:
        expiry = {**expiry_forecast(fit, threshold, predictive=not only), "model": "drift map",
                  "shapes_reason": f"{MIXED_ONLY}: the expiry is the drift map's"}
    timings["expiry"] = time.perf_counter() - t
    t = time.perf_counter()
    if measured is not None:  # on the expiry's own drawn futures
        stall = drift_stall_forecast(measured[1], fit, expiry, trainer_config)
        expiry.pop("draws")
    else:
        stall = stall_forecast(tie_fit if not_binary else fit, trainer_config)
    if not not_binary:  # the first stall: the group path's shapes and risk on the shares' likelihood
        stall = with_risk(stall, d, int(meta.get("n_prompts") or 0) or None, measured=measured,
                          mixed_only_shapes=measured is not None)
    timings["stall"] = time.perf_counter() - t
    if batch is None:
        batch = max(1, int(round(float(np.median(d.n[np.isfinite(d.n)])))))
    notes = [x for x in [bad_rows(steps)] if x] + ([NOT_BINARY] if not_binary else [])
    out = {
        "scalars_only": True,
        "run": {"name": d.name, "steps": n_steps, "K": d.K, "K_from": K_from, **rewards, "notes": notes,
                "groups_per_step": float(np.median(d.n[np.isfinite(d.n)])),
                "groups_per_step_from": "the record" if has_col else gps_from, "groups": groups,
                "prompts": int(meta.get("n_prompts") or 0), "batch_groups": int(batch),
                "source": meta.get("source", {})},
        **({} if fit is None else {"fit": fit, "fits": fits, "model": fit["model"]}),
        "expiry": expiry, "stall_forecast": stall,
    }
    if only:
        timings["total"] = time.perf_counter() - t_all
        out["timings"] = timings
        return _with_when(out, tie_fit, None)
    t = time.perf_counter()
    pop = beta_at_last(fit)
    prompts = int(meta.get("n_prompts") or 0) or int(min(MAX_PROMPTS, fit["groups"]))
    samplers = samplers_section(pop, fit["K"], prompts, n_steps, batch, threshold,
                                step_settings(meta, trainer_config, fit["K"]))
    timings["samplers"] = time.perf_counter() - t
    bt = None
    if backtest:
        t = time.perf_counter()
        bt = run_backtest(d, not_binary)
        timings["backtest"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all
    out.update({
        "samplers": samplers, "samplers_population": list(pop), "consistency": _consistency(steps),
        "audit": audit_logged(record), "unavailable": list(UNAVAILABLE), "timings": timings,
        "lab_query": urlencode({"a": f"{pop[0]:.4g}", "b": f"{pop[1]:.4g}", "K": fit["K"]}),
    })
    return _with_when(out, tie_fit, bt)


def _with_when(out: dict, tie_fit: dict | None, bt: dict | None) -> dict:
    """``out`` with the tie-share trend and the backtest where there are, and its one answer to "when"."""
    if tie_fit is not None:
        out["tie_fit"] = tie_fit
    if bt is not None:
        out["backtest"] = bt
    out["when"] = when(out)
    return out


def _last_observed(groups, n_last: int = 10) -> dict:
    """All-pass / all-fail / mixed shares of the groups of the last ``n_last`` steps."""
    steps = np.unique(groups.step)[-n_last:]
    m = np.isin(groups.step, steps)
    S = groups.successes[m]
    return {"steps": [int(steps[0]), int(steps[-1])], "all_pass": float(np.mean(S == groups.K)),
            "all_fail": float(np.mean(S == 0)), "mixed": float(np.mean((S > 0) & (S < groups.K)))}


def scalars_view(record: RunRecord, d) -> RunRecord:
    """The per-step scalars of ``record`` (a record with groups) alone, as a tracker log of the run would hold
    them: a scalars-only record with its steps, its K (``d.K``) and its groups per step (``d.n``: the logged
    column, else the groups the record holds at each step, :func:`.scalars_fit.step_shares`), so
    :func:`diagnose_scalars` reads it as it reads any scalars-only log (``d``: ``step_shares(record)``)."""
    K = int(d.K)
    meta = {**record.meta, "scalars_only": True, "num_generations": K}
    groups = {"step": np.zeros(0, np.int64), "prompt_id": np.zeros(0, np.int64), "rewards": np.zeros((0, K)),
              "advantages": np.zeros((0, K)), "lengths": np.zeros((0, K), np.int64), "kept": np.zeros(0, bool)}
    return RunRecord(meta=meta, groups=groups, steps={**record.steps, "groups_per_step": np.asarray(d.n, float)},
                     evals=record.evals)


def _beside_maps(d, result: dict, used: dict | None, threshold: float) -> tuple[dict, dict, dict]:
    """(fit, expiry, stall forecast) of the drift maps, where the scalars doctor fits none (rewards not binary: its
    expiry and stall are the tie trend's): the logit map from the groups' Beta and trend slope (the cold starts
    where that fails), :data:`BESIDE_DRAWS` draws."""
    g0, fc = result["fit"], result["forecast"]
    start = np.log([max(g0["alpha"], 1e-2), max(g0["beta"], 1e-2)]).tolist() + [float(fc["beta"])]
    fit = fit_scalars(d, start=start)
    return (fit, expiry_forecast(fit, threshold, n_draws=BESIDE_DRAWS),
            stall_forecast(fit, used, n_draws=BESIDE_DRAWS))


def side_by_side(record: RunRecord, groups, result: dict, settings: dict | None, threshold: float) -> dict:
    """The scalars fit of a record that also holds groups, beside ``result`` (the group-level diagnosis).

    The scalars side is the scalars doctor's own reading of the record's per-step shares alone:
    :func:`diagnose_scalars` with ``only="when"`` on :func:`scalars_view` (the one dispatch point: on a binary log
    whose rows give a side, the shares' measured drift gives the fit, the expiry and the stall forecast; the drift
    maps where most rows give the mixed share only), under the settings of the groups' stall forecast, so each
    figure is the one ``diagnose`` gives for the same rows logged alone; ``when`` its one answer (the first stall
    and the checked expiry). Where that diagnosis fits no pass-rate model (rewards not binary: the tie trend's
    expiry), the drift maps' fit (:func:`_beside_maps`).

    Rows: drift (the change per step of the link: the scalars fit's drift over its span, h(last) - h(first) for the
    drift shapes; the trend's slope / its span, logit), mean pass rate, the shares over the last 10 steps with groups
    (observed from the groups, and the scalars fit's mean over those steps), the effective (mixed) rate at the last
    step, the expiry step and the stall step at P(stall) > 0.5 with their intervals. ``{"available": False,
    "reason"}`` where the record logs no per-step shares.

    Changed (issue 39, "one doctor"): the scalars side was always the logit drift map (warm-started from the
    groups' fit, 60 draws), whatever model :func:`diagnose_scalars` reads on the same rows.
    """
    fc = result["forecast"]
    gst = result.get("stall_forecast") or {}
    used = gst.get("settings") if gst.get("available") else settings
    try:
        d = step_shares(record)
        diag = diagnose_scalars(scalars_view(record, d), threshold=threshold, trainer_config=used, only="when")
        if diag.get("fit") is not None:
            fit, exp, st = diag["fit"], diag["expiry"], diag["stall_forecast"]
        else:
            fit, exp, st = _beside_maps(d, result, used, threshold)
    except InputError as exc:
        return {"available": False, "reason": f"not available: {exc}"}
    last = _last_observed(groups)
    in_last = (fit["series"]["step"] >= last["steps"][0]) & (fit["series"]["step"] <= last["steps"][1])
    w = fit["series"]["groups"][in_last]
    fitted_last = {k: float(np.sum(w * fit["series"][f"fitted_{k}"][in_last]) / np.sum(w)) if in_last.any() else None
                   for k in ("all_pass", "all_fail", "mixed")}
    s0, s1 = fit["steps"]
    trend_span = max(fc["series"]["step"][-1] - fc["series"]["step"][0], 1)
    per_step = fit["drift"] / max(s1 - s0, 1)
    lo, hi = fit["intervals"]["drift"]
    se_drift = fit["se_drift"] if "se_drift" in fit else (hi - lo) / (2 * Z95)
    link = fit.get("link") or ("logit" if fit["model"].startswith("logit") else f"{fit['model']} map")
    mean_fit = float(np.sum(fit["series"]["groups"] * fit["series"]["fitted_mean"]) / np.sum(fit["series"]["groups"]))
    g_stall = (gst.get("stall") or {}).get("0.5", {}) if gst.get("available") else {}
    s_stall = st["stall"].get("0.5", {}) if st.get("available") else {}
    return {
        "available": True, "fit": fit, "expiry": exp, "stall_forecast": st,
        **({"when": diag["when"]} if diag.get("fit") is not None else {}),
        "rows": [
            {"what": "drift, logit change per 100 steps" if link == "logit" else
             f"drift per 100 steps (groups: logit; scalars: {link})", "groups": 100 * fc["beta"] / trend_span,
             "groups_se": 100 * fc["se_beta"] / trend_span, "scalars": 100 * per_step,
             "scalars_se": 100 * se_drift / max(s1 - s0, 1)},
            {"what": "mean pass rate over the run", "groups": result["fit"]["mean"], "scalars": mean_fit},
            *({"what": f"{k.replace('_', '-')} share, steps {last['steps'][0]}-{last['steps'][1]}",
               "groups": last[k], "scalars": fitted_last[k], "share": True} for k in ("all_pass", "all_fail", "mixed")),
            {"what": "effective rate at the last step (model)", "groups": fc["rate_now"], "scalars": exp["mixed_now"],
             "share": True},
            {"what": f"expiry step (effective rate < {threshold:g})", "groups": fc["crossing_step"],
             "groups_interval": fc["crossing_interval"], "scalars": exp["step"], "scalars_interval": exp["interval"],
             "step": True},
            {"what": "stall step (P(stall) > 0.5)", "groups": g_stall.get("step"),
             "groups_interval": g_stall.get("interval"), "scalars": s_stall.get("step"),
             "scalars_interval": s_stall.get("interval"), "step": True},
        ]}
