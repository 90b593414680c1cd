"""The live lab's controls: widgets bound to :class:`lab.state.LabState`, each with a tooltip."""

from __future__ import annotations

import panel as pn

from lab.state import LabState, PlayState

__all__ = ["Controls", "tip"]

_TIPS = {
    "band": "Keep prompts whose current pass rate lies in this band.",
    "play": "Play / pause: animate training progress from its current value to 1.",
    "step": "Step: advance training progress by 0.05.",
    "reset": "Reset every control to the defaults (the view of `grpo-lab population`).",
    "new_draw": "New draw: the same difficulty distribution, a new random seed.",
}

_PLAY_LABEL = {False: "\u25b6 Play", True: "\u275a\u275a Pause"}


def tip(widget, text: str) -> pn.Row:
    """The widget with a tooltip icon beside it (for widgets without a ``description``)."""
    return pn.Row(widget, pn.widgets.TooltipIcon(value=text, margin=(18, 0, 0, 0)), sizing_mode="stretch_width")


class Controls:
    """Widgets for one session's LabState and PlayState (``main`` for embeds, ``all`` otherwise)."""

    def __init__(self, lab: LabState, play: PlayState):
        self.lab, self.play = lab, play
        p = lab.param
        self.progress = pn.widgets.FloatSlider.from_param(p.progress, name="Training progress t", step=0.01,
                                                          css_classes=["ctl-progress"])
        self.K = pn.widgets.IntSlider.from_param(p.K, name="Group size K", css_classes=["ctl-K"])
        self.filter = pn.widgets.Checkbox.from_param(p.filter, name="Difficulty filter",
                                                     css_classes=["ctl-filter"])
        self.band = pn.widgets.RangeSlider(name="Filter band (pass rate)", start=0.0, end=1.0, step=0.01,
                                           value=tuple(sorted((lab.band_lo, lab.band_hi))),
                                           css_classes=["ctl-band"])
        self.rho = pn.widgets.FloatSlider.from_param(p.rho, name="Rollout correlation rho", step=0.05,
                                                     css_classes=["ctl-rho"])
        self.n_prompts = pn.widgets.IntInput.from_param(p.n_prompts, name="Prompts", description=p.n_prompts.doc,
                                                        width=80)
        self.a = pn.widgets.FloatInput.from_param(p.a, name="Beta a", step=0.1, description=p.a.doc, width=70)
        self.b = pn.widgets.FloatInput.from_param(p.b, name="Beta b", step=0.1, description=p.b.doc, width=70)
        self.seed = pn.widgets.IntInput.from_param(p.seed, name="Seed", description=p.seed.doc, width=100)
        self.play_button = pn.widgets.Toggle.from_param(play.param.playing, name=_PLAY_LABEL[play.playing],
                                                        button_type="primary", width=110)
        play.param.watch(lambda e: setattr(self.play_button, "name", _PLAY_LABEL[e.new]), "playing")
        self.step_button = pn.widgets.Button(name="Step", description=_TIPS["step"], width=70)
        self.reset_button = pn.widgets.Button(name="Reset", description=_TIPS["reset"], width=70)
        self.new_draw_button = pn.widgets.Button(name="New draw", description=_TIPS["new_draw"], width=90)

        self.step_button.on_click(lambda _e: lab.step(0.05))
        self.reset_button.on_click(lambda _e: (setattr(play, "playing", False), lab.reset()))
        self.new_draw_button.on_click(lambda _e: lab.new_draw())
        # the band widget is one RangeSlider for two state parameters
        self.band.param.watch(lambda e: lab.param.update(band_lo=e.new[0], band_hi=e.new[1]), "value")
        lab.param.watch(self._band_from_state, ["band_lo", "band_hi"])

    def _band_from_state(self, _event) -> None:
        value = tuple(sorted((self.lab.band_lo, self.lab.band_hi)))
        if tuple(self.band.value) != value:
            self.band.value = value

    def main(self) -> pn.Column:
        """Progress (with play and step), K and the filter: the controls of an embed."""
        p = self.lab.param
        return pn.Column(tip(self.progress, p.progress.doc), pn.Row(tip(self.play_button, _TIPS["play"]),
                                                                     self.step_button),
                         tip(self.K, p.K.doc), tip(self.filter, p.filter.doc), tip(self.band, _TIPS["band"]),
                         sizing_mode="stretch_width")

    def all(self) -> pn.Column:
        """Every control: the main ones, rho, the population and the buttons."""
        population = pn.Row(self.n_prompts, self.a, self.b, self.seed)
        return pn.Column(self.main(), tip(self.rho, self.lab.param.rho.doc), "**Population**", population,
                         pn.Row(self.new_draw_button, self.reset_button), sizing_mode="stretch_width")
