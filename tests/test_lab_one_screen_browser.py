"""The lab's story on one screen (issue 24), in real Chromium: a 1440x900 laptop, a 1024x768 projector (normal and
``?present=true``) and a 390x844 phone with mobile emulation.

On the laptop and the projector the progress slider, the whole grid, its colour key, the headline readouts and
both plots beside the grid (the decay curve, P(useful) over the histogram by outcome) lie inside the first
screen, by their bounding boxes. The page carries ``<meta name="viewport">``, so a phone lays it out at its own
width: nothing scrolls sideways in any tab and the text is at a legible size. The plots repaint in the same
event as the grid: after a progress input, and on every Play frame, the data they draw is the kernel's for the
values on screen, and equals the core's (:mod:`sims`).
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.lab_server import wait_readout
from grpo_lab.sims.scenario import Scenario, evaluate, outcome_histogram
from grpo_lab.sims.sweep import useful_share_curve

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: the first element matching a selector, through shadow roots
FIND = """function find(root, sel) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot, sel); if (f) return f; }
  return null; }"""
BOX = "sel => { " + FIND + """ const e = find(document, sel); if (!e) return null; const r = e.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height}; }"""
#: JavaScript: what the plots draw now (live_plots.js's plots.data), as JSON
PLOT_DATA = "() => { " + FIND + """ const d = find(document, '.gx-view').__grpoPlots.data;
  return d && {t: d.t, K: d.K, hist: d.hist}; }"""

#: JavaScript: the visible inputs, selects and buttons (through shadow roots) that reach past the window's right edge
CUT_CONTROLS = """(width) => { const out = [];
  function walk(root) { for (const el of root.querySelectorAll('input, select, button')) {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden' && r.right > width + 1)
        out.push([el.tagName, el.id || el.className || el.textContent.slice(0, 30), Math.round(r.right)]); }
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) walk(n.shadowRoot); }
  walk(document); return out; }"""

#: what must lie inside the first screen: the progress slider, the whole grid, its key, the headline readouts
#: and the two plots (each with its title and key)
ON_SCREEN = {"progress": "#gx-progress", "grid": "#gx-grid", "key": ".grpo-legend", "useful": ".readout-useful",
             "mean": ".readout-mean-pass", "kept": ".readout-kept", "decay": ".gx-plot-decay",
             "outcome": ".gx-plot-outcome"}


def _open(browser, url, width, height, mobile=False):
    extra = {"is_mobile": True, "device_scale_factor": 3, "has_touch": True} if mobile else {}
    context = browser.new_context(viewport={"width": width, "height": height}, **extra)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    wait_readout(page)
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    page.wait_for_function("() => { " + FIND + " const v = find(document, '.gx-view');"
                           " return !!(v && v.__grpoPlots && v.__grpoPlots.data); }", timeout=30_000)
    page.wait_for_timeout(800)  # Panel's layout settles
    return context, page, errors


@pytest.mark.parametrize("width, height, query", [(1440, 900, ""), (1024, 768, ""), (1024, 768, "?present=true")])
def test_slider_whole_grid_key_readouts_and_both_plots_share_the_first_screen(browser, lab_url, width, height, query):
    context, page, errors = _open(browser, lab_url + query, width, height)
    try:
        assert page.evaluate("() => [document.documentElement.scrollWidth <= document.documentElement.clientWidth,"
                             " window.scrollY]") == [True, 0]
        for name, sel in ON_SCREEN.items():
            box = page.evaluate(BOX, sel)
            assert box is not None and box["height"] > 0, name
            assert 0 <= box["top"] and box["bottom"] <= height + 0.5, (name, box)
            assert 0 <= box["left"] and box["right"] <= width + 0.5, (name, box)
        grid, decay = page.evaluate(BOX, "#gx-grid"), page.evaluate(BOX, "#gx-decay")
        # (presentation mode at 1024 px sets the two plots side by side beside a larger grid: test_lab_present_browser)
        assert grid["width"] >= 300 and decay["width"] >= (200 if query else 240) and decay["height"] >= 100, (grid, decay)
        play = page.get_by_role("button", name="\u25b6 Play").bounding_box()
        assert play["y"] + play["height"] <= height
        if query:  # presentation mode: larger title, caption and plot text; no secondary material
            font = "sel => { " + FIND + " return parseFloat(getComputedStyle(find(document, sel)).fontSize); }"
            assert page.evaluate(font, "h1") >= 22 and page.evaluate(font, ".gx-plot-title") >= 16
            assert page.evaluate(font, ".gx-svg") >= 15
            assert page.evaluate(BOX, ".lab-plots") is None and page.evaluate(BOX, ".lab-side") is None
    finally:
        context.close()
    assert errors == []


def test_presentation_mode_enlarges_the_grid_on_a_projector(browser, lab_url):
    widths = {}
    for query in ("", "?present=true"):
        context, page, errors = _open(browser, lab_url + query, 1024, 768)
        try:
            widths[query] = page.evaluate(BOX, "#gx-grid")["width"]
        finally:
            context.close()
        assert errors == []
    assert widths["?present=true"] >= 1.05 * widths[""], widths


def test_the_page_has_a_viewport_tag_and_a_phone_never_scrolls_sideways_in_any_tab(browser, lab_url):
    context, page, errors = _open(browser, lab_url, 390, 844, mobile=True)
    try:
        assert page.evaluate("() => document.querySelector('meta[name=viewport]').content") == \
            "width=device-width, initial-scale=1"
        assert page.evaluate("() => window.innerWidth") == 390  # laid out at the phone's width, not 980 px
        font = "sel => { " + FIND + " return parseFloat(getComputedStyle(find(document, sel)).fontSize); }"
        for sel in (".gx-view", ".gx-plot-title", ".state-caption"):
            assert page.evaluate(font, sel) >= 12, sel  # legible at the phone's own scale
        play = page.get_by_role("button", name="\u25b6 Play").bounding_box()
        progress, grid = page.evaluate(BOX, "#gx-progress"), page.evaluate(BOX, "#gx-grid")
        assert play["y"] + play["height"] <= 844 and progress["bottom"] <= 844  # Play and progress first
        assert play["y"] < progress["top"] < grid["top"] < page.evaluate(BOX, "#gx-decay")["top"]
        for tab in ("Live lab", "Advantages", "Replay"):
            page.get_by_role("tab", name=tab).click()
            page.wait_for_timeout(2500)
            sizes = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert sizes[0] <= sizes[1], (tab, sizes)
            cut = page.evaluate(CUT_CONTROLS, 390)
            assert cut == [], (tab, cut)  # no control cut at the phone's right edge either
    finally:
        context.close()
    assert errors == []


def _hist(scenario: Scenario) -> list[int]:
    view = evaluate(scenario)
    return outcome_histogram(view.pass_rate, np.where(view.kept, view.outcome, 3), 25, 4).ravel().tolist()


def test_a_progress_input_repaints_the_plots_in_the_same_event_with_the_cores_values(browser, lab_url):
    context, page, errors = _open(browser, lab_url + "?K=8", 1440, 900)
    try:
        got = page.evaluate("() => { " + FIND + """
          const input = find(document, '#gx-progress'), view = find(document, '.gx-view');
          input.value = '0.5';
          input.dispatchEvent(new Event('input', {bubbles: true}));
          const d = view.__grpoPlots.data;  // no frame, no message has passed since the input
          const marker = find(document, '#gx-decay .gx-marker');
          return {t: d.t, K: d.K, hist: d.hist, marker: Number(marker.getAttribute('data-t')),
                  exp: Array.from(d.decay.exp), label: find(document, '#gx-progress-out').textContent}; }""")
        assert got["t"] == 0.5 and got["marker"] == 0.5 and got["label"] == "0.50" and got["K"] == 8
        scenario = Scenario(progress=0.5, K=8)
        assert got["hist"] == _hist(scenario)
        curve = useful_share_curve(scenario.population(), np.linspace(0, 1, 41), 8, 0.0, None, scenario.gain)
        np.testing.assert_allclose(got["exp"], curve["expected"], rtol=1e-12)
    finally:
        context.close()
    assert errors == []


def test_every_play_frame_paints_the_plots_for_the_progress_on_screen(browser, lab_url):
    context, page, errors = _open(browser, lab_url + "?K=8", 1440, 900)
    try:
        page.get_by_role("button", name="\u25b6 Play").click()
        frames = page.evaluate("() => new Promise((done) => { " + FIND + """
          const out = find(document, '#gx-progress-out'), view = find(document, '.gx-view'), seen = [];
          function tick() {
            const d = view.__grpoPlots.data;
            seen.push([out.textContent, d.t.toFixed(2), d.hist.reduce((a, b) => a + b, 0)]);
            if (seen.length < 60) requestAnimationFrame(tick); else done(seen);
          }
          requestAnimationFrame(tick); })""")
        assert len({f[0] for f in frames}) >= 5  # the animation moved
        assert all(shown == drawn and total == 600 for shown, drawn, total in frames), frames
        t = float(frames[-1][1])
        last = page.evaluate(PLOT_DATA)
        if last["t"] == t:
            assert last["hist"] == _hist(Scenario(progress=t, K=8))
    finally:
        context.close()
    assert errors == []


def test_with_correlated_rollouts_the_plots_draw_pythons_curves_and_view(browser, lab_url):
    """rho > 0, which the kernel does not cover: the decay curve and P(useful) are Python's (sims with rho), and the
    histogram counts the view Python painted."""
    from grpo_lab.sims.outcomes import outcome_probabilities

    context, page, errors = _open(browser, lab_url + "?rho=0.3&progress=0.4&K=8", 1440, 900)
    try:
        page.wait_for_function("() => { " + FIND + " const d = find(document, '.gx-view').__grpoPlots.data;"
                               " return d && d.t === 0.4; }", timeout=30_000)
        got = page.evaluate("() => { " + FIND + """ const d = find(document, '.gx-view').__grpoPlots.data;
          const nul = (a) => Array.from(a, (v) => v === null || !Number.isFinite(v) ? null : v);
          return {hist: d.hist, exp: nul(d.decay.exp), exp_f: nul(d.decay.exp_f), useful: nul(d.useful)}; }""")
        scenario = Scenario(rho=0.3, progress=0.4, K=8)
        pop = scenario.population()
        assert got["hist"] == _hist(scenario)
        ts = np.linspace(0, 1, 41)
        np.testing.assert_allclose(got["exp"], useful_share_curve(pop, ts, 8, 0.3, None, scenario.gain)["expected"],
                                   rtol=1e-12)
        np.testing.assert_allclose(got["exp_f"],
                                   useful_share_curve(pop, ts, 8, 0.3, (0.2, 0.8), scenario.gain)["expected"], rtol=1e-12)
        useful = outcome_probabilities(np.linspace(0, 1, 401), 8, 0.3)["p_useful"]
        np.testing.assert_allclose(got["useful"], useful, rtol=1e-12, atol=1e-15)
        assert abs(max(got["useful"]) - max(1 - p ** 8 - (1 - p) ** 8 for p in np.linspace(0, 1, 401))) > 0.01
    finally:
        context.close()
    assert errors == []


def test_a_phone_shows_the_slider_the_headline_readouts_and_most_of_the_grid_first(browser, lab_url):
    """390x844 (issue 34): progress and K side by side, the three main readouts (the others folded away on a phone),
    the key in two columns, then the grid, at least three quarters of it on the first screen."""
    context, page, errors = _open(browser, lab_url, 390, 844, mobile=True)
    try:
        progress, grid = page.evaluate(BOX, "#gx-progress"), page.evaluate(BOX, "#gx-grid")
        assert progress["bottom"] <= 844
        shown = (min(grid["bottom"], 844) - grid["top"]) / grid["height"]
        assert shown >= 0.75, (grid, shown)
        for sel in (".readout-useful", ".readout-mean-pass", ".readout-kept"):
            assert page.evaluate(BOX, sel)["bottom"] <= grid["top"], sel
        assert page.evaluate(BOX, ".readout-all-pass")["height"] == 0  # folded on a phone
        k = page.evaluate(BOX, "#gx-K")
        assert abs(k["top"] - progress["top"]) < 2 and k["left"] > progress["right"]  # side by side
    finally:
        context.close()
    assert errors == []
