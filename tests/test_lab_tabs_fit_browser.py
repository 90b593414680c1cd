"""The Advantages and Replay tabs in real Chromium: nothing scrolls sideways at 390 px, the Replay tab's inputs stay
inside their column at 1400-1440 px (they were clipped), and the Advantages plots' lines are legible."""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, wait_readout
from grpo_lab.testing.page import contrast

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: the boxes of the elements with a CSS class (through shadow roots) and of their inputs and selects
BOXES = """(cls) => {
  const roots = [document];
  for (let i = 0; i < roots.length; i++) for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
  const box = (e) => { const b = e.getBoundingClientRect(); return {left: b.left, right: b.right, width: b.width}; };
  const out = [];
  for (const r of roots) for (const e of r.querySelectorAll('.' + cls)) {
    out.push(box(e));
    for (const i of (e.shadowRoot || e).querySelectorAll('input, select')) out.push(box(i));
  }
  return out;
}"""


def open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    if name == "Replay":
        wait_readout(page, "replay-step", timeout=90_000)
    else:
        page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)
    page.wait_for_timeout(800)


def test_no_tab_scrolls_sideways_at_390_px(browser, lab_url):
    # the layout viewport of a phone (with the page's viewport tag; without it a phone lays the page out at 980 px)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(lab_url)
        wait_readout(page)
        for tab in ("Advantages", "Replay"):
            open_tab(page, tab)
            width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[0] <= width[1], (tab, width)
    finally:
        context.close()


@pytest.mark.parametrize("width", [1400, 1440])
def test_replay_inputs_stay_inside_their_column(browser, lab_url, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(lab_url)
        wait_readout(page)
        open_tab(page, "Replay")
        column = page.evaluate(BOXES, "replay-controls")[0]
        for cls in ("replay-run", "replay-compare", "replay-pair", "replay-format", "replay-tolerance-input",
                    "replay-upload"):
            boxes = page.evaluate(BOXES, cls)
            assert len(boxes) >= 2, cls  # the widget and its input
            for b in boxes:
                assert b["width"] > 0 and column["left"] - 1 <= b["left"] and b["right"] <= column["right"] + 1, \
                    (cls, b, column)
    finally:
        context.close()


def test_the_advantage_plots_lines_are_legible():
    """Every curve at 3:1 or more against the plot (WCAG's non-text contrast; the dashed yellow was 1.3:1), no
    legend over the curves, and every curve below the top border."""
    import numpy as np
    from bokeh.models import GlyphRenderer

    from grpo_lab.state import AdvantageState
    from grpo_lab.views.advantages import AdvantageExplorer

    def rgb(colour: str):
        return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))

    for G in (2, 8, 32):
        explorer = AdvantageExplorer(AdvantageState(G=G))
        for fig in (explorer.coef, explorer.cover):
            lines = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
            assert len(lines) == 4
            background = rgb(fig.background_fill_color)
            for r in lines:
                assert contrast(rgb(r.glyph.line_color), background) >= 3, r.glyph.line_color
                top = float(np.nanmax(explorer.curves.data[r.glyph.y]))
                assert top <= fig.y_range.end / 1.1, (G, r.glyph.y, top, fig.y_range.end)
            assert fig.legend[0] in fig.below and fig.legend[0] not in fig.center
