"""Keyboard and screen-reader access for the page's Panel and Bokeh widgets: :class:`PageAccess`.

The lab's own markup (the grid view, the tables) carries its names and roles itself; Panel's and
Bokeh's widgets leave gaps (tabs a keyboard cannot open and that come after their content in the
Tab order, sliders, spin buttons and the Player's buttons with no name, a focus ring of 2.7:1 on the
Play button, Markdown code at 2.3:1).
``PageAccess()`` is placed once on a page; its script (``lab/static/page_access.js``) closes those
gaps in the browser, and :data:`PAGE_CSS` is the focus ring and contrast it adopts into every
shadow root. ``PageAccess(heading=...)`` gives a page that shows no title (the embed) a level-one heading for screen
readers. It draws nothing and does no work while a control moves.
"""

from __future__ import annotations

from pathlib import Path

import param
from panel.custom import JSComponent

__all__ = ["PageAccess", "PAGE_CSS", "FOCUS_COLOUR"]

FOCUS_COLOUR = "#0b57d0"  #: the focus ring: 6.3:1 against white, 3:1 or more against the page's light fills

#: adopted by every shadow root of the page (lab/static/page_access.js)
PAGE_CSS = f"""
:focus-visible {{ outline: 3px solid {FOCUS_COLOUR} !important; outline-offset: 2px !important; }}
.bk-tab:focus-visible {{ outline-offset: -3px !important; }}
/* the spin buttons of number inputs are 15 px tall (under the 24 px target size); the number is typed,
   or stepped with ArrowUp / ArrowDown in the input */
.bk-spin-btn {{ display: none !important; }}
.bk-slider-title, .bk-input-group label {{ color: #222; }}
/* Panel's Markdown code is #82aaff on white (2.3:1) */
:host(.markdown) code, .markdown code {{ color: #22437f !important; }}
"""


class PageAccess(JSComponent):
    """An invisible component whose script fixes the page's widgets for keyboards and screen readers."""

    css = param.String(default=PAGE_CSS, doc="The stylesheet adopted into every shadow root.")
    heading = param.String(default="", doc=(
        "A page without a visible level-one heading (the embed): this text becomes one, visually hidden, first in "
        "the document, so a screen reader's heading list starts with the page's name."))

    _esm = (Path(__file__).with_name("static") / "page_access.js").read_text(encoding="utf-8")

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("width", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
