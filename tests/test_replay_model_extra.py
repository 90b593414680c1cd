"""sims.replay additions for the replay tab (step_histograms, scalar_step_series) and lab.replay.model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grpo_lab.replay.model import NOT_SAMPLED_CODE, RunView, rows_for, union_steps
from grpo_lab.testing.synthetic_record import synthetic_record
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import RunRecord
from grpo_lab.sims.replay import (HISTOGRAM_STATES, NOT_SAMPLED, grid_states, scalar_step_series, step_histograms,
                         step_series)

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def test_step_histograms_match_a_loop_over_prompts():
    rec = synthetic_record(n_prompts=30, steps=25, eval_every=7, seed=3)
    edges, counts = step_histograms(rec, bins=5)
    steps, states = grid_states(rec)
    np.testing.assert_allclose(edges, [0, 0.2, 0.4, 0.6, 0.8, 1.0])
    for i, s in enumerate(steps):
        e = max((j for j, es in enumerate(rec.evals["step"]) if es <= s), default=0)
        want = np.zeros((5, 4), int)
        for x in range(rec.n_prompts):
            p = rec.evals["pass_rate"][e, x]
            b = 4 if p == 1.0 else int(p * 5)
            want[b, HISTOGRAM_STATES.index(states[i, x])] += 1
        np.testing.assert_array_equal(counts[i], want)
    assert counts.sum(axis=(1, 2)).tolist() == [rec.n_prompts] * len(steps)


def test_step_histograms_without_evals_are_zero_and_bins_checked():
    rec = synthetic_record(steps=5)
    rec.evals = {"step": np.zeros(0, np.int64), "pass_rate": np.zeros((0, rec.n_prompts))}
    _, counts = step_histograms(rec, 4)
    assert counts.shape == (5, 4, 4) and counts.sum() == 0
    with pytest.raises(InputError):
        step_histograms(rec, 0)


def test_scalar_series_of_a_trl_scalars_only_run_uses_trls_own_log():
    rec = ingest(FIXTURES / "trl_run" / "trainer_state.json", "trl")
    assert len(rec.groups["step"]) == 0
    s = scalar_step_series(rec, window=3)
    np.testing.assert_array_equal(s["step"], rec.steps["step"])
    np.testing.assert_allclose(s["effective_group_rate"], 1 - rec.steps["scalar/frac_reward_zero_std"])
    np.testing.assert_allclose(s["reward_mean"], rec.steps["scalar/reward"])
    assert np.isnan(s["predicted_d_real"]).all() and np.isnan(s["rollouts_useful_cum"]).all()
    assert set(s) == set(step_series(synthetic_record(steps=3)))


def test_run_view_codes_rows_and_summary():
    a, b = synthetic_record(steps=10, seed=0), synthetic_record(steps=14, seed=1)
    b.groups["step"] = b.groups["step"] + 3  # b starts later
    va, vb = RunView("a", a), RunView("b", b)
    _, states = grid_states(a)
    np.testing.assert_array_equal(va.codes, np.where(states == NOT_SAMPLED, NOT_SAMPLED_CODE, states))
    axis = union_steps(va, vb)
    np.testing.assert_array_equal(axis, np.arange(0, 17))
    rb = rows_for(vb, axis)
    assert rb[:3].tolist() == [-1, -1, -1] and rb[3] == 0 and rb[-1] == 13
    ra = rows_for(va, axis)
    assert ra[-1] == 9  # a holds its last step while b goes on
    s = step_series(a)
    assert va.summary(4)["eff"] == s["effective_group_rate"][4]
    assert va.summary(4)["pred_real"] == 1 - s["predicted_d_real"][4]
    assert all(np.isnan(v) for v in va.summary(-1).values())


def test_run_view_rejects_prompt_ids_outside_the_record():
    rec = synthetic_record(steps=3)
    bad = RunRecord(meta={**rec.meta, "n_prompts": 5}, groups=rec.groups, steps=rec.steps,
                    evals={"step": np.zeros(0, np.int64), "pass_rate": np.zeros((0, 5))})
    with pytest.raises(InputError):
        RunView("bad", bad)


def test_grid_successes_and_facts_match_a_loop_over_groups():
    """k and K per (step, prompt) from the shared group facts equal a loop over the groups (NaN padding, last
    group of a prompt in a step wins), and each figure is the same with the facts computed once or not."""
    from grpo_lab.sims.replay import grid_successes, group_facts

    rec = synthetic_record(n_prompts=12, steps=6, G=5, prompts_per_step=12, seed=4)
    r = rec.groups["rewards"].copy()
    r[::3, 4] = np.nan  # groups of 4 beside groups of 5
    rec.groups["rewards"] = r
    rec.groups["prompt_id"][1] = rec.groups["prompt_id"][0]  # a prompt twice in one step
    facts = group_facts(rec)
    k, K = grid_successes(rec, facts)
    steps = sorted(set(rec.groups["step"].tolist()))
    want_k, want_K = np.zeros_like(k), np.zeros_like(K)
    for s, pid, row in zip(rec.groups["step"], rec.groups["prompt_id"], r):
        i = steps.index(int(s))
        want_k[i, pid] = sum(1 for v in row if v == v and v > 0.5)
        want_K[i, pid] = sum(1 for v in row if v == v)
    np.testing.assert_array_equal(k, want_k)
    np.testing.assert_array_equal(K, want_K)
    for a, b in zip(grid_successes(rec), (k, K)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(grid_states(rec)[1], grid_states(rec, facts)[1])
    np.testing.assert_array_equal(step_histograms(rec, 4)[1], step_histograms(rec, 4, facts)[1])
    one, shared = step_series(rec), step_series(rec, 10, facts)
    for key in one:
        np.testing.assert_array_equal(one[key], shared[key])
