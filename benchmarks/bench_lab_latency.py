"""Slider-to-repaint latency of the served lab, measured inside headless Chromium, next to a Python baseline.

For each prompt count (600 and 10,000) the script opens the lab (``panel serve lab/app.py``),
focuses the training-progress slider (the grid view's range input) and presses ArrowRight N times,
one press at a time. In the page, ``performance.now()`` is stamped at the ``keydown`` event (the
input), a ``MutationObserver`` watches the readouts, and the time is read when the next frame is
done: in a task posted from that frame's first ``requestAnimationFrame`` callback after the readouts
changed, which runs after every callback of the frame and after the frame's style, layout, paint and
commit. p50 and p95 are reported, and also the "work": the key's handling up to the readouts plus
that frame's work, without the idle wait for the frame to begin (the same split ``bench_export.py``
reports), and the page's own share, "to grid painted": the key's handling up to the readouts, which
includes the kernel and the grid's image put on its canvas (both run in the input event, before the
readouts change), leaving out the browser's style, layout, raster and commit.

The baseline, measured in the same run with the same harness: the same grid view repainted by a
Python callback (a ``LiveGrid`` with ``server_paints``: every move goes to Python, whose watcher
evaluates the view with ``sims.scenario.evaluate`` and sends it back), i.e. a browser -> Python ->
browser round trip, served in-process by ``pn.serve``.

Usage: python benchmarks/bench_lab_latency.py [--presses 40] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
from dataclasses import replace


from grpo_lab.testing.lab_server import free_port, serve, wait_http, wait_readout
from grpo_lab.testing.chromium import launch

HARNESS = """() => {
  function find(root, cls) {
    const el = root.querySelector('.' + cls); if (el) return el;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot, cls); if (f) return f; }
    return null;
  }
  function afterFrame(fn) { const ch = new MessageChannel(); ch.port1.onmessage = fn; ch.port2.postMessage(0); }
  const span = find(document, 'readout-mean-pass');
  const root = span.closest('.gx-readouts') || span.getRootNode();  // the readouts alone, not the controls' labels
  window.__lat = {t0: null, samples: [], mut: [], work: [], pending: false, frameStart: null};
  document.addEventListener('keydown', () => {
    const L = window.__lat;
    L.t0 = performance.now(); L.pending = true; L.frameStart = null;
    // registered before the slider handles the key, so it runs first in the next frame
    requestAnimationFrame(() => { L.frameStart = performance.now(); });
  }, true);
  new MutationObserver(() => {
    const L = window.__lat;
    if (!L.pending) return;
    L.pending = false;
    const tReadout = performance.now();
    L.mut.push(tReadout - L.t0);
    // the end of the frame that shows the change: a task posted from a frame callback runs once that
    // frame's callbacks and its rendering are done
    requestAnimationFrame(() => afterFrame(() => {
      const tEnd = performance.now();
      L.samples.push(tEnd - L.t0);
      // work: the key's handling up to the readouts, plus the frame's paint, without the idle wait for
      // the frame; if a frame began mid-handling the two cannot be separated and the whole span counts
      const fs = L.frameStart;
      L.work.push(fs !== null && fs >= tReadout ? (tReadout - L.t0) + (tEnd - fs) : tEnd - L.t0);
    }));
  }).observe(root, {subtree: true, childList: true, characterData: true});
}"""


def measure(page, url: str, presses: int) -> dict:
    page.goto(url)
    wait_readout(page, "readout-mean-pass", timeout=120_000)
    page.wait_for_timeout(1500)
    page.evaluate(HARNESS)
    handle = page.locator("#gx-progress")
    handle.focus()
    page.set_default_timeout(120_000)
    missed = 0
    for i in range(presses):
        n = page.evaluate("() => window.__lat.samples.length")
        handle.press("ArrowRight")
        try:
            page.wait_for_function(f"() => window.__lat.samples.length > {n}", timeout=5000)
        except Exception:  # the readout did not change (or the update was lost): count it
            missed += 1
            page.evaluate("() => { window.__lat.pending = false; }")
        page.wait_for_timeout(30)
    samples = sorted(page.evaluate("() => window.__lat.samples"))
    mut = sorted(page.evaluate("() => window.__lat.mut"))
    work = sorted(page.evaluate("() => window.__lat.work"))
    painted = mut  # the kernel and the grid's canvas image run in the input event, before the readouts change
    qp = statistics.quantiles(painted, n=20, method="inclusive") if len(painted) > 1 else painted * 19
    qw = statistics.quantiles(work, n=20, method="inclusive") if len(work) > 1 else work * 19
    q = statistics.quantiles(samples, n=20, method="inclusive") if len(samples) > 1 else samples * 19
    return {"n": len(samples), "missed": missed, "readout_p50_ms": statistics.median(mut), "p50_ms": statistics.median(samples), "p95_ms": q[18],
            "max_ms": samples[-1], "work_p50_ms": statistics.median(work), "work_p95_ms": qw[18],
            "painted_p50_ms": statistics.median(painted), "painted_p95_ms": qp[18]}


def baseline_app():
    """The same grid view, repainted by a Python callback on every move (the server round trip)."""
    import panel as pn

    from grpo_lab.grid.component import LiveGrid, server_view
    from grpo_lab.sims.scenario import Scenario, evaluate

    args = pn.state.session_args or {}
    n = int(args.get("n_prompts", [b"600"])[0])
    scenario = Scenario(n_prompts=n)
    pop = scenario.population()
    values = {"progress": scenario.progress, "K": scenario.K, "filter": False, "band_lo": 0.2, "band_hi": 0.8}
    grid = LiveGrid.build(pop, values, scenario.gain, server_paints=True, width=560)

    def paint(*_events):
        s = replace(scenario, progress=grid.progress, K=grid.K, band=(grid.band_lo, grid.band_hi) if grid.filter else None)
        grid.view = server_view(evaluate(s, pop), s.K)

    paint()
    grid.param.watch(paint, ["progress", "K", "filter", "band_lo", "band_hi"])
    return pn.Column(grid)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presses", type=int, default=40)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--prompts", type=int, nargs="+", default=[600, 10_000])
    args = ap.parse_args(argv)

    import panel as pn
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = pn.serve({"baseline": baseline_app}, port=port, address="127.0.0.1", show=False, threaded=True,
                      websocket_origin=[f"127.0.0.1:{port}"])
    wait_http(f"http://127.0.0.1:{port}/baseline")
    results = []
    try:
        with serve() as lab_url, sync_playwright() as pw:
            browser = launch(pw, background_tabs=True)
            for n in args.prompts:
                for label, url in (("browser kernel (lab)", f"{lab_url}?n_prompts={n}"),
                                   ("python callback (baseline)", f"http://127.0.0.1:{port}/baseline?n_prompts={n}")):
                    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                    page = ctx.new_page()
                    r = measure(page, url, args.presses)
                    ctx.close()
                    results.append({"prompts": n, "path": label, **r})
                    if not args.json:
                        print(f"{n:>6} prompts  {label:<28} p50 {r['p50_ms']:6.1f} ms  p95 {r['p95_ms']:6.1f} ms  "
                              f"max {r['max_ms']:6.1f} ms  readout-only p50 {r['readout_p50_ms']:6.1f} ms  "
                              f"work p50 {r['work_p50_ms']:5.1f} p95 {r['work_p95_ms']:5.1f} ms  "
                              f"to grid painted p50 {r['painted_p50_ms']:5.1f} p95 {r['painted_p95_ms']:5.1f} ms  "
                              f"(n={r['n']}, no change={r['missed']})", flush=True)
            browser.close()
    finally:
        server.stop()
        threading.Event().wait(0.2)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
