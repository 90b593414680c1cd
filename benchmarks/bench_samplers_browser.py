"""The Samplers tab's latency in headless Chromium: a control change -> the table painted, beside a baseline.

Opens the lab (``panel serve lab/app.py``) at its default population, opens the Samplers tab, and presses
ArrowRight / ArrowLeft alternately on one of the tab's two sliders (progress, then K), one press at a time.
In the page, ``performance.now()`` is stamped at the ``keydown``; a ``MutationObserver`` on the tab's table
(its shadow root) notes when the new table arrives, and the time is read after the next frame is done (a
task posted from that frame's ``requestAnimationFrame``), i.e. after style, layout and paint.

Baseline, the same harness in the same run: the Live lab's own progress slider -> its readout painted (the
grid view, computed in the browser), so the gap is the tab's browser -> Python -> browser round trip and
its Python work. A K press shows the table at once with the expiry cells pending (the tab defers the expiry
search to the next tick), so its figure is the time to that first table. Prints p50 / p95 in ms and the load average (the machine is shared: say it beside figures).

Usage: python benchmarks/bench_samplers_browser.py [--presses 20]
"""

from __future__ import annotations

import argparse
import os
import statistics

from grpo_lab.testing.chromium import launch
from grpo_lab.testing.lab_server import serve, wait_readout

HARNESS = """cls => {
  function find(root) {
    const el = root.querySelector('.' + cls); if (el) return el;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
    return null;
  }
  const el = find(document);
  const root = el.getRootNode();
  window.__lat = {t0: null, samples: [], pending: false};
  document.addEventListener('keydown', () => { window.__lat.t0 = performance.now(); window.__lat.pending = true; }, true);
  new MutationObserver(() => {
    const L = window.__lat;
    if (!L.pending) return;
    L.pending = false;
    requestAnimationFrame(() => { const ch = new MessageChannel();
      ch.port1.onmessage = () => L.samples.push(performance.now() - L.t0); ch.port2.postMessage(0); });
  }).observe(root, {childList: true, subtree: true, characterData: true});
}"""


def measure(page, handle, cls: str, presses: int) -> list[float]:
    page.evaluate(HARNESS, cls)
    for i in range(presses):
        n = page.evaluate("() => window.__lat.samples.length")
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        try:
            page.wait_for_function(f"() => window.__lat.samples.length > {n}", timeout=10_000)
        except Exception:  # playwright's TimeoutError: a press that changed nothing (counted as missed, not timed)
            print(f"  (press {i} on {cls}: no update within 10 s)")
        page.wait_for_timeout(150)  # let late updates of the same press settle
        page.evaluate("() => { window.__lat.pending = false; }")
    return sorted(page.evaluate("() => window.__lat.samples"))


def p(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=20)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    rows = []
    with serve() as url, sync_playwright() as pw:
        browser = launch(pw, background_tabs=True)
        page = browser.new_page()
        page.goto(url)
        wait_readout(page, "readout-mean-pass", timeout=120_000)
        page.wait_for_timeout(1500)
        live = page.locator("#gx-progress")  # the Live lab's progress slider (the grid view's, as bench_lab_latency)
        live.focus()
        rows.append(("baseline: Live lab progress -> readout painted",
                     measure(page, live, "readout-mean-pass", args.presses)))
        page.locator(".bk-tab", has_text="Samplers").first.click()
        page.locator(".samplers-controls .noUi-handle").first.wait_for(timeout=60_000)
        for i, name in ((0, "Samplers tab: progress -> table painted"), (1, "Samplers tab: K -> table painted")):
            h = page.locator(".samplers-controls .noUi-handle").nth(i)
            h.focus()
            rows.append((name, measure(page, h, "samplers-table", args.presses)))
        browser.close()
    print(f"{args.presses} presses each, ms from keydown to the frame after the update:")
    for name, xs in rows:
        print(f"  {name:50s} p50 {statistics.median(xs):7.1f}  p95 {p(xs, 0.95):7.1f}  (n {len(xs)})")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
