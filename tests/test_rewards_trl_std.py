"""The kind of a TRL run's rewards from what TRL logs: its per-function means and its ``reward_std``, whichever TRL
wrote it (the batch's std from 0e0cb5f on, the groups' mean std before: :mod:`grpo_lab.sims.doctor.rewards`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.doctor.rewards import classify_scalars
from grpo_lab.sims.ingest.trackers import read_scalars

MATRIX = Path(__file__).parent / "fixtures" / "ingest" / "trl_matrix"
CASES = sorted(p.name for p in MATRIX.iterdir() if (p / "truth.json").exists())


def _summed(truth: dict) -> np.ndarray:
    """Every rollout's trained reward from what the reward functions returned (truth.json): the weighted sum TRL
    takes, None as NaN and left out of the sum (TRL's nansum)."""
    w = dict(zip(truth["reward_funcs"], truth["reward_weights"]))
    out = []
    for gen in truth["generations"]:
        r = np.array([[np.nan if x is None else x for x in gen["rewards"][f]] for f in w], float)
        out.append(np.nansum(r * np.array(list(w.values()))[:, None], axis=0))
    return np.concatenate(out)


@pytest.mark.parametrize("name", CASES)
def test_a_trl_run_of_several_reward_functions_is_named_not_binary_from_its_own_trainer_state(name):
    """Each matrix run was written by TRL's GRPOTrainer with two reward functions; the rollouts' summed rewards
    (recorded inside the functions) take values other than 0 and 1, and the doctor, reading only trainer_state.json,
    names the rewards not binary with the functions as its evidence."""
    truth = json.loads((MATRIX / name / "truth.json").read_text())
    assert len(truth["reward_funcs"]) == 2
    summed = _summed(truth)
    assert np.any(~np.isin(summed, [0.0, 1.0]))  # the truth: not binary
    state = next((MATRIX / name / "run").rglob("trainer_state.json"))
    rec = read_scalars(state, num_generations=truth["num_generations"])
    got = classify_scalars(rec.steps, truth["num_generations"], rec.meta.get("source"))
    assert got["rewards"] == "not binary"
    assert any(f"2 reward functions are logged ({', '.join(sorted(truth['reward_funcs']))})" in w
               for w in got["rewards_why"]), got


def _old_trl_rows(rng, K: int, p_pop, n_rows: int, groups: int, batches: int, draw):
    """Rows as TRL 0.14-0.27 logged them: per batch ``std_grouped_rewards.mean()`` (each group's Bessel std, as
    torch.std), the batch's mean reward and the share of groups of zero std, each averaged over ``batches`` batches
    (logging_steps)."""
    std, mean, zero = [], [], []
    for _ in range(n_rows):
        s = m = z = 0.0
        for _ in range(batches):
            r = draw(rng, p_pop(rng, groups), K)  # (groups, K)
            g = r.std(axis=1, ddof=1)
            s, m, z = s + g.mean(), m + r.mean(), z + np.mean(np.isclose(g, 0.0))
        std.append(s / batches), mean.append(m / batches), zero.append(z / batches)
    return {"step": np.arange(1.0, n_rows + 1), "reward_mean": np.array(mean), "frac_reward_zero_std": np.array(zero),
            "scalar/reward_std": np.array(std), "groups_per_step": np.full(n_rows, float(groups))}


def _binary(rng, p, K):
    return (rng.random((p.size, K)) < p[:, None]).astype(float)


def _uniform(rng, p, K):
    return rng.random((p.size, K))


def _half_right(rng, p, K):
    """Every group exactly K / 2 right (in a random order): the largest std a group of 0/1 rewards can have."""
    return rng.permuted(np.tile((np.arange(K) < K // 2).astype(float), (p.size, 1)), axis=1)


def _spread(rng, n):
    return rng.uniform(0.2, 0.8, n)


def test_binary_pairs_logged_as_old_trl_logged_them_are_named_binary():
    """K = 2, 0/1 rewards: each mixed pair's std is 1/sqrt(2) and each tied pair's 0, so the groups' mean std is
    (1 - zero share) / sqrt(2) at every row, logging average and all: binary, with that evidence."""
    steps = _old_trl_rows(np.random.default_rng(7), 2, _spread, 40, 16, 2, _binary)
    np.testing.assert_allclose(steps["scalar/reward_std"], (1 - steps["frac_reward_zero_std"]) / np.sqrt(2))
    got = classify_scalars(steps, 2, {"trainer": "trl"})
    assert got["rewards"] == "binary" and "(1 - frac_reward_zero_std) / sqrt(2)" in got["rewards_why"][0], got


@pytest.mark.parametrize("K", [4, 8])
def test_the_groups_mean_std_of_binary_rewards_at_its_largest_is_not_named_not_binary_on_a_trl_log(K):
    """Every group K / 2 right: the groups' mean std sqrt(K / (4 (K - 1))) lies above the batch's bound
    sqrt(m (1 - m) N / (N - 1)) at N = groups x K, so a reader taking TRL's std for a batch's would call these 0/1
    rewards not binary (as it rightly does for a trainer whose std is the batch's); a TRL log is read at N = K."""
    steps = _old_trl_rows(np.random.default_rng(9), K, _spread, 40, 16, 1, _half_right)
    np.testing.assert_allclose(steps["scalar/reward_std"], np.sqrt(K / (4 * (K - 1))))
    assert classify_scalars(steps, K, {"trainer": "trl"})["rewards"] == "unknown"
    assert classify_scalars(steps, K, {"trainer": "verl"})["rewards"] == "not binary"


def test_continuous_rewards_at_k2_logged_as_old_trl_are_not_named_binary():
    """Rewards uniform on [0, 1] (mean within [0, 1]): no pair ties and |r1 - r2| / sqrt(2) averages 0.24, far
    from (1 - zero share) / sqrt(2): the std does not say binary (nor, within the bound, not binary)."""
    steps = _old_trl_rows(np.random.default_rng(8), 2, _spread, 40, 16, 2, _uniform)
    assert classify_scalars(steps, 2, {"trainer": "trl"})["rewards"] == "unknown"
