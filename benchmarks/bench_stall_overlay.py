"""The Live lab's stall overlay beside the frame the grid keeps today: what a redraw costs with and without it.

**In Python** (``--part python``): a Live lab redraw computes its frame in
:meth:`grpo_lab.views.live.LiveLab.prepare` (the view, the curves Python sends, the plots' text); with rho > 0 the
overlay (:func:`grpo_lab.views.decay.stall_columns`, the core's :func:`grpo_lab.sims.loop_stall.loop_stall_curve`)
is computed there, in the same frame (at rho = 0 the browser computes it, below, and Python's rho = 0 rows show the
redraw with nothing of the overlay in it). For each setting below,
Play's frames are replayed (progress 0, 0.05, ..., 1: the overlay's curve is cached across progresses of one view,
as the decay columns are) and, the heavier case, every K from 2 to 16 at a fixed progress (a new curve each time);
each timed with no loop, with DAPO and with GRPO, in this process, interleaved within each repeat. Printed: the median prepare time
of each, the overlay's share, and the frame budget it must stay within: :data:`grpo_lab.views.play_budget.INLINE_WORK_S`
(a frame under it is computed inline, on the event loop; over it, in the heavy-work thread, spaced by the budget)
and Play's sync period (:data:`grpo_lab.grid.spec.PLAY_SYNC_MS`). Load average printed beside (two shared cores).

**In Chromium** (``--part browser``; the default runs both parts): at rho = 0 the overlay is the browser kernel's
(``grpoKernel.loopStall``), computed in the grid's own input event. The lab of this tree is served and opened in one
headless Chromium, one page per loop (none, DAPO 512/512 cap 2, GRPO 16 groups, from the URL); on each, input events
are dispatched one at a time on the grid's controls: progress steps (the curves and the overlay kept, the markers
moved) and K from 2 to 16 (every curve and the overlay computed anew), and per event are timed, with
``performance.now()``: the event's own work (the grid, its readouts, the plots and the overlay, all in the handler)
and the event to the end of the frame that paints it (a task posted from a ``requestAnimationFrame`` callback). The
grid-only baseline is the no-loop page with the plots' draw switched off, measured in the same run; the four are
interleaved within each repeat. Printed: median and p95 ms per input event, and the overlay's own arithmetic
(``loopStall``, timed by wrapping it) per new curve.

Run: ``python benchmarks/bench_stall_overlay.py [--repeat 3] [--part python|browser|both] [--events 20]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def python_part(args) -> None:
    """Python's frame (LiveLab.prepare) with no loop, DAPO and GRPO (see the module docstring)."""
    from grpo_lab.grid.spec import PLAY_SYNC_MS
    from grpo_lab.state import LabState, PlayState
    from grpo_lab.views import decay
    from grpo_lab.views.live import LiveLab
    from grpo_lab.views.play_budget import INLINE_WORK_S

    settings = [("default (600 prompts, rho 0)", {}),
                ("20,000 prompts, rho 0", {"n_prompts": 20_000}),
                ("20,000 prompts, rho 0.9", {"n_prompts": 20_000, "rho": 0.9})][:2 if args.light else 3]
    loops = [("no loop", {"loop": "none"}), ("DAPO", {"loop": "DAPO"}), ("GRPO", {"loop": "GRPO"})]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores; frame budget: "
          f"inline under {1000 * INLINE_WORK_S:.0f} ms, Play syncs every {PLAY_SYNC_MS} ms")
    print(f"{'setting':<30} {'frames':<22} " + " ".join(f"{name:>10}" for name, _ in loops) + "   overlay")
    for label, values in settings:
        lab = LabState(**values)
        live = LiveLab(lab, PlayState())
        for frames, change in (("Play (21 progresses)", [{"progress": i / 20} for i in range(21)]),
                               ("K 2..16 (new curves)", [{"K": k} for k in range(2, 17)])):
            times = {name: [] for name, _ in loops}
            for _ in range(args.repeat):  # the three interleaved in each repeat: the machine's load shared alike
                for name, loop in loops:
                    lab.param.update(**loop)
                    decay._STALLS.clear()  # every repeat computes its curves anew (the memo is per view)
                    decay._CURVES.clear()
                    t = time.perf_counter()
                    for c in change:
                        lab.param.update(**c)
                        live.prepare(lab.rho > 0)
                    times[name].append((time.perf_counter() - t) / len(change))
            cols = [1000 * statistics.median(times[name]) for name, _ in loops]
            over = max(cols[1:]) - cols[0]
            print(f"{label:<30} {frames:<22} " + " ".join(f"{c:8.1f}ms" for c in cols) +
                  f"   {over:+.1f} ms a frame ({100 * over / cols[0]:+.0f}%)")
        lab.param.update(loop="none")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


#: the page's harness: each input event timed (its handler's work, and to the end of the frame that paints it);
#: loopStall wrapped to time the overlay's own arithmetic; `grid_only` switches the plots' draw off
HARNESS = """async ([steps, gridOnly]) => {
  function find(root, sel) { const el = root.querySelector(sel); if (el) return el;
    for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot, sel); if (f) return f; }
    return null; }
  const plots = find(document, '.gx-view').__grpoPlots, G = window.grpoKernel;
  if (!plots.__draw) plots.__draw = plots.draw;
  plots.draw = gridOnly ? function () {} : plots.__draw;
  if (!G.__loopStall) {
    G.__loopStall = G.loopStall;
    G.loopStall = function () { const t = performance.now(); const r = G.__loopStall.apply(G, arguments);
                                window.__stallMs.push(performance.now() - t); return r; };
  }
  window.__stallMs = [];
  const endOfFrame = () => new Promise((done) => requestAnimationFrame(() => {
    const ch = new MessageChannel(); ch.port1.onmessage = done; ch.port2.postMessage(0); }));
  const out = [];
  for (const [name, value] of steps) {
    const input = find(document, '#gx-' + name);
    await endOfFrame();
    const t0 = performance.now();
    input.value = String(value);
    input.dispatchEvent(new Event('input', {bubbles: true}));
    const t1 = performance.now();
    await endOfFrame();
    out.push([t1 - t0, performance.now() - t0]);
  }
  plots.draw = plots.__draw;
  return {events: out, stall: window.__stallMs};
}"""


def _q(xs) -> tuple[float, float]:
    """(median, p95) of a list of numbers."""
    xs = sorted(xs)
    if not xs:
        return float("nan"), float("nan")
    return statistics.median(xs), (statistics.quantiles(xs, n=20, method="inclusive")[18] if len(xs) > 1 else xs[0])


def browser_part(args) -> None:
    """The frame in Chromium per input event: grid only, with the plots, with each loop's overlay (module docstring)."""
    from playwright.sync_api import sync_playwright

    from grpo_lab.testing.chromium import launch
    from grpo_lab.testing.lab_server import serve, wait_readout

    configs = [("grid only", "", True), ("grid + plots", "", False),
               ("+ DAPO overlay", "&loop=DAPO&gen_batch=512&train_batch=512&cap=2", False),
               ("+ GRPO overlay", "&loop=GRPO&train_batch=16", False)]
    populations = [("600 prompts", 600), ("20,000 prompts", 20_000)][:1 if args.light else 2]
    n = args.events
    kinds = [("progress steps", [("progress", round(0.2 + 0.6 * i / max(1, n - 1), 2)) for i in range(n)]),
             ("K 2..16 (new curves)", [("K", 2 + i % 15) for i in range(n)])]
    print(f"\nIn Chromium (headless, --disable-gpu), ms per input event: the handler's work / to the end of its frame; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with sync_playwright() as pw, serve() as url:
        browser = launch(pw, background_tabs=True)
        for label, n_prompts in populations:
            ctx = browser.new_context(viewport={"width": 1440, "height": 900})
            pages = {}
            for name, query, _ in configs:  # the grid-only run reuses the no-loop page
                if query in pages:
                    continue
                page = ctx.new_page()
                page.goto(f"{url}?n_prompts={n_prompts}&K=4{query}")
                wait_readout(page, timeout=120_000)
                page.wait_for_function("() => { function find(root, sel) { const el = root.querySelector(sel);"
                                       " if (el) return el; for (const n of root.querySelectorAll('*')) if (n.shadowRoot)"
                                       " { const f = find(n.shadowRoot, sel); if (f) return f; } return null; }"
                                       " const v = find(document, '.gx-view'); return !!(v && v.__grpoPlots &&"
                                       " v.__grpoPlots.data); }", timeout=120_000)
                pages[query] = page
            for kind, steps in kinds:
                got = {name: {"handler": [], "frame": [], "stall": []} for name, _, _ in configs}
                for _ in range(args.repeat):  # interleaved: the machine's load shared alike
                    for name, query, grid_only in configs:
                        page = pages[query]
                        page.bring_to_front()
                        r = page.evaluate(HARNESS, [steps, grid_only])
                        got[name]["handler"] += [e[0] for e in r["events"]]
                        got[name]["frame"] += [e[1] for e in r["events"]]
                        got[name]["stall"] += r["stall"]
                        page.wait_for_timeout(600)  # Python hears the last value and settles before the next run
                print(f"{label}, {kind}:")
                for name, _, _ in configs:
                    h, f, st = _q(got[name]["handler"]), _q(got[name]["frame"]), got[name]["stall"]
                    own = f"; loopStall {_q(st)[0]:.2f} / {_q(st)[1]:.2f} ms a new curve ({len(st)})" if st else ""
                    print(f"  {name:<16} handler median {h[0]:6.1f} p95 {h[1]:6.1f} | frame median {f[0]:6.1f} "
                          f"p95 {f[1]:6.1f} ms ({len(got[name]['frame'])} events{own})", flush=True)
            ctx.close()
        browser.close()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--light", action="store_true", help="leave out 20,000 prompts at rho 0.9 in Python, and 20,000 "
                                                         "prompts in Chromium (minutes under load)")
    ap.add_argument("--part", choices=("python", "browser", "both"), default="both")
    ap.add_argument("--events", type=int, default=20, help="input events of each kind per repeat in Chromium")
    args = ap.parse_args()
    if args.part in ("python", "both"):
        python_part(args)
    if args.part in ("browser", "both"):
        browser_part(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
