"""Debian's Chromium (never a downloaded browser) and the flags every test, benchmark and screenshot launches it with."""

from __future__ import annotations

import os

CHROMIUM = os.environ.get("GRPO_LAB_CHROMIUM", "/usr/bin/chromium")
#: no sandbox (root in CI), no GPU, and nothing that would reach a host other than the lab's own server
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic",
]


def launch(playwright, background_tabs: bool = False, **kwargs):
    """A headless Chromium from a started ``sync_playwright()`` object, with the flags above (and
    :data:`BACKGROUND_TAB_ARGS` when ``background_tabs``)."""
    args = CHROMIUM_ARGS + (BACKGROUND_TAB_ARGS if background_tabs else [])
    return playwright.chromium.launch(executable_path=CHROMIUM, args=args, headless=True, **kwargs)

#: added where tabs in the background must keep running at full speed (several tabs of one visitor playing)
BACKGROUND_TAB_ARGS = [
    "--disable-renderer-backgrounding", "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
]
