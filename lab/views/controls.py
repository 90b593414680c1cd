"""The live lab's controls beside the grid: widgets bound to :class:`lab.state.LabState`, their help as text.

Training progress, K, the filter and its band belong to the grid itself (:class:`grpo_lab.grid.component.LiveGrid`),
which repaints in the browser as they move; the widgets here are those that need the server anyway.
"""

from __future__ import annotations

import html

import panel as pn

from grpo_lab.state import LabState, PlayState

__all__ = ["Controls", "hint", "hinted"]

_TIPS = {
    "play": "Play / pause: animate training progress from its current value to 1.",
    "step": "Step: advance training progress by 0.05.",
    "reset": "Reset every control to the defaults (the view of `grpo-lab population`).",
    "new_draw": "New draw: the same difficulty distribution, a new random seed.",
}

_PLAY_LABEL = {False: "\u25b6 Play", True: "\u275a\u275a Pause"}


_POPULATION = ("Prompts: one cell each; their starting pass rates are drawn from Beta(a, b), and the seed fixes "
               "the draw (New draw picks another).")


def hint(text: str) -> pn.pane.HTML:
    """A line of help shown as text (a ``?`` icon sat on its label, took no focus and said nothing to a reader)."""
    return pn.pane.HTML(f"<p style='margin:0 10px 6px;font-size:13px;color:#333'>{html.escape(text)}</p>",
                        sizing_mode="stretch_width", margin=0)


def hinted(widget, text: str) -> pn.Column:
    """The widget with its help text under it."""
    return pn.Column(widget, hint(text), sizing_mode="stretch_width", margin=0)


class Controls:
    """Widgets for one session's LabState and PlayState (``main`` for embeds, ``all`` otherwise)."""

    def __init__(self, lab: LabState, play: PlayState):
        self.lab, self.play = lab, play
        p = lab.param
        self.rho = pn.widgets.FloatSlider.from_param(p.rho, name="Rollout correlation rho", css_classes=["ctl-rho"])
        self.n_prompts = pn.widgets.IntInput.from_param(p.n_prompts, name="Prompts", description=None, width=80)
        self.a = pn.widgets.FloatInput.from_param(p.a, name="Beta a", step=0.1, description=None, width=70)
        self.b = pn.widgets.FloatInput.from_param(p.b, name="Beta b", step=0.1, description=None, width=70)
        self.seed = pn.widgets.IntInput.from_param(p.seed, name="Seed", description=None, width=90)
        self.play_button = pn.widgets.Toggle.from_param(play.param.playing, label=_PLAY_LABEL[play.playing],
                                                        color="primary", width=110)
        play.param.watch(lambda e: setattr(self.play_button, "label", _PLAY_LABEL[e.new]), "playing")
        self.step_button = pn.widgets.Button(label="Step", description=_TIPS["step"], width=70)
        self.reset_button = pn.widgets.Button(label="Reset", description=_TIPS["reset"], width=70)
        self.new_draw_button = pn.widgets.Button(label="New draw", description=_TIPS["new_draw"], width=90)

        self.step_button.on_click(lambda _e: lab.step(0.05))
        self.reset_button.on_click(lambda _e: (setattr(play, "playing", False), lab.reset()))
        self.new_draw_button.on_click(lambda _e: lab.new_draw())

    def main(self) -> pn.Row:
        """Play and step: the controls of an embed beside the grid's own."""
        return pn.Row(self.play_button, self.step_button)

    def all(self) -> pn.Column:
        """Every control beside the grid: play and step, rho, the population and the buttons."""
        return pn.Column(self.main(), *self.rest().objects, sizing_mode="stretch_width")

    def rest(self) -> pn.Column:
        """Every control but play and step (those go first on a phone: lab.views.layout.first_screen)."""
        population = pn.FlexBox(self.n_prompts, self.a, self.b, self.seed, flex_wrap="wrap")  # wraps on a phone
        return pn.Column(hint(_TIPS["play"]), hinted(self.rho, self.lab.param.rho.doc), "**Population**",
                         population, hint(_POPULATION), pn.Row(self.new_draw_button, self.reset_button),
                         sizing_mode="stretch_width")
