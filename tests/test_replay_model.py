"""sims.replay against a plain-Python recomputation over a synthetic record."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.outcomes import p_unanimous
from grpo_lab.sims.record import RunRecord
from grpo_lab.sims.replay import NOT_SAMPLED, eval_index, grid_states, rolling_mean, step_series
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED


def make_record(seed=0, n_prompts=30, steps=12, per_step=6, G=4, tol=0.0, continuous=False):
    rng = np.random.default_rng(seed)
    rows = []
    truth = rng.beta(0.7, 0.7, n_prompts)
    for s in range(steps):
        for pid in rng.choice(n_prompts, per_step, replace=False):
            r = rng.random(G) * 0.05 + (rng.random() < truth[pid]) if continuous else (rng.random(G) < truth[pid])
            rows.append((s, pid, r.astype(float)))
    ev_steps = np.array([0, 5, 10])
    rates = np.clip(truth[None, :] + rng.normal(0, 0.05, (3, n_prompts)), 0, 1)
    rates[1, 3] = np.nan  # a prompt not measured at one evaluation
    groups = {
        "step": np.array([r[0] for r in rows]), "prompt_id": np.array([r[1] for r in rows]),
        "rewards": np.array([r[2] for r in rows]), "advantages": np.full((len(rows), G), np.nan),
        "lengths": np.full((len(rows), G), -1), "kept": np.ones(len(rows), bool),
    }
    meta = {"n_prompts": n_prompts, "num_generations": G, "reward_tolerance": tol}
    return RunRecord(meta=meta, groups=groups, steps={}, evals={"step": ev_steps, "pass_rate": rates,
                                                                  "samples": np.array([8, 8, 8])})


@pytest.mark.parametrize("continuous,tol", [(False, 0.0), (True, 0.1)])
def test_step_series_against_loops(continuous, tol):
    rec = make_record(continuous=continuous, tol=tol)
    s = step_series(rec, window=3)
    G = 4
    for i, step in enumerate(s["step"]):
        rows = [j for j in range(len(rec.groups["step"])) if rec.groups["step"][j] == step]
        rs = [rec.groups["rewards"][j] for j in rows]
        deg = [r.max() - r.min() <= tol for r in rs]
        assert s["effective_group_rate"][i] == pytest.approx(1 - np.mean(deg))
        assert s["all_pass_share"][i] == pytest.approx(np.mean([d and r.mean() > 0.5 for d, r in zip(deg, rs)]))
        assert s["all_fail_share"][i] == pytest.approx(np.mean([d and r.mean() <= 0.5 for d, r in zip(deg, rs)]))
        assert s["rollouts_useful"][i] == sum(G for d in deg if not d)
        ev = 0 if step < 5 else (1 if step < 10 else 2)
        ps = [rec.evals["pass_rate"][ev][rec.groups["prompt_id"][j]] for j in rows]
        ps = [p for p in ps if np.isfinite(p)]
        assert s["predicted_d_real"][i] == pytest.approx(np.mean([p**G + (1 - p) ** G for p in ps]))
        assert s["predicted_d_iid"][i] == pytest.approx(float(p_unanimous(np.mean(ps), G)))
    assert s["rollouts_generated_cum"][-1] == len(rec.groups["step"]) * G
    assert s["effective_group_rate_rolling"][2] == pytest.approx(np.mean(s["effective_group_rate"][:3]))


def test_grid_states():
    rec = make_record()
    steps, states = grid_states(rec)
    assert states.shape == (len(steps), 30)
    for step, pid, r in zip(rec.groups["step"], rec.groups["prompt_id"], rec.groups["rewards"]):
        want = ALL_PASS if r.min() == r.max() == 1 else ALL_FAIL if r.max() == 0 else MIXED
        assert states[np.searchsorted(steps, step), pid] == want
    assert (states == NOT_SAMPLED).sum() == states.size - len(rec.groups["step"])


def test_eval_index_and_rolling_mean():
    rec = make_record()
    assert eval_index(rec, [0, 4, 5, 9, 10, 99]).tolist() == [0, 0, 1, 1, 2, 2]
    assert rolling_mean([1, np.nan, 3, 5], 2).tolist() == [1.0, 1.0, 3.0, 4.0]
