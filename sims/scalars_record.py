r"""A scalars-only run record: a run known from its per-step tracker scalars alone, no group's rewards.

Most runs never dump their groups; what every run has is a few per-step scalars in a tracker (TensorBoard,
W&B, MLflow, trackio, a ``metrics.jsonl``). The tracker readers (:mod:`grpo_lab.sims.ingest`) map each
trainer's metric dialect onto the shares below and write an ordinary :class:`~grpo_lab.sims.record.RunRecord`
with **zero groups** (``rewards`` of shape (0, K)) and these per-step columns in ``steps`` (NaN where the run
did not log it):

``step``                  the trainer's optimizer step (int64)
``frac_all_pass``         share of the step's groups whose K rewards all passed
``frac_all_fail``         share whose K rewards all failed
``frac_reward_zero_std``  share with zero reward spread (all-pass + all-fail for binary rewards)
``reward_mean``           mean reward over the step's rollouts
``groups_per_step``       groups (prompts x 1) the shares were computed over; the fit's weight per step
``rounds``                generation rounds (batches of prompts) the step drew before its batch was full, where
                          the trainer logs it (verl DAPO ``train/num_gen_batches``, NeMo-RL
                          ``dynamic_sampling_num_gen_batches``): a dynamic-sampling run's evidence of its zero-std
                          share when it logs no share, and what its cap (``max_num_gen_batches``) is checked on

The trainer's raw series are kept beside them as ``scalar/<name as logged>``. ``meta`` holds
``scalars_only: True``, ``num_generations`` (K, or None where the source does not say it),
``n_prompts`` (the dataset's size where known, else 0) and ``source`` = ``{kind: "tracker", format, trainer,
run, dialect: {column: metric name read}, missing: [columns not found], notes: [...]}``.

Shares are of **groups** at the run's K: a reader whose trainer counts rollouts, or a per-process share,
converts (and says so in ``notes``). The doctor fits such a record from the shares
(E[p^K] and E[(1-p)^K] of the population, step by step); what needs each group (prompt lists,
transitions) is reported as unavailable.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .record import RunRecord

__all__ = ["SHARES", "COLUMNS", "scalars_record", "is_scalars_only", "summarise_scalars"]

SHARES = ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean")  #: per-step shares
COLUMNS = ("step", *SHARES, "groups_per_step", "rounds")  #: the standard columns of a scalars-only record


def scalars_record(name: str, steps, columns: dict, *, num_generations: int | None, source: dict,
                   n_prompts: int = 0, raw: dict | None = None, extra_meta: dict | None = None) -> RunRecord:
    """A scalars-only :class:`RunRecord` (see the module docstring).

    Parameters
    ----------
    name : the run's name.
    steps : the optimizer steps, one per row (sorted ascending, unique).
    columns : any of :data:`SHARES`, ``groups_per_step`` and ``rounds``, each an array as long as ``steps``; a column
        not given is all NaN.
    num_generations : K, or None where unknown.
    source : ``{format, trainer, run, dialect, missing, notes}`` (``kind`` is set to ``"tracker"``).
    raw : the trainer's series as logged, ``{metric name: array as long as steps}``, kept as ``scalar/<name>``.

    Raises InputError for unsorted or repeated steps, a column of the wrong length or an unknown column.
    """
    step = np.asarray(steps, dtype=np.int64)
    n = len(step)
    if step.ndim != 1 or (n > 1 and np.any(np.diff(step) <= 0)):
        raise InputError("scalars record: steps must be one sorted list without repeats")
    unknown = set(columns) - set(COLUMNS[1:])
    if unknown:
        raise InputError(f"scalars record: unknown column(s) {', '.join(sorted(unknown))}")
    table = {"step": step}
    for col in COLUMNS[1:]:
        arr = np.asarray(columns.get(col, np.full(n, np.nan)), dtype=float)
        if arr.shape != (n,):
            raise InputError(f"scalars record: {col} has {arr.shape[0] if arr.ndim else 0} rows, expected {n}")
        table[col] = arr
    for key, arr in (raw or {}).items():
        arr = np.asarray(arr, dtype=float)
        if arr.shape != (n,):
            raise InputError(f"scalars record: {key} has {arr.shape[0] if arr.ndim else 0} rows, expected {n}")
        table[f"scalar/{key}"] = arr
    K = int(num_generations) if num_generations else 1
    groups = {"step": np.zeros(0, np.int64), "prompt_id": np.zeros(0, np.int64),
              "rewards": np.zeros((0, K)), "advantages": np.zeros((0, K)),
              "lengths": np.zeros((0, K), np.int64), "kept": np.zeros(0, bool)}
    meta = {"name": str(name), "n_prompts": int(n_prompts), "scalars_only": True,
            "num_generations": int(num_generations) if num_generations else None,
            "source": {**dict(source), "kind": "tracker"}, "reward_tolerance": 0.0, **(extra_meta or {})}
    return RunRecord(meta=meta, groups=groups, steps=table)


def is_scalars_only(record: RunRecord) -> bool:
    """True for a record that holds per-step scalars but no group."""
    return bool(record.meta.get("scalars_only")) or (len(record.groups.get("step", ())) == 0
                                                      and len(record.steps.get("step", ())) > 0)


def summarise_scalars(record: RunRecord) -> dict:
    """What ``grpo-lab inspect`` shows of a scalars-only record: each standard column's mean over the steps
    that logged it (None where none did), the steps that did, and the source's trainer, format, dialect and
    missing columns."""
    out = {}
    for col in COLUMNS[1:]:
        v = np.asarray(record.steps.get(col, ()), dtype=float)
        v = v[np.isfinite(v)]
        out[col] = float(v.mean()) if v.size else None
        out[f"{col}_steps"] = int(v.size)
    src = record.meta.get("source") if isinstance(record.meta.get("source"), dict) else {}
    out.update({k: src.get(k) for k in ("trainer", "format", "run", "dialect", "missing", "notes")})
    return out
