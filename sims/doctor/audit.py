r"""Audit of the logged metrics: the trainer's own scalars recomputed from the record's groups.

Ingest keeps every scalar a trainer logged as the step column ``scalar/<name>`` (:mod:`grpo_lab.sims.ingest`);
the groups hold the rewards. Where a record carries one of these scalars, :func:`audit` recomputes it per
step from the groups, with the trainer's own definition, and shows every step where they disagree beside
its likely cause. The definitions, read in each trainer's source:

=================================  ==========  ===============================================================
logged name                        trainer     definition
=================================  ==========  ===============================================================
``frac_reward_zero_std``           TRL         ``isclose(std_rewards, 0)`` averaged over the gathered
                                               generation batch; ``std_rewards`` the group's std with
                                               ``scale_rewards`` "group"/"none", the whole batch's with
                                               "batch" (``GRPOTrainer._generate_and_score_completions``,
                                               trl 1.16.0); :meth:`log` averages every batch since the
                                               previous log
``reward_std``                     TRL         ``nanstd`` (Bessel) of all rewards of the gathered batch: one
                                               std over rollouts, not a mean of group stds
``reward``                         TRL         ``nanmean`` of the weighted-sum rewards of the batch
``critic/score/mean``              verl        mean over the batch of ``token_level_scores.sum(-1)``
                                               (non-aborted rows; ``compute_data_metrics``,
                                               verl/trainer/ppo/metric_utils.py): the training reward
``solve_none/all``, ``solve_all``  prime-rl    groups whose rewards sum to 0 / to ``group_size``, over the
  ``/all``, ``effective_batch_``               groups of the step's rollouts; effective = 1 - both
  ``size/all``                                 (``MetricsBuilder.compute_solve_rates``,
                                               src/prime_rl/orchestrator/metrics.py)
``env/all/by_group/frac_all_good``  tinker     groups whose total rewards are ``all_same`` and >= 0.5 (good)
  ``/frac_all_bad``, ``/frac_mixed``           or < 0.5 (bad), else mixed (``_compute_by_group_metrics``,
                                               tinker_cookbook/rl/metric_util.py)
=================================  ==========  ===============================================================

Bare names (``solve_none``, ``frac_all_good``, ``by_group/frac_all_good``) are read too, e.g. from a plain
JSONL record's ``{"step": N, "data": {...}}`` lines. A record of the project's own trainer
(``source.kind`` "grpo-lab-train") has its step columns ``frac_reward_zero_std``, ``frac_all_pass``,
``frac_all_fail`` and ``reward_mean`` checked the same way (:data:`OWN_METRICS`).

**Causes.** For a disagreement the audit recomputes the figure under each known way a logged figure goes
wrong and names those that reproduce the logged value (within float32 rounding):

- ``correctness``: the same figure on the record's correctness score instead of its shaped training reward
  (a shaped reward vs the correctness reward);
- ``kept_only`` / ``all_drawn``: over the groups that entered the loss only, or over every drawn group (a
  rate's denominator: prime-rl #3152 computed its trainable rate over the whole arrival window, errored
  and filtered rollouts included);
- ``rollouts_not_groups``: K times the share (OpenRLHF #1282 divided accepted rollouts by prompts: 800%
  with 8 samples per prompt);
- ``neighbour_step``: the figure of the step before or after (tinker-cookbook #905: per-tag metrics zipped
  against a filtered group list slide onto the next groups);
- ``batch_std``: TRL with ``scale_rewards="batch"`` (one batch std: the share is 0 or 1);
- ``per_device``: the figure of one contiguous 1/2, 1/4 or 1/8 of the step's groups (one device's share
  where the global batch was meant);
- ``logging_steps`` / ``unwritten_batches`` (not numerical): TRL averaged generation batches the record
  does not hold (``logging_steps`` > 1; or several generation batches per step, of which TRL writes the
  last, which ingest warns about); named when the record's source says so and nothing else reproduces
  the value.

Causes are listed in that order (``batch_std`` first where ingest inferred ``scale_rewards="batch"``); on
small batches several can reproduce a value by coincidence, so all that do are named.

A disagreement nothing reproduces is reported as unexplained.

**Correctness split and phantom gradients.** Where the record classifies a shaped reward and also keeps
the correctness score per rollout (``groups["correctness"]``, :mod:`grpo_lab.sims.record`), the audit
reports both splits side by side (zero-advantage, all-pass, all-fail shares) whenever they differ, and
names the **phantom-gradient groups**: unanimous in correctness but not in the training reward, so GRPO
trains on a difference of shaping alone (a length-only gradient with DAPO's overlong penalty;
verl-recipe #125, NeMo-RL #2431). A record without the column but with ingest's per-reward summaries
(``meta["reward"]["alternatives"]``) gets the shares side by side, without the group list.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..record import RunRecord, group_outcomes

__all__ = ["METRICS", "CAUSES", "audit", "LIST_MAX"]

LIST_MAX = 20  #: phantom-gradient groups listed (all are counted)
_REL, _ABS = 2e-5, 2e-6  #: a logged value reproduces a recomputed one within float32 rounding

#: (trainer, logged names, quantity, definition)
METRICS = (
    ("TRL", ("frac_reward_zero_std",), "zero_std",
     "share of groups whose rewards have zero std (isclose(std, 0)), over the gathered generation batch"),
    ("TRL", ("reward_std",), "std", "std (Bessel) of every reward of the batch, over rollouts"),
    ("TRL", ("reward",), "mean", "mean of the rewards of the batch"),
    ("verl", ("critic/score/mean",), "mean", "mean of token_level_scores summed per response (the training reward)"),
    ("prime-rl", ("solve_none/all", "solve_none"), "solve_none", "share of groups whose rewards sum to 0"),
    ("prime-rl", ("solve_all/all", "solve_all"), "solve_all", "share of groups whose rewards sum to group_size"),
    ("prime-rl", ("effective_batch_size/all", "effective_batch_size"), "solve_some", "1 - solve_none - solve_all"),
    ("tinker", ("env/all/by_group/frac_all_good", "by_group/frac_all_good", "frac_all_good"), "all_good",
     "share of groups with all_same total rewards >= 0.5"),
    ("tinker", ("env/all/by_group/frac_all_bad", "by_group/frac_all_bad", "frac_all_bad"), "all_bad",
     "share of groups with all_same total rewards < 0.5"),
    ("tinker", ("env/all/by_group/frac_mixed", "by_group/frac_mixed", "frac_mixed"), "mixed",
     "share of groups whose total rewards are not all the same"),
)

#: the project's own trainer (records with ``source.kind`` "grpo-lab-train") writes these step columns itself
OWN_METRICS = (
    ("grpo-lab", ("frac_reward_zero_std",), "zero_std", "share of the step's recorded groups with zero reward spread"),
    ("grpo-lab", ("frac_all_pass",), "all_good", "share of the step's recorded groups all-pass"),
    ("grpo-lab", ("frac_all_fail",), "all_bad", "share of the step's recorded groups all-fail"),
    ("grpo-lab", ("reward_mean",), "mean", "mean reward of the step's recorded groups"),
)

CAUSES = {
    "correctness": "a shaped reward vs the correctness reward: the logged figure is the correctness score's",
    "kept_only": "the denominator (prime-rl #3152): the logged figure counts only the groups that entered the loss",
    "all_drawn": "the denominator (prime-rl #3152): the logged figure counts every drawn group, dropped ones too",
    "rollouts_not_groups": "rollouts counted where groups were meant: K times the share (OpenRLHF #1282's 800%)",
    "neighbour_step": "the figure of a neighbouring step: metrics shifted onto other groups (tinker-cookbook #905)",
    "batch_std": "TRL scale_rewards='batch': one std for the whole batch, so the share is 0 or 1",
    "per_device": "per-device vs global: the figure of one device's contiguous share of the step's groups",
    "logging_steps": "logging_steps averaging: TRL's log averages every generation batch since the previous log; "
                     "the record holds the last one only",
    "unwritten_batches": "not recomputable: ingest warns that the completion files hold only part of what the log "
                         "covers (several generation batches per step, of which TRL writes the last), or that the "
                         "reward weights are not the trainer's",
}


def _group_stats(r: np.ndarray, tol: float, K: int) -> dict[str, np.ndarray]:
    """Per-group indicators and sums every quantity is built from (r: (n, G), NaN-padded).

    Degenerate as :func:`grpo_lab.sims.record.group_outcomes` (spread <= tol); without NaN padding the
    reductions skip numpy's NaN-aware (slower) paths."""
    if len(r) and not np.isnan(r).any():
        mx, mn, total, first = r.max(axis=1), r.min(axis=1), r.sum(axis=1), r[:, 0]
        rcount = np.full(len(r), float(r.shape[1]))
        r2 = np.einsum("ij,ij->i", r, r)
    else:
        valid = ~np.isnan(r)
        first = r[np.arange(len(r)), np.argmax(valid, axis=1)] if len(r) else np.zeros(0)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():  # an all-NaN (unscored) group: no spread
            warnings.simplefilter("ignore", RuntimeWarning)
            mx, mn = (np.nanmax(r, axis=1), np.nanmin(r, axis=1)) if len(r) else (np.zeros(0), np.zeros(0))
        total, r2, rcount = np.nansum(r, axis=1), np.nansum(r * r, axis=1), valid.sum(axis=1).astype(float)
    with np.errstate(invalid="ignore"):
        deg = (mx - mn) <= tol
        same = mx == mn
    return {"n": np.ones(len(r)), "zero_std": deg.astype(float),
            "solve_none": (total == 0).astype(float), "solve_all": (total == K).astype(float),
            "all_good": (same & (first >= 0.5)).astype(float), "all_bad": (same & (first < 0.5)).astype(float),
            "rsum": total, "r2sum": r2, "rcount": rcount}


def _quantities(st: dict, pos: np.ndarray, m: int, mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every quantity per step (m steps; NaN where a step has no group in ``mask``)."""
    w = np.ones(len(pos)) if mask is None else mask.astype(float)
    agg = {k: np.bincount(pos, weights=v * w, minlength=m) for k, v in st.items()}
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.where(agg["n"] > 0, agg["n"], np.nan)
        c = agg["rcount"]
        mean = agg["rsum"] / c
        var = (agg["r2sum"] - c * mean**2) / (c - 1)
        out = {k: agg[k] / n for k in ("zero_std", "solve_none", "solve_all", "all_good", "all_bad")}
        out["solve_some"] = 1 - out["solve_none"] - out["solve_all"]
        out["mixed"] = 1 - out["all_good"] - out["all_bad"]
        out["mean"] = mean
        out["std"] = np.sqrt(np.maximum(var, 0.0))
    return out


def _correctness(record: RunRecord) -> np.ndarray | None:
    """The record's per-rollout correctness score, or None when it has none (or one not shaped like its rewards)."""
    c = record.groups.get("correctness")
    if c is None:
        return None
    c = np.asarray(c)
    if c.ndim != 2 or c.shape[0] != len(record.groups["rewards"]) or c.dtype.kind not in "fiub":
        return None
    return c.astype(float)


def _close(a, b) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= _ABS + _REL * np.abs(b))


def _find(steps: dict, names: tuple, prefix: str) -> str | None:
    for name in names:
        if f"{prefix}{name}" in steps:
            return name
    return None


class _Alternatives:
    """Per cause, every quantity per step it would give (see the module docstring); built on first use only,
    so a record whose logged figures all agree pays nothing for them."""

    def __init__(self, record: RunRecord, r: np.ndarray, st: dict, pos: np.ndarray, m: int, K: int, base: dict):
        self.record, self.r, self.st, self.pos, self.m, self.K, self.base = record, r, st, pos, m, K, base
        self._cache: dict[str, dict] = {}

    def get(self, cause: str, quantity: str) -> np.ndarray | None:
        """(rows, m) figures of ``quantity`` under ``cause``, or None where the cause does not apply."""
        if cause == "rollouts_not_groups":
            return None if quantity in ("mean", "std") else self.K * self.base[quantity]
        if cause == "neighbour_step":
            shifted = np.full((2, self.m), np.nan)
            shifted[0, 1:], shifted[1, :-1] = self.base[quantity][:-1], self.base[quantity][1:]
            return shifted
        if cause not in self._cache:
            self._cache[cause] = self._build(cause)
        table = self._cache[cause]
        return None if table is None or quantity not in table else table[quantity]

    def _build(self, cause: str):
        g, pos, m, K = self.record.groups, self.pos, self.m, self.K
        if cause == "correctness":
            c = _correctness(self.record)
            return None if c is None else _quantities(_group_stats(c, 0.0, K), pos, m)
        if cause == "kept_only":
            kept = np.asarray(g["kept"], bool)
            return None if kept.all() else _quantities(self.st, pos, m, kept)
        if cause == "batch_std":
            c = np.bincount(pos, weights=self.st["rcount"], minlength=m)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.bincount(pos, weights=self.st["rsum"], minlength=m) / c
                var = (np.bincount(pos, weights=self.st["r2sum"], minlength=m) - c * mean**2) / np.maximum(c - 1, 1)
            return {"zero_std": np.where(c > 0, (np.abs(var) <= 1e-12).astype(float), np.nan)}
        if cause == "per_device":
            return _per_device(self.st, pos, m)
        return None


def _per_device(st: dict, pos: np.ndarray, m: int) -> dict[str, np.ndarray]:
    """Every quantity on each contiguous 1/d of a step's groups, d in 2, 4, 8 (record order): (chunks, m) each."""
    rank = np.zeros(len(pos), np.int64)
    order = np.argsort(pos, kind="stable")
    counts = np.bincount(pos, minlength=m)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank[order] = np.arange(len(pos)) - starts[pos[order]]
    rows = []
    for d in (2, 4, 8):
        chunk = np.where(counts[pos] % d == 0, rank * d // np.maximum(counts[pos], 1), -1)
        rows += [_quantities(st, pos, m, chunk == j) for j in range(d)]
    return {k: np.asarray([q[k] for q in rows]) for k in rows[0]}


def _structural(record: RunRecord) -> str | None:
    """A cause the record's source states but the groups cannot reproduce: TRL's logging_steps > 1, or ingest's
    warning that the completion files hold only part of what a log covers."""
    src = record.meta.get("source") or {}
    if isinstance(src, dict) and isinstance(src.get("logging_steps"), (int, float)) and src["logging_steps"] > 1:
        return "logging_steps"
    if any("differs from the mean of the logged completions" in str(t) for t in record.meta.get("warnings") or []):
        return "unwritten_batches"
    return None


def _priority(record: RunRecord) -> list[str]:
    """Causes in the order they are named (a cause the source states first)."""
    src = record.meta.get("source") or {}
    first = ["batch_std"] if isinstance(src, dict) and src.get("scale_rewards") == "batch" else []
    return first + [c for c in ("correctness", "kept_only", "rollouts_not_groups", "batch_std", "neighbour_step",
                                "per_device") if c not in first]


def _checks(record: RunRecord) -> list[dict]:
    g, steps = record.groups, record.steps
    r = np.asarray(g["rewards"], float)
    if not len(r) or "step" not in steps:
        return []
    K = int(np.max(np.sum(~np.isnan(r), axis=1)))
    tol = record.reward_tolerance
    step_axis = np.asarray(steps["step"], np.int64)
    has = np.isin(step_axis, g["step"])
    pos = np.searchsorted(step_axis, g["step"])
    m = len(step_axis)
    st = _group_stats(r, tol, K)
    base = _quantities(st, pos, m)
    alt = _Alternatives(record, r, st, pos, m, K, base)
    structural, order = _structural(record), _priority(record)
    out = []
    src = record.meta.get("source") or {}
    own = isinstance(src, dict) and src.get("kind") == "grpo-lab-train"
    for trainer, names, quantity, definition in METRICS + (OWN_METRICS if own else ()):
        prefix = "" if trainer == "grpo-lab" else "scalar/"
        name = _find(steps, names, prefix)
        if name is None:
            continue
        logged = np.asarray(steps[f"{prefix}{name}"], float)
        compare = has & np.isfinite(logged)
        mine = base[quantity]
        agree = compare & _close(logged, mine)
        rows = []
        for i in np.flatnonzero(compare & ~agree):
            causes = [c for c in order if (v := alt.get(c, quantity)) is not None
                      and np.any(_close(logged[i], np.atleast_2d(v)[:, i]))]
            if not causes and structural:
                causes = [structural]
            rows.append({"step": int(step_axis[i]), "logged": float(logged[i]), "recomputed": float(mine[i]),
                         "causes": causes, "cause": "; ".join(CAUSES[c] for c in causes) if causes else "unexplained"})
        out.append({"trainer": trainer, "metric": name, "definition": definition, "compared_steps": int(compare.sum()),
                    "agree": int(agree.sum()), "disagreements": rows})
    return out


def _shares(rewards: np.ndarray, tol: float) -> dict:
    deg, ap, af = group_outcomes(rewards, tol)
    n = max(len(deg), 1)
    return {"zero_advantage": float(deg.sum() / n), "all_pass": float(ap.sum() / n), "all_fail": float(af.sum() / n)}


def _split(record: RunRecord) -> dict:
    g, reward = record.groups, record.meta.get("reward") or {}
    r = np.asarray(g["rewards"], float)
    tol = record.reward_tolerance
    classified = reward.get("classified") or "the record's reward"
    c = _correctness(record)
    if c is None:
        alts = {k: v for k, v in (reward.get("alternatives") or {}).items() if "correct" in k or k == "acc"}
        if not alts or not len(r):
            return {"available": False, "reason": "the record keeps no correctness score beside its reward"}
        name, a = next(iter(alts.items()))
        corr = {"zero_advantage": a["frac_reward_zero_std"], "all_pass": a["frac_all_pass"],
                "all_fail": a["frac_all_fail"]}
        train = _shares(r, tol)
        return {"available": True, "training": {"name": classified, **train}, "correctness": {"name": name, **corr},
                "differ": any(not math.isclose(train[k], corr[k]) for k in train), "phantom": None,
                "note": "shares from ingest's summary; re-ingest the run to name the phantom-gradient groups"}
    deg_t, _, _ = group_outcomes(r, tol)
    deg_c, ap_c, af_c = group_outcomes(c, 0.0)
    phantom = deg_c & ~deg_t
    masked = deg_t & ~deg_c
    labels = record.meta.get("prompt_labels") or []
    rows = []
    for i in np.flatnonzero(phantom)[:LIST_MAX]:
        pid = int(g["prompt_id"][i])
        rows.append({"group": int(i), "step": int(g["step"][i]), "prompt_id": pid,
                     "text": str(labels[pid]) if pid < len(labels) else None,
                     "correctness": "all-pass" if ap_c[i] else "all-fail",
                     "correctness_rewards": [float(x) for x in c[i] if not np.isnan(x)],
                     "training_rewards": [float(x) for x in r[i] if not np.isnan(x)]})
    train, corr = _shares(r, tol), _shares(c, 0.0)
    n = max(len(r), 1)
    return {"available": True, "training": {"name": classified, **train},
            "correctness": {"name": reward.get("correctness") or "correctness", **corr},
            "differ": any(not math.isclose(train[k], corr[k]) for k in train),
            "phantom": {"count": int(phantom.sum()), "share": float(phantom.sum() / n),
                        "all_fail": int((phantom & af_c).sum()), "all_pass": int((phantom & ap_c).sum()),
                        "groups": rows},
            "masked": int(masked.sum())}


def audit(record: RunRecord) -> dict:
    """The audit of ``record`` (see the module docstring).

    Returns ``checks`` (one entry per trainer scalar the record carries: ``trainer``, ``metric``,
    ``definition``, ``compared_steps``, ``agree``, ``disagreements`` [{step, logged, recomputed, causes,
    cause}]), ``disagreements`` (their total) and ``split`` (``available``; ``training`` and
    ``correctness`` shares, ``differ``, ``phantom`` {count, share, all_fail, all_pass, groups[:LIST_MAX]},
    ``masked`` (zero-advantage in the training reward though mixed in correctness)).
    """
    checks = _checks(record)
    return {"checks": checks, "disagreements": sum(len(c["disagreements"]) for c in checks), "split": _split(record)}
