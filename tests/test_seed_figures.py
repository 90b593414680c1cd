"""Seed 002's six published figures lie inside the 99% sampling interval of the lab's model.

The model is re-implemented here with plain numpy over many independent draws of a
600-prompt Beta(2, 3) population (an independent computation of sims.scenario), and
the lab's own default view is checked to be one such draw.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.decay import DEFAULT_GAIN
from grpo_lab.sims.scenario import Scenario, evaluate

PUBLISHED = {  # seed 002, "Watching an environment expire"
    "mean_pass_t0": 0.391, "useful_t0": 0.895,
    "mean_pass_t1": 0.887, "useful_t1": 0.585,
    "useful_filtered_t1": 0.885, "kept_t1": 0.087,
}
N, K, DRAWS, BAND = 600, 8, 4000, (0.2, 0.8)


def _figures(p0: np.ndarray, u: np.ndarray) -> dict[str, np.ndarray]:
    p1 = p0 ** (1 / (1 + DEFAULT_GAIN))

    def mixed(p):
        k = (u < p[..., None]).sum(-1)
        return (k > 0) & (k < K)

    kept = (p1 >= BAND[0]) & (p1 <= BAND[1])
    m1 = mixed(p1)
    return {
        "mean_pass_t0": p0.mean(-1), "useful_t0": mixed(p0).mean(-1),
        "mean_pass_t1": p1.mean(-1), "useful_t1": m1.mean(-1),
        "useful_filtered_t1": (m1 & kept).sum(-1) / np.maximum(kept.sum(-1), 1), "kept_t1": kept.mean(-1),
    }


@pytest.fixture(scope="module")
def intervals():
    rng = np.random.default_rng(20261202)
    p0 = rng.beta(2, 3, size=(DRAWS, N))
    u = rng.random((DRAWS, N, K))
    figs = _figures(p0, u)
    return {k: np.quantile(v, [0.005, 0.995]) for k, v in figs.items()}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_figure_inside_99_percent_interval(intervals, name):
    lo, hi = intervals[name]
    assert lo <= PUBLISHED[name] <= hi, f"{name}: {PUBLISHED[name]} outside [{lo:.4f}, {hi:.4f}]"


def test_lab_default_view_is_a_typical_draw(intervals):
    """The lab's default seed gives figures inside the same intervals, computed by the core."""
    got = {
        "mean_pass_t0": evaluate(Scenario()).summary["mean_pass_rate"],
        "useful_t0": evaluate(Scenario()).summary["useful_share_realised"],
        "mean_pass_t1": evaluate(Scenario(progress=1.0)).summary["mean_pass_rate"],
        "useful_t1": evaluate(Scenario(progress=1.0)).summary["useful_share_realised"],
        "useful_filtered_t1": evaluate(Scenario(progress=1.0, band=BAND)).summary["useful_share_realised"],
        "kept_t1": evaluate(Scenario(progress=1.0, band=BAND)).summary["kept_share"],
    }
    for name, value in got.items():
        lo, hi = intervals[name]
        assert lo <= value <= hi, name


def test_model_is_not_trivially_wide(intervals):
    """The intervals are tight enough to reject a wrong model: without decay, t = 1 misses the end figures."""
    rng = np.random.default_rng(1)
    p0 = rng.beta(2, 3, size=(DRAWS, N))
    lo, hi = intervals["mean_pass_t1"]
    assert not (lo <= p0.mean(-1).mean() <= hi)
    assert hi - lo < 0.02 and np.diff(intervals["useful_t1"])[0] < 0.12
