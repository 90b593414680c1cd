r"""tinker-cookbook: one batch of groups per iteration, never drawn again.

Source: thinking-machines-lab/tinker-cookbook, ``tinker_cookbook/rl/train.py`` (``Config``: the dataset builder,
``remove_constant_reward_groups``; each iteration samples one batch of the builder's env groups, ``group_size``
rollouts each, and with ``remove_constant_reward_groups`` drops the groups whose rewards are all equal,
``rl/data_processing.py``: the step trains on fewer groups, no group is sampled again) and the recipes' dataset
builders (``groups_per_batch``; ``batch_size`` in older recipes, as the reward-hacking fork's,
tests/fixtures/real/tinker-rewardhack-*). The run writes its config as ``config.json`` beside ``metrics.jsonl``,
the dataset builder nested under ``dataset_builder``.

=====================================  ==================================================================
key                                    read as
=====================================  ==================================================================
``dataset_builder.groups_per_batch``   B = T, groups sampled and trained per iteration (one logged row)
``dataset_builder.batch_size``         the same, where ``groups_per_batch`` is absent (older recipes)
``dataset_builder.group_size``         K
=====================================  ==================================================================

As for TRL, no second round is drawn and there is no cap: the rounds the doctor reports are what DAPO-style
resampling would need to fill the same batch with mixed groups.
"""

from __future__ import annotations

from ...errors import InputError
from ._keys import as_int

__all__ = ["read", "looks_like", "SIZE_KEYS"]

#: the size keys a record ingested with its tinker config keeps as read (``meta["trainer_settings"]["keys"]``)
SIZE_KEYS = ("dataset_builder.groups_per_batch", "dataset_builder.batch_size", "dataset_builder.group_size",
             "remove_constant_reward_groups")


def looks_like(nested: dict) -> bool:
    b = nested.get("dataset_builder")
    return isinstance(b, dict) and "group_size" in b and ("groups_per_batch" in b or "batch_size" in b)


def read(d: dict) -> dict:
    b = d["dataset_builder"]
    key = "groups_per_batch" if b.get("groups_per_batch") is not None else "batch_size"
    if b.get(key) is None or b.get("group_size") is None:
        raise InputError("trainer config (tinker-cookbook): dataset_builder.groups_per_batch (or batch_size) and "
                         "dataset_builder.group_size are needed")
    B = as_int(b[key], f"dataset_builder.{key}")
    K = as_int(b["group_size"], "dataset_builder.group_size", 2)
    return {"trainer": "tinker-cookbook", "train_batch": B, "gen_batch": B, "cap": 0, "pool": None, "K": K,
            "enable": True, "scheme": "rounds", "inflight": None, "note": None}
