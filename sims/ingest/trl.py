r"""TRL: ``GRPOTrainer``'s completion logs and ``trainer_state.json``.

Verified against TRL 1.16.0 (``trl/trainer/grpo_trainer.py``):

- With ``log_completions=True``, at every logging step ``GRPOTrainer.log`` writes
  ``<output_dir>/completions/completions_{global_step:05d}.parquet`` (pandas
  ``to_parquet``) with columns ``step``, ``prompt``, ``completion``, one column per
  reward function (its name; the *unweighted* ``rewards_per_func`` values, NaN
  where a function returned None), any extra logged columns, and ``advantage``.
  The rows are the last ``generation_batch_size`` completions (a deque), in
  generation order, so a group is a block of ``num_generations`` consecutive rows
  with the same prompt.
- The total reward is ``nansum(weights * rewards_per_func)`` (NaN if every
  function returned None); weights come from ``GRPOConfig.reward_weights``
  (default 1 each) and are not in the output folder: pass ``reward_weights``.
- ``frac_reward_zero_std`` is ``isclose(std_rewards, 0)`` (atol 1e-8) averaged
  over the generation batch, where ``std_rewards`` is the per-group std with
  ``scale_rewards`` "group"/"none" (then it is the share of degenerate groups)
  but the batch std with ``scale_rewards="batch"``; the value logged at a
  logging step is the mean over the generation batches since the previous log.
- ``trainer_state.json`` (``Trainer.save_state`` or a ``checkpoint-*/`` folder)
  holds ``log_history``: one dict per log with ``step`` and the metrics
  (``reward``, ``reward_std``, ``frac_reward_zero_std``, ``rewards/<func>/mean``...).

Reward columns: ``reward_columns`` if given, else the columns named in
``rewards/<name>/mean`` keys of ``log_history``, else every numeric column other
than ``step`` and ``advantage``.
"""

from __future__ import annotations

import io
import json
import math
import re
from functools import reduce

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .common import Bundle, GroupTable, build_record, describe, numeric_scalars

__all__ = ["ingest_trl", "read_trainer_state"]

_COMPLETIONS = re.compile(r"(?:^|/)completions_(\d+)\.parquet$")
_STATE = re.compile(r"(?:^|/)(?:checkpoint-(\d+)/)?trainer_state\.json$")
_REWARD_KEY = re.compile(r"^rewards/(.+)/mean$")


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading TRL completion logs (parquet) needs pyarrow: pip install 'grpo-lab[ingest]' "
                         "(or pip install pyarrow)") from None
    return pa, pq


def read_trainer_state(data: bytes, label: str) -> tuple[dict[int, dict[str, float]], dict]:
    """``(scalars by step, info)`` from a trainer_state.json; entries of one step are merged."""
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{label}: not valid JSON ({describe(data)}: {getattr(exc, 'msg', exc)})") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise InputError(f"{label}: not a Hugging Face trainer_state.json (no 'log_history' list)")
    scalars: dict[int, dict[str, float]] = {}
    for i, entry in enumerate(state["log_history"]):
        if not isinstance(entry, dict):
            raise InputError(f"{label}: log_history[{i}] is not an object")
        step = entry.get("step")
        if not isinstance(step, int) or isinstance(step, bool):
            raise InputError(f"{label}: log_history[{i}] has no integer 'step'")
        row = numeric_scalars(entry)
        row.pop("step", None)
        scalars.setdefault(step, {}).update(row)
    info = {k: state.get(k) for k in ("global_step", "max_steps", "logging_steps", "train_batch_size")
            if isinstance(state.get(k), (int, float))}
    return scalars, info


def _prompt_key(value) -> tuple[object, str]:
    """Grouping key and display label of a prompt cell (a string, or a conversation: list of messages)."""
    if isinstance(value, str):
        return value, value
    try:
        key = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        key = repr(value)
    label = key
    if isinstance(value, list):
        texts = [m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        if texts and isinstance(texts[-1], str):
            label = texts[-1]
    return key, label


def _read_parquet(data: bytes, label: str, pa, pq):
    if not data.startswith(b"PAR1"):
        raise InputError(f"{label}: not a parquet file (it is {describe(data)})")
    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        schema = pf.schema_arrow
    except Exception as exc:  # pyarrow raises several types on a damaged file
        raise InputError(f"{label}: unreadable parquet ({type(exc).__name__}: {str(exc)[:80]})") from None
    cols = list(schema.names)
    for f in schema:
        if isinstance(f.type, pa.ExtensionType):  # never let an extension type deserialise anything
            raise InputError(f"{label}: column {f.name!r} has an extension type; refusing it")
    return pf, cols


def ingest_trl(bundle: Bundle, *, tolerance: float, name: str | None = None, num_generations: int | None = None,
               reward_columns: list[str] | None = None, reward_weights: list[float] | None = None) -> RunRecord:
    names = bundle.names()
    if bundle.single:  # one file: a completions parquet or a trainer_state.json, decided by content
        kind = describe(bundle.read(names[0]))
        if kind not in ("a parquet file", "JSON"):
            raise InputError(f"{bundle.label(names[0])}: is {kind}, not a TRL completions parquet "
                             "or trainer_state.json")
        parquets, states = (names, []) if kind == "a parquet file" else ([], names)
    else:
        parquets = sorted((f for f in names if _COMPLETIONS.search(f)), key=lambda f: int(_COMPLETIONS.search(f).group(1)))
        states = [f for f in names if _STATE.search(f)]
    if not parquets and not states:
        found = ", ".join(sorted(names)[:4]) or "nothing"
        hint = ""
        if any(re.search(r"(?:^|/)\d+\.jsonl$", f) for f in names):
            hint = "; it looks like a verl rollout dump: use --format verl"
        elif any(f.endswith(".jsonl") for f in names):
            hint = "; for JSONL groups use --format jsonl"
        raise InputError(f"{bundle.origin}: not a TRL output folder (no completions/completions_*.parquet "
                         f"or trainer_state.json; found {found}){hint}")
    # prefer output_dir/trainer_state.json, else the newest checkpoint's
    state_file = None
    if states:
        top = [f for f in states if "/" not in f]
        state_file = top[0] if top else max(states, key=lambda f: int(_STATE.search(f).group(1) or -1))
    scalars, info = ({}, {})
    if state_file:
        scalars, info = read_trainer_state(bundle.read(state_file), bundle.label(state_file))
    logged_funcs = sorted({m.group(1) for row in scalars.values() for k in row if (m := _REWARD_KEY.match(k))})

    table = GroupTable()
    G_used = None
    columns_used: list[str] = []
    if parquets:
        pa, pq = _pyarrow()
        blocks = []  # (label, step array, prompt keys, labels, rewards, advantages)
        for f in parquets:
            label = bundle.label(f)
            data = bundle.read(f)
            pf, cols = _read_parquet(data, label, pa, pq)
            for need in ("step", "prompt"):
                if need not in cols:
                    raise InputError(f"{label}: missing column {need!r} (TRL completion logs have step, prompt, "
                                     f"completion, one column per reward function, advantage)")
            if reward_columns:
                rcols = list(reward_columns)
            elif logged_funcs and all(c in cols for c in logged_funcs):
                rcols = logged_funcs
            else:
                rcols = [c for c, t in zip(schema_names(pf), schema_types(pf))
                         if c not in ("step", "advantage") and (pa.types.is_floating(t) or pa.types.is_integer(t)
                                                               or pa.types.is_boolean(t))]
            lacking = [c for c in rcols if c not in cols]
            if lacking:
                raise InputError(f"{label}: missing reward column {lacking[0]!r} (columns: {', '.join(cols)})")
            if not rcols:
                raise InputError(f"{label}: no reward columns (numeric columns besides step and advantage)")
            if columns_used and rcols != columns_used:
                raise InputError(f"{label}: reward columns {rcols} differ from the other files' {columns_used}")
            columns_used = rcols
            wanted = ["step", "prompt", *rcols] + (["advantage"] if "advantage" in cols else [])
            try:
                tab = pf.read(columns=wanted)
            except Exception as exc:
                raise InputError(f"{label}: unreadable parquet ({type(exc).__name__}: {str(exc)[:80]})") from None
            blocks.append((label, tab, rcols))
        weights = np.ones(len(columns_used)) if reward_weights is None else np.asarray(reward_weights, float)
        if weights.shape != (len(columns_used),):
            raise InputError(f"--reward-weights gives {weights.size} weights for {len(columns_used)} reward columns "
                             f"({', '.join(columns_used)})")
        parsed = []
        for label, tab, rcols in blocks:
            steps = _numeric(tab, "step", label, pa, integer=True)
            keys_labels = [_prompt_key(v) for v in tab.column("prompt").to_pylist()]
            per_func = np.column_stack([_numeric(tab, c, label, pa) for c in rcols]) if len(tab) else \
                np.zeros((0, len(rcols)))
            unscorable = np.isnan(per_func).all(axis=1)
            total = np.nansum(per_func * weights, axis=1)
            total[unscorable] = np.nan
            adv = _numeric(tab, "advantage", label, pa) if "advantage" in tab.column_names else None
            parsed.append((label, steps, keys_labels, total, adv))
        G = num_generations
        if G is None:
            runs = [r for _, _, kl, _, _ in parsed for r in _run_lengths([k for k, _ in kl])]
            G = reduce(math.gcd, runs) if runs else 0
            if G < 2:
                raise InputError(f"{bundle.origin}: cannot infer num_generations from runs of equal prompts "
                                 f"(lengths {sorted(set(runs))[:6]}); pass --num-generations")
        G_used = G
        for label, steps, keys_labels, total, adv in parsed:
            n = len(steps)
            if n % G:
                raise InputError(f"{label}: {n} rows is not a multiple of num_generations = {G}")
            for start in range(0, n, G):
                block = keys_labels[start:start + G]
                if any(k != block[0][0] for k, _ in block):
                    raise InputError(f"{label} rows {start + 1}-{start + G}: prompts differ inside a group of "
                                     f"{G} (wrong --num-generations?)")
                if np.any(steps[start:start + G] != steps[start]):
                    raise InputError(f"{label} rows {start + 1}-{start + G}: 'step' differs inside a group")
                pid = table.prompt(block[0][0], block[0][1])
                table.add(int(steps[start]), pid, total[start:start + G].tolist(),
                          None if adv is None else adv[start:start + G].tolist())
    missing = ["lengths"]
    if not parquets:
        missing += ["completions", "advantages"]
    if not state_file:
        missing.append("scalars")
    logging_steps = info.get("logging_steps")
    source = {"kind": "trl", "path": bundle.origin, "completion_files": parquets, "trainer_state": state_file,
              "reward_columns": columns_used, "reward_weights": None if reward_weights is None else list(reward_weights),
              "completions_cover": "the last generation batch before each logging step", **info}
    if parquets and isinstance(logging_steps, (int, float)) and logging_steps > 1:
        missing.append("completions between logging steps")
    return build_record(table, source=source, tolerance=tolerance, scalars=scalars, missing=missing, name=name,
                        config={"num_generations": G_used})


def schema_names(pf) -> list[str]:
    return list(pf.schema_arrow.names)


def schema_types(pf) -> list:
    return [f.type for f in pf.schema_arrow]


def _numeric(tab, col: str, label: str, pa, integer: bool = False) -> np.ndarray:
    arr = tab.column(col)
    t = arr.type
    if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_null(t)):
        raise InputError(f"{label}: column {col!r} is {t}, not numeric")
    values = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=float) if len(arr) else np.zeros(0)
    if integer:
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values)))
        if bad.size:
            raise InputError(f"{label} row {bad[0] + 1}: column {col!r} is not an integer")
        return values.astype(np.int64)
    return values


def _run_lengths(keys: list) -> list[int]:
    runs, prev, count = [], object(), 0
    for k in keys:
        if k == prev:
            count += 1
        else:
            if count:
                runs.append(count)
            prev, count = k, 1
    if count:
        runs.append(count)
    return runs
