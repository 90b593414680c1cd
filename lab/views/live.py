"""The "Live lab" tab: controls, the prompt grid with its readouts, and the plots.

The grid and its readouts repaint in the browser (``lab.grid`` + the kernel) as the
progress, K and filter controls move; Python redraws the plots, and repaints the grid
itself when the population changes or rho > 0 (the kernel covers rho = 0 only).
"""

from __future__ import annotations

import panel as pn

from lab.debounce import Debounce
from lab.grid import Grid, callback_code
from lab.state import LabState, PlayState
from sims.scenario import evaluate

from .controls import Controls
from .decay import DecayPlot
from .formulas import formulas_pane
from .frame import Frame
from .jensen import JensenPlot
from .kcost import KCostTable
from .outcome import OutcomePlot

__all__ = ["LiveLab"]

REDRAW_DELAY_MS = 300  #: plots redraw this long after the last control change (the grid needs no wait)


class LiveLab:
    """One session's live lab. ``panel`` is the full tab, ``embed()`` the iframe view."""

    def __init__(self, lab: LabState, play: PlayState, embed: bool = False):
        self.lab, self.play = lab, play
        self.controls = Controls(lab, play)
        scenario = lab.scenario()
        self.population = scenario.population()
        self._pop_key = lab.population_key()
        self.grid = Grid(self.population, scenario, readouts="main" if embed else "full", width=560)
        c = self.controls
        code = callback_code()
        for widget in (c.progress, c.K, c.filter, c.band, c.rho):
            widget.jscallback(args=self.grid.js_args(progress=c.progress, K=c.K, filter=c.filter, band=c.band,
                                                     rho=c.rho), value=code)
        self.plots = [] if embed else [OutcomePlot(), DecayPlot(), KCostTable(), JensenPlot()]
        lab.param.watch(self._changed, ["progress", "K", "filter", "band_lo", "band_hi", "rho", "n_prompts", "a", "b",
                                        "seed"])
        self._periodic = None
        self._redraw = Debounce(lambda: self.refresh(repaint_grid=self.lab.rho > 0), REDRAW_DELAY_MS)
        play.param.watch(self._play, "playing")
        self.notice = pn.pane.Alert(lab.notice, alert_type="warning", visible=bool(lab.notice),
                                    css_classes=["lab-notice"], sizing_mode="stretch_width")
        lab.param.watch(lambda e: self.notice.param.update(object=e.new, visible=bool(e.new)), "notice")
        self.refresh(repaint_grid=False)
        grid_pane = pn.pane.Bokeh(self.grid.layout, css_classes=["lab-grid"])
        if embed:
            self.panel = pn.Column(self.notice, pn.Row(grid_pane, pn.Column(c.main(), width=320)),
                                   css_classes=["lab-embed"])
        else:
            o, d, k, j = self.plots
            self.panel = pn.Column(
                self.notice,
                pn.Row(pn.Column(c.all(), width=340), grid_pane,
                       pn.Column(pn.pane.Markdown("#### The arithmetic"), formulas_pane(), width=360)),
                pn.Row(pn.Column(o.panel, sizing_mode="stretch_width"), pn.Column(d.panel, sizing_mode="stretch_width"),
                       sizing_mode="stretch_width"),
                pn.Row(pn.Column(pn.pane.Markdown("#### The cost of bigger groups"), k.panel, sizing_mode="stretch_width"),
                       pn.Column(pn.pane.Markdown("#### The Jensen gap"), j.panel, sizing_mode="stretch_width"),
                       sizing_mode="stretch_width"),
                sizing_mode="stretch_width")

    def frame(self) -> Frame:
        scenario = self.lab.scenario()
        if self.lab.population_key() != self._pop_key:
            self.population = scenario.population()
        band = tuple(sorted((self.lab.band_lo, self.lab.band_hi)))
        return Frame(scenario, self.population, evaluate(scenario, self.population), band)

    def refresh(self, repaint_grid: bool) -> None:
        """Redraw the plots; repaint the grid from Python when told to (population change or rho > 0)."""
        key = self.lab.population_key()
        new_population = key != self._pop_key
        frame = self.frame()
        if new_population:
            self._pop_key = key
            self.grid.set_population(frame.population, frame.scenario)
        elif repaint_grid:
            self.grid.show(frame.view, frame.scenario.K)
        for plot in self.plots:
            plot.update(frame)

    def _changed(self, events) -> None:
        """Grid changes that only the server can paint happen now; plot redraws wait for a pause.

        While progress, K or the filter move, the browser has already repainted the grid and the
        readouts; redrawing the plots on every step would keep the server busy and flood the page
        with plot updates mid-drag, so they are coalesced into one redraw REDRAW_DELAY_MS after
        the last change.
        """
        server_paints = self.lab.rho > 0 or self.lab.population_key() != self._pop_key
        doc = pn.state.curdoc
        if server_paints or doc is None or not self.plots:
            self._redraw.cancel()
            self.refresh(repaint_grid=self.lab.rho > 0)
            return
        self._redraw.trigger(doc)

    def _play(self, event) -> None:
        if event.new and self._periodic is None:
            if self.lab.progress >= 1.0:
                self.lab.progress = 0.0
            self._periodic = pn.state.add_periodic_callback(self._tick, period=self.play.period_ms)
        elif not event.new and self._periodic is not None:
            self._periodic.stop()
            self._periodic = None

    def _tick(self) -> None:
        if not self.play.tick(self.lab) and self._periodic is not None:
            self._periodic.stop()
            self._periodic = None
