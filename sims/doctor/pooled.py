r"""Prompt-pooled fits: a prompt's draws taken together, where one group is too small to tell.

A group of K = 4 has only 4 free cell shares, too few for a two-component mixture (5 parameters). But a
prompt drawn r times in a stretch of the run has r K rollouts; if its pass rate p_x holds still over that
stretch and its rollouts pass independently given p_x, its total successes are
Binomial(r K, p_x), and over prompts with p_x ~ Beta(alpha, beta) (or a mixture) they are beta-binomial
with a prompt-specific number of trials n_x = r K (``scipy.stats.betabinom.logpmf(s_x, n_x, alpha, beta)``).
Prompts with the same (s_x, n_x) share a cell, so the fit costs the number of distinct cells.

The stretch is the last :data:`POOL_SHARE` of the run's steps (where the run is now). The mixture is
fitted when the median prompt has at least :data:`~.fit.MIXTURE_MIN_K` pooled rollouts; the BIC (with the
number of prompts) picks the model. **Check**, on what the fit did not see: the pooled population's
all-pass and all-fail shares for a single group of K (E[p^K] and E[(1 - p)^K]) against the shares observed
in that stretch's groups, with Jeffreys 95% intervals. Caveats: drift inside the stretch and correlation
inside a group (rho > 0) both widen the pooled spread.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .fit import MIXTURE_MIN_K, _fit_beta_cells, _fit_mixture_cells, bic, share_interval
from .groups import MIN_GROUPS, RunGroups

__all__ = ["POOL_SHARE", "pooled_fit"]

POOL_SHARE = 0.25  #: the share of the run's last steps pooled per prompt


def _unanimous(population, K: int) -> tuple[float, float]:
    """(E[P(all pass)], E[P(all fail)]) for a single group of K under a population [(w, a, b), ...]."""
    ap = sum(w * stats.betabinom.pmf(K, K, a, b) for w, a, b in population)
    af = sum(w * stats.betabinom.pmf(0, K, a, b) for w, a, b in population)
    return float(ap), float(af)


def pooled_fit(groups: RunGroups, share: float = POOL_SHARE) -> dict:
    """Pooled fits over the last ``share`` of the steps (see the module docstring).

    Returns ``available`` (False with a ``reason`` when too few prompts), ``steps`` ([first, last]),
    ``prompts``, ``median_trials``, ``beta`` (as :func:`.fit.fit_beta`, without cells), ``mixture`` (or
    ``{available: False, reason}``), ``model`` (the one BIC prefers), ``population`` ([(w, alpha, beta), ...]
    of that model) and ``check`` (predicted vs observed unanimous shares of that stretch's groups).
    """
    steps = np.unique(groups.step)
    first = steps[min(int(len(steps) * (1 - share)), len(steps) - 1)]
    m = groups.step >= first
    K, P = groups.K, groups.n_prompts
    pid = groups.prompt_id[m]
    s_x = np.bincount(pid, weights=groups.successes[m], minlength=P)
    n_x = np.bincount(pid, minlength=P) * K
    seen = n_x > 0
    s_x, n_x = s_x[seen], n_x[seen].astype(float)
    out = {"steps": [int(first), int(steps[-1])], "prompts": int(seen.sum()),
           "median_trials": float(np.median(n_x))}
    if seen.sum() < MIN_GROUPS:
        return {**out, "available": False, "reason": f"only {int(seen.sum())} prompts drawn in the last "
                                                     f"{share:.0%} of the steps (need {MIN_GROUPS})"}
    cells, counts = np.unique(np.stack([s_x, n_x]), axis=1, return_counts=True)
    s_u, n_u, w_u = cells[0], cells[1], counts.astype(float)
    beta = _fit_beta_cells(s_u, n_u, w_u)
    population = [(1.0, beta["alpha"], beta["beta"])]
    model = "beta"
    beta["bic"] = bic(beta["loglik"], 2, out["prompts"])
    if out["median_trials"] >= MIXTURE_MIN_K:
        mixture = _fit_mixture_cells(s_u, n_u, w_u)
        mixture["available"] = True
        mixture["bic"] = bic(mixture["loglik"], 5, out["prompts"])
        if mixture["bic"] < beta["bic"]:
            (c1, c2), w = mixture["components"], mixture["w"]
            population = [(w, c1["alpha"], c1["beta"]), (1 - w, c2["alpha"], c2["beta"])]
            model = "mixture"
    else:
        mixture = {"available": False, "reason": f"the median prompt has {out['median_trials']:g} pooled rollouts "
                                                 f"(a mixture needs {MIXTURE_MIN_K})"}
    n = int(m.sum())
    check = {"groups": n}
    for key, k, pred in zip(("all_pass", "all_fail"), (np.sum(groups.successes[m] == K),
                                                       np.sum(groups.successes[m] == 0)), _unanimous(population, K)):
        lo, hi = share_interval(k, n)
        check[key] = {"observed": float(k / n), "interval": [float(lo), float(hi)], "predicted": pred,
                      "inside": bool(lo <= pred <= hi)}
    return {**out, "available": True, "beta": beta, "mixture": mixture, "model": model,
            "population": population, "check": check}
