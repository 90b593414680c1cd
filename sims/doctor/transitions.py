r"""Per-prompt transitions between all-fail, mixed and all-pass, from one visit of a prompt to its next.

Each group is a *visit* of its prompt, classed by its success count S out of K: all-fail (S = 0), mixed
(0 < S < K), all-pass (S = K). A prompt's visits are ordered by (step, record row) (:func:`.skip.sorted_draws`);
each consecutive pair is one transition. Reported:

* the 3 x 3 **transition matrix**: counts ``n_ij`` and row shares ``P_ij = n_ij / n_i.`` (from state i to
  state j at the next visit), with prompt-level standard errors: visits of one prompt are correlated (its
  pass rate), so a prompt, not a transition, is the independent unit. ``se`` is the cluster-robust
  (sandwich) standard error of the ratio over prompts, ``C / (C - 1) sum_x (n_ijx - P_ij n_ix)^2 / n_i^2``,
  what a prompt-level bootstrap estimates (asymptotically equal; no resampling, so 1M groups cost a second).
  The 95% interval is the Jeffreys interval at the effective sample size ``P (1 - P) / se^2`` (the design
  effect), which keeps rare transitions covered (a percentile bootstrap gave 91% for 95% on a simulated
  chain with 2-3% cells; this interval 95-97%, see tests/test_doctor_transitions.py).
* **recovery**: P(next visit not all-fail | all-fail now), and the share of prompts ever all-fail that
  were later mixed or all-pass.
* **rules** (what a skip or retirement rule would have dropped, on the run's own visits): for each N in
  :data:`RULE_N`, *skip after N all-fail* marks a prompt whose visits hold N all-fail in a row;
  *retire after N all-pass* the same with all-pass. Among the marked prompts visited again after the
  streak, ``lost_share`` is the share whose later visits include a mixed group (a group that would have
  taught, lost to the rule: the forgetting / lost-learning risk; ``lost_next_visit`` counts only the visit
  right after the streak), with its Jeffreys 95% interval (one
  prompt, one trial: the prompts are independent). A prompt never visited after its streak cannot say
  and is not counted (``censored``), which matters in a run that already retired prompts.

Not available (``{"available": False, "reason"}``) when fewer than :data:`MIN_TRANSITIONS` transitions
exist (prompts must be visited at least twice).
"""

from __future__ import annotations


import numpy as np

from .fit import share_interval
from .groups import RunGroups
from .skip import sorted_draws

__all__ = ["STATES", "RULE_N", "MIN_TRANSITIONS", "visit_states", "transitions", "simulate_chain"]

STATES = ("all_fail", "mixed", "all_pass")
RULE_N = (1, 2, 3)  #: streak lengths of the skip and retire rules
MIN_TRANSITIONS = 30  #: fewer transitions than this: not available


def visit_states(groups: RunGroups) -> np.ndarray:
    """0 all-fail, 1 mixed, 2 all-pass per group."""
    return np.where(groups.successes == 0, 0, np.where(groups.successes == groups.K, 2, 1)).astype(np.int64)


def _per_prompt_counts(pid: np.ndarray, a: np.ndarray, b: np.ndarray, n_prompts: int) -> np.ndarray:
    """(n_prompts, 9) transition counts per prompt (row = 3 a + b)."""
    return np.bincount(pid * 9 + a * 3 + b, minlength=n_prompts * 9).reshape(n_prompts, 9).astype(float)


def _cluster_se(per: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Prompt-level (cluster-robust) standard error of each share P_ij = sum_x n_ijx / sum_x n_ix, by
    linearisation: Var = C / (C - 1) sum_x (n_ijx - P_ij n_ix)^2 / n_i^2 over the C prompts (the sandwich
    variance of a ratio, what a prompt-level bootstrap estimates, without resampling)."""
    c = per.reshape(-1, 3, 3)
    n_ix = c.sum(axis=2)  # (prompts, 3)
    n_i = n_ix.sum(axis=0)
    resid = c - np.nan_to_num(P)[None, :, :] * n_ix[:, :, None]
    C = len(per)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (C / max(C - 1, 1)) * np.sum(resid**2, axis=0) / (n_i[:, None] ** 2)
    return np.where(n_i[:, None] > 0, np.sqrt(var), np.nan)


def _rows(counts9: np.ndarray) -> np.ndarray:
    c = counts9.reshape(-1, 3, 3)
    tot = c.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, c / tot, np.nan)


def _first_at(mask: np.ndarray, pid: np.ndarray, n_prompts: int, big: int) -> np.ndarray:
    """Per prompt, the first sorted index where ``mask`` holds (``big`` where never)."""
    first = np.full(n_prompts, big, np.int64)
    idx = np.flatnonzero(mask)
    np.minimum.at(first, pid[idx], idx)
    return first


def _last_at(mask: np.ndarray, pid: np.ndarray, n_prompts: int) -> np.ndarray:
    """Per prompt, the last sorted index where ``mask`` holds (-1 where never)."""
    last = np.full(n_prompts, -1, np.int64)
    idx = np.flatnonzero(mask)
    np.maximum.at(last, pid[idx], idx)
    return last


def _streak_rule(state: np.ndarray, pid: np.ndarray, n_prompts: int, n: int, target: int) -> tuple[int, int, int, int]:
    """(prompts with n visits of ``target`` in a row, of those visited after the streak, of those later mixed,
    of those mixed at the very next visit); ``state`` and ``pid`` sorted by prompt, then visit."""
    m = len(state)
    hit = state == target
    prompt_start = np.r_[True, pid[1:] != pid[:-1]]
    starts = hit & (prompt_start | ~np.r_[False, hit[:-1]])
    run_start = np.maximum.accumulate(np.where(starts, np.arange(m), 0))
    runlen = np.where(hit, np.arange(m) - run_start + 1, 0)
    first = _first_at(hit & (runlen >= n), pid, n_prompts, m)
    last_visit = _last_at(np.ones(m, bool), pid, n_prompts)
    last_mixed = _last_at(state == 1, pid, n_prompts)
    marked = first < m
    later = marked & (last_visit > first)
    nxt = np.zeros(n_prompts, bool)
    nxt[later] = state[first[later] + 1] == 1
    return int(marked.sum()), int(later.sum()), int((later & (last_mixed > first)).sum()), int(nxt.sum())


def _interval(P: np.ndarray, se: np.ndarray, n_row: np.ndarray):
    """Jeffreys 95% interval of each share at its effective sample size n_eff = P (1 - P) / se^2 (the
    design effect; at most the row's count, the row's count where the share is 0 or 1)."""
    n_row = np.broadcast_to(n_row, P.shape).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where((se > 0) & (P > 0) & (P < 1), P * (1 - P) / se**2, n_row)
    n_eff = np.clip(np.nan_to_num(n_eff, nan=0.0), np.minimum(n_row, 1.0), n_row)
    return share_interval(np.nan_to_num(P) * n_eff, n_eff)


def _share(k, n) -> dict:
    lo, hi = share_interval(k, n)
    return {"share": float(k / n) if n else None, "k": int(k), "n": int(n), "interval": [float(lo), float(hi)]}


def transitions(groups: RunGroups) -> dict:
    """The transition matrix, recovery and rule risks (see the module docstring)."""
    order, same = sorted_draws(groups)
    state = visit_states(groups)[order]
    pid = groups.prompt_id[order]
    a, b, p = state[:-1][same], state[1:][same], pid[:-1][same]
    if a.size < MIN_TRANSITIONS:
        return {"available": False, "reason": f"not available: needs prompts visited at least twice "
                                              f"({MIN_TRANSITIONS} transitions or more); the record has {a.size}"}
    per = _per_prompt_counts(p, a, b, groups.n_prompts)
    used = per.sum(axis=1) > 0
    per = per[used]
    total = per.sum(axis=0)
    P = _rows(total)[0]
    se = _cluster_se(per, P)
    rec_se = np.array([se[0, 0]])  # the share leaving all-fail is 1 - P[0, 0]
    lo, hi = _interval(P, se, total.reshape(3, 3).sum(axis=1, keepdims=True))
    m = len(state)
    first_fail = _first_at(state == 0, pid, groups.n_prompts, m)
    ever_fail = first_fail < m
    recovered = ever_fail & (_last_at(state != 0, pid, groups.n_prompts) > first_fail)
    rec_share = float((total[1] + total[2]) / total[:3].sum()) if total[:3].sum() else float("nan")
    rec_lo, rec_hi = _interval(np.array([rec_share]), rec_se, np.array([total[:3].sum()]))
    rules = []
    for n in RULE_N:
        row = {"n": n}
        for name, target in (("skip_after_all_fail", 0), ("retire_after_all_pass", 2)):
            marked, later, mixed_after, mixed_next = _streak_rule(state, pid, groups.n_prompts, n, target)
            row[name] = {"marked_prompts": marked, "visited_after": later, "censored": marked - later,
                         "lost": _share(mixed_after, later), "lost_next_visit": _share(mixed_next, later)}
        rules.append(row)
    rec_k = total[1] + total[2]
    return {"available": True, "states": list(STATES), "transitions": int(a.size), "prompts": int(used.sum()),
            "counts": total.reshape(3, 3), "matrix": P, "interval_lo": lo.reshape(3, 3),
            "interval_hi": hi.reshape(3, 3), "se": se,
            "recovery": {"next_visit": {"share": float(rec_k / total[:3].sum()) if total[:3].sum() else None,
                                        "interval": [float(rec_lo[0]), float(rec_hi[0])]},
                         "ever": _share(int(recovered.sum()), int(ever_fail.sum()))},
            "rules": rules}


def simulate_chain(P, n_prompts: int, visits: int, start=None, seed: int = 0) -> np.ndarray:
    """States (n_prompts, visits) of independent prompts following the Markov chain P (for the tests)."""
    P = np.asarray(P, float)
    rng = np.random.default_rng(seed)
    start = np.full(3, 1 / 3) if start is None else np.asarray(start, float)
    x = np.empty((n_prompts, visits), np.int64)
    x[:, 0] = rng.choice(3, size=n_prompts, p=start)
    cum = np.cumsum(P, axis=1)
    for v in range(1, visits):
        r = rng.random(n_prompts)
        x[:, v] = np.minimum((r[:, None] > cum[x[:, v - 1]]).sum(axis=1), 2)
    return x
