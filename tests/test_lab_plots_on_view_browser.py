"""The live lab's secondary plots (K-cost table, Jensen gap) are built when the visitor gets to them
(grpo_lab.views.in_view), in real Chromium; the two main plots are beside the grid from the first render.

On a 1400x1000 screen the secondary plots lie below the fold: after the page has loaded and a control has moved,
the server has built none of their Bokeh models (the page's document has no Jensen figure, no plot text), while
the decay and P(useful) plots beside the grid already show K = 9; once the visitor scrolls down the secondary
plots are drawn, and they show the view as it is then. In a window tall enough to show them on the first screen
they are drawn without scrolling.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, show_plots, wait_readout

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: whether the page's document holds a Bokeh figure (the Jensen plot is the live lab's only one)
HAS_PLOTS = "() => Bokeh.documents.some(d => Array.from(d.all_models).some(m => m.type === 'Figure'))"


def test_plots_are_built_once_scrolled_to_and_show_the_view_then(browser, lab_url):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab_url + "?K=8")
        wait_readout(page)
        k = page.locator("#gx-K")
        k.focus()
        k.press("ArrowRight")  # K = 9: the grid repaints in the browser, the server hears of it
        page.wait_for_function("() => new URLSearchParams(location.search).get('K') === '9'", timeout=15_000)
        page.wait_for_timeout(1000)
        assert page.evaluate(HAS_PLOTS) is False  # nothing of the secondary plots was built or sent
        # the plots beside the grid are there, with K = 9 and their text alternative
        outcome = page.get_by_role("img", name="Chart: probability that a group of K = 9 rollouts", exact=False)
        outcome.wait_for(state="attached", timeout=15_000)
        assert page.locator(".lab-plots-ready").count() == 0
        assert page.get_by_text("The plots are drawn when you scroll to them.").count() == 1
        show_plots(page)
        assert page.evaluate(HAS_PLOTS) is True
        assert page.get_by_text("The plots are drawn when you scroll to them.").count() == 0
        jensen = page.get_by_role("img", name="Chart: share of groups with no gradient", exact=False)
        jensen.wait_for(state="attached", timeout=15_000)
        assert page.evaluate(READ_CLASS, "jensen-caption").startswith("At K = 9:")
    finally:
        page.close()


def test_a_window_tall_enough_to_show_them_gets_them_without_scrolling(browser, lab_url):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    try:
        page.goto(lab_url)
        wait_readout(page)
        page.locator(".lab-plots-ready").first.wait_for(state="attached", timeout=60_000)
        assert page.evaluate("() => window.scrollY") == 0
        assert page.evaluate(HAS_PLOTS) is True
    finally:
        page.close()
