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

from ..errors import InputError
from ..record import RunRecord
from .common import Bundle, GroupTable, build_record, format_hint, iter_json_lines, numeric_scalars

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


def ingest_verl(bundle: Bundle, *, tolerance: float, name: str | None = None, num_generations: int | None = None,
                reward_key: str = "score", scalars_path: str | None = None, scalars_bundle: Bundle | None = None
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
    rows: dict[tuple[int, str], list[float]] = {}
    order: list[tuple[int, str]] = []
    dump_files = []
    for f in dumps:
        data = bundle.read(f)
        label = bundle.label(f)
        if bundle.single and _is_scalar_log(data):
            _parse_scalars(data, label, scalars)
            scalar_files.append(f)
            continue
        dump_files.append(f)
        for n, obj in iter_json_lines(data, label):
            lacking = [k for k in ("input", reward_key, "step") if k not in obj]
            if lacking:
                raise InputError(f"{label} line {n}: missing {', '.join(repr(k) for k in lacking)} "
                                 f"(a verl rollout dump line has input, output, score, step){format_hint(obj, 'verl')}")
            step, text, score = obj["step"], obj["input"], obj[reward_key]
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                raise InputError(f"{label} line {n}: 'step' must be an integer >= 0, got {step!r}")
            if not isinstance(text, str):
                raise InputError(f"{label} line {n}: 'input' must be the prompt text")
            if score is None:
                score = math.nan
            elif isinstance(score, (int, float)):
                score = float(score)
            else:
                raise InputError(f"{label} line {n}: {reward_key!r} must be a number, got {str(score)[:40]!r}")
            key = (step, text)
            bucket = rows.get(key)
            if bucket is None:
                bucket = rows[key] = []
                order.append(key)
            bucket.append(score)
    if not rows and not scalars:
        raise InputError(f"{bundle.origin}: no verl rollout dumps ({{step}}.jsonl) or file-logger scalars found")
    G = num_generations
    if rows:
        counts = [len(v) for v in rows.values()]
        if G is None:
            G = reduce(math.gcd, counts)
            if G < 2:
                raise InputError(f"{bundle.origin}: cannot infer the group size (rows per prompt per step: "
                                 f"{sorted(set(counts))[:6]}); pass --num-generations (verl's rollout.n)")
        bad = next(((k, c) for k, c in zip(rows, counts) if c % G), None)
        if bad:
            (step, text), c = bad
            raise InputError(f"{bundle.origin}: step {step} has {c} rows for prompt {text[:60]!r}, "
                             f"not a multiple of the group size {G}")
    table = GroupTable()
    for key in sorted(order, key=lambda k: k[0]):
        step, text = key
        pid = table.prompt(text, text)
        vals = rows[key]
        for j in range(0, len(vals), G):
            table.add(step, pid, vals[j:j + G])
    missing = ["advantages", "lengths"] + ([] if scalars else ["scalars"]) + ([] if rows else ["completions"])
    source = {"kind": "verl", "path": bundle.origin, "rollout_files": dump_files, "reward_key": reward_key,
              "scalar_files": scalar_files + ([scalars_path] if scalars_path else []),
              "grouping": "rows of one step with the same input text, split into blocks of num_generations"}
    return build_record(table, source=source, tolerance=tolerance, scalars=scalars, missing=missing, name=name,
                        config={"num_generations": G})
