"""The live lab's Play and Step buttons (:class:`Controls`), and help shown as text under a widget (:func:`hint`).

Training progress, K, the filter and its band belong to the grid itself (:class:`grpo_lab.grid.component.LiveGrid`),
which repaints in the browser as they move; rho, the population, New draw and Reset are one component beside it
(:mod:`grpo_lab.views.side_controls`). Play and Step stay Panel widgets: an embed shows them too.
"""

from __future__ import annotations

import html

import panel as pn

from grpo_lab.state import LabState, PlayState

from .side_controls import TIPS

__all__ = ["Controls", "hint", "hinted"]

_PLAY_LABEL = {False: "\u25b6 Play", True: "\u275a\u275a Pause"}


def hint(text: str) -> pn.pane.HTML:
    """A line of help shown as text (a ``?`` icon sat on its label, took no focus and said nothing to a reader)."""
    return pn.pane.HTML(f"<p style='margin:0 10px 6px;font-size:13px;color:#333'>{html.escape(text)}</p>",
                        sizing_mode="stretch_width", margin=0)


def hinted(widget, text: str) -> pn.Column:
    """The widget with its help text under it."""
    return pn.Column(widget, hint(text), sizing_mode="stretch_width", margin=0)


class Controls:
    """Play and Step for one session's LabState and PlayState (``main()``: the two in a row)."""

    def __init__(self, lab: LabState, play: PlayState):
        self.lab, self.play = lab, play
        self.play_button = pn.widgets.Toggle.from_param(play.param.playing, label=_PLAY_LABEL[play.playing],
                                                        color="primary", width=110, css_classes=["lab-play"])
        play.param.watch(lambda e: setattr(self.play_button, "label", _PLAY_LABEL[e.new]), "playing")
        self.step_button = pn.widgets.Button(label="Step", description=TIPS["step"], width=70)
        self.step_button.on_click(lambda _e: lab.step(0.05))

    def main(self) -> pn.Row:
        """Play and step: the controls of an embed beside the grid's own."""
        return pn.Row(self.play_button, self.step_button)
