r"""The first stall's survival over a long horizon at bounded cost: every step near the data, blocks further out.

A draw of the stall risk (:mod:`.stall_risk`) stalls at step s with probability q(s) given its path, steps
independent, so its survival is S(n) = prod_{s <= n} (1 - q(s)) = exp(-Lambda(n)), Lambda(n) = sum_{s <= n}
lambda(s), lambda = -log(1 - q) the per-step cumulative hazard. Drawn over every future step that costs a path of
the whole horizon per draw (10 run lengths: 10,000,000 steps past a 1,000,000-step log), so it is computed here
on a grid (:func:`risk_grid`): **every step** for the first :data:`FINE` future steps, then points spaced
:data:`SPACING` x (their distance past the last logged step) apart, out to the horizon (about
FINE + ln(ahead / FINE) / SPACING points: 2,856 for 10,000,000 future steps). Each block (a, b] of the grid holds
w = b - a steps; the draw's path and its q are evaluated at the grid points only, and within the block
log lambda is interpolated linearly in the step, so the block's hazard is a geometric sum, exact over its integer
steps (:func:`hazard_sum`):

    sum_{k=1..w} exp(l_a + g k) = exp(l_top) (1 - e^{-|g| w}) / (1 - e^{-|g|}),   g = (l_b - l_a) / w,

l = log lambda, l_top the largest term's exponent (w where g = 0). A block of one step gives lambda(b) itself: where
the grid is every step the survival is the per-step product (to rounding). The first stall's quantiles are found
within their block by bisection over its integer steps on the same interpolation (:func:`first_step`), so they are
steps, not grid points.

**Named deviations** from the per-step computation, beyond :data:`FINE` future steps only:

* log lambda linear within a block (the brief suggested the trapezoid in log(1 - q); far out q moves by orders of
  magnitude within a block, where a linear log(1 - q) overstates the block's hazard by that factor and a linear
  log lambda does not: lambda = -log Phi(-x) with x about linear in h, so log lambda is concave and smooth in the
  step, the chord a slight understatement);
* the path itself at the grid points only: exact in distribution for the shapes whose future is a curve (linear,
  power, plateau, and the jump, whose change point is always among the logged steps, so its future is a line);
  for the walk the path between grid points is a Brownian bridge, taken as its chord (the bridge's spread within
  a block, sigma sqrt(w) / 2 at its middle, is not drawn; its Jensen effect moves the first stall later);
* the mixture's hazard, its mean step restricted to the horizon and the per-step P(stall) are reported at the
  grid points (the hazard of a block: its geometric mean per step, 1 - (S(b) / S(a))^(1/w); the restricted mean
  sums the mixture's survival geometrically interpolated within each block).

Measured (``benchmarks/bench_risk_horizon.py``; docs/doctor.md, "The risk past 20,000 steps"): against the per-step
computation on the same drawn paths over 20,000 future steps (240 draws, 24 cases: four logs, each shape alone and
the chooser's mixture), the first stall's median and 90% interval ends are equal within :data:`FINE` steps and at
most 1 step (0.019% of the distance past the last logged step) later beyond; over 200,000 future steps (48 draws)
at most 0.042% (the walk alone, its bridge not drawn; the other shapes 0.006%).
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

__all__ = ["FINE", "SPACING", "risk_grid", "log_hazard", "hazard_sum", "cumulative_hazard", "first_step",
           "block_hazard_rate", "restricted_sum", "cumulative_at"]

FINE = 2_000  #: future steps evaluated one by one past the last logged step (the risk is exact there)
SPACING = 0.01  #: beyond :data:`FINE`, the grid's spacing as a share of the distance past the last logged step


def risk_grid(last: int, horizon_step: int, fine: int = FINE, spacing: float = SPACING) -> np.ndarray:
    """The future steps the risk is evaluated at (module docstring): last + 1 .. last + ``fine`` every step, then
    distances d growing by max(1, round(``spacing`` x d)), and the horizon itself; int64, increasing (empty where
    ``horizon_step`` <= ``last``)."""
    ahead = int(horizon_step) - int(last)
    if ahead <= 0:
        return np.zeros(0, np.int64)
    near = np.arange(1, min(fine, ahead) + 1, dtype=np.int64)
    if ahead <= fine:
        return int(last) + near
    k = np.arange(1, int(np.ceil(np.log(ahead / fine) / np.log1p(spacing))) + 2)
    far = np.round(fine * np.exp(k * np.log1p(spacing))).astype(np.int64)
    far = np.unique(np.concatenate([far[(far > fine) & (far < ahead)], [ahead]]))
    return int(last) + np.concatenate([near, far])


def log_hazard(x) -> np.ndarray:
    """log lambda = log(-log(1 - q)) of a step whose P(stall) is q = Phi(x) (``x`` the normal approximation's
    argument, :func:`.stall_risk.step_z`), finite for every x: log(-log Phi(-x)), where that underflows (q under
    1e-300) log Phi(x) (lambda = q to a relative q); x clipped to +-1e4 (lambda about 5e7 there: a certain stall)."""
    x = np.clip(np.asarray(x, float), -1e4, 1e4)
    lam = -log_ndtr(-x)
    with np.errstate(divide="ignore"):
        return np.where(lam > 1e-290, np.log(np.maximum(lam, 1e-300)), log_ndtr(x))


def hazard_sum(la, lb, w, k=None) -> np.ndarray:
    """sum_{j=1..k} exp(la + g j), g = (lb - la) / w: the hazard of the first ``k`` steps (all ``w`` where None) of a
    block of ``w`` steps from grid point a to b, log lambda linear between them (module docstring). Broadcasts."""
    la, lb, w = np.asarray(la, float), np.asarray(lb, float), np.asarray(w, float)
    k = w if k is None else np.asarray(k, float)
    g = (lb - la) / w
    top = la + np.where(g > 0, g * k, g)  # the largest term's exponent
    ag = np.abs(g)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(ag > 0, np.expm1(-ag * k) / np.expm1(-np.where(ag > 0, ag, 1.0)), k)
    return np.exp(top) * ratio


def cumulative_hazard(logl: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """Lambda(n) at each grid step ``steps`` (the first the first future step) of each row of ``logl`` (draws,
    len(steps)): lambda at the first step, then each block's :func:`hazard_sum`."""
    logl = np.atleast_2d(logl)
    if logl.shape[1] == 0:
        return logl.copy()
    w = np.diff(steps).astype(float)
    blocks = hazard_sum(logl[:, :-1], logl[:, 1:], w[None, :])
    return np.cumsum(np.concatenate([np.exp(logl[:, :1]), blocks], axis=1), axis=1)


def first_step(p: float, F: np.ndarray, Lam: np.ndarray, logl: np.ndarray, steps: np.ndarray) -> int | None:
    """The first step n with F(n) >= ``p``, F = 1 - mean over draws of exp(-Lambda): found among the grid
    ``steps`` (F there), then within its block by bisection over the block's integer steps (each draw's Lambda
    from the block's start plus :func:`hazard_sum` of its first k steps); None where F never reaches ``p``."""
    i = np.flatnonzero(F >= p)
    if not i.size:
        return None
    i = int(i[0])
    if i == 0 or steps[i] - steps[i - 1] == 1:
        return int(steps[i])
    a, w = int(steps[i - 1]), int(steps[i] - steps[i - 1])
    lo, hi = 0, w  # F(a + lo) < p <= F(a + hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lam = Lam[:, i - 1] + hazard_sum(logl[:, i - 1], logl[:, i], w, mid)
        if 1.0 - np.mean(np.exp(-lam)) >= p:
            hi = mid
        else:
            lo = mid
    return a + hi


def block_hazard_rate(S: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The mixture's per-step hazard at each grid step: 1 - (S(b) / S(a))^(1 / w) over the block (a, b] ending there
    (the first step: 1 - S; w = 1: f(n) / (1 - F(n - 1)), the per-step hazard); 1 where S(a) is 0."""
    prev = np.concatenate([[1.0], S[:-1]])
    w = np.concatenate([[1.0], np.diff(steps).astype(float)])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(prev > 0, S / np.where(prev > 0, prev, 1.0), 0.0)
    return np.where(prev > 0, 1.0 - ratio ** (1.0 / w), 1.0)


def restricted_sum(S: np.ndarray, steps: np.ndarray) -> float:
    """sum_{n = steps[0]..steps[-1]} S(n) of the mixture's survival ``S`` at the grid ``steps``: S at the first step,
    then each block's sum with S geometric between its ends (exact where the grid is every step)."""
    if not len(S):
        return 0.0
    a, b, w = S[:-1], S[1:], np.diff(steps).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(a > 0, (b / np.where(a > 0, a, 1.0)) ** (1.0 / w), 0.0)
        block = np.where(np.abs(1.0 - r) > 1e-12, a * r * (1.0 - r ** w) / np.where(np.abs(1.0 - r) > 1e-12, 1.0 - r,
                                                                                     1.0), a * w)
    return float(S[0] + np.sum(np.where(a > 0, block, 0.0)))


def cumulative_at(t, F: np.ndarray, steps: np.ndarray, last: int) -> np.ndarray:
    """The mixture's cumulative risk F at any future steps ``t`` from its values ``F`` at the grid ``steps``, with the
    survival geometric within each block (the per-step hazard constant there, as :func:`block_hazard_rate` and
    :func:`restricted_sum` take it): log S linear in the step between grid points, S(``last``) = 1 (no stall at or
    before the last logged step); F at the horizon beyond the grid. Exact at grid points and wherever the grid is
    every step."""
    t = np.asarray(t, float)
    S = np.clip(1.0 - np.asarray(F, float), 0.0, 1.0)
    grid = np.concatenate([[float(last)], np.asarray(steps, float)])
    with np.errstate(divide="ignore"):
        logS = np.log(np.concatenate([[1.0], S]))
    floor = np.log(np.finfo(float).tiny)  # a survival of 0 (a certain stall) kept finite for the interpolation
    logS = np.interp(np.clip(t, grid[0], grid[-1]), grid, np.maximum(logS, floor))
    return np.clip(1.0 - np.exp(logS), 0.0, 1.0)
