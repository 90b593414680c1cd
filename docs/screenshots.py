"""Retake the lab's screenshots in ``docs/img`` (shown in ``docs/lab.md``): ``python docs/screenshots.py``.

Serves the lab (``tests/lab_server.py``), opens it in Debian's Chromium at each size below, waits for the
grid's readouts, the plots and the fonts, and saves the first screen (the viewport, not the whole page):
1440x900 (a laptop), 1024x768 (a projector), 390x844 (a phone, with mobile emulation) and ``?present=true`` at
1920x1080 and 1024x768, and its guided tour (step 4, the box docked beside the lab) at 1920x1080 and (step 7, a
band above it, with the K-cost table) at 1024x768; a view pinned at K = 8, t = 0.5 and compared at K = 16
(``?progress=0.5&K=16&pin=K8_t0.5``) at 1440x900; then the exported page (``grpo-lab export``) in a blog's 700x500 iframe,
with no script on the host page (``embed-700x500.png``, shown in ``docs/export.md``), and in a 640x480 one with its
switch set to the plots (``embed-640x480-plots.png``); then, at 1440x900, the Replay tab's Diagnose
on the featured shipped run (``replay-diagnose-1440x900.png``, the report's box scrolled to its samplers section:
table, verdict, chart) and the Samplers tab's chart and verdict (``samplers-1440x900.png``, ``?tab=samplers``).
Needs the test dependencies (Playwright) and ``/usr/bin/chromium``; writes nothing else. Names given on the
command line retake only the shots whose file names contain one of them (``python docs/screenshots.py present embed``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from grpo_lab.testing.chromium import launch
from grpo_lab.testing.lab_server import READ_CLASS, serve, show_plots, wait_readout
from grpo_lab.testing.page import FIND
OUT = ROOT / "docs" / "img"
#: (file name, URL query, width, height)
SHOTS = [("lab-1440x900.png", "", 1440, 900), ("lab-1024x768.png", "", 1024, 768), ("lab-390x844.png", "", 390, 844),
         ("lab-present-1920x1080.png", "?present=true", 1920, 1080), ("lab-present-1024x768.png", "?present=true", 1024, 768),
         ("lab-present-tour-1920x1080.png", "?present=true&tour=4", 1920, 1080),
         ("lab-present-tour-1024x768.png", "?present=true&tour=7", 1024, 768),
         ("lab-pin-compare-1440x900.png", "?progress=0.5&K=16&pin=K8_t0.5", 1440, 900)]
#: the blog post framing the exported page: its text, then a 700x500 iframe (no script)
BLOG = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>A post</title></head>"
        "<body style='margin:16px;font:16px/1.5 Georgia,serif;max-width:740px'><p>... and this is what happens to the "
        "groups as training goes on (drag the slider):</p><iframe src='decay.html' width='700' height='500' "
        "style='border:1px solid #bbb' title='The lab'></iframe><p>The rest of the post.</p></body></html>")
PHONE_PX = 500  #: narrower windows are phones: mobile emulation (touch, device pixels 2x)


def main(only: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    def wanted(name: str) -> bool:
        return not only or any(o in name for o in only)

    with serve() as url, sync_playwright() as pw:
        browser = launch(pw)
        for name, query, width, height in SHOTS:
            if not wanted(name):
                continue
            phone = {"is_mobile": True, "has_touch": True, "device_scale_factor": 2} if width < PHONE_PX else {}
            context = browser.new_context(viewport={"width": width, "height": height}, **phone)
            page = context.new_page()
            page.goto(url + query)
            wait_readout(page)
            if not query:  # presentation mode has no secondary plots
                show_plots(page)
            if "tour=" in query:  # the step's subject outlined, the box docked
                page.wait_for_function(f"() => !!({FIND})('[data-tour-step]') && !!({FIND})('.tour[data-dock]')",
                                       timeout=30_000)
            page.wait_for_function("() => document.fonts.status === 'loaded'")
            page.wait_for_timeout(1000)  # Panel's layout settles
            page.screenshot(path=str(OUT / name))
            print(f"wrote {OUT / name}")
            context.close()
        if wanted("embed-"):
            embed_shot(browser)
        for name, shoot in (("replay-diagnose-1440x900.png", _diagnose), ("samplers-1440x900.png", _samplers)):
            if not wanted(name):
                continue
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            shoot(page, url)
            page.wait_for_function("() => document.fonts.status === 'loaded'")
            page.wait_for_timeout(1000)
            page.screenshot(path=str(OUT / name))
            print(f"wrote {OUT / name}")
            context.close()
        browser.close()
    return 0


def _diagnose(page, url: str) -> None:
    """The Replay tab, Diagnose this run, the report's box scrolled to its samplers section."""
    page.goto(url + "?tab=replay")
    wait_readout(page, "replay-step", timeout=60_000)
    page.locator(".replay-diagnose-button button").click()
    page.locator(".doctor-lab-link").wait_for(timeout=180_000)
    page.locator(".replay-diagnose-button").scroll_into_view_if_needed()
    page.evaluate(f"() => {{ const r = ({FIND})('.doctor-report'); const box = r.getRootNode().host;"
                  f" window.scrollBy(0, box.getBoundingClientRect().top - 8);"
                  f" const h = Array.from(r.querySelectorAll('summary'))"
                  f".find(x => x.textContent.startsWith('Samplers'));"
                  f" box.scrollTop += h.getBoundingClientRect().top - box.getBoundingClientRect().top - 4; }}")


def _samplers(page, url: str) -> None:
    """The Samplers tab, opened from the URL, once its expiries are in."""
    page.goto(url + "?tab=samplers")
    page.locator(".samplers-chart").first.wait_for(timeout=60_000)
    page.wait_for_function(f"() => !({READ_CLASS})('samplers-table').includes('\u2026')", timeout=60_000)


def embed_shot(browser) -> None:
    """The default exported page in a blog's 700x500 iframe (``embed-700x500.png``), and in a 640x480 one with its
    switch set to the plots (``embed-640x480-plots.png``)."""
    import tempfile

    from grpo_lab.testing.cli import run_cli

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        proc = run_cli("export", "--out", str(folder / "decay.html"))
        assert proc.returncode == 0, proc.stderr
        for name, (width, height), plots in (("embed-700x500.png", (700, 500), False),
                                             ("embed-640x480-plots.png", (640, 480), True)):
            post = folder / f"post-{width}.html"
            post.write_text(BLOG.replace("width='700' height='500'", f"width='{width}' height='{height}'"),
                            encoding="utf-8")
            context = browser.new_context(viewport={"width": width + 80, "height": height + 140})
            page = context.new_page()
            page.goto(post.as_uri())
            page.frame_locator("iframe").locator("#grpo-export[data-ready=true]").wait_for(state="attached")
            if plots:  # the frame's switch set to the plots
                page.frame_locator("iframe").get_by_label("the plots").check()
            page.wait_for_timeout(800)
            page.screenshot(path=str(OUT / name))
            print(f"wrote {OUT / name}")
            context.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
