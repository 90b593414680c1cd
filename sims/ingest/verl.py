r"""verl: rollout dumps (``trainer.rollout_data_dir``) and the ``file`` logger's scalar JSONL.

Rollout dumps, as ``RayPPOTrainer._dump_generations`` writes them
(``verl/trainer/ppo/ray_trainer.py``): one file ``{rollout_data_dir}/{global_steps}.jsonl``
per training step, one line per completion with

``input``   the prompt, ``tokenizer.batch_decode(batch.batch["prompts"], skip_special_tokens=True)``
``output``  the completion text
``score``   ``token_level_scores.sum(-1)``, *overwritten* by a ``score`` key of the reward
            extra info (DAPO's dict scorers): see :func:`_rewards` for which reward it then is
``step``    ``global_steps``
``gts``     the ground truth (newer versions), plus every ``reward_extra_info`` list of the
            reward function (e.g. ``acc``) and sometimes ``request_id``

There is no group id, and ``balance_batch`` reorders rows before the dump, so
groups are rebuilt by prompt text within a step: the rows of one step with the
same ``input`` are the ``rollout.n`` samples of that prompt. If a prompt was
drawn k times in one batch its rows number k * n and are split, in file order,
into k groups of n (which rows belonged together is not recorded by verl, so
such groups are ambiguous: counted in ``source.ambiguous_groups``, with a note).
``n`` is ``--num-generations`` or, by default, the greatest common divisor of
those row counts. Rows are read by :mod:`.verl_rows` and grouped by
:mod:`.grouping` with numpy; the record classifies the training reward unless
``reward_key`` names a dump key, and offers the others (``meta["reward"]``).

Scalars: verl's ``file`` logger backend (``trainer.logger=[...,file]``, path in
``VERL_FILE_LOGGER_PATH``) writes one line per step, ``{"step": N, "data": {...}}``
with the trainer's metrics (``critic/score/mean``, ``actor/kl_loss``, timings...);
they become ``scalar/<name>``. It is found as a ``.jsonl`` file in the given folder
whose name is not a step number, or given with ``scalars=``.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .common import iter_json_lines, format_hint, numeric_scalars, outcome_summary, prompt_label, record_from_arrays
from .common import Bundle, check_group
from .common import steps_phrase as _steps_phrase
from .grouping import group_rows
from .parallel import map_files
from .prompts import PromptIndex
from .verl_rows import parse_dump

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


#: the reward the record classifies by default: the one GRPO's advantages were computed from
TRAINING = "training"


def _rewards(cols: dict[str, np.ndarray], reward_key: str | None
             ) -> tuple[np.ndarray | None, dict, dict[str, np.ndarray], list[str]]:
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
    offer: dict[str, np.ndarray] = {}
    notes: list[str] = []
    training_def = "score (token_level_scores summed; no overlong_reward in the dump)"
    training = score
    if over is not None and score is not None:
        s, o = score, np.nan_to_num(over, nan=0.0)
        penalised = bool(np.any(o != 0))
        if acc is not None and penalised and np.allclose(acc + o, s, atol=1e-5, equal_nan=True):
            training_def = "score (the scorer returned a number: score already includes overlong_reward)"
            offer["correctness score (acc)"] = acc
        else:
            training = s + o
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


def _parse_all(bundle: Bundle, dumps: list[str], keys: tuple, need: str):
    """``(rows, texts, boolean keys)`` per dump file, in order: the first file here (it tells which keys are
    JSON booleans), the rest on every core when the folder is large (:mod:`.parallel`)."""
    if not dumps:
        return
    first = parse_dump(bundle.read(dumps[0], cache=False), bundle.label(dumps[0]), keys, need)
    yield first
    yield from map_files(bundle, dumps[1:], parse_dump, (keys, need, first[2]))


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
    prompts = PromptIndex()
    parts: list = []
    dump_files = []
    if bundle.single:
        data = bundle.read(dumps[0]) if dumps else b""  # kept: _parse_all reads it from the cache
        if dumps and _is_scalar_log(data):
            _parse_scalars(data, bundle.label(dumps[0]), scalars)
            scalar_files.append(dumps[0])
            dumps = []
    for k, (rows, local, _) in enumerate(_parse_all(bundle, dumps, keys, need)):
        prompts.add(rows, local)  # rows.prompt: the file's codes, run-wide once its batch is taken
        parts.append(rows)
        dump_files.append(dumps[k])
    prompts.finish()
    n_rows = sum(len(p.step) for p in parts)
    if not n_rows and not scalars:
        raise InputError(f"{bundle.origin}: no verl rollout dumps ({{step}}.jsonl) or file-logger scalars found")
    notes: list[str] = []
    warns: list[str] = []
    reward_info: dict = {"classified": None}
    G = num_generations
    alternatives: dict = {}
    ambiguous = uncertain = 0
    row_step = np.concatenate([p.step for p in parts]) if parts else np.zeros(0, np.int64)
    group_steps = np.zeros(0, np.int64)  # the steps that have groups
    groups = None
    labels: list[str] = []
    if n_rows:
        row_prompt = np.concatenate([p.prompt for p in parts])
        cols = {k: np.concatenate([p.cols.get(k, np.full(len(p.step), np.nan)) for p in parts])
                for k in keys if any(k in p.cols for p in parts)}
        del parts
        classified, reward_info, offer, more = _rewards(cols, reward_key)
        notes += more
        if classified is None:
            raise InputError(f"{bundle.origin}: no {reward_key!r} key in the rollout dump")
        width = int(row_prompt.max()) + 1
        grouping = group_rows(row_step, row_prompt, G)  # G None: the gcd of the rows per (step, prompt)
        if G is None:
            G = grouping.G
            if G < 2:
                raise InputError(f"{bundle.origin}: cannot infer the group size (rows per prompt per step: "
                                 f"{sorted(set(grouping.rows_per_key.tolist()))[:6]}); pass --num-generations "
                                 "(verl's rollout.n)")
        check_group(G, bundle.origin)
        bad = np.flatnonzero(grouping.rows_per_key % G)
        if bad.size:
            k = int(bad[0])
            first_row = grouping.order[int(np.sum(grouping.rows_per_key[:k]))]
            raise InputError(f"{bundle.origin}: step {int(row_step[first_row])} has {int(grouping.rows_per_key[k])} "
                             f"rows for prompt {prompts.texts([row_prompt[first_row]])[0][:60]!r}, not a multiple of the "
                             f"group size {G}")
        rewards = np.asarray(classified, float)[grouping.order].reshape(-1, G)
        # prompts numbered in order of first appearance in the record's group order
        uniq, first = np.unique(grouping.prompt, return_index=True)
        by_first = uniq[np.argsort(first)]
        remap = np.empty(width, np.int64)
        remap[by_first] = np.arange(len(by_first))
        labels = [prompt_label(t) for t in prompts.texts(by_first)]
        n = len(rewards)
        groups = {"step": grouping.step, "prompt_id": remap[grouping.prompt], "rewards": rewards,
                  "advantages": np.full((n, G), np.nan), "lengths": np.full((n, G), -1, np.int64),
                  "kept": np.ones(n, bool)}
        alternatives = {a: outcome_summary(np.asarray(v, float)[grouping.order].reshape(-1, G), tolerance)
                        for a, v in offer.items()}
        correct = "acc" if "acc" in offer else next((a for a in offer if a.startswith("correctness score")), None)
        if correct is not None and reward_info.get("key") == TRAINING:  # kept per rollout for the doctor's audit
            groups["correctness"] = np.asarray(offer[correct], float)[grouping.order].reshape(-1, G)
            reward_info["correctness"] = correct
        group_steps, inv = np.unique(grouping.step, return_inverse=True)
        amb = grouping.ambiguous_keys()
        if amb.size:
            per_key_groups = grouping.rows_per_key[amb] // G
            ambiguous = int(per_key_groups.sum())
            spread = grouping.pooled_spread(np.asarray(classified, float))[amb]
            uncertain = int(per_key_groups[spread > tolerance].sum())
            starts = grouping.key_first_group[amb[:3]]
            where = ", ".join(f"step {int(grouping.step[g])} {labels[int(groups['prompt_id'][g])][:30]!r}"
                              for g in starts)
            notes.append(f"{ambiguous} groups share their prompt text with another group of the same step ({where}"
                         f"{', ...' if amb.size > 3 else ''}): verl's dump has no group id and balance_batch "
                         "reorders rows, so which rollouts formed which group is unknown; they are split in file "
                         f"order. {uncertain} of them could be degenerate or not depending on the split, so the "
                         "degenerate shares are uncertain by that many groups")
            warns.append(f"{ambiguous} ambiguous groups (the same prompt drawn twice in one step); "
                         f"{uncertain} with an uncertain outcome")
        # verl's own figure: critic/score/mean = mean of token_level_scores summed (the training reward)
        train = next(iter(offer.values()), None)
        if scalars and train is not None:
            t = np.asarray(train, float)[grouping.order].reshape(-1, G)  # every row is in a group
            ok = ~np.isnan(t)
            mean = (np.bincount(inv, np.where(ok, t, 0.0).sum(axis=1))
                    / np.maximum(np.bincount(inv, ok.sum(axis=1).astype(float)), 1))
            off = []
            for s, mine in zip(group_steps.tolist(), mean.tolist()):
                logged = scalars.get(s, {}).get("critic/score/mean")
                if logged is not None and not math.isclose(logged, mine, rel_tol=1e-4, abs_tol=1e-5):
                    off.append((s, logged, mine))
            if off:
                s0, a, b = off[0]
                warns.append(f"at {_steps_phrase([o[0] for o in off])} verl's logged critic/score/mean differs "
                             f"from the dump's training reward (step {s0}: {a:.4g} logged, {b:.4g} from the dump): the "
                             "dump's score is not what trained (e.g. an overlong penalty not logged), or the metrics "
                             "file belongs to another run")
    if scalars:
        without = sorted(set(scalars) - set(group_steps.tolist()))
        if without:
            val_only = [s for s in without if all(k.startswith("val-") for k in scalars[s])]
            notes.append(f"scalars but no rollouts at {_steps_phrase(without)}"
                         + (f" ({_steps_phrase(val_only)}: validation only, e.g. val_before_train)" if val_only else "")
                         + ": the record's recomputed figures are empty there")
    rounds = [s for s, row in scalars.items() if row.get("train/num_gen_batches", 1) > 1]
    if rounds and n_rows:  # verl-recipe's DAPO loop (filter_groups): it dumps the trained batch only
        notes.append(f"verl logged train/num_gen_batches > 1 at {_steps_phrase(rounds)} (filter_groups): the dump holds "
                     "only the groups that trained; those filtered out as unanimous were never written, so the "
                     "record's unanimous shares and its fitted population are the survivors', not the prompts'")
        if "acc" not in cols and "overlong_reward" not in cols:
            notes.append("no reward extras (acc, overlong_reward) in the dump: verl-recipe's DAPO loop hands the dump "
                         "the last generation batch's extras, which verl drops when their length differs from the "
                         "trained batch's, so the correctness split is not in this record")
    missing = ["advantages", "lengths"] + ([] if scalars else ["scalars"]) + ([] if n_rows else ["completions"])
    source = {"kind": "verl", "path": bundle.origin, "rollout_files": dump_files, "reward_key": reward_info.get("key"),
              "scalar_files": scalar_files + ([scalars_path] if scalars_path else []),
              "grouping": "rows of one step with the same input text, split into blocks of num_generations",
              "ambiguous_groups": ambiguous, "uncertain_groups": uncertain}
    if groups is None:
        groups = {"step": np.zeros(0, np.int64), "prompt_id": np.zeros(0, np.int64), "rewards": np.zeros((0, 0)),
                  "advantages": np.zeros((0, 0)), "lengths": np.zeros((0, 0), np.int64), "kept": np.zeros(0, bool)}
    rec = record_from_arrays(groups, labels, source=source, tolerance=tolerance, scalars=scalars, missing=missing,
                             name=name, config={"num_generations": G})
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
