"""The Jensen gap: D_real (per-prompt pass rates) against D_iid (the mean pass rate alone), over K."""

from __future__ import annotations

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, Span

from grpo_lab.grid.spec import K_MAX
from grpo_lab.memo import Memo, array_key
from grpo_lab.palette import ALL_FAIL_COLOR, ALL_PASS_COLOR
from grpo_lab.sims.formatting import fixed, percent, points
from grpo_lab.sims.population import degeneracy_iid, degeneracy_real

from .frame import Frame
from .glyphs import AxisParts, add_legend, add_line, lean_figure

__all__ = ["JensenPlot", "jensen_caption"]

_K = np.arange(1, K_MAX + 1)
_CURVES = Memo(32)  #: (kept pass rates, rho) -> (D_real, D_iid) over _K; the same for every session


def _curves(p: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """D_real(K) and D_iid(K) for K in _K (cached: they depend on the pass rates and rho alone)."""
    def compute():
        return (np.array([degeneracy_real(p, K, rho) for K in _K]), np.array([degeneracy_iid(p, K, rho) for K in _K]))

    return _CURVES.get((array_key(p), float(rho)), compute)


class JensenPlot:
    """D_real(K) and D_iid(K) for the current population at the current t (kept prompts)."""

    def __init__(self, axes: AxisParts | None = None):
        """``axes``: the axis parts the session's figures share (:func:`grpo_lab.views.glyphs.lean_figure`)."""
        self.source = ColumnDataSource({"K": _K, "real": np.zeros(len(_K)), "iid": np.zeros(len(_K))})
        fig = lean_figure(axes, height=240, sizing_mode="stretch_width", x_range=(1, K_MAX), y_range=(0, 1.02),
                          title="Degenerate share: D_real (per prompt) vs D_iid (mean p)")
        real = add_line(fig, self.source, "K", "real", ALL_FAIL_COLOR)
        iid = add_line(fig, self.source, "K", "iid", ALL_PASS_COLOR, dash="dashed")
        add_legend(fig, [("D_real", real), ("D_iid", iid)], "top_right")
        fig.xaxis.axis_label = "group size K"
        self.marker = Span(location=8, dimension="height", line_color="#333")
        fig.add_layout(self.marker)
        self.text = pn.pane.HTML("", css_classes=["jensen-text"], styles={"font-size": "13px"})
        self.panel = pn.Column(pn.pane.Bokeh(fig, sizing_mode="stretch_width"), self.text, sizing_mode="stretch_width")

    def prepare(self, frame: Frame) -> None:
        """Compute (and cache) the curves :meth:`update` will draw; pure, for the heavy-work thread."""
        v = frame.view
        p = v.pass_rate[v.kept]
        if p.size:
            _curves(p, frame.scenario.rho)

    def update(self, frame: Frame) -> None:
        s, v = frame.scenario, frame.view
        p = v.pass_rate[v.kept]
        if p.size == 0:
            self.source.data = {"K": _K, "real": np.full(len(_K), np.nan), "iid": np.full(len(_K), np.nan)}
            self.text.object = "<p class='jensen-caption' style='margin:0'>No prompt is kept by the filter.</p>"
            return
        real, iid = _curves(p, s.rho)
        self.source.data = {"K": _K, "real": real, "iid": iid}
        self.marker.location = s.K
        self.text.object = jensen_caption(frame)


def jensen_caption(frame: Frame) -> str:
    """The Jensen gap in words at the current K: D_real, D_iid and their difference in percentage points."""
    s, sm = frame.scenario, frame.view.summary
    return (f"<p class='jensen-caption' style='margin:0'>At K = {s.K}: D_real = <b class='jensen-real'>"
            f"{percent(sm['d_real'])}</b> of groups have no gradient, averaging each prompt's chance of a unanimous "
            f"group; D_iid = <b class='jensen-iid'>{percent(sm['d_iid'])}</b> is that chance at the mean pass rate "
            f"alone. The chance curves up at both ends (easy and hard prompts are both nearly always unanimous), "
            f"so the mean pass rate understates the waste by <b class='jensen-gap'>{points(sm['d_real'] - sm['d_iid'])}"
            f"</b> (Jensen's inequality: D_real \u2265 D_iid). DAPO-style resampling would generate "
            f"{fixed(sm['rollout_amplification'], 2)}\u00d7 the rollouts.</p>")
