r"""The run's population and its drift fitted from per-step scalars alone (no group's rewards).

**Model.** A step's groups are K rollouts on prompts drawn afresh from the population; prompt x's pass
rate at step s is p_x(s) with p_x(s_first) ~ Beta(alpha, beta) and a drift shared by every prompt:

* ``logit`` (default): logit p_x(s) = logit p_x(s_first) + g t, t = (s - s_first) / (s_last - s_first)
  (the parametrisation of :mod:`.forecast`'s trend, so g is comparable with its slope beta);
* ``power``: p_x(s) = p_x(s_first) ** (1 / (1 + g t)) (:mod:`grpo_lab.sims.decay`'s map; g > -1).

At step s a group is all-pass with probability pi_pass(s) = E[p(s)^K], all-fail with
pi_fail(s) = E[(1 - p(s))^K], mixed otherwise; E[.] over Beta(alpha, beta): for the logit map by cells in
logit p with each cell's mass and moments exact (incomplete beta functions) and a second-order expansion within
it (:func:`_logit_moments`; within 3e-5 of adaptive quadrature at 30 digits for alpha, beta in [0.02, 400],
drifts up to 25 in logit and K up to 16, where Gauss-Jacobi quadrature on 128 nodes was off by 0.01: the drifted
integrand changes within exp(-|g t|) of 0 or 1); for the power map in closed form (:func:`_power_moments`).

**Likelihood.** Each step's logged shares times its groups (``groups_per_step``) are counts of a
multinomial over the classes the shares resolve: (all-pass, all-fail, mixed) where two of
``frac_all_pass``, ``frac_all_fail``, ``frac_reward_zero_std`` are logged (the third is their sum or
difference, binary rewards), (unanimous, mixed) where only the zero-std share is, (all-pass, rest) or
(all-fail, rest) where only one is. Where ``reward_mean`` is logged (and lies within [all-pass, 1 - all-fail],
a pass rate), the step's total successes Y = reward_mean K n enter given those counts: Y is the sum of the
groups' successes, each drawn from its class's conditional law, so Y | counts is approximately
Normal(sum_c n_c E[S | c], sum_c n_c Var(S | c)) (central limit; E[S 1_c] and E[S^2 1_c] from E[p], E[p^2]
and pi_pass), a factor of the exact likelihood P(counts) P(Y | counts). The log-likelihood is maximised
over theta = (log alpha, log beta, g) by BFGS (parameters clipped to their bounds) from three starts.

**Which map.** :func:`fit_models` fits every map and weighs them with the group path's chooser
(:func:`.choice.lfo_weights`: leave-future-out scores at rolling origins, pseudo-BMA+ weights; :func:`lfo_choice`);
:func:`best_fit` keeps the largest weight, or a simpler map within a factor :data:`PARSIMONY` of it. (The smallest
AIC decided before; ``aic`` is still reported.)

**Rounds.** A step that logs no share but its generation rounds R (verl's ``train/num_gen_batches``; the record's
``rounds``), with the batch sizes known, enters by log P(R = r | u(s)): rounds of B = gen_batch fresh prompts until
T = train_batch mixed groups are kept, so P(R <= r) = P(Binomial(r B, u) >= T), u = 1 - pi_pass - pi_fail
(:func:`.drift.rounds_logp`, the group path's rounds likelihood; :func:`.stall.rounds_distribution`'s law). It
identifies the mixed share only, as the zero-std share does. A step that raised at the cap is not logged (verl), so
no P(R > cap) term enters.

**Intervals.** Wald intervals from the observed information (the numerical Hessian of the negative
log-likelihood at the optimum): for alpha and beta on the log scale, for g directly, and for a share at
any step on the logit scale by the delta method. Their coverage is measured in
``benchmarks/scalars_coverage.py`` (docs/doctor.md). Where rows of rounds enter, the drift's interval is its
profile likelihood's instead (:func:`_profile_drift`, ``interval_method``): the rounds' likelihood of g is far from
quadratic and the Wald interval under-covered (``benchmarks/rounds_coverage.py``).

**Identifiability.** The zero-std share alone cannot tell all-pass from all-fail: (alpha, beta, g) and
(beta, alpha, -g) give the same unanimous shares, so only the mixed share (and what depends on it only:
the expiry and the stall forecast) is identified; the split, the population's side and the drift's sign
need ``frac_all_pass`` / ``frac_all_fail`` or the mean reward. ``identified`` says which.

Edge cases: steps whose groups or every share are NaN are dropped; fewer than :data:`MIN_STEPS` usable
steps, an unknown K or unknown groups per step raise :class:`~grpo_lab.sims.errors.InputError`. Prompts
repeating across epochs are treated as fresh draws (the fit sees no prompt identity).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy.special import betainc, betaln, comb, expit, logit, logsumexp

from ..errors import InputError
from ..record import RunRecord
from ..scalars_record import is_scalars_only
from .choice import lfo_weights, origins
from .drift import rounds_logp
from .profile_interval import profile_interval

__all__ = ["CELL", "MODELS", "MIN_STEPS", "StepShares", "step_shares", "fit_scalars", "fit_models", "best_fit", "lfo_choice",
           "shares_at", "usable_rows", "observed_series",
           "population_moments", "draws"]

CELL = 0.4  #: width in logit p of the cells of every expectation over the Beta population (error < 3e-5)
PAD = 25.0  #: the cells reach this far in logit p past where the drifted pass rate's moments are constant
T_GRID = 512  #: more times than this per unit of t: moments on this many per unit, interpolated (error < 1e-5 for |g| <= 5)
POWER_MAX_K = 24  #: the power map's closed form is used up to this K
MODELS = ("logit", "power", "logit_stuck")  #: drift maps (see the module docstring)
MIN_STEPS = 3  #: fewer usable steps than this: no fit
LOG_BOUNDS = (np.log(1e-2), np.log(1e3))  #: bounds of log alpha, log beta
DRIFT_BOUNDS = {"logit": (-25.0, 25.0), "power": (-0.95, 60.0), "logit_stuck": (-25.0, 25.0)}  #: bounds of g
STUCK_BOUNDS = (-12.0, 3.0)  #: bounds of logit w0, the never-solved share of ``logit_stuck``
Z95 = 1.959963984540054  #: standard normal 97.5% quantile
Y_FLOOR = 0.25  #: variance floor (successes^2) of a step's total successes: the rounding of a logged mean
DRAWS = 400  #: parameter draws from the fit's normal approximation for the forecasts' intervals
MAX_ROWS = 4096  #: more usable rows than this: consecutive rows pooled into bins for the fit (:func:`_pool`)
LFO_ORIGINS = 6  #: rolling origins of the drift maps' leave-future-out choice (:func:`lfo_choice`)
LFO_DRAWS = 64  #: parameter draws of each scored row's predictive density there
LFO_MAX_ROWS = 256  #: the refits there pool rows beyond this many (bins of 1 / 255 of the rows before the origin)
LFO_MAX_SCORED = 2048  #: the rows scored there, at most (every n-th row of a longer record: its blocks evenly thinned)
SPREAD = 3.0  #: concentration alpha + beta of the profile's second start (:func:`_spread_start`)
PROFILE_ROWS = 64  #: the drift's profile likelihood (rows of rounds) pools the rows into at most this many bins
PARSIMONY = 0.5  #: a map with fewer parameters is kept over one whose weight is at most 1 / this times its own
_EPS = 1e-300

# Observed classes over the three atoms (all-pass, all-fail, mixed), one row per kind of step
_KINDS = {
    "trinomial": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
    "unanimous": ((1, 1, 0), (0, 0, 1), (0, 0, 0)),
    "all_pass": ((1, 0, 0), (0, 1, 1), (0, 0, 0)),
    "all_fail": ((0, 1, 0), (1, 0, 1), (0, 0, 0)),
    "mean_only": ((1, 1, 1), (0, 0, 0), (0, 0, 0)),
    "rounds": ((0, 0, 0), (0, 0, 0), (0, 0, 0)),  # no share: the rounds' likelihood instead (:func:`_row_loglik`)
}


@dataclass
class StepShares:
    """Per-step shares of one run, as the fit reads them (NaN where not logged)."""

    step: np.ndarray
    n: np.ndarray  #: groups per step
    all_pass: np.ndarray
    all_fail: np.ndarray
    zero_std: np.ndarray
    reward_mean: np.ndarray
    K: int
    name: str = ""
    notes: list = field(default_factory=list)
    rounds: np.ndarray | None = None  #: generation rounds per step (verl's train/num_gen_batches); NaN: not logged
    settings: dict | None = None  #: ``gen_batch`` and ``train_batch`` of the rounds' likelihood (None: not used)

    def subset(self, mask) -> "StepShares":
        m = np.asarray(mask, bool)
        return StepShares(self.step[m], self.n[m], self.all_pass[m], self.all_fail[m], self.zero_std[m],
                          self.reward_mean[m], self.K, self.name, list(self.notes),
                          None if self.rounds is None else self.rounds[m], self.settings)


def _column(steps: dict, key: str, n: int) -> np.ndarray:
    v = steps.get(key)
    return np.full(n, np.nan) if v is None or len(v) != n else np.asarray(v, float)


def step_shares(record: RunRecord, *, num_generations: int | None = None,
                groups_per_step: int | None = None, settings: dict | None = None) -> StepShares:
    """The record's per-step shares for :func:`fit_scalars`.

    K: ``num_generations`` if given, else the record's (``meta['num_generations']``, or its groups' width
    for a record with groups). Groups per step: the record's ``groups_per_step`` column where finite, else
    ``groups_per_step`` if given, else (a record with groups) the groups the record holds at that step.
    Rounds: the record's ``rounds`` column (verl's ``train/num_gen_batches``), used where a step logs no share
    and ``settings`` (a trainer config / flags: ``gen_batch``, ``train_batch``) give the batch sizes; there the
    groups a step drew are rounds x gen_batch. Raises InputError (one line) when K or the groups per step are
    unknown, or the record has no share and no rounds it can use (naming the flags that would fix it).
    """
    steps = record.steps or {}
    if "step" not in steps or not len(steps["step"]):
        raise InputError("the record has no per-step scalars to fit")
    step = np.asarray(steps["step"], np.int64)
    n_rows = len(step)
    scal = is_scalars_only(record)
    K = num_generations or (record.meta.get("num_generations") if scal else None) or \
        (None if scal else int(np.asarray(record.groups["rewards"]).shape[1]))
    if not K:
        raise InputError("the number of rollouts per prompt (K) is unknown: give --num-generations, or a "
                         "--trainer-config that says it")
    K = int(K)
    if K < 2:
        raise InputError(f"K must be at least 2 for the shares to say anything, got {K}")
    n = _column(steps, "groups_per_step", n_rows)
    rounds = _column(steps, "rounds", n_rows)
    rounds_ok = np.isfinite(rounds) & (rounds >= 1)
    use_rounds = bool(settings and settings.get("gen_batch") and settings.get("train_batch") and rounds_ok.any())
    if use_rounds:  # a step with rounds drew rounds x gen_batch groups
        n = np.where(np.isfinite(n), n, np.where(rounds_ok, rounds * int(settings["gen_batch"]), np.nan))
    if groups_per_step is not None:
        if int(groups_per_step) < 1:
            raise InputError(f"groups per step must be a positive integer, got {groups_per_step!r}")
        n = np.where(np.isfinite(n), n, float(groups_per_step))
    if not scal and not np.all(np.isfinite(n)):
        gs, counts = np.unique(np.asarray(record.groups["step"]), return_counts=True)
        held = np.zeros(n_rows)
        pos = np.searchsorted(gs, step)
        ok = (pos < len(gs)) & (gs[np.minimum(pos, len(gs) - 1)] == step)
        held[ok] = counts[pos[ok]]
        n = np.where(np.isfinite(n), n, np.where(held > 0, held, np.nan))
    shares = {k: _column(steps, k, n_rows) for k in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std",
                                                     "reward_mean")}
    if not any(np.isfinite(v).any() for v in shares.values()):
        if not rounds_ok.any():
            raise InputError("the record logs none of frac_all_pass, frac_all_fail, frac_reward_zero_std, "
                             "reward_mean, rounds")
        if not (settings and settings.get("gen_batch") and settings.get("train_batch")):
            raise InputError("the record logs only the rounds per step (num_gen_batches): their likelihood needs the "
                             "batch sizes: give --trainer-config, or --gen-batch-size and --train-batch-size")
    if not np.isfinite(n).any():
        raise InputError("the groups per step are unknown: give --groups-per-step, or a --trainer-config with the "
                         "batch size")
    return StepShares(step, n, shares["frac_all_pass"], shares["frac_all_fail"], shares["frac_reward_zero_std"],
                      shares["reward_mean"], K, str(record.meta.get("name") or ""), [],
                      rounds if use_rounds else None,
                      {"gen_batch": int(settings["gen_batch"]), "train_batch": int(settings["train_batch"]),
                       "cap": int(settings.get("cap") or 0)} if use_rounds else None)


def _resolve(d: StepShares):
    """(kind per step, counts (steps, 3), use reward mean per step, notes, keep mask)."""
    ap, af, zs, rm = d.all_pass, d.all_fail, d.zero_std, d.reward_mean
    ap = np.where(np.isfinite(ap), ap, np.where(np.isfinite(zs) & np.isfinite(af), zs - af, np.nan))
    af = np.where(np.isfinite(af), af, np.where(np.isfinite(zs) & np.isfinite(ap), zs - ap, np.nan))
    kind = np.full(len(d.step), "", object)
    counts = np.zeros((len(d.step), 3))
    n = d.n
    both = np.isfinite(ap) & np.isfinite(af)
    kind[both] = "trinomial"
    counts[both] = np.stack([ap, af, 1 - ap - af], 1)[both]
    u = ~both & np.isfinite(zs)
    kind[u] = "unanimous"
    counts[u, 0], counts[u, 1] = zs[u], 1 - zs[u]
    for key, arr in (("all_pass", ap), ("all_fail", af)):
        m = (kind == "") & np.isfinite(arr)
        kind[m] = key
        counts[m, 0], counts[m, 1] = arr[m], 1 - arr[m]
    lo = np.where(np.isfinite(ap), ap, 0.0)
    hi = 1 - np.where(np.isfinite(af), af, 0.0)
    rm_ok = np.isfinite(rm) & (rm >= lo - 1e-6) & (rm <= hi + 1e-6)
    notes = []
    if np.isfinite(rm).any() and not rm_ok[np.isfinite(rm)].all():
        notes.append(f"reward_mean left out: at {int(np.sum(np.isfinite(rm) & ~rm_ok))} step(s) it lies outside "
                     "[all-pass, 1 - all-fail], so it is not a pass rate (shaped or non-binary rewards)")
        rm_ok[:] = False
    m = (kind == "") & rm_ok
    kind[m] = "mean_only"
    counts[m, 0] = 1.0
    if d.rounds is not None and d.settings is not None:  # no share, the rounds: their own likelihood
        kind[(kind == "") & np.isfinite(d.rounds) & (d.rounds >= 1)] = "rounds"
    keep = (kind != "") & np.isfinite(n) & (n > 0)
    counts = np.clip(counts, 0.0, 1.0) * np.where(np.isfinite(n), n, 0.0)[:, None]
    return kind, counts, rm_ok, notes, keep


def _logit_moments(a: float, b: float, c: np.ndarray, K: int, shares: bool = False) -> dict:
    """E[q^K], E[(1 - q)^K], E[q], E[q^2] with q = expit(logit p + c), p ~ Beta(a, b), for each c (all >= 0);
    ``shares``: the first two only.

    Cells of width :data:`CELL` in z = logit p over [-max c - :data:`PAD`, :data:`PAD`] plus the two tails; each
    cell's mass, E[p] and E[p^2] exactly (regularised incomplete beta of (a, b), (a + 1, b), (a + 2, b)); the
    integrand expanded to second order in z about logit of the cell's mean p (the mean's first-order offset
    in z and the variance of z by the delta method). Outside the window the integrand is constant to 1e-10.
    The (c, cell) tables are formed in three work arrays, each product in the order of the formulas above (the
    same floats as forming each term anew, without a new table per term)."""
    z = np.arange(-float(np.max(c)) - PAD, PAD + CELL, CELL)
    p = expit(z)
    inc = [np.concatenate([[0.0], betainc(a + j, b, p), [1.0]]) for j in range(3)]
    mass = np.diff(inc[0])
    s = a + b
    ok = mass > 1e-300
    safe = np.where(ok, mass, 1.0)
    pl, ph = np.concatenate([[0.0], p]), np.concatenate([p, [1.0]])
    pbar = np.clip(np.where(ok, a / s * np.diff(inc[1]) / safe, (pl + ph) / 2), np.maximum(pl, 1e-300),
                   np.minimum(ph, 1 - 1e-16))
    var = np.clip(np.where(ok, a * (a + 1) / (s * (s + 1)) * np.diff(inc[2]) / safe - pbar**2, 0.0), 0.0,
                  (ph - pl) ** 2 / 4)
    d2 = np.maximum((pbar * (1 - pbar)) ** 2, np.finfo(float).tiny)  # a far-tail cell's pbar ~ 1e-300 squares to 0
    w1, w2 = 0.5 * (2 * pbar - 1) / d2 * var * mass, 0.5 * var / d2 * mass  # E[z] - z_bar, Var z / 2
    r = np.clip(logit(pbar)[None, :] + np.asarray(c, float)[:, None], -700.0, 700.0)  # x = logit p + c
    np.exp(np.negative(r, out=r), out=r)  # e = exp(-x)
    q = r + 1
    np.reciprocal(q, out=q)  # q = 1 / (1 + e)
    r *= q  # r = e q = 1 - q
    f, fz, fzz = np.empty_like(q), np.empty_like(q), np.empty_like(q)

    def E(f):  # f @ mass + fz @ w1 + fzz @ w2
        return f @ mass + fz @ w1 + fzz @ w2

    np.power(q, K, out=f)  # all-pass: q^K, K q^K r, K q^K r (K r - q)
    np.multiply(np.multiply(f, K, out=fz), r, out=fz)
    np.multiply(np.subtract(np.multiply(r, K, out=fzz), q, out=fzz), fz, out=fzz)
    out = {"all_pass": E(f)}
    np.power(r, K, out=f)  # all-fail: r^K, -K r^K q, K r^K q (K q - r) = -fz (K q - r)
    np.multiply(np.multiply(f, -K, out=fz), q, out=fz)
    np.negative(np.multiply(np.subtract(np.multiply(q, K, out=fzz), r, out=fzz), fz, out=fzz), out=fzz)
    out["all_fail"] = E(f)
    if shares:
        return out
    np.multiply(q, r, out=fz)  # mean: q, q r, q r (1 - 2 q)
    np.multiply(np.add(np.multiply(q, -2.0, out=fzz), 1.0, out=fzz), fz, out=fzz)
    out["mean"] = E(q)
    np.multiply(fz, np.multiply(q, 2.0, out=f), out=fz)  # second: q^2, 2 q q r, 2 q q r (2 r - q)
    np.multiply(np.subtract(np.multiply(r, 2.0, out=fzz), q, out=fzz), fz, out=fzz)
    out["second"] = E(np.multiply(q, q, out=f))
    return out


def _power_moments(a: float, b: float, t: np.ndarray, g: float, K: int) -> dict:
    """The same for q = p ** s, s = 1 / (1 + g t), in closed form: E[p^m] = B(a + m, b) / B(a, b) and
    E[(1 - p^s)^K] = sum_j C(K, j) (-1)^j E[p^(s j)] (K <= :data:`POWER_MAX_K`: the alternating sum keeps
    about 1e-11)."""
    sexp = 1.0 / np.maximum(1.0 + g * np.asarray(t, float), 1e-6)
    j = np.arange(K + 1)
    m = np.exp(betaln(a + sexp[:, None] * j[None, :], b) - betaln(a, b))  # E[p^(s j)], steps x (K + 1)
    fail = np.clip(m @ (comb(K, j) * (-1.0) ** j), 0.0, 1.0)
    return {"all_pass": m[:, K], "all_fail": fail, "mean": m[:, 1],
            "second": np.exp(betaln(a + 2 * sexp, b) - betaln(a, b))}


def population_moments(theta, t, K: int, model: str = "logit", shares: bool = False) -> dict:
    """pi_pass, pi_fail, E[p], E[p^2] at times t for theta = (log alpha, log beta, g); ``shares``: pi_pass and
    pi_fail only (what the shares' likelihood and the mixed share read: the logit map's tables for E[p], E[p^2]
    are not formed)."""
    a, b = np.exp(np.clip(theta[:2], *LOG_BOUNDS))
    g = float(theta[2])
    t = np.atleast_1d(np.asarray(t, float))
    span = float(t.max() - t.min())
    grid = max(16, int(np.ceil(T_GRID * min(span, 1.0))))  # times at most 1 / T_GRID apart within a unit span
    if len(t) > grid:  # many steps: the moments on the grid, linearly interpolated (smooth in t)
        at = np.linspace(t.min(), t.max(), grid)
        m = population_moments(theta, at, K, model, shares)
        return {k: np.interp(t, at, v) for k, v in m.items()}
    if model == "power":
        return _power_moments(a, b, t, g, K)
    if model == "logit_stuck":  # a share w0 of the prompts never solved (p = 0), the rest under the logit drift
        w0 = float(expit(theta[3]))
        m = population_moments(theta[:3], t, K, "logit", shares)
        return {"all_pass": (1 - w0) * m["all_pass"], "all_fail": w0 + (1 - w0) * m["all_fail"],
                **({} if shares else {"mean": (1 - w0) * m["mean"], "second": (1 - w0) * m["second"]})}
    if g >= 0:
        return _logit_moments(a, b, g * t, K, shares)
    m = _logit_moments(b, a, -g * t, K, shares)  # p -> 1 - p: the cells stay where floats are fine (p small)
    return {"all_pass": m["all_fail"], "all_fail": m["all_pass"],
            **({} if shares else {"mean": 1 - m["mean"], "second": 1 - 2 * m["mean"] + m["second"]})}


def class_moments(s1, s2, cls):
    """(mean, variance) of a group's successes given its class: E[S 1_c] / P(c) and E[S^2 1_c] / P(c) - mean^2, from
    ``s1``, ``s2`` and ``cls`` = P(c) of the same shape. A class of (near) zero probability adds no successes: its
    moments are 0, not a division by a tiny number whose square overflows (its rows' counts are penalised by the
    multinomial term already)."""
    on = cls > _EPS
    mu = np.divide(s1, cls, out=np.zeros_like(s1), where=on)
    return mu, np.maximum(np.divide(s2, cls, out=np.zeros_like(s2), where=on) - mu**2, 0.0)


def _row_loglik(theta, P: dict, K: int, model: str) -> np.ndarray:
    """The log-likelihood of each row of ``P`` (:func:`_prepare`) at theta: the multinomial of its classes, the
    normal factor of its total successes where the mean reward is used, and for a row of rounds (no share)
    w log P(R = r | u(t)) (:func:`.drift.rounds_logp`, u the mixed share; w the rows pooled into it)."""
    t, masks, counts, y, y_on = P["t"], P["masks"], P["counts"], P["y"], P["y_on"]
    mo = population_moments(theta, t, K, model, shares=not y_on.any())
    pap, paf = mo["all_pass"], mo["all_fail"]
    atoms = np.stack([pap, paf, np.clip(1 - pap - paf, 0.0, 1.0)], 1)  # steps x 3
    cls = np.einsum("sca,sa->sc", masks, atoms)
    ll = np.sum(np.where(counts > 0, counts * np.log(np.maximum(cls, _EPS)), 0.0), 1)
    r_on = P["r_on"]
    if r_on.any():
        ll[r_on] += P["r_rows"][r_on] * rounds_logp(P["r"][r_on], atoms[r_on, 2], P["B"], P["T"])
    if y_on.any():
        e1, e2 = mo["mean"][y_on], mo["second"][y_on]
        m1 = np.stack([K * pap[y_on], np.zeros_like(e1), K * e1 - K * pap[y_on]], 1)
        m2 = np.stack([K * K * pap[y_on], np.zeros_like(e1), K * e1 + K * (K - 1) * e2 - K * K * pap[y_on]], 1)
        M = masks[y_on]
        mu, var = class_moments(np.einsum("sca,sa->sc", M, m1), np.einsum("sca,sa->sc", M, m2), cls[y_on])
        nc = counts[y_on]
        mean = np.sum(nc * mu, 1)
        v = np.sum(nc * var, 1) + Y_FLOOR
        ll[y_on] += -0.5 * np.log(2 * np.pi * v) - 0.5 * (y[y_on] - mean) ** 2 / v
    return ll


def _hessian(f, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Central-difference Hessian of f at x with steps h per coordinate."""
    k = len(x)
    H = np.empty((k, k))
    for i in range(k):
        for j in range(i, k):
            ei, ej = np.eye(k)[i] * h[i], np.eye(k)[j] * h[j]
            H[i, j] = H[j, i] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h[i] * h[j])
    return H


def _prepare(d: StepShares, span=None, pool: bool = True, max_rows: int = MAX_ROWS):
    """The fit's rows of ``d``: kinds, class counts, masks, successes, rounds, t = (step - s0) / (s1 - s0) with
    [s0, s1] = ``span`` (default the usable rows' first and last step; a later block is scored on the span of the
    fit it is scored against, :func:`lfo_choice`, without the :data:`MIN_STEPS` check and unpooled)."""
    kind, counts, rm_ok, notes, keep = _resolve(d)
    if span is None and int(keep.sum()) < MIN_STEPS:
        raise InputError(f"the scalars fit needs at least {MIN_STEPS} steps with a share (or rounds) and their "
                         f"groups, the record has {int(keep.sum())}")
    step = d.step[keep]
    s0, s1 = (int(step[0]), int(step[-1])) if span is None else span
    t = (step - s0) / max(s1 - s0, 1)
    uniq, inv = np.unique(kind[keep].astype(str), return_inverse=True)  # one lookup per kind, not per row
    masks = np.array([_KINDS[k] for k in uniq], float).reshape(len(uniq), 3, 3)[inv.reshape(-1)]
    y = np.where(rm_ok, d.reward_mean, 0.0)[keep] * d.K * d.n[keep]
    r_on = kind[keep] == "rounds"
    st = d.settings or {}
    P = {"kind": kind[keep], "counts": counts[keep], "masks": masks, "y": y, "y_on": rm_ok[keep], "t": t,
         "step": step, "n": d.n[keep], "s0": s0, "s1": s1, "notes": notes, "rows": int(len(step)), "pooled": 1,
         "r": np.where(r_on, d.rounds[keep], 1.0) if r_on.any() else np.ones(len(step)), "r_on": r_on,
         "r_rows": np.ones(len(step)), "B": st.get("gen_batch"), "T": st.get("train_batch")}
    return _pool(P, max_rows) if pool else P


def usable_rows(d: StepShares) -> tuple[int, float]:
    """(rows, groups) :func:`fit_scalars` fits of ``d`` (its ``n_steps`` and ``groups``), without fitting; raises
    InputError as it does (fewer than :data:`MIN_STEPS` usable rows)."""
    P = _prepare(d)
    return P["rows"], float(P["n"].sum())


def _pool(P: dict, max_rows: int = MAX_ROWS) -> dict:
    """More than ``max_rows`` (:data:`MAX_ROWS`) rows: consecutive rows of one kind pooled into bins of at most
    ceil((rows - 1) / (max_rows - 1)) rows (the last row kept alone). A bin's counts, groups and successes are
    the sums of its rows' (exact for the multinomial where the class probabilities are equal across the bin; they
    move by at most the drift over a bin, 1 / (MAX_ROWS - 1) of the run), its t the groups-weighted mean."""
    m = P["rows"]
    if m <= max_rows:
        return P
    size = int(np.ceil((m - 1) / (max_rows - 1)))
    block = np.arange(m) // size
    block[-1] = block[-2] + 1
    kind, y_on, r = P["kind"], P["y_on"], P["r"]
    starts = np.flatnonzero(np.r_[True, (block[1:] != block[:-1]) | (kind[1:] != kind[:-1]) | (y_on[1:] != y_on[:-1])
                                  | (r[1:] != r[:-1])])  # rows of rounds pool only with rows of the same rounds
    n = np.add.reduceat(P["n"], starts)
    t = np.add.reduceat(P["t"] * P["n"], starts) / n
    step = np.round(np.add.reduceat(P["step"] * P["n"], starts) / n).astype(np.int64)
    step[-1] = P["step"][-1]
    return {**P, "kind": kind[starts], "counts": np.add.reduceat(P["counts"], starts, axis=0), "masks": P["masks"][starts],
            "y": np.add.reduceat(P["y"], starts), "y_on": y_on[starts], "t": t, "step": step, "n": n, "pooled": size,
            "r": r[starts], "r_on": P["r_on"][starts], "r_rows": np.add.reduceat(P["r_rows"], starts)}


def _start_points(P, K):
    """Moment-style starts: the pooled mean pass rate (from all-fail / unanimous shares) at a few drifts."""
    c = P["counts"].sum(0)
    tot = P["n"].sum()
    share_fail = c[1] / tot if (P["kind"] == "trinomial").any() else 0.3
    m = float(np.clip(1 - share_fail ** (1 / K), 0.05, 0.95))
    for spread in (2.0,):
        for g in (0.0, 1.5, -1.5):
            yield np.array([np.log(m * spread), np.log((1 - m) * spread), g])


def _bounds(model: str) -> list:
    """Bounds of theta per parameter: log alpha, log beta, g (and logit w0 for ``logit_stuck``)."""
    return [LOG_BOUNDS, LOG_BOUNDS, DRIFT_BOUNDS[model]] + ([STUCK_BOUNDS] if model == "logit_stuck" else [])


def fit_scalars(d: StepShares, model: str = "logit", start=None, restart: bool = True,
                max_rows: int = MAX_ROWS, profile: bool = True) -> dict:
    """ML fit of the population and its drift from the per-step shares (see the module docstring).

    Returns ``model``, ``K``, ``alpha``, ``beta``, ``drift`` (g), their ``se_*`` and 95% ``intervals``,
    ``theta`` / ``cov`` (log alpha, log beta, g), ``loglik``, ``steps`` [s_first, s_last], ``n_steps``,
    ``groups``, ``used`` (step kinds and counts, reward mean used or not), ``identified``, ``notes``,
    ``last`` (fitted all-pass / all-fail / mixed at the last step with intervals, and the observed shares there),
    ``series`` (observed and fitted per step). ``start``: a theta to start from (e.g. the previous fit); where
    the fit from it lands on a bound, the cold starts are tried too unless ``restart`` is False. ``max_rows``: rows
    beyond which consecutive rows are pooled (:func:`_pool`). ``profile``: where rows of rounds enter, the drift's
    interval by its profile likelihood (:func:`profile_drift`; False keeps the Wald interval, for refits whose
    interval is not read).
    """
    if model not in MODELS:
        raise InputError(f"scalars fit: unknown drift model {model!r}; one of {', '.join(MODELS)}")
    if model == "power" and d.K > POWER_MAX_K:
        raise InputError(f"scalars fit: the power map's closed form is kept to K <= {POWER_MAX_K}, got K = {d.K}")
    P = _prepare(d, max_rows=max_rows)
    K = d.K
    bounds = _bounds(model)

    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])

    def nll(x):
        return -float(np.sum(_row_loglik(np.clip(x, lo, hi), P, K, model)))

    starts = list(_start_points(P, K)) if start is None else [np.asarray(start, float)]
    if model == "logit_stuck":
        starts = [np.append(x0[:3], -3.0) if len(x0) == 3 else x0 for x0 in starts]
    best = None
    for x0 in starts:
        res = optimize.minimize(nll, np.clip(x0, lo, hi), method="BFGS", options={"gtol": 1e-5 * (1 + P["n"].sum())})
        if best is None or res.fun < best.fun:
            best = res
    x = np.clip(best.x, lo, hi)
    if start is not None and restart and np.any(np.minimum(np.abs(x - lo), np.abs(x - hi)) < 1e-6):
        return fit_scalars(d, model, max_rows=max_rows, profile=profile)  # a warm start that landed on a bound: the cold starts too
    at_bound = bool(np.any([min(abs(x[i] - lo), abs(x[i] - hi)) < 1e-6 for i, (lo, hi) in enumerate(bounds)]))
    H = _hessian(nll, x, np.full(len(x), 1e-3))
    try:
        np.linalg.cholesky(H)
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        cov = np.full((len(x), len(x)), np.nan)
    se = np.sqrt(np.diag(cov))
    kinds = {k: int(np.sum(P["kind"] == k)) for k in _KINDS if np.any(P["kind"] == k)}
    split = any(k in kinds for k in ("trinomial", "all_pass", "all_fail")) or bool(P["y_on"].any())
    identified = {"mixed_share": True, "split": split, "population": split and bool(np.all(np.isfinite(se)))}
    notes = list(d.notes) + P["notes"]
    if P["pooled"] > 1:
        notes.append(f"{P['rows']:,} rows: consecutive rows of one kind pooled into {len(P['step']):,} bins of up to "
                     f"{P['pooled']} for the fit (the series below holds the bins; the last row alone)")
    if not split:
        what = ("the zero-std share and the rounds per step are" if len(kinds) > 1 else "the zero-std share is"
                if "unanimous" in kinds else "the rounds per step are")
        notes.append(f"only {what} logged: the mixed share, the expiry and the stall forecast are "
                     "identified; which of all-pass / all-fail the unanimous groups are, the population's side "
                     "(alpha vs beta) and the drift's sign are not (need frac_all_pass / frac_all_fail or the mean "
                     "reward)")
    if "rounds" in kinds:
        notes.append(f"{kinds['rounds']} step(s) log no share but their rounds: fitted by the rounds' likelihood "
                     f"(P(R = r | mixed share), generation batch {d.settings['gen_batch']}, train batch "
                     f"{d.settings['train_batch']})")
    blo, bhi = np.exp(LOG_BOUNDS[0]), np.exp(LOG_BOUNDS[1])
    dlo, dhi = DRIFT_BOUNDS[model]
    out = {"model": model, "K": K, "alpha": float(np.exp(x[0])), "beta": float(np.exp(x[1])), "drift": float(x[2]),
           "theta": x, "cov": cov, "loglik": -float(best.fun), "at_bound": at_bound,
           "bounds": bound_words(x, bounds, model),
           "se_log_alpha": float(se[0]), "se_log_beta": float(se[1]), "se_drift": float(se[2]),
           "intervals": {"alpha": _clipped(*_exp_bounds(x[0], se[0]), blo, bhi),
                         "beta": _clipped(*_exp_bounds(x[1], se[1]), blo, bhi),
                         "drift": _clipped(x[2] - Z95 * se[2], x[2] + Z95 * se[2], dlo, dhi)},
           "n_params": int(len(x)), "aic": 2 * len(x) + 2 * float(best.fun),
           "steps": [P["s0"], P["s1"]], "n_steps": P["rows"], "groups": float(P["n"].sum()),
           "pooled_rows": P["pooled"],
           "used": {"kinds": kinds, "reward_mean_steps": int(P["y_on"].sum())},
           "identified": identified, "notes": notes}
    for k, (a, b) in (("alpha", (blo, bhi)), ("beta", (blo, bhi)), ("drift", (dlo, dhi))):
        lo_, hi_ = out["intervals"][k]
        if lo_ <= a or hi_ >= b:
            out["bounds"].append(f"the 95% interval of {k} reaches its {'lower' if lo_ <= a else 'upper'} bound "
                                 f"({a if lo_ <= a else b:g}) and is clipped there: the log does not limit it")
    if model == "logit_stuck":
        out["stuck"] = float(expit(x[3]))
        out["intervals"]["stuck"] = [float(expit(np.clip(x[3] - Z95 * se[3], *STUCK_BOUNDS))),
                                     float(expit(np.clip(x[3] + Z95 * se[3], *STUCK_BOUNDS)))]
    if profile and "rounds" in kinds:
        _profile_drift(out, P, K, model)
    out["last"] = {**shares_at(out, [P["s1"]], intervals=True, scalar=True),
                   "step": P["s1"], "observed": _observed_last(d, P)}
    out["series"] = {**observed_series(P), **{f"fitted_{k}": v for k, v in shares_at(out, P["step"]).items()}}
    return out


def observed_series(P: dict) -> dict:
    """``step``, ``kind``, ``groups`` and the logged ``observed_all_pass`` / ``observed_all_fail`` /
    ``observed_mixed`` share per row of :func:`_prepare`'s ``P`` (NaN where the row does not resolve it)."""
    obs = P["counts"] / P["n"][:, None]
    kind = P["kind"]
    return {"step": P["step"], "kind": kind, "groups": P["n"],
            "observed_all_pass": np.where(np.isin(kind, ["trinomial", "all_pass"]), obs[:, 0], np.nan),
            "observed_all_fail": np.where(kind == "trinomial", obs[:, 1], np.where(kind == "all_fail", obs[:, 0], np.nan)),
            "observed_mixed": np.where(kind == "trinomial", obs[:, 2], np.where(kind == "unanimous", obs[:, 1], np.nan))}


_NAMES = ("alpha", "beta", "drift g", "never-solved share (logit)")



def fit_models(d: StepShares, starts: dict | None = None) -> dict:
    """``{model: fit}``: :func:`fit_scalars` for every drift map of :data:`MODELS` (the power map only up to
    :data:`POWER_MAX_K`), each warm-started from ``starts[model]`` where given; each fit's ``choice`` holds its
    leave-future-out weight and score (:func:`lfo_choice`)."""
    starts = starts or {}
    fits = {m: fit_scalars(d, m, start=starts.get(m), profile=False)
            for m in MODELS if m != "power" or d.K <= POWER_MAX_K}
    lfo = lfo_choice(d, fits)
    for m, f in fits.items():
        f["choice"] = {"weight": lfo["weights"][m], "score": None if lfo["scores"] is None else lfo["scores"][m],
                       "scored_steps": lfo["scored_steps"], "rule": "leave-future-out (pseudo-BMA+)"}
    profile_drift(best_fit(fits), d)  # the kept fit's drift interval (rounds only); the others keep their Wald
    return fits


def best_fit(fits: dict) -> dict:
    """The fit the doctor keeps of :func:`fit_models`' fits, by their leave-future-out weights (:func:`lfo_choice`,
    the group path's chooser): of the maps whose weight is at least :data:`PARSIMONY` times the largest, the one
    with the fewest parameters (the first of :data:`MODELS` on a tie). The weights of two maps the data cannot tell
    apart stay near equal (pseudo-BMA+), e.g. the logit map and the logit map beside a never-solved share that fits
    near 0; there the simpler is kept."""
    top = max(f["choice"]["weight"] for f in fits.values())
    return min((f for f in fits.values() if f["choice"]["weight"] >= PARSIMONY * top), key=lambda f: f["n_params"])


def lfo_choice(d: StepShares, fits: dict, max_origins: int = LFO_ORIGINS, n_draws: int = LFO_DRAWS) -> dict:
    """The drift maps of ``fits`` weighed by the doctor's one chooser, :func:`.choice.lfo_weights` (the group path's:
    rolling origins over the usable rows, pseudo-BMA+). At each origin a map is refitted on the rows before it
    (warm-started from its fit to every row) and scores each row up to the next origin by its log predictive
    density: log of the mean over ``n_draws`` parameter draws from the refit's normal approximation (:func:`draws`)
    of the row's likelihood (:func:`_row_loglik`; the refit's own theta where it has no covariance); a refit that
    fails scores -inf. Named deviations from the group path: at most :data:`LFO_ORIGINS` origins (each a full ML
    refit here, a weighted least-squares fit of a shape there), so each block scores several rows; the refits pool
    rows beyond :data:`LFO_MAX_ROWS`; the rows scored are not pooled but thinned to every n-th, n the least that
    leaves at most :data:`LFO_MAX_SCORED` (a 1,000,000-step log scores 2,048 rows, not 500,000: the choice's cost
    stays that of a 4,096-step log, and its weights are those of a 2,048-row score)."""
    kind, _, _, _, keep = _resolve(d)
    rows = np.flatnonzero(keep)
    idx = np.arange(len(d.step))
    cuts = origins(len(rows), max_origins)
    every = max(1, -(-(len(rows) - cuts[0][0]) // LFO_MAX_SCORED)) if cuts else 1

    def point_scores(model, cut, end):
        try:
            f = fit_scalars(d.subset(idx < rows[cut]), model, start=fits[model]["theta"], restart=False,
                            max_rows=LFO_MAX_ROWS, profile=False)
        except InputError:
            return np.full(end - cut, -np.inf)
        B = _prepare(d.subset(np.isin(idx, rows[cut:end][::every])), span=f["steps"], pool=False)
        th = draws(f, n_draws, seed=cut)
        th = th if len(th) else f["theta"][None, :]
        L = np.stack([_row_loglik(x, B, d.K, model) for x in th])
        return logsumexp(L, axis=0) - np.log(len(th))

    return lfo_weights(len(rows), list(fits), point_scores, max_origins=max_origins)


def profile_drift(fit: dict, d: StepShares) -> dict:
    """``fit`` (of ``d``, unpooled up to :data:`MAX_ROWS` rows) with its drift interval by the profile likelihood
    where rows of rounds entered it (:func:`_profile_drift`); unchanged otherwise."""
    if "rounds" not in fit["used"]["kinds"] or fit.get("interval_method", {}).get("drift") == "profile likelihood":
        return fit
    _profile_drift(fit, _prepare(d), d.K, fit["model"])
    return fit


def _profile_drift(out: dict, P: dict, K: int, model: str) -> None:
    """The drift's 95% interval in ``out`` replaced by its profile-likelihood interval (:mod:`.profile_interval`).

    Why, for the rounds: a step's rounds R hold little more than one bit (mostly R = 1 or 2: "at least T of B
    mixed" or not), so the likelihood of g is far from quadratic. It runs along a ridge with the population's
    concentration (a spread population drifting far fits as a concentrated one drifting less) and is flat on that
    side, which the Hessian at the optimum does not see: the Wald interval covered the drift 80-85% of the time for
    95% (benchmarks/rounds_coverage.py, docs/doctor.md). The profile follows the ridge. The other intervals stay Wald
    (the mixed share, what the rounds identify, is covered at its level). Named approximation: the profile's
    likelihood pools the rows into at most :data:`PROFILE_ROWS` bins (:func:`_pool`: consecutive rows of one kind
    and, for rounds, one R; the mixed share moves by at most the drift over 1 / (PROFILE_ROWS - 1) of the run within
    a bin), its reference value the pooled likelihood's at the fit."""
    P = _pool(P, PROFILE_ROWS)
    bounds = _bounds(model)
    lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    pi = profile_interval(lambda x: -float(np.sum(_row_loglik(np.clip(x, lo, hi), P, K, model))), out["theta"],
                          bounds, 2, out["se_drift"], level=0.95, spread=_spread_start)
    out["intervals"]["drift"] = pi["interval"]
    out.setdefault("interval_method", {})["drift"] = "profile likelihood"
    words = [w for w in out["bounds"] if not w.startswith("the 95% interval of drift")]
    dlo, dhi = bounds[2]
    for side, word, edge in ((0, "lower", dlo), (1, "upper", dhi)):
        if pi["at_bound"][side]:
            words.append(f"the 95% interval of drift reaches its {word} bound ({edge:g}): the log does not limit it")
    if pi["capped"]:
        words.append("the drift's profile-likelihood interval stopped its search before the likelihood fell to its "
                     "cut: the interval may be wider")
    out["bounds"] = words


def _spread_start(z: np.ndarray) -> np.ndarray:
    """The profile's start on the ridge's other branch: the population of ``z`` (log alpha, log beta, ...) at its mean
    with concentration alpha + beta = :data:`SPREAD` (a spread population; the path may follow a concentrated one,
    at a bound of 1000, on which the fit landed: seeds 15, 30, 35 of benchmarks/rounds_coverage.py)."""
    a, b = np.exp(z[:2])
    m = a / (a + b)
    return np.concatenate([np.log([m * SPREAD, (1 - m) * SPREAD]), z[2:]])


def _exp_bounds(x: float, se: float) -> tuple[float, float]:
    """exp of the 95% Wald bounds of a log-scale parameter, the bounds first clipped to :data:`LOG_BOUNDS` (a huge se
    would overflow exp; NaN stays NaN)."""
    return tuple(float(np.exp(np.clip(v, *LOG_BOUNDS))) for v in (x - Z95 * se, x + Z95 * se))


def _clipped(lo, hi, a, b) -> list:
    """[lo, hi] clipped to the parameter's bounds [a, b] (NaN stays NaN: no interval)."""
    return [float(np.clip(lo, a, b)) if np.isfinite(lo) else float("nan"),
            float(np.clip(hi, a, b)) if np.isfinite(hi) else float("nan")]


def bound_words(x, bounds, model: str) -> list[str]:
    """One sentence per parameter at (within 1e-6 of) its bound: which, which bound, what it means."""
    out = []
    for i, (lo, hi) in enumerate(bounds):
        for edge, word in ((lo, "lower"), (hi, "upper")):
            if abs(x[i] - edge) < 1e-6:
                shown = float(np.exp(edge)) if i < 2 else float(expit(edge)) if i == 3 else float(edge)
                out.append(f"{_NAMES[i]} is at its {word} bound ({shown:g}): the log does not limit it there, so "
                           "its value and interval are the bound's, not the run's")
    return out


def _observed_last(d: StepShares, P) -> dict:
    i = -1
    c, n = P["counts"][i], P["n"][i]
    k = P["kind"][i]
    out = {"groups": float(n), "kind": str(k)}
    if k == "trinomial":
        out.update(all_pass=float(c[0] / n), all_fail=float(c[1] / n), mixed=float(c[2] / n))
    elif k == "unanimous":
        out.update(mixed=float(c[1] / n))
    return out


def shares_at(fit: dict, steps, *, intervals: bool = False, theta=None, scalar: bool = False) -> dict:
    """Fitted all-pass, all-fail, mixed shares and mean pass rate at ``steps`` (arrays); with ``intervals``,
    each share's 95% delta-method interval on the logit scale as ``<name>_interval`` ([lo, hi] per step)."""
    s0, s1 = fit["steps"]
    t = (np.asarray(steps, float) - s0) / max(s1 - s0, 1)
    th = fit["theta"] if theta is None else theta

    def f(x):
        mo = population_moments(x, t, fit["K"], fit["model"])
        return {"all_pass": mo["all_pass"], "all_fail": mo["all_fail"],
                "mixed": np.clip(1 - mo["all_pass"] - mo["all_fail"], 0.0, 1.0), "mean": mo["mean"]}

    out = f(th)
    if intervals:
        cov = fit["cov"]
        h = 1e-5
        grads = {k: [] for k in ("all_pass", "all_fail", "mixed")}
        for i in range(len(th)):
            e = np.eye(len(th))[i] * h
            up, dn = f(th + e), f(th - e)
            for k in grads:
                lu = logit(np.clip(up[k], 1e-12, 1 - 1e-12))
                ld = logit(np.clip(dn[k], 1e-12, 1 - 1e-12))
                grads[k].append((lu - ld) / (2 * h))
        for k, g in grads.items():
            G = np.stack(g, 1)  # steps x 3
            se = np.sqrt(np.maximum(np.einsum("si,ij,sj->s", G, cov, G), 0.0))
            c = logit(np.clip(out[k], 1e-12, 1 - 1e-12))
            out[f"{k}_interval"] = np.stack([expit(c - Z95 * se), expit(c + Z95 * se)], 1)
    if scalar:
        return {k: (v[0].tolist() if np.ndim(v) > 1 else float(v[0])) for k, v in out.items()}
    return out


def draws(fit: dict, n: int = DRAWS, seed: int = 0) -> np.ndarray:
    """``n`` parameter vectors theta from the fit's normal approximation (empty where it has no covariance)."""
    cov = fit["cov"]
    if not np.all(np.isfinite(cov)):
        return np.zeros((0, len(fit["theta"])))
    rng = np.random.default_rng(seed)
    b = _bounds(fit["model"])
    lo, hi = [x[0] for x in b], [x[1] for x in b]
    return np.clip(rng.multivariate_normal(fit["theta"], cov, size=n, method="eigh"), lo, hi)
