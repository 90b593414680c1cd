r"""prime-rl: the orchestrator's batch, its admission gates (which refill) and ``filter_zero_advantages`` (which does not).

Read from prime-rl's TOML (an ``rl.toml`` with an ``[orchestrator]`` table, or an orchestrator config with the
same keys at the top). Source: PrimeIntellect-ai/prime-rl at 559b447 (2026-08-21, version 0.8.0):
``packages/prime-rl-configs/src/prime_rl/configs/orchestrator.py`` (``OrchestratorConfig``, ``TrainConfig``,
``CurriculumConfig``, ``DifficultyPoolSamplerConfig``, ``AdvRangeGateConfig``), ``docs/algorithms.md`` ("Curricula":
"Rejected groups remain observable while the orchestrator samples again to fill the batch"; zero-advantage
filtering "does not backfill the batch"), ``src/prime_rl/orchestrator/train_sink.py``.

=========================================================  =================================================
key (under ``orchestrator``)                               read as
=========================================================  =================================================
``batch_size``                                             rollouts per step (default 128); T = batch_size / K
``group_size``                                             K (default 1; batch_size must be a multiple)
``token_batch_size``                                       a batch in tokens: refused (T unknown)
``train.source[].curriculum.gates.<name>``                 ``type = "advantage_range"`` (reject_min / reject_max,
                                                           default 0 / 0: the zero-advantage groups) rejects and
                                                           refills: dynamic sampling on, scheme ``replace``
``train.source[].curriculum.sampler``                      ``difficulty_pool``: tasks drawn by pool weights from
                                                           their last mean reward (hard <= 0.25 weight 0.2, normal
                                                           <= 0.75 weight 1, easy <= 1 weight 0.2 by default): the
                                                           draw is not uniform, said in ``note`` (not modelled)
``train.filter_zero_advantages``                           default true: zero-advantage tokens removed after the
                                                           batch, no backfill (the batch shrinks; no resampling)
=========================================================  =================================================
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_float, as_int, get

__all__ = ["read", "looks_like"]


def looks_like(d: dict) -> bool:
    o = d.get("orchestrator") if isinstance(d.get("orchestrator"), dict) else d
    return "group_size" in o or "token_batch_size" in o or isinstance(get(o, "train.source"), list)


def read(d: dict) -> dict:
    o = d["orchestrator"] if isinstance(d.get("orchestrator"), dict) else d
    if o.get("token_batch_size") is not None:
        raise InputError("trainer config (prime-rl): token_batch_size sets the batch in tokens; the prompts per step "
                         "are unknown (give --train-batch-size)")
    K = as_int(o.get("group_size", 1), "orchestrator.group_size")
    rollouts = as_int(o.get("batch_size", 128), "orchestrator.batch_size")
    if rollouts % K:
        raise InputError(f"trainer config (prime-rl): batch_size ({rollouts}) must be a multiple of group_size ({K})")
    sources = get(o, "train.source", []) or []
    if not isinstance(sources, list):
        raise InputError("trainer config (prime-rl): orchestrator.train.source must be a list of tables")
    gates, pools = [], []
    for src in sources:
        cur = src.get("curriculum") if isinstance(src, dict) else None
        if not isinstance(cur, dict):
            continue
        for name, gate in (cur.get("gates") or {}).items():
            if not isinstance(gate, dict) or gate.get("type", "advantage_range") != "advantage_range":
                raise InputError(f"trainer config (prime-rl): gate {name!r} is not an advantage_range gate")
            lo = as_float(gate.get("reject_min", 0.0), f"gates.{name}.reject_min")
            hi = as_float(gate.get("reject_max", 0.0), f"gates.{name}.reject_max")
            if lo > hi:
                raise InputError(f"trainer config (prime-rl): gates.{name}: reject_min must be <= reject_max")
            gates.append((name, lo, hi))
        if isinstance(cur.get("sampler"), dict) and cur["sampler"].get("type") == "difficulty_pool":
            pools.append(cur["sampler"].get("pools") or "default pools")
    refill = any(lo <= 0.0 <= hi for _, lo, hi in gates)
    notes = []
    if any(hi - lo > 0 for _, lo, hi in gates):
        notes.append("an advantage_range gate wider than 0 also rejects low-signal mixed groups (not modelled)")
    if pools:
        notes.append("a difficulty_pool sampler draws tasks by their last mean reward, not uniformly (not modelled)")
    if not refill and bool(get(o, "train.filter_zero_advantages", True)):
        notes.append("filter_zero_advantages drops zero-advantage tokens after the batch without backfilling it: "
                     "no resampling")
    return {"trainer": "prime-rl", "train_batch": rollouts // K, "gen_batch": rollouts // K, "cap": 0, "pool": None,
            "K": K if K > 1 else None, "enable": refill, "scheme": "replace", "inflight": None, "gen_per_train": 1.0,
            "note": "; ".join(notes) or None}
