"""The hover's advantage table (what a passing / failing rollout's advantage is, for every (K, k)).

Computed once per process by :func:`grpo_lab.sims.advantages.advantages`; the browser's hover only looks
entries up (it computes none), and :func:`hover_advantages` is what it is sent, once per page.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from grpo_lab.sims.advantages import ESTIMATORS, THRESHOLD, advantages

from ..kernel import b64
from .spec import K_MAX

__all__ = ["advantage_table", "hover_advantages", "unanimous_notes"]


@lru_cache(maxsize=1)
def advantage_table() -> dict[str, np.ndarray]:
    """Advantages of a passing and a failing rollout, per estimator, for every (K, k), as float32.

    Row ``offset[K] + k`` (1 <= K <= K_MAX, 0 <= k <= K) holds, for a group of K binary rollouts
    with k correct, ``<estimator>_pass`` and ``<estimator>_fail`` from
    :func:`sims.advantages.advantages` (NaN where no rollout passes / fails). ``offset`` has
    K_MAX + 1 entries. The browser only looks entries up; it computes none.
    """
    offset = np.zeros(K_MAX + 1, np.int32)
    total = 0
    for K in range(1, K_MAX + 1):
        offset[K] = total
        total += K + 1
    table = {f"{name}_{side}": np.full(total, np.nan, np.float32) for name in ESTIMATORS for side in ("pass", "fail")}
    for K in range(1, K_MAX + 1):
        k = np.arange(K + 1)
        rewards = (np.arange(K)[None, :] < k[:, None]).astype(float)  # k ones, then zeros
        rows = slice(offset[K], offset[K] + K + 1)
        for name in ESTIMATORS:
            adv = advantages(rewards, name)
            table[f"{name}_pass"][rows] = np.where(k > 0, adv[:, 0], np.nan)
            table[f"{name}_fail"][rows] = np.where(k < K, adv[:, -1], np.nan)
    for v in table.values():
        v.setflags(write=False)
    offset.setflags(write=False)
    return {"offset": offset, **table}



def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@lru_cache(maxsize=1)
def unanimous_notes() -> dict[str, str]:
    """Why a unanimous group's advantages are what they are, for the hover of an all-pass ("pass") and an
    all-fail ("fail") cell: the key says "zero advantage", which holds under group centring, while an
    estimator with a fixed reference still gives every rollout a sign. Which estimator is which is read
    from :func:`advantage_table` (a unanimous group of 2), not typed."""
    t = advantage_table()
    notes = {}
    for side, k, push in (("pass", 2, "up (+)"), ("fail", 0, "down (\u2212)")):
        row = int(t["offset"][2]) + k
        centred = [n for n in ESTIMATORS if t[f"{n}_{side}"][row] == 0]
        fixed = [n for n in ESTIMATORS if t[f"{n}_{side}"][row] != 0]
        note = (f"why: every reward equals the group's mean, so {_names(centred)} (centred on the group) give 0: "
                "no gradient, as the key says")
        if fixed:
            note += f"; {_names(fixed)} measure from a fixed reference ({THRESHOLD:g}) and still push each rollout {push}"
        notes[side] = note
    return notes


@lru_cache(maxsize=1)
def hover_advantages() -> dict:
    """:func:`advantage_table` as the view's hover reads it (``grpoGridView``'s ``advantages``): the estimator
    names, why a unanimous group's advantages are what they are (:func:`unanimous_notes`), and each column as
    little-endian base64 (``offset`` int32, the rest float32 with NaN where no
    rollout passes / fails), which a session serialises as a few strings instead of 25,000 numbers. The
    same for every population and session, so it is computed once per process."""
    t = advantage_table()
    return {"names": list(ESTIMATORS), "why": unanimous_notes(),
            **{key: b64(values, "<i4" if key == "offset" else "<f4") for key, values in t.items()}}
