r"""The fit section of a scalars-only diagnosis read off the shares' measured drift
(:func:`.drift_shares.shares_drift`): the one model that also gives the expiry, its band and the first stall, reported as a fit.

:func:`drift_fit` takes the (variant, shape) pair the leave-future-out chooser weighs most
(:func:`.drift.model_weights`' ``pairs``; ``beta/<shape>`` where there is one variant) and returns:

``source``      "drift shapes" (what tells it from the drift maps' fit, :func:`.scalars_fit.fit_scalars`)
``model``       "variant/shape" of the chosen pair; ``variant``, ``shape``, ``link``
``population``  the chosen variant's population at the first logged step (``a``, ``b``, ``w0``, ``w1`` and ``rho``
                or ``sigma`` where the variant has one) and ``intervals``: the 2.5% and 97.5% quantiles of
                :data:`POP_DRAWS` draws of its parameter vector x ~ N(x, cov) (:func:`.drift.fit_population`'s
                covariance, the nuisance linear shift profiled out) mapped through the variant's parameters (the masses
                are not normal in x); ``alpha`` / ``beta`` its a and b (the keys the maps' fit has too)
``shape_fit``   the chosen shape's ``params`` and their 95% Wald ``intervals`` (its covariance, already scaled by
                its misfit to the per-step shifts, :func:`.drift.fit_shape`): linear c, slope; power and plateau c,
                slope, log rate; jump c, slope, J at the most probable change point (``change_step``, its weight);
                walk the level and drift per step at the last point and sigma; ``scale`` where the shape has one
``drift``       the fitted shift over the logged run, h(last) - h(first) on the shape's link scale;
                ``intervals["drift"]``: 95% by the delta method on the shape's parameters (linear, power, plateau),
                the predictive sd of h at the last point for the walk and the jump (h at the first point as fitted)
``weights``     the chooser's weights (by shape, variant and pair) and scores (:func:`.drift.model_weights`)
``last``        the fitted all-pass / all-fail / mixed shares at the last logged step: the chosen population's table
                (:func:`.drift.population_table`) at the shape's mean h there; ``*_interval`` the shares over h's
                predictive 95% interval there (the population at its fit; all-pass rises and all-fail falls with h,
                the mixed share's range is taken over the interval); ``observed``; ``population_beta``: the Beta
                with the mean and second moment of p at that step (from the group pmf's factorial moments: the
                samplers' population)
``series``      per row of :func:`.scalars_fit._prepare` (pooled to :data:`.scalars_fit.MAX_ROWS`, as the maps' fit):
                the observed shares, as the maps' fit gives them, and the fitted ones (as ``last``, per row)
``steps``, ``n_steps``, ``groups``, ``used``, ``identified``, ``notes``, ``K``: as the maps' fit has them; on a log
                of the mixed share only ``identified`` says the split and the population are not, and ``notes`` holds
                :data:`MIRROR_NOTE` (the side shown is the one the population's fit landed on).

:func:`pair_fits` is the ``fits`` entry beside it (each pair's weight and score), :func:`changed_cap_hit` the cap
rule's changed forecast where the risk is not drawn, and :func:`drift_stall_forecast` the stall forecast on the expiry's own drawn mixed shares (:func:`.scalars_forecast.stall_from_curves`): the
point curve is the draws' median (the expiry's projection), the intervals the draws', the cause the chosen pair's
all-pass vs all-fail share at the first step with P(stall) over the lowest level.

Edge cases: a covariance that is not finite gives NaN intervals; K = 1 (no second factorial moment) gives the
samplers' Beta a variance of p(1 - p) / 2.
"""

from __future__ import annotations

import numpy as np

from .drift import H_GRID, SHAPES, WALKS, pair_weights, population_params, predict
from .scalars_fit import _observed_last, _prepare, observed_series
from .scalars_forecast import NO_SIDE, stall_from_curves

__all__ = ["POP_DRAWS", "Z95", "MIRROR_NOTE", "chosen_pair", "drift_fit", "pair_fits", "drift_stall_forecast", "shares_on",
           "changed_cap_hit"]

POP_DRAWS = 400  #: draws of the population's parameter vector for its intervals
Z95 = 1.959963984540054  #: the normal's 97.5% quantile
#: the fit section's note on a log that gives the mixed share only (:func:`drift_fit`)
MIRROR_NOTE = ("the log gives the mixed share only (the zero-std share or the rounds per step): the population and its mirror (Beta(b, a), the masses swapped, "
               "under the opposite shift) fit alike, so the side shown (all-pass vs all-fail, the shift's sign) is the "
               "one the population's fit landed on; the mixed share, the expiry and the stall are the same on either")
_SHAPE_PARAMS = {"linear": ("c", "slope"), "power": ("c", "slope", "log_rate"), "plateau": ("c", "slope", "log_rate"),
                 "jump": ("c", "slope", "jump")}


def chosen_pair(dr: dict) -> tuple[str, str]:
    """(variant, shape) of the largest pair weight of a :func:`.drift.measure_drift` result."""
    pairs = pair_weights(dr["weights"])
    v, s = max(pairs, key=pairs.get).split("/")
    return v, s


def _table(dr: dict, variant: str, link: str) -> dict:
    """The fitted population's own table (:func:`.stall_risk.drawn_table` at its fitted ``x``, the logged K)."""
    from .stall_risk import drawn_table

    pop = dr["variants"][variant][link]["population"]
    return drawn_table(pop, pop["x"], link, 0.0, dr["K"])


def _pop_params(pop: dict, x) -> dict:
    if pop.get("variant"):
        from .drift_variants import variant_params

        return variant_params(pop["variant"], x)
    return dict(zip(("a", "b", "w0", "w1"), population_params(x, pop.get("masses", False))))


def _population(pop: dict, seed: int = 0) -> dict:
    keys = [k for k in ("a", "b", "w0", "w1", "rho", "sigma") if k in pop]
    out = {k: float(pop[k]) for k in keys}
    cov = np.asarray(pop["cov"], float)
    if np.all(np.isfinite(cov)):
        xs = np.random.default_rng(seed).multivariate_normal(pop["x"], cov, size=POP_DRAWS, method="eigh")
        got = [_pop_params(pop, x) for x in xs]
        out["intervals"] = {k: [float(v) for v in np.quantile([g[k] for g in got], [0.025, 0.975])] for k in keys}
    else:
        out["intervals"] = {k: [float("nan")] * 2 for k in keys}
    return out


def _shape(sf: dict, s0: float) -> dict:
    if sf["shape"] in WALKS:
        m, P = sf["state"]
        se = np.sqrt(np.maximum(np.diag(P), 0.0))
        params = {"level_last": float(m[0]), "drift_per_step": float(m[1]), "sigma": float(sf["sigma"])}
        iv = {"level_last": [float(m[0] - Z95 * se[0]), float(m[0] + Z95 * se[0])],
              "drift_per_step": [float(m[1] - Z95 * se[1]), float(m[1] + Z95 * se[1])]}
        return {"params": params, "intervals": iv}
    th, se = np.asarray(sf["theta"], float), np.sqrt(np.maximum(np.diag(sf["cov"]), 0.0))
    names = _SHAPE_PARAMS[sf["shape"]]
    out = {"params": {k: float(v) for k, v in zip(names, th)},
           "intervals": {k: [float(v - Z95 * e), float(v + Z95 * e)] for k, v, e in zip(names, th, se)},
           "scale": float(sf["scale"])}
    if sf["shape"] == "jump":
        out.update(change_step=float(s0 + sf["tau_jump"]), change_weight=float(np.max(sf["p"])))
    return out


def _run_drift(sf: dict, tau_last: float) -> tuple[float, list]:
    """h(last) - h(first) and its 95% interval (module docstring)."""
    m, v = predict(sf, [0.0, tau_last])
    d = float(m[1] - m[0])
    if sf["shape"] in (*WALKS, "jump"):
        sd = float(np.sqrt(v[1]))
    else:
        th, eps = np.asarray(sf["theta"], float), 1e-6
        G = np.array([(np.diff(predict({**sf, "theta": th + eps * e}, [0.0, tau_last])[0])[0] - d) / eps
                      for e in np.eye(len(th))])
        sd = float(np.sqrt(max(G @ sf["cov"] @ G, 0.0)))
    return d, [d - Z95 * sd, d + Z95 * sd]


def shares_on(tab: dict, h) -> dict:
    """All-pass, all-fail, mixed shares and the mean pass rate of a population table at shifts ``h``."""
    K = tab["pmf"].shape[1] - 1
    mean = tab["pmf"] @ np.arange(K + 1) / K
    return {"all_pass": np.interp(h, H_GRID, tab["pass"]), "all_fail": np.interp(h, H_GRID, tab["fail"]),
            "mixed": np.clip(np.interp(h, H_GRID, tab["u"]), 0.0, 1.0), "mean": np.interp(h, H_GRID, mean)}


def _beta_of(tab: dict, h: float) -> list:
    """The Beta with the mean and second moment of p of the table at shift ``h`` (module docstring)."""
    K = tab["pmf"].shape[1] - 1
    k = np.arange(K + 1)
    pmf = np.array([np.interp(h, H_GRID, tab["pmf"][:, j]) for j in k])
    m = float(pmf @ k / K)
    m = min(max(m, 1e-4), 1 - 1e-4)
    v = float(pmf @ (k * (k - 1)) / (K * (K - 1))) - m * m if K > 1 else m * (1 - m) / 2
    total = max(m * (1 - m) / max(v, 1e-9) - 1.0, 1e-3)
    return [m * total, (1 - m) * total]


def drift_fit(d, ev, dr: dict, seed: int = 0) -> dict:
    """The fit section of a scalars-only run ``d`` from its measured drift ``dr`` on its evidence ``ev``
    (:func:`.drift_shares.shares_drift`; module docstring)."""
    variant, shape = chosen_pair(dr)
    link = SHAPES[shape]
    sf = dr["variant_fits"][variant][shape]
    tab = _table(dr, variant, link)
    P = _prepare(d)
    s0 = float(dr["steps"][0])
    pop = _population(dr["variants"][variant][link]["population"], seed)
    tau_last = float(P["s1"]) - s0
    drift, drift_iv = _run_drift(sf, tau_last)
    hm, hv = predict(sf, np.concatenate([[tau_last], P["step"] - s0]))
    at = shares_on(tab, hm)
    sd = float(np.sqrt(hv[0]))
    hs = np.linspace(hm[0] - Z95 * sd, hm[0] + Z95 * sd, 101)
    span = shares_on(tab, hs)
    last = {k: float(at[k][0]) for k in ("all_pass", "all_fail", "mixed", "mean")}
    last.update({f"{k}_interval": [float(span[k].min()), float(span[k].max())]
                 for k in ("all_pass", "all_fail", "mixed")},
                step=int(P["s1"]), observed=_observed_last(d, P), h=float(hm[0]), h_interval=[hs[0], hs[-1]],
                population_beta=_beta_of(tab, float(hm[0])))
    kinds = {k: int(np.sum(P["kind"] == k)) for k in np.unique(P["kind"].astype(str))}
    notes = list(d.notes) + P["notes"]
    if P["pooled"] > 1:
        notes.append(f"{P['rows']:,} rows: consecutive rows of one kind pooled into {len(P['step']):,} bins of up to "
                     f"{P['pooled']} for the series (the drift is measured on {len(ev.step):,} pooled rows)")
    series = {**observed_series(P), **{f"fitted_{k}": v[1:] for k, v in at.items()}}
    split = bool(np.isin(P["kind"], ["trinomial", "all_pass", "all_fail"]).any() or P["y_on"].any())
    if not split:
        notes.append(MIRROR_NOTE)
    return {"source": "drift shapes", "model": f"{variant}/{shape}", "variant": variant, "shape": shape, "link": link,
            "K": int(d.K), "population": pop, "alpha": pop["a"], "beta": pop["b"],
            "shape_fit": {"shape": shape, **_shape(sf, s0)}, "drift": drift, "intervals": {"drift": drift_iv},
            "weights": dr["weights"], "steps": [int(P["s0"]), int(P["s1"])], "n_steps": P["rows"],
            "groups": float(P["n"].sum()), "used": {"kinds": kinds, "reward_mean_steps": int(P["y_on"].sum())},
            "identified": {"mixed_share": True, "split": split, "population": split}, "notes": notes,
            "last": last, "series": series}


def pair_fits(dr: dict) -> dict:
    """``{"variant/shape": {"weight", "score"}}`` of every pair the chooser weighed."""
    w = dr["weights"]
    pairs = pair_weights(w)
    scores = w.get("pair_scores") or {f"beta/{s}": x for s, x in (w.get("scores") or {}).items()}
    return {p: {"weight": float(x), "score": scores.get(p), "rule": "leave-future-out (pseudo-BMA+)"}
            for p, x in pairs.items()}


def drift_stall_forecast(dr: dict, fit: dict, expiry: dict, settings: dict | None) -> dict:
    """The stall forecast for the trainer's ``settings`` on the expiry's drawn mixed shares (``expiry`` a
    :func:`.drift_shares.shares_expiry` with ``draws``; module docstring); ``{"available": False, "reason"}``
    without the settings (:func:`.stall.unavailable`). ``source``: "drift shapes". The drawn shares are at the logged K
    (the settings' K is reported; the risk beside it draws the settings' K, :func:`.drift_shares.with_risk`)."""
    from .stall import unavailable

    if (off := unavailable(settings)) is not None:
        return off
    settings = {**settings, "K": int(settings.get("K") or fit["K"])}
    pr = expiry["projection"]
    grid = np.asarray(pr["step"], float)
    variant, shape = fit["variant"], fit["shape"]
    tab = _table(dr, variant, fit["link"])
    split = shares_on(tab, predict(dr["variant_fits"][variant][shape], grid - float(dr["steps"][0]))[0])
    out = stall_from_curves(settings, fit["steps"][1], grid, np.concatenate([[expiry["mixed_now"]], pr["mixed"]]),
                            expiry["draws"], lambda i: (float(split["all_pass"][i]), float(split["all_fail"][i])),
                            None if fit["identified"]["split"] else NO_SIDE)
    return {**out, "source": "drift shapes"}


def changed_cap_hit(record, result: dict, settings: dict, draws: int, seed: int = 0) -> float | None:
    """The median first step over the cap of a scalars-only diagnosis ``result`` (its fit :func:`drift_fit`'s) with
    the trainer's ``settings`` changed (:func:`.rules.cap_changes`: ``K``, ``logit_shift`` from the next step on),
    where its risk is not drawn (a horizon past :data:`.drift_shares.RISK_MAX_STEPS`): ``draws`` futures of the
    measured drift at the new K and shift (:func:`.stall_risk.drift_futures`) on the expiry's grid, through
    :func:`.scalars_forecast.stall_from_curves` (the mixed share now: the fit's)."""
    from .drift_shares import shares_drift
    from .scalars_fit import step_shares
    from .stall_risk import drift_futures

    d = step_shares(record, num_generations=int(result["run"]["K"]),
                    groups_per_step=int(round(result["run"]["groups_per_step"])),
                    settings=result["stall_forecast"].get("settings"))
    ev, dr = shares_drift(d)
    grid = np.asarray(result["expiry"]["projection"]["step"], float)
    rng = np.random.default_rng(seed)
    U = np.clip(np.concatenate([np.interp(paths, H_GRID, tab["u"]) for tab, _, paths in drift_futures(
        dr, ev, dr["settings"], grid - float(dr["steps"][0]), draws, rng, shift=float(settings.get("logit_shift") or 0),
        K_ahead=int(settings["K"]))]), 0.0, 1.0)
    st = {k: v for k, v in settings.items() if k != "logit_shift"}
    mixed = np.concatenate([[result["fit"]["last"]["mixed"]], np.median(U, axis=0)])
    sf = stall_from_curves(st, result["fit"]["steps"][1], grid, mixed, U, None, "not read (the median only)")
    return (sf.get("first_cap_hit") or {}).get("median")
