"""Colours, hatches and words for the three group outcomes, shared by the lab, the replay and the export.

Okabe-Ito colours (Bokeh's ``Colorblind8``) chosen to keep seed 002's story of
green draining into amber while staying distinguishable under colour-vision
deficiencies; a mark drawn on each unanimous cell (+ all pass, - all fail) and the
legend's words are a second cue, so colour is never the only one. The grids draw each
cell from a tile (``lab.grid.cell_tiles``) that carries its colour and mark.
"""

from __future__ import annotations

from bokeh.palettes import Colorblind8

from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

MIXED_COLOR = Colorblind8[3]  # bluish green  #009E73
ALL_PASS_COLOR = Colorblind8[1]  # orange      #E69F00
ALL_FAIL_COLOR = Colorblind8[5]  # vermillion  #D55E00
FILTERED_COLOR = "#d9d9d9"  # removed by the difficulty filter / not sampled this step
FILTERED_ALPHA = 0.35

#: index by outcome code (sims.scenario.MIXED / ALL_PASS / ALL_FAIL)
OUTCOME_COLORS = {MIXED: MIXED_COLOR, ALL_PASS: ALL_PASS_COLOR, ALL_FAIL: ALL_FAIL_COLOR}
#: the mark drawn on a cell's tile (cross: +, dash: -), and whether it shows (mixed cells carry no mark)
OUTCOME_MARKS = {MIXED: "dash", ALL_PASS: "cross", ALL_FAIL: "dash"}
OUTCOME_MARK_ALPHA = {MIXED: 0.0, ALL_PASS: 1.0, ALL_FAIL: 1.0}
OUTCOME_SYMBOLS = {MIXED: "", ALL_PASS: "+", ALL_FAIL: "\u2212"}  # the same marks as text, for legends
# the hatch patterns of the same cues, for bar charts (a few glyphs, redrawn rarely)
OUTCOME_HATCHES = {MIXED: " ", ALL_PASS: "/", ALL_FAIL: "x"}
OUTCOME_LABELS = {
    MIXED: "mixed: rollouts disagree, has a gradient",
    ALL_PASS: "all pass: unanimous, zero advantage",
    ALL_FAIL: "all fail: unanimous, zero advantage",
}
FILTERED_LABEL = "removed by the filter"
