"""The decay curve: share of groups with a gradient against training progress, with and without the filter."""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, Span

from grpo_lab.memo import Memo, array_key
from grpo_lab.palette import ALL_PASS_COLOR, MIXED_COLOR
from grpo_lab.sims.sweep import useful_share_curve

from .frame import Frame
from .glyphs import AxisParts, add_dots, add_legend, add_line, lean_figure

__all__ = ["DecayPlot"]

_CURVES = Memo(32)  #: (population, K, rho, band, gain) -> the plot's columns; the same for every session


class DecayPlot:
    """Expected (lines) and realised (dots) useful share over t in [0, 1]; a vertical line marks the current t.

    The marker is ``self.marker`` (a Span): the app links it to the progress slider in the browser.
    """

    def __init__(self, axes: AxisParts | None = None):
        """``axes``: the axis parts the session's figures share (:func:`grpo_lab.views.glyphs.lean_figure`)."""
        self.source = ColumnDataSource({k: [] for k in ("t", "exp", "real", "exp_f", "real_f")})
        fig = lean_figure(axes, height=260, sizing_mode="stretch_width", x_range=(0, 1), y_range=(0, 1.02),
                          title="Groups with a gradient as training progresses")
        every = add_line(fig, self.source, "t", "exp", MIXED_COLOR)
        add_dots(fig, self.source, "t", "real", MIXED_COLOR)
        kept = add_line(fig, self.source, "t", "exp_f", ALL_PASS_COLOR, dash="dashed")
        add_dots(fig, self.source, "t", "real_f", ALL_PASS_COLOR, marker="square")
        add_legend(fig, [("all prompts", every), ("with the filter (its band)", kept)], "bottom_left")
        fig.xaxis.axis_label = "training progress t"
        fig.yaxis.axis_label = "share of groups with a gradient"
        self.marker = Span(location=0.0, dimension="height", line_color="#333", line_width=2)
        fig.add_layout(self.marker)
        self.figure = fig
        self._key = None
        self.panel = pn.Column(pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                               pn.pane.HTML("<p style='margin:0'>Lines: expected share; dots: realised groups. "
                                            "The vertical line is the current t.</p>", styles={"font-size": "12px"}),
                               sizing_mode="stretch_width")

    def update(self, frame: Frame) -> None:
        s = frame.scenario
        self.marker.location = float(s.progress)
        key = (s.K, s.rho, frame.band, frame.population.n, frame.population.seed, frame.population.a, frame.population.b)
        if key == self._key:
            return
        self._key = key
        self.source.data = dict(_CURVES.get((array_key(frame.population.pass_rates), frame.population.seed, s.K,
                                             s.rho, frame.band, s.gain), lambda: _columns(frame)))


def _columns(frame: Frame) -> dict:
    """The plot's columns: t and the expected / realised useful share over all prompts and over the band."""
    s, pop = frame.scenario, frame.population
    ts = np.linspace(0.0, 1.0, 21 if s.rho > 0 else 41)
    free = useful_share_curve(pop, ts, s.K, s.rho, None, s.gain)
    kept = useful_share_curve(pop, ts, s.K, s.rho, frame.band, s.gain)
    return {"t": ts, "exp": free["expected"], "real": free["realised"], "exp_f": kept["expected"],
            "real_f": kept["realised"]}
