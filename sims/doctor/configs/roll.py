r"""ROLL (alibaba/ROLL): the RLVR pipeline's query filter, in rounds (opt level 0) or by replacement (level 1).

Source: alibaba/ROLL at 8eb27cc (2026-08-18): ``roll/configs/base_config.py`` (``rollout_batch_size``,
``ScheduleConfig.generate_opt_level`` default 1, ``is_use_additional_prompts``, ``max_additional_running_prompts``),
``roll/pipeline/rlvr/rlvr_config.py`` (``num_return_sequences_in_group``, ``rewards.<domain>.query_filter_config``
``type`` in ``no_filter`` / ``mean_filter`` / ``std_filter``), ``roll/distributed/scheduler/generate_scheduler.py``
(``get_batch_opt_level_0``: rounds of ``rollout_batch_size`` prompts until ``rollout_batch_size`` groups pass the
filter, no cap, the surplus dropped; level 1: a ``ReplayBuffer`` that keeps ``rollout_batch_size`` prompts (plus
``max_additional_running_prompts`` with ``is_use_additional_prompts``) running, a filtered prompt's place taken by
the next) and ``roll/distributed/scheduler/user_defined_rollout_loop.py`` (``query_filter``).

A ROLL config shares slime's ``rollout_batch_size`` key, so it was read as slime's; it is told apart by
``num_return_sequences_in_group`` (ROLL's K) or a ``rewards`` section of per-domain ``query_filter_config``, and
read here with ROLL's own meaning.

=============================================  =================================================================
key                                            read as
=============================================  =================================================================
``rollout_batch_size``                         T = B, groups a step trains and prompts per round (required)
``num_return_sequences_in_group``              K
``rewards.<domain>.query_filter_config.type``  the filter is on when any domain's is ``mean_filter`` or ``std_filter``
``generate_opt_level``                         0: ``rounds`` (no cap); 1 (default): ``replace``
=============================================  =================================================================
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_int, get

__all__ = ["read", "looks_like"]

FILTERS = ("no_filter", "mean_filter", "std_filter")


def looks_like(nested: dict) -> bool:
    rewards = nested.get("rewards")
    return "num_return_sequences_in_group" in nested or (
        "rollout_batch_size" in nested and isinstance(rewards, dict)
        and any(isinstance(v, dict) and "query_filter_config" in v for v in rewards.values()))


def read(d: dict) -> dict:
    T = d.get("rollout_batch_size")
    if T is None:
        raise InputError("trainer config (ROLL): rollout_batch_size is missing")
    T = as_int(T, "rollout_batch_size")
    K = d.get("num_return_sequences_in_group")
    K = None if K is None else as_int(K, "num_return_sequences_in_group", 2)
    kinds = []
    for domain, cfg in (d.get("rewards") or {}).items():
        kind = get(cfg, "query_filter_config.type", "no_filter") if isinstance(cfg, dict) else "no_filter"
        if kind not in FILTERS:
            raise InputError(f"trainer config (ROLL): rewards.{domain}.query_filter_config.type must be one of "
                             f"{', '.join(FILTERS)}, got {kind!r}")
        kinds.append(kind)
    level = as_int(d.get("generate_opt_level", 1), "generate_opt_level", 0)
    if level not in (0, 1):
        raise InputError(f"trainer config (ROLL): generate_opt_level must be 0 or 1, got {level}")
    notes = []
    if level == 1:
        extra = d.get("max_additional_running_prompts", 16) if d.get("is_use_additional_prompts") else 0
        notes.append(f"ROLL generate_opt_level 1: a filtered prompt's place is taken by the next, with up to "
                     f"{T} + {extra} prompts running; their concurrency is not modelled")
    if "mean_filter" in kinds:
        notes.append("mean_filter drops a group whose mean reward is <= threshold_down or >= threshold_up: the "
                     "zero-std filter only for 0/1 rewards with thresholds 0 and 1")
    return {"trainer": "roll", "train_batch": T, "gen_batch": T, "cap": 0, "pool": None, "K": K,
            "enable": any(k != "no_filter" for k in kinds), "scheme": "rounds" if level == 0 else "replace",
            "inflight": None, "note": "; ".join(notes) or None, "gen_per_train": 1.0}
