"""Presentation mode (``?present=true``) for a projector's back row, in real Chromium at 1920x1080, 1280x720 and
1024x768 (issue 34): the grid is the largest thing on the screen (at least 30% of its area), the readouts are large
and nothing lies over them, both plots are readable (at 1920x1080 at least 200 px tall, tick labels of 18 px), only
the controls a lecturer touches are there (Play, Step, progress, K, the filter and its band, the tour's link), and no
two of grid, readouts, plots and controls overlap, all on the first screen.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.page import FIND
from grpo_lab.testing.screen import SHOWN_BOX as BOX, UNCOVERED_READOUTS, open_sized, overlap

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: the parts of the first screen that must not overlap one another
PARTS = {"grid": "#gx-grid", "readouts": ".gx-readouts", "decay": ".gx-plot-decay", "outcome": ".gx-plot-outcome",
         "controls": ".gx-controls", "play row": ".lab-main-controls"}
#: JavaScript: the font size of the plots' tick labels (their SVG text), in CSS px
TICK_FONT = "() => { const t = (" + FIND + """)('#gx-decay text'); return t ? parseFloat(getComputedStyle(t).fontSize) : 0; }"""


@pytest.mark.parametrize("width, height", [(1920, 1080), (1280, 720), (1024, 768)])
def test_the_grid_readouts_plots_and_controls_share_the_first_screen_without_overlap(browser, lab_url, width, height):
    context, page, errors = open_sized(browser, lab_url + "?present=true", width, height)
    try:
        page.wait_for_timeout(800)  # Panel's layout settles
        boxes = {name: page.evaluate(BOX, sel) for name, sel in PARTS.items()}
        for name, box in boxes.items():
            assert box is not None, name
            assert box["top"] >= 0 and box["left"] >= 0, (name, box)
            assert box["bottom"] <= height + 0.5 and box["right"] <= width + 0.5, (name, box)  # the first screen
        names = list(boxes)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                assert not overlap(boxes[a], boxes[b]), (a, boxes[a], b, boxes[b])
        grid = boxes["grid"]
        assert grid["width"] * grid["height"] >= 0.30 * width * height, grid  # the largest thing on the screen
        assert all(grid["width"] * grid["height"] > boxes[n]["width"] * boxes[n]["height"] for n in names if n != "grid")
        assert all(page.evaluate(UNCOVERED_READOUTS)), "a readout lies under something"
        font = "sel => { const e = (" + FIND + ")(sel); return parseFloat(getComputedStyle(e).fontSize); }"
        assert page.evaluate(font, ".readout-useful") >= 22  # the readouts the lecture is about, large
        assert page.evaluate(font, ".gx-field") >= 16 and page.evaluate(font, ".grpo-legend span") >= 16
        if (width, height) == (1920, 1080):
            for svg in ("#gx-decay", "#gx-outcome"):
                assert page.evaluate(BOX, svg)["height"] >= 200, svg
            assert page.evaluate(TICK_FONT) >= 18
        else:
            assert page.evaluate(TICK_FONT) >= 15
        # only the controls a lecturer touches: Play, Step, progress, K, the filter and its band, the tour
        for sel in ("#gx-progress", "#gx-K", "#gx-filter", "#gx-band-lo", "#gx-band-hi"):
            assert page.evaluate(BOX, sel) is not None, sel
        for name in ("\u25b6 Play", "Step"):
            b = page.get_by_role("button", name=name, exact=True).bounding_box()
            assert b["y"] + b["height"] <= height, name
        assert page.get_by_role("link", name="Guided tour").is_visible()
        for sel in ("#gx-pin", ".side-controls", ".lab-plots"):  # Pin, rho and the population, secondary plots
            assert page.evaluate(BOX, sel) is None, sel
        assert page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    finally:
        context.close()
    assert errors == []
