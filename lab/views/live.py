"""The "Live lab" tab: controls, the prompt grid with its readouts and its two plots, and the secondary plots.

The grid, its readouts, the controls that move it (progress, K, the filter and its band) and the two main
plots (the decay curve and P(useful) over the pass-rate histogram by outcome, :mod:`grpo_lab.grid.plots`) are
one :class:`grpo_lab.grid.component.LiveGrid`, which repaints all of them in the browser through the kernel in
the same event, and whose values are linked both ways to the session's :class:`lab.state.LabState`. Python
sends a new population when it changes, evaluates the grid and the plots' curves itself while rho > 0 (the
kernel covers rho = 0 only; :func:`grpo_lab.views.decay.plot_curves`; the stall overlay's loop it sends at once, for
the browser to draw at rho = 0), and once the controls pause rewrites
the caption, the plots' text alternatives and the secondary material below the first screen (the K-cost
table and the Jensen gap), which is built when the visitor scrolls to it.
"""

from __future__ import annotations

import html

import panel as pn

from grpo_lab.debounce import Debounce
from grpo_lab.notice import NoticeLines
from grpo_lab.visitor import visitor_key
from grpo_lab.grid.component import LiveGrid, server_view
from grpo_lab.grid.markup import grid_data
from grpo_lab.grid.spec import link
from grpo_lab.state import LOOP, URL_PARAMS, LabState, PlayState
from grpo_lab.sims.scenario import evaluate

from .caption import StateCaption
from .compare import PinLink
from .controls import Controls
from .decay import loop_data, plot_curves
from .deferred import defer_build
from .formulas import formulas_pane
from .frame import Frame
from .embed import EMBED_ABOVE_PX, short_frame_caption
from .glyphs import AxisParts
from grpo_lab.grid.pin import pin_values
from .in_view import InView
from .jensen import JensenPlot
from .kcost import KCostTable
from .layout import GRID_SIZE, first_screen, plot_rows, present_buttons, present_heading
from .plot_text import decay_text, described, outcome_text
from .side_controls import side_controls
from .play_budget import BUSY_NOTICE, FrameBudget

__all__ = ["LiveLab"]

PLOTS_MIN_HEIGHT = 560  #: the plots' space, kept until they are built (no layout jump)
#: the placeholder where the plots will be, until the visitor gets to them (lab.views.in_view)
PLOTS_PLACEHOLDER = "The plots are drawn when you scroll to them."
REDRAW_DELAY_MS = 300  #: plots redraw this long after the last control change (the grid needs no wait)


def section_heading(text: str) -> pn.pane.HTML:
    """A section's heading: an ``h2`` under the page's ``h1`` (headings go down one level at a time)."""
    return pn.pane.HTML(f"<h2 style='margin:8px 0 4px;font-size:16px'>{html.escape(text)}</h2>", margin=(0, 10))


class LiveLab:
    """One session's live lab. ``panel`` is the full tab, ``embed()`` the iframe view."""

    def __init__(self, lab: LabState, play: PlayState, embed: bool = False, present: bool = False, heading: str = ""):
        """``heading``: in presentation mode, the page's heading, shown on Play and Step's row (with the tour's
        link), so the rows of a projector's screen go to the grid."""
        self.lab, self.play, self._present, self._embed = lab, play, present, embed  # present: fewer panels
        self.controls = Controls(lab, play)
        if present:
            present_buttons(self.controls.play_button, self.controls.step_button)
        scenario = lab.scenario()
        self.population = scenario.population()
        self._pop_key = lab.population_key()
        self._readouts = "main" if embed or present else "full"
        # an embed follows its iframe's width, and from 480 px sets its controls and readouts beside the grid (the
        # container gx-embed: lab/static/gridview.css), so a blog's 700x500 frame shows the slider and the whole grid
        size = {**GRID_SIZE, "css_classes": ["lab-grid", "gx-embed"], "margin": (0, 10),
                "styles": {"--gx-embed-above": f"{EMBED_ABOVE_PX}px"}} if embed else \
            {**GRID_SIZE, "css_classes": ["lab-grid"]}
        self.grid = LiveGrid.build(self.population, lab.linked_values(), scenario.gain, readouts=self._readouts,
                                   pin=not (embed or present), plots=self._plot_text(self.frame()),
                                   loop=loop_data(lab.loop_settings()), **size)
        link(lab, self.grid)
        # the stall overlay's loop goes to the browser at once (no redraw to wait for): the kernel draws it at rho = 0
        lab.param.watch(lambda *_e: setattr(self.grid, "loop", loop_data(lab.loop_settings())), list(LOOP))
        self.pin = PinLink(lab, self.grid, self.frame)  # pin and compare: the ghost beside the grid
        c = self.controls
        self.caption = StateCaption()  # the view in words; follows the plots' redraw
        self.plots = []  # the full page's plots are built once the page has loaded (_build_plots)
        lab.param.watch(self._changed, list(URL_PARAMS))  # every control the URL carries, the loop's among them
        self._redraw = Debounce(lambda: self.refresh(repaint_grid=self.lab.rho > 0), REDRAW_DELAY_MS)
        # the session's share of the server, within its visitor's and the process's (Play's pushes, server paints)
        # one pane for the URL's notice and the busy line (one Bokeh model: the first render pays for each)
        self.notices = NoticeLines(["lab-notice", "lab-busy"], css_classes=["lab-notices"])
        self._frames = FrameBudget(visitor=visitor_key(getattr(pn.state.curdoc, "session_context", None)),
                                   on_busy=lambda busy: self.notices.show("lab-busy", BUSY_NOTICE if busy else ""))
        # Play runs in the browser (the grid's play loop): the button's state goes to the grid and comes back
        # when the browser stops (at the end, or the slider grabbed); meanwhile the browser sends the progress
        # every play_sync_ms, which _changed redraws within the frame budget
        play.param.watch(lambda e: setattr(self.grid, "playing", e.new), "playing")
        self.grid.param.watch(lambda e: setattr(self.play, "playing", e.new), "playing")
        self.notices.show("lab-notice", lab.notice)  # URL text: shown verbatim
        lab.param.watch(lambda e: self.notices.show("lab-notice", e.new), "notice")
        self.refresh(repaint_grid=lab.rho > 0)
        grid_pane = self.grid
        # rho, the population, New draw and Reset: one component beside the grid (not in an embed, nor in presentation
        # mode, which keeps the controls a lecturer touches: Play / Step, progress, K, the filter and its band)
        self.side = None if embed or present else side_controls(lab, play, sizing_mode="stretch_width")
        if embed:
            short_frame_caption(self.caption.panel)
            self.panel = pn.Column(self.notices, c.main(), grid_pane, self.caption.panel,
                                   css_classes=["lab-embed"])
        else:
            # the plots (most of a session's Bokeh models and server time) stay out of the first render and are
            # built when the visitor first gets to them (lab.views.in_view): a visit that never scrolls to them
            # never pays for them, and the first screen is interactive sooner
            # presentation mode drops the secondary material (the formulas, the K-cost table, the Jensen gap)
            main = c.main()
            if present:
                main.append(present_heading(heading))
            self.panel = pn.Column(
                self.notices,
                first_screen(main, pn.Column(*[p for p in (self.side, self.caption.panel) if p is not None]), grid_pane,
                             None if present else formulas_pane("The arithmetic")),
                sizing_mode="stretch_width")
            if not present:
                self._until_seen = InView(text=PLOTS_PLACEHOLDER, sizing_mode="stretch_width")
                self._plots = pn.Column(self._until_seen, sizing_mode="stretch_width", min_height=PLOTS_MIN_HEIGHT,
                                        css_classes=["lab-plots"])
                self.panel.append(self._plots)
                doc = pn.state.curdoc
                if doc is None:  # no page (a script, a test): nothing will scroll to them, so build them now
                    self._build_plots()
                else:
                    self._until_seen.param.watch(lambda e: e.new and self._plots_soon(doc), "seen")

    def kcost_panel(self):
        """Presentation mode (whose page has no K-cost table): the K-cost table, built on the first call (the guided
        tour's step on it shows it in the tour's box) and from then on redrawn with the plots."""
        table = next((p for p in self.plots if isinstance(p, KCostTable)), None)
        if table is None:
            table = KCostTable()
            table.update(self.frame())
            self.plots.append(table)
        return table.panel

    def _plots_soon(self, doc) -> None:
        """Build the plots (the visitor has got to them) after the builds queued before, one at a time per
        process (lab.views.deferred): visitors still waiting for their first render, or for a control's
        answer, are served between two builds."""
        if not self.plots:
            defer_build(doc, self._build_plots)

    def _build_plots(self) -> None:
        """Build, fill and show the plots (in place of the placeholder); marks them ``lab-plots-ready``."""
        if self.plots:
            return
        self.plots = described(KCostTable(), JensenPlot(AxisParts()))  # with text alternatives
        frame = self.frame()
        for plot in self.plots:
            plot.update(frame)
        k, j = self.plots
        kcost = pn.Column(section_heading("The cost of bigger groups"), k.panel)
        self._plots.objects = plot_rows((kcost, pn.Column(section_heading("The Jensen gap"), *j.panel.objects)))
        self._plots.css_classes = ["lab-plots", "lab-plots-ready"]

    @staticmethod
    def _plot_text(frame: Frame) -> dict:
        """The grid's plots' text alternatives (grpo_lab.views.plot_text), from the core."""
        return {"decay": decay_text(frame), "outcome": outcome_text(frame)}

    def frame(self) -> Frame:
        scenario = self.lab.scenario()
        if self.lab.population_key() != self._pop_key:
            self.population = scenario.population()
        return Frame(scenario, self.population, evaluate(scenario, self.population), self.lab.band(), self.lab.pin,
                     self.lab.loop_settings())

    def refresh(self, repaint_grid: bool, prepared: dict | None = None) -> None:
        """Redraw the plots; repaint the grid from Python when told to (population change or rho > 0).
        ``prepared``: :meth:`prepare`'s values for this redraw (computed off the event loop), else computed now."""
        key = self.lab.population_key()
        new_population = key != self._pop_key
        if prepared is None or prepared["key"] != key:
            prepared = self.prepare(repaint_grid)
        frame = prepared["frame"]
        update = {}
        if new_population:
            self._pop_key = key
            update["data"] = grid_data(frame.population, frame.scenario.gain, readouts=self._readouts)
        if repaint_grid or (new_population and frame.scenario.rho > 0):
            update["view"] = prepared["view"] if "view" in prepared else server_view(frame.view, frame.scenario.K)
        curves = prepared["curves"]
        if curves != self.grid.curves:
            update["curves"] = curves
        text = prepared["text"]
        if text != self.grid.plot_text:
            update["plot_text"] = text
        if update:
            self.grid.param.update(**update)
        self.caption.update(frame)
        self.pin.update(frame)
        for plot in self.plots:
            plot.update(frame)

    def prepare(self, repaint_grid: bool) -> dict:
        """What :meth:`refresh` draws, from the core: the frame, the server's grid view, the curves and the plots'
        text, and the plots' cached values. Pure computation, no model touched: it may run in the heavy-work thread
        (grpo_lab.views.play_budget) while the event loop serves others."""
        frame = self.frame()
        out = {"key": self.lab.population_key(), "frame": frame}
        if repaint_grid or frame.scenario.rho > 0:
            out["view"] = server_view(frame.view, frame.scenario.K)
        out["curves"] = plot_curves(frame, pin_values(frame.pin) if frame.pin else None)  # the embed draws them too
        out["text"] = self._plot_text(frame)
        for plot in list(self.plots):
            warm = getattr(plot, "prepare", None)
            if warm is not None:
                warm(frame)
        return out

    def _changed(self, *_events) -> None:
        """Grid changes that only the server can paint, and Play's progress, are drawn now; other redraws
        wait for a pause.

        While progress, K or the filter move, the browser has already repainted the grid and the
        readouts; redrawing the plots on every step would keep the server busy and flood the page
        with plot updates mid-drag, so they are coalesced into one redraw REDRAW_DELAY_MS after
        the last change. Play never pauses: the browser sends its progress every play_sync_ms, and each
        is drawn at once within the session's frame budget (lab.views.play_budget), so the plots, tables
        and captions follow the animation, slower for a heavy view, never at the cost of other visitors.
        """
        server_paints = self.lab.rho > 0 or self.lab.population_key() != self._pop_key
        doc = pn.state.curdoc
        if server_paints or doc is None or not self.plots or self.play.playing:
            self._redraw.cancel()  # within the session's frame budget; a burst of changes coalesces
            repaint = self.lab.rho > 0
            self._frames.request(lambda prepared: self.refresh(repaint, prepared), doc,
                                 prepare=lambda: self.prepare(repaint))
            return
        self._redraw.trigger(doc)
