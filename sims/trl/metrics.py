r"""The figures the TRL integration adds to TRL's logs, from one generation batch: pure numpy.

For a batch of groups with rewards ``r`` (groups x G; NaN = missing, e.g. a reward
function returned None) and advantages ``A`` (groups x G):

* ``frac_all_pass`` / ``frac_all_fail``: share of groups whose scored rewards are all
  equal (spread <= tolerance) and above / not above :data:`~grpo_lab.sims.advantages.THRESHOLD`
  (:func:`~grpo_lab.sims.record.group_outcomes`); a group with no scored reward is neither;
* ``effective_group_rate`` = share of groups with a spread above the tolerance
  (1 - TRL's ``frac_reward_zero_std`` when nothing is missing);
* ``max_abs_advantage`` = max |A| over the batch;
* ``useful_rollouts_per_step`` = rollouts in groups with a spread, divided by the
  optimizer steps one generation batch feeds
  (``steps_per_generation * num_iterations / gradient_accumulation_steps``);
* ``rewards_missing`` = share of rollouts with a missing reward (counted apart, not as failures);
* ``d_real`` / ``d_iid`` from :class:`RollingPassRates`: each prompt's pass rate is the
  share of passing rollouts (reward > THRESHOLD) in its last ``window`` groups;
  ``d_real`` = mean over prompts seen of D(p_x, G), ``d_iid`` = D(mean p_x, G), with
  D(p, G) = p^G + (1-p)^G (:func:`~grpo_lab.sims.outcomes.p_unanimous`).

With a tag per group, the three shares are also given per tag as ``<name>/<tag>``.
"""

from __future__ import annotations

import numpy as np

from ..advantages import THRESHOLD
from ..outcomes import p_unanimous
from ..record import group_outcomes

__all__ = ["batch_metrics", "RollingPassRates", "PREFIX"]

PREFIX = "lab/"  #: prefix of every key added to TRL's logs


def batch_metrics(rewards, advantages, steps_per_batch: float = 1.0, tags=None, tag_names=(),
                  tolerance: float = 0.0) -> dict[str, float]:
    """The per-batch log figures listed in the module docstring (keys without :data:`PREFIX`).

    ``tags``: per-group index into ``tag_names`` (-1 = untagged). Empty batch: every share NaN.
    """
    r = np.asarray(rewards, dtype=float)
    a = np.asarray(advantages, dtype=float)
    scored = ~np.all(np.isnan(r), axis=1)
    degenerate, all_pass, all_fail = group_outcomes(r, tolerance)
    degenerate &= scored
    all_pass &= scored
    all_fail &= scored
    useful = scored & ~degenerate
    n = len(r)
    share = (lambda m: float(np.mean(m)) if len(m) else float("nan"))
    out = {
        "frac_all_pass": share(all_pass),
        "frac_all_fail": share(all_fail),
        "effective_group_rate": share(useful),
        "max_abs_advantage": float(np.nanmax(np.abs(a))) if a.size else float("nan"),
        "useful_rollouts_per_step": float(np.sum(~np.isnan(r[useful]))) / steps_per_batch if n else float("nan"),
        "rewards_missing": float(np.mean(np.isnan(r))) if r.size else float("nan"),
    }
    if tags is not None:
        tags = np.asarray(tags)
        for i, name in enumerate(tag_names):
            sel = tags == i
            if sel.any():
                out[f"frac_all_pass/{name}"] = share(all_pass[sel])
                out[f"frac_all_fail/{name}"] = share(all_fail[sel])
                out[f"effective_group_rate/{name}"] = share(useful[sel])
    return out


class RollingPassRates:
    """Each prompt's pass rate over its last ``window`` groups (memory: prompts x window)."""

    def __init__(self, n_prompts: int, window: int = 4):
        self.window = int(window)
        self.passed = np.zeros((n_prompts, self.window))
        self.scored = np.zeros((n_prompts, self.window))
        self.count = np.zeros(n_prompts, np.int64)

    def _grow(self, n: int) -> None:
        extra = n - len(self.count)
        if extra > 0:
            self.passed = np.vstack([self.passed, np.zeros((extra, self.window))])
            self.scored = np.vstack([self.scored, np.zeros((extra, self.window))])
            self.count = np.concatenate([self.count, np.zeros(extra, np.int64)])

    def update(self, prompt_ids, rewards) -> None:
        """Add one group per row: its passing and scored rollout counts go into the prompt's ring."""
        ids = np.asarray(prompt_ids, np.int64)
        r = np.asarray(rewards, dtype=float)
        if not len(ids):
            return
        self._grow(int(ids.max()) + 1)
        ok = ~np.isnan(r)
        for pid, p, s in zip(ids, np.sum(ok & (r > THRESHOLD), axis=1), np.sum(ok, axis=1)):
            slot = self.count[pid] % self.window
            self.passed[pid, slot], self.scored[pid, slot] = p, s
            self.count[pid] += 1

    def rates(self) -> np.ndarray:
        """Pass rates of the prompts seen with at least one scored rollout."""
        seen = self.scored.sum(axis=1) > 0
        return self.passed.sum(axis=1)[seen] / self.scored.sum(axis=1)[seen]

    def d_values(self, G: int) -> dict[str, float]:
        """``d_real`` and ``d_iid`` at group size G (NaN before any prompt is seen)."""
        p = self.rates()
        if not p.size:
            return {"d_real": float("nan"), "d_iid": float("nan")}
        d = p_unanimous(np.append(p, np.mean(p)), G)  # one call: every prompt's D, then D at the mean
        return {"d_real": float(np.mean(d[:-1])), "d_iid": float(d[-1])}
