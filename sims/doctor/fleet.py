r"""A fleet's triage forecast: for each run of a folder, when its mixed share will cross the threshold (expiry) and,
given a capped dynamic-sampling loop, when a step will first run out of rounds (stall); cheap enough to rank fifty
runs in well under a second and to redo at every refresh.

**The trend.** The run's mixed share per step, ``m_i`` (one minus its zero-std share, else one minus its all-pass
and all-fail shares) over ``n_i`` groups (the logged groups per step, else the groups the record holds at that step,
else 1: unweighted), is fitted by a quasi-binomial logistic regression on the scaled step
``t = (s - s_first) / (s_last - s_first)``: ``logit m(s) = a + b t`` (IRLS to convergence), with the covariance
scaled by the Pearson dispersion ``phi = sum n (m - mhat)^2 / (mhat (1 - mhat)) / (steps - 2)`` (at least 1): the
steps' shares vary more than binomially, since the prompts differ and the policy moves. This is a model of the run's
*level*, not of its prompts: the doctor (``grpo-lab diagnose``, the Replay's Diagnose) fits the population and its
drift and gives the forecasts to act on; the fleet's trend orders the runs to look at first. Named deviation from
the doctor's expiry forecast (:func:`.scalars_forecast.expiry_forecast`): one logistic curve of the mixed share
instead of a Beta population's drift mapped through P(mixed | p, K), so K is not needed.

**Expiry.** The first step after the last at which ``m(s) < threshold`` (:data:`.forecast.DEFAULT_THRESHOLD`),
searched up to :data:`.forecast.HORIZON` run lengths ahead (closed form: ``t* = (logit threshold - a) / b``); its
95% interval is the 2.5% and 97.5% quantiles of ``t*`` over :data:`DRAWS` draws of ``(a, b)`` from the fit's
normal approximation (a draw that never crosses within the horizon counts as beyond it: the upper bound is then
None). A run whose fitted share at its last step is already below is expired "now".

**Stall** (where the loop's settings are given and it has a cap, or a finite pool:
:func:`effective_cap`): at step s a DAPO step draws rounds of
``gen_batch`` prompts until ``train_batch`` mixed groups are kept; with every prompt mixed with probability m(s),
P(stall at s) = P(R > cap) of :func:`.stall.rounds_distribution` (the core's computation, its large-dataset case;
tabulated once per loop over the share and interpolated: :func:`stall_table`).
The first stall's distribution over the future steps is ``1 - prod_{s' <= s} (1 - P(stall at s'))``; the stall step
is its median, searched on :data:`GRID` points up to the horizon (each point standing for the steps up to the
next); its interval the same median over the draws (2.5%, 97.5% quantiles).

**The doctor's forecast** (:func:`doctor_forecast`): where the doctor has diagnosed the run, the fleet shows and
ranks on its one answer to "when" (:func:`.when.when`, the ``when`` of ``grpo-lab diagnose --json``) instead of the
trend: its expiry and first stall, step and interval as the doctor says them, put in the trend's shape (``left``
counted from the run's last step). The trend stays the sparkline's band, and the figure shown, labelled as the
trend, only where the doctor's is not computed yet or the doctor cannot diagnose the run.

**Rank** (:func:`rank_key`): by the steps left before the stall where there is one, else before the expiry;
"now" first, beyond the horizon after every forecast, runs without a forecast (too few steps, no share) last.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from .forecast import DEFAULT_THRESHOLD, HORIZON
from .stall import rounds_distribution

__all__ = ["MIN_STEPS", "DRAWS", "GRID", "SPARK_POINTS", "mixed_series", "record_series", "fit_trend", "run_forecast", "rank_key",
           "stall_table", "effective_cap", "doctor_forecast", "last_step"]

MIN_STEPS = 5  #: steps with a share needed before a forecast
DRAWS = 200  #: draws of (a, b) for the intervals
GRID = 64  #: future points the stall search looks at
SPARK_POINTS = 40  #: points of a run's sparkline (the observed share, averaged in bins)
_ETA = 30.0  #: the linear predictor is kept in [-_ETA, _ETA] (shares of exactly 0 or 1)


def mixed_series(steps: dict, groups_per_step=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(step, mixed share, groups)`` of a record's steps table (rows with no share dropped).

    ``steps``: the record's per-step columns (``frac_reward_zero_std``, else ``frac_all_pass`` + ``frac_all_fail``;
    ``groups_per_step`` where logged). ``groups_per_step``: ``{step: groups}`` the record holds (a record with groups),
    used where the column is missing; 1 where neither says it."""
    step = np.asarray(steps.get("step", []), np.int64)
    n = len(step)

    def col(key):
        v = steps.get(key)
        return np.full(n, np.nan) if v is None or len(v) != n else np.asarray(v, float)

    zero = col("frac_reward_zero_std")
    ap, af = col("frac_all_pass"), col("frac_all_fail")
    mixed = np.where(np.isfinite(zero), 1.0 - zero, 1.0 - ap - af)
    groups = col("groups_per_step")
    if groups_per_step:
        held = np.array([groups_per_step.get(int(s), np.nan) for s in step], float)
        groups = np.where(np.isfinite(groups), groups, held)
    groups = np.where(np.isfinite(groups) & (groups > 0), groups, 1.0)
    ok = np.isfinite(mixed)
    return step[ok], np.clip(mixed[ok], 0.0, 1.0), groups[ok]


def record_series(record) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mixed_series` of a run record as it stands: its steps table, the groups it holds counted per step
    where the table gives no ``groups_per_step``."""
    held = None
    if len(record.groups.get("step", ())):
        s, c = np.unique(np.asarray(record.groups["step"]), return_counts=True)
        held = dict(zip(s.tolist(), c.tolist()))
    return mixed_series(record.steps or {}, held)


def fit_trend(step, mixed, groups) -> dict | None:
    """The quasi-binomial logistic fit of the module docstring: ``{a, b, cov, phi, s0, s1}``; None with fewer than
    :data:`MIN_STEPS` steps, one step value, or a singular fit. It is the tie share's trend
    (:func:`.tie_trend.fit_tie_trend`, the same model for 1 - mixed) with its signs turned: logit mixed = -(a' + b' t),
    its covariance scaled by the Pearson dispersion phi."""
    from .tie_trend import fit_tie_trend

    step = np.asarray(step, float)
    if len(step) < MIN_STEPS or step[-1] == step[0]:
        return None
    f = fit_tie_trend(step, groups, 1.0 - np.asarray(mixed, float), recent=False)  # the whole log's trend
    if not np.all(np.isfinite(f["cov"])):
        return None
    return {"a": -f["a"], "b": -f["b"], "cov": f["cov"] * f["dispersion"], "phi": f["dispersion"],
            "s0": float(f["steps"][0]), "s1": float(f["steps"][1])}


def _draws(fit: dict, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    cov = (fit["cov"] + fit["cov"].T) / 2
    return rng.multivariate_normal([fit["a"], fit["b"]], cov, size=n, method="cholesky" if _pd(cov) else "eigh")


def _pd(cov) -> bool:
    try:
        np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return False
    return True


def _interval(values, horizon: float) -> list:
    values = np.minimum(np.asarray(values, float), 2 * horizon + 1.0)  # beyond the horizon: None below
    lo, hi = np.quantile(values, [0.025, 0.975])
    return [None if lo > horizon else float(lo), None if hi > horizon else float(hi)]


def _expiry(fit, ab, threshold, horizon_t) -> tuple:
    """(t* of the fit, t* of each draw); inf where it does not cross within the horizon, the last step's t (1.0)
    where already below."""
    L = logit(threshold)

    def cross(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        below_now = a + b < L
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(b < 0, (L - a) / np.where(b == 0, -1.0, b), np.inf)
        t = np.where(below_now, 1.0, np.where((t > 1.0) & (t <= horizon_t), t, np.inf))
        return t

    return cross(fit["a"], fit["b"]), cross(ab[:, 0], ab[:, 1])


_TABLE_POINTS = 4097  #: mixed shares at which P(stall | m) is tabulated once per loop (then interpolated)
_TABLES: dict = {}


def stall_table(settings: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(m, P(stall | m))`` on :data:`_TABLE_POINTS` evenly spaced shares, from :func:`.stall.rounds_distribution`
    (each row one share), computed once per ``(gen_batch, train_batch, cap)``. P(R > cap) is a smooth decreasing
    function of the share alone (the large-dataset case), so interpolating the table differs from calling the core
    per point by less than 1e-4 (tests/test_fleet.py)."""
    key = (int(settings["gen_batch"]), int(settings["train_batch"]), int(settings["cap"]))
    if key not in _TABLES:
        m = np.linspace(0.0, 1.0, _TABLE_POINTS)
        _TABLES[key] = (m, np.asarray(rounds_distribution(m[:, None], *key)["p_stall"], float))
        if len(_TABLES) > 32:
            _TABLES.pop(next(iter(_TABLES)))
    return _TABLES[key]


def _stall(ab_all, grid_t, grid_w, settings) -> np.ndarray:
    """The median first-stall t of each row of ``ab_all`` (inf where the first-stall probability stays under 0.5
    within the grid)."""
    m = expit(np.clip(ab_all[:, :1] + ab_all[:, 1:2] * grid_t[None, :], -_ETA, _ETA))  # rows x grid
    xs, ps = stall_table(settings)
    p = np.clip(np.interp(m, xs, ps), 0.0, 1.0 - 1e-15)
    log_survive = np.cumsum(np.log1p(-p) * grid_w[None, :], axis=1)
    hit = log_survive <= np.log(0.5)
    first = np.where(hit.any(axis=1), np.argmax(hit, axis=1), -1)
    return np.where(first >= 0, grid_t[np.maximum(first, 0)], np.inf)


def effective_cap(settings: dict | None) -> int:
    """The most rounds a step may take: the loop's cap, and a finite pool's ``ceil(pool / gen_batch)`` (the pool is
    used up; :func:`.stall.stall_forecast`'s ``cap_effective``); 0 when neither bounds it. With a pool the rounds'
    draws are taken as from a large dataset (named deviation: without replacement they are a little surer)."""
    if settings is None:
        return 0
    pool_cap = -(-int(settings["pool"]) // int(settings["gen_batch"])) if settings.get("pool") else 0
    caps = [c for c in (int(settings.get("cap") or 0), pool_cap) if c]
    return min(caps) if caps else 0


def run_forecast(step, mixed, groups, settings: dict | None = None, threshold: float = DEFAULT_THRESHOLD,
                 n_draws: int = DRAWS, seed: int = 0) -> dict:
    """The fleet's forecast of one run (see the module docstring).

    Returns ``{steps, last_step, mixed_now (observed, the last step), fit_now, spark (observed, binned), band
    ({step, lo, mid, hi}: the trend's 95% band from the first step to the horizon), expiry {step, interval, status},
    stall {step, interval, status} | None, forecast (the one ranked: "stall" or "expiry"), left (steps from the last
    to it: 0 now, inf beyond the horizon, None without a forecast), reason}``. ``settings``: the loop's
    (``gen_batch``, ``train_batch``, ``cap``) or None."""
    step, mixed, groups = (np.asarray(x) for x in (step, mixed, groups))
    out = {"steps": int(len(step)), "last_step": int(step[-1]) if len(step) else None,
           "mixed_now": float(mixed[-1]) if len(mixed) else None, "spark": _spark(mixed), "band": None,
           "fit_now": None, "expiry": None, "stall": None, "forecast": None, "left": None, "reason": ""}
    fit = fit_trend(step, mixed, groups)
    if fit is None:
        out["reason"] = f"waiting for {MIN_STEPS} steps with a mixed share ({len(step)} so far)"
        return out
    span = fit["s1"] - fit["s0"]
    horizon_t = 1.0 + HORIZON
    to_step = (lambda t: fit["s0"] + t * span)
    ab = _draws(fit, n_draws, seed)
    out["fit_now"] = float(expit(fit["a"] + fit["b"]))
    t_band = np.linspace(0.0, horizon_t, 2 * SPARK_POINTS)
    curves = expit(ab[:, :1] + ab[:, 1:2] * t_band[None, :])
    lo, hi = np.quantile(curves, [0.025, 0.975], axis=0)
    out["band"] = {"step": to_step(t_band).tolist(), "lo": lo.tolist(), "hi": hi.tolist(),
                   "mid": expit(fit["a"] + fit["b"] * t_band).tolist()}
    t_exp, t_draws = _expiry(fit, ab, threshold, horizon_t)
    out["expiry"] = _said(float(t_exp), t_draws, to_step, horizon_t, f"mixed share under {threshold:g}")
    cap = effective_cap(settings)
    if cap:
        settings = {**settings, "cap": cap}
        grid_t = np.linspace(1.0, horizon_t, GRID)
        grid_w = np.diff(grid_t, append=grid_t[-1] + (grid_t[1] - grid_t[0])) * span  # steps each point stands for
        grid_w[0] = 1.0  # the last logged step's own risk counts once
        rows = np.vstack([[fit["a"], fit["b"]], ab])
        t_stall = _stall(rows, grid_t, grid_w, settings)
        out["stall"] = _said(float(t_stall[0]), t_stall[1:], to_step, horizon_t,
                             f"first step over the cap of {settings['cap']} rounds")
    ranked = out["stall"] if out["stall"] is not None else out["expiry"]
    out["forecast"] = "stall" if out["stall"] is not None else "expiry"
    out["left"] = ranked["left"]
    return out


def _said(t: float, draws, to_step, horizon_t: float, what: str) -> dict:
    last = to_step(1.0)
    if np.isinf(t):
        return {"step": None, "interval": _interval(to_step(np.asarray(draws)), to_step(horizon_t)),
                "left": float("inf"), "status": f"no {what} within {HORIZON:g} run lengths"}
    s = to_step(t)
    status = f"{what} now" if t <= 1.0 else f"{what} near step {s:.0f}"
    return {"step": float(s), "interval": _interval(to_step(np.asarray(draws)), to_step(horizon_t)),
            "left": max(0.0, float(s - last)), "status": status}


def last_step(record) -> int | None:
    """The last step a record holds (its steps table, else its groups), None for none."""
    for table in (record.steps, record.groups):
        steps = table.get("step") if table else None
        if steps is not None and len(steps):
            return int(np.max(steps))
    return None


def doctor_forecast(when: dict, last: int | None) -> dict:
    """The doctor's one answer to "when" (:func:`.when.when` of a diagnosis) in the shape of :func:`run_forecast`'s
    ``expiry``, ``stall``, ``forecast`` and ``left`` (``last``: the run's last step, from which ``left`` counts).

    Each of ``expiry`` and ``stall`` is ``{step, interval, level, status, left}`` with the doctor's step and interval
    unchanged; ``left`` is 0 for "already below the threshold" (expiry now) or a stall step at or before the last,
    inf for a figure beyond the horizon (no step, the status saying it stays above; a stall with no step), None where
    the doctor gives no verdict (a check against the log refused it, too few steps). ``stall`` is None where the
    doctor has no stall forecast (no cap, no loop settings); the figure ranked on is the stall where there is one."""
    e = when["expiry"]
    said = e.get("said") or e["status"]
    if e.get("step") is not None:
        left = max(0.0, float(e["step"]) - last) if last is not None else None
    elif said.startswith("already below"):
        left = 0.0
    elif said.startswith("stays above"):
        left = float("inf")
    else:
        left = None  # no verdict: the log contradicts the model, or no trend
    expiry = {"step": e.get("step"), "interval": list(e.get("interval") or [None, None]), "level": e.get("level"),
              "status": said, "left": left}
    st, stall = when.get("stall") or {}, None
    if st.get("available"):
        step = st.get("step")
        stall = {"step": None if step is None else float(step), "interval": list(st.get("interval") or [None, None]),
                 "level": st.get("level"),
                 "status": st.get("source", ""), "cause": st.get("cause_said") or st.get("cause"),
                 "left": float("inf") if step is None else
                 (max(0.0, float(step) - last) if last is not None else None)}
    ranked = stall if stall is not None else expiry
    return {"expiry": expiry, "stall": stall, "forecast": "stall" if stall is not None else "expiry",
            "left": ranked["left"]}


def _spark(mixed) -> list:
    """The observed mixed share averaged in at most :data:`SPARK_POINTS` bins of consecutive steps."""
    m = np.asarray(mixed, float)
    if len(m) <= SPARK_POINTS:
        return m.tolist()
    edges = np.linspace(0, len(m), SPARK_POINTS + 1).astype(int)
    return [float(np.mean(m[a:b])) for a, b in zip(edges[:-1], edges[1:])]


def rank_key(forecast: dict | None) -> tuple:
    """Sort key of a run's :func:`run_forecast` (see the module docstring): fewest steps left first; among runs
    with as many left (expired now, beyond the horizon), the lower fitted mixed share first."""
    if forecast is None or forecast.get("left") is None:
        return (2, 0.0, 0.0)
    left, now = forecast["left"], forecast.get("fit_now") or 0.0
    return (1, 0.0, now) if np.isinf(left) else (0, float(left), now)
