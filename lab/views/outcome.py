"""P(useful) against p for the current K, with the population's pass-rate histogram under it, by outcome.

Linked views: hovering a grid cell marks the prompt's pass rate on both figures (a vertical line) and its
place on the curve (a dot). The marks are Bokeh models named in :data:`grpo_lab.grid.hover.HOVER_MARKERS`,
hidden here; the grid's browser code (``lab/static/live_grid.js``) finds them by name and moves them itself.
With a view pinned (pin and compare, :mod:`grpo_lab.views.compare`) the curve of its K is drawn too, in grey.
"""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.core.property.vectorization import value
from bokeh.models import ColumnDataSource, Span
from bokeh.plotting import figure

from grpo_lab.grid.hover import HOVER_MARKERS
from grpo_lab.grid.pin import pin_values
from grpo_lab.palette import FILTERED_COLOR, OUTCOME_COLORS, OUTCOME_HATCHES
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED, outcome_histogram

from .frame import Frame

__all__ = ["OutcomePlot", "PINNED_CURVE"]

PINNED_CURVE = "grpo-pinned-curve"  #: the Bokeh name of the pinned view's P(useful) curve (tests find it by it)

_P = np.linspace(0.0, 1.0, 401)
_EDGES = np.linspace(0.0, 1.0, 26)
_STACK = ("mixed", "all_pass", "all_fail", "filtered")


class OutcomePlot:
    """Two figures sharing the p axis: the P(useful) curve and the histogram of current pass rates."""

    def __init__(self):
        self.curve = ColumnDataSource({"p": _P, "useful": np.zeros_like(_P)})
        self.hist = ColumnDataSource({"mid": 0.5 * (_EDGES[1:] + _EDGES[:-1]), **{k: np.zeros(25) for k in _STACK}})
        top = figure(height=220, sizing_mode="stretch_width", title="P(group has a gradient) for the current K (dashed: mean pass rate)",
                     x_range=(0, 1), y_range=(0, 1.02), tools="", toolbar_location=None)
        top.line("p", "useful", source=self.curve, line_width=2.5, color=OUTCOME_COLORS[MIXED])
        self.pinned = ColumnDataSource({"p": [], "useful": []}, name=PINNED_CURVE)  # the pinned view's (none: empty)
        top.line("p", "useful", source=self.pinned, line_width=2, color="#767676", line_dash="dotdash",
                 legend_label="pinned view")
        top.legend.location = "bottom_center"
        top.legend.label_text_font_size = "11px"
        top.legend.visible = False
        self.top, self.pinned_legend, self._pin = top, top.legend.items[0], ""
        top.yaxis.axis_label = "P(useful)"
        self.mean = Span(location=0.5, dimension="height", line_dash="dashed", line_color="#555")
        top.add_layout(self.mean)
        # the hover's marks (moved in the browser only): the hovered prompt's pass rate, its P(useful)
        self.hover_lines = [Span(name=HOVER_MARKERS[key], location=0.0, dimension="height", visible=False,
                                 line_color="#000", line_width=2) for key in ("curve", "hist")]
        top.add_layout(self.hover_lines[0])
        self.hover_dot = ColumnDataSource({"p": [], "u": []}, name=HOVER_MARKERS["dot"])
        top.scatter("p", "u", source=self.hover_dot, size=11, fill_color="#fff", line_color="#000", line_width=2)
        bottom = figure(height=180, sizing_mode="stretch_width", x_range=top.x_range, tools="",
                        toolbar_location=None, title="Prompts by current pass rate and realised group")
        colors = [OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL], FILTERED_COLOR]
        hatches = [OUTCOME_HATCHES[MIXED], OUTCOME_HATCHES[ALL_PASS], OUTCOME_HATCHES[ALL_FAIL], " "]
        labels = ["mixed", "all pass", "all fail", "removed by the filter"]
        bottom.vbar_stack(list(_STACK), x="mid", width=0.038, source=self.hist, color=colors, hatch_pattern=hatches,
                          hatch_alpha=0.4, hatch_color="black", legend_label=labels, line_color=None)
        bottom.add_layout(self.hover_lines[1])
        bottom.legend.location = "top_left"
        bottom.legend.label_text_font_size = "11px"
        bottom.xaxis.axis_label = "pass rate p (now)"
        bottom.yaxis.axis_label = "prompts"
        self.panel = pn.Column(pn.pane.Bokeh(top, sizing_mode="stretch_width"),
                               pn.pane.Bokeh(bottom, sizing_mode="stretch_width"), sizing_mode="stretch_width")

    def update(self, frame: Frame) -> None:
        s, v = frame.scenario, frame.view
        self.curve.data = {"p": _P, "useful": outcome_probabilities(_P, s.K, s.rho)["p_useful"]}
        self._show_pin(frame.pin)
        category = np.where(v.kept, v.outcome, len(_STACK) - 1)  # the outcome, or "filtered"
        counts = outcome_histogram(v.pass_rate, category, len(_EDGES) - 1, len(_STACK))
        counts = {key: counts[:, j].astype(float) for j, key in enumerate(_STACK)}
        self.hist.data = {"mid": 0.5 * (_EDGES[1:] + _EDGES[:-1]), **counts}
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
