"""Figures recomputed from an ingest fixture's ``truth.json`` for the doctor's checks on ingested records.

Shared by ``tests/test_doctor_ingested.py`` (TRL) and ``tests/test_doctor_ingested_verl.py`` (verl); each takes
per-group reward arrays the test rebuilt from its truth, never from the ingested record. A pass is a reward
above 0.5, as the doctor's binarisation at ``--tolerance 0``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats

__all__ = ["state", "betabinom_ml", "check_fit", "transition_counts", "mixed_per_1000"]


def state(rewards) -> int:
    """0 all-fail, 1 mixed, 2 all-pass for one group's rewards (pass: > 0.5)."""
    x = np.asarray(rewards, float)
    return 0 if np.all(x <= 0.5) else 2 if np.all(x > 0.5) else 1


def betabinom_ml(successes, K: int) -> tuple[float, float]:
    """(alpha, beta) maximising scipy's beta-binomial likelihood of the successes per group (Nelder-Mead on logs)."""
    S = np.asarray(successes)
    nll = lambda la: -stats.betabinom.logpmf(S, K, *np.exp(la)).sum()  # noqa: E731
    best = optimize.minimize(nll, np.log([1.0, 1.0]), method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10})
    a, b = np.exp(best.x)
    return float(a), float(b)


def check_fit(d: dict, successes, K: int) -> None:
    """Assert the doctor's fit ``d`` equals :func:`betabinom_ml` of the successes within 2% of its standard errors,
    and its observed all-pass / all-fail shares are the successes' own."""
    S = np.asarray(successes)
    a, b = betabinom_ml(S, K)
    f = d["fit"]
    assert abs(f["alpha"] - a) < 0.02 * f["se_alpha"] and abs(f["beta"] - b) < 0.02 * f["se_beta"], (f, a, b)
    for key, want in (("all_pass", np.mean(S == K)), ("all_fail", np.mean(S == 0))):
        assert math.isclose(d["observed_unanimous"][key], want, rel_tol=1e-6, abs_tol=1e-12), key  # pytest.approx's


def transition_counts(visits) -> np.ndarray:
    """3 x 3 counts of (state, next state) over consecutive visits; ``visits``: (prompt, rewards) in visit order."""
    seqs: dict = {}
    for prompt, rewards in visits:
        seqs.setdefault(prompt, []).append(state(rewards))
    out = np.zeros((3, 3), int)
    for s in seqs.values():
        for a, b in zip(s, s[1:]):
            out[a, b] += 1
    return out


def mixed_per_1000(groups, K: int) -> tuple[float, float]:
    """(mixed groups per 1,000 rollouts, its standard error) over ``groups`` (reward arrays), 1000 / K per group."""
    mixed = np.array([state(r) == 1 for r in groups], float)
    m = mixed.mean()
    return float(m * 1000 / K), float(np.sqrt(m * (1 - m) / mixed.size) * 1000 / K)
