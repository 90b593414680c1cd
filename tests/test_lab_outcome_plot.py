"""The outcome plot's stacked histogram as one bar glyph: each bar spans exactly its stack's prompts in its bin.

The bars are rows of one source (stack j's bin i is row ``j * 25 + i``); here every row's bottom and top are
checked against counts made prompt by prompt in a plain loop, for a population with the filter on (all four
stacks non-empty), and the legend's entries against the stacks' colours.
"""

from __future__ import annotations

import math

import numpy as np

from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.views.frame import Frame
from grpo_lab.views.outcome import OutcomePlot

BINS, STACKS = 25, 4


def loop_counts(view) -> np.ndarray:
    counts = np.zeros((BINS, STACKS))
    for p, outcome, kept in zip(view.pass_rate, view.outcome, view.kept):
        stack = int(outcome) if kept else STACKS - 1
        counts[min(math.floor(p * BINS), BINS - 1), stack] += 1
    return counts


def test_each_bar_spans_its_stacks_prompts_in_its_bin():
    s = Scenario(n_prompts=800, progress=0.1, K=4, band=(0.15, 0.85), seed=7)
    pop = s.population()
    view = evaluate(s, pop)
    plot = OutcomePlot()
    plot.update(Frame(s, pop, view, s.band))
    counts = loop_counts(view)
    assert (counts > 0).any(axis=0).all()  # every stack has prompts somewhere
    data = plot.hist.data
    for j in range(STACKS):
        for i in range(BINS):
            row = j * BINS + i
            assert data["bottom"][row] == counts[i, :j].sum()
            assert data["top"][row] == counts[i, : j + 1].sum()
            assert abs(data["mid"][row] - (i + 0.5) / BINS) < 1e-12
    assert sum(data["top"][(STACKS - 1) * BINS:]) == s.n_prompts  # the tallest stack's tops: every prompt once
    legend = plot.panel.objects[1].object.legend[0]
    assert [item.index for item in legend.items] == [j * BINS for j in range(STACKS)]
    assert [data["color"][item.index] for item in legend.items] == list(dict.fromkeys(data["color"]))
