r"""Population variants for prompts that do not move together (issue 39, item 7), beside :mod:`.drift`'s ``beta``
and ``masses``: correlated rollouts and prompts that learn at different rates.

Both keep the Beta(a, b) population of :mod:`.drift` (its :data:`.drift.NODES` quantile nodes p_j) and one extra
parameter, fitted with (a, b) and the nuisance linear shift (:func:`fit_variant`, as :func:`.drift.fit_population`):

* ``overdispersed`` (intra-group correlation rho): a group's K rollouts share a pass rate p' ~ Beta(p c,
  (1 - p) c), c = (1 - rho) / rho, around its prompt's p (the loop's ``icc`` option,
  :func:`.loop_sim.simulate_loop`), so the group pmf is the beta-binomial mixture

      P(k | h) = mean_j BetaBinomial(k; K, p_j(h) c, (1 - p_j(h)) c),   p_j(h) = g^-1(g(p_j) + h);

  rho -> 0 is the binomial kernel (:func:`betabinom_pmf`). At one step a Beta population with overdispersed groups
  looks like a wider population with binomial groups; the two part only as the shift moves the prompts (it moves
  p, not the group's own noise), so rho is weakly told apart from (a, b) and its draws carry that
  (:func:`variant_draws`).
* ``rates`` (prompts' own rates, sd sigma): every prompt's shift is h e^(sigma z), z ~ N(0, 1) independent of p,

      P(k | h) = mean_{j, m} Binomial(k; K, g^-1(g(p_j) + h e^(sigma z_m))),

  over :data:`RATE_NODES` equal-weight nodes z_m (the normal's quantile midpoints, rescaled to unit sd so that
  sigma is the sd of the log rate); h is then the shift of a prompt of the median rate. sigma -> 0 is the Beta.

Named deviation: neither extra parameter is given a per-prompt identity (the record's prompt ids are not used;
the groups of a step are taken as distinct prompts, as for the other variants).

The variants enter :func:`.drift.measure_drift` (:data:`.drift.VARIANTS`) and are chosen with the shapes by the
same leave-future-out score (:func:`.drift.model_weights`); the stall risk draws each one's population by
:func:`variant_draws` (:func:`.stall_risk.stall_risk`).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.special import betaln, expit, gammaln, logit, ndtri

from .drift import EXTRA_VARIANTS as EXTRA  # noqa: F401  (the variants of this module, named there)
from .drift import (H_GRID, _hessian, beta_nodes, binomial_pmf, kernel_table, population_nll, profiled_cov,
                    shifted)

__all__ = ["EXTRA", "RHO_Z", "SIGMA_LOG", "RATE_NODES", "PRIOR", "betabinom_pmf", "rate_nodes", "variant_params",
           "variant_table", "fit_variant", "variant_draws", "ridge", "sir_resample"]

RHO_Z = (-9.0, 1.0)  #: bounds of logit rho (rho from 1.2e-4 to 0.73)
SIGMA_LOG = (-6.0, 1.0)  #: bounds of log sigma (sigma from 0.0025 to 2.7)
RATE_NODES = 7  #: nodes z_m of the rates' normal
#: the extra parameter's prior where the record cannot tell it: rho uniform on [0, 0.5], sigma on [0, 1.5]
PRIOR = {"overdispersed": 0.5, "rates": 1.5}
_BOUNDS = {"overdispersed": RHO_Z, "rates": SIGMA_LOG}
_STARTS = {"overdispersed": (logit(0.02), logit(0.2)), "rates": (np.log(0.1), np.log(0.6))}
SIR_POP = 6  #: proposals per population draw
_P = 1e-12


def betabinom_pmf(P, K: int, rho: float) -> np.ndarray:
    """BetaBinomial(k; K, P c, (1 - P) c), c = (1 - rho) / rho, for every pass rate of ``P``: (..., K + 1).
    ``rho`` at most 0 gives the binomial."""
    if rho <= 0:
        return binomial_pmf(P, K)
    c = (1.0 - rho) / rho
    al, be = (np.asarray(P, float) * c)[..., None], ((1.0 - np.asarray(P, float)) * c)[..., None]
    k = np.arange(K + 1)
    logc = gammaln(K + 1) - gammaln(k + 1) - gammaln(K - k + 1)
    return np.exp(logc + betaln(k + al, K - k + be) - betaln(al, be))


def rate_nodes() -> np.ndarray:
    """The :data:`RATE_NODES` quantile midpoints of N(0, 1), rescaled to unit sd."""
    z = ndtri((np.arange(RATE_NODES) + 0.5) / RATE_NODES)
    return z / z.std()


def variant_params(variant: str, x) -> dict:
    """``a``, ``b``, ``w0`` = ``w1`` = 0 and the extra parameter (``rho`` or ``sigma``) of x = (log a, log b, z)
    (bounds applied)."""
    a, b = np.exp(np.clip(np.asarray(x[:2], float), np.log(1e-3), np.log(1e4)))
    z = float(np.clip(x[2], *_BOUNDS[variant]))
    extra = {"rho": float(expit(z))} if variant == "overdispersed" else {"sigma": float(np.exp(z))}
    return {"a": float(a), "b": float(b), "w0": 0.0, "w1": 0.0, **extra}


def variant_table(variant: str, x, K: int, link: str, grid=H_GRID, logit_shift: float = 0.0) -> dict:
    """:func:`.drift.population_table`'s dict (``pmf``, ``u``, ``u2``, ``fail``, ``pass`` per shift of
    ``grid``) for the variant's parameter vector x (module docstring); ``logit_shift`` as there."""
    par = variant_params(variant, x)
    p = beta_nodes(par["a"], par["b"])
    grid = np.asarray(grid, float)
    if variant == "overdispersed":
        return kernel_table(betabinom_pmf(shifted(p, grid[:, None], link, logit_shift), K, par["rho"]), K, link)
    r = np.exp(par["sigma"] * rate_nodes())
    P = shifted(p[:, None], grid[:, None, None] * r[None, None, :], link, logit_shift).reshape(len(grid), -1)
    return kernel_table(binomial_pmf(P, K), K, link)


def _nll(variant, K, link, counts, survivors, rounds, settings, tau, bins):
    """The negative log-likelihood of (log a, log b, z, shift at the last step) (:func:`.drift.population_nll`)."""
    span = max(float(np.max(tau)), 1.0)
    table = lambda x, grid: variant_table(variant, x, K, link, grid)  # noqa: E731
    return lambda x: population_nll(x[:3], x[-1] / span, counts, K, link, survivors, rounds, settings, tau, bins,
                                    table=table)


def fit_variant(variant: str, counts, K: int, link: str, survivors: bool, rounds=None, settings=None, tau=None,
                bins=None, start: dict | None = None) -> dict:
    """ML fit of the variant's (log a, log b, z) jointly with the nuisance linear shift, by Nelder-Mead from the
    Beta's fit ``start`` (:func:`.drift.fit_population`) and two values of the extra parameter; the covariance
    of x from the Hessian (the shift profiled out; z near its lower bound, flat there, given a unit variance).
    Returns :func:`variant_params`' keys, ``variant``, ``masses`` False, ``x``, ``cov``, ``link``, ``nll``,
    ``beta``."""
    bins = np.arange(counts.shape[0]) if bins is None else bins
    tau = np.arange(int(bins[-1]) + 1, dtype=float) if tau is None else np.asarray(tau, float)
    span = max(float(tau.max()), 1.0)
    f = _nll(variant, K, link, counts, survivors, rounds, settings, tau, bins)
    best = None
    shift = start["beta"] * span if abs(start["beta"] * span) > 0.05 else 0.5
    x0s = [np.r_[start["x"][:2], z, shift] for z in _STARTS[variant]]
    if variant == "overdispersed":  # on the ridge: the Beta's spread shared with the groups' own (:func:`ridge`)
        x0s.append(np.r_[ridge(start, 0.2), logit(0.2), shift])
    step = np.diag([0.3, 0.3, 1.0, 0.5])  # Nelder-Mead's own first simplex barely moves a coordinate at 0
    for x0 in x0s:
        if best is not None and f(x0) > best.fun + 50:
            continue
        res = optimize.minimize(f, x0, method="Nelder-Mead", options={
            "xatol": 1e-2, "fatol": 1e-2, "maxiter": 500, "initial_simplex": np.vstack([x0, x0 + step])})
        if best is None or res.fun < best.fun:
            best = res
    x = best.x.copy()
    x[:2] = np.clip(x[:2], np.log(1e-3), np.log(1e4))
    lo, hi = _BOUNDS[variant]
    x[2] = np.clip(x[2], lo, hi)
    free = np.array([True, True, x[2] >= lo + 3.0, True])
    cov = profiled_cov(_hessian(f, x, 1e-2), free, 3)
    return {**variant_params(variant, x), "variant": variant, "masses": False, "x": x[:3], "cov": cov,
            "link": link, "nll": float(best.fun), "beta": float(x[-1]) / span}


def ridge(beta_fit: dict, rho) -> np.ndarray:
    """(log a, log b) of the population whose groups, overdispersed by ``rho``, have the pass-rate mean and variance
    of the Beta fit's groups at the first step: mean m = a0 / (a0 + b0) kept and Var(p) (1 - rho) + m (1 - m) rho
    = m (1 - m) / (a0 + b0 + 1), i.e. a + b = (1 - rho) / (1 / (a0 + b0 + 1) - rho) - 1 (capped at 1e3 where
    rho leaves no spread to the prompts). At one step the groups' pmf is nearly the same along this ridge:
    (a, b) and rho are told apart only by the drift. ``rho`` scalar or array: (..., 2)."""
    a0, b0 = beta_fit["a"], beta_fit["b"]
    rho = np.asarray(rho, float)
    room = 1.0 / (a0 + b0 + 1.0) - rho
    n = np.where(room > 0, (1.0 - rho) / np.maximum(room, 1e-12) - 1.0, 1e3)
    n = np.clip(n, 1e-2, 1e3)
    m = a0 / (a0 + b0)
    return np.log(np.stack([m * n, (1 - m) * n], -1))


def _log_prior(variant: str, z, top: float) -> np.ndarray:
    """log density of z (logit rho or log sigma) under the extra parameter uniform on [0, top] (-inf outside)."""
    z = np.clip(z, *_BOUNDS[variant])
    val = expit(z) if variant == "overdispersed" else np.exp(z)
    jac = np.log(val * (1 - val)) if variant == "overdispersed" else np.log(val)
    return np.where(val <= top, jac - np.log(top), -np.inf)


def variant_draws(pop: dict, drift: dict, link: str, n: int, rng) -> np.ndarray:
    """``n`` draws of the variant's x (log a, log b, z) by sampling-importance-resampling, as the masses'
    (:func:`.stall_risk.population_draws`): a defensive mixture of the fit's normal approximation (covariance
    doubled; its eigenvalues kept to sd 1e-4 to 10) and a proposal whose extra parameter is uniform on [0,
    :data:`PRIOR`] (the box widened to hold the fit's + 10%) and whose (log a, log b) are the normal
    approximation's; weights the likelihood (:func:`.drift.population_nll`, the fitted nuisance shift) times the
    prior over the proposal's density (the nuisance shift profiled per proposal, :func:`_profile_shift`). Where
    the record cannot tell the extra parameter the draws spread over its
    prior and the forecast widens; where it can they follow the likelihood. For ``overdispersed`` the prior
    proposal's (log a, log b) are centred on the :func:`ridge` of the Beta's fit at its rho (with the Beta's
    covariance), where the likelihood of one step lies: drawn apart from rho they would nearly all miss it."""
    from scipy.stats import multivariate_normal as mvn

    variant = pop["variant"]
    x_hat, cov = np.asarray(pop["x"], float), np.asarray(pop["cov"], float)
    ok = bool(np.all(np.isfinite(cov)))
    if ok:
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        ok = bool(np.all(vals > 0))
        cov = (vecs * np.clip(vals, 1e-8, 100.0)) @ vecs.T
    base = drift["links"][link]["population"]  # the Beta alone (its (log a, log b) covariance for the ridge)
    cab = 2.0 * (cov[:2, :2] if ok else np.diag([0.05, 0.05])) + 1e-9 * np.eye(2)
    if variant == "overdispersed" and np.all(np.isfinite(base["cov"])):
        cab = 2.0 * np.asarray(base["cov"], float)[:2, :2] + 1e-9 * np.eye(2)
    cur = pop["rho"] if variant == "overdispersed" else pop["sigma"]
    top = max(PRIOR[variant], 1.1 * cur)
    m = SIR_POP * n
    u = rng.uniform(0.0, top, size=m)
    zb = logit(np.clip(u, 1e-6, 1 - 1e-6)) if variant == "overdispersed" else np.log(np.maximum(u, 1e-9))
    centre = ridge(base, expit(zb)) if variant == "overdispersed" else np.broadcast_to(x_hat[:2], (m, 2))
    props = np.column_stack([centre + rng.multivariate_normal(np.zeros(2), cab, size=m), zb])
    if ok:
        ca = 2.0 * cov + 1e-9 * np.eye(3)
        props[: m // 2] = rng.multivariate_normal(x_hat, ca, size=m // 2)
    props = np.vstack([props, x_hat[None]])
    props[:, 2] = np.clip(props[:, 2], *_BOUNDS[variant])
    log_prior = _log_prior(variant, props[:, 2], top)
    centre = ridge(base, expit(props[:, 2])) if variant == "overdispersed" else x_hat[:2]
    log_q = mvn(np.zeros(2), cab).logpdf(props[:, :2] - centre) + log_prior
    if ok:
        log_q = np.logaddexp(np.log(0.5) + log_q, np.log(0.5) + mvn(x_hat, ca).logpdf(props))
    f = _nll(variant, drift["K"], link, drift["counts"], drift["survivors"], drift["rounds"], drift["settings"],
             drift["tau"], drift["bins"])
    span = max(float(np.max(drift["tau"])), 1.0)
    nll = np.full(len(props), np.inf)
    for i in np.flatnonzero(np.isfinite(log_prior)):
        nll[i] = _profile_shift(f, props[i], pop["beta"] * span)[0]
    return sir_resample(props, -nll + log_prior - log_q, x_hat, n, rng)


def _profile_shift(f, x, shift: float) -> tuple[float, float]:
    """The nuisance shift at the last step profiled out of f(x, shift), approximately: f at shift + d {-1, 0, 1}
    (d = max(|shift| / 4, 0.2)), the parabola's vertex (kept within 2 d; the best of the three where the parabola
    is not convex) evaluated; the least value and its shift. Along the ridge of (a, b) and rho the slope the data
    need changes with rho: held at the fit's it would weigh every proposal away from the fit by its misfit."""
    d = max(abs(shift) / 4.0, 0.2)
    pts = shift + d * np.array([-1.0, 0.0, 1.0])
    vals = np.array([f(np.r_[x, s]) for s in pts])
    curv = vals[0] - 2 * vals[1] + vals[2]
    if curv > 0:
        v = float(np.clip(shift + d * 0.5 * (vals[0] - vals[2]) / curv, shift - 2 * d, shift + 2 * d))
        pts, vals = np.r_[pts, v], np.r_[vals, f(np.r_[x, v])]
    j = int(np.argmin(vals))
    return float(vals[j]), float(pts[j])


def sir_resample(props, logw, fallback, n: int, rng) -> np.ndarray:
    """``n`` of the proposals ``props`` drawn with replacement by their weights exp(``logw``) (non-finite: 0);
    ``fallback`` repeated where no weight is finite."""
    logw = np.where(np.isfinite(logw), logw, -np.inf)
    if not np.any(np.isfinite(logw)):
        return np.repeat(np.asarray(fallback, float)[None], n, 0)
    w = np.exp(logw - logw.max())
    return props[rng.choice(len(props), size=n, p=w / w.sum())]
