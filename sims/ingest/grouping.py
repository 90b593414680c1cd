r"""Groups from rows that carry no group id: the rows of one step with the same prompt, in blocks of G.

verl's rollout dump has one row per completion and no group id, and ``balance_batch``
reorders rows before the dump. A group is therefore rebuilt as the rows of one step
with the same prompt; a prompt drawn k times in one step has k * G such rows, split
in file order into k groups of G (which rows belonged together is not recorded, so
those k groups are *ambiguous*).

:func:`group_rows` does this for millions of rows with numpy alone: rows are keyed
by ``(step, prompt)``, keys are ranked by (step, first row of the key), a stable
sort by that rank makes every key's rows contiguous and in file order, and the
sorted rows reshape to ``(groups, G)`` because every key has a multiple of G rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Grouping", "group_rows"]


@dataclass
class Grouping:
    """How rows become groups.

    ``order``       row indices in group order: ``values[order].reshape(-1, G)`` are the groups' values
    ``step``        step of each group (n_groups)
    ``prompt``      prompt index of each group, as given in ``group_rows``' ``prompt`` (n_groups)
    ``rows_per_key`` rows of each (step, prompt) key, keys in group order
    ``key_first_group`` index of each key's first group
    """

    order: np.ndarray
    step: np.ndarray
    prompt: np.ndarray
    rows_per_key: np.ndarray
    key_first_group: np.ndarray
    G: int

    def ambiguous_keys(self) -> np.ndarray:
        """Indices of the keys with more than one group (the same prompt drawn twice or more in one step)."""
        return np.flatnonzero(self.rows_per_key > self.G)

    def pooled_spread(self, values: np.ndarray) -> np.ndarray:
        """max - min of ``values`` (per row, NaN ignored) over each key's rows, keys in group order."""
        v = values[self.order]
        starts = np.concatenate([[0], np.cumsum(self.rows_per_key)[:-1]]).astype(np.int64)
        if not len(v):
            return np.zeros(0)
        with np.errstate(invalid="ignore"):
            return np.fmax.reduceat(v, starts) - np.fmin.reduceat(v, starts)


def group_rows(step: np.ndarray, prompt: np.ndarray, G: int | None = None) -> Grouping:
    """Group rows by (step, prompt) into blocks of ``G`` (every key must have a multiple of G rows).

    Parameters
    ----------
    step, prompt : int arrays, one entry per row, in file order (prompt: any integer code of the text).
    G : group size; None: the greatest common divisor of the rows per key (``Grouping.G``; a caller
        refuses 1, which means the rows do not split into groups). 0 for no rows.

    Groups come out ordered by step, then by the first row of their (step, prompt) key, then in
    file order within the key (the order of the line-by-line reader).
    """
    step = np.asarray(step, np.int64)
    prompt = np.asarray(prompt, np.int64)
    n = len(step)
    if n == 0:
        e = np.zeros(0, np.int64)
        return Grouping(e, e, e, e, e, G or 0)
    width = int(prompt.max()) + 1
    key = step * width + prompt
    uniq, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    ukey_step = uniq // width
    rank_order = np.lexsort((first, ukey_step))  # keys by (step, first row)
    rank = np.empty_like(rank_order)
    rank[rank_order] = np.arange(len(rank_order))
    order = np.argsort(rank[inverse.reshape(-1)], kind="stable")
    rows_per_key = counts[rank_order]
    if G is None:
        G = int(np.gcd.reduce(rows_per_key))
    groups_per_key = rows_per_key // G
    key_first_group = np.concatenate([[0], np.cumsum(groups_per_key)[:-1]]).astype(np.int64)
    g_step = np.repeat(ukey_step[rank_order], groups_per_key)
    g_prompt = np.repeat((uniq % width)[rank_order], groups_per_key)
    return Grouping(order, g_step, g_prompt, rows_per_key, key_first_group, G)
