"""Scrub latency of the replay tab, measured inside headless Chromium, with a same-run baseline.

For each size (prompts x steps of a synthetic record, ``tests/synthetic_record.py``) the tab is served
alone; the benchmark presses ArrowRight on the step slider (``#gx-step``, the grid view's native input)
``--presses`` times and, in the page, takes ``performance.now()`` at the keydown and again when a
MutationObserver sees the readout ``replay-step`` rewritten (the grid view's frames mode), and once
more when the next frame is done (a task posted from its animation-frame callbacks: grid canvas
repainted, page laid out and painted). For comparison, in the same page and run: a Python callback
that echoes the step position into a pane once Python hears it (the component sends it after the
slider rests 150 ms, so this column includes that pause and the round trip). Compare the frame column
with ``benchmarks/bench_lab_latency.py``'s lab figure, measured in the same session.

Run:  python benchmarks/bench_replay.py [--presses 60]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from grpo_lab.testing.chromium import launch
from grpo_lab.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]

SIZES = ((600, 200, 150), (10_000, 60, 2_000))  # prompts, steps, prompts per step

INSTALL = r"""() => {
  const find = (root, cls) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.classList && el.classList.contains(cls)) return el;
      if (el.shadowRoot) { const f = find(el.shadowRoot, cls); if (f) return f; }
    }
    return null;
  };
  const B = window.__bench = {t0: null, js: [], frame: [], echo: []};
  const byId = (root, id) => {
    const hit = root.getElementById ? root.getElementById(id) : null;
    if (hit) return hit;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const f = byId(el.shadowRoot, id); if (f) return f; }
    return null;
  };
  const handle = byId(document, 'gx-step');
  handle.addEventListener('keydown', () => { B.t0 = performance.now(); B.echo_t0 = B.t0; }, true);
  const watch = (cls, on) => {
    const el = find(document, cls);
    new MutationObserver(on).observe(el.getRootNode(), {subtree: true, childList: true, characterData: true});
  };
  watch('replay-step', () => {
    if (B.t0 === null) return;
    const t0 = B.t0; B.t0 = null;
    B.js.push(performance.now() - t0);
    // the end of the frame that shows it: a task posted from a frame callback runs after all of that
    // frame's callbacks and its style, layout and paint
    requestAnimationFrame(() => {
      const ch = new MessageChannel(); ch.port1.onmessage = () => B.frame.push(performance.now() - t0);
      ch.port2.postMessage(0);
    });
  });
  const echo = find(document, 'bench-echo');
  new MutationObserver(() => {
    if (B.echo_t0 === null) return;
    B.echo.push(performance.now() - B.echo_t0); B.echo_t0 = null;
  }).observe(echo.shadowRoot || echo, {subtree: true, childList: true, characterData: true});
  return true;
}"""


def serve(root: Path):
    import panel as pn

    from grpo_lab.replay.view import ReplayView

    def app():
        view = ReplayView(runs_root=root)
        echo = pn.pane.HTML("", css_classes=["bench-echo"])
        view.slider.param.watch(lambda e: setattr(echo, "object", f"<span>{e.new}</span>"), "value")
        return pn.Column(view, echo)

    from grpo_lab.testing.lab_server import serve_local  # tests/

    return serve_local(app)


def measure(browser, url: str, presses: int) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=120_000)
    page.wait_for_timeout(3000)
    page.evaluate(INSTALL)
    handle = page.locator("#gx-step")
    handle.focus()
    handle.press("Home")
    page.wait_for_timeout(300)
    page.evaluate("() => { __bench.js = []; __bench.frame = []; __bench.echo = []; }")
    for _ in range(presses):
        handle.press("ArrowRight")
        page.wait_for_timeout(150)  # let the server echo land before the next press
    page.wait_for_timeout(500)
    out = page.evaluate("() => __bench")
    page.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presses", type=int, default=60)
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from grpo_lab.testing.synthetic_record import synthetic_record  # tests/
    from grpo_lab.sims.record import write_record

    print(f"replay scrub latency, {args.presses} slider steps per size, headless Chromium (ms)")
    print(f"{'prompts':>8} {'steps':>6} | {'to readout p50':>14} {'p95':>6} | {'to next frame p50':>17} {'p95':>6} | "
          f"{'Python hears it p50':>21} {'p95':>6}")
    with sync_playwright() as pw:
        browser = launch(pw)
        for n, steps, per_step in SIZES:
            root = Path(tempfile.mkdtemp(prefix="bench-replay-"))
            write_record(root / "synthetic", synthetic_record(n_prompts=n, steps=steps, prompts_per_step=per_step,
                                                              eval_every=10, seed=0))
            srv, url = serve(root)
            try:
                r = measure(browser, url, args.presses)
            except Exception as exc:  # a loaded machine can stall the page; report it rather than crash
                print(f"{n:>8} {steps:>6} | did not complete: {type(exc).__name__}: {str(exc).splitlines()[0]}")
                continue
            finally:
                srv.stop()
            js, fr, echo = r["js"], r["frame"], r["echo"]
            print(f"{n:>8} {steps:>6} | {statistics.median(js):>14.2f} {percentile(js, 0.95):>6.2f} | "
                  f"{statistics.median(fr):>17.2f} {percentile(fr, 0.95):>6.2f} | "
                  f"{statistics.median(echo):>21.2f} {percentile(echo, 0.95):>6.2f}   (n = {len(js)}, {len(echo)})")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
