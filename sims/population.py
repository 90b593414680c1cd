r"""Difficulty populations: per-prompt pass rates and their degeneracy.

A population is N prompts whose starting pass rates are drawn once from
Beta(a, b) under a seed (default 600 prompts from Beta(2, 3)), or any array of
per-prompt pass rates. With per-prompt pass rates p_x the share of degenerate
groups is

    D_real = mean_x D(p_x, K)           (what a run actually sees)
    D_iid  = D(mean_x p_x, K)           (what the mean pass rate alone predicts)

and D_real >= D_iid whenever D is convex in p on [0, 1] (Jensen; paper in seed
003), which holds for independent rollouts. For a Beta(a, b) population the
expectation is exact: E[p^K] = B(a + K, b) / B(a, b) and
E[(1 - p)^K] = B(a, b + K) / B(a, b); at training progress t (see
:mod:`grpo_lab.sims.decay`) E[p_t^K] = B(a + sK, b) / B(a, b) and the all-fail term is
integrated numerically against the Beta density.

Each drawn prompt also owns its random numbers (common random numbers):
``uniforms[x, i]`` decides rollout i of prompt x (it passes iff u < pass rate),
and ``latent[x]`` fixes the prompt's shared success rate when rollouts are
correlated. Pass rates, uniforms and latents come from separate, explicitly
keyed streams of ``numpy.random.SeedSequence(seed)``, so growing N keeps the
first prompts as they were, and a view is a pure function of the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import integrate, special, stats

from . import decay
from ._checks import as_group_size, as_prob, as_rho, positive
from .errors import InputError
from .outcomes import outcome_probabilities

__all__ = [
    "DEFAULT_SEED",
    "UNIFORM_BLOCK",
    "MAX_PROMPTS",
    "Population",
    "draw_population",
    "from_pass_rates",
    "degeneracy_real",
    "degeneracy_iid",
    "beta_degeneracy",
]

DEFAULT_SEED = 1302  #: seed of the lab's default view, chosen (README) so it reads close to seed 002's figures
UNIFORM_BLOCK = 64  #: rollout uniforms are drawn in column blocks of this width (the lab's largest K)
MAX_PROMPTS = 100_000  #: the most prompts a drawn population may have

_KEY_PASS, _KEY_UNIFORM, _KEY_LATENT = 0, 1, 2


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _check_seed(seed) -> int:
    try:
        s = int(seed)
    except (TypeError, ValueError):
        raise InputError(f"seed must be a non-negative integer, got {seed!r}") from None
    if s != seed or s < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    return s


@dataclass(frozen=True)
class Population:
    """N prompts: starting pass rates plus the random numbers that realise their groups.

    Attributes
    ----------
    pass_rates : ndarray, shape (N,)
        Starting pass rates p_0 in [0, 1].
    seed : int or None
        The seed the random numbers come from.
    a, b : float or None
        The Beta parameters the pass rates were drawn from (None for an explicit array).
    """

    pass_rates: np.ndarray
    seed: int
    a: float | None = None
    b: float | None = None
    _blocks: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n(self) -> int:
        return int(self.pass_rates.shape[0])

    def uniforms(self, K: int) -> np.ndarray:
        """Rollout uniforms, float32, shape (N, K): rollout i of prompt x passes iff ``uniforms[x, i] < p``.

        Drawn in blocks of :data:`UNIFORM_BLOCK` columns, so column i never depends on K.
        """
        K = int(as_group_size(K))
        n_blocks = -(-K // UNIFORM_BLOCK)
        for j in range(n_blocks):
            if j not in self._blocks:
                self._blocks[j] = _rng(self.seed, _KEY_UNIFORM, j).random((self.n, UNIFORM_BLOCK), dtype=np.float32)
        return np.concatenate([self._blocks[j] for j in range(n_blocks)], axis=1)[:, :K]

    @property
    def latent(self) -> np.ndarray:
        """Per-prompt uniform in (0, 1) that fixes its shared success rate under correlated rollouts."""
        if "latent" not in self._blocks:
            self._blocks["latent"] = _rng(self.seed, _KEY_LATENT).random(self.n)
        return self._blocks["latent"]


def draw_population(n_prompts: int = 600, a: float = 2.0, b: float = 3.0, seed: int = DEFAULT_SEED) -> Population:
    """Draw N starting pass rates from Beta(a, b) under ``seed``.

    Raises InputError for N outside [1, MAX_PROMPTS], a or b not positive, or a negative seed.
    """
    n = int(as_group_size(n_prompts, "n_prompts"))
    if n > MAX_PROMPTS:
        raise InputError(f"n_prompts must be at most {MAX_PROMPTS:,}, got {n:,}")
    a, b = positive(a, "a"), positive(b, "b")
    seed = _check_seed(seed)
    p0 = _rng(seed, _KEY_PASS).beta(a, b, size=n)
    return Population(pass_rates=p0, seed=seed, a=a, b=b)


def from_pass_rates(pass_rates, seed: int = DEFAULT_SEED) -> Population:
    """A population from any array of per-prompt pass rates (random numbers still from ``seed``)."""
    p = np.atleast_1d(as_prob(pass_rates, "pass rates")).astype(float)
    if p.ndim != 1 or p.size == 0:
        raise InputError("pass rates must be a non-empty 1-D array")
    return Population(pass_rates=p, seed=_check_seed(seed))


def degeneracy_real(pass_rates, K, rho=0.0) -> float:
    """D_real = mean_x D(p_x, K): the expected share of degenerate groups over the prompts."""
    p = np.atleast_1d(as_prob(pass_rates, "pass rates"))
    if p.size == 0:
        return float("nan")
    return float(np.mean(outcome_probabilities(p, K, rho)["p_unanimous"]))


def degeneracy_iid(pass_rates, K, rho=0.0) -> float:
    """D_iid = D(mean_x p_x, K): the degeneracy the mean pass rate alone predicts."""
    p = np.atleast_1d(as_prob(pass_rates, "pass rates"))
    if p.size == 0:
        return float("nan")
    return float(outcome_probabilities(float(np.mean(p)), K, rho)["p_unanimous"])


def beta_degeneracy(a: float, b: float, K: int, t: float = 0.0, gain: float = decay.DEFAULT_GAIN, rho: float = 0.0):
    """Exact expected outcome shares for p_0 ~ Beta(a, b) at progress t.

    Returns a dict with ``mean_pass_rate`` (E[p_t]), ``all_pass`` (E[P(all pass)]),
    ``all_fail``, ``d_real`` (their sum), ``useful`` (1 - d_real) and ``d_iid``
    (D(E[p_t], K)). For rho = 0 the all-pass term is the closed form
    B(a + sK, b) / B(a, b), and at t = 0 the all-fail term is B(a, b + K) / B(a, b);
    otherwise terms are integrated against the Beta density with scipy.integrate.quad.
    """
    a, b = positive(a, "a"), positive(b, "b")
    K = int(as_group_size(K))
    rho = float(as_rho(rho))
    s = float(decay.exponent(t, gain))
    lb = special.betaln(a, b)
    mean = float(np.exp(special.betaln(a + s, b) - lb))
    dens = stats.beta(a, b).pdf

    def integral(fn):
        return float(integrate.quad(lambda p: fn(p) * dens(p), 0.0, 1.0, limit=200, epsabs=1e-13, epsrel=1e-11)[0])

    if rho == 0.0:
        all_pass = float(np.exp(special.betaln(a + s * K, b) - lb))
        if s == 1.0:
            all_fail = float(np.exp(special.betaln(a, b + K) - lb))
        else:
            all_fail = integral(lambda p: (1.0 - p**s) ** K)
    else:
        all_pass = integral(lambda p: outcome_probabilities(p**s, K, rho)["p_all_pass"])
        all_fail = integral(lambda p: outcome_probabilities(p**s, K, rho)["p_all_fail"])
    d_real = all_pass + all_fail
    d_iid = float(outcome_probabilities(mean, K, rho)["p_unanimous"])
    return {"mean_pass_rate": mean, "all_pass": all_pass, "all_fail": all_fail,
            "d_real": d_real, "useful": 1.0 - d_real, "d_iid": d_iid}
