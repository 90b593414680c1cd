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
``rewards/<name>/mean`` keys of ``log_history`` *in the parquet's column order* (which
is ``reward_funcs`` order, the order of ``reward_weights``; trainer_state.json sorts its
keys), else every numeric column other than ``step`` and ``advantage``. Weights may also
be given by name.

What the reader adds to a plain reading (each case is a fixture written by GRPOTrainer,
tests/fixtures/ingest/trl_matrix):

- a file equal to the previous one in every column but ``step`` is the same generation
  batch re-logged (``steps_per_generation`` > ``gradient_accumulation_steps``, or
  ``num_iterations`` > 1): its groups are counted once, at the first step;
- ``scale_rewards`` is read back from the advantages (:mod:`.trl_checks`); advantages that
  no scaling reproduces mean the weights are not the trainer's (a warning);
- where ``trainer_state.json`` disagrees with the files (rewards logged at a step without a
  file, files at steps it does not log, a logged ``reward`` the completions do not give back)
  the record carries a warning; what the folder cannot tell (batches between logging steps,
  re-logged batches) is a note.
"""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .common import Bundle, check_group, describe, intern_codes, numeric_scalars, outcome_summary, prompt_label, record_from_arrays
from .common import steps_phrase as _steps_phrase
from .trl_checks import SCALE_MODES, nanstd, scale_modes_matching

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


def _reward_columns(cols: list[str], types: list, logged_funcs: set[str], reward_columns, pa) -> tuple[list[str], str]:
    """The reward-function columns of one parquet, in reward_funcs order, and how they were found.

    TRL writes one column per reward function in ``reward_funcs`` order (``**self._logs["rewards"]``
    is filled in ``reward_func_names`` order), so the parquet's column order *is* the order of
    ``reward_weights``; trainer_state.json sorts its keys, so ``rewards/<f>/mean`` gives only the set.
    """
    if reward_columns:
        return list(reward_columns), "given (--reward-columns)"
    if logged_funcs and logged_funcs <= set(cols):
        return [c for c in cols if c in logged_funcs], "named by rewards/<f>/mean in trainer_state.json, in parquet order"
    numeric = [c for c, t in zip(cols, types) if c not in ("step", "advantage") and
               (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or pa.types.is_null(t))]
    return numeric, "every numeric column besides step and advantage (no trainer_state.json names them)"


def _weights(reward_weights, columns: list[str]) -> np.ndarray:
    """Weights aligned with ``columns``: a list in reward_funcs (= parquet) order, or a {name: weight} dict."""
    if reward_weights is None:
        return np.ones(len(columns))
    if isinstance(reward_weights, dict):
        unknown = sorted(set(reward_weights) - set(columns))
        if unknown:
            raise InputError(f"--reward-weights names {unknown[0]!r}, which is not a reward column "
                             f"({', '.join(columns)})")
        return np.asarray([float(reward_weights.get(c, 1.0)) for c in columns])
    weights = np.asarray(reward_weights, float)
    if weights.shape != (len(columns),):
        raise InputError(f"--reward-weights gives {weights.size} weights for {len(columns)} reward columns "
                         f"({', '.join(columns)}; give them in reward_funcs order, or as name=weight)")
    return weights


def ingest_trl(bundle: Bundle, *, tolerance: float, name: str | None = None, num_generations: int | None = None,
               reward_columns: list[str] | None = None, reward_weights=None) -> RunRecord:
    """A run record from a TRL output folder, in four stages: :func:`_find_files` and :func:`_read_batches`
    (read each completions file once, a re-logged batch skipped, each batch cut into groups by
    :func:`_group_batch`), :func:`_check` (what the files cannot tell, and where they disagree with
    trainer_state.json), :func:`_build` (the arrays, the reward definitions, the provenance)."""
    parquets, state_file = _find_files(bundle)
    scalars, info = read_trainer_state(bundle.read(state_file), bundle.label(state_file)) if state_file else ({}, {})
    logged_funcs = {m.group(1) for row in scalars.values() for k in row if (m := _REWARD_KEY.match(k))}
    batches = _Batches()
    if parquets:
        _read_batches(bundle, parquets, batches, logged_funcs=logged_funcs, num_generations=num_generations,
                      reward_columns=reward_columns, reward_weights=reward_weights)
    scale_rewards = _check(batches, parquets, state_file, scalars, info)
    return _build(bundle, batches, parquets, state_file, scalars, info, scale_rewards, tolerance=tolerance,
                  name=name, num_generations=num_generations)


def _find_files(bundle: Bundle) -> tuple[list[str], str | None]:
    """The completions parquets in step order and the trainer_state.json to read (the output folder's, else the
    newest checkpoint's); one clear error when the folder holds neither."""
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
    state_file = None
    if states:
        top = [f for f in states if "/" not in f]
        state_file = top[0] if top else max(states, key=lambda f: int(_STATE.search(f).group(1) or -1))
    return parquets, state_file


@dataclass
class _Batches:
    """What reading the completions files gathered: one entry of ``parts`` per new generation batch (group steps,
    prompt codes, total rewards, advantages or None, per-function rewards), and what was learnt on the way."""

    parts: list[tuple] = field(default_factory=list)
    prompt_index: dict = field(default_factory=dict)
    prompt_texts: list[str] = field(default_factory=list)
    G: int | None = None
    columns: list[str] = field(default_factory=list)
    how_columns: str | None = None
    weights: np.ndarray | None = None
    scale_sets: list[set] = field(default_factory=list)
    logged_at: dict[int, int] = field(default_factory=dict)  #: parquet step -> step whose batch it holds
    new_steps: list[int] = field(default_factory=list)
    recomputed: dict[int, tuple[float, float]] = field(default_factory=dict)  #: step -> (reward mean, zero-std share)
    skipped: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warns: list[str] = field(default_factory=list)
    inferred: dict = field(default_factory=dict)


def _read_batches(bundle: Bundle, parquets: list[str], out: _Batches, *, logged_funcs: set[str],
                  num_generations: int | None, reward_columns, reward_weights) -> None:
    """Read each completions file (one file and the previous batch in memory at a time) into ``out``: its reward
    columns and weights, its step, and its groups unless it re-logs the previous batch."""
    pa, pq = _pyarrow()
    previous = None  # (step, table without 'step', its ParquetFile) of the last new batch
    for f in parquets:
        label = bundle.label(f)
        data = bundle.read(f, cache=False)
        pf, cols = _read_parquet(data, label, pa, pq)
        for need in ("step", "prompt"):
            if need not in cols:
                raise InputError(f"{label}: missing column {need!r} (TRL completion logs have step, prompt, "
                                 f"completion, one column per reward function, advantage)")
        rcols, how = _reward_columns(cols, schema_types(pf), logged_funcs, reward_columns, pa)
        lacking = [c for c in rcols if c not in cols]
        if lacking:
            raise InputError(f"{label}: missing reward column {lacking[0]!r} (columns: {', '.join(cols)})")
        if not rcols:
            raise InputError(f"{label}: no reward columns (numeric columns besides step and advantage)")
        if out.columns and rcols != out.columns:
            raise InputError(f"{label}: reward columns {rcols} differ from the other files' {out.columns}")
        if out.weights is None:
            out.weights = _weights(reward_weights, rcols)
        out.columns, out.how_columns = rcols, how
        wanted = ["step", "prompt", *rcols] + (["advantage"] if "advantage" in cols else [])
        tab = _read_columns(pf, wanted, label)
        steps = _numeric(tab, "step", label, pa, integer=True)
        if len(steps) and np.any(steps != steps[0]):
            raise InputError(f"{label}: 'step' differs between rows (TRL writes one step per file)")
        step = int(steps[0]) if len(steps) else int(_COMPLETIONS.search(f).group(1)) if _COMPLETIONS.search(f) else 0
        body = tab.drop_columns(["step"])
        # TRL writes the last generation batch at every logging step; with steps_per_generation >
        # gradient_accumulation_steps or num_iterations > 1 one batch serves several steps and is
        # written again, unchanged: count it once, at the first step that logged it
        if previous is not None and previous[1].num_rows == body.num_rows and previous[1].equals(body) \
                and _same_completions(previous[2], pf, label):
            out.logged_at[step] = previous[0]
            out.skipped.append({"file": label, "why": f"repeats the generation batch logged at step {previous[0]}"})
            continue
        previous = (step, body, pf)
        out.logged_at[step] = step
        out.new_steps.append(step)
        _group_batch(tab, step, label, out, pa, num_generations)


def _group_batch(tab, step: int, label: str, out: _Batches, pa, num_generations: int | None) -> None:
    """Cut one new batch into groups of G consecutive rows of one prompt (G given, else the greatest common divisor
    of the runs of equal prompts), combine the reward functions as GRPOTrainer does, and recompute the step's
    reward mean and zero-std share."""
    n = tab.num_rows
    per_func = np.column_stack([_numeric(tab, c, label, pa) for c in out.columns]) if n else \
        np.zeros((0, len(out.columns)))
    unscorable = np.isnan(per_func).all(axis=1)
    total = np.nansum(per_func * out.weights, axis=1)
    total[unscorable] = np.nan
    adv = _numeric(tab, "advantage", label, pa) if "advantage" in tab.column_names else None
    codes = _prompt_codes(tab.column("prompt"), out.prompt_index, out.prompt_texts, pa)
    runs = np.diff(np.flatnonzero(np.diff(codes, prepend=-1, append=-1) != 0)) if n else np.zeros(0, int)
    g_seen = int(np.gcd.reduce(runs)) if len(runs) else 0
    G = num_generations
    if G is None:
        G = g_seen
        if G < 2:
            raise InputError(f"{label}: cannot infer num_generations from runs of equal prompts "
                             f"(lengths {sorted(set(runs.tolist()))[:6]}); pass --num-generations")
    elif out.G is None and g_seen != G and g_seen % G == 0:
        out.warns.append(f"num_generations {G} was given, but the prompts of {label} repeat in runs of "
                         f"{g_seen}: groups of {G} split TRL's groups")
    if out.G is not None and G != out.G:
        out.warns.append(f"{label}: prompts repeat in runs of {G}, the earlier files in runs of {out.G} "
                         f"(files from different runs?); num_generations {out.G} kept")
        G = out.G
    check_group(G, label)
    out.G = G
    if n % G:
        raise InputError(f"{label}: {n} rows is not a multiple of num_generations = {G}")
    blocks = codes.reshape(-1, G)
    bad = np.flatnonzero((blocks != blocks[:, :1]).any(axis=1))
    if bad.size:
        start = int(bad[0]) * G
        raise InputError(f"{label} rows {start + 1}-{start + G}: prompts differ inside a group of "
                         f"{G} (wrong --num-generations?)")
    grouped = total.reshape(-1, G)
    out.parts.append((np.full(len(blocks), step, np.int64), blocks[:, 0], grouped,
                      None if adv is None else adv.reshape(-1, G), per_func.reshape(-1, G, len(out.columns))))
    if adv is not None and n:
        out.scale_sets.append(scale_modes_matching(total, adv, G))
    zero = np.isclose(nanstd(grouped, axis=1), 0.0, atol=1e-8)
    with np.errstate(invalid="ignore"):
        out.recomputed[step] = (float(np.nanmean(total)) if n and not np.isnan(total).all() else math.nan,
                                float(np.mean(zero)) if n else math.nan)


def _check(b: _Batches, parquets: list[str], state_file: str | None, scalars: dict, info: dict) -> str | None:
    """What the files could not tell, and where they disagree with trainer_state.json: notes and warnings added to
    ``b``; returns ``scale_rewards`` when the logged advantages single it out."""
    logging_steps = info.get("logging_steps")
    notes, warns = b.notes, b.warns
    scale_rewards = None
    if b.scale_sets:
        common = set.intersection(*b.scale_sets)
        if not common:
            warns.append(f"the advantages TRL logged are not reproduced by the rewards "
                         f"{' + '.join(f'{w:g}*{c}' for w, c in zip(b.weights, b.columns))} under any scale_rewards: "
                         "the reward weights (--reward-weights, in reward_funcs order or as name=weight) or the "
                         "reward columns are not the trainer's, or multi_objective_aggregation is not "
                         "sum_then_normalize")
        elif len(common) < len(SCALE_MODES):
            scale_rewards = sorted(common)[0] if len(common) == 1 else None
            b.inferred["scale_rewards"] = {"value": sorted(common), "how": "reproduces the logged advantages"}
    gen_steps = sorted(s for s, row in scalars.items() if "reward" in row)  # steps whose log saw a generation
    if parquets:
        repeats = sorted(s for s, first in b.logged_at.items() if first != s)
        if repeats:
            notes.append(f"{_steps_phrase(repeats)} re-logged the generation batch of an earlier step "
                         "(one batch serves several optimizer steps: steps_per_generation > "
                         "gradient_accumulation_steps or num_iterations > 1); each group is counted once, at the "
                         "first step that logged it")
        if state_file:
            no_file = [s for s in gen_steps if s not in b.logged_at]
            if no_file:
                warns.append(f"trainer_state.json logs rewards at {_steps_phrase(no_file)} but there is no "
                             "completions_*.parquet for them (files missing, or log_completions was off then)")
            unknown = [s for s in b.logged_at if s not in scalars]
            if unknown:
                warns.append(f"completions at {_steps_phrase(unknown)} have no entry in trainer_state.json's "
                             "log_history (files of another run, or an older trainer_state.json)")
            if isinstance(logging_steps, (int, float)) and logging_steps > 1:
                notes.append(f"logging_steps = {int(logging_steps)}: TRL writes completions only at logging steps "
                             "(the last generation batch), so the groups generated at the steps in between are not "
                             "in the folder; each log's scalars average every generation batch since the previous "
                             "log, the record's recomputed figures only the logged batch")
            else:
                _check_logged_reward(b, scalars)
    else:
        notes.append("no completion logs (log_completions was off): the record has TRL's logged scalars only, "
                     "no groups")
    if scale_rewards == "batch":
        notes.append("scale_rewards = batch: TRL's frac_reward_zero_std is the share of generation batches whose "
                     "whole-batch reward std is 0, not a share of groups; the record's frac_reward_zero_std "
                     "(recomputed per group) is not comparable with it")
    return scale_rewards


def _check_logged_reward(b: _Batches, scalars: dict) -> None:
    """A warning where the reward trainer_state.json logs at a step is not the mean of that step's completions."""
    off = []
    for s in b.new_steps:
        row = scalars.get(s, {})
        mine = b.recomputed.get(s, (math.nan, math.nan))
        if "reward" in row and np.isfinite(mine[0]) and not math.isclose(row["reward"], mine[0],
                                                                        rel_tol=1e-4, abs_tol=1e-5):
            off.append((s, row["reward"], mine[0]))
    if off:
        s0, a, c = off[0]
        b.warns.append(f"at {_steps_phrase([o[0] for o in off])} the reward trainer_state.json logs "
                       f"differs from the mean of the logged completions (step {s0}: {a:.4g} logged, "
                       f"{c:.4g} from the completions): the completion files hold only part of what "
                       "those logs cover (several generation batches per optimizer step, whose earlier "
                       "batches TRL does not write), or they come from another run, or the reward "
                       "weights are not the trainer's")


def _build(bundle: Bundle, b: _Batches, parquets: list[str], state_file: str | None, scalars: dict, info: dict,
           scale_rewards: str | None, *, tolerance: float, name: str | None, num_generations: int | None) -> RunRecord:
    """The record: the groups' arrays, what is missing, the reward's definition and its alternatives (each reward
    function alone, and a correctness function kept per rollout for the doctor's audit), the provenance."""
    logging_steps = info.get("logging_steps")
    parts, columns, weights = b.parts, b.columns, b.weights
    missing = ["lengths"]
    if not parquets:
        missing += ["completions", "advantages"]
    if not state_file:
        missing.append("scalars")
    if parquets and isinstance(logging_steps, (int, float)) and logging_steps > 1:
        missing.append("completions between logging steps")
    if b.G:
        b.inferred["num_generations"] = {"value": b.G, "how": "given" if num_generations else
                                         "greatest common divisor of the runs of equal consecutive prompts"}
    if columns:
        b.inferred["reward_columns"] = {"value": columns, "how": b.how_columns}
    reward_info = {
        "classified": "training reward" if parquets else None,
        "definition": (" + ".join(f"{w:g} * {c}" for w, c in zip(weights, columns)) + " (nansum; NaN when every "
                       "function returned None), as GRPOTrainer combines them") if parquets else None,
        "alternatives": {f"reward function {c!r} alone": outcome_summary(
            np.concatenate([p[4][:, :, j] for p in parts]), tolerance) for j, c in enumerate(columns)}
        if parts else {},
    }
    source = {"kind": "trl", "path": bundle.origin, "completion_files": parquets, "trainer_state": state_file,
              "reward_columns": columns,
              "reward_weights": None if weights is None else [float(w) for w in weights],
              "scale_rewards": scale_rewards,
              "completions_cover": "the last generation batch before each logging step, each batch counted once",
              **info}
    G = b.G or 0
    n_groups = sum(len(p[0]) for p in parts)
    has_adv = bool(parts) and all(p[3] is not None for p in parts)
    groups = {
        "step": np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64),
        "prompt_id": np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64),
        "rewards": np.concatenate([p[2] for p in parts]) if parts else np.zeros((0, 0)),
        "advantages": np.concatenate([p[3] if p[3] is not None else np.full(p[2].shape, np.nan) for p in parts])
        if parts else np.zeros((0, 0)),
        "lengths": np.full((n_groups, G), -1, np.int64),
        "kept": np.ones(n_groups, bool),
    }
    if parts and not has_adv:
        missing.append("advantages")
    correct = [j for j, c in enumerate(columns) if re.search(r"correct|acc", c, re.I)] if len(columns) > 1 else []
    if parts and correct:  # a correctness function beside others: kept per rollout for the doctor's audit
        groups["correctness"] = np.concatenate([p[4][:, :, correct[0]] for p in parts])
        reward_info["correctness"] = f"reward function {columns[correct[0]]!r} alone"
    rec = record_from_arrays(groups, [prompt_label(t) for t in b.prompt_texts], source=source, tolerance=tolerance,
                             scalars=scalars, missing=missing, name=name, config={"num_generations": b.G})
    rec.meta["reward"] = reward_info
    rec.meta["notes"] = b.notes
    rec.meta["warnings"] = b.warns
    rec.meta["ingest"] = {"read": [bundle.label(f) for f in ([state_file] if state_file else []) + parquets
                                   if bundle.label(f) not in {s["file"] for s in b.skipped}],
                          "skipped": b.skipped, "inferred": b.inferred}
    return rec


def _read_columns(pf, columns: list[str], label: str):
    try:
        return pf.read(columns=columns)
    except Exception as exc:  # pyarrow raises several types on a damaged file
        raise InputError(f"{label}: unreadable parquet ({type(exc).__name__}: {str(exc)[:80]})") from None


def _same_completions(previous_pf, pf, label: str) -> bool:
    """Whether two files' ``completion`` columns are equal (read only once the cheap columns matched)."""
    if "completion" not in pf.schema_arrow.names or "completion" not in previous_pf.schema_arrow.names:
        return True
    return _read_columns(previous_pf, ["completion"], label).equals(_read_columns(pf, ["completion"], label))


def _prompt_codes(column, index: dict, texts: list, pa) -> np.ndarray:
    """Integer codes of a prompt column, interned in ``index`` (key -> code) / ``texts`` (labels) in order.

    Text prompts go through pyarrow's dictionary encoding (one Python step per distinct prompt);
    conversational prompts (lists of messages) are keyed by their JSON text, labelled by the last user turn.
    """
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        enc = column.combine_chunks().dictionary_encode()
        local = intern_codes(enc.dictionary.to_pylist(), index, texts)
        if enc.null_count:
            raise InputError("a completions parquet has an empty prompt")
        return local[enc.indices.to_numpy(zero_copy_only=False)] if len(enc) else np.zeros(0, np.int64)
    pairs = [_prompt_key(v) for v in column.to_pylist()]
    return intern_codes([k for k, _ in pairs], index, texts, shown=[label for _, label in pairs])


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
