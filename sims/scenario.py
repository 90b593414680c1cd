r"""One view of the lab: a population at a training progress, group size, correlation and filter.

:func:`evaluate` is the single place where a view's numbers are computed; the
lab's readouts, ``grpo-lab population`` and the exported page all come from it
(the page through the browser kernel, which a test proves equal to it).

Realised groups use common random numbers. Prompt x at progress t has pass
rate p_t (:func:`sims.decay.pass_rate_at`). Its shared success rate is q = p_t
for independent rollouts, or, when rho > 0, the quantile of
Beta(p_t (1/rho - 1), (1 - p_t)(1/rho - 1)) at the prompt's latent uniform, so
the successes are beta-binomial. Rollout i passes iff ``uniforms[x, i] < q``.
A cell therefore changes only when q crosses one of the prompt's own uniforms:
moving t or K never reshuffles the grid.

The difficulty filter keeps prompts whose current pass rate lies in the band
[lo, hi] (inclusive). With a filter every share is over the kept prompts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from . import decay
from ._checks import as_group_size, as_rho, band as check_band
from .dynamic_sampling import rollout_amplification
from .errors import InputError
from .outcomes import outcome_probabilities
from .population import DEFAULT_SEED, Population, draw_population

__all__ = ["MIXED", "ALL_PASS", "ALL_FAIL", "OUTCOME_NAMES", "Scenario", "View", "evaluate", "realise",
           "outcome_histogram"]

MIXED, ALL_PASS, ALL_FAIL = 0, 1, 2  #: outcome codes of a realised group
OUTCOME_NAMES = ("mixed", "all-pass", "all-fail")
DEFAULT_BAND = (0.2, 0.8)  #: the difficulty filter's default band (seed 002's filter), for the lab and the doctor


@dataclass(frozen=True)
class Scenario:
    """The parameters of one view (the lab's URL state, minus presentation)."""

    n_prompts: int = 600
    a: float = 2.0
    b: float = 3.0
    seed: int = DEFAULT_SEED
    progress: float = 0.0
    K: int = 8
    rho: float = 0.0
    band: tuple[float, float] | None = None
    gain: float = decay.DEFAULT_GAIN

    def population(self) -> Population:
        return draw_population(self.n_prompts, self.a, self.b, self.seed)


@dataclass(frozen=True)
class View:
    """Per-prompt arrays and the summary of one evaluated scenario."""

    pass_rate: np.ndarray  # p_t per prompt
    shared_rate: np.ndarray  # q per prompt (= p_t when rho = 0)
    successes: np.ndarray  # k of K
    outcome: np.ndarray  # MIXED / ALL_PASS / ALL_FAIL
    kept: np.ndarray  # bool, passes the filter
    summary: dict


def shared_rate(pass_rate, latent, rho) -> np.ndarray:
    """The prompt's shared success rate q: p itself (rho = 0) or the Beta quantile at its latent uniform."""
    p = np.asarray(pass_rate, dtype=float)
    rho = float(as_rho(rho))
    if rho == 0.0:
        return p
    scale = 1.0 / rho - 1.0
    inner = (p > 0) & (p < 1)
    q = p.copy()
    q[inner] = stats.beta.ppf(np.asarray(latent)[inner], p[inner] * scale, (1 - p[inner]) * scale)
    return q


def realise(rate, uniforms) -> tuple[np.ndarray, np.ndarray]:
    """Successes k and outcome code of each group: rollout i passes iff ``uniforms[x, i] < rate[x]``."""
    u = np.asarray(uniforms)
    K = u.shape[1]
    k = (u < np.asarray(rate, dtype=float)[:, None]).sum(axis=1)
    outcome = np.where(k == K, ALL_PASS, np.where(k == 0, ALL_FAIL, MIXED))
    if K == 1:  # a single rollout is unanimous either way
        outcome = np.where(k == 1, ALL_PASS, ALL_FAIL)
    return k, outcome


def _share(x: np.ndarray, mask: np.ndarray) -> float:
    n = int(mask.sum())
    return float(np.sum(x[mask]) / n) if n else float("nan")


def evaluate(scenario: Scenario, population: Population | None = None) -> View:
    """Evaluate a scenario: per-prompt pass rates, realised groups, filter, and the summary.

    Summary keys (shares over the kept prompts when a band is set; NaN when none is kept):
    ``mean_pass_rate``, ``useful_share_expected``, ``useful_share_realised``,
    ``all_pass_share``, ``all_fail_share`` (realised) and their ``*_expected``,
    ``kept_share`` (1.0 without a filter), ``n_prompts``, ``n_kept``,
    ``d_real`` (= 1 - useful_share_expected), ``d_iid``, ``rollout_amplification``
    (DAPO: rollouts generated per rollout kept), ``rollouts_per_useful_expected`` /
    ``_realised`` (K over the useful share) and ``useful_per_1000_expected`` / ``_realised``.
    """
    K = int(as_group_size(scenario.K))
    pop = population if population is not None else scenario.population()
    band = check_band(*scenario.band) if scenario.band is not None else None
    p_t = decay.pass_rate_at(pop.pass_rates, scenario.progress, scenario.gain)
    q = shared_rate(p_t, pop.latent if scenario.rho > 0 else None, scenario.rho)
    k, outcome = realise(q, pop.uniforms(K))
    kept = np.ones(pop.n, bool) if band is None else (p_t >= band[0]) & (p_t <= band[1])
    probs = outcome_probabilities(p_t, K, scenario.rho)
    n_kept = int(kept.sum())
    useful_exp = _share(probs["p_useful"], kept)
    useful_real = _share(outcome == MIXED, kept)
    mean_p = _share(p_t, kept)
    d_iid = float(outcome_probabilities(mean_p, K, scenario.rho)["p_unanimous"]) if n_kept else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        summary = {
            "mean_pass_rate": mean_p,
            "useful_share_expected": useful_exp,
            "useful_share_realised": useful_real,
            "all_pass_share": _share(outcome == ALL_PASS, kept),
            "all_fail_share": _share(outcome == ALL_FAIL, kept),
            "all_pass_share_expected": _share(probs["p_all_pass"], kept),
            "all_fail_share_expected": _share(probs["p_all_fail"], kept),
            "kept_share": n_kept / pop.n,
            "n_prompts": pop.n,
            "n_kept": n_kept,
            "d_real": 1.0 - useful_exp,
            "d_iid": d_iid,
            "rollout_amplification": float(rollout_amplification(1.0 - useful_exp)) if n_kept else float("nan"),
            "rollouts_per_useful_expected": _ratio(K, useful_exp),
            "rollouts_per_useful_realised": _ratio(K, useful_real),
            "useful_per_1000_expected": 1000.0 * useful_exp,
            "useful_per_1000_realised": 1000.0 * useful_real,
        }
    summary["parameters"] = {k_: (list(v) if isinstance(v, tuple) else v) for k_, v in asdict(scenario).items()}
    return View(pass_rate=p_t, shared_rate=q, successes=k, outcome=outcome, kept=kept, summary=summary)


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den > 0 else float("nan")


def outcome_histogram(pass_rate, category, bins: int, n_categories: int) -> np.ndarray:
    """Pass-rate histogram split by category: ``counts[..., b, c]`` over the last axis of the inputs.

    Prompt x falls in bin ``min(floor(bins p_x), bins - 1)`` of ``linspace(0, 1, bins + 1)`` (the last
    bin closed, as in ``numpy.histogram``) and column ``category[x]`` (an int in [0, n_categories));
    prompts whose pass rate is NaN or outside [0, 1] are left out. Leading axes (e.g. steps) are kept.
    """
    p = np.asarray(pass_rate, dtype=float)
    cat = np.broadcast_to(np.asarray(category, dtype=np.int64), p.shape)
    ok = np.isfinite(p) & (p >= 0) & (p <= 1)
    b = np.minimum(np.floor(np.where(ok, p, 0.0) * bins).astype(np.int64), bins - 1)
    lead = p.shape[:-1]
    row = np.arange(int(np.prod(lead, dtype=np.int64))).reshape(lead + (1,)) if lead else np.zeros((1,), np.int64)
    flat = (np.broadcast_to(row, p.shape) * bins + b) * n_categories + cat
    size = int(np.prod(lead, dtype=np.int64)) * bins * n_categories
    return np.bincount(flat[ok], minlength=size).reshape(lead + (bins, n_categories))

