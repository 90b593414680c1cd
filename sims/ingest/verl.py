r"""verl: rollout dumps (``trainer.rollout_data_dir``) and the ``file`` logger's scalar JSONL.

Rollout dumps, as ``RayPPOTrainer._dump_generations`` writes them
(``verl/trainer/ppo/ray_trainer.py``): one file ``{rollout_data_dir}/{global_steps}.jsonl``
per training step, one line per completion with

``input``   the prompt, ``tokenizer.batch_decode(batch.batch["prompts"], skip_special_tokens=True)``
``output``  the completion text
``score``   the sequence reward, ``token_level_scores.sum(-1)``
``step``    ``global_steps``
``gts``     the ground truth (newer versions), plus every ``reward_extra_info`` list of the
            reward function (e.g. ``acc``) and sometimes ``request_id``

There is no group id, and ``balance_batch`` reorders rows before the dump, so
groups are rebuilt by prompt text within a step: the rows of one step with the
same ``input`` are the ``rollout.n`` samples of that prompt. If a prompt was
drawn k times in one batch its rows number k * n and are split, in file order,
into k groups of n (which rows belonged together is not recorded by verl, so
such groups are approximate). ``n`` is ``--num-generations`` or, by default,
the greatest common divisor of those row counts.

Scalars: verl's ``file`` logger backend (``trainer.logger=[...,file]``, path in
``VERL_FILE_LOGGER_PATH``) writes one line per step, ``{"step": N, "data": {...}}``
with the trainer's metrics (``critic/score/mean``, ``actor/kl_loss``, timings...);
they become ``scalar/<name>``. It is found as a ``.jsonl`` file in the given folder
whose name is not a step number, or given with ``scalars=``.
"""

from __future__ import annotations

import math
import re
from functools import reduce

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .common import (Bundle, GroupTable, build_record, format_hint, iter_json_lines, numeric_scalars,
                     outcome_summary as _outcome_summary, steps_phrase as _steps_phrase)

__all__ = ["ingest_verl"]

_STEP_FILE = re.compile(r"(?:^|/)(\d+)\.jsonl$")


def _parse_scalars(data: bytes, label: str, scalars: dict[int, dict]) -> None:
    for n, obj in iter_json_lines(data, label):
        step, row = obj.get("step"), obj.get("data")
        if not isinstance(step, int) or isinstance(step, bool) or not isinstance(row, dict):
            raise InputError(f"{label} line {n}: expected {{\"step\": N, \"data\": {{...}}}} "
                             f"(verl's file logger){format_hint(obj, 'verl')}")
        scalars.setdefault(step, {}).update(numeric_scalars(row))


def _is_scalar_log(data: bytes) -> bool:
    first = data.lstrip()[:1]
    if first != b"{":
        return False
    line = data.lstrip().split(b"\n", 1)[0]
    return b'"data"' in line and b'"input"' not in line


_TENSOR_TEXT = re.compile(r"^tensor\((-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|True|False)\.?\)$")


def _number(value, key: str, where: str) -> float:
    """A per-row value as a float: a number, a boolean, None (NaN), or the text of a 0-d torch tensor.

    Older verl trainers passed the reward manager's lists of 0-d tensors to the dump, which
    ``json.dumps(..., default=str)`` writes as ``"tensor(-0.2500)"`` / ``"tensor(True)"``.
    """
    if value is None:
        return math.nan
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str) and (m := _TENSOR_TEXT.match(value.strip())):
        text = m.group(1)
        return 1.0 if text == "True" else 0.0 if text == "False" else float(text)
    raise InputError(f"{where}: {key!r} must be a number, got {str(value)[:40]!r}")


#: the reward the record classifies by default: the one GRPO's advantages were computed from
TRAINING = "training"


def _rewards(cols: dict[str, list], reward_key: str | None) -> tuple[list[float], dict, dict[str, list[float]], list[str]]:
    """(rewards to classify, description, every reward on offer, notes) from the dump's per-row columns.

    verl's dump writes ``score`` = ``token_level_scores.sum(-1)`` (the reward that trains), then
    *overwrites* it with any ``score`` key of the reward function's extra info. So:

    - naive manager, or any scorer returning a number: ``score`` is the training reward;
    - DAPO manager with the overlong penalty logged (``overlong_reward`` present):
      a scorer returning a dict puts its own ``score`` (before the penalty) in the dump, and the
      training reward is ``score + overlong_reward``; a scorer returning a number leaves the
      penalised reward in ``score`` and its own value in ``acc`` (``score == acc + overlong_reward``).
    """
    score, acc, over = cols.get("score"), cols.get("acc"), cols.get("overlong_reward")
    offer: dict[str, list[float]] = {}
    notes: list[str] = []
    training_def = "score (token_level_scores summed; no overlong_reward in the dump)"
    training = score
    if over is not None and score is not None:
        s, o = np.asarray(score), np.asarray(over)
        penalised = bool(np.any(o != 0))
        if acc is not None and penalised and np.allclose(np.asarray(acc) + o, s, atol=1e-5, equal_nan=True):
            training_def = "score (the scorer returned a number: score already includes overlong_reward)"
            offer["correctness score (acc)"] = acc
        else:
            training = (s + o).tolist()
            training_def = "score + overlong_reward (the scorer returned a dict: the dump's score is its own, " \
                           "before DAPO's overlong penalty)"
            offer["correctness score (score)"] = score
            if acc is not None:
                offer["acc"] = acc
    elif acc is not None:
        offer["acc"] = acc
        notes.append("no overlong_reward in the dump: score is taken as the training reward (if DAPO's overlong "
                     "penalty was on with overlong_buffer.log = false, the training reward is not in the dump)")
    if training is not None:
        offer = {f"training reward ({training_def.split(' (')[0]})": training, **offer}
    if reward_key in (None, TRAINING):
        if training is None:
            raise InputError("the rollout dump has no 'score' key; pass --reward-key")
        return training, {"classified": "training reward", "key": TRAINING, "definition": training_def}, offer, notes
    chosen = cols.get(reward_key)
    kind = "correctness score" if reward_key == "acc" or (reward_key == "score" and training is not score) \
        else "training reward" if reward_key == "score" else f"the dump's {reward_key!r}"
    return chosen, {"classified": kind, "key": reward_key, "definition": f"the dump's {reward_key!r} per row",
                    "training_reward": training_def}, offer, notes


def ingest_verl(bundle: Bundle, *, tolerance: float, name: str | None = None, num_generations: int | None = None,
                reward_key: str | None = None, scalars_path: str | None = None, scalars_bundle: Bundle | None = None
                ) -> RunRecord:
    names = bundle.names()
    dumps = sorted((f for f in names if _STEP_FILE.search(f)), key=lambda f: int(_STEP_FILE.search(f).group(1)))
    others = [f for f in names if f.endswith(".jsonl") and f not in dumps]
    if bundle.single and not dumps:
        others, dumps = [], names  # a single file given directly: decide by content below
    scalars: dict[int, dict] = {}
    if scalars_bundle is not None:
        for f in scalars_bundle.names():
            _parse_scalars(scalars_bundle.read(f), scalars_bundle.label(f), scalars)
    scalar_files = []
    for f in others:
        data = bundle.read(f)
        if _is_scalar_log(data):
            _parse_scalars(data, bundle.label(f), scalars)
            scalar_files.append(f)
    keys = tuple(dict.fromkeys(("score", "acc", "overlong_reward") +
                               ((reward_key,) if reward_key not in (None, TRAINING) else ())))
    need = reward_key if reward_key not in (None, TRAINING) else "score"
    row_step: list[int] = []
    row_text: list[str] = []
    cols: dict[str, list] = {}
    dump_files = []
    for f in dumps:
        data = bundle.read(f, cache=False)
        label = bundle.label(f)
        if bundle.single and _is_scalar_log(data):
            _parse_scalars(data, label, scalars)
            scalar_files.append(f)
            continue
        dump_files.append(f)
        for n, obj in iter_json_lines(data, label):
            lacking = [k for k in ("input", need, "step") if k not in obj]
            if lacking:
                raise InputError(f"{label} line {n}: missing {', '.join(repr(k) for k in lacking)} "
                                 f"(a verl rollout dump line has input, output, score, step){format_hint(obj, 'verl')}")
            step, text = obj["step"], obj["input"]
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                raise InputError(f"{label} line {n}: 'step' must be an integer >= 0, got {step!r}")
            if not isinstance(text, str):
                raise InputError(f"{label} line {n}: 'input' must be the prompt text")
            row_step.append(step)
            row_text.append(text)
            i = len(row_step) - 1
            for k in keys:
                if k in obj:
                    col = cols.get(k)
                    if col is None:
                        col = cols[k] = [math.nan] * i
                    elif len(col) < i:
                        col.extend([math.nan] * (i - len(col)))
                    col.append(_number(obj[k], k, f"{label} line {n}"))
        for col in cols.values():  # rows without a key read as NaN
            col.extend([math.nan] * (len(row_step) - len(col)))
    if not row_step and not scalars:
        raise InputError(f"{bundle.origin}: no verl rollout dumps ({{step}}.jsonl) or file-logger scalars found")
    notes: list[str] = []
    warns: list[str] = []
    reward_info: dict = {"classified": None}
    table = GroupTable()
    G = num_generations
    alternatives: dict = {}
    ambiguous = uncertain = 0
    ambiguous_at: list[tuple[int, str]] = []
    if row_step:
        classified, reward_info, offer, more = _rewards(cols, reward_key)
        notes += more
        if classified is None:
            raise InputError(f"{bundle.origin}: no {reward_key!r} key in the rollout dump")
        buckets: dict[tuple[int, str], list[int]] = {}
        for i, key in enumerate(zip(row_step, row_text)):
            b = buckets.get(key)
            if b is None:
                buckets[key] = [i]
            else:
                b.append(i)
        counts = [len(v) for v in buckets.values()]
        if G is None:
            G = reduce(math.gcd, counts)
            if G < 2:
                raise InputError(f"{bundle.origin}: cannot infer the group size (rows per prompt per step: "
                                 f"{sorted(set(counts))[:6]}); pass --num-generations (verl's rollout.n)")
        bad = next(((k, c) for k, c in zip(buckets, counts) if c % G), None)
        if bad:
            (step, text), c = bad
            raise InputError(f"{bundle.origin}: step {step} has {c} rows for prompt {text[:60]!r}, "
                             f"not a multiple of the group size {G}")
        r = np.asarray(classified, float)
        alt_rows = {k: np.asarray(v, float) for k, v in offer.items()}
        alt_groups: dict[str, list] = {k: [] for k in alt_rows}
        for key in sorted(buckets, key=lambda k: k[0]):
            step, text = key
            pid = table.prompt(text, text)
            idx = buckets[key]
            if len(idx) > G:
                k = len(idx) // G
                ambiguous += k
                ambiguous_at.append(key)
                pooled = r[idx]
                if np.nanmax(pooled) - np.nanmin(pooled) > tolerance:
                    uncertain += k
            for j in range(0, len(idx), G):
                part = idx[j:j + G]
                table.add(step, pid, r[part].tolist())
                for a, vals in alt_rows.items():
                    alt_groups[a].append(vals[part])
        alternatives = {a: _outcome_summary(np.array(v), tolerance) for a, v in alt_groups.items()}
        if ambiguous:
            where = ", ".join(f"step {s} {t[:30]!r}" for s, t in ambiguous_at[:3])
            notes.append(f"{ambiguous} groups share their prompt text with another group of the same step ({where}"
                         f"{', ...' if len(ambiguous_at) > 3 else ''}): verl's dump has no group id and balance_batch "
                         "reorders rows, so which rollouts formed which group is unknown; they are split in file "
                         f"order. {uncertain} of them could be degenerate or not depending on the split, so the "
                         "degenerate shares are uncertain by that many groups")
            warns.append(f"{ambiguous} ambiguous groups (the same prompt drawn twice in one step); "
                         f"{uncertain} with an uncertain outcome")
        # verl's own figure: critic/score/mean = mean of token_level_scores summed (the training reward)
        train = np.asarray(offer[next(iter(offer))], float) if offer else None
        if scalars and train is not None:
            steps_arr = np.asarray(row_step)
            off = []
            for s in sorted(set(row_step)):
                logged = scalars.get(s, {}).get("critic/score/mean")
                if logged is None:
                    continue
                mine = float(np.nanmean(train[steps_arr == s]))
                if not math.isclose(logged, mine, rel_tol=1e-4, abs_tol=1e-5):
                    off.append((s, logged, mine))
            if off:
                s0, a, b = off[0]
                warns.append(f"at {_steps_phrase([o[0] for o in off])} verl's logged critic/score/mean differs "
                             f"from the dump's training reward (step {s0}: {a:.4g} logged, {b:.4g} from the dump): the "
                             "dump's score is not what trained (e.g. an overlong penalty not logged), or the metrics "
                             "file belongs to another run")
    if scalars:
        without = sorted(s for s in scalars if s not in set(row_step))
        if without:
            val_only = [s for s in without if all(k.startswith("val-") for k in scalars[s])]
            notes.append(f"scalars but no rollouts at {_steps_phrase(without)}"
                         + (f" ({_steps_phrase(val_only)}: validation only, e.g. val_before_train)" if val_only else "")
                         + ": the record's recomputed figures are empty there")
    missing = ["advantages", "lengths"] + ([] if scalars else ["scalars"]) + ([] if row_step else ["completions"])
    source = {"kind": "verl", "path": bundle.origin, "rollout_files": dump_files, "reward_key": reward_info.get("key"),
              "scalar_files": scalar_files + ([scalars_path] if scalars_path else []),
              "grouping": "rows of one step with the same input text, split into blocks of num_generations",
              "ambiguous_groups": ambiguous, "uncertain_groups": uncertain}
    rec = build_record(table, source=source, tolerance=tolerance, scalars=scalars, missing=missing, name=name,
                       config={"num_generations": G})
    reward_info["alternatives"] = alternatives
    rec.meta["reward"] = reward_info
    rec.meta["notes"] = notes
    rec.meta["warnings"] = warns
    rec.meta["ingest"] = {"read": [bundle.label(f) for f in dump_files + scalar_files] + ([scalars_path] if scalars_path else []),
                          "skipped": [{"file": bundle.label(f), "why": "not a rollout dump or a file-logger log"}
                                      for f in others if f not in scalar_files],
                          "inferred": {"num_generations": {"value": G, "how": "given" if num_generations else
                                                           "greatest common divisor of rows per prompt per step"},
                                       "reward": reward_info.get("definition")}}
    return rec
