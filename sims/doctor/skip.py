r"""What skipping and reallocating would buy, measured on the run itself.

**Temporal consistency** (what pre-rollout filters such as GRESO rely on): over
consecutive draws of the same prompt, P(unanimous next | unanimous last), split
into all-pass -> all-pass and all-fail -> all-fail, beside the baseline
P(unanimous next | mixed last); each with its Jeffreys 95% interval.

**Skip-rule backtest** (not a model): replay the run's own draws in step order and
skip a draw whenever the prompt's last ``n`` draws were all unanimous, for each n
in :data:`SKIP_HISTORIES`. Rollouts saved = K x skipped draws; wrongly skipped =
skipped draws whose group was in fact mixed (gradient lost). The history the
rule sees is the run's actual history: a real skip would leave the prompt's
history older, so this is what the rule would have decided on this run's
outcomes, not a re-run.

**Budgeted allocation** (a model, in the spirit of knapsack-style allocation):
with the pass rates p_x that the trend fit (:mod:`.forecast`) gives at the last
step and the same budget as uniform K (K rollouts per seen prompt), give each
prompt K_x in {0, 2, 3, ..., Kmax} rollouts to maximise the expected number of
useful groups sum_x P(useful | p_x, K_x) (:func:`grpo_lab.sims.outcomes.p_useful`).
The gain of the k-th rollout, P(useful | k) - P(useful | k - 1), does not increase
with k once the first two are taken together (they add 2 p (1 - p), each later one at
most p (1 - p)), so taking the largest per-rollout gains is optimal (up to one unit).
Reported as expected useful groups per 1,000 rollouts against uniform K.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..outcomes import p_useful
from .fit import share_interval
from .groups import RunGroups

__all__ = ["SKIP_HISTORIES", "PER_ROLLOUTS", "sorted_draws", "temporal_consistency", "skip_backtest",
           "allocate", "allocation", "allocation_from_trend"]

SKIP_HISTORIES = (1, 2, 3)  #: skip after this many unanimous draws in a row
PER_ROLLOUTS = 1000  #: allocation figures are per this many rollouts
ALLOC_K_FACTOR = 4  #: the allocation may give a prompt up to this many times K rollouts ...
ALLOC_K_MAX = 64  #: ... and never more than this


def sorted_draws(groups: RunGroups):
    """(order, same): groups sorted by (prompt, step, record row); ``same[i]`` is True when sorted
    row i + 1 is the same prompt as row i (a consecutive pair of draws)."""
    order = np.lexsort((np.arange(groups.n), groups.step, groups.prompt_id))
    pid = groups.prompt_id[order]
    return order, pid[1:] == pid[:-1]


def _rate(k, n) -> dict:
    lo, hi = share_interval(k, n)
    return {"share": float(k / n) if n else float("nan"), "n": int(n), "interval": [float(lo), float(hi)]}


def temporal_consistency(groups: RunGroups) -> dict:
    """P(next draw unanimous | this one unanimous) and its splits (see the module docstring)."""
    order, same = sorted_draws(groups)
    S, K = groups.successes[order], groups.K
    ap, af = S == K, S == 0
    un = ap | af
    prev, nxt = slice(0, -1), slice(1, None)

    def cond(a, b):
        m = same & a[prev]
        return _rate(int(np.sum(b[nxt][m])), int(np.sum(m)))

    return {"pairs": int(same.sum()),
            "unanimous_given_unanimous": cond(un, un),
            "all_pass_given_all_pass": cond(ap, ap),
            "all_fail_given_all_fail": cond(af, af),
            "unanimous_given_mixed": cond(~un, un)}


def _streak_before(u: np.ndarray, same: np.ndarray) -> np.ndarray:
    """For sorted draws: how many draws in a row of the same prompt just before each one were unanimous."""
    idx = np.arange(len(u))
    start = np.concatenate([[True], ~same])
    brk = np.where(~u, idx, -1)
    brk = np.where(start & u, idx - 1, brk)
    streak_incl = idx - np.maximum.accumulate(brk)
    before = np.zeros(len(u), np.int64)
    before[1:] = np.where(same, streak_incl[:-1], 0)
    return before


def skip_backtest(groups: RunGroups, histories=SKIP_HISTORIES) -> list[dict]:
    """For each n: draws skipped, rollouts saved (and their share), mixed groups wrongly skipped
    (and their share of all mixed groups)."""
    order, same = sorted_draws(groups)
    S, K = groups.successes[order], groups.K
    u = (S == 0) | (S == K)
    before = _streak_before(u, same)
    n_mixed = int(np.sum(~u))
    rows = []
    for n in histories:
        skip = before >= n
        wrong = int(np.sum(skip & ~u))
        rows.append({"after_unanimous_draws": int(n), "skipped_groups": int(skip.sum()),
                     "rollouts_saved": int(skip.sum()) * K, "rollouts_saved_share": float(skip.mean()),
                     "mixed_wrongly_skipped": wrong,
                     "mixed_wrongly_skipped_share": wrong / n_mixed if n_mixed else float("nan"),
                     "unanimous_skipped_share": float(np.sum(skip & u) / max(np.sum(u), 1))})
    return rows


def _useful_table(p: np.ndarray, k_max: int) -> np.ndarray:
    """P(useful | p_x, k) = 1 - p^k - (1 - p)^k for k = 1..k_max by running products (a few times faster than
    :func:`~grpo_lab.sims.outcomes.p_useful`'s logarithms; equal to it within 1e-15 absolute)."""
    a = np.cumprod(np.broadcast_to(p[:, None], (p.size, k_max)), axis=1)
    b = np.cumprod(np.broadcast_to(1.0 - p[:, None], (p.size, k_max)), axis=1)
    return np.clip(1.0 - a - b, 0.0, 1.0)


def allocate(pass_rates, K: int, k_max: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(K_x per prompt, P(useful | p_x, k) for k = 1..k_max as an (N, k_max) array, k_max): the greedy
    allocation of the budget N K described in the module docstring."""
    p = np.asarray(pass_rates, float)
    N = p.size
    k_max = int(k_max or min(ALLOC_K_FACTOR * K, ALLOC_K_MAX))
    useful = _useful_table(p, k_max)  # (N, k_max): P(useful | p_x, k)
    gains = np.diff(np.concatenate([np.zeros((N, 1)), useful], axis=1), axis=1)
    gains[:, 0] = gains[:, 1] = useful[:, 1] / 2  # the first two rollouts count together
    budget = N * K
    flat = gains.ravel()
    top = np.argpartition(-flat, budget - 1)[:budget] if budget < flat.size else np.arange(flat.size)
    kx = np.bincount(top // k_max, minlength=N)
    return np.where(kx == 1, 0, kx), useful, k_max  # a lone rollout is never useful: give it back


def allocation(pass_rates, K: int, k_max: int | None = None) -> dict:
    """Budgeted allocation vs uniform K for per-prompt pass rates (see the module docstring).

    Returns ``uniform_useful_per_1000``, ``allocated_useful_per_1000``, ``gain`` (their ratio),
    ``budget``, ``rollouts_used``, ``prompts``, ``prompts_skipped`` (given 0 rollouts),
    ``k_max`` and ``k_histogram`` ({K_x: prompts}).
    """
    p = np.asarray(pass_rates, float)
    N = p.size
    kx, useful, k_max = allocate(p, K, k_max)
    budget = N * K
    got = np.where(kx > 0, useful[np.arange(N), np.maximum(kx, 1) - 1], 0.0)
    uniform = p_useful(p, K)
    used = int(kx.sum())
    hist = np.bincount(kx, minlength=k_max + 1)
    return {
        "prompts": int(N), "budget": int(budget), "rollouts_used": used, "k_max": k_max,
        "uniform_useful_per_1000": float(PER_ROLLOUTS * uniform.sum() / budget),
        "allocated_useful_per_1000": float(PER_ROLLOUTS * got.sum() / used) if used else float("nan"),
        "uniform_useful_groups": float(uniform.sum()), "allocated_useful_groups": float(got.sum()),
        "prompts_skipped": int(np.sum(kx == 0)),
        "k_histogram": {int(k): int(c) for k, c in enumerate(hist) if c},
    }


def allocation_from_trend(trend: dict) -> dict:
    """:func:`allocation` at the pass rates the trend fit gives each seen prompt at the run's last step."""
    p = expit(trend["alpha"][trend["seen"]] + trend["beta"] * 1.0)
    out = allocation(p, trend["K"])
    out["pass_rates_from"] = f"trend fit at step {trend['s1']}"
    return out
