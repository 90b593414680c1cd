"""Cost of the linked hover in the served lab, measured inside headless Chromium, next to a slider step.

For each prompt count (600 and 10,000) the script opens the lab (``panel serve lab/app.py``), waits for the
plots, and moves the pointer over N cells, one synthetic ``pointermove`` at a time. In the page it stamps
``performance.now()`` before dispatching the event and after it returns ("handler": the tip, the cell's
outline, its K rollout dots, the hover listeners), then after the next frame is done, in a task posted from
the next ``requestAnimationFrame`` callback ("to frame": the handler, the plots' hover markers moved in the
browser by ``lab/static/live_grid.js`` and the frame's style, layout and paint). It counts the websocket
messages the page sends meanwhile and in the 0.8 s after (a hover should send none; the slider's values
go to Python once it rests).

The baseline, measured in the same run with the same harness: one step of the training-progress slider (an
``input`` event on the grid view's range input: the kernel evaluates the view, the canvas is repainted and
the readouts rewritten), the lab's own latency path (``benchmarks/bench_lab_latency.py``).

Usage: python benchmarks/bench_hover.py [--moves 60] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics


from grpo_lab.testing.lab_server import serve, show_plots, wait_readout
from grpo_lab.testing.chromium import launch
from grpo_lab.testing.stats import percentile

#: JavaScript: the first element matching a selector, through shadow roots
FIND = """sel => { function find(root) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
  return null; } return find(document); }"""

#: JavaScript: N timed events of one kind ("hover": pointermove over successive cells; "slider": progress steps)
MEASURE = f"""async ([kind, n]) => {{
  const find = {FIND};
  const canvas = find('#gx-grid'), slider = find('#gx-progress');
  canvas.scrollIntoView({{block: 'center'}});
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  await frame();
  const box = canvas.getBoundingClientRect(), handler = [], toFrame = [];
  for (let j = 0; j < n; j++) {{
    const t0 = performance.now();
    if (kind === 'hover') {{
      const fx = ((j * 7919) % 997) / 997, fy = ((j * 104729) % 991) / 991;  /* cells spread over the grid */
      canvas.dispatchEvent(new PointerEvent('pointermove', {{clientX: box.left + fx * box.width,
                                                             clientY: box.top + fy * box.height, bubbles: true}}));
    }} else {{
      slider.value = String(j % 2 ? 0.51 : 0.5);
      slider.dispatchEvent(new Event('input', {{bubbles: true}}));
    }}
    const t1 = performance.now();
    await frame();
    handler.push(t1 - t0);
    toFrame.push(performance.now() - t0);
  }}
  return {{handler, toFrame}};
}}"""


def measure(browser, url: str, n_prompts: int, moves: int) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sent = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda f: sent.append(f)))
    page.goto(f"{url}?n_prompts={n_prompts}&progress=0.5")
    wait_readout(page)
    show_plots(page, timeout=120_000)
    page.wait_for_timeout(1500)
    out = {}
    for kind in ("slider", "hover"):
        page.evaluate(MEASURE, [kind, 5])  # warm up
        page.wait_for_timeout(800)
        before = len(sent)
        r = page.evaluate(MEASURE, [kind, moves])
        page.wait_for_timeout(800)  # the slider's values reach Python once the control rests (150 ms)
        out[kind] = {"handler_p50_ms": statistics.median(r["handler"]), "handler_p95_ms": percentile(r["handler"], 0.95),
                     "to_frame_p50_ms": statistics.median(r["toFrame"]), "to_frame_p95_ms": percentile(r["toFrame"], 0.95),
                     "messages_sent": len(sent) - before}
    page.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    results = {}
    with serve() as url, sync_playwright() as pw:
        browser = launch(pw, background_tabs=True)
        for n in (600, 10_000):
            results[n] = measure(browser, url, n, args.moves)
        browser.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'prompts':>8} {'event':>7} {'handler p50/p95 ms':>20} {'to frame p50/p95 ms':>21} {'msgs to server':>15}")
    for n, r in results.items():
        for kind in ("slider", "hover"):
            m = r[kind]
            label = "slider" if kind == "slider" else "hover"
            print(f"{n:>8} {label:>7} {m['handler_p50_ms']:>9.2f} / {m['handler_p95_ms']:<8.2f} "
                  f"{m['to_frame_p50_ms']:>9.2f} / {m['to_frame_p95_ms']:<9.2f} {m['messages_sent']:>15}")
    print("slider: the baseline (one progress step, the lab's latency path); hover: a pointermove over a new cell")


if __name__ == "__main__":
    main()
