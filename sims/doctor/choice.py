r"""The doctor's one model choice: leave-future-out scores at rolling origins, pseudo-BMA+ weights.

Both paths choose with :func:`lfo_weights`: the group path among its (population variant, drift shape) pairs
(:func:`.drift.model_weights`), the scalars path among its drift maps (:func:`.scalars_fit.lfo_choice`).

**Score** (Buerkner, Gabry and Vehtari 2020, leave-future-out). The logged points are split at rolling origins:
every point from :data:`ORIGIN` (half the points, at least 4) on, or ``max_origins`` evenly spaced ones on a
longer record (:func:`origins`). Each candidate is fitted on the points before an origin and scores the points up
to the next origin (each point scored once, a few steps ahead: the prequential log score) by its log predictive
density there; how a candidate fits and predicts is the caller's (``point_scores``), the origins and the weights
are this module's. Scoring every later point from a few fixed origins instead lets one surprise count at every
later point (a jump just after an origin, which no candidate fitted before it can foresee, then outweighs
everything after it).

**Weights** (pseudo-BMA+, Yao et al. 2018): the softmax of the candidates' summed scores, averaged over
:data:`BB_DRAWS` Bayesian-bootstrap (Dirichlet) reweightings of the scored points, so that a choice the data
cannot make stays shared. A score that is not finite counts as -1e6. No origin (fewer than 5 points): equal
weights and ``scores`` None.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ORIGIN", "MAX_ORIGINS", "BB_DRAWS", "origins", "lfo_weights"]

ORIGIN = 0.5  #: the first rolling origin, as a share of the logged points
MAX_ORIGINS = 30  #: at most this many origins (every point from :data:`ORIGIN` on, or evenly spaced blocks)
BB_DRAWS = 200  #: Bayesian-bootstrap reweightings of the pseudo-BMA+ weights


def origins(n: int, max_origins: int = MAX_ORIGINS) -> list[tuple[int, int]]:
    """(cut, end) per origin over ``n`` points: fit on points [0, cut), score points [cut, end); the blocks tile
    [first, n) with first = max(round(:data:`ORIGIN` n), 4)."""
    first = max(int(round(ORIGIN * n)), 4)
    cuts = sorted(set(np.linspace(first, n, min(max_origins, max(n - first, 0)) + 1).round().astype(int).tolist()))
    return list(zip(cuts[:-1], cuts[1:]))


def lfo_weights(n: int, candidates: list, point_scores, rng=None, max_origins: int = MAX_ORIGINS) -> dict:
    """Pseudo-BMA+ weights of ``candidates`` by their leave-future-out scores over ``n`` points (module docstring).

    ``point_scores(candidate, cut, end)``: the log predictive density of each of points [cut, end) for the
    candidate fitted on points [0, cut) (an array of end - cut). Returns ``weights`` {candidate: w}, ``scores``
    {candidate: summed log score} (None without an origin), ``scored_steps``, ``origins`` [(cut, end)]."""
    rng = np.random.default_rng(0) if rng is None else rng
    cuts = origins(n, max_origins)
    point = {c: [np.asarray(point_scores(c, cut, end), float) for cut, end in cuts] for c in candidates}
    if not cuts:
        return {"weights": {c: 1.0 / len(candidates) for c in candidates}, "scores": None, "scored_steps": 0,
                "origins": []}
    P = np.stack([np.concatenate(point[c]) for c in candidates])  # candidates x scored points
    P = np.where(np.isfinite(P), P, -1e6)
    z = rng.dirichlet(np.ones(P.shape[1]), size=BB_DRAWS) * P.shape[1]  # Bayesian bootstrap over scored points
    tot = z @ P.T  # draws x candidates
    ww = np.exp(tot - tot.max(axis=1, keepdims=True))
    w = (ww / ww.sum(axis=1, keepdims=True)).mean(axis=0)
    return {"weights": dict(zip(candidates, map(float, w))), "scores": dict(zip(candidates, map(float, P.sum(1)))),
            "scored_steps": int(P.shape[1]), "origins": cuts}
