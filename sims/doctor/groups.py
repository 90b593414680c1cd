r"""The doctor's input: one success count per group, read from a run record and checked.

A record's ``rewards`` table (groups x G, NaN-padded) becomes, per group, the
number of passing rollouts ``S`` out of the run's one group size ``K``:

* binary rewards (every reward 0 or 1): ``S`` = the sum of the rewards;
* other rewards, only when a tolerance is given (``--tolerance``, or a record
  ingested with ``reward_tolerance > 0``): a rollout passes when its reward
  exceeds :data:`grpo_lab.sims.advantages.THRESHOLD` (0.5, the record's all-pass
  threshold), so ``S`` counts rewards above it.

Refused with an :class:`~grpo_lab.sims.errors.InputError` (one line): fewer than
:data:`MIN_GROUPS` groups, groups of different sizes, a group size of 1, or
non-binary rewards without a tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..advantages import THRESHOLD
from ..errors import InputError
from ..record import RunRecord

__all__ = ["MIN_GROUPS", "RunGroups", "run_groups"]

MIN_GROUPS = 32  #: the fewest groups the doctor fits ("a few dozen")


@dataclass(frozen=True)
class RunGroups:
    """A run reduced to what the doctor needs, rows in record order.

    Attributes
    ----------
    K : the group size (rollouts per group), the same for every group.
    successes : int64 (n,), passing rollouts per group, in [0, K].
    step, prompt_id : int64 (n,), as recorded.
    n_prompts : size of the run's prompt set.
    labels : prompt texts (``meta['prompt_labels']``) or None.
    binarised : True when non-binary rewards were thresholded at 0.5.
    name : the run's name (``meta['name']``) or None.
    """

    K: int
    successes: np.ndarray
    step: np.ndarray
    prompt_id: np.ndarray
    n_prompts: int
    labels: list | None = None
    binarised: bool = False
    name: str | None = None

    @property
    def n(self) -> int:
        return int(self.successes.shape[0])

    def subset(self, mask) -> "RunGroups":
        """The groups in ``mask`` (a boolean array over the rows; None: all), the run's K and prompt set kept."""
        if mask is None:
            return self
        m = np.asarray(mask, bool)
        return RunGroups(self.K, self.successes[m], self.step[m], self.prompt_id[m], self.n_prompts)

    def counts(self, mask=None) -> np.ndarray:
        """Groups with s = 0..K successes (the sufficient statistic of a beta-binomial fit), over ``mask``."""
        s = self.successes if mask is None else self.successes[mask]
        return np.bincount(s, minlength=self.K + 1).astype(float)


def _tolerance(value) -> float:
    """A reward tolerance: a finite real number >= 0 (booleans and strings refused)."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (number and np.isfinite(value) and value >= 0):
        raise InputError(f"--tolerance must be a finite number >= 0, got {value!r}")
    return float(value)


def run_groups(record: RunRecord, tolerance: float | None = None) -> RunGroups:
    """Reduce ``record`` to success counts per group (see the module docstring). Raises InputError."""
    tolerance = None if tolerance is None else _tolerance(tolerance)
    if tolerance is None and record.reward_tolerance > 0:
        tolerance = record.reward_tolerance
    r = np.asarray(record.groups["rewards"], dtype=float)
    n = r.shape[0]
    if n < MIN_GROUPS:
        raise InputError(f"the record holds {n} groups: too few to fit (the doctor needs at least {MIN_GROUPS})")
    present = ~np.isnan(r)
    widths = present.sum(axis=1)
    sizes = np.unique(widths)
    if sizes.size > 1:
        raise InputError(f"the record mixes group sizes ({', '.join(str(int(s)) for s in sizes[:4])}"
                         f"{', ...' if sizes.size > 4 else ''} rollouts per group); the doctor fits one group size")
    K = int(sizes[0])
    if K < 2:
        raise InputError(f"groups of {K} rollout cannot be mixed; the doctor needs a group size of at least 2")
    if r.shape[1] != K:
        r = r[:, :K] if np.all(present[:, :K]) else r[present].reshape(n, K)
    binary = bool(np.all((r == 0.0) | (r == 1.0)))
    if not binary:
        if tolerance is None:
            bad = r[(r != 0.0) & (r != 1.0)][0]
            raise InputError(f"rewards are not binary (e.g. {bad:g}); pass --tolerance to count a reward "
                             f"above {THRESHOLD:g} as a pass")
        s = np.sum(r > THRESHOLD, axis=1)
    else:
        s = r.sum(axis=1)
    pid = np.asarray(record.groups["prompt_id"], dtype=np.int64)
    n_prompts = record.n_prompts
    if pid.min() < 0 or pid.max() >= n_prompts:
        raise InputError("run record: prompt_id outside [0, n_prompts)")
    labels = record.meta.get("prompt_labels")
    if not (isinstance(labels, list) and len(labels) == n_prompts):
        labels = None
    return RunGroups(K=K, successes=s.astype(np.int64), step=np.asarray(record.groups["step"], dtype=np.int64),
                     prompt_id=pid, n_prompts=n_prompts, labels=labels, binarised=not binary,
                     name=record.meta.get("name"))
