r"""When will a dynamic-sampling run stall? Generation rounds per step, forecast from the run's trend.

**The step.** DAPO dynamic sampling (verl ``recipe/dapo/dapo_ray_trainer.py``, the loop around
``num_gen_batches``; slime ``slime/rollout/sglang_rollout.py``; this project's
``train/loop.py`` ``Run.sample_batch``) draws rounds of ``gen_batch`` fresh prompts, K
rollouts each, keeps the groups whose rewards are not unanimous, and stops as soon as ``train_batch``
groups are kept. R, the number of rounds a step needs, is a stopping time: R <= r exactly when the
first r rounds hold at least ``train_batch`` mixed groups. With a cap C (verl's
``max_num_gen_batches`` > 0) a step with R > C raises ``num_gen_batches >= max_num_gen_batches``.

**Exact distribution.** At step s prompt x gives a mixed group with probability
u_x(s) = P(useful | p_x(s), K) (:func:`grpo_lab.sims.outcomes.p_useful`), p_x(s) from the trend fit of
:mod:`.forecast` (``logit p_x(s) = alpha_x + beta t``). Outcomes are independent given the prompts.

* *Prompts drawn from a large dataset* (verl's dataloader, slime's buffer): each draw is a uniformly
  random prompt of the population, so the mixed count in n draws is Binomial(n, u_bar) with u_bar the
  mean of u_x, and ``P(R <= r) = P(Binomial(r B, u_bar) >= T)`` (B = gen_batch, T = train_batch).
* *A finite pool drawn without replacement within a step* (this project's trainer: N prompts, rounds
  of B, the last one short, the run ends when the pool is used up): the mixed count in the first n
  draws is, given the number M of prompts that would be mixed this step, Hypergeometric(N, M, n), and M
  is Poisson-binomial(u_1..u_N); so ``P(R <= r) = sum_M PB(M) P(Hyper(N, M, min(rB, N)) >= T)``, and the
  cap is min(C, ceil(N / B)). The Poisson-binomial pmf is exact (an O(N^2) recursion) for N <=
  :data:`POOL_EXACT` when every prompt of the pool was seen; otherwise it is replaced by Binomial(N, u_bar)
  (then the count is Binomial(n, u_bar): the deviation is the between-prompt variance of u, which the
  without-replacement draw would remove; negligible for a large pool).

Reported per step: ``expected`` = E[R | R <= cap] (the rounds a step that trains uses, what a record
logs), ``p95`` (the 95th percentile of R; None when it lies beyond the cap), ``p_stall`` = P(R > cap).
The **stall step** at level q is the first future step with p_stall > q (q = 0.5 and 0.05), searched on
a grid up to :data:`~.forecast.HORIZON` run lengths ahead and refined by bisection to one step; its
interval repeats the search with the slope at its 95% bounds (intercepts refitted, as :mod:`.forecast`).
The **cause** at a step is the unanimity that the dropped groups mostly are: all-fail collapse when
mean P(all fail) > mean P(all pass) over the prompts, else all-pass saturation (``share_all_fail``). It is
given only where a stall is forecast: at the median of the risk's first-stall distribution, else at the first
step with P(stall) > 0.5; None (``cause``, ``cause_share_all_fail``, ``cause_at_step``) where neither lies
within the horizon.

**Risk** (``risk``, with a cap; :mod:`.stall_risk`): the drift measured with several shapes (:mod:`.drift`)
and the first stall's distribution from a parametric bootstrap over the shape, the population, the drift's
parameters and the loop's own rounds: P(stall by step n), the hazard, the median, the 90% interval. It models
the record's population and the level's path, not per-prompt trends, and handles a record of the survivors only
(verl's dump) with the truncated likelihood. The per-prompt trend below is kept beside it.

**Calibrated variant** (``calibrated``): the same with every u_x(s) scaled by c = the observed mixed share
over the last :data:`CALIBRATION_STEPS` steps / the trend's mean P(useful) there (a level correction: the
trend's per-prompt intercepts average each prompt over the run, and a prompt whose pass rate moves between
visits more than the shared slope says gives fewer mixed groups than its average rate does). Reported beside
the model's forecast, not instead of it: on the shipped runs neither is better everywhere (docs/doctor.md).

**Calibrated to the logged rounds** (``calibrated_rounds``, where the record logs rounds per step): the same
with every u_x(s) scaled by the c at which the trend's mean expected rounds over the last
:data:`CALIBRATION_STEPS` logged steps equal the logged mean (bisection; the expected rounds fall as c grows).
It needs no groups beyond those recorded, which matters where a record holds only the groups that survived
the filter (verl's rollout dump: the trained groups only; the dropped ones were never written), so its mixed
share is of the survivors and the calibration above is biased upward. ``recorded`` / ``drawn`` compare the
record's groups at the logged steps with the groups the logged rounds drew (rounds x gen_batch).

**Validation** on the record itself where it logs rounds per step (``steps['gen_batches']``, this
project's trainer; verl logs ``train/num_gen_batches``): in-sample predicted against observed rounds,
and a backtest fitting the first half of the steps and predicting the second half (mean absolute
error, and the predicted against the observed stall step when the run ended unfilled).
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import expit

from .forecast import HORIZON, Z95, _newton, _scale, fit_trend
from .groups import RunGroups
from .stall_risk import risk_for_groups

__all__ = ["POOL_EXACT", "LEVELS", "poisson_binomial", "rounds_distribution", "step_rounds", "stall_forecast",
           "rounds_calibration", "simulate_rounds", "unavailable"]

POOL_EXACT = 4000  #: finite pools up to this many prompts get the exact Poisson-binomial
LEVELS = (0.5, 0.05)  #: stall probabilities whose first step is reported
MAX_ROUNDS = 100_000  #: an uncapped step needing more rounds than this is reported as beyond it
GRID = 60  #: future steps evaluated for the series (and the search's first pass)
CALIBRATION_STEPS = 10  #: the calibrated variant matches the level over this many last steps of the fit


def poisson_binomial(u) -> np.ndarray:
    """pmf of the number of successes of independent Bernoulli(u_i) (exact recursion, O(n^2)).

    ``u`` of shape (n,) gives (n + 1,); of shape (rows, n), one pmf per row, (rows, n + 1)."""
    u = np.asarray(u, float)
    one = u.ndim == 1
    u = np.atleast_2d(u)
    pmf = np.zeros((u.shape[0], u.shape[1] + 1))
    pmf[:, 0] = 1.0
    for i in range(u.shape[1]):
        q = u[:, i:i + 1]
        pmf[:, 1:i + 2] = pmf[:, 1:i + 2] * (1 - q) + pmf[:, :i + 1] * q
        pmf[:, 0] *= 1 - q[:, 0]
    return pmf[0] if one else pmf


def _cdfs(u: np.ndarray, B: int, T: int, cap: int, pool):
    """(P(R <= r) for r = 1..len, one row per row of u; the effective cap, 0 = none)."""
    ubar = u.mean(axis=1)
    if pool is not None:
        N = int(pool)
        last = -(-N // B)
        cap = min(cap, last) if cap else last
        n = np.minimum(np.arange(1, cap + 1) * B, N)
        if N <= POOL_EXACT and u.shape[1] == N:
            H = stats.hypergeom.sf(T - 1, N, np.arange(N + 1)[None, :], n[:, None])  # rounds x M
            return poisson_binomial(u) @ H.T, cap
        return stats.binom.sf(T - 1, n[None, :], ubar[:, None]), cap
    if cap:
        r = np.arange(1, cap + 1)
    else:
        need = float(np.max(T / np.maximum(ubar, 1e-12) / B))
        r = np.arange(1, int(min(MAX_ROUNDS, max(10.0, 3 * need + 20 * np.sqrt(need) + 10))) + 1)
    return stats.binom.sf(T - 1, r[None, :] * B, ubar[:, None]), cap


def rounds_distribution(u, gen_batch: int, train_batch: int, cap: int = 0, pool: int | None = None) -> dict:
    """Distribution of the rounds R one dynamic-sampling step needs (see the module docstring).

    Parameters
    ----------
    u : P(mixed group) of each prompt of the population (drawn uniformly); shape (prompts,), or
        (steps, prompts) for several steps at once (then every value returned is an array per step).
    gen_batch, train_batch : prompts per round (B) and mixed groups a step needs (T).
    cap : most rounds (0 = none; verl's ``max_num_gen_batches`` <= 0).
    pool : prompts drawn without replacement within a step (None = an unbounded dataset).

    Returns ``cdf`` (P(R <= r) for r = 1..len), ``cap`` (the effective one, 0 = none), ``expected``
    (E[R | R <= cap]; the plain E[R] without a cap), ``p95`` (None beyond the cap or MAX_ROUNDS) and
    ``p_stall`` (P(R > cap); 0 without a cap).
    """
    u = np.clip(np.asarray(u, float), 0.0, 1.0)
    one = u.ndim == 1
    cdf, cap = _cdfs(np.atleast_2d(u), int(gen_batch), int(train_batch), int(cap), pool)
    cdf = np.maximum.accumulate(np.clip(cdf, 0.0, 1.0), axis=1)
    full = cdf[:, -1]
    pmf = np.diff(cdf, axis=1, prepend=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(full > 0, pmf @ np.arange(1, cdf.shape[1] + 1) / full, np.nan)
    reach = cdf >= 0.95
    p95 = [int(np.argmax(row) + 1) if row.any() else None for row in reach]
    p_stall = (1.0 - full) if cap else np.zeros(len(full))
    if one:
        return {"cdf": cdf[0], "cap": cap, "p_stall": float(p_stall[0]), "expected": float(expected[0]),
                "p95": p95[0]}
    return {"cdf": cdf, "cap": cap, "p_stall": p_stall, "expected": expected, "p95": p95}


def _step_u(trend: dict, steps, K: int, beta=None, alpha=None, shift: float = 0.0):
    """(u, P(all pass), P(all fail)) per step x seen prompt at ``steps``, from the trend fit (p^K and
    (1 - p)^K directly: the core's outcome probabilities with rho = 0, without their checks, for speed);
    ``shift``: every logit moved by it besides (the data's difficulty changed, ``settings['logit_shift']``)."""
    a = (trend["alpha"] if alpha is None else alpha)[trend["seen"]]
    b = trend["beta"] if beta is None else beta
    t = _scale(steps, trend["s0"], trend["s1"])
    p = expit(a[None, :] + b * np.asarray(t, float)[:, None] + shift)
    ap, af = p**K, (1.0 - p)**K
    return 1.0 - ap - af, ap, af


def step_rounds(trend: dict, steps, settings: dict, beta=None, alpha=None) -> dict:
    """Per step of ``steps``: expected rounds, p95, P(stall), the share of dropped groups all-fail and the
    effective group rate (lists, one value per step)."""
    steps = np.atleast_1d(np.asarray(steps, float))
    out = {k: [] for k in ("expected", "p95", "p_stall", "share_all_fail", "effective_rate")}
    for i in range(0, len(steps), 50):  # bounded memory: 50 steps x prompts at a time
        u, ap, af = _step_u(trend, steps[i:i + 50], settings["K"], beta, alpha, settings.get("logit_shift") or 0.0)
        u = np.clip(u * settings.get("calibration", 1.0), 0.0, 1.0)
        d = rounds_distribution(u, settings["gen_batch"], settings["train_batch"], settings["cap"], settings["pool"])
        out["expected"].extend(float(x) for x in d["expected"])
        out["p95"].extend(d["p95"])
        out["p_stall"].extend(float(x) for x in d["p_stall"])
        drop = ap.mean(axis=1) + af.mean(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["share_all_fail"].extend(float(x) for x in np.where(drop > 0, af.mean(axis=1) / drop, np.nan))
        out["effective_rate"].extend(float(x) for x in u.mean(axis=1))
    return out


def calibration(groups: RunGroups, trend: dict, K: int, mask=None) -> dict:
    """Level calibration: c = observed mixed share / the trend's mean P(useful), both over the last
    :data:`CALIBRATION_STEPS` steps the trend was fitted on (groups pooled, which Wald's identity keeps
    unbiased under dynamic sampling's optional stopping). Only at the record's own K (else c = 1)."""
    m = np.ones(groups.n, bool) if mask is None else np.asarray(mask, bool)
    steps = np.unique(groups.step[m])[-CALIBRATION_STEPS:]
    sel = m & np.isin(groups.step, steps)
    if K != groups.K or not sel.any():
        return {"factor": 1.0, "observed": None, "model": None, "steps": []}
    mixed = float(np.mean((groups.successes[sel] > 0) & (groups.successes[sel] < groups.K)))
    st, w = np.unique(groups.step[sel], return_counts=True)
    u = _step_u(trend, st, K)[0].mean(axis=1)
    model = float(np.sum(u * w) / np.sum(w))
    return {"factor": mixed / model if model > 0 else 1.0, "observed": mixed, "model": model,
            "steps": [int(st[0]), int(st[-1])]}


def rounds_calibration(groups: RunGroups, trend: dict, settings: dict, observed) -> dict:
    """Level calibration to the logged rounds: c such that the trend's mean expected rounds over the last
    :data:`CALIBRATION_STEPS` logged steps equals their logged mean (bisection on log c; the expected rounds
    fall as c grows). ``observed``: (steps, rounds) or None. ``at_bound``: the logged mean lies outside what
    any c in [1e-3, 1e3] gives (then c is that bound)."""
    if observed is None:
        return {"available": False, "reason": "not available: needs a record that logs rounds per step"}
    s, r = observed
    s, r = s[-CALIBRATION_STEPS:], r[-CALIBRATION_STEPS:]
    if np.all(r <= 1):  # E[R | filled] = 1 for every level high enough: the rounds bound u from below, no more
        return {"available": False, "identifiable": False,
                "reason": f"not identifiable: every logged round of steps {int(s[0])}-{int(s[-1])} is 1, which any "
                          "mixed share high enough gives (the rounds bound the level from below only)"}
    target = float(np.mean(r))

    def mean_rounds(c):  # inf where a step can never be filled within the cap at this c
        e = np.asarray(step_rounds(trend, s, {**settings, "calibration": c})["expected"], float)
        return float(np.mean(np.where(np.isfinite(e), e, np.inf)))

    lo, hi = np.log(1e-3), np.log(1e3)
    model = mean_rounds(1.0)
    at_bound = not (mean_rounds(np.exp(hi)) <= target <= mean_rounds(np.exp(lo)))
    for _ in range(24):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mean_rounds(np.exp(mid)) > target else (lo, mid)
    c = float(np.exp((lo + hi) / 2))
    at_bound = at_bound or not (1.01e-3 < c < 0.99e3)  # e.g. every logged step at the cap: E[R | R <= cap] saturates
    recorded = int(np.sum(np.isin(groups.step, s)))
    return {"available": True, "factor": c, "observed": target, "model": model, "steps": [int(s[0]), int(s[-1])],
            "at_bound": bool(at_bound), "recorded": recorded, "drawn": int(np.sum(r)) * int(settings["gen_batch"])}


def _first_stall(trend, settings, level, start, stop, beta=None, alpha=None, curve=None):
    """First integer step in [start, stop] with P(stall) > level (grid, then bisection); None if none.
    ``curve``: the grid and its P(stall) if already computed (shared between levels)."""
    grid, p = curve if curve is not None else _curve(trend, settings, start, stop, beta, alpha)
    above = np.flatnonzero(p > level)
    if not above.size:
        return None
    if above[0] == 0:
        return int(grid[0])
    lo, hi = int(grid[above[0] - 1]), int(grid[above[0]])  # p(lo) <= level < p(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step_rounds(trend, [mid], settings, beta, alpha)["p_stall"][0] > level:
            hi = mid
        else:
            lo = mid
    return hi


def _curve(trend, settings, start, stop, beta=None, alpha=None):
    """(grid of future steps, P(stall) there) for the search."""
    grid = np.unique(np.round(np.linspace(start, stop, GRID)))
    return grid, np.asarray(step_rounds(trend, grid, settings, beta, alpha)["p_stall"])


def _levels(trend, settings, start, stop) -> dict:
    """{level: first step with P(stall) > level} for each of LEVELS (no interval)."""
    curve = _curve(trend, settings, start, stop)
    return {str(q): _first_stall(trend, settings, q, start, stop, curve=curve) for q in LEVELS}


def _observed_rounds(steps_table: dict | None, group_steps: np.ndarray):
    """(steps, rounds) logged by the trainer, or None."""
    if not steps_table:
        return None
    for key in ("gen_batches", "train/num_gen_batches", "scalar/train/num_gen_batches"):
        if key in steps_table and "step" in steps_table and len(steps_table[key]):
            s, r = np.asarray(steps_table["step"], float), np.asarray(steps_table[key], float)
            ok = np.isfinite(s) & np.isfinite(r) & np.isin(s, group_steps)
            if ok.any():
                return s[ok].astype(np.int64), r[ok]
    return None


def _stall_steps(trend, settings, start, stop, bounds, p_now):
    """{level: {step, interval, already}} for each of LEVELS (``already``: above it at the last step)."""
    central = _curve(trend, settings, start, stop)
    curves = [(b, a, _curve(trend, settings, start, stop, b, a)) for b, a in bounds]
    out = {}
    for level in LEVELS:
        step = _first_stall(trend, settings, level, start, stop, curve=central)
        found = [_first_stall(trend, settings, level, start, stop, b, a, c) for b, a, c in curves]
        finite = [x for x in found if x is not None]
        out[str(level)] = {"step": step, "interval": [min(finite) if finite else None,
                                                      None if (None in found or not found) else max(found)],
                          "already": bool(p_now > level)}
    return out


def _validation(groups: RunGroups, trend: dict, settings: dict, observed, end_step) -> dict:
    """In-sample and backtest comparison of predicted and logged rounds per step."""
    if observed is None:
        return {"available": False, "reason": "not available: needs a record that logs rounds per step "
                                              "(steps 'gen_batches' or verl's 'train/num_gen_batches')"}
    s, r = observed
    pred = np.asarray(step_rounds(trend, s, settings)["expected"])
    out = {"available": True, "steps": s, "observed": r, "predicted": pred,
           "mae": float(np.nanmean(np.abs(pred - r))), "mean_error": float(np.nanmean(pred - r)),
           "observed_mean": float(np.mean(r)), "predicted_mean": float(np.nanmean(pred))}
    uniq = np.unique(groups.step)
    if len(uniq) < 8:
        out["backtest"] = {"available": False, "reason": f"not available: needs 8 steps to split, has {len(uniq)}"}
        return out
    cut = uniq[len(uniq) // 2 - 1]
    half = fit_trend(groups, groups.step <= cut)
    later = s > cut
    stop = max(int(uniq[-1]) + 1, int(half["s1"] + HORIZON * max(half["s1"] - half["s0"], 1)))
    cal = {**settings, "calibration": calibration(groups, half, settings["K"], groups.step <= cut)["factor"]}
    out["backtest"] = {"available": True, "fit_until_step": int(cut), "steps": s[later], "observed_stall_step": end_step}
    for key, st in (("model", settings), ("calibrated", cal)):
        bp = np.asarray(step_rounds(half, s[later], st)["expected"])
        out["backtest"][key] = {"predicted": bp, "mae": float(np.nanmean(np.abs(bp - r[later]))),
                                "mean_error": float(np.nanmean(bp - r[later])),
                                "predicted_stall_step": _levels(half, st, int(cut) + 1, stop)}
    return out


def unavailable(settings: dict | None) -> dict | None:
    """``{"available": False, "reason"}`` where ``settings`` cannot give a stall forecast (no trainer config, or
    one that does not enable dynamic sampling), else None: the one guard of every stall forecast (groups and
    scalars alike)."""
    if settings is None:
        return {"available": False, "reason": "not available: needs the trainer's config (--trainer-config FILE, "
                                              "or --gen-batch-size and --train-batch-size)"}
    if not settings.get("enable", True):
        which = " (filter_groups.enable is false)" if str(settings["trainer"]).startswith("verl") else ""
        return {"available": False, "reason": f"not available: the {settings['trainer']} config does not enable "
                                              f"dynamic sampling{which}"}
    return None


def stall_forecast(groups: RunGroups, settings: dict | None, trend: dict | None = None,
                   steps_table: dict | None = None, end_step: int | None = None) -> dict:
    """The stall forecast for ``settings`` (from :func:`.trainer_config.read_trainer_config`).

    ``trend``: the :func:`.forecast.fit_trend` of the whole run (fitted here when None);
    ``steps_table``: the record's per-step table (for the logged rounds); ``end_step``: the step at which
    the run ended unfilled, if it did. Returns ``{"available": False, "reason"}`` without settings.
    """
    if (off := unavailable(settings)) is not None:
        return off
    uniq = np.unique(groups.step)
    if len(uniq) < 3:
        return {"available": False, "reason": f"not available: needs a trend over at least 3 steps, the record "
                                              f"has {len(uniq)}"}
    settings = {**settings, "K": int(settings.get("K") or groups.K)}
    pool_cap = -(-int(settings["pool"]) // int(settings["gen_batch"])) if settings.get("pool") else 0
    settings["cap_effective"] = min(x for x in (settings["cap"], pool_cap) if x) if (settings["cap"] or pool_cap) else 0
    trend = fit_trend(groups) if trend is None else trend
    span = max(trend["s1"] - trend["s0"], 1)
    start, stop = int(trend["s1"]) + 1, int(np.ceil(trend["s1"] + HORIZON * span))
    cal = calibration(groups, trend, settings["K"])
    cal_settings = {**settings, "calibration": cal["factor"]}
    cal_now = step_rounds(trend, [trend["s1"]], cal_settings)
    cal.update(now={k: v[0] for k, v in cal_now.items()},
               stall=_levels(trend, cal_settings, start, stop))
    observed = _observed_rounds(steps_table, uniq)
    by_rounds = rounds_calibration(groups, trend, settings, observed)
    if by_rounds["available"]:
        rs = {**settings, "calibration": by_rounds["factor"]}
        by_rounds.update(now={k: v[0] for k, v in step_rounds(trend, [trend["s1"]], rs).items()},
                         next={k: v[0] for k, v in step_rounds(trend, [start], rs).items()},
                         stall=_levels(trend, rs, start, stop))
    S, pid, t = trend["_data"]
    bounds = []
    for b in (trend["beta"] - Z95 * trend["se_beta"], trend["beta"] + Z95 * trend["se_beta"]):
        if np.isfinite(b):
            bounds.append((b, _newton(S, groups.K, pid, t, groups.n_prompts, beta=b, alpha0=trend["alpha"])[0]))
    now = step_rounds(trend, [trend["s1"]], settings)
    grid = np.unique(np.round(np.linspace(start, min(stop, trend["s1"] + 3 * span), GRID)))
    series = step_rounds(trend, grid, settings)
    stall = _stall_steps(trend, settings, start, stop, bounds, now["p_stall"][0])
    first = stall[str(LEVELS[0])]["step"]
    risk = risk_for_groups(groups, settings, observed, stop) if settings["cap_effective"] else \
        {"available": False, "reason": "no cap: a step never raises (the run crawls instead)"}
    at = step_rounds(trend, [first], settings) if first is not None else now
    if risk["available"]:  # the cause only where a stall is forecast (the risk's median within the horizon)
        cause, share, at_step = risk["cause"], risk["cause_share_all_fail"], risk["first_stall"]["median"]
    elif first is not None:
        cause = "all-fail collapse" if at["share_all_fail"][0] > 0.5 else "all-pass saturation"
        share, at_step = at["share_all_fail"][0], first
    else:
        cause, share, at_step = None, None, None
    return {"available": True, "settings": settings, "slope": trend["beta"], "se_slope": trend["se_beta"],
            "now": {"step": int(trend["s1"]), **{k: v[0] for k, v in now.items()}},
            "stall": stall, "cause": cause, "cause_share_all_fail": share, "risk": risk,
            "cause_at_step": at_step,
            "horizon_step": stop, "series": {"step": grid, **series}, "calibrated": cal,
            "calibrated_rounds": by_rounds, "validation": _validation(groups, trend, settings, observed, end_step)}


def simulate_rounds(u, gen_batch: int, train_batch: int, cap: int = 0, pool: int | None = None, reps: int = 2000,
                    seed: int = 0) -> np.ndarray:
    """Monte Carlo of the step itself (for the tests): rounds per replicate; cap + 1 marks a stalled step.

    Prompts are drawn uniformly (with replacement across the population, or without replacement from a
    pool of ``pool`` prompts, which must equal len(u)); each is mixed with probability u_x."""
    rng = np.random.default_rng(seed)
    u = np.asarray(u, float)
    out = np.empty(reps, np.int64)
    limit = cap if cap else MAX_ROUNDS
    if pool is not None:
        last = -(-int(pool) // gen_batch)
        limit = min(limit, last)
    for i in range(reps):
        order = rng.permutation(len(u)) if pool is not None else None
        kept, r = 0, 0
        while kept < train_batch and r < limit:
            if pool is not None:
                ids = order[r * gen_batch:(r + 1) * gen_batch]
            else:
                ids = rng.integers(0, len(u), gen_batch)
            kept += int(np.sum(rng.random(len(ids)) < u[ids]))
            r += 1
        out[i] = r if kept >= train_batch else limit + 1
    return out


def for_record(record, groups: RunGroups, trend: dict | None, settings: dict | None) -> dict:
    """:func:`stall_forecast` for a record: ``settings`` from a trainer config, else the record's own
    grpo-lab config when it ran dynamic sampling; the stall step observed when the run ended unfilled.
    The logged rounds validate the forecast only where they were logged under the same settings (the
    record's own dynamic-sampling config, or verl's ``num_gen_batches`` scalar)."""
    from .trainer_config import settings_from_record

    own = settings_from_record(record.meta)
    settings = settings if settings is not None else own
    steps = record.steps or {}
    same = own is not None and settings is not None and all(own[k] == settings[k] for k in ("gen_batch", "train_batch",
                                                                                         "cap"))
    table = steps if same or any(k.endswith("num_gen_batches") for k in steps) else None  # logged under these settings
    reason = str(record.meta.get("end_reason") or "")
    end = int(np.max(groups.step)) + 1 if "could not fill" in reason else None
    return stall_forecast(groups, settings, trend, table, end)
