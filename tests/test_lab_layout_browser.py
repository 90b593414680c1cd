"""The served lab's layout in real Chromium at a wide screen, a 1024x768 projector and a phone.

On each: no sideways scrolling, and the first screen holds the grid (its top), the colour key, the main
readouts and the main controls, Play included (on a phone Play comes first, then the grid). A 360 px phone
never scrolls sideways either. Presentation mode (``?present=true``) has larger type and fewer panels.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, show_plots, wait_readout

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SIZES = [(1400, 1000), (1024, 768), (390, 844), (360, 800)]

#: JavaScript: the bounding box of the first element matching a selector, through shadow roots
BOX = """sel => { function find(root) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
  return null; }
  const e = find(document); if (!e) return null; const r = e.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, font: parseFloat(getComputedStyle(e).fontSize)}; }"""

FIRST_SCREEN = {"legend": ".grpo-legend", "useful": ".readout-useful", "mean": ".readout-mean-pass",
                "kept": ".readout-kept", "progress": "#gx-progress", "K": "#gx-K"}


def open_at(browser, url: str, width: int, height: int):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url)
    wait_readout(page)
    page.wait_for_function("() => document.fonts.status === 'loaded'")
    page.wait_for_timeout(800)  # Panel's layout settles
    return context, page, errors


@pytest.mark.parametrize("width, height", SIZES)
def test_first_screen_holds_grid_key_readouts_and_controls_without_sideways_scrolling(browser, lab_url, width,
                                                                                      height):
    context, page, errors = open_at(browser, lab_url, width, height)
    try:
        scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert scroll[0] <= scroll[1], scroll  # no horizontal scrolling
        for name, sel in FIRST_SCREEN.items():
            box = page.evaluate(BOX, sel)
            assert box is not None, name
            assert 0 <= box["top"] and box["bottom"] <= height, (name, box)
            assert 0 <= box["left"] and box["right"] <= width, (name, box)
        grid = page.evaluate(BOX, "#gx-grid")
        assert grid["top"] <= height - 80 and grid["right"] <= width, grid  # the grid starts on the first screen
        assert page.evaluate(BOX, ".grpo-legend")["bottom"] <= grid["top"] + 1  # the key above the grid
        play = page.get_by_role("button", name="\u25b6 Play").bounding_box()  # Play on the first screen too
        assert 0 <= play["x"] and play["x"] + play["width"] <= width and 0 <= play["y"]
        assert play["y"] + play["height"] <= height, play
    finally:
        context.close()
    assert errors == []


def test_a_360px_phone_never_scrolls_sideways_and_shows_play_and_the_controls_first(browser, lab_url):
    context, page, errors = open_at(browser, lab_url, 360, 740)
    try:
        show_plots(page)  # the plots are in too
        page.wait_for_timeout(500)
        scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert scroll[0] <= scroll[1], scroll
        play = page.get_by_role("button", name="\u25b6 Play").bounding_box()
        assert play["y"] + play["height"] <= 740 and play["x"] + play["width"] <= 360
        for sel in ("#gx-progress", "#gx-K", ".readout-useful", ".readout-mean-pass", ".readout-kept"):
            box = page.evaluate(BOX, sel)
            assert box["bottom"] <= 740 and box["right"] <= 360, (sel, box)
    finally:
        context.close()
    assert errors == []


def test_presentation_mode_has_larger_type_and_fewer_panels(browser, lab_url):
    context, page, errors = open_at(browser, lab_url + "?present=true", 1024, 768)
    normal_context, normal, _ = open_at(browser, lab_url, 1024, 768)
    try:
        big, small = page.evaluate(BOX, ".readout-useful"), normal.evaluate(BOX, ".readout-useful")
        assert big["font"] >= 20 and big["font"] > small["font"]
        assert page.evaluate(BOX, ".readout-all-pass") is None  # the main readouts only
        page.wait_for_function("() => true")
        text = page.evaluate(PAGE_TEXT)
        assert "The arithmetic" not in text and "The arithmetic" in normal.evaluate(PAGE_TEXT)
        scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert scroll[0] <= scroll[1]
        for name, sel in FIRST_SCREEN.items():
            box = page.evaluate(BOX, sel)
            assert box["bottom"] <= 768, (name, box)
        assert page.evaluate(BOX, "#gx-grid")["top"] <= 768 - 80
        # the larger labels fit their buttons: no two of the buttons overlap, and each label fits its button (Reset and
        # New draw, with rho and the population, are not in presentation mode: a lecturer touches Play and Step)
        assert page.get_by_role("button", name="Reset", exact=True).count() == 0
        boxes = [page.get_by_role("button", name=n, exact=True).bounding_box() for n in ("\u25b6 Play", "Step")]
        for i, p in enumerate(boxes):
            for q in boxes[i + 1:]:
                assert (p["x"] + p["width"] <= q["x"] or q["x"] + q["width"] <= p["x"]
                        or p["y"] + p["height"] <= q["y"] or q["y"] + q["height"] <= p["y"]), (p, q)
        assert page.evaluate("""() => { const out = [];
            const walk = r => r.querySelectorAll('*').forEach(e => {
              if (e.matches('button.bk-btn, button.sc-btn')) out.push(e); if (e.shadowRoot) walk(e.shadowRoot); });
            walk(document);
            return out.length >= 2 && out.every(b => b.scrollWidth <= b.clientWidth + 1); }""")
        # the URL keeps the mode when the controls write it
        page.wait_for_function("() => location.search.includes('progress=')", timeout=15_000)
        assert "present=true" in page.url
    finally:
        context.close()
        normal_context.close()
    assert errors == []


def test_embed_in_a_700x500_frame_shows_the_key_and_readouts_and_has_a_caption(browser, lab_url):
    context, page, errors = open_at(browser, lab_url + "?embed=true", 700, 500)
    try:
        for sel in (".grpo-legend", ".readout-useful", ".readout-mean-pass", ".readout-kept"):
            box = page.evaluate(BOX, sel)
            assert box["bottom"] <= 500 and box["right"] <= 700, (sel, box)
        page.wait_for_function(f"() => ({BOX})('.state-caption') !== null", timeout=15_000)
        scroll = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert scroll[0] <= scroll[1]
    finally:
        context.close()
    assert errors == []
