"""Benchmark the exported page: start-up, slider-to-repaint latency and size, next to `panel convert --to pyodide`.

Run:  python benchmarks/bench_export.py [--n-prompts 600] [--samples 200] [--skip-pyodide]

All in headless Chromium (Debian's, as in tests/conftest.py) opening the file from file:// with every
other request aborted. Measured inside the page (performance.now, whose origin is the navigation), so
the driver's round trip is not counted:

* start-up: navigation -> the readout `.readout-useful` first shows a percentage (the page carries the
  starting view's readouts as HTML), and -> interactive: the end of the first frame after the glue has
  wired the controls and painted the grid (a task posted from that frame's callbacks);
* repaint: for each of --samples progress values, set the progress input and fire its `input` event
  (what dragging does) and time (a) the page's share: the handler (kernel, the grid's image put on its
  canvas, readout text), which runs synchronously; (b) the end of the next frame (style, layout, paint
  and composite of the new grid and readouts: a task posted from the frame's callbacks), excluding the
  idle wait for the frame to begin ("work"), and including it ("to frame end");
* the file size.

Baseline in the same run: `panel convert --to pyodide` of a comparable one-slider Panel app, opened the
same way. It needs Pyodide and wheels from a CDN at view time, so offline it never becomes interactive;
we report its size, the requests it attempts, and whether anything rendered. Its online start-up is
documented in Panel issues #7061 (about 30 s for the pyodide-worker target) and #7050 ("10s of seconds").
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from grpo_lab.testing.chromium import launch
from grpo_lab.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]

from grpo_lab.testing.lab_server import block_outside

FIRST_READOUT_INIT = """
(() => {
  window.__firstReadout = null;
  window.__interactive = null;
  const look = () => {
    if (window.__firstReadout === null) {
      const visit = (root) => {
        for (const el of root.querySelectorAll("*")) {
          if (el.classList.contains("readout-useful") && /%$/.test(el.textContent.trim())) return true;
          if (el.shadowRoot && visit(el.shadowRoot)) return true;
        }
        return false;
      };
      if (visit(document)) window.__firstReadout = performance.now();
    }
    const root = document.getElementById("grpo-export");
    if (root && root.getAttribute("data-ready") === "true") {
      const ch = new MessageChannel();
      ch.port1.onmessage = () => { window.__interactive = performance.now(); };
      ch.port2.postMessage(0);
      return;
    }
    requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})();
"""

REPAINT_JS = """async (n) => {
  const input = document.getElementById("gx-progress");
  const frame = () => new Promise(r => requestAnimationFrame(r));
  const work = [], toFrame = [], handled = [];
  for (let i = 0; i < n; i++) {
    await frame();
    const value = Math.round(1000 * (i % 2 ? i / n : 1 - i / n)) / 1000;
    let tFrameStart = null;
    requestAnimationFrame(() => { tFrameStart = performance.now(); });
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event("input", {bubbles: true}));  // the page's handler runs synchronously
    const tHandled = performance.now();
    // the end of the frame that shows the change: a task posted from a frame callback runs after all of
    // that frame's callbacks and its rendering
    const tEnd = await new Promise(r => requestAnimationFrame(() => {
      const ch = new MessageChannel(); ch.port1.onmessage = () => r(performance.now()); ch.port2.postMessage(0);
    }));
    handled.push(tHandled - t0);
    work.push((tHandled - t0) + (tEnd - tFrameStart));  // without the idle wait for the frame to begin
    toFrame.push(tEnd - t0);
  }
  return {work, toFrame, handled};
}"""


def open_offline(browser, path: Path, wait_ready: bool, timeout_ms: int = 20_000):
    ctx = browser.new_context(viewport={"width": 800, "height": 1000})
    page = ctx.new_page()
    url, errors = path.as_uri(), []
    page.on("pageerror", lambda e: errors.append(str(e)))
    attempted = block_outside(page, lambda u: u == url)
    page.add_init_script(FIRST_READOUT_INIT)
    page.goto(url)
    ready = True
    if wait_ready:
        page.wait_for_function("() => window.__interactive !== null && window.__firstReadout !== null",
                               timeout=timeout_ms)
    else:
        try:
            page.wait_for_function("() => window.__firstReadout !== null", timeout=timeout_ms)
        except Exception:  # noqa: BLE001 - the baseline is expected not to start offline
            ready = False
    return ctx, page, attempted, errors, ready


PYODIDE_APP = '''
import numpy as np, panel as pn
from bokeh.plotting import figure
rng = np.random.default_rng(0); p0 = rng.beta(2, 3, 600); u = rng.random((600, 8))
t = pn.widgets.FloatSlider(name="Training progress", start=0, end=1, step=0.001, value=0)
fig = figure(width=500, height=500, tools="")
src = fig.rect(np.arange(600) % 25, np.arange(600) // 25, 0.9, 0.9).data_source
out = pn.pane.HTML("")
def paint(v):
    p = p0 ** (1 / (1 + 7.84 * v)); k = (u < p[:, None]).sum(1)
    src.data["fill_color"] = np.where((k > 0) & (k < 8), "#009E73", "#E69F00").tolist()
    out.object = f'<span class="readout-useful">{100 * ((k > 0) & (k < 8)).mean():.1f}%</span>'
pn.bind(paint, t, watch=True); paint(0)
pn.Column(t, fig, out).servable()
'''


def bench_pyodide(browser, workdir: Path) -> dict:
    app = workdir / "app.py"
    app.write_text(PYODIDE_APP)
    outdir = workdir / "pyodide"
    t0 = time.perf_counter()
    proc = subprocess.run(["panel", "convert", str(app), "--to", "pyodide", "--out", str(outdir)],
                          capture_output=True, text=True, timeout=300)
    convert_s = time.perf_counter() - t0
    files = list(outdir.glob("*")) if outdir.exists() else []
    if proc.returncode != 0 or not files:
        return {"ok": False, "error": (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]}
    html = next(p for p in files if p.suffix == ".html")
    ctx, page, attempted, errors, ready = open_offline(browser, html, wait_ready=False, timeout_ms=15_000)
    ctx.close()
    hosts = sorted({u.split("/")[2] for u in attempted if "://" in u})
    return {"ok": True, "convert_s": convert_s, "bytes": sum(p.stat().st_size for p in files),
            "files": len(files), "attempted": len(attempted), "hosts": hosts, "interactive_offline": ready}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-prompts", type=int, default=600)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--skip-pyodide", action="store_true")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        tmp = Path(tmp)
        out = tmp / "decay.html"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grpo_lab.cli", "export", "--out", str(out), "--n-prompts",
                        str(args.n_prompts)], check=True, cwd=ROOT)
        export_s = time.perf_counter() - t0
        browser = launch(pw)
        starts, ready = [], []
        for _ in range(5):
            ctx, page, attempted, errors, _ = open_offline(browser, out, wait_ready=True)
            starts.append(page.evaluate("() => window.__firstReadout"))
            ready.append(page.evaluate("() => window.__interactive"))
            assert attempted == [] and errors == [], (attempted, errors)
            ctx.close()
        ctx, page, attempted, errors, _ = open_offline(browser, out, wait_ready=True)
        res = page.evaluate(REPAINT_JS, args.samples)
        ctx.close()
        size = out.stat().st_size
        print(f"grpo-lab export ({args.n_prompts} prompts), headless Chromium, file://, network blocked")
        print(f"  export command            {export_s:6.2f} s")
        print(f"  file size                 {size / 1e6:6.2f} MB   (target <= 2.5 MB)")
        print(f"  navigation -> readout     {statistics.median(starts):6.0f} ms median of 5 "
              f"(min {min(starts):.0f}, max {max(starts):.0f})")
        print(f"  navigation -> interactive {statistics.median(ready):6.0f} ms median of 5 "
              f"(min {min(ready):.0f}, max {max(ready):.0f})   (target <= 1000 ms)")
        w, f, h = res["work"], res["toFrame"], res["handled"]
        print(f"  slider -> repaint (work)  p50 {percentile(w, 0.5):5.1f} ms   p95 {percentile(w, 0.95):5.1f} ms   "
              f"max {max(w):5.1f} ms   over {len(w)} moves   (target p95 <= 16 ms)")
        print(f"  slider -> next frame end  p50 {percentile(f, 0.5):5.1f} ms   p95 {percentile(f, 0.95):5.1f} ms   "
              f"(includes idle wait for the frame)")
        print(f"  slider -> grid painted    p50 {percentile(h, 0.5):5.1f} ms   p95 {percentile(h, 0.95):5.1f} ms   "
              f"(the page's share: kernel, canvas image, readout text; without the browser's rendering)")
        print(f"  requests beyond the file  {len(attempted)}")
        if not args.skip_pyodide:
            py = bench_pyodide(browser, tmp)
            print("panel convert --to pyodide (comparable one-slider app), same conditions")
            if not py["ok"]:
                print(f"  could not convert here: {py['error'][0]}")
            else:
                print(f"  convert command           {py['convert_s']:6.2f} s")
                print(f"  output size               {py['bytes'] / 1e6:6.2f} MB in {py['files']} file(s)"
                      f" (plus Pyodide + wheels fetched at view time)")
                print(f"  requests beyond the file  {py['attempted']} (to {', '.join(py['hosts']) or '-'})")
                print(f"  interactive offline       {'yes' if py['interactive_offline'] else 'no (never within 15 s)'}")
            print("  online start-up, documented: ~30 s (pyodide-worker, Panel issue #7061); "
                  "'10s of seconds' (pyodide, Panel issue #7050)")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
