"""The served lab's ``?embed=true`` page: the caption, the live lab's embed view, and :class:`EmbedHeight`,
which posts the page's height to the parent frame (the options and the message: :mod:`grpo_lab.embed`)."""

from __future__ import annotations

from pathlib import Path

import panel as pn
import param
from panel.custom import JSComponent

from grpo_lab.embed import HEIGHT_MESSAGE, EmbedOptions, caption_html

__all__ = ["EmbedHeight", "embed_page"]


class EmbedHeight(JSComponent):
    """An invisible component that posts the page's height to its parent frame whenever it changes
    (:data:`HEIGHT_MESSAGE`); nothing when the page is not in a frame. It reads no message."""

    message = param.String(default=HEIGHT_MESSAGE, constant=True, doc="The message's type.")

    _esm = (Path(__file__).resolve().parents[1] / "static" / "embed_height.js").read_text(encoding="utf-8")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("width", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)


def embed_page(content, options: EmbedOptions, *extras):
    """The served lab's ``?embed=true`` page: the caption (if any, as text), ``content``, ``extras`` (the
    page's access fixes) and the height poster. The lab's embed has neither title nor footer."""
    parts = []
    if options.caption:
        parts.append(pn.pane.HTML(caption_html(options.caption), sizing_mode="stretch_width", margin=(4, 10, 0, 10),
                                  styles={"font-size": "15px", "line-height": "1.4"}))
    return pn.Column(*parts, content, *extras, EmbedHeight(), css_classes=["grpo-lab", "embed"],
                     sizing_mode="stretch_width")
