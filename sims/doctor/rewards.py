r"""Are the run's rewards binary? ``run.rewards`` is ``"binary"``, ``"not binary"`` or ``"unknown"``, with the
evidence in ``run.rewards_why`` (one line per piece).

A record with groups answers from the rewards themselves (every reward 0 or 1, or binarised at a tolerance).
A record of tracker scalars answers from what the trainer logged:

* **not binary** when any of: the mean reward outside [0, 1]; a logged per-step maximum above 1 or minimum
  below 0 (``.../max``, ``.../min`` of the reward or score); several reward functions summed (TRL logs
  ``rewards/<f>/mean`` per function: more than one means the trained reward is their weighted sum); a
  logged reward std that binary rewards cannot give. For binary rewards with mean m over N rollouts the
  (Bessel) std of the batch is sqrt(m (1 - m) N / (N - 1)) exactly, and a mean of such stds over several
  batches (a ``logging_steps`` average) lies below the same bound evaluated at the mean m (Jensen: m(1-m) is
  concave, sqrt too). A logged std above the bound by more than :data:`STD_SLACK` at more than
  :data:`STD_ROWS` of the rows (and at least 3 rows) is evidence the rewards take other values. N is the
  rows' groups times K; with N unknown the bound at N = 2K (the loosest that can be a group) is used.
* **binary** when the logged std equals the binary value (within :data:`STD_SLACK`) at least at
  :data:`BINARY_ROWS` of the rows and nothing above says otherwise, or the source is this project's own
  simulator or trainer.
* **unknown** otherwise (shares alone cannot tell).

For rewards that are not binary a group's K rewards either all tie (zero std: what the trainer logs) or not;
the pass-rate statements (the Beta population, all-pass / all-fail) do not apply, and the doctor models the
tie share itself (:mod:`.tie_trend`).

Edge cases: NaN and inf rows are skipped; columns of the wrong length are ignored.
"""

from __future__ import annotations

import re

import numpy as np

from ..outcomes import p_useful

__all__ = ["STD_SLACK", "STD_ROWS", "BINARY_ROWS", "classify_scalars", "classify_groups", "max_mixed_share"]

STD_SLACK = 0.02  #: a logged std further than this above the binary bound counts as a row binary rewards cannot give
STD_ROWS = 0.1  #: share of rows above the bound that makes the rewards "not binary"
BINARY_ROWS = 0.9  #: share of rows at the binary value that makes them "binary"
_STD = re.compile(r"^scalar/(?:.*[/_])?(?:reward|score)(?:/|_)std$")
_MAX = re.compile(r"^scalar/(?:.*/)?(?:reward|score)/max$")
_MIN = re.compile(r"^scalar/(?:.*/)?(?:reward|score)/min$")
_FUNC = re.compile(r"^scalar/rewards/(.+)/mean$")
_OWN = ("simulated", "grpo-lab")


def max_mixed_share(K: int) -> float:
    """The most mixed groups binary rewards can give at K: P(useful) at pass rate 1/2 (every prompt there),
    1 - 2^(1 - K) (:func:`grpo_lab.sims.outcomes.p_useful`)."""
    return float(p_useful(0.5, int(K)))


def _col(steps: dict, key: str, n: int):
    v = steps.get(key)
    if v is None or len(v) != n:
        return None
    return np.asarray(v, float)


def classify_groups(binarised: bool) -> dict:
    """The answer for a record with groups."""
    if binarised:
        return {"rewards": "not binary", "rewards_why": ["the rollouts' rewards are not all 0 or 1 (binarised at the "
                                                         "tolerance for the pass-rate fits)"]}
    return {"rewards": "binary", "rewards_why": ["every rollout's reward is 0 or 1"]}


def classify_scalars(steps: dict, K: int | None, source: dict | None = None) -> dict:
    """``{"rewards", "rewards_why"}`` for a scalars-only record's ``steps`` (see the module docstring)."""
    steps = steps or {}
    n = len(steps.get("step", []))
    why_not, why_bin = [], []
    mean = _col(steps, "reward_mean", n)
    if mean is not None:
        ok = np.isfinite(mean)
        out = ok & ((mean < -1e-9) | (mean > 1 + 1e-9))
        if out.any():
            why_not.append(f"the mean reward lies outside [0, 1] at {int(out.sum())} of {int(ok.sum())} rows "
                           f"(from {np.min(mean[ok]):.3g} to {np.max(mean[ok]):.3g})")
    for key in steps:
        for pat, test, word in ((_MAX, lambda v: v > 1 + 1e-9, "above 1"), (_MIN, lambda v: v < -1e-9, "below 0")):
            if pat.match(key) and (v := _col(steps, key, n)) is not None:
                bad = np.isfinite(v) & test(np.where(np.isfinite(v), v, 0.0))
                if bad.any():
                    why_not.append(f"{key[7:]} is {word} at {int(bad.sum())} rows")
    funcs = sorted({m.group(1) for k in steps if (m := _FUNC.match(k))})
    if len(funcs) > 1:
        why_not.append(f"{len(funcs)} reward functions are logged ({', '.join(funcs[:5])}): the trained reward is "
                       "their sum")
    std_key = next((k for k in steps if _STD.match(k)), None)
    if std_key is not None and mean is not None and K:
        s = _col(steps, std_key, n)
        g = _col(steps, "groups_per_step", n)
        N = np.where(np.isfinite(g) & (g > 0), g * K, 2.0 * K) if g is not None else np.full(n, 2.0 * K)
        ok = np.isfinite(s) & np.isfinite(mean) & (mean >= 0) & (mean <= 1) & (N > 1)
        if ok.sum() >= 3:
            m = mean[ok]
            bound = np.sqrt(m * (1 - m) * N[ok] / (N[ok] - 1))
            above = s[ok] > bound + STD_SLACK
            at = np.abs(s[ok] - bound) <= STD_SLACK
            if above.sum() >= 3 and above.mean() > STD_ROWS:
                why_not.append(f"the logged {std_key[7:]} exceeds what binary rewards with that mean can give "
                               f"(sqrt(m (1 - m) N / (N - 1))) by more than {STD_SLACK:g} at {int(above.sum())} of "
                               f"{int(ok.sum())} rows")
            elif at.mean() >= BINARY_ROWS:
                why_bin.append(f"the logged {std_key[7:]} equals the binary value sqrt(m (1 - m) N / (N - 1)) at "
                               f"{int(at.sum())} of {int(ok.sum())} rows")
    trainer = str((source or {}).get("trainer") or "")
    if why_not:
        return {"rewards": "not binary", "rewards_why": why_not}
    if trainer in _OWN:
        why_bin.append(f"written by {trainer} (0/1 rewards)")
    if why_bin:
        return {"rewards": "binary", "rewards_why": why_bin}
    return {"rewards": "unknown", "rewards_why": ["nothing logged tells: no reward std, range or per-function "
                                                  "means that would show rewards other than 0 and 1"]}
