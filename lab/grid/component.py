"""The served lab's grid: :class:`LiveGrid`, a Panel component over the browser grid view.

The view (``lab/static/gridview.js``, shared with the exported page) holds the lab's main
controls (training progress, K, the difficulty filter and its band) as native inputs, the
readouts and the canvas of cells. Its controls are :class:`grpo_lab.grid.spec.GridControls`,
which this component extends (as :class:`grpo_lab.state.LabState` does; :func:`grpo_lab.grid.spec.link`
keeps the two in step). Moving a control repaints in the browser, through the
kernel, in the same event, with its two plots (``plots``: the decay curve and P(useful) over the histogram
by outcome, :mod:`grpo_lab.grid.plots`); the values then reach Python, which rewrites the caption, the
secondary plots and the URL once the controls pause. Python's changes (URL, play, step, reset, a new
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

from ..kernel import b64, kernel_source
from .hover import hover_advantages
from .markup import STATIC, STYLE_PATH, controls_html, grid_data, grid_html
from .pin import pin_html
from .plots import plots_html
from .spec import PLAY_SECONDS, PLAY_SYNC_MS, PROGRESS_STEP, GridControls, control_spec

__all__ = ["LiveGrid", "server_view"]

def _module_source() -> str:
    """The component's ES module: the kernel, the cell painter and the grid view, then its own glue."""
    parts = [kernel_source()] + [(STATIC / name).read_text(encoding="utf-8")
                                 for name in ("cells.js", "gridview.js", "live_plots.js", "live_grid.js")]
    return "\n".join(parts)


def _json_number(v):
    """An int stays an int; a float that is NaN or infinite becomes None (JSON has no NaN)."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    v = float(v)
    return v if math.isfinite(v) else None


def server_view(view, K: int) -> dict:
    """An evaluated view (``sims.scenario.evaluate``) as ``grpoGridView.show`` takes it: per-prompt arrays
    as little-endian base64 (int8 outcome, uint8 kept, float64 pass rate now, int32 successes), the summary's
    numbers, rho, and with rho > 0 the shared rates q (float64; the hover's rollouts pass iff u < q, and q is
    the pass rate itself at rho = 0)."""
    summary = {k: _json_number(v) for k, v in view.summary.items() if isinstance(v, (int, float, np.number))}
    rho = float(view.summary.get("parameters", {}).get("rho", 0.0))
    out = {"K": int(K), "rho": rho, "outcome": b64(view.outcome, "<i1"), "kept": b64(view.kept, "<u1"),
           "p_now": b64(view.pass_rate, "<f8"), "k": b64(view.successes, "<i4"), "summary": summary}
    if rho > 0:
        out["q"] = b64(view.shared_rate, "<f8")
    return out


class LiveGrid(JSComponent, GridControls):
    """Controls, readouts and the prompt grid, repainted in the browser (see the module docstring).

    The controls' parameters (progress, K, filter, band_lo, band_hi, rho) are
    :class:`~grpo_lab.grid.spec.GridControls`'; the rest is what the browser is sent.
    """

    server_paints = param.Boolean(False, doc=(
        "Show Python's `view` whatever rho is: every move is a browser -> Python -> browser round trip "
        "(benchmarks/bench_lab_latency.py's baseline)."))
    data = param.Dict(default={}, doc="The population, packed by grpo_lab.grid.markup.grid_data.")
    advantages = param.Dict(default=None, allow_None=True, doc=(
        "The hover's advantage table (grpo_lab.grid.hover.hover_advantages); set once, whatever the population."))
    view = param.Dict(default=None, allow_None=True, doc="Python's view (server_view), shown while rho > 0.")
    markup = param.String(default="", doc="The view's HTML (grpo_lab.grid.markup), with the control spec; set once.")
    curves = param.Dict(default=None, allow_None=True, doc=(
        "The plots' curves while rho > 0 (the kernel covers rho = 0 only): {decay: {t, exp, real, exp_f, real_f}, "
        "useful: P(useful) at 401 pass rates, stall: the loop's overlay (grpo_lab.views.decay.stall_columns), pinned: "
        "the pinned view's P(useful) when it has rho > 0}; None at rho = 0."))
    loop = param.Dict(default=None, allow_None=True, doc=(
        "The stall overlay's trainer loop (grpo_lab.views.decay.loop_data: loop, sizes, the core's STALL_LEVEL and "
        "MAX_PROMPTS, the key's words), which the browser draws on the decay curve at rho = 0 (grpoKernel.loopStall, "
        "in the grid's event); None: no loop."))
    plot_text = param.Dict(default={}, doc=(
        "The plots' text alternatives {decay, outcome} (grpo_lab.views.plot_text), set as their aria-label."))
    pin_clicks = param.Integer(default=0, doc="Presses of the Pin button (grpo_lab.views.compare.PinLink answers).")
    ghost = param.Dict(default=None, allow_None=True, doc=(
        "The pinned view, painted as a ghost beside the grid: {key, title, label (the canvas's), view (server_view)}; "
        "None: no pin."))
    compare = param.String(default="", doc="The pinned view against the live one (grpo_lab.views.compare), HTML.")
    playing = param.Boolean(default=False, doc=(
        "Play: while true the browser animates training progress (grpoGridView's play loop) and sends it every "
        "play_sync_ms; the browser sets it back to false when play stops (at the end, or the slider grabbed)."))
    play_seconds = param.Number(default=PLAY_SECONDS, bounds=(0.5, None), doc="Play's whole sweep, in seconds.")
    play_sync_ms = param.Integer(default=PLAY_SYNC_MS, bounds=(50, None), doc=(
        "While playing, the browser sends the progress this often (the path a slider drag uses), and once more "
        "when play stops: the plots, tables and captions follow the animation at that rate."))

    _esm = _module_source()
    _stylesheets = [STYLE_PATH.read_text(encoding="utf-8"), (STATIC / "live_layout.css").read_text(encoding="utf-8")]

    @classmethod
    def build(cls, population: Population, values: dict, gain: float, *, readouts: str = "full",
              progress_step: float = PROGRESS_STEP, pin: bool = False, plots: dict | None = None,
              **layout) -> "LiveGrid":
        """A LiveGrid for a population and control values (``GridControls.linked_values()``: the band in order);
        with ``pin``, the Pin button and the ghost's box (:func:`grpo_lab.grid.pin.pin_html`) under the grid;
        with ``plots`` (their text alternatives {decay, outcome}), the two plots beside it
        (:func:`grpo_lab.grid.plots.plots_html`)."""
        data = grid_data(population, gain, readouts=readouts)
        markup = controls_html(values, control_spec(progress_step)) + grid_html(population.n, data["geometry"])
        if plots is not None:
            markup += plots_html(plots.get("decay", ""), plots.get("outcome", ""))
            layout["css_classes"] = [*layout.get("css_classes", []), "gx-with-plots"]
            layout["plot_text"] = dict(plots)
        if pin:
            markup += pin_html()
        return cls(markup=markup, data=data, advantages=hover_advantages(), **values, **layout)
