r"""The figures the TRL integration adds to TRL's logs, from one generation batch: pure numpy.

For a batch of groups with rewards ``r`` (groups x G; NaN = missing, e.g. a reward
function returned None) and advantages ``A`` (groups x G):

* ``frac_all_pass`` / ``frac_all_fail``: share of groups whose scored rewards are all
  equal (spread = max - min <= tolerance) with mean above / not above
  :data:`~grpo_lab.sims.advantages.THRESHOLD` (the rule of
  :func:`~grpo_lab.sims.record.group_outcomes`); a group with no scored reward is neither;
* ``effective_group_rate`` = share of groups with a spread above the tolerance
  (1 - TRL's ``frac_reward_zero_std`` when nothing is missing);
* ``max_abs_advantage`` = max |A| over the batch (NaN entries ignored);
* ``useful_rollouts_per_step`` = scored rollouts in groups with a spread, divided by the
  optimizer steps one generation batch feeds
  (``steps_per_generation * num_iterations / gradient_accumulation_steps``);
* ``rewards_missing`` = share of rollouts with a missing reward (counted apart, not as failures);
* ``d_real`` / ``d_iid`` from :class:`RollingPassRates`: each prompt's pass rate is the
  share of passing rollouts (reward > THRESHOLD) in its last ``window`` groups;
  ``d_real`` = mean over prompts seen of D(p_x, G), ``d_iid`` = D(mean p_x, G), with
  D(p, G) = p^G + (1-p)^G (:func:`~grpo_lab.sims.outcomes.p_unanimous` at rho = 0).

With a tag per group, the three shares are also given per tag as ``<name>/<tag>``.

Cost: these run on the training thread once per generation batch, so every step is a
whole-array numpy operation (no loop over groups or rows, no warning filters):
:func:`batch_counts` reduces a batch to a few counts (which pool exactly over several
batches by summing), :func:`metrics_from_counts` turns counts into the figures, and
:class:`RollingPassRates` keeps running sums so a batch costs O(groups in the batch),
not O(prompts in the dataset).
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.advantages import THRESHOLD

__all__ = ["batch_counts", "metrics_from_counts", "pool_counts", "batch_metrics", "RollingPassRates", "PREFIX",
           "COUNT_FIELDS", "TAG_SHARES"]

PREFIX = "lab/"  #: prefix of every key added to TRL's logs
#: the entries of :func:`batch_counts`'s vector (all sums over groups, except the last: a max)
COUNT_FIELDS = ("groups", "all_pass", "all_fail", "useful", "useful_rollouts", "rollouts", "missing", "reward_sum",
                "max_abs_advantage")
_I = {name: i for i, name in enumerate(COUNT_FIELDS)}
_MAX = _I["max_abs_advantage"]
TAG_SHARES = ("frac_all_pass", "frac_all_fail", "effective_group_rate")  #: the shares also given per tag


def batch_counts(rewards, advantages, tolerance: float = 0.0, tags=None, n_tags: int = 0, missing=None):
    """One batch reduced to counts: ``(vector, by_tag)``.

    ``vector`` (float64, :data:`COUNT_FIELDS` order): groups, all-pass groups, all-fail groups,
    useful groups (scored, spread > tolerance), scored rollouts in useful groups, rollouts,
    missing rollouts, sum of the scored rewards, max |A| (NaN when there is none).
    ``by_tag``: None without tags, else a (4, n_tags) array of all-pass, all-fail, useful and
    all groups per tag (``tags``: per-group index, -1 = untagged, left out).
    ``missing``: False when the caller knows no reward is NaN (skips that check), else None.
    """
    r = np.asarray(rewards, dtype=float)
    n, G = r.shape
    total = r.sum(axis=1)
    a = np.abs(np.asarray(advantages, dtype=float)).ravel()
    amax = float(np.fmax.reduce(a)) if a.size else float("nan")
    if missing is False or not np.isnan(total.sum()):  # nothing missing (the usual case): fewer whole-array steps
        n_missing = 0
        degenerate = ((r.max(axis=1) - r.min(axis=1)) if n else np.zeros(0)) <= tolerance
        all_pass = degenerate & (total / G > THRESHOLD)
        n_pass, n_degenerate = int(np.count_nonzero(all_pass)), int(np.count_nonzero(degenerate))
        n_useful = n - n_degenerate
        useful_rollouts = n_useful * G
        if n_tags:
            all_fail, useful = degenerate & ~all_pass, ~degenerate
    else:
        missing = np.isnan(r)
        n_missing = int(np.count_nonzero(missing))
        hi, lo = np.fmax.reduce(r, axis=1), np.fmin.reduce(r, axis=1)  # NaN only where nothing is scored
        scored = G - missing.sum(axis=1)
        total = np.where(missing, 0.0, r).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / scored
        degenerate = (hi - lo) <= tolerance  # False where nothing is scored (NaN compares false)
        all_pass = degenerate & (mean > THRESHOLD)
        all_fail = degenerate & ~(mean > THRESHOLD)
        useful = ~degenerate & (hi == hi)  # hi == hi: the group has a scored reward
        n_pass, n_useful = int(np.count_nonzero(all_pass)), int(np.count_nonzero(useful))
        n_degenerate = n_pass + int(np.count_nonzero(all_fail))
        useful_rollouts = int(scored[useful].sum())
    vec = np.array([n, n_pass, n_degenerate - n_pass, n_useful, useful_rollouts, r.size, n_missing,
                    float(total.sum()), amax])
    by_tag = None
    if n_tags:
        t = np.asarray(tags, np.int64)
        keep = t >= 0
        # one bincount over (outcome, tag) cells: outcome 0 all-pass, 1 all-fail, 2 useful, 3 neither
        outcome = 3 - (3 * all_pass + 2 * all_fail + useful)  # the three are exclusive
        cells = np.bincount((outcome * n_tags + t)[keep], minlength=4 * n_tags).reshape(4, n_tags)
        by_tag = np.vstack([cells[:3], cells.sum(axis=0)]).astype(float)
    return vec, by_tag


def pool_counts(vectors) -> np.ndarray:
    """Counts of several batches as one: sums, and the max of ``max_abs_advantage``."""
    vs = np.asarray(vectors, dtype=float).reshape(-1, len(COUNT_FIELDS))
    out = vs.sum(axis=0)
    out[_MAX] = np.fmax.reduce(vs[:, _MAX]) if len(vs) else float("nan")
    return out


def metrics_from_counts(vec, steps_per_batch: float = 1.0, by_tag=None, tag_names=()) -> dict[str, float]:
    """The per-batch log figures of the module docstring (keys without :data:`PREFIX`) from counts.

    Empty batch: every share NaN.
    """
    vec = vec.tolist() if isinstance(vec, np.ndarray) else vec  # Python floats: cheaper scalar arithmetic
    n = vec[_I["groups"]]
    nan = float("nan")
    out = {
        "frac_all_pass": vec[_I["all_pass"]] / n if n else nan,
        "frac_all_fail": vec[_I["all_fail"]] / n if n else nan,
        "effective_group_rate": vec[_I["useful"]] / n if n else nan,
        "max_abs_advantage": float(vec[_MAX]),
        "useful_rollouts_per_step": vec[_I["useful_rollouts"]] / steps_per_batch if n else nan,
        "rewards_missing": vec[_I["missing"]] / vec[_I["rollouts"]] if vec[_I["rollouts"]] else nan,
    }
    if by_tag is not None:
        by_tag = by_tag.tolist()
        for i, name in enumerate(tag_names):
            groups = by_tag[3][i]
            if groups:
                for j, share in enumerate(TAG_SHARES):
                    out[f"{share}/{name}"] = by_tag[j][i] / groups
    return out


def batch_metrics(rewards, advantages, steps_per_batch: float = 1.0, tags=None, tag_names=(),
                  tolerance: float = 0.0) -> dict[str, float]:
    """The per-batch log figures (keys without :data:`PREFIX`) of one batch.

    ``tags``: per-group index into ``tag_names`` (-1 = untagged). Empty batch: every share NaN.
    """
    n_tags = len(tag_names) if tags is not None else 0
    vec, by_tag = batch_counts(rewards, advantages, tolerance, tags, n_tags)
    return metrics_from_counts(vec, steps_per_batch, by_tag, tag_names)


def _unanimous(p: np.ndarray, G: int) -> np.ndarray:
    """D(p, G) = p^G + (1-p)^G, the probability that G independent rollouts agree."""
    return p ** G + (1.0 - p) ** G


class RollingPassRates:
    """Each prompt's pass rate over its last ``window`` groups, with D_real / D_iid kept as running sums.

    Memory: prompts x window x 2 counts (passing and scored rollouts of each group in the ring).
    :meth:`update` costs O(groups updated): per-prompt ring sums are adjusted by the entering and
    leaving group, and the sums over prompts of D(p_x, G) and p_x by the changed prompts'
    differences (re-summed exactly every :attr:`RESUM_EVERY` updates, so rounding cannot drift).
    ``G`` is the group size the running D sum is kept for; :meth:`d_values` at another G
    recomputes from the rates.
    """

    RESUM_EVERY = 1024  #: updates between two exact re-summations of the running sums

    def __init__(self, n_prompts: int, window: int = 4, G: int | None = None):
        self.window = int(window)
        self.G = G
        self.ring = np.zeros((n_prompts, self.window, 2))  # [prompt, slot] = (passed, scored) of one group
        self.sums = np.zeros((n_prompts, 2))  # the ring's sums per prompt
        self.count = np.zeros(n_prompts, np.int64)
        self.rate_d = np.zeros((n_prompts, 2))  # [prompt] = (pass rate, D(rate, G)) of each prompt seen, else 0
        self.sum_rate = self.sum_d = 0.0
        self.n_seen = 0
        self._updates = 0

    def _grow(self, n: int) -> None:
        extra = n - len(self.count)
        if extra > 0:
            self.ring = np.concatenate([self.ring, np.zeros((extra, self.window, 2))])
            self.sums = np.concatenate([self.sums, np.zeros((extra, 2))])
            self.rate_d = np.concatenate([self.rate_d, np.zeros((extra, 2))])
            self.count = np.concatenate([self.count, np.zeros(extra, np.int64)])

    def update(self, prompt_ids, rewards, missing=None) -> None:
        """Add one group per row: its passing and scored rollout counts go into the prompt's ring.

        ``missing``: False when the caller knows no reward is NaN (every rollout scored), else None."""
        ids = np.asarray(prompt_ids, np.int64)
        if not len(ids):
            return
        r = np.asarray(rewards, dtype=float)
        if ids.max() >= len(self.count):
            self._grow(int(ids.max()) + 1)
        new = np.empty((len(ids), 2))
        new[:, 0] = (r > THRESHOLD).sum(axis=1)  # NaN > THRESHOLD is False
        new[:, 1] = r.shape[1] if missing is False else r.shape[1] - np.isnan(r).sum(axis=1)
        s = np.sort(ids)
        if len(ids) > 1 and (s[1:] == s[:-1]).any():  # a prompt twice in one batch: in order, one group at a time
            for i in range(len(ids)):
                self._apply(ids[i:i + 1], new[i:i + 1])
        else:
            self._apply(ids, new)
        self._updates += 1
        if self._updates % self.RESUM_EVERY == 0:
            self.sum_rate, self.sum_d = self.rate_d.sum(axis=0).tolist()

    def _apply(self, ids, new) -> None:
        """Ring update for distinct ``ids`` (``new``: their groups' passed and scored counts), and the
        running sums' differences."""
        slot = self.count[ids] % self.window
        old = self.sums[ids]
        sums = old + (new - self.ring[ids, slot])
        self.ring[ids, slot] = new
        self.sums[ids] = sums
        self.count[ids] += 1
        tot = sums[:, 1]
        rate_d = np.empty((len(ids), 2))
        if tot.all():  # every prompt of the batch has a scored rollout in its window (the usual case)
            rate = rate_d[:, 0] = sums[:, 0] / tot
            rate_d[:, 1] = _unanimous(rate, self.G) if self.G else 0.0
            self.n_seen += int((old[:, 1] == 0).sum())
        else:
            seen = tot > 0
            rate = rate_d[:, 0] = np.where(seen, sums[:, 0] / np.where(seen, tot, 1.0), 0.0)
            rate_d[:, 1] = np.where(seen, _unanimous(rate, self.G), 0.0) if self.G else 0.0
            self.n_seen += int(np.count_nonzero(seen)) - int(np.count_nonzero(old[:, 1]))
        d_rate, d_d = (rate_d - self.rate_d[ids]).sum(axis=0).tolist()
        self.sum_rate += d_rate
        self.sum_d += d_d
        self.rate_d[ids] = rate_d

    def rates(self) -> np.ndarray:
        """Pass rates of the prompts seen with at least one scored rollout in the window."""
        seen = self.sums[:, 1] > 0
        return self.sums[seen, 0] / self.sums[seen, 1]

    def d_values(self, G: int) -> dict[str, float]:
        """``d_real`` and ``d_iid`` at group size G (NaN before any prompt is seen)."""
        n_seen = int(np.count_nonzero(self.sums[:, 1] > 0)) if G != self.G else self.n_seen
        if not n_seen:
            return {"d_real": float("nan"), "d_iid": float("nan")}
        if G != self.G:
            p = self.rates()
            return {"d_real": float(np.mean(_unanimous(p, G))), "d_iid": float(_unanimous(np.mean(p), G))}
        return {"d_real": self.sum_d / n_seen, "d_iid": float(_unanimous(self.sum_rate / n_seen, G))}
