r"""View model of a recorded run, step by step: what the lab's replay tab shows.

Everything here is computed from a :class:`sims.record.RunRecord` alone, so a
run trained by this project and one ingested from TRL, verl or JSONL replay
alike. Per optimizer step s, over the groups recorded at s:

* ``effective_group_rate`` = share of groups with a reward spread above the
  record's tolerance (1 - TRL's ``frac_reward_zero_std``), and its rolling mean;
* ``predicted_d_real`` = mean over those groups' prompts of D(p_x, G), with p_x
  each prompt's pass rate measured at the nearest evaluation at or before s
  (the first evaluation for earlier steps), and ``predicted_d_iid`` = D(mean p_x, G):
  1 - these are the effective rates the two predictions expect;
* ``all_pass_share`` / ``all_fail_share`` (both tails), ``reward_mean``;
* rollouts generated and rollouts in groups with a gradient, and their running totals.

:func:`grid_states` gives each prompt's outcome at each step (-1 when the
prompt was not sampled at that step), the matrix the replay grid scrubs through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .outcomes import p_unanimous
from .advantages import THRESHOLD
from .record import RunRecord, group_outcomes
from .scenario import ALL_FAIL, ALL_PASS, MIXED, outcome_histogram

__all__ = ["NOT_SAMPLED", "GroupFacts", "group_facts", "step_series", "grid_states", "eval_index", "rolling_mean", "HISTOGRAM_STATES",
           "step_histograms", "scalar_step_series", "grid_successes", "group_size"]

NOT_SAMPLED = -1  #: grid state of a prompt with no group at a step


def rolling_mean(x, window: int) -> np.ndarray:
    """Trailing mean over the last ``window`` finite values (fewer at the start); NaNs are skipped."""
    x = np.asarray(x, dtype=float)
    if window < 1:
        raise InputError("rolling window must be >= 1")
    ok = np.isfinite(x)
    csum = np.concatenate([[0.0], np.cumsum(np.where(ok, x, 0.0))])
    ccnt = np.concatenate([[0], np.cumsum(ok)])
    idx = np.arange(len(x)) + 1
    lo = np.maximum(idx - window, 0)
    cnt = ccnt[idx] - ccnt[lo]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, (csum[idx] - csum[lo]) / cnt, np.nan)


def group_size(record: RunRecord) -> int:
    """K of a record: its ``num_generations``, else the widest recorded group (1 with no groups)."""
    G = record.meta.get("num_generations")
    if G:
        return int(G)
    r = record.groups["rewards"]
    return int(np.max(np.sum(~np.isnan(r), axis=1))) if len(r) else 1


def eval_index(record: RunRecord, steps) -> np.ndarray:
    """Index of the evaluation each step uses: the latest at or before it, else the first; -1 without evals."""
    ev = np.asarray(record.evals.get("step", np.zeros(0, int)))
    steps = np.asarray(steps)
    if ev.size == 0:
        return np.full(steps.shape, -1)
    order = np.argsort(ev, kind="stable")
    pos = np.searchsorted(ev[order], steps, side="right") - 1
    return order[np.maximum(pos, 0)]


@dataclass(frozen=True)
class GroupFacts:
    """What every function here needs from a record's groups, computed once (:func:`group_facts`).

    ``steps`` the distinct steps with groups (sorted); ``row`` each group's index into ``steps``;
    ``degenerate`` / ``all_pass`` / ``all_fail`` :func:`sims.record.group_outcomes` at the record's
    tolerance; ``code`` the group's grid state (MIXED / ALL_PASS / ALL_FAIL, int8); ``widths`` its
    non-NaN rewards; ``passes`` its rewards above :data:`sims.advantages.THRESHOLD`; ``reward_sum``
    the sum of its non-NaN rewards.
    """

    steps: np.ndarray
    row: np.ndarray
    degenerate: np.ndarray
    all_pass: np.ndarray
    all_fail: np.ndarray
    code: np.ndarray
    widths: np.ndarray
    passes: np.ndarray
    reward_sum: np.ndarray


def group_facts(record: RunRecord) -> GroupFacts:
    """The :class:`GroupFacts` of ``record``: one pass over its (groups, G) rewards, shared by
    :func:`step_series`, :func:`grid_states`, :func:`grid_successes` and :func:`step_histograms`."""
    g = record.groups
    step = np.asarray(g["step"])
    steps = np.unique(step)
    r = np.asarray(g["rewards"], dtype=float)
    degenerate, all_pass, all_fail = group_outcomes(r, record.reward_tolerance)
    valid = ~np.isnan(r)
    code = np.where(~degenerate, MIXED, np.where(all_pass, ALL_PASS, ALL_FAIL)).astype(np.int8)
    return GroupFacts(steps=steps, row=np.searchsorted(steps, step), degenerate=degenerate, all_pass=all_pass,
                      all_fail=all_fail, code=code, widths=valid.sum(axis=1), passes=np.sum(r > THRESHOLD, axis=1),
                      reward_sum=np.nan_to_num(r, nan=0.0).sum(axis=1))


def step_series(record: RunRecord, window: int = 10, facts: GroupFacts | None = None) -> dict[str, np.ndarray]:
    """Per-step series for the replay plots (see the module docstring). All arrays share ``step``'s length.
    ``facts``: the record's :func:`group_facts`, if already computed."""
    f = facts or group_facts(record)
    steps, inv, degenerate, all_pass, all_fail, widths = f.steps, f.row, f.degenerate, f.all_pass, f.all_fail, f.widths
    n_groups = np.bincount(inv, minlength=len(steps)).astype(float)

    def per_step(values):
        return np.bincount(inv, weights=np.asarray(values, dtype=float), minlength=len(steps))

    with np.errstate(invalid="ignore", divide="ignore"):
        eff = 1.0 - per_step(degenerate) / n_groups
        rewards = f.reward_sum
        out = {
            "step": steps,
            "groups": n_groups,
            "effective_group_rate": eff,
            "effective_group_rate_rolling": rolling_mean(eff, window),
            "all_pass_share": per_step(all_pass) / n_groups,
            "all_fail_share": per_step(all_fail) / n_groups,
            "reward_mean": per_step(rewards) / per_step(widths),
            "rollouts_generated": per_step(widths),
            "rollouts_useful": per_step(np.where(degenerate, 0, widths)),
        }
    out["rollouts_generated_cum"] = np.cumsum(out["rollouts_generated"])
    out["rollouts_useful_cum"] = np.cumsum(out["rollouts_useful"])
    out["predicted_d_real"], out["predicted_d_iid"] = _predictions(record, steps, inv)
    ev_idx = eval_index(record, steps)
    rates = record.evals.get("pass_rate")
    out["eval_pass_rate"] = (np.array([np.nanmean(rates[i]) for i in ev_idx]) if rates is not None and len(ev_idx)
                             and ev_idx.min() >= 0 else np.full(len(steps), np.nan))
    return out


def _predictions(record: RunRecord, steps: np.ndarray, inv: np.ndarray):
    rates = record.evals.get("pass_rate")
    nan = np.full(len(steps), np.nan)
    if rates is None or len(rates) == 0:
        return nan, nan.copy()
    G = group_size(record)
    ev_idx = eval_index(record, steps)
    pid = np.asarray(record.groups["prompt_id"])
    p = rates[ev_idx[inv], pid]  # each group's prompt, measured at its step's evaluation
    ok = np.isfinite(p)
    d = np.where(ok, p_unanimous(np.where(ok, p, 0.0), G), 0.0)
    cnt = np.bincount(inv, weights=ok, minlength=len(steps))
    with np.errstate(invalid="ignore", divide="ignore"):
        d_real = np.bincount(inv, weights=d, minlength=len(steps)) / cnt
        mean_p = np.bincount(inv, weights=np.where(ok, p, 0.0), minlength=len(steps)) / cnt
    d_iid = np.where(cnt > 0, p_unanimous(np.nan_to_num(mean_p, nan=0.0), G), np.nan)
    return d_real, d_iid


def grid_states(record: RunRecord, facts: GroupFacts | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(steps, states): ``states[i, x]`` is prompt x's outcome at ``steps[i]`` (MIXED / ALL_PASS / ALL_FAIL),
    or NOT_SAMPLED. Where a prompt has several groups in one step the last recorded one is shown.
    ``facts``: the record's :func:`group_facts`, if already computed."""
    g = record.groups
    f = facts or group_facts(record)
    steps, code = f.steps, f.code
    states = np.full((len(steps), record.n_prompts), NOT_SAMPLED, dtype=np.int8)
    pid = np.asarray(g["prompt_id"])
    if len(pid) and (pid.min() < 0 or pid.max() >= record.n_prompts):
        raise InputError("run record: prompt_id outside [0, n_prompts)")
    states[f.row, pid] = code  # later rows overwrite earlier ones
    return steps, states



def grid_successes(record: RunRecord, facts: GroupFacts | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(k, K): per step and prompt (the rows and columns of :func:`grid_states`), how many of the group's
    rollouts passed (reward above :data:`sims.advantages.THRESHOLD`) and how many it had (non-NaN rewards).

    Both are int16 arrays of shape (steps, n_prompts); 0 and 0 where the prompt was not sampled; where a
    prompt has several groups in one step the last recorded one counts, as in :func:`grid_states`.
    ``facts``: the record's :func:`group_facts`, if already computed.
    """
    f = facts or group_facts(record)
    k = np.zeros((len(f.steps), record.n_prompts), np.int16)
    K = np.zeros_like(k)
    if len(f.steps):
        at = f.row, np.asarray(record.groups["prompt_id"])
        k[at] = f.passes  # NaN > THRESHOLD is False
        K[at] = f.widths
    return k, K

# --- additions for the lab's replay tab (lab/replay/) -------------------------------------------

#: the last axis of :func:`step_histograms`: the grid states, then "not sampled"
HISTOGRAM_STATES = (MIXED, ALL_PASS, ALL_FAIL, NOT_SAMPLED)


def step_histograms(record: RunRecord, bins: int = 10, facts: GroupFacts | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Pass-rate histogram at every step, split by each prompt's group state at that step.

    For step ``steps[i]`` (as in :func:`grid_states`) every prompt x with a finite pass rate
    p_x at the step's evaluation (:func:`eval_index`) falls in bin ``min(floor(bins p_x), bins - 1)``
    of ``edges = linspace(0, 1, bins + 1)`` (the last bin is closed, as in ``numpy.histogram``).

    Returns
    -------
    edges : (bins + 1,) float array
    counts : (steps, bins, 4) int array; ``counts[i, b, j]`` counts prompts in bin b whose state at
        ``steps[i]`` is ``HISTOGRAM_STATES[j]``. All zero when the record has no evaluations.
    ``facts``: the record's :func:`group_facts`, if already computed.
    """
    if not isinstance(bins, (int, np.integer)) or bins < 1:
        raise InputError("bins must be a positive integer")
    f = facts or group_facts(record)
    edges = np.linspace(0.0, 1.0, bins + 1)
    counts = np.zeros((len(f.steps), bins, len(HISTOGRAM_STATES)), dtype=np.int64)
    rates = record.evals.get("pass_rate")
    if rates is None or len(rates) == 0 or len(f.steps) == 0:
        return edges, counts  # without evaluations no grid of states is built
    steps, states = grid_states(record, f)
    p = np.asarray(rates, dtype=float)[eval_index(record, steps)]  # (steps, prompts)
    cat = np.select([states == c for c in HISTOGRAM_STATES], np.arange(len(HISTOGRAM_STATES)))
    counts = outcome_histogram(p, cat, bins, len(HISTOGRAM_STATES))
    return edges, counts


def scalar_step_series(record: RunRecord, window: int = 10) -> dict[str, np.ndarray]:
    """What :func:`step_series` can say from a record's per-step scalars alone (no groups recorded).

    ``effective_group_rate`` = 1 - ``frac_reward_zero_std`` (falling back to the ingested scalar
    ``scalar/frac_reward_zero_std``, TRL's own log), ``all_pass_share`` / ``all_fail_share`` from
    ``frac_all_pass`` / ``frac_all_fail``, ``reward_mean`` from ``reward_mean`` (else
    ``scalar/reward``), ``rollouts_generated`` from the step table; every quantity that needs
    the groups or evaluations (predictions, useful rollouts, eval pass rate) is NaN.
    Same keys as :func:`step_series`.
    """
    st = record.steps
    steps = np.asarray(st.get("step", np.zeros(0, np.int64)))
    n = len(steps)
    nan = np.full(n, np.nan)

    def col(*names):
        out = nan.copy()
        for name in names:
            v = st.get(name)
            if v is not None:
                v = np.asarray(v, dtype=float)
                out = np.where(np.isfinite(out), out, v)
        return out

    eff = 1.0 - col("frac_reward_zero_std", "scalar/frac_reward_zero_std")
    generated = col("rollouts_generated")
    return {
        "step": steps, "groups": nan.copy(),
        "effective_group_rate": eff, "effective_group_rate_rolling": rolling_mean(eff, window),
        "all_pass_share": col("frac_all_pass"), "all_fail_share": col("frac_all_fail"),
        "reward_mean": col("reward_mean", "scalar/reward"),
        "rollouts_generated": generated, "rollouts_useful": nan.copy(),
        "rollouts_generated_cum": np.where(np.isfinite(generated), np.nancumsum(generated), np.nan),
        "rollouts_useful_cum": nan.copy(), "predicted_d_real": nan.copy(), "predicted_d_iid": nan.copy(),
        "eval_pass_rate": nan.copy(),
    }
