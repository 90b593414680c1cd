r"""Risk of a dynamic-sampling stall as a curve: P(first stall by step n), with the whole fit's uncertainty.

**What is drawn** (a parametric bootstrap of the forecast; :data:`DRAWS` draws):

1. the population variant and the shape of the drift, with the pseudo-BMA+ weights of
   :func:`.drift.model_weights` (draws allotted to each (variant, shape) pair in proportion);
2. the population of the shape's link: for the Beta alone (log a, log b) from its normal approximation
   (:func:`.drift.fit_population`), with masses at 0 and 1 (log a, log b, w0, w1) by :func:`population_draws`
   (the likelihood where the record holds the masses, their prior where it does not), for the overdispersed
   and rates variants (log a, log b, and rho or sigma) by :func:`.drift_variants.variant_draws` (likewise);
   the ``prompts`` variant (:mod:`.drift_prompts`, where prompts repeat and every group is logged) is one
   population, its prompts' posteriors as measured;
   :data:`POPULATIONS` per
   link and variant, the per-step shifts re-measured under each and the shape refitted to them;
3. the shape's parameters from their (misfit-scaled) normal approximation, for the walk its last state and its
   future innovations, for the jump a change point by its weight and (c, beta, J) given it: a path of h over the
   future steps of :func:`.risk_blocks.risk_grid` (every step for :data:`.risk_blocks.FINE` steps past the last
   logged one, then blocks of :data:`.risk_blocks.SPACING` x that distance, out to the horizon however far);
4. the loop itself: given the path, step n stalls with probability q(n) = P(C < T), C the mixed groups among the
   n_draw = cap x B prompts the cap allows (min(cap x B, pool) for a finite pool drawn without replacement
   within a step), prompts drawn without replacement from N: E[C] = n u, Var(C) = n (u - m2) +
   n s_u^2 (N - n) / (N - 1) (u the mean P(mixed), m2 its mean square, s_u^2 = m2 - u^2 its between-prompt
   variance; N infinite gives n u (1 - u)), by the normal approximation with a continuity correction. Steps
   are independent given the path, so the first stall of a draw has survival prod_{m <= n} (1 - q(m)): the
   product over every step where the grid is every step, over a block its log-linear interpolation summed exactly
   (:mod:`.risk_blocks`, its named deviations and their measured size).

**Reported** at the grid's steps (``step``; ``grid`` says where it is every step): the cumulative risk F(n) = 1 -
mean over draws of the survival (the forecast distribution of the first stall), its 5-95% band over draws, the
per-step hazard of the mixture f(n) / (1 - F(n - 1)) (over a block its geometric mean per step) beside the
median per-step P(stall) and its band; the first stall's median (the point forecast, a step found within its
block), its central
:data:`LEVEL` interval (quantiles of F; None above = beyond the horizon), the mean step restricted to the
horizon and P(stall by the horizon). The cause is given only where the median lies within the horizon: the share
of all-fail among the dropped (unanimous) groups at the median step, averaged over the draws.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.special import ndtr

from .drift import (EXTRA_VARIANTS, LINKS, PROMPT_VARIANTS, SHAPES, draw_paths, fit_shape, pair_weights,
                    population_params, population_table, shape_loglik, shift_estimates, mirror_fold, step_loglik,
                    tabulated_bins, H_GRID, _LIKELIHOOD_SETTINGS, _content, _digest)
from .drift_variants import sir_resample, variant_draws, variant_table
from .risk_blocks import (FINE, SPACING, block_hazard_rate, cumulative_hazard, first_step, log_hazard, restricted_sum,
                          risk_grid)

__all__ = ["DRAWS", "drift_futures", "POPULATIONS", "LEVEL", "MASS_PRIOR", "population_draws", "unseen_share", "step_hazard",
           "step_z", "stall_risk", "step_counts", "survivors_only",
           "risk_for_groups", "population_risk", "forget_drawn", "drawn_table"]

DRAWS = 240  #: draws of (shape, population, path)
POPULATIONS = 8  #: population draws per link
LEVEL = 0.9  #: the first stall's reported interval


def step_hazard(u, m2, settings: dict, n_prompts: int | None):
    """q = P(C < T) of one step (module docstring, item 4); ``u``, ``m2`` arrays of any shape."""
    return ndtr(step_z(u, m2, settings, n_prompts))


def step_z(u, m2, settings: dict, n_prompts: int | None):
    """x of :func:`step_hazard`'s q = Phi(x): (T - 1/2 - n u) / sd(C) (module docstring, item 4)."""
    B, T, cap = int(settings["gen_batch"]), int(settings["train_batch"]), int(settings["cap_effective"])
    pool = settings.get("pool")
    n = cap * B if not pool else min(cap * B, int(pool))
    N = int(pool) if pool else n_prompts
    u = np.clip(u, 0.0, 1.0)
    var_u = np.maximum(m2 - u * u, 0.0)
    fpc = 1.0 if not N or N <= 1 else max(N - n, 0) / (N - 1)
    var = n * np.maximum(u - m2, 0.0) + n * var_u * fpc
    sd = np.sqrt(np.maximum(var, 1e-12))
    return (T - 0.5 - n * u) / sd


MASS_PRIOR = 0.5  #: the masses' prior: w0 and w1 each uniform on [0, MASS_PRIOR] (where the data cannot tell)
SIR_POP = 6  #: proposals per population draw of the masses variant


def population_draws(pop: dict, drift: dict, link: str, n: int, rng, fallback: dict | None = None,
                     mass_cap: float | None = None) -> np.ndarray:
    """``n`` draws of a population parameter vector x (:func:`.drift.population_params`).

    The Beta alone: from the fit's normal approximation (its point where the Hessian is not positive definite).
    With masses: sampling-importance-resampling from a defensive mixture (Hesterberg 1995) of the fit's normal
    approximation (covariance doubled) and a proposal whose masses w0, w1 are uniform on [0, :data:`MASS_PRIOR`]
    (the prior; the box widened to hold the fit's masses + 0.1 where they exceed it) and whose (log a, log b) are the Beta's normal approximation; weights the likelihood
    (:func:`.drift.population_nll`, the fitted nuisance shift) times the prior over the mixture's density, in the
    log-odds coordinates of the masses (Jacobian w0 w1 (1 - w0 - w1)). Where the record cannot tell the masses
    (a survivors-only dump: the truncated likelihood does not hold them, the rounds at most bound them) the
    draws follow the prior and the forecast widens; where it can (every group logged) they follow the likelihood.
    ``mass_cap``: an upper bound on w0 + w1 the record gives otherwise (a survivors-only dump: the share of the
    prompt set it never shows, :func:`unseen_share`), applied to the prior and the draws."""
    x_hat, cov = np.asarray(pop["x"], float), np.asarray(pop["cov"], float)
    ok = bool(np.all(np.isfinite(cov))) and bool(np.all(np.linalg.eigvalsh((cov + cov.T) / 2) > 0))
    if ok and pop.get("masses", False):  # an ill-conditioned Hessian: its eigenvalues bounded (sd 1e-4 to 10)
        vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
        cov = (vecs * np.clip(vals, 1e-8, 100.0)) @ vecs.T
    if not pop.get("masses", False):
        return rng.multivariate_normal(x_hat, cov + 1e-12 * np.eye(2), size=n) if ok else np.repeat(x_hat[None], n, 0)
    from scipy.stats import multivariate_normal as mvn

    from .drift import MASS_BOUNDS, population_nll

    m = SIR_POP * n
    cab = cov[:2, :2] if ok else np.asarray((fallback or pop)["cov"], float)
    if not np.all(np.isfinite(cab)):
        cab = np.diag([0.05, 0.05])
    cab = 2.0 * (cab + cab.T) / 2 + 1e-9 * np.eye(2)
    hi = np.maximum(MASS_PRIOR, np.minimum(np.array([pop["w0"], pop["w1"]]) + 0.1, 0.95))  # the box holds the fit
    cap = 0.99 if mass_cap is None else float(np.clip(mass_cap, 1e-6, 0.99))
    hi = np.minimum(hi, cap)
    wb = rng.uniform(0.0, 1.0, size=(m, 2)) * hi
    wb = np.where(wb.sum(axis=1, keepdims=True) < cap, wb, wb * cap / wb.sum(axis=1, keepdims=True))
    zb = np.log(wb / (1.0 - wb.sum(axis=1, keepdims=True)))
    props = np.hstack([rng.multivariate_normal(x_hat[:2], cab, size=m), zb])
    if ok:
        ca = 2.0 * (cov + cov.T) / 2 + 1e-9 * np.eye(4)
        props[: m // 2] = rng.multivariate_normal(x_hat, ca, size=m // 2)
    props = np.vstack([props, x_hat[None]])  # the fit itself among the proposals
    props[:, 2:4] = np.clip(props[:, 2:4], *MASS_BOUNDS)
    ez = np.exp(props[:, 2:4])
    w = ez / (1.0 + ez.sum(axis=1, keepdims=True))
    inside = np.all(w <= hi, axis=1) & (w.sum(axis=1) <= cap)
    log_jac = np.log(w).sum(axis=1) + np.log(np.maximum(1.0 - w.sum(axis=1), 1e-300))
    log_qb = mvn(x_hat[:2], cab).logpdf(props[:, :2]) - np.log(hi).sum() + log_jac
    log_q = log_qb if not ok else np.logaddexp(np.log(0.5) + log_qb, np.log(0.5) + mvn(
        x_hat, ca).logpdf(props))
    nll = np.array([population_nll(x, pop["beta"], drift["counts"], drift["K"], link, drift["survivors"],
                                   drift["rounds"], drift["settings"], drift["tau"], drift["bins"], True)
                    if ins else np.inf for x, ins in zip(props, inside)])
    return sir_resample(props, -nll + log_jac - log_q, x_hat, n, rng)


def drift_futures(drift: dict, counts, settings: dict | None, tau_f, draws: int, rng, mass_cap: float | None = None,
                  shift: float = 0.0, K_ahead: int | None = None, survivors: bool | None = None, rounds=None):
    """Items 1-3 of the module docstring: yields ``(table, shape_fit, paths)`` per (variant, link, population draw,
    shape) with draws allotted by the pair weights, ``paths`` (n, len(``tau_f``)) of h at the future offsets
    ``tau_f`` (from the first logged step), ``table`` the drawn population's :func:`.drift.population_table` (at
    ``K_ahead`` and moved by the logit ``shift`` where given: the future's), ``shape_fit`` the shape refitted to
    the shifts re-measured under it (:func:`.drift.fit_shape`). ``survivors`` / ``rounds``: what the evidence
    is (None: the drift's own). The one source of drawn futures: the stall risk
    (:func:`stall_risk`) and the mixed share's expiry and band (:mod:`.drift_expiry`) read the same draws.

    The last :data:`KEPT` sets of draws are kept by the content of what they are drawn from (:func:`_draws_key`:
    the drift, the evidence, ``tau_f``, ``draws``, ``rng``'s state, ``mass_cap``, the evidence's kind and the
    settings only where the likelihood reads them), not by ``shift`` or ``K_ahead``, which move only the future's
    table: the stall forecast under each change of the cap rule (:func:`.rules.cap_changes`) draws the record's
    populations, shifts and shape fits once. Given again, each path is redrawn from ``rng``'s state where it was
    drawn (the paths are not kept: they grow with the horizon) and ``rng`` is left where the draws left it, so the
    futures, and what ``rng`` gives next, are those of a fresh draw."""
    K = counts.shape[1] - 1
    K_ahead = int(K_ahead or K)
    key = _draws_key(drift, counts, settings, tau_f, draws, rng, mass_cap, survivors, rounds)
    kept = next((v for k, v in list(_KEPT) if k == key), None)  # one read: another thread may replace _KEPT
    items = []
    future = {}  # the future's table of the drawn population: every logit moved by the data's difficulty change,
    # and at the K the loop will draw (the drift: the logged K)
    for item in kept[0] if kept is not None else _draw(drift, counts, settings, draws, rng, mass_cap, survivors,
                                                      rounds):
        if kept is None:
            items.append((*item, rng.bit_generator.state))
        else:
            rng.bit_generator.state = item[-1]
        make, tab, fit, n = item[:4]
        paths = draw_paths(fit, tau_f, n, rng)
        if shift or K_ahead != K:
            if make not in future:
                future = {make: make(shift, K_ahead)}
            tab = future[make]
        yield tab, fit, paths
    if kept is not None:
        rng.bit_generator.state = kept[1]
    else:
        _KEPT[:] = [(key, (items, rng.bit_generator.state))] + [kv for kv in list(_KEPT) if kv[0] != key][:KEPT - 1]


KEPT = 2  #: sets of draws :func:`drift_futures` keeps (a diagnosis's stall risk and its expiry)
_KEPT: list = []  #: [(key, (items, rng state after))], the newest first


def _draws_key(drift, counts, settings, tau_f, draws, rng, mass_cap, survivors, rounds) -> bytes:
    """A digest of what :func:`drift_futures` draws from, by content (:func:`.drift._content`): of ``drift`` what
    the draws read (its populations, weights, step offsets, bins, evidence, K, survivors, rounds and, where the
    likelihood reads them, its settings), the evidence ``counts``, the evidence's kind (``survivors``,
    ``rounds``), the likelihood's settings where it reads them, ``tau_f``, ``draws``, ``rng``'s state and
    ``mass_cap``."""
    surv = drift["survivors"] if survivors is None else survivors
    used = lambda st, sv: None if not (sv and st) else {k: st.get(k) for k in _LIKELIHOOD_SETTINGS}  # noqa: E731
    pops = lambda links: {lk: links[lk]["population"] for lk in links}  # noqa: E731
    what = {"variants": {v: pops(vl) for v, vl in drift.get("variants", {"beta": drift["links"]}).items()},
            "links": pops(drift["links"]), "weights": drift["weights"], "tau": np.asarray(drift["tau"], float),
            "bins": np.asarray(drift["bins"]), "drift_counts": drift["counts"], "K": int(drift["K"]),
            "drift_survivors": bool(drift["survivors"]), "drift_rounds": drift["rounds"],
            "drift_settings": used(drift["settings"], drift["survivors"]), "counts": counts,
            "survivors": survivors, "rounds": rounds, "settings": used(settings, surv),
            "tau_f": np.asarray(tau_f, float), "draws": int(draws), "rng": rng.bit_generator.state,
            "mass_cap": mass_cap}
    return _digest(_content(what))


def forget_drawn() -> None:
    """Drop the draws :func:`drift_futures` keeps (:func:`.drift.forget_measured` calls it): the next are drawn
    afresh."""
    _KEPT.clear()


def allot(weights: dict, pairs: list, draws: int) -> dict:
    """``{pair: n}``: ``draws`` shared among ``pairs`` in proportion to ``weights`` (a pair not in it: 0) by the
    largest remainders (Hamilton's method), so the counts sum to ``draws`` times the pairs' total weight, rounded (to
    ``draws`` where the weights sum to 1). Each pair rounded on its own, the total could miss by one or more (97
    draws asked 96). Where rounding each gives the right total, the two agree (the pairs rounded up are those of the
    largest remainders), except at remainders of exactly one half."""
    w = np.array([max(float(weights.get(p, 0.0)), 0.0) for p in pairs]) * draws
    n = np.floor(w).astype(int)
    left = int(round(float(w.sum()))) - int(n.sum())
    if left > 0:
        n[np.argsort(-(w - n), kind="stable")[:left]] += 1
    return dict(zip(pairs, n.tolist()))


def _draw(drift, counts, settings, draws, rng, mass_cap, survivors, rounds):
    """:func:`drift_futures`' draws before the paths: yields ``(make, table, shape_fit, n)``, ``make(shift, K)``
    the drawn population's table moved by the logit ``shift`` at ``K``, ``table`` at the logged K unmoved, ``n``
    the paths to draw from the fit (``rng`` drawn in between, as the paths are)."""
    tau = drift["tau"]
    wts = drift["weights"]
    variants = drift.get("variants", {"beta": drift["links"]})
    pair_w = pair_weights(wts)
    K = counts.shape[1] - 1
    surv = drift["survivors"] if survivors is None else survivors
    rounds = drift["rounds"] if survivors is None else rounds
    allotted = allot(pair_w, [f"{v}/{s}" for v in variants for s in SHAPES], draws)
    for variant, vlinks in variants.items():
        alloc = {s: allotted[f"{variant}/{s}"] for s in SHAPES}
        for link in LINKS:
            shapes = [s for s, lk in SHAPES.items() if lk == link and alloc[s] > 0]
            if not shapes:
                continue
            pop = vlinks[link]["population"]
            extra = pop.get("variant") in EXTRA_VARIANTS  # overdispersed, rates (:mod:`.drift_variants`)
            if pop.get("variant") in PROMPT_VARIANTS:  # the intercepts held at their fit (:mod:`.drift_prompts`): one population
                xs = [pop["x"]]
            elif extra:
                xs = variant_draws(pop, drift, link, POPULATIONS, rng)
            else:
                xs = population_draws(pop, drift, link, POPULATIONS, rng,
                                      fallback=drift["links"][link]["population"], mass_cap=mass_cap)
            for i, x in enumerate(xs):
                make = partial(drawn_table, pop, x, link)
                tab = make(0.0, K)
                if pop.get("variant") in PROMPT_VARIANTS:  # not drawn: its table is the measured one, its shifts too
                    h, se, tab_LL = vlinks[link]["h"], vlinks[link]["se"], None
                else:
                    LL = step_loglik(tab, counts, surv, rounds, settings, drift["bins"])
                    fold = mirror_fold(counts, tab, pop, tau)
                    h, se = shift_estimates(LL, fold)
                    # the rounds alone: a bin's moments misstate its flat-topped likelihood (every row one round),
                    # the shapes' draws weigh their paths by the tabulated one (.drift's "Shapes on the tabulated")
                    tab_LL = shape_loglik(LL, h, se, fold, tabulated_bins(counts, drift["bins"]))
                for s in shapes:
                    n = alloc[s] // len(xs) + (1 if i < alloc[s] % len(xs) else 0)
                    if n == 0:
                        continue
                    yield make, tab, fit_shape(s, tau, h, se, tab_LL), n


def drawn_table(pop: dict, x, link: str, shift: float, k: int) -> dict:
    """The table of the population ``pop``'s variant at the drawn ``x``, ``k`` rollouts, logits moved by ``shift``
    (``x`` = ``pop["x"]``, ``shift`` 0: the fitted population's own table)."""
    if pop.get("variant") in EXTRA_VARIANTS:
        return variant_table(pop["variant"], x, k, link, logit_shift=shift)
    if pop.get("variant") in PROMPT_VARIANTS:
        from .drift_prompts import prompt_table

        return prompt_table(pop, k, link, logit_shift=shift)
    a, b, w0, w1 = population_params(x, pop.get("masses", False))
    return population_table(a, b, k, link, w0=w0, w1=w1, logit_shift=shift)


def stall_risk(drift: dict, counts, settings: dict, n_prompts: int | None, horizon_step: int, survivors: bool,
               rounds=None, draws: int = DRAWS, seed: int = 0, mass_cap: float | None = None) -> dict:
    """The risk curve and the first stall's distribution (module docstring).

    ``drift``: :func:`.drift.measure_drift` of the record; ``counts``, ``survivors``, ``rounds``: what it was
    measured on; ``horizon_step``: the last future step considered. Needs a cap (``settings['cap_effective']``).
    ``mass_cap``: an upper bound on the masses' total (:func:`population_draws`). ``settings['logit_shift']``
    (optional): the data's difficulty changed from the next step on, every future pass rate's logit moved by it
    (the fit and the drift measured on the record as logged)."""
    rng = np.random.default_rng(seed)
    shift = float(settings.get("logit_shift") or 0.0)
    steps_logged = drift["steps"]
    last = int(steps_logged[-1])
    future = risk_grid(last, int(horizon_step))  # every step near the data, blocks further out (:mod:`.risk_blocks`)
    tau_f = (future - steps_logged[0]).astype(float)
    K = counts.shape[1] - 1  # the logged K: the likelihood's
    K_ahead = int(settings.get("K") or K)  # the future's: the settings' K where a change of K is forecast
    wts = drift["weights"]
    variants = drift.get("variants", {"beta": drift["links"]})
    logls, qs, share_fail = [], [], []
    for tab, _, paths in drift_futures(drift, counts, settings, tau_f, draws, rng, mass_cap, shift, K_ahead,
                                        survivors, rounds):
        u = np.interp(paths, H_GRID, tab["u"])
        m2 = np.interp(paths, H_GRID, tab["u2"])
        x = step_z(u, m2, settings, n_prompts)
        qs.append(ndtr(x))
        logls.append(log_hazard(x))
        fail, pas = np.interp(paths, H_GRID, tab["fail"]), np.interp(paths, H_GRID, tab["pass"])
        share_fail.append(fail / np.maximum(fail + pas, 1e-300))
    logl = np.concatenate(logls)
    Lam = cumulative_hazard(logl, future)
    S = np.exp(-Lam)
    Q = np.concatenate(qs)
    Sbar = S.mean(axis=0)
    F = 1.0 - Sbar
    hazard = block_hazard_rate(Sbar, future)
    tail = (1 - LEVEL) / 2
    median, lo, hi = (first_step(p, F, Lam, logl, future) for p in (0.5, tail, 1 - tail))
    restricted = float(future[0] + restricted_sum(Sbar, future))  # E[min(first stall, horizon + 1)]
    out = {"available": True, "draws": int(S.shape[0]), "level": LEVEL,
           "method": "parametric bootstrap over drift shape, population, drift parameters and the loop's rounds",
           "grid": {"every_step_to": int(future[min(FINE, len(future)) - 1]) if len(future) else None,
                    "spacing": SPACING, "points": int(len(future))},
           "shapes": drift["weights"], "survivors": bool(survivors), "rounds_used": rounds is not None,
           "populations": {lk: {"a": drift["links"][lk]["population"]["a"], "b": drift["links"][lk]["population"]["b"]}
                           for lk in LINKS},
           "population_variants": {v: {"weight": float((wts.get("variants") or {"beta": 1.0}).get(v, 0.0)),
                                       **{lk: {k: vl[lk]["population"][k] for k in ("a", "b", "w0", "w1", "rho", "sigma")
                                               if k in vl[lk]["population"]}
                                          for lk in LINKS}} for v, vl in variants.items()},
           "step": future, "cumulative": F, "cumulative_band": np.quantile(1.0 - S, [tail, 1 - tail], axis=0),
           "hazard": hazard, "p_stall_median": np.quantile(Q, 0.5, axis=0),
           "p_stall_band": np.quantile(Q, [tail, 1 - tail], axis=0),
           "first_stall": {"median": median, "interval": [lo, hi], "p_by_horizon": float(F[-1]),
                           "expected_restricted": restricted, "horizon_step": int(horizon_step)}}
    if median is not None:  # between grid points: the mean share interpolated linearly in the step
        share = float(np.interp(median, future, np.concatenate(share_fail).mean(axis=0)))
        out["cause"] = "all-fail collapse" if share > 0.5 else "all-pass saturation"
        out["cause_share_all_fail"] = share
    else:
        out["cause"], out["cause_share_all_fail"] = None, None
    return out


def step_counts(groups) -> tuple[np.ndarray, np.ndarray]:
    """(steps, counts): the record's steps (increasing) and its groups per step by successes (steps, K + 1)."""
    steps, inv = np.unique(groups.step, return_inverse=True)
    counts = np.bincount(inv * (groups.K + 1) + groups.successes,
                         minlength=len(steps) * (groups.K + 1)).reshape(len(steps), groups.K + 1).astype(float)
    return steps, counts


def unseen_share(groups) -> float | None:
    """The share of the prompt set (``n_prompts``) that no recorded group holds; None where the set's size is
    unknown. In a survivors-only dump a prompt never solved or never failed is never mixed, so never recorded:
    the masses' total w0 + w1 is at most this share (a bound, not an estimate: prompts not drawn, or drawn and
    never mixed by chance, are unseen too; a large dataset of which the logged steps drew a part bounds nothing)."""
    n = int(groups.n_prompts or 0)
    if n <= 0:
        return None
    return max(0.0, 1.0 - len(np.unique(groups.prompt_id)) / n)


SURVIVORS = 0.75  #: a record holding under this share of the groups its logged rounds drew holds the survivors only


def survivors_only(groups, observed_rounds, settings: dict) -> tuple[bool, str]:
    """(True, why) where the record holds only the groups that trained (the survivors of the filter; verl's
    rollout dump, :mod:`grpo_lab.sims.ingest.verl`): where rounds are logged (verl's ``train/num_gen_batches``)
    and some step drew more than one, the record holds under :data:`SURVIVORS` of the groups the rounds drew
    (rounds x gen_batch, over the logged steps); else, under dynamic sampling, no group is unanimous."""
    if not settings.get("enable", True):
        return False, ""
    if observed_rounds is not None and np.any(observed_rounds[1] > 1):
        s, r = observed_rounds
        recorded = int(np.sum(np.isin(groups.step, s)))
        drawn = int(np.sum(r)) * int(settings["gen_batch"])
        if recorded < SURVIVORS * drawn:
            return True, (f"the record holds {recorded:,} groups where the logged rounds (train/num_gen_batches > 1 at "
                          f"{int(np.sum(r > 1))} steps) drew {drawn:,}: it holds only the trained groups")
        return False, ""
    unanimous = int(np.sum((groups.successes == 0) | (groups.successes == groups.K)))
    if unanimous:
        return False, ""
    return True, (f"no unanimous group among {groups.n:,} under dynamic sampling: the record is taken to hold only "
                  "the trained groups")


NO_PROMPTS = ("not offered to the stall risk: a never-solved prompt's pass rate moves with the shift in it, where the "
              "masses variant's does not (the expiry's forecast weighs it)")  #: why the risk has no prompts variant


def risk_for_groups(groups, settings: dict, observed_rounds=None, horizon_step: int | None = None,
                    draws: int = DRAWS, seed: int = 0, survivors: bool | None = None) -> dict:
    """:func:`stall_risk` of a record's groups: per-step counts, the survivors-only check
    (:func:`survivors_only`, unless ``survivors`` is given), the logged rounds ``(steps, rounds)`` aligned to
    the steps (used only for a survivors-only record, where they carry what the record lacks)."""
    from .drift import VARIANTS, measure_drift

    if not settings.get("cap_effective"):
        return {"available": False, "reason": "no cap: a step never raises (the run crawls instead)"}
    steps, counts = step_counts(groups)
    why = ""
    if survivors is None:
        survivors, why = survivors_only(groups, observed_rounds, settings)
    rounds = None
    if survivors and observed_rounds is not None:
        s, r = observed_rounds
        lookup = dict(zip(np.asarray(s).tolist(), np.asarray(r, float).tolist()))
        if all(int(x) in lookup for x in steps):
            rounds = np.array([lookup[int(x)] for x in steps])
    if horizon_step is None:
        from .forecast import HORIZON
        horizon_step = int(np.ceil(steps[-1] + HORIZON * max(steps[-1] - steps[0], 1)))
    # a survivors-only record without the rounds does not tell the overdispersed and rates variants' extra parameter
    # from the population's spread (it takes up the nuisance shift's misfit and runs early): the Beta and the masses
    # only there (docs/doctor.md, "two more population variants")
    variants = VARIANTS if not survivors or rounds is not None else tuple(v for v in VARIANTS
                                                                          if v not in EXTRA_VARIANTS)
    # the prompts variant (:mod:`.drift_prompts`) is not offered to the risk (named deviation from one measurement per
    # diagnosis): its never-solved prompts move with the shift, as the Beta's do, so on 30% never-solvable prompts
    # it took the weight from the masses and put the first stall 15 steps late, its interval missing 3 seeds of 3
    # (tests/test_stall_study.py); the expiry keeps it
    prompts, said = None, NO_PROMPTS
    d = measure_drift(counts, steps, groups.K, survivors, rounds, settings, variants, prompts)
    cap = unseen_share(groups) if survivors else None
    out = stall_risk(d, counts, settings, groups.n_prompts, horizon_step, survivors, rounds, draws, seed, cap)
    out["mass_cap"] = cap
    out["survivors_reason"] = why
    out["prompts_variant"] = said
    out["rounds_informative"] = bool(rounds is not None and np.any(rounds > 1))
    return out


def population_risk(a: float, b: float, K: int, settings: dict, shape: str, params: dict, steps,
                    n_prompts: int | None = None) -> dict:
    """The risk for a known population and drift (no fit, no draws): per step of ``steps`` (offsets t from the
    population's step, increasing) the mean P(mixed) u, the per-step P(stall) q (:func:`step_hazard`) and
    P(first stall by the step) = 1 - prod (1 - q). ``shape``/``params`` as :func:`.loop_sim.drift` (logit link
    for ``logit``, ``plateau``, ``step``; the power map on the log-log link; ``static``): what the lab's own
    population gives without a record."""
    from .drift import population_table
    from .loop_sim import drift

    t = np.asarray(steps, float)
    link = "loglog" if shape == "power" else "logit"
    if shape == "power":
        h = np.log1p(params["g"] * t)
    elif shape == "static":
        h = np.zeros_like(t)
    else:  # the shift the logit-link shapes give every prompt: where p = 1/2 (logit 0) moves to
        p = drift(np.full(len(t), 0.5), t, shape, **params)  # elementwise in t
        h = np.log(p / (1 - p))
    grid = np.unique(np.clip(h, H_GRID[0], H_GRID[-1]))
    tab = population_table(a, b, K, link, grid)
    u, m2 = np.interp(h, grid, tab["u"]), np.interp(h, grid, tab["u2"])
    q = step_hazard(u, m2, settings, n_prompts)
    return {"step": t, "u": u, "p_stall": q, "cumulative": 1.0 - np.cumprod(1.0 - q)}
