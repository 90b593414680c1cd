"""The guided tour: a few steps through seed 002's story, each setting the lab's controls and saying what to notice.

A step lives in the URL (``?tour=N``, 1-based; the header links to ``?tour=1``), so a teacher can link
one. :data:`TOUR` is the story; :class:`TourState` the session's step (0: no tour); :class:`TourPanel`
the box above the tabs with Back / Next / End tour, which applies a step's settings to the
:class:`grpo_lab.state.LabState` (the grid, the plots and the URL follow as they do for any change).
"""

from __future__ import annotations

import html

import panel as pn
import param

__all__ = ["TOUR", "TourState", "TourPanel", "tour_step"]

#: (title, LabState settings, what to notice): the default population (600 prompts from Beta(2, 3))
TOUR = (
    ("Drag to the end: the green drains",
     {"progress": 1.0, "K": 8, "filter": False, "rho": 0.0},
     "Training progress is now at its end (t = 1). Every prompt's pass rate has risen, and many green cells "
     "(mixed groups, which carry a gradient) have turned orange with a + (all K rollouts pass: no gradient). "
     "Drag training progress back and forth and watch the share of groups with a gradient in the readouts."),
    ("The tails",
     {"progress": 0.0, "K": 8, "filter": False, "rho": 0.0},
     "At the start (t = 0) the waste sits in the hard tail: the vermillion cells with a \u2212 are prompts whose "
     "K rollouts all failed. Too hard and too easy waste alike: a group is unanimous with probability "
     "p^K + (1 \u2212 p)^K, the same for p and 1 \u2212 p."),
    ("Bigger K and its bill",
     {"progress": 1.0, "K": 32, "filter": False, "rho": 0.0},
     "With K = 32 rollouts per prompt most groups disagree again, so the share with a gradient looks healthy. "
     "Now read the K-cost table below the grid: useful groups per 1,000 rollouts fall as K grows, and each "
     "useful group costs several times what it costs at K = 4."),
    ("The filter and its shrinking pool",
     {"progress": 1.0, "K": 8, "filter": True, "band_lo": 0.2, "band_hi": 0.8, "rho": 0.0},
     "The difficulty filter keeps only prompts whose pass rate lies between 0.2 and 0.8 (grey cells are "
     "removed). The kept groups mostly teach, but see how few prompts are left: the readouts and the K-cost "
     "table say how many, in prompts and in rollouts. Drag training progress and watch the pool shrink."),
    ("The Jensen gap",
     {"progress": 0.5, "K": 8, "filter": False, "rho": 0.0},
     "The mean pass rate alone predicts few unanimous groups (D_iid). The real share (D_real) is larger, because "
     "prompts differ: the easy and the hard ones are unanimous far more often than the average prompt. The "
     "Jensen plot at the bottom shows the gap at every K."),
)


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


class TourPanel:
    """The tour's box: the step's title and text, Back / Next / End tour; hidden while no tour runs."""

    def __init__(self, tour: TourState, lab):
        self.tour, self.lab = tour, lab
        self.text = self.back = self.next = self.end = None  # built when a tour first shows (most visits take none)
        self.panel = pn.Column(sizing_mode="stretch_width", css_classes=["tour"], visible=False,
                               styles={"background": "#eef4fb", "border": "1px solid #9db8d9", "border-radius": "6px",
                                       "padding": "4px 0"})
        tour.param.watch(lambda _e: self.show(), "step")
        self.show()

    def _build(self) -> None:
        """The step's text and the Back / Next / End tour buttons, into the (so far empty) box."""
        self.text = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["tour-text"], margin=(0, 10))
        self.back = pn.widgets.Button(label="\u2190 Back", width=90)
        self.next = pn.widgets.Button(label="Next \u2192", color="primary", width=90)
        self.end = pn.widgets.Button(label="End tour", width=90)
        self.back.on_click(lambda _e: self.go(self.tour.step - 1))
        self.next.on_click(lambda _e: self.go(self.tour.step + 1))
        self.end.on_click(lambda _e: self.go(0))
        self.panel.objects = [self.text, pn.Row(self.back, self.next, self.end)]

    def go(self, step: int) -> None:
        """Show step ``step`` (0 ends the tour) and set the lab to it."""
        self.tour.step = max(0, min(len(TOUR), step))
        if self.tour.step:
            self.lab.param.update(**TOUR[self.tour.step - 1][1])

    def show(self) -> None:
        step = self.tour.step
        self.panel.visible = bool(step)
        if not step:
            return
        if self.text is None:
            self._build()
        title, _settings, notice = TOUR[step - 1]
        self.text.object = (f"<p class='tour-step' style='margin:4px 0;font-size:15px'><b>Guided tour, step {step} of "
                            f"{len(TOUR)}: {html.escape(title)}.</b> {html.escape(notice)}</p>")
        self.back.disabled = step == 1
        self.next.disabled = step == len(TOUR)
