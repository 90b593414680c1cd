"""The core's estimators inside TRL: the advantages TRL trains on (what _compute_loss receives) equal
grpo_lab.sims.advantages on the rewards the reward functions returned."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_lab.testing.trl_tiny import make_trainer

from grpo_lab.sims.advantages import advantages as core_advantages
from grpo_lab.sims.errors import InputError
from grpo_lab.trl_recorder import fixed_reference_trainer, group_advantages

G = 4
WEIGHTS = [1.0, 0.5]


def _expected(truth, estimator):
    """Per generation batch: the core estimator per group on the weighted sum of returned rewards
    (None skipped; a rollout with every reward None is left out of its group and gets 0)."""
    out = []
    for i in range(0, len(truth), 2):
        (_, _, corr), (_, _, short) = truth[i], truth[i + 1]
        combined = []
        for c, s in zip(corr, short):
            terms = [w * v for w, v in zip(WEIGHTS, (c, s)) if v is not None]
            combined.append(sum(terms) if terms else math.nan)
        r = np.array(combined).reshape(-1, G)
        adv = np.zeros_like(r)
        for g, row in enumerate(r):
            ok = ~np.isnan(row)
            adv[g, ok] = core_advantages(row[ok], estimator)
        out.append(adv.ravel())
    return out


def _trained(tmp_path, estimator, none_every=0):
    truth, seen = [], []

    class Capture(fixed_reference_trainer(estimator)):
        def _compute_loss(self, model, inputs):
            seen.append(inputs["advantages"].detach().double().numpy().copy())
            return super()._compute_loss(model, inputs)

    trainer = make_trainer(tmp_path, truth, trainer_cls=Capture, reward_weights=WEIGHTS, none_every=none_every,
                           steps_per_generation=2, gradient_accumulation_steps=2, max_steps=2)
    trainer.train()
    return truth, seen


@pytest.mark.parametrize("estimator", ["sign", "tasa", "dr_grpo", "grpo"])
def test_trl_trains_on_the_core_advantages(tmp_path, estimator):
    truth, seen = _trained(tmp_path, estimator)
    expected = _expected(truth, estimator)
    assert len(seen) == 2 * len(expected)  # two micro-batches per generation batch (shuffled rows)
    for k, exp in enumerate(expected):
        got = np.concatenate(seen[2 * k:2 * k + 2])
        assert np.allclose(np.sort(got), np.sort(exp), atol=1e-6)


def test_missing_rewards_stay_out_of_the_group(tmp_path):
    truth, seen = _trained(tmp_path, "tasa", none_every=2)
    expected = _expected(truth, "tasa")
    for k, exp in enumerate(expected):
        assert np.allclose(np.sort(np.concatenate(seen[2 * k:2 * k + 2])), np.sort(exp), atol=1e-6)


def test_group_advantages_and_unknown_name():
    r = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, np.nan, 1.0])
    adv = group_advantages(r, 4, "tasa")
    assert np.allclose(adv, [1.0, -1 / 3, -1 / 3, -1 / 3, 1 / 3, 1 / 3, 0.0, 1 / 3])
    with pytest.raises(InputError, match="unknown estimator"):
        fixed_reference_trainer("median")
