"""The outcome plot's stacked histogram (drawn in the browser, lab/static/live_plots.js): each bar spans exactly
its stack's prompts in its bin.

``grpoKernel.histogram`` counts the prompts of an evaluated view by pass-rate bin and stack (mixed, all pass,
all fail, removed by the filter), run here in Chromium on the kernel's own view; every count is checked against
counts made prompt by prompt in a plain loop over the core's view, for a population with the filter on (all four
stacks non-empty). The plot's key names the stacks in the lab's palette, in the histogram's order.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_lab.grid.plots import PLOT_COLORS, plots_html
from grpo_lab.kernel import kernel_arrays, kernel_source
from grpo_lab.palette import ALL_FAIL_COLOR, ALL_PASS_COLOR, FILTERED_COLOR, MIXED_COLOR
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = pytest.mark.browser

BINS, STACKS = 25, 4


def loop_counts(view) -> np.ndarray:
    counts = np.zeros((BINS, STACKS), int)
    for p, outcome, kept in zip(view.pass_rate, view.outcome, view.kept):
        stack = int(outcome) if kept else STACKS - 1
        counts[min(math.floor(p * BINS), BINS - 1), stack] += 1
    return counts


def test_each_bar_spans_its_stacks_prompts_in_its_bin(page):
    s = Scenario(n_prompts=800, progress=0.1, K=4, band=(0.15, 0.85), seed=7)
    pop = s.population()
    view = evaluate(s, pop)
    counts = loop_counts(view)
    assert (counts > 0).any(axis=0).all()  # every stack has prompts somewhere
    arr = kernel_arrays(pop, s.gain)
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    js = page.evaluate(
        """([p0, u, stride, gain, params]) => {
            const data = {p0: Float64Array.from(p0), u: Float32Array.from(u), stride, gain};
            return Array.from(grpoKernel.histogram(grpoKernel.evaluate(data, params), 25));
        }""",
        [arr["p0"].tolist(), arr["u"].tolist(), arr["stride"], arr["gain"],
         {"progress": s.progress, "K": s.K, "filter": True, "band_lo": s.band[0], "band_hi": s.band[1]}])
    assert np.array(js).reshape(BINS, STACKS).tolist() == counts.tolist()
    assert sum(js) == s.n_prompts  # every prompt once


def test_the_key_names_the_stacks_in_the_palette_and_their_order():
    assert list(PLOT_COLORS.values()) == [MIXED_COLOR, ALL_PASS_COLOR, ALL_FAIL_COLOR, FILTERED_COLOR]
    markup = plots_html()
    at = [markup.index(f"background:{c}") for c in PLOT_COLORS.values()]
    assert at == sorted(at)  # the key lists the stacks bottom to top, as drawn
