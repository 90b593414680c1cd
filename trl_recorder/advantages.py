r"""The core's advantage estimators (``sign``, ``tasa``, ``grpo``, ``dr_grpo``) inside TRL's GRPOTrainer.

TRL 1.16 computes advantages inline in ``_generate_and_score_completions`` (group mean
and std of the combined reward; it has no advantage hook). The smallest extension is a
subclass with two short overrides:

* ``_calculate_rewards`` keeps TRL's ``rewards_per_func`` (gathered over processes);
* ``_generate_and_score_completions`` calls TRL's, then replaces ``output["advantages"]``
  with the core estimator's, applied per group of ``num_generations`` rows to TRL's
  combined reward ``nansum(rewards_per_func * reward_weights)``.

Everything else (generation, KL, the loss and its normalisation ``loss_type``, logging,
TRL's own ``frac_reward_zero_std``) is TRL's. Missing rewards: a rollout every reward
function returned None for gets advantage 0 (as TRL does) and the estimator sees only the
group's scored rollouts.

Usage::

    from grpo_lab.trl_recorder import fixed_reference_trainer
    Trainer = fixed_reference_trainer("sign")           # a GRPOTrainer subclass
    trainer = Trainer(model=..., reward_funcs=..., args=GRPOConfig(..., loss_type="dr_grpo"), ...)
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.advantages import get_estimator
from ._compat import check_trl
from .recorder import combine_rewards

__all__ = ["fixed_reference_trainer", "group_advantages"]


def group_advantages(rewards, G: int, estimator: str) -> np.ndarray:
    """The named core estimator applied per group of ``G`` consecutive rows of a flat reward vector.

    NaN rewards (missing) are left out of their group's computation and get advantage 0.
    """
    fn = get_estimator(estimator)
    r = np.asarray(rewards, dtype=float).reshape(-1, G)
    ok = ~np.isnan(r)
    adv = np.zeros_like(r)
    full = ok.all(axis=1)
    if full.any():
        adv[full] = fn(r[full])
    for i in np.flatnonzero(~full & ok.any(axis=1)):  # groups with a missing reward (rare): scored ones only
        adv[i, ok[i]] = fn(r[i, ok[i]][None, :])[0]
    return adv.reshape(-1)


def fixed_reference_trainer(estimator: str = "sign", base=None) -> type:
    """A subclass of ``base`` (default ``trl.GRPOTrainer``) training on ``estimator``'s advantages."""
    get_estimator(estimator)  # an unknown name fails here, before any model is built
    trl = check_trl()
    base = base or trl.GRPOTrainer

    class LabAdvantageGRPOTrainer(base):
        lab_estimator = estimator

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._lab_rewards_per_func = rewards_per_func
            return rewards_per_func

        def _generate_and_score_completions(self, inputs):
            import torch

            out = super()._generate_and_score_completions(inputs)
            mode = "train" if self.model.training else "eval"
            G = self.num_generations if mode == "train" else self.num_generations_eval
            rpf = self._lab_rewards_per_func.detach().float().cpu().numpy().astype(np.float64)
            combined = combine_rewards(rpf, self.reward_weights.cpu().numpy())
            adv = group_advantages(combined, G, self.lab_estimator)
            n = len(inputs)
            local = adv[self.accelerator.process_index * n:(self.accelerator.process_index + 1) * n]
            out["advantages"] = torch.as_tensor(local, dtype=out["advantages"].dtype, device=out["advantages"].device)
            return out

    LabAdvantageGRPOTrainer.__name__ = LabAdvantageGRPOTrainer.__qualname__ = f"{estimator.title()}GRPOTrainer"
    return LabAdvantageGRPOTrainer
