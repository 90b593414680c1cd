"""The embed in a blog column (issues 34 and 41), in real Chromium: a 700x500 and a 640x480 iframe, and no script on the
host.

The exported page (``grpo-lab export``) and the served lab's ``?embed=true`` choose a compact layout by their width
(CSS alone, ``lab/static/gridview.css``: the controls and readouts beside the grid), so the progress slider and the
whole grid lie in the iframe's first screen, with no readout's label on more than two lines; a switch under the
readouts shows both plots, whole (titles, keys, drawings and the P(gradient) curve's reading), in the grid's place, and the grid again;
at desktop width the exported page widens and shows the grid and both plots side by side with no switch; the served
embed's page is no taller than its frame (nothing cut at its edge). The exported page carries the served lab's two plots, drawn by the same
browser code (``lab/static/live_plots.js``, inlined verbatim), whose data after a control's input equals the core's;
the default file stays under 1.5 MB, and the page makes no request.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.export_page import SCRIPTS
from grpo_lab.grid.markup import STATIC
from grpo_lab.sims.scenario import Scenario, evaluate, outcome_histogram
from grpo_lab.sims.sweep import useful_share_curve
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.lab_server import SET_CONTROLS_JS, block_outside
from grpo_lab.testing.page import FIND
from grpo_lab.testing.screen import overlap

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FRAMES = [(700, 500), (640, 480)]
#: JavaScript (in the frame): the box of the first element matching a selector, through shadow roots
BOX = "sel => { const e = (" + FIND + """)(sel); if (!e) return null; const r = e.getBoundingClientRect();
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height}; }"""
MAX_BYTES = 1_500_000  #: the default exported file's ceiling (issue 34)
#: JavaScript (in the frame): each readout's label and the number of lines its text takes
LABEL_LINES = "() => { const t = (" + FIND + """)('.grpo-readouts table');
  return Array.from(t.querySelectorAll('tr')).slice(1).map(r => { const range = document.createRange();
    range.selectNodeContents(r.cells[0]);
    const tops = Array.from(range.getClientRects()).filter(b => b.width > 0).map(b => b.top).sort((a, b) => a - b);
    return [r.cells[0].textContent.trim(), tops.filter((t, i) => i === 0 || t - tops[i - 1] > 4).length]; }); }"""
#: JavaScript (in the frame): whether the plots have been drawn at their shown size (each SVG's viewBox is its width)
PLOTS_AT_SIZE = "() => ['#gx-decay', '#gx-outcome'].every(s => { const e = (" + FIND + """)(s);
  const w = e.getBoundingClientRect().width, vb = (e.getAttribute('viewBox') || '').split(' ');
  return w > 0 && Math.abs(Number(vb[2]) - Math.round(w)) <= 1 && e.querySelectorAll('path').length >= 2; })"""
#: JavaScript (in the frame): whether any plot title is cut (its text wider or taller than its box)
TITLES_CUT = "() => ['.gx-plot-decay .gx-plot-title', '.gx-plot-outcome .gx-plot-title'].some(s => { const e = (" + FIND + \
    """)(s); return e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1; })"""


@pytest.fixture(scope="module")
def blog(tmp_path_factory):
    """A folder holding the default export (``decay.html``) and a blog page per frame size that frames it."""
    folder = tmp_path_factory.mktemp("blog")
    proc = run_cli("export", "--out", str(folder / "decay.html"))
    assert proc.returncode == 0, proc.stderr
    for w, h in FRAMES:
        (folder / f"post-{w}x{h}.html").write_text(
            f'<!DOCTYPE html><html lang="en"><head><title>A post</title></head><body><main><p>Some text of the '
            f'post.</p><iframe src="decay.html" width="{w}" height="{h}" title="The lab"></iframe></main></body></html>',
            encoding="utf-8")
    return folder


def _switches_to_the_plots(frame, width: int, height: int) -> None:
    """In grid view the readouts' labels take two lines at most; the switch shows both plots whole in the frame, the
    slider still beside them, and the grid again."""
    lines = frame.evaluate(LABEL_LINES)
    assert len(lines) == 3 and all(n <= 2 for _label, n in lines), lines
    _in_frame(frame, width, height, [".gx-show"])
    assert frame.evaluate(BOX, ".gx-plot-decay")["height"] == 0  # the plots wait behind the switch, not cut below
    frame.get_by_role("radio", name="the plots", exact=True).check()
    frame.wait_for_function(PLOTS_AT_SIZE, timeout=15_000)
    _in_frame(frame, width, height, ["#gx-progress", "#gx-K", ".readout-useful", ".gx-plot-decay", ".gx-plot-outcome",
                                     ".gx-plot-decay .gx-plot-title", ".gx-plot-outcome .gx-plot-title",
                                     ".gx-plot-decay .gx-plot-key", ".gx-plot-outcome .gx-plot-key", "#gx-decay",
                                     "#gx-outcome", ".gx-curve-read"])
    assert not frame.evaluate(TITLES_CUT)
    for svg in ("#gx-decay", "#gx-outcome"):
        assert frame.evaluate(BOX, svg)["height"] >= 90, svg
    assert frame.evaluate(BOX, "#gx-grid")["width"] == 0  # in the grid's place
    frame.get_by_role("radio", name="the grid", exact=True).check()
    frame.wait_for_function("() => (" + FIND + ")('#gx-grid').getBoundingClientRect().width > 0", timeout=15_000)
    _in_frame(frame, width, height, ["#gx-grid", ".grpo-legend"])


def _in_frame(frame, width: int, height: int, selectors) -> None:
    assert frame.evaluate("() => [innerWidth, document.documentElement.scrollWidth <= innerWidth]") == [width, True]
    for sel in selectors:
        box = frame.evaluate(BOX, sel)
        assert box is not None and box["width"] > 0, sel
        assert box["top"] >= 0 and box["bottom"] <= height + 0.5, (sel, box)  # the frame's first screen
        assert box["left"] >= 0 and box["right"] <= width + 0.5, (sel, box)


@pytest.mark.parametrize("width, height", FRAMES)
def test_an_exported_page_in_a_blog_frame_shows_the_slider_and_the_whole_grid(browser, blog, width, height):
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    try:
        post = (blog / f"post-{width}x{height}.html").as_uri()
        outside = block_outside(page, lambda u: u.startswith(blog.as_uri()))
        page.goto(post)
        frame = page.frame_locator("iframe")
        frame.locator("#grpo-export[data-ready=true]").wait_for(state="attached", timeout=20_000)
        inner = page.frames[1]
        inner.wait_for_function("() => !!document.getElementById('grpo-export').__grpoPlots.data")
        _in_frame(inner, width, height, ["#gx-play", "#gx-progress", "#gx-K", "#gx-grid", ".readout-useful"])
        grid = inner.evaluate(BOX, "#gx-grid")
        assert grid["width"] >= 0.4 * width, grid  # beside the controls, not shrunk to a stamp
        _switches_to_the_plots(inner, width, height)
        assert outside == []
    finally:
        page.close()


@pytest.mark.parametrize("width, height", [(1440, 900), (1024, 768)])
def test_an_exported_page_at_desktop_width_shows_the_grid_and_both_plots_with_no_switch(browser, blog, width, height):
    """Opened in a desktop window the exported page widens past the blog frame's layout: Play, the slider, the whole grid
    and both plots (titles, keys, drawings) side by side on the first screen, none over another, and no switch."""
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        path = blog / "decay.html"
        outside = block_outside(page, lambda u: u == path.as_uri())
        page.goto(path.as_uri())
        page.wait_for_selector("#grpo-export[data-ready=true]", state="attached", timeout=20_000)
        page.wait_for_function(PLOTS_AT_SIZE, timeout=15_000)
        assert page.evaluate(BOX, ".gx-show")["width"] == 0 and not page.get_by_role("radio").count()
        parts = ["#gx-play", "#gx-progress", "#gx-K", ".readout-useful", "#gx-grid", ".grpo-legend", ".gx-plot-decay",
                 ".gx-plot-outcome", ".gx-plot-decay .gx-plot-key", ".gx-plot-outcome .gx-plot-key", "#gx-decay",
                 "#gx-outcome"]
        _in_frame(page, width, height, parts)
        assert not page.evaluate(TITLES_CUT)
        boxes = {sel: page.evaluate(BOX, sel) for sel in ("#gx-grid", ".gx-plot-decay", ".gx-plot-outcome", ".gx-controls")}
        for i, a in enumerate(boxes):
            for b in list(boxes)[i + 1:]:
                assert not overlap(boxes[a], boxes[b]), (a, boxes[a], b, boxes[b])
        assert boxes["#gx-grid"]["width"] >= 0.3 * width, boxes["#gx-grid"]  # the grid beside them, not a stamp
        assert outside == []
    finally:
        page.close()


def test_the_exported_plots_are_the_served_labs_code_with_the_cores_values(browser, blog):
    text = (blog / "decay.html").read_text(encoding="utf-8")
    assert len(text.encode()) < MAX_BYTES
    assert "live_plots.js" in SCRIPTS and (STATIC / "live_plots.js").read_text(encoding="utf-8") in text  # one plot code
    page = browser.new_page(viewport={"width": 700, "height": 500})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        path = blog / "decay.html"
        outside = block_outside(page, lambda u: u == path.as_uri())
        page.goto(path.as_uri())
        page.wait_for_selector("#grpo-export[data-ready=true]", state="attached", timeout=20_000)
        page.evaluate(SET_CONTROLS_JS, {"K": 16, "progress": 0.5})
        got = page.evaluate("""() => { const d = document.getElementById('grpo-export').__grpoPlots.data;
          return {t: d.t, K: d.K, hist: d.hist, exp: Array.from(d.decay.exp),
                  paths: document.querySelectorAll('#gx-decay path, #gx-outcome path').length}; }""")
        assert got["t"] == 0.5 and got["K"] == 16 and got["paths"] >= 4
        scenario = Scenario(progress=0.5, K=16)
        view = evaluate(scenario)
        hist = outcome_histogram(view.pass_rate, np.where(view.kept, view.outcome, 3), 25, 4).ravel().tolist()
        assert got["hist"] == hist
        curve = useful_share_curve(scenario.population(), np.linspace(0, 1, 41), 16, 0.0, None, scenario.gain)
        np.testing.assert_allclose(got["exp"], curve["expected"], rtol=1e-12)
        assert outside == []
    finally:
        page.close()
    assert errors == []


@pytest.mark.parametrize("width, height", FRAMES)
def test_the_served_embed_in_a_blog_frame_shows_the_slider_and_the_whole_grid(browser, lab_url, width, height):
    page = browser.new_page(viewport={"width": 1000, "height": 800})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.set_content(f'<main><p>A post.</p><iframe src="{lab_url}?embed=true" width="{width}" height="{height}" '
                         'title="The lab"></iframe></main>')
        page.wait_for_function("() => document.querySelector('iframe').contentWindow.length >= 0")
        inner = page.frames[1]
        inner.wait_for_load_state()
        inner.wait_for_function("() => { const v = (" + FIND + ")('.gx-view');"
                                " return !!(v && v.__grpoPlots && v.__grpoPlots.data); }", timeout=30_000)
        inner.wait_for_timeout(800)  # Panel's layout settles
        _in_frame(inner, width, height, ["#gx-progress", "#gx-K", "#gx-grid", ".readout-useful", ".grpo-legend"])
        play = inner.get_by_role("button", name="\u25b6 Play").bounding_box()  # in page coordinates
        frame_box = page.locator("iframe").bounding_box()
        assert play["y"] + play["height"] <= frame_box["y"] + height
        _switches_to_the_plots(inner, width, height)
        # nothing below the first screen to be cut at the frame's edge (the caption in words is read out, not drawn)
        assert inner.evaluate("() => document.documentElement.scrollHeight") <= height + 1
    finally:
        page.close()
    assert errors == []


def test_the_switch_is_keyboard_reachable_and_both_views_pass_axe(browser, lab_url):
    from grpo_lab.testing.page import axe_violations

    page = browser.new_page(viewport={"width": 640, "height": 480})
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{lab_url}?embed=true")
        page.wait_for_function("() => { const v = (" + FIND + ")('.gx-view');"
                               " return !!(v && v.__grpoPlots && v.__grpoPlots.data); }", timeout=30_000)
        assert axe_violations(page) == []
        grid = page.get_by_role("radio", name="the grid", exact=True)
        grid.focus()
        page.keyboard.press("ArrowRight")  # a radio group: the arrow keys move the choice
        assert page.get_by_role("radio", name="the plots", exact=True).is_checked()
        page.wait_for_function(PLOTS_AT_SIZE, timeout=15_000)
        assert axe_violations(page) == []
        page.keyboard.press("ArrowLeft")
        assert grid.is_checked()
        page.wait_for_function("() => (" + FIND + ")('#gx-grid').getBoundingClientRect().width > 0", timeout=15_000)
    finally:
        page.close()
    assert errors == []
