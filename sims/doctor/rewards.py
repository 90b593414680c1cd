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
  rows' groups times K; with N unknown the bound at N = 2K (the loosest that can be a group) is used. TRL's
  ``reward_std`` is the batch's std from huggingface/trl 0e0cb5f (2026-01-15) on, but from the first GRPOTrainer
  (0f5ffad, 2025-01-20) until then it was the mean of the groups' stds (``std_grouped_rewards.mean()``), and a log
  does not say which TRL wrote it: a group's std is sqrt(q (1 - q) K / (K - 1)) at its pass fraction q, and their
  mean is at most sqrt(m (1 - m) K / (K - 1)) (Jensen twice), the bound at N = K, which holds under both and is the
  one used for TRL. At K = 2 the groups' mean std of binary rewards is exactly (1 - zero-std share) / sqrt(2),
  evidence of **binary** (:func:`_pair_std`); the batch value is not (a logging average lies below it). A logged
  variance (``reward/var``, no std logged) is read as its square root: rewards in [0, 1] with mean m have a
  variance of at most m (1 - m), reached only when every reward is 0 or 1 (N / (N - 1) apart for a Bessel one,
  within :data:`STD_SLACK` at the batch sizes logged).
* **binary** when the logged std equals the binary value (within :data:`STD_SLACK`) at least at
  :data:`BINARY_ROWS` of the rows and nothing above says otherwise, or the source is this project's own
  simulator or trainer.
* **unknown** otherwise (shares alone cannot tell).

Where the trainer logs how many rollouts a row's mean reward averages (tinker-cookbook's ``env/all/total_episodes``:
``reward/total`` is ``np.mean`` over exactly those trajectories, ``rl/metric_util.py``), binary rewards make the
mean a multiple of 1/N: a row with ``|m N - round(m N)| > N`` :data:`LATTICE_TOL` is evidence of **not binary**
(a rubric's pass rate, a format penalty).

tinker-cookbook's ``ProblemEnv`` (``rl/problem_env.py``, thinking-machines-lab/tinker-cookbook @ 9dfcc3a2) rewards
each rollout ``correct + format_coef (format - 1)``, ``correct`` = float(check_answer) and ``format`` = float(well
formed and check_format), each 0.0 or 1.0, and logs their means over the iteration (``env/all/correct``,
``env/all/format``, kept at ingest as evidence). So at a row whose ``format`` mean is 1 every rollout is well formed
and its reward is its 0/1 ``correct``; at a row with ``format`` below 1 some rollouts earn ``-format_coef`` or
``1 - format_coef``. **binary** when the logged ``reward/total`` equals ``correct`` (within :data:`SAME_TOL`) at
every row, ``format`` (where logged) is 1 throughout and ``correct`` N is whole where N is logged; **not binary**
when ``format`` is below 1 at some row and ``reward/total = correct + c (format - 1)`` there with one ``c`` > 0
(the penalty rows named, and from which step the rewards are the 0/1 ``correct``). A ``correct`` that the reward
does not equal and no format penalty explains says nothing either way (another environment's metric).

For rewards that are not binary a group's K rewards either all tie (zero std: what the trainer logs) or not;
the pass-rate statements (the Beta population, all-pass / all-fail) do not apply, and the doctor models the
tie share itself (:mod:`.tie_trend`).

Edge cases: NaN and inf rows are skipped; columns of the wrong length are ignored.
"""

from __future__ import annotations

import re

import numpy as np

from ..ingest.trackers.lattice import TOL
from ..outcomes import max_useful

__all__ = ["STD_SLACK", "STD_ROWS", "BINARY_ROWS", "LATTICE_TOL", "SAME_TOL", "classify_scalars", "classify_groups",
           "max_mixed_share"]

STD_SLACK = 0.02  #: a logged std further than this above the binary bound counts as a row binary rewards cannot give
STD_ROWS = 0.1  #: share of rows above the bound that makes the rewards "not binary"
BINARY_ROWS = 0.9  #: share of rows at the binary value that makes them "binary"
_STD = re.compile(r"^scalar/(?:.*[/_])?(?:reward|score)(?:/|_)std$")
_VAR = re.compile(r"^scalar/(?:.*[/_])?(?:reward|score)(?:/|_)var$")
_MAX = re.compile(r"^scalar/(?:.*/)?(?:reward|score)/max$")
_MIN = re.compile(r"^scalar/(?:.*/)?(?:reward|score)/min$")
_FUNC = re.compile(r"^scalar/rewards/(.+)/mean$")
_OWN = ("simulated", "grpo-lab")
LATTICE_TOL = TOL  #: |m - k/N| allowed of a mean of N binary rewards (the share lattice's tolerance, per share)
SAME_TOL = 1e-9  #: |reward/total - correct| within which a row's mean reward is its mean correct (float64 means)
_CORRECT = re.compile(r"^scalar/(?:.*/)?env/all/correct$")
_FORMAT = re.compile(r"^scalar/(?:.*/)?env/all/format$")
_EPISODES = re.compile(r"^scalar/(?:.*/)?env/all/total_episodes$")


max_mixed_share = max_useful  #: the most mixed groups binary rewards can give at K (:func:`grpo_lab.sims.outcomes.max_useful`)


def _col(steps: dict, key: str, n: int):
    v = steps.get(key)
    if v is None or len(v) != n:
        return None
    return np.asarray(v, float)


def _key(steps: dict, rx) -> str | None:
    return next((k for k in steps if rx.match(k)), None)


def _rows(steps, mask) -> str:
    """"steps a-b" (or "steps a, b, ...") of the rows in ``mask``."""
    st = np.asarray(steps.get("step", []), float)[mask]
    if st.size and np.array_equal(st, np.arange(st[0], st[0] + st.size)):
        return f"step {st[0]:.0f}" if st.size == 1 else f"steps {st[0]:.0f}-{st[-1]:.0f}"
    return "steps " + ", ".join(f"{x:.0f}" for x in st[:5]) + (", ..." if st.size > 5 else "")


def _lattice(steps: dict, mean, n: int) -> str | None:
    """Evidence of "not binary" from a mean reward off the lattice k/N of its logged rollout count N."""
    key = _key(steps, _EPISODES)
    N = _col(steps, key, n) if key else None
    if N is None or mean is None:
        return None
    ok = np.isfinite(mean) & np.isfinite(N) & (N >= 1)
    x = mean * np.where(ok, N, 0.0)
    off = ok & (np.abs(x - np.round(x)) > np.where(ok, N, 0.0) * LATTICE_TOL)
    if not off.any():
        return None
    i = int(np.flatnonzero(off)[0])
    return (f"the mean reward is not a multiple of 1/N, N the rollouts it averages ({key[7:]}), at {int(off.sum())} "
            f"of {int(ok.sum())} rows (step {steps['step'][i]:.0f}: {mean[i]:.6g} x {N[i]:.0f} = {x[i]:.4f}); a mean "
            "of N rewards of 0 and 1 is k/N")


def _problem_env(steps: dict, mean, n: int) -> tuple[list[str], list[str]]:
    """tinker-cookbook's ProblemEnv evidence (module docstring): ``(why not binary, why binary)``."""
    ck, fk, nk = _key(steps, _CORRECT), _key(steps, _FORMAT), _key(steps, _EPISODES)
    c = _col(steps, ck, n) if ck else None
    if c is None or mean is None:
        return [], []
    f = _col(steps, fk, n) if fk else None
    ok = np.isfinite(c) & np.isfinite(mean) & (True if f is None else np.isfinite(f))
    if ok.sum() == 0:
        return [], []
    same = ok & (np.abs(mean - c) <= SAME_TOL)
    if f is not None:
        pen = ok & (f < 1 - SAME_TOL)
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = np.where(pen, (c - mean) / (1 - f), np.nan)
        cs = coef[pen]
        if pen.any() and np.all(cs > 0) and np.ptp(cs) <= 1e-6 * max(1.0, float(np.max(cs))) \
                and np.all(same | pen):
            after = "" if pen[-1] else (f"; from step {steps['step'][np.flatnonzero(pen)[-1] + 1]:.0f} every rollout "
                                        "is well formed and the reward is its 0/1 correct")
            return [f"tinker ProblemEnv: the reward is correct + {float(np.median(cs)):.3g} (format - 1) (the logged "
                    f"{_mean_key(steps)} equals it at all {int(ok.sum())} rows); {ck[7:]} and {fk[7:]} are 0/1 per "
                    f"rollout, and {fk[7:]} is below 1 at {int(pen.sum())} rows ({_rows(steps, pen)}), where "
                    f"rollouts earn -{float(np.median(cs)):.3g} or {1 - float(np.median(cs)):.3g}{after}"], []
        if pen.any():
            return [], []
    if not np.all(same[ok]):
        return [], []
    N = _col(steps, nk, n) if nk else None
    if N is not None:
        on = ok & np.isfinite(N) & (N >= 1)
        x = c * np.where(on, N, 0.0)
        if np.any(on & (np.abs(x - np.round(x)) > np.where(on, N, 0.0) * LATTICE_TOL)):
            return [], []  # a "correct" that is not a mean of 0/1 values: not ProblemEnv's
    fmt = f" and {fk[7:]} is 1 throughout (no format penalty)" if f is not None else ""
    return [], [f"tinker ProblemEnv: the logged {_mean_key(steps)} equals {ck[7:]} (float(check_answer), 0 or 1 per "
                f"rollout) at all {int(ok.sum())} rows{fmt}"]


def _pair_std(steps: dict, s, ok, n: int) -> str | None:
    """TRL's groups' mean std at K = 2 (module docstring): binary rewards give each mixed pair the std 1/sqrt(2) and
    each tied pair 0, so the logged std is (1 - frac_reward_zero_std) / sqrt(2) at every row (the logging average
    keeps it, both being means over the same batches). Evidence of "binary" where it holds at :data:`BINARY_ROWS` of
    the rows."""
    z = _col(steps, "frac_reward_zero_std", n)
    if z is None:
        return None
    on = ok & np.isfinite(z) & (z >= 0) & (z <= 1)
    at = np.abs(s - (1 - np.where(on, z, 1.0)) / np.sqrt(2)) <= STD_SLACK
    telling = on & (z < 1 - 2 * STD_SLACK)  # rows with mixed pairs: a row of tied pairs only is 0 under any rewards
    if telling.sum() < 3 or at[on].mean() < BINARY_ROWS or at[telling].mean() < BINARY_ROWS:
        return None
    return (f"the logged reward_std equals (1 - frac_reward_zero_std) / sqrt(2), the mean std of 0/1 pairs, at "
            f"{int((at & on).sum())} of {int(on.sum())} rows ({int((at & telling).sum())} with mixed pairs)")


def _mean_key(steps: dict) -> str:
    """The name the mean reward was read from, for the evidence's words."""
    return next((k[7:] for k in steps if k.startswith("scalar/") and k.endswith("reward/total")), "mean reward")


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
    std_key = next((k for k in steps if _STD.match(k)), None) or next((k for k in steps if _VAR.match(k)), None)
    if std_key is not None and mean is not None and K:
        s = _col(steps, std_key, n)
        if s is not None and _VAR.match(std_key):  # a logged variance: its square root is the std (module docstring)
            s = np.sqrt(np.where(s >= 0, s, np.nan))
        g = _col(steps, "groups_per_step", n)
        N = np.where(np.isfinite(g) & (g > 0), g * K, 2.0 * K) if g is not None else np.full(n, 2.0 * K)
        trl = str((source or {}).get("trainer") or "") == "trl" and not _VAR.match(std_key)
        if trl:  # TRL 0.14-0.27 log the groups' mean std (module docstring): its bound is the batch's at N = K
            N = np.full(n, float(K))
        ok = np.isfinite(s) & np.isfinite(mean) & (mean >= 0) & (mean <= 1) & (N > 1)
        if ok.sum() >= 3:
            m = mean[ok]
            bound = np.sqrt(m * (1 - m) * N[ok] / (N[ok] - 1))
            above = s[ok] > bound + STD_SLACK
            at = np.abs(s[ok] - bound) <= STD_SLACK
            value = "m (1 - m)" if _VAR.match(std_key) else ("sqrt(m (1 - m) K / (K - 1)), the most a mean of groups' "
                                                              "stds can be" if trl else "sqrt(m (1 - m) N / (N - 1))")
            if above.sum() >= 3 and above.mean() > STD_ROWS:
                why_not.append(f"the logged {std_key[7:]} exceeds what binary rewards with that mean can give "
                               f"({value}) by more than {STD_SLACK:g} (as a std) at {int(above.sum())} of "
                               f"{int(ok.sum())} rows")
            elif at.mean() >= BINARY_ROWS and not trl:
                why_bin.append(f"the logged {std_key[7:]} equals the binary value {value} at "
                               f"{int(at.sum())} of {int(ok.sum())} rows")
            elif trl and K == 2 and (pair := _pair_std(steps, s, ok, n)):
                why_bin.append(pair)
    # the row's mean over the rollouts it logs: the batch's mean reward, else the trainer's own figure where the record
    # keeps it but no column (tinker-cookbook with remove_constant_reward_groups: over the kept groups' episodes)
    row_mean = mean if mean is not None and np.isfinite(mean).any() else _col(steps, "scalar/" + _mean_key(steps), n)
    why_not += [x for x in [_lattice(steps, row_mean, n)] if x]
    pe_not, pe_bin = _problem_env(steps, row_mean, n)
    why_not += pe_not
    why_bin += pe_bin
    trainer = str((source or {}).get("trainer") or "")
    if why_not:
        return {"rewards": "not binary", "rewards_why": why_not}
    if trainer in _OWN:
        why_bin.append(f"written by {trainer} (0/1 rewards)")
    if why_bin:
        return {"rewards": "binary", "rewards_why": why_bin}
    if std_key is not None:
        return {"rewards": "unknown", "rewards_why": [f"the logged {std_key[7:]} is within what 0/1 rewards can give "
                                                      "but does not pin them (an average over batches lies below the "
                                                      "binary value), and no range or per-function means say "
                                                      "otherwise"]}
    return {"rewards": "unknown", "rewards_why": ["nothing logged tells: no reward std, range or per-function "
                                                  "means that would show rewards other than 0 and 1"]}
