"""P(useful) against p for the current K, with the population's pass-rate histogram under it, by outcome.

Linked views: hovering a grid cell marks the prompt's pass rate on both figures (a vertical line) and its
place on the curve (a dot). The marks are Bokeh models named in :data:`grpo_lab.grid.hover.HOVER_MARKERS`,
hidden here; the grid's browser code (``lab/static/live_grid.js``) finds them by name and moves them itself.
With a view pinned (pin and compare, :mod:`grpo_lab.views.compare`) the curve of its K is drawn too, in grey.

Each session builds its own figures, so they are kept to few Bokeh models (each costs the server time to build
and to send): the stacked histogram is one bar glyph whose rows are the 25 bins of each of the four stacks,
with their colours and hatches as columns (Bokeh's ``vbar_stack`` makes a renderer, three glyphs and two stack
transforms per stack), and the lines and dots are glyphs alone (:mod:`grpo_lab.views.glyphs`).
"""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.core.property.vectorization import value
from bokeh.models import ColumnDataSource, Legend, LegendItem, Scatter, Span, VBar

from grpo_lab.grid.hover import HOVER_MARKERS
from grpo_lab.grid.pin import pin_values
from grpo_lab.palette import FILTERED_COLOR, OUTCOME_COLORS, OUTCOME_HATCHES
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED, outcome_histogram

from .frame import Frame
from .glyphs import AxisParts, add_legend, add_line, lean_figure, stacked_bars

__all__ = ["OutcomePlot", "PINNED_CURVE"]

PINNED_CURVE = "grpo-pinned-curve"  #: the Bokeh name of the pinned view's P(useful) curve (tests find it by it)

_P = np.linspace(0.0, 1.0, 401)
_EDGES = np.linspace(0.0, 1.0, 26)
_MID = 0.5 * (_EDGES[1:] + _EDGES[:-1])
_STACK = ("mixed", "all_pass", "all_fail", "filtered")  #: the histogram's stacks, bottom to top
_STACK_COLORS = (OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL], FILTERED_COLOR)
_STACK_HATCHES = (OUTCOME_HATCHES[MIXED], OUTCOME_HATCHES[ALL_PASS], OUTCOME_HATCHES[ALL_FAIL], " ")
_STACK_LABELS = ("mixed", "all pass", "all fail", "removed by the filter")


class OutcomePlot:
    """Two figures sharing the p axis: the P(useful) curve and the histogram of current pass rates."""

    def __init__(self, axes: AxisParts | None = None):
        """``axes``: the axis parts the session's figures share (:func:`grpo_lab.views.glyphs.lean_figure`)."""
        axes = axes or AxisParts()
        self.curve = ColumnDataSource({"p": _P, "useful": np.zeros_like(_P)})
        bins = len(_MID)
        self.hist = ColumnDataSource({**stacked_bars(np.zeros((bins, len(_STACK))), _MID),
                                      "color": np.repeat(_STACK_COLORS, bins), "hatch": np.repeat(_STACK_HATCHES, bins)})
        top = lean_figure(axes, height=220, sizing_mode="stretch_width",
                          title="P(group has a gradient) for the current K (dashed: mean pass rate)", x_range=(0, 1),
                          y_range=(0, 1.02))
        add_line(top, self.curve, "p", "useful", OUTCOME_COLORS[MIXED])
        self.pinned = ColumnDataSource({"p": [], "useful": []}, name=PINNED_CURVE)  # the pinned view's (none: empty)
        pinned = add_line(top, self.pinned, "p", "useful", "#767676", width=2, dash="dotdash")
        legend = add_legend(top, [("pinned view", pinned)], "bottom_center")
        legend.label_text_font_size = "11px"
        legend.visible = False
        self.top, self.pinned_legend, self._pin = top, legend.items[0], ""
        top.yaxis.axis_label = "P(useful)"
        self.mean = Span(location=0.5, dimension="height", line_dash="dashed", line_color="#555")
        top.add_layout(self.mean)
        # the hover's marks (moved in the browser only): the hovered prompt's pass rate, its P(useful)
        self.hover_lines = [Span(name=HOVER_MARKERS[key], location=0.0, dimension="height", visible=False,
                                 line_color="#000", line_width=2) for key in ("curve", "hist")]
        top.add_layout(self.hover_lines[0])
        self.hover_dot = ColumnDataSource({"p": [], "u": []}, name=HOVER_MARKERS["dot"])
        top.add_glyph(self.hover_dot, Scatter(x="p", y="u", size=11, fill_color="#fff", line_color="#000", line_width=2))
        bottom = lean_figure(axes, height=180, sizing_mode="stretch_width", x_range=top.x_range,
                             title="Prompts by current pass rate and realised group")
        bars = bottom.add_glyph(self.hist, VBar(x="mid", bottom="bottom", top="top", width=0.038, fill_color="color",
                                                hatch_pattern="hatch", hatch_alpha=0.4, hatch_color="black",
                                                line_color=None))
        # one legend entry per stack, drawn like its first row
        bottom.add_layout(Legend(items=[LegendItem(label=label, renderers=[bars], index=j * bins)
                                        for j, label in enumerate(_STACK_LABELS)],
                                 location="top_left", label_text_font_size="11px"))
        bottom.add_layout(self.hover_lines[1])
        bottom.xaxis.axis_label = "pass rate p (now)"
        bottom.yaxis.axis_label = "prompts"
        self.panel = pn.Column(pn.pane.Bokeh(top, sizing_mode="stretch_width"),
                               pn.pane.Bokeh(bottom, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def update(self, frame: Frame) -> None:
        s, v = frame.scenario, frame.view
        self.curve.data.update(useful=outcome_probabilities(_P, s.K, s.rho)["p_useful"])
        self._show_pin(frame.pin)
        category = np.where(v.kept, v.outcome, len(_STACK) - 1)  # the outcome, or "filtered"
        counts = outcome_histogram(v.pass_rate, category, len(_EDGES) - 1, len(_STACK))
        bars = stacked_bars(counts, _MID)
        self.hist.data.update(bottom=bars["bottom"], top=bars["top"])  # only these columns change, and are sent
        mean = v.summary["mean_pass_rate"]
        self.mean.location = float(mean) if np.isfinite(mean) else 0.5

    def _show_pin(self, pin: str) -> None:
        """The pinned view's curve (its K and rho), labelled with its controls; nothing pinned: none."""
        if pin == self._pin:
            return
        self._pin = pin
        if pin:
            v = pin_values(pin)
            self.pinned.data = {"p": _P, "useful": outcome_probabilities(_P, v["K"], v["rho"])["p_useful"]}
            rho = f", rho = {v['rho']:g}" if v["rho"] else ""
            self.pinned_legend.label = value(f"pinned view: K = {v['K']}{rho}")  # the curve depends on no more
        else:
            self.pinned.data = {"p": [], "useful": []}
        self.top.legend.visible = bool(pin)
