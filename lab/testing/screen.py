"""Checking a laid-out page in Chromium (presentation mode, its tour, an embed's frame): boxes found through shadow
roots, whether two overlap or one lies on the screen, whether anything covers the readouts, and a page opened at a
window size once its grid, readouts, fonts and plots are in."""

from __future__ import annotations

from .lab_server import wait_readout
from .page import FIND

__all__ = ["SHOWN_BOX", "UNCOVERED_READOUTS", "PLOTS_DRAWN", "overlap", "on_screen", "open_sized"]

#: JavaScript: the bounding box of the first element matching a selector (through shadow roots), or null when there is
#: none or it has no size
SHOWN_BOX = "sel => { const e = (" + FIND + """)(sel); if (!e) return null; const r = e.getBoundingClientRect();
  if (!r.width || !r.height) return null;
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height}; }"""
#: JavaScript: for each readout value, whether the element on top at its centre is the value itself (or inside it)
UNCOVERED_READOUTS = "() => { const view = (" + FIND + """)('.gx-view'); const root = view.getRootNode();
  return Array.from(view.querySelectorAll('.gx-readouts [data-v]')).map(v => { const r = v.getBoundingClientRect();
    const top = root.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !!top && (top === v || v.contains(top)); }); }"""
#: JavaScript: whether the grid component's two plots have been drawn
PLOTS_DRAWN = "() => { const v = (" + FIND + ")('.gx-view'); return !!(v && v.__grpoPlots && v.__grpoPlots.data); }"


def overlap(a: dict, b: dict) -> bool:
    """Whether two boxes (``left``, ``top``, ``right``, ``bottom``) share more than half a pixel each way."""
    return a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5 and a["top"] < b["bottom"] - 0.5 and \
        b["top"] < a["bottom"] - 0.5


def on_screen(box: dict, width: float, height: float) -> bool:
    """Whether a box lies wholly in a window of ``width`` x ``height`` (half a pixel of rounding allowed)."""
    return box["left"] >= -0.5 and box["top"] >= -0.5 and box["right"] <= width + 0.5 and box["bottom"] <= height + 0.5


def open_sized(browser, url: str, width: int, height: int):
    """``(context, page, errors)``: ``url`` opened in a window of ``width`` x ``height``, once its readouts, fonts and
    plots are in; ``errors`` collects the page's uncaught errors. Close ``context`` when done."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    wait_readout(page)
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    page.wait_for_function(PLOTS_DRAWN, timeout=30_000)
    return context, page, errors
