"""The live lab's Play in real Chromium: the grid animates in the browser, and the plots follow it.

Play is the grid view's own loop (``lab/static/gridview.js``, ``playLoop``); the browser sends Python the
progress every ``PLAY_SYNC_MS`` (``grpo_lab.grid.spec``), and Python redraws the plots, tables and caption
from it. So while it plays, the server never sends the grid a progress value (when Play was a server tick,
it sent one per frame), yet the grid shows many, and the caption's t moves on several times before the end.
"""

from __future__ import annotations

import re

import pytest

from grpo_lab.testing.lab_server import show_plots, wait_readout
from grpo_lab.testing.page import FIND  # the first element matching a selector, through shadow roots
from grpo_lab.grid.spec import PLAY_SECONDS, PLAY_SYNC_MS, PROGRESS_STEP

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: from now on, record every progress value the grid shows and every caption text
WATCH = f"""() => {{
  const out = ({FIND})('#gx-progress-out'), cap = ({FIND})('.state-caption');
  window.__shown = [out.textContent]; window.__captions = [cap.textContent];
  new MutationObserver(() => window.__shown.push(out.textContent))
    .observe(out, {{childList: true, characterData: true, subtree: true}});
  setInterval(() => {{
    const c = ({FIND})('.state-caption');
    if (c && c.textContent !== window.__captions[window.__captions.length - 1]) window.__captions.push(c.textContent);
  }}, 20);
}}"""

#: a Bokeh document patch that changes a model's `progress` (what a server tick sent for each frame)
PROGRESS_PATCH = re.compile(r'"attr"\s*:\s*"progress"')


def test_play_animates_the_grid_in_the_browser_and_the_plots_follow(page, lab_url):
    received = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: received.append(payload)))
    page.goto(lab_url)
    wait_readout(page)
    show_plots(page)
    page.wait_for_function(f"() => !!({FIND})('.state-caption')", timeout=60_000)
    page.evaluate(WATCH)
    before = len(received)
    page.get_by_role("button", name="\u25b6 Play").click()
    page.wait_for_function(f"() => Number(({FIND})('#gx-progress-out').textContent) === 1",
                           timeout=int(PLAY_SECONDS * 1000 * 8))
    during = [p if isinstance(p, str) else p.decode("utf-8", "replace") for p in received[before:]]
    shown = page.evaluate("() => window.__shown")
    values = sorted({float(v) for v in shown})
    # the browser painted the sweep itself: many progress values, none of them sent by the server
    assert values[-1] == 1.0 and len(values) >= 0.2 / PROGRESS_STEP
    assert not [p for p in during if PROGRESS_PATCH.search(p)]
    # the Play button comes back once the sweep ends, and the plots followed: the caption's t moved on
    # several times on the way (the browser sent the progress every PLAY_SYNC_MS), ending at t = 1
    page.get_by_role("button", name="\u25b6 Play").wait_for(timeout=30_000)
    page.wait_for_function(f"() => ({FIND})('.state-caption').textContent.includes('At t = 1.00')", timeout=30_000)
    ts = {m.group(1) for c in page.evaluate("() => window.__captions") for m in [re.search(r"At t = ([0-9.]+)", c)] if m}
    assert len(ts - {"0.00", "1.00"}) >= 3, (ts, PLAY_SYNC_MS)
    assert page.console_errors == []


#: JavaScript: the element holding the focus (through shadow roots): its tag and text
FOCUSED = """() => { let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return a ? {tag: a.tagName, text: a.textContent.trim()} : null; }"""


def test_play_keeps_the_focus_and_toggles_with_enter_and_space(page, lab_url):
    """Bokeh re-renders a Toggle whose label changes (Play <-> Pause), which dropped the focus on the page's body;
    Space then scrolled the page instead of pausing."""
    page.goto(lab_url)
    wait_readout(page)
    page.get_by_role("button", name="\u25b6 Play").focus()
    for key, label in (("Enter", "\u275a\u275a Pause"), ("Space", "\u25b6 Play"), ("Space", "\u275a\u275a Pause"),
                       ("Enter", "\u25b6 Play")):
        page.keyboard.press(key)
        page.wait_for_function(f"() => {{ const f = ({FOCUSED})(); return f && f.tag === 'BUTTON' && f.text === {label!r}; }}",
                               timeout=15_000)
        assert page.evaluate("() => window.scrollY") == 0  # Space pressed the button, it did not scroll the page
    # paused: the progress comes to rest (a frame already under way when the pause reached the browser may still
    # land; playing, the sweep moves it 0.01 every PLAY_SECONDS / 100 = 80 ms, so a 400 ms window never sees it still)
    readings = [page.locator("#gx-progress-out").text_content()]
    for _ in range(5):
        page.wait_for_timeout(400)
        readings.append(page.locator("#gx-progress-out").text_content())
        if readings[-1] == readings[-2]:
            break
    assert readings[-1] == readings[-2], readings
    assert page.console_errors == []
