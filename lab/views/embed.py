"""The served lab's ``?embed=true`` page: the caption, the live lab's embed view, and :class:`EmbedHeight`,
which posts the page's height to the parent frame (the options and the message: :mod:`grpo_lab.embed`)."""

from __future__ import annotations

from pathlib import Path

import panel as pn
import param
from panel.custom import JSComponent

from grpo_lab.embed import HEIGHT_MESSAGE, EmbedOptions, caption_html

from .layout import SR_ONLY_CSS

__all__ = ["EmbedHeight", "embed_page", "EMBED_ABOVE_PX", "CAPTION_PX", "SHORT_FRAME_PX", "short_frame_caption"]

EMBED_ABOVE_PX = 72  #: Play and Step above the embed's grid, and a margin (``--gx-embed-above``, lab/static/gridview.css)
CAPTION_PX = 66  #: the most a caption takes above them in a blog's column (three lines of 15 px type)
#: under a caption the grid takes at most this share of the embed's width (52% without), so in a 700 px column the
#: caption, Play, the grid and its key share 500 px even when the host sizes the frame to its content
CAPTIONED_GRID_WIDTH = "42cqw"
SHORT_FRAME_PX = 700  #: a frame up to this tall (a blog's 700x500 or 640x480) shows what fits on its first screen


def short_frame_caption(caption) -> None:
    """In a short frame the view's caption (its words under the grid) would be cut at the frame's edge: there it is
    read out to screen readers but not drawn (the readouts beside the grid show its numbers)."""
    caption.stylesheets = [*caption.stylesheets, f"@media (max-height: {SHORT_FRAME_PX}px) and (min-width: 480px) "
                                                 f"{{ :host {{ {SR_ONLY_CSS} }} }}"]


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
    if options.caption:  # the grid leaves the caption room in the frame's height (lab/static/gridview.css)
        for grid in content.select(lambda obj: "gx-embed" in getattr(obj, "css_classes", [])):
            grid.styles = {**grid.styles, "--gx-embed-above": f"{EMBED_ABOVE_PX + CAPTION_PX}px",
                           "--gx-embed-width": CAPTIONED_GRID_WIDTH}
        parts.append(pn.pane.HTML(caption_html(options.caption), sizing_mode="stretch_width", margin=(4, 10, 0, 10),
                                  styles={"font-size": "15px", "line-height": "1.4"}))
    return pn.Column(*parts, content, *extras, EmbedHeight(), css_classes=["grpo-lab", "embed"],
                     sizing_mode="stretch_width")
