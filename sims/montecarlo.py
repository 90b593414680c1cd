r"""Monte Carlo validation of the closed forms, with standard-error tolerances.

Each group is simulated rollout by rollout, in order, but only as far as it
matters: the first rollout passes with the prompt's success rate q, and the
index of the first later rollout that disagrees with it is geometric with
success probability 1 - q (if the first passed) or q (if it failed). The group
is unanimous iff no rollout among the remaining K - 1 disagrees. This is the
same distribution as drawing all K Bernoulli rollouts, at O(groups) cost
instead of O(groups x K). With rho > 0 each group first draws its shared
success rate q ~ Beta(p (1/rho - 1), (1 - p)(1/rho - 1)) (beta-binomial groups).

The check for each (p, K) is |MC - exact| <= z * SE with
SE = sqrt(P (1 - P) / n) and z = Phi^-1(1 - alpha / (2 m)): a Bonferroni split
of the overall false-alarm rate alpha across the m pairs of the grid. Where the
exact value is 0 or 1 the SE is 0 and the simulation must match exactly.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import stats

from ._checks import as_group_size, as_prob, as_rho
from .errors import InputError
from .outcomes import p_useful

__all__ = ["DEFAULT_GRID", "simulate_groups", "simulate_groups_matrix", "validate"]

#: (p, K) pairs checked by ``grpo-lab validate``: seed 000/002's table plus the limits
DEFAULT_GRID: tuple[tuple[float, int], ...] = (
    (0.0, 8), (1.0, 8), (0.5, 1), (0.3, 1),
    (0.5, 8), (0.7, 8), (0.8, 8), (0.9, 8), (0.95, 8), (0.99, 8), (0.999, 8),
    (0.9, 4), (0.9, 16), (0.9, 32), (0.99, 64), (0.1, 8), (0.05, 16), (0.25, 4),
)


def _rates(p: float, rho: float, n: int, rng: np.random.Generator) -> np.ndarray | float:
    if rho == 0.0 or p in (0.0, 1.0):
        return p
    scale = 1.0 / rho - 1.0
    return rng.beta(p * scale, (1.0 - p) * scale, size=n)


def simulate_groups(p: float, K: int, n_groups: int, rng: np.random.Generator, rho: float = 0.0) -> dict[str, int]:
    """Counts of all-pass, all-fail and mixed groups among ``n_groups`` simulated groups (run-length method)."""
    q = _rates(p, rho, n_groups, rng)
    first = rng.random(n_groups) < q
    p_differ = np.where(first, 1.0 - q, q)  # chance a later rollout disagrees with the first
    if K == 1:
        unanimous = np.ones(n_groups, bool)
    else:
        safe = np.where(p_differ > 0, p_differ, 0.5)
        gap = rng.geometric(safe)  # index of the first disagreeing later rollout
        unanimous = (p_differ == 0) | (gap > K - 1)
    all_pass = int(np.sum(unanimous & first))
    all_fail = int(np.sum(unanimous & ~first))
    return {"all_pass": all_pass, "all_fail": all_fail, "mixed": n_groups - all_pass - all_fail}


def simulate_groups_matrix(p: float, K: int, n_groups: int, rng: np.random.Generator, rho: float = 0.0) -> dict[str, int]:
    """The plain method: a (groups x K) uniform matrix, thresholded. Same distribution, O(groups x K)."""
    q = _rates(p, rho, n_groups, rng)
    q = np.broadcast_to(np.asarray(q, dtype=float), (n_groups,))
    passed = rng.random((n_groups, K)) < q[:, None]
    all_pass = int(np.sum(passed.all(axis=1)))
    all_fail = int(np.sum(~passed.any(axis=1)))
    return {"all_pass": all_pass, "all_fail": all_fail, "mixed": n_groups - all_pass - all_fail}


def validate(
    n_groups: int = 400_000,
    seed: int = 0,
    rho: float = 0.0,
    grid=DEFAULT_GRID,
    alpha: float = 1e-3,
    exact_fn: Callable = p_useful,
    simulator: Callable = simulate_groups,
) -> dict:
    """Compare simulated P(useful) with ``exact_fn(p, K, rho)`` on every (p, K) of ``grid``.

    Returns ``rows`` (p, K, rho, exact, mc, abs_diff, se, z), ``max_abs_diff``,
    ``z_crit``, ``alpha``, ``groups``, ``seed`` and ``passed`` (every row within
    z_crit standard errors). ``exact_fn`` is a parameter so a test can feed a
    wrong formula and watch the check reject it.
    """
    n = int(as_group_size(n_groups, "groups"))
    rho = float(as_rho(rho))
    if not 0 < alpha < 1:
        raise InputError("alpha must lie in (0, 1)")
    grid = [(float(as_prob(p)), int(as_group_size(K))) for p, K in grid]
    z_crit = float(stats.norm.isf(alpha / (2 * len(grid))))
    seeds = np.random.SeedSequence(seed).spawn(len(grid))
    rows = []
    for (p, K), ss in zip(grid, seeds):
        counts = simulator(p, K, n, np.random.default_rng(ss), rho=rho)
        exact = float(exact_fn(p, K, rho))
        mc = counts["mixed"] / n
        se = float(np.sqrt(max(exact * (1 - exact), 0.0) / n))
        diff = abs(mc - exact)
        z = diff / se if se > 0 else (0.0 if diff == 0 else float("inf"))
        rows.append({"p": p, "K": K, "rho": rho, "exact": exact, "mc": mc, "abs_diff": diff, "se": se, "z": z})
    return {
        "rows": rows,
        "max_abs_diff": max(r["abs_diff"] for r in rows),
        "z_crit": z_crit,
        "alpha": alpha,
        "groups": n,
        "seed": int(seed),
        "passed": all(r["z"] <= z_crit for r in rows),
    }
