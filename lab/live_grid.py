"""The served lab's grid: :class:`LiveGrid`, a Panel component over the browser grid view.

The view (``lab/static/gridview.js``, shared with the exported page) holds the lab's main
controls (training progress, K, the difficulty filter and its band) as native inputs, the
readouts and the canvas of cells. Moving a control repaints in the browser, through the
kernel, in the same event; the values then reach Python (this component's parameters, linked
to :class:`lab.state.LabState` by :class:`lab.views.live.LiveLab`), which redraws the plots
and writes the URL once the controls pause. Python's changes (URL, play, step, reset, a new
population) flow the other way. With rho > 0 the kernel does not apply: Python evaluates the
view and sends it (``view``), and the browser shows that.

Why not Bokeh widgets and a Bokeh figure: on the 2-core reference machine a slider step through
Panel's slider, Bokeh's property machinery and a Bokeh canvas repaint took 25-37 ms of work
(see README, "Speed, measured"); native inputs and one ``putImageData`` leave the browser's own
frame as the main cost.
"""

from __future__ import annotations

import math

import numpy as np
import param
from panel.custom import JSComponent

from grpo_lab.sims.population import Population

from .grid_html import STYLE_PATH, controls_html, grid_data, grid_html, hover_advantages
from .kernel import b64, kernel_source

__all__ = ["LiveGrid", "server_view"]

_STATIC = STYLE_PATH.parent


def _module_source() -> str:
    """The component's ES module: the kernel, the cell painter and the grid view, then its own glue."""
    parts = [kernel_source()] + [(_STATIC / name).read_text(encoding="utf-8")
                                 for name in ("cells.js", "gridview.js", "live_grid.js")]
    return "\n".join(parts)


def _json_number(v):
    """An int stays an int; a float that is NaN or infinite becomes None (JSON has no NaN)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


def server_view(view, K: int) -> dict:
    """An evaluated view (``sims.scenario.evaluate``) as ``grpoGridView.show`` takes it: per-prompt arrays
    as little-endian base64 (int8 outcome, uint8 kept, float64 pass rate now, int32 successes), the summary's numbers."""
    summary = {k: _json_number(v) for k, v in view.summary.items() if isinstance(v, (int, float, np.number))}
    return {"K": int(K), "outcome": b64(view.outcome, "<i1"), "kept": b64(view.kept, "<u1"),
            "p_now": b64(view.pass_rate, "<f8"), "k": b64(view.successes, "<i4"), "summary": summary}


class LiveGrid(JSComponent):
    """Controls, readouts and the prompt grid, repainted in the browser (see the module docstring)."""

    progress = param.Number(0.0, bounds=(0.0, 1.0))
    K = param.Integer(8, bounds=(1, 64))
    filter = param.Boolean(False)
    band_lo = param.Number(0.2, bounds=(0.0, 1.0))
    band_hi = param.Number(0.8, bounds=(0.0, 1.0))
    rho = param.Number(0.0, bounds=(0.0, 1.0), doc="With rho > 0 the browser shows `view` (Python's) instead.")
    server_paints = param.Boolean(False, doc=(
        "Show Python's `view` whatever rho is: every move is a browser -> Python -> browser round trip "
        "(benchmarks/bench_lab_latency.py's baseline)."))
    data = param.Dict(default={}, doc="The population, packed by lab.grid_html.grid_data.")
    advantages = param.Dict(default=None, allow_None=True, doc=(
        "The hover's advantage table (lab.grid_html.hover_advantages); set once, whatever the population."))
    view = param.Dict(default=None, allow_None=True, doc="Python's view (server_view), shown while rho > 0.")
    markup = param.String(default="", doc="The view's HTML (lab.grid_html); set once.")

    _esm = _module_source()
    _stylesheets = [STYLE_PATH.read_text(encoding="utf-8")]

    @classmethod
    def build(cls, population: Population, values: dict, gain: float, *, readouts: str = "full",
              progress_step: float = 0.01, **layout) -> "LiveGrid":
        """A LiveGrid for a population and control values {progress, K, filter, band_lo <= band_hi[, rho]}."""
        data = grid_data(population, gain, readouts=readouts)
        markup = (controls_html(values["progress"], values["K"], values["filter"], (values["band_lo"], values["band_hi"]),
                                progress_step=progress_step)
                  + grid_html(population.n, data["geometry"]))
        return cls(markup=markup, data=data, advantages=hover_advantages(), **values, **layout)
