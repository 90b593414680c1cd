"""The one percentile convention of the tests and the benchmarks.

``percentile(values, q)`` is numpy's default (linear interpolation between the order statistics, ``method="linear"``)
at the fraction ``q`` in [0, 1]: p50 of [1, 2, 3, 4] is 2.5, p90 of ten values lies between the ninth and tenth.
An empty sequence gives nan, one value gives itself.
"""

from __future__ import annotations

import numpy as np


def percentile(values, q: float) -> float:
    """The ``q``-quantile (0 <= q <= 1) of ``values`` by linear interpolation; nan when there are none."""
    v = np.asarray(list(values), dtype=float)
    return float(np.quantile(v, q)) if v.size else float("nan")


def p50(values) -> float:
    return percentile(values, 0.50)


def p90(values) -> float:
    return percentile(values, 0.90)


def p95(values) -> float:
    return percentile(values, 0.95)
