"""Two scalars-only records read from one tracker log (a follower's and a whole read's) compared as equal: every
step column element by element (NaN equal to NaN), K, and the reader's notes."""

from __future__ import annotations

import numpy as np

__all__ = ["assert_same_scalars"]


def assert_same_scalars(a, b) -> None:
    """AssertionError unless records ``a`` and ``b`` hold the same columns, values, K and notes."""
    assert a.steps.keys() == b.steps.keys()
    for k in a.steps:
        np.testing.assert_array_equal(a.steps[k], b.steps[k])
    assert a.meta.get("num_generations") == b.meta.get("num_generations")
    assert a.meta["source"]["notes"] == b.meta["source"]["notes"]
