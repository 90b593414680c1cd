"""Visitors as the fairness checks see them: a browser context per visitor (its own cookie jar and the lab's
visitor cookie), and tabs opened in it."""

from __future__ import annotations

from grpo_lab.testing.lab_server import wait_readout

VISITOR_COOKIE = "grpo_lab_visitor"  #: grpo_lab.visitor's cookie (written here too, so a benchmark can visit a tree without that module)


def visitor(browser, url: str, name: str):
    """A browser context for one visitor: its own cookie jar, holding the lab's visitor cookie ``name``."""
    ctx = browser.new_context()
    ctx.add_cookies([{"name": VISITOR_COOKIE, "value": name, "url": url}])
    return ctx


def open_tabs(ctx, url: str, n: int, timeout: float = 180_000) -> list:
    """``n`` pages of one browser context at ``url``, each loaded (its first readout shown)."""
    pages = []
    for _ in range(n):
        page = ctx.new_page()
        page.goto(url, timeout=timeout)
        wait_readout(page, timeout=timeout)
        pages.append(page)
    return pages
