"""Issue 25 in Chromium: a visitor's third concurrent upload is refused with what to do; a visitor's tabs share one
heavy-work budget, and the one held back is told the server is busy."""

from __future__ import annotations

import pytest

from grpo_lab import visitor
from grpo_lab.replay.upload import UPLOAD_LIMITS
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS, serve
from grpo_lab.testing.upload import STATUS, budget_sized_zip, open_replay
from grpo_lab.testing.visitors import VISITOR_COOKIE, open_tabs, visitor as visitor_context


def test_the_benchmark_sets_the_labs_visitor_cookie():
    assert VISITOR_COOKIE == visitor.VISITOR_COOKIE


@pytest.fixture(scope="module")
def lab_url():
    with serve() as url:  # one process: every tab's session in it
        yield url


def test_a_third_concurrent_upload_of_one_visitor_gets_a_message_and_another_visitor_does_not(browser, lab_url):
    data, _ = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))  # seconds of reading each
    me, other = visitor_context(browser, lab_url, "fair-a"), visitor_context(browser, lab_url, "fair-b")
    try:
        pages = [me.new_page() for _ in range(3)]
        inputs = [open_replay(page, lab_url) for page in pages]  # three tabs open first, then the uploads
        for page, upload in zip(pages[:2], inputs):
            upload.set_input_files(files=[{"name": "big.zip", "mimeType": "application/zip", "buffer": data}])
            page.wait_for_function(f"({STATUS})().startsWith('Reading big.zip')", timeout=60_000)
        third, pages = pages[2], pages[:2]
        inputs[2].set_input_files(files=[{"name": "third.zip", "mimeType": "application/zip", "buffer": data}])
        third.wait_for_function(f"({TEXTS_OF_CLASS})('replay-error').some(t => t.includes('uploads being read'))",
                                timeout=60_000)
        assert third.evaluate(TEXTS_OF_CLASS, "replay-error") == [
            "Upload not read: You already have 2 uploads being read; wait for one to finish, then upload again."]
        assert all(p.evaluate(STATUS).startswith("Reading big.zip") for p in pages)  # theirs go on
        # another visitor (same address) is not held by the first one's quota
        page = other.new_page()
        upload = open_replay(page, lab_url)
        upload.set_input_files(files=[{"name": "small.jsonl", "mimeType": "application/json",
                                       "buffer": b'{"step": 0, "prompt_id": "a", "rewards": [1, 0]}\n'}])
        page.wait_for_function(f"({STATUS})().startsWith('Read small.jsonl in')", timeout=120_000)
        assert page.evaluate(TEXTS_OF_CLASS, "replay-error") in ([], [""])
    finally:
        me.close()
        other.close()


HEAVY = "?n_prompts=8000&K=32&rho=0.9"  # the server paints the grid: each redraw a noticeable share of a second


def test_two_playing_tabs_of_one_visitor_share_one_budget_and_are_told_the_server_is_busy(browser, lab_url):
    me = visitor_context(browser, lab_url, "fair-play")
    try:
        tabs = open_tabs(me, lab_url + HEAVY, 2)
        assert all(p.evaluate(TEXTS_OF_CLASS, "lab-busy") in ([], [""]) for p in tabs)  # nothing to say before Play
        for page in tabs:
            page.get_by_role("button", name="\u25b6 Play").click()
        busy = f"({TEXTS_OF_CLASS})('lab-busy').some(t => t.startsWith('The server is busy'))"
        for _ in range(60):
            if any(p.evaluate(f"() => {busy}") for p in tabs):
                break
            tabs[0].wait_for_timeout(1000)
        texts = [t for p in tabs for t in p.evaluate(TEXTS_OF_CLASS, "lab-busy")]
        assert any(t.startswith("The server is busy: the plots follow Play") for t in texts), texts
    finally:
        me.close()
