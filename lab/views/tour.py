"""The guided tour: nine steps that teach GRPO's zero-variance groups from nothing, on the lab itself.

Each :class:`Step` sets the lab's controls, says what to notice (for a reader who has never heard of GRPO)
and names the part of the page it talks about by stable CSS selectors (``targets``: the first that is on
the page wins), so the tour finds it wherever the layout puts it. A step lives in the URL (``?tour=N``,
1-based; the header links to ``?tour=1``), so a teacher can link one.

:data:`TOUR` is the story; :class:`TourState` the session's step (0: no tour); :class:`TourPanel` the box
above the tabs (sticky at the top of the window while a tour runs) with Back / Next / End tour, which
applies a step's settings to the :class:`grpo_lab.state.LabState` (the grid, the plots and the URL follow
as they do for any change). Its :class:`TourDriver` (``lab/static/tour.js``) does the browser's part: it
finds the step's element through shadow roots, scrolls it into the window below the box, outlines it
(the ``tour-highlight`` class), and on the drain step moves the grid's own progress slider from its
minimum to its maximum over :data:`DRAIN_SECONDS` (one input event per animation frame, as a reader's
drag would send), so the grid, the readouts and the plots animate instead of jumping to t = 1.

The figures quoted in the text (``{useful_t0}`` and the like) are computed from the core for the default
population the first time a tour is shown (:func:`tour_figures`), never typed, and each is one the step's outlined
element shows: while the step is on screen (:attr:`Step.shows`), at the start of its drain (:attr:`Step.shows_first`)
or once the reader has made the move the text asks for (:attr:`Step.move`, e.g. "drag training progress to 1 and the
same readout falls to 8.7%"). A setting the text quotes (K = 32, t = 0.4, the band 0.2 to 0.8) is one the controls the
step names show (:attr:`Step.controls`). tests/test_teaching_browser.py checks every number of every step so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import panel as pn
import param
from panel.custom import JSComponent

from grpo_lab.sims.formatting import fixed, percent

from .layout import PRESENT_TOUR_BUTTON_PX

__all__ = ["TOUR", "Step", "TourState", "TourPanel", "TourDriver", "tour_step", "tour_figures", "Move", "BAND",
           "DRAIN_SECONDS",
           "HIGHLIGHT_CLASS"]

DRAIN_SECONDS = 2.5  #: the drain step moves training progress from 0 to 1 over this long
HIGHLIGHT_CLASS = "tour-highlight"  #: the class the tour puts on the element a step talks about
_JS = Path(__file__).resolve().parents[1] / "static" / "tour.js"

#: stable hooks of the parts of the page the tour points at, newest layout first
GRID = (".gx-grid",)
KEY = (".grpo-legend",)
READOUTS = (".gx-readouts",)
PROGRESS = (".gx-field:has(#gx-progress)", "#gx-progress")
K_CONTROL = (".gx-field:has(#gx-K)", "#gx-K")
FILTER = (".gx-check:has(#gx-filter)", "#gx-filter")
DECAY = (".gx-plot-decay", ".lab-decay")
HISTOGRAM = (".gx-plot-outcome", ".lab-outcome")
KCOST = (".kcost",)
BAND = (".gx-band",)  #: the filter's band (its two sliders and the values they set)
PLAY = (".lab-play",)  #: the Play button (lab.views.controls.Controls gives it the class)


@dataclass(frozen=True)
class Move:
    """A move a step's text asks the reader to make: set the range input ``control`` (a selector) to ``value``; its
    outlined element then shows the figures ``shows`` (keys of :func:`tour_figures`)."""

    control: str
    value: float
    shows: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """One step: its title, the lab settings it applies, its text (with ``{figure}`` fields from
    :func:`tour_figures`), the selectors of what it talks about, and whether it animates the drain."""

    title: str
    settings: dict
    text: str
    targets: tuple[str, ...]
    drain: bool = False
    reveal: tuple[str, ...] = field(default=(".lab-plots",))  #: scrolled to first when no target is on the page yet
    #: the controls the text tells the reader to use or whose settings it quotes (each a tuple of selectors): brought
    #: into the window with the subject, never under the tour's box
    controls: tuple[tuple[str, ...], ...] = ()
    #: the figures it quotes (keys of tour_figures) that its outlined element shows while it is on screen (a drain step:
    #: at the drain's end), at its drain's start, and after the move its text asks for
    shows: tuple[str, ...] = ()
    shows_first: tuple[str, ...] = ()
    move: Move | None = None


_BASE = {"K": 8, "filter": False, "band_lo": 0.2, "band_hi": 0.8, "rho": 0.0}

TOUR = (
    Step("Prompts, rollouts and groups",
         {**_BASE, "progress": 0.0},
         "A model learning to solve problems is shown a prompt (one problem with a checkable answer) and writes K "
         "attempts at it, called rollouts; each passes or fails, and the chance that an attempt passes is the "
         "prompt's pass rate. GRPO treats the K rollouts of one prompt as a group and gives each rollout an "
         "advantage, its reward minus the group's average: rollouts that beat their siblings are made more likely, "
         "the others less likely. Each cell of this grid is one prompt's group of K rollouts (the group size, "
         "K = 8 here), at the very start of training.",
         GRID, controls=(K_CONTROL,)),
    Step("What the colours mean",
         {**_BASE, "progress": 0.0},
         "Green: the group's rollouts disagree (some pass, some fail), so their advantages differ from zero and the "
         "model learns from them. Orange with a +: all K passed. Vermillion with a \u2212: all K failed. In a "
         "unanimous group every reward equals the group's average, so under group centring (grpo, dr_grpo) every "
         "advantage is exactly zero: K rollouts were paid for and nothing is learnt. An estimator with a fixed "
         "reference instead (sign, tasa) compares each reward with a set threshold, so an all-pass group still gets a "
         "push. Point at a cell to see each estimator's advantage and why.",
         KEY),
    Step("Watch the drain",
         {**_BASE, "progress": 0.0},
         "Training progress t now runs from 0 (start of training) to 1 (end). As the model improves every pass "
         "rate rises, and green cells turn orange: the prompts become too easy for their group to disagree. "
         "The readouts follow: groups with a gradient (realised, the groups on the grid) fall from {useful_t0} at "
         "t = 0 to {useful_t1} at t = 1. Drag training progress yourself, or press Play, to see it again.",
         READOUTS, drain=True, controls=(PLAY, PROGRESS), shows=("useful_t1",), shows_first=("useful_t0",)),
    Step("Where the gradient lives",
         {**_BASE, "progress": 0.5},
         "The curve is the chance that a group of K disagrees at pass rate p: 1 \u2212 p^K \u2212 (1 \u2212 p)^K, "
         "high in the middle and zero at both ends, for hard prompts (p near 0) and easy ones (p near 1) alike. The "
         "bars count the prompts at each pass rate by what their group did: halfway through training most sit on the "
         "right, where the curve drops. At the mean pass rate (the dashed line, {mean_t05}) the curve reads "
         "{iid_useful_t05}, but averaged over the prompts it gives {real_useful_t05}: the mean alone understates the "
         "waste by {jensen_t05} (the Jensen gap, drawn against K below the plots).",
         HISTOGRAM, shows=("mean_t05", "iid_useful_t05", "real_useful_t05", "jensen_t05")),
    Step("The environment expires",
         {**_BASE, "progress": 1.0},
         "The decay curve is the whole run at once: the share of groups with a gradient at every training "
         "progress (the line: expected; the dots: the groups on the grid), here with dots falling from {useful_t0} "
         "to {useful_t1} at K = 8. The same prompts that taught the model at the start are spent by the end: the "
         "groups that lost their gradient turned orange, all-pass.",
         DECAY, shows=("useful_t0", "useful_t1")),
    Step("A bigger group",
         {**_BASE, "progress": 1.0, "K": 32},
         "More rollouts per prompt make a disagreement likelier: with K = 32 the readouts say {useful_k32} of groups "
         "carry a gradient at the end of training. Drag the group size back to 8 and the same readout falls to "
         "{useful_t1}, the grid orange again; drag it up and watch the grid turn green.",
         READOUTS, controls=(K_CONTROL,), shows=("useful_k32",), move=Move("#gx-K", 8, ("useful_t1",))),
    Step("... and its bill",
         {**_BASE, "progress": 1.0, "K": 32},
         "Every rollout costs compute. The table prices each K for the prompts on screen: a useful group "
         "costs {rpu_k8} rollouts at K = 8 but {rpu_k32} at K = 32. With K = 32, {share_k32} of groups (and so of "
         "rollouts) have a gradient, against {share_k8} at K = 8, yet they make only {ug_k32} useful groups per 1,000 "
         "rollouts, against {ug_k8}: each group takes K rollouts. A bigger K rescues groups by buying more rollouts, "
         "not cheaper ones.",
         KCOST, shows=("rpu_k8", "rpu_k32", "share_k8", "share_k32", "ug_k8", "ug_k32")),
    Step("The difficulty filter",
         {**_BASE, "progress": 0.4, "filter": True},
         "The filter trains only on prompts whose current pass rate lies in a band (here 0.2 to 0.8) and greys "
         "out the rest. At t = 0.4 the readouts say it keeps {kept_t04} of the prompts, and nearly all kept groups "
         "carry a gradient. Now drag training progress to 1 and the same readout falls to {kept_t1}: the filter "
         "saves rollouts but runs out of prompts.",
         READOUTS, controls=(FILTER, BAND, PROGRESS), shows=("kept_t04",), move=Move("#gx-progress", 1.0, ("kept_t1",))),
    Step("Your own run",
         {**_BASE, "progress": 1.0, "filter": True},
         "With the filter on, the readouts expect {useful_band_t1} of the kept groups to carry a gradient at the end "
         "of training (where the decay curve's dashed line ends), but the filter keeps only {kept_t1} of the prompts "
         "({n_kept_t1} of {n_prompts}); the others no longer teach the model anything. The filter saves rollouts, it "
         "does not stop the environment from expiring. A practitioner asks: which K, which filter, and when does my "
         "environment expire? The decay curve answers for this population; the Replay tab shows the same for a real run (ours, or your "
         "TRL, verl or JSONL logs), and grpo-lab doctor forecasts when its groups stop teaching.",
         READOUTS, controls=(FILTER,), shows=("useful_band_t1", "kept_t1", "n_kept_t1", "n_prompts")),
)


@lru_cache(maxsize=1)
def tour_figures() -> dict[str, str]:
    """The figures the steps quote, for the default population (600 prompts from Beta(2, 3)), from the core, each
    as the element its step outlines shows it (:attr:`Step.shows`, :attr:`Step.shows_first`, :attr:`Move.shows`):
    the readouts' realised column and the decay curve's dots (the groups on the grid), the readouts' expected column
    with the filter on (the kept prompts' expected share, where the decay curve's dashed line ends), the kept share
    and count, the outcome plot's curve read at the mean pass rate (``d_iid``) and averaged over the prompts
    (``d_real``), the K-cost table (:func:`grpo_lab.sims.kcost.k_cost` over the prompts counted)."""
    from grpo_lab.sims.formatting import points
    from grpo_lab.sims.kcost import k_cost
    from grpo_lab.sims.scenario import Scenario, evaluate
    from grpo_lab.sims.sweep import useful_share_curve

    def view(**kw):
        return evaluate(Scenario(**kw))

    t0, t1, k32 = (view(progress=0.0).summary, view(progress=1.0), view(progress=1.0, K=32).summary)
    half = view(progress=0.5).summary
    band_t1 = view(progress=1.0, band=(0.2, 0.8)).summary
    c = k_cost(t1.pass_rate[t1.kept], [8, 32])  # the table's rows at t = 1, K = 8 and 32 (every prompt counted)
    base = Scenario(progress=1.0, band=(0.2, 0.8))
    dashed_t1 = useful_share_curve(base.population(), [1.0], base.K, base.rho, base.band, base.gain)["expected"][0]
    t1 = t1.summary
    return {"useful_t0": percent(t0["useful_share_realised"]), "useful_t1": percent(t1["useful_share_realised"]),
            "useful_k32": percent(k32["useful_share_realised"]),
            "mean_t05": percent(half["mean_pass_rate"]), "iid_useful_t05": percent(1.0 - half["d_iid"]),
            "real_useful_t05": percent(1.0 - half["d_real"]), "jensen_t05": points(half["d_real"] - half["d_iid"]),
            "rpu_k8": fixed(c["rollouts_per_useful"][0], 1), "rpu_k32": fixed(c["rollouts_per_useful"][1], 1),
            "share_k8": percent(c["useful_share"][0]), "share_k32": percent(c["useful_share"][1]),
            "ug_k8": fixed(c["useful_per_1000_rollouts"][0], 1), "ug_k32": fixed(c["useful_per_1000_rollouts"][1], 1),
            "kept_t04": percent(view(progress=0.4, band=(0.2, 0.8)).summary["kept_share"]),
            "kept_t1": percent(band_t1["kept_share"]), "useful_band_t1": percent(dashed_t1),
            "n_kept_t1": f"{band_t1['n_kept']:,}", "n_prompts": f"{band_t1['n_prompts']:,}"}


def step_text(step: int) -> str:
    """Step ``step``'s text (1-based) with its figures filled in."""
    return TOUR[step - 1].text.format(**tour_figures())


def tour_step(raw) -> int:
    """A tour step from a URL value: 1..len(TOUR), or 0 (no tour) for anything else."""
    try:
        step = int(str(raw).strip())
    except (TypeError, ValueError):
        return 0
    return step if 1 <= step <= len(TOUR) else 0


class TourState(param.Parameterized):
    """The session's tour step: 0 when no tour runs, else 1..len(TOUR)."""

    step = param.Integer(0, bounds=(0, len(TOUR)), doc="The guided tour's step (0: no tour).")


class TourDriver(JSComponent):
    """The tour's browser part (``lab/static/tour.js``): outline and scroll to ``targets``, animate the drain.

    ``nonce`` changes each time a step is shown (so showing the same step again runs it again)."""

    targets = param.List(default=[], item_type=str, doc="CSS selectors of the step's subject; the first on the page wins.")
    reveal = param.List(default=[], item_type=str, doc="Scrolled to while no target is on the page (lazily built parts).")
    controls = param.List(default=[], item_type=list, doc=(
        "The controls the step's text names, each a list of selectors: brought into view with the subject, never "
        "under the tour's box."))
    drain = param.Boolean(default=False, doc="Move the grid's progress slider from its minimum to its maximum.")
    drain_seconds = param.Number(default=DRAIN_SECONDS, bounds=(0.1, None), doc="The drain's length, in seconds.")
    highlight = param.String(default=HIGHLIGHT_CLASS, doc="The class put on the step's subject.")
    present = param.Boolean(default=False, doc=(
        "Presentation mode: dock the tour's box where it hides nothing (a column at the right of a wide window, else "
        "a band at the top) and leave it that room in the page's layout, instead of scrolling (lab.views.layout)."))
    nonce = param.Integer(default=0, doc="Bumped each time a step is shown.")

    _esm = _JS.read_text(encoding="utf-8")


#: the box stays at the top of the window while the page scrolls to a step's subject (at most 40% of a phone's height)
_BOX_CSS = """
:host { position: sticky; top: 0; z-index: 20; max-height: 45vh; overflow: auto;
  box-shadow: 0 2px 6px rgba(0, 0, 0, .15); }
"""


class TourPanel:
    """The tour's box: the step's title and text, Back / Next / End tour; hidden while no tour runs.

    ``on_step``: called (no arguments) each time a step is shown, e.g. to bring the Live lab tab forward.
    ``present``: presentation mode (the box docks beside or above the lab: ``lab/static/tour.js``; its text is sized
    for a projector's back row by ``lab.views.layout.PRESENT_CSS``). ``figures``: selector -> a function returning a
    panel, shown in the box under the text of a step whose targets name that selector (presentation mode builds no
    K-cost table on its page, so the step on it shows one here)."""

    def __init__(self, tour: TourState, lab, on_step=None, present: bool = False, figures: dict | None = None):
        self.tour, self.lab, self.on_step, self.present = tour, lab, on_step, present
        self.figures = dict(figures or {})
        self.figure = None  # the box's slot for a step's figure (built with the box)
        self.text = self.back = self.next = self.end = self.driver = None  # built when a tour first shows
        self.panel = pn.Column(sizing_mode="stretch_width", css_classes=["tour"], visible=False,
                               stylesheets=[_BOX_CSS],
                               styles={"background": "#eef4fb", "border": "1px solid #9db8d9", "border-radius": "6px",
                                       "padding": "4px 0"})
        tour.param.watch(lambda _e: self.show(), "step")
        self.show()

    def _build(self) -> None:
        """The step's text, the Back / Next / End tour buttons and the driver, into the (so far empty) box."""
        self.text = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["tour-text"], margin=(0, 10))
        self.back = pn.widgets.Button(label="\u2190 Back", width=90)
        self.next = pn.widgets.Button(label="Next \u2192", color="primary", width=90)
        self.end = pn.widgets.Button(label="End tour", width=90)
        self.back.on_click(lambda _e: self.go(self.tour.step - 1))
        self.next.on_click(lambda _e: self.go(self.tour.step + 1))
        self.end.on_click(lambda _e: self.go(0))
        self.driver = TourDriver(width=0, height=0, margin=0, present=self.present)
        if self.present:  # wide enough for their labels in presentation mode's type, three to a 380 px column
            for b in (self.back, self.next, self.end):
                b.width = PRESENT_TOUR_BUTTON_PX
        buttons = pn.Row(self.back, self.next, self.end, self.driver, css_classes=["tour-buttons"])
        if self.figures:  # a slot for a step's figure, only where there are figures (one Bokeh model fewer elsewhere)
            self.figure = pn.Column(sizing_mode="stretch_width", margin=(0, 4), visible=False, css_classes=["tour-figure"])
        self.panel.objects = [p for p in (self.text, self.figure, buttons) if p is not None]

    def go(self, step: int) -> None:
        """Show step ``step`` (0 ends the tour) and set the lab to it."""
        step = max(0, min(len(TOUR), step))
        if step:
            self.lab.param.update(**TOUR[step - 1].settings)
        if step == self.tour.step:
            self.show()  # the same step again: run it again (scroll, outline, drain)
        self.tour.step = step

    def show(self) -> None:
        step = self.tour.step
        self.panel.visible = bool(step)
        if not step:
            if self.driver is not None:
                self.driver.param.update(targets=[], reveal=[], controls=[], drain=False, nonce=self.driver.nonce + 1)
            return
        if self.text is None:
            self._build()
        s = TOUR[step - 1]
        self.text.object = (f"<div class='tour-step' aria-live='polite' style='margin:4px 0;font-size:15px;"
                            f"line-height:1.45'><b>Guided tour, step {step} of {len(TOUR)}: {html.escape(s.title)}.</b> "
                            f"{html.escape(step_text(step))}</div>")
        self.back.disabled = step == 1
        self.next.disabled = step == len(TOUR)
        if self.on_step is not None:
            self.on_step()
        if self.figure is not None:  # after on_step: the tab a figure comes from is built by then
            figures = [build() for sel, build in self.figures.items() if sel in s.targets]
            self.figure.objects = [f for f in figures if f is not None]
            self.figure.visible = bool(self.figure.objects)
            self.panel.css_classes = ["tour", "tour-with-figure"] if self.figure.visible else ["tour"]
        self.driver.param.update(targets=list(s.targets), reveal=list(s.reveal), controls=[list(c) for c in s.controls],
                                 drain=s.drain,
                                 nonce=self.driver.nonce + 1)
