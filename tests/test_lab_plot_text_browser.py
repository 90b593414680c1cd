"""The live lab's plots in real Chromium: text alternatives a screen reader reaches, and presentation mode's type.

Each plot has a ``role="img"`` element whose accessible name says what the plot shows now
(``lab/views/plot_text.py``): the SVG plots beside the grid carry it themselves, the Jensen plot's canvas has it
just before it. The test reads them through Playwright's accessibility tree and checks their
numbers against the grid's readouts (the browser kernel's), which are computed independently; after K moves,
they describe the new K. In presentation mode the plots' tick and axis labels and titles are larger.
"""

from __future__ import annotations

import re

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, show_plots, wait_readout
from grpo_lab.testing.page import axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.slow]

def plots_ready(page) -> None:
    wait_readout(page)
    show_plots(page)


def chart(page, start: str) -> str:
    """The accessible name of the image whose name starts with ``start``."""
    img = page.get_by_role("img", name=re.compile("^" + re.escape(start)))
    img.wait_for(state="attached", timeout=15_000)
    return img.get_attribute("aria-label")


def pct(text: str) -> float:
    return float(text.rstrip("%"))


def test_each_plot_has_a_text_alternative_that_matches_the_readouts_and_follows_k(page, lab_url):
    page.goto(lab_url)
    plots_ready(page)
    tree = page.locator(".lab-plots").aria_snapshot() + page.locator(".gx-plots").aria_snapshot()
    names = re.findall(r'img "(Chart:[^"]+)"', tree)
    assert len(names) == 3, tree  # the outcome curve and histogram, the decay curve (beside the grid), the Jensen plot
    assert all(n.startswith("Chart:") for n in names)
    useful_expected = page.evaluate(READ_CLASS, "readout-useful-expected")
    useful = page.evaluate(READ_CLASS, "readout-useful")
    n = int(re.search(r"n_prompts=(\d+)", page.url).group(1))  # the population's size, as the URL says
    decay = chart(page, "Chart: expected share of groups with a gradient")
    # at t = 0 the decay curve starts at the expected share the grid's readout shows
    assert "K = 8" in decay and f"All prompts: {useful_expected} at t = 0" in decay and "current t = 0.00" in decay
    jensen = chart(page, "Chart: share of groups with no gradient")
    d_real = re.search(r"K = 8: D_real = ([\d.]+%)", jensen).group(1)
    assert abs(pct(d_real) - (100 - pct(useful_expected))) < 0.11  # D_real = 1 - expected useful share
    outcome = chart(page, "Chart: probability that a group of K = 8")
    mixed = int(re.search(r"([\d,]+) mixed groups", outcome).group(1).replace(",", ""))
    assert abs(100 * mixed / n - pct(useful)) < 0.051  # the histogram's mixed groups: the realised share
    # K moves by keyboard: once the plots redraw, their text describes the new K
    page.locator("#gx-K").focus()
    for _ in range(8):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => ({READ_CLASS})('readout-useful-expected') !== '{useful_expected}'")
    page.get_by_role("img", name=re.compile(r"^Chart: expected share.*at K = 16\.")).wait_for(state="attached",
                                                                                             timeout=15_000)
    decay16 = chart(page, "Chart: expected share of groups with a gradient")
    assert f"All prompts: {page.evaluate(READ_CLASS, 'readout-useful-expected')} at t = 0" in decay16
    assert "K = 16:" in chart(page, "Chart: share of groups with no gradient")
    assert chart(page, "Chart: probability that a group of K = 16")
    assert page.console_errors == []


def test_plot_text_keeps_axe_at_zero_violations(page, lab_url):
    page.goto(lab_url)
    plots_ready(page)
    chart(page, "Chart: expected share")
    assert axe_violations(page) == []


def test_presentation_mode_enlarges_the_plots_tick_and_axis_labels(browser, lab_url):
    """The plots beside the grid draw their ticks and axis labels as SVG text, at the page's sizes: Bokeh's
    sizes on the page (11 px), at least 15 px on a projector; their titles and keys are HTML and grow too."""
    sizes = {}
    font = ("sel => { " + FIND_ALL + " return find(document, sel).map(e => parseFloat(getComputedStyle(e).fontSize)); }")
    for mode in ("", "?present=true"):
        context = browser.new_context(viewport={"width": 1024, "height": 768})
        page = context.new_page()
        try:
            page.goto(lab_url + mode)
            wait_readout(page)
            page.wait_for_function("() => { " + FIND_ALL + " return find(document, '#gx-decay text').length > 0; }")
            sizes[mode] = {sel: page.evaluate(font, sel) for sel in ("#gx-decay text", "#gx-outcome text",
                                                                       ".gx-plot-title")}
        finally:
            context.close()
    normal, present = sizes[""], sizes["?present=true"]
    assert max(normal["#gx-decay text"] + normal["#gx-outcome text"]) <= 12 and max(normal[".gx-plot-title"]) <= 13
    for sel in ("#gx-decay text", "#gx-outcome text"):  # every tick and axis label the projector shows
        assert present[sel] and min(present[sel]) >= 15, (sel, present)
    assert min(present[".gx-plot-title"]) >= 18


#: JavaScript (a function statement): every element matching a selector, through shadow roots
FIND_ALL = """function find(root, sel) { const out = Array.from(root.querySelectorAll(sel));
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) out.push(...find(n.shadowRoot, sel)); return out; }"""
