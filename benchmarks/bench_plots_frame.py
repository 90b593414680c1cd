"""Control change or Play frame to the painted plots, measured inside headless Chromium, beside a baseline tree.

The live lab's decay curve and P(useful) histogram follow the grid. This script opens the lab of this tree and of
a baseline tree (``--baseline``, a checkout of main: there Python redraws the plots as Bokeh figures after a
debounce) with 600 prompts at the default view, and measures in the page, with ``performance.now()``:

* **control change**: the progress slider (the grid view's range input) focused and ArrowRight pressed N times,
  one at a time. Stamped at the ``keydown``; the plots count as painted at the end of the first frame (a task
  posted from a ``requestAnimationFrame`` callback, after the frame's rendering) whose plots show the new
  progress: in this tree the SVG plots' data (``plots.data.t``), in the baseline the decay curve's marker (the
  Bokeh ``Span`` of ``line_width`` 2 across the height, which Python moves on redraw). Beside it, in the same run,
  the grid's own latency as ``bench_lab_latency.py`` measures it: keydown to the end of the frame after the
  readouts changed.
* **Play frame**: Play pressed; for every progress value the grid shows (its label, watched by a
  ``MutationObserver``), the time from the label's change to the end of the first frame whose plots show that
  value (or a later one: a skipped value counts at the first frame that passed it); and how many of those
  labels found the plots already showing them when the label changed (the same event). In this tree the plots'
  own share of each event (``plots.draw``: their data from the kernel and their SVG) is timed too.

p50 and p95 per tree. Needs Debian's Chromium at /usr/bin/chromium and Playwright for Python.

Usage: python benchmarks/bench_plots_frame.py [--presses 30] [--baseline /work/main] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from grpo_lab.testing.lab_server import free_port, serve, show_plots, wait_readout
from grpo_lab.testing.chromium import launch
#: the page's harness: window.__b = {keys: [[t0, target]], grid: [ms], plots: [ms], play: [ms]}
HARNESS = """() => {
  function find(root, sel) {
    const el = root.querySelector(sel); if (el) return el;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot, sel); if (f) return f; }
    return null;
  }
  function afterFrame(fn) { const ch = new MessageChannel(); ch.port1.onmessage = fn; ch.port2.postMessage(0); }
  const view = find(document, '.gx-view'), input = find(document, '#gx-progress'), label = find(document, '#gx-progress-out');
  const readouts = find(document, '.readout-mean-pass').closest('.gx-readouts');
  /* the progress the plots show now: this tree's SVG plots, or the baseline's Bokeh decay marker */
  function plotT() {
    if (view.__grpoPlots) return view.__grpoPlots.data ? view.__grpoPlots.data.t : null;
    for (const doc of Bokeh.documents) for (const m of doc.all_models)
      if (m.type === 'Span' && m.dimension === 'height' && m.line_width === 2 && m.visible && m.name === null) return m.location;
    return null;
  }
  const B = window.__b = {grid: [], plots: [], play: [], pending: null, labels: [], same: 0, draw: []};
  const P0 = view.__grpoPlots;
  if (P0) {  /* this tree: the plots' own share of the event (their data and their SVG), timed */
    const draw = P0.draw;
    P0.draw = function () { const t = performance.now(); draw.apply(P0, arguments); B.draw.push(performance.now() - t); };
  }
  document.addEventListener('keydown', () => { B.pending = {t0: performance.now(), target: null, grid: false, plots: false}; }, true);
  input.addEventListener('input', () => { if (B.pending) B.pending.target = Number(input.value); });
  new MutationObserver(() => {
    const P = B.pending;
    if (!P || P.grid) return;
    P.grid = true;
    requestAnimationFrame(() => afterFrame(() => B.grid.push(performance.now() - P.t0)));
  }).observe(readouts, {subtree: true, childList: true, characterData: true});
  new MutationObserver(() => {
    const v = Number(label.textContent), t = plotT();
    B.labels.push([performance.now(), v]);
    if (B.playing && t !== null && Number(t.toFixed(2)) === v) B.same++;  /* the plots already show it */
  }).observe(label, {subtree: true, childList: true, characterData: true});
  /* every frame: have the plots caught up with a pending key, or with the labels Play showed? */
  let done = 0;
  function frame() {
    const P = B.pending;
    afterFrame(() => {  /* after the frame's callbacks (Play's paint among them) and its rendering */
      const now = performance.now(), t = plotT();
      if (P && !P.plots && P.target !== null && t !== null && Math.abs(t - P.target) < 1e-9) {
        P.plots = true; B.plots.push(now - P.t0);
      }
      if (B.playing && t !== null) {
        const shown = Number(t.toFixed(2));  /* the label prints the progress to 2 digits */
        while (done < B.labels.length && B.labels[done][1] <= shown + 1e-9) { B.play.push(now - B.labels[done][0]); done++; }
      }
    });
    requestAnimationFrame(frame);
  }
  B.startPlay = () => { B.labels.length = 0; done = 0; B.playing = true; };
  requestAnimationFrame(frame);
}"""


def _q(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    if not xs:
        return float("nan"), float("nan")
    p95 = statistics.quantiles(xs, n=20, method="inclusive")[18] if len(xs) > 1 else xs[0]
    return statistics.median(xs), p95


def measure(page, url: str, presses: int) -> dict:
    page.goto(url)
    wait_readout(page, "readout-mean-pass", timeout=120_000)
    show_plots(page)  # the baseline builds its plots once scrolled to
    page.wait_for_timeout(1500)
    page.evaluate(HARNESS)
    page.set_default_timeout(120_000)
    handle = page.locator("#gx-progress")
    handle.focus()
    missed = 0
    for _ in range(presses):
        n = page.evaluate("() => window.__b.plots.length")
        handle.press("ArrowRight")
        try:
            page.wait_for_function(f"() => window.__b.plots.length > {n}", timeout=10_000)
        except Exception:
            missed += 1
        page.wait_for_timeout(30)
    handle.press("Home")
    page.wait_for_timeout(3000)  # the baseline's redraw of t = 0 has landed
    page.evaluate("() => window.__b.startPlay()")
    page.get_by_role("button", name="\u25b6 Play").click()
    page.wait_for_function("() => window.__b.labels.length && window.__b.labels[window.__b.labels.length - 1][1] === 1",
                           timeout=60_000)
    page.wait_for_timeout(3000)  # the baseline's last redraw
    b = page.evaluate("() => ({grid: window.__b.grid, plots: window.__b.plots, play: window.__b.play,"
                      " labels: window.__b.labels.length, same: window.__b.same, draw: window.__b.draw})")
    return {"grid": _q(b["grid"]), "plots": _q(b["plots"]), "play": _q(b["play"]), "n": len(b["plots"]),
            "play_n": len(b["play"]), "labels": b["labels"], "same": b["same"], "draw": _q(b["draw"]), "missed": missed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presses", type=int, default=30)
    ap.add_argument("--baseline", default="/work/main", help="a checkout of the baseline (main), with its .venv")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    trees = [("this tree", None)]
    base = Path(args.baseline)
    if (base / "lab" / "app.py").exists():
        py = base / ".venv" / "bin" / "python"
        trees.append((f"baseline {base}", [str(py if py.exists() else sys.executable), "-m", "panel", "serve",
                                           str(base / "lab" / "app.py")]))
    results = []
    with sync_playwright() as pw:
        browser = launch(pw, background_tabs=True)
        for label, cmd in trees:
            port = free_port()
            if cmd:
                cmd = cmd + ["--port", str(port), "--address", "127.0.0.1", "--allow-websocket-origin",
                             f"127.0.0.1:{port}", "--num-procs", "1"]
            with serve(cmd, port=port, cwd=base if cmd else None) as url:
                ctx = browser.new_context(viewport={"width": 1440, "height": 900})
                r = measure(ctx.new_page(), f"{url}?n_prompts=600", args.presses)
                ctx.close()
            results.append({"tree": label, **r})
            if not args.json:
                print(f"{label:<24} control -> plots painted p50 {r['plots'][0]:7.1f} ms  p95 {r['plots'][1]:7.1f} ms"
                      f" | grid p50 {r['grid'][0]:5.1f} p95 {r['grid'][1]:5.1f} ms | Play frame -> plots p50 "
                      f"{r['play'][0]:7.1f} p95 {r['play'][1]:7.1f} ms  (keys {r['n']}, no plot change "
                      f"{r['missed']}, Play frames {r['play_n']} of {r['labels']}, plots already there when the label changed: "
                      f"{r['same']}; the plots' own draw p50 {r['draw'][0]:.2f} p95 {r['draw'][1]:.2f} ms)", flush=True)
        browser.close()
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
