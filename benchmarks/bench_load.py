"""Load: N visitors open the served lab at once; time to interactive, errors, server CPU and memory.

Starts ``grpo-lab serve`` with its defaults on a free loopback port (127.0.0.1 only), and for each
round (``--visitors 10 30``) has that many visitors arrive together. Each visitor does what a
browser's BokehJS client does, over real HTTP and a real websocket (Bokeh's own protocol classes):

1. GET /app (the server builds the session's document and renders the page);
2. open the websocket with the page's session token, send PULL-DOC-REQ and wait for the document
   (PULL-DOC-REPLY): the page is interactive once it has its document;
3. tell the server the page has rendered (BokehJS's document_ready event);
4. only with ``--scroll`` (and in the second kind of visit alone, below): scroll down to the plots: the
   browser's placeholder reports itself seen (``lab.views.in_view``: a PATCH-DOC setting its ``seen``), and wait
   for the plots (marked ``lab-plots-ready``): the page is complete. A lab without the placeholder (an earlier
   commit) builds its plots after the first render whether or not the visitor scrolls; they are waited for all
   the same (after the control when the visitor does not scroll);
5. move a control: a PATCH-DOC setting the grid's K, as the browser's component sends it, and wait
   for the server's OK;
6. close the websocket.

First, ``--alone`` visits one at a time give the server CPU of one new visit (everything the server does for it
until :data:`QUIET_S` after it closed): to interactive; in all for a visit that opens the lab and moves a control
without scrolling to the plots (steps 1-3, 5, 6); and in all for one that scrolls to them first (1-6).
A round is issue #13's load benchmark: its visitors open the lab, move a control and close (steps 1-3, 5, 6);
``--scroll`` has every one of them scroll to the plots as well, the worst case of a room that all scrolls down
at once. Printed per round: time to interactive (GET start to the document received) p50 / p95 / max,
time to complete (with ``--scroll``: the plots shown; without: the control sent) p50 / max, the control's round trip p50 / max (each visitor moves it as soon as its own page is
complete, so in a round it queues behind the rest of the room's arrivals), errors, the server's CPU per visit (user + system of the
server's processes over the round, divided by the visitors), and its memory (RSS of its processes)
before the round, at its peak and 60 s after the sessions closed (``--settle``); the memory target is read against
the server right after its start, before any visit (a server that warms itself at its start includes that).

``--link QUERY`` (repeatable) also measures the server CPU of opening ``/app?QUERY`` alone up to its document, the
first render of a shared link such as ``replay=sign-vs-dr_grpo`` (a teacher's replay link), after one visit per process.

``--baseline REF`` runs the same rounds against the lab of a git commit (its ``lab/`` and ``sims/``
exported to a temporary folder and put first on the server's PYTHONPATH; ``--ref REF`` measures a commit that way
instead of the working tree), so a figure measured on a
loaded machine stands beside a baseline measured the same way in the same run. Last, each figure is printed
beside its target (:data:`TARGET_INTERACTIVE_S`, :data:`TARGET_CPU_PER_VISIT_S`, :data:`TARGET_MEMORY_GROWTH`).

``--spread S`` has a round's visitors arrive evenly over S seconds instead of at once (issue #34's lecture hall:
``--visitors 100 --spread 10``, target: each interactive within 10 s).

Bounded: at most 100 visitors a round, every wait has a timeout, everything is on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import threading
import time
from pathlib import Path

from grpo_lab.testing.bokeh_visitor import Server, open_document, visit
from grpo_lab.testing.snapshot import snapshot
from grpo_lab.testing.stats import percentile

ROOT = Path(__file__).resolve().parents[1]
MAX_VISITORS = 100
QUIET_S = 1.0  #: a visit alone: its server CPU is read this long after it closed (what the server did after it)
#: issue #13's targets: every visitor of a room interactive within (s), by room size; server CPU of one new visit
#: in all (s); resident memory 60 s after the sessions closed, at most this much above the server's after its start
#: (before any visit)
TARGET_INTERACTIVE_S = {10: 3.0, 30: 6.0, 100: 10.0}  #: 100: issue #34's lecture hall (arriving within 10 s: --spread 10)
TARGET_CPU_PER_VISIT_S = 0.2
TARGET_MEMORY_GROWTH = 0.10


def run_round(server: Server, n: int, settle_s: float, scroll: bool = False, spread_s: float = 0.0) -> dict:
    """n visitors at once (or arriving evenly over ``spread_s`` seconds); memory sampled every 0.1 s until settle_s
    after the last closed."""
    from tornado.httpclient import AsyncHTTPClient

    AsyncHTTPClient.configure(None, max_clients=MAX_VISITORS + 10)
    rss_before, cpu_before = server.rss_mb(), server.cpu_s()
    peak = [rss_before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], server.rss_mb())
            stop.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    async def arrive(i: int):
        await asyncio.sleep(i * spread_s / n)
        return await visit(server.url, 4 + (i % 60), scroll=scroll)

    async def everyone():
        return await asyncio.gather(*[arrive(i) for i in range(n)])

    results = asyncio.run(everyone())
    cpu = server.cpu_s() - cpu_before
    time.sleep(settle_s)
    stop.set()
    sampler.join()
    ok = [r for r in results if "error" not in r]
    tti = [r["interactive"] for r in ok]
    full = [r["complete"] for r in ok]
    ctl = [r["control"] for r in ok]
    return {"visitors": n, "errors": len(results) - len(ok),
            "first_error": next((r["error"] for r in results if "error" in r), ""),
            "tti_p50": percentile(tti, 0.5), "tti_p95": percentile(tti, 0.95), "tti_max": max(tti, default=float("nan")),
            "complete_p50": percentile(full, 0.5), "complete_max": max(full, default=float("nan")),
            "control_p50": percentile(ctl, 0.5), "control_max": max(ctl, default=float("nan")),
            "cpu_per_visit": cpu / n, "rss_before": rss_before, "rss_peak": peak[0], "rss_after": server.rss_mb()}


def one_at_a_time(server: Server, n: int) -> dict:
    """Server CPU of a new visit alone (medians of n each, the two kinds alternating): to interactive; in all
    (until QUIET_S after it closed) for a visit that opens the lab and moves a control, and for one that also
    scrolls to the plots."""
    cpu = {"cpu_first": [], "cpu_visit": [], "cpu_full": []}
    for i in range(2 * n):
        scroll = bool(i % 2)
        before = server.cpu_s()
        r = asyncio.run(visit(server.url, 5 + i, cpu=server.cpu_s, scroll=scroll))
        time.sleep(QUIET_S)
        if "error" not in r:
            if not scroll:
                cpu["cpu_first"].append(r["cpu_interactive"] - before)
            cpu["cpu_full" if scroll else "cpu_visit"].append(server.cpu_s() - before)
    return {k: statistics.median(v) if v else float("nan") for k, v in cpu.items()}


async def open_link(url: str) -> None:
    """Open a page up to its document (:func:`open_document`), then close: a link's first render."""
    sock, *_ = await open_document(url)
    sock.close()


def link_cost(server: Server, query: str, n: int) -> float:
    """Median server CPU of opening ``/app?query`` alone, up to its document (until QUIET_S after it closed)."""
    url = f"{server.url}?{query}"
    for _ in range(4):  # the first in each process: files read, caches filled (not counted)
        asyncio.run(open_link(url))
    cpu = []
    for _ in range(n):
        before = server.cpu_s()
        asyncio.run(open_link(url))
        time.sleep(QUIET_S)
        cpu.append(server.cpu_s() - before)
    return statistics.median(cpu)


def bench(label: str, pythonpath: Path | None, rounds: list[int], settle_s: float, extra: list[str],
          alone: int, scroll: bool = False, links: list[str] = (), spread_s: float = 0.0) -> list[dict]:
    server = Server(pythonpath, extra)
    rss_start = server.rss_mb()  # the server after its start, before any visit: the memory target's baseline
    try:
        asyncio.run(visit(server.url, 8))  # warm up: first imports, static caches (not counted)
        time.sleep(1)
        single = one_at_a_time(server, alone) if alone else dict.fromkeys(("cpu_first", "cpu_visit", "cpu_full"), float("nan"))
        single["links"] = {q: link_cost(server, q, max(alone, 5)) for q in links}
        return [{"label": label, "rss_start": rss_start, **single, **run_round(server, n, settle_s, scroll, spread_s)}
                for n in rounds]
    finally:
        server.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--visitors", type=int, nargs="+", default=[10, 30], help="visitors per round (default 10 30)")
    ap.add_argument("--settle", type=float, default=60.0, help="seconds after the sessions close to read memory")
    ap.add_argument("--baseline", default=None, metavar="REF", help="also measure the lab of this git commit")
    ap.add_argument("--ref", default=None, metavar="REF", help=(
        "measure the lab of this git commit instead of the working tree (other people's uncommitted work left out)"))
    ap.add_argument("--serve-args", default="", help="extra `grpo-lab serve` options (e.g. '--num-procs 1')")
    ap.add_argument("--scroll", action="store_true", help="in the rounds every visitor scrolls to the plots too")
    ap.add_argument("--alone", type=int, default=5, help="visits of each kind measured one at a time first (default 5)")
    ap.add_argument("--link", action="append", default=[], metavar="QUERY", help=(
        "also the server CPU of opening /app?QUERY alone, to its document (e.g. replay=sign-vs-dr_grpo); repeatable"))
    ap.add_argument("--spread", type=float, default=0.0, metavar="S",
                    help="the visitors of a round arrive evenly over S seconds (default 0: all at once); a lecture "
                         "hall: --visitors 100 --spread 10")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args(argv)
    if any(not 1 <= n <= MAX_VISITORS for n in args.visitors):
        ap.error(f"--visitors must be from 1 to {MAX_VISITORS}")
    extra = args.serve_args.split()
    rows = []
    if args.baseline:
        base = snapshot(args.baseline)
        rows += bench(f"baseline {args.baseline}", base, args.visitors, args.settle, [], args.alone, args.scroll, args.link,
                      args.spread)
    if args.ref:
        rows += bench(args.ref, snapshot(args.ref), args.visitors, args.settle, extra, args.alone, args.scroll, args.link,
                      args.spread)
    else:
        rows += bench("this tree", None, args.visitors, args.settle, extra, args.alone, args.scroll, args.link,
                      args.spread)
    print(f"load: visitors arriving together at `grpo-lab serve` {args.serve_args} (defaults otherwise), "
          f"loopback; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; each visitor opens the "
          f"lab, {'scrolls to the plots, ' if args.scroll else ''}moves a control and closes"
          + (f"; a round's visitors arrive evenly over {args.spread:g} s" if args.spread else ""))
    print(f"{'server':<22} {'N':>3} | {'interactive p50':>15} {'p95':>6} {'max':>6} | {'complete p50':>12} {'max':>6} | "
          f"{'control p50':>11} {'max':>6} | {'errors':>6} | {'CPU/visit':>9} | {'RSS before':>10} {'peak':>6} "
          f"{'+' + str(int(args.settle)) + ' s':>6}")
    for r in rows:
        print(f"{r['label']:<22} {r['visitors']:>3} | {r['tti_p50']:>14.2f}s {r['tti_p95']:>5.2f}s {r['tti_max']:>5.2f}s | "
              f"{r['complete_p50']:>11.2f}s {r['complete_max']:>5.2f}s | "
              f"{r['control_p50']:>10.3f}s {r['control_max']:>5.2f}s | {r['errors']:>6} | {r['cpu_per_visit']:>8.3f}s | "
              f"{r['rss_before']:>8.0f}MB {r['rss_peak']:>4.0f}MB {r['rss_after']:>4.0f}MB")
        if r is rows[-1] or rows[rows.index(r) + 1]["label"] != r["label"]:
            print(f"{r['label']:<22} one visit alone, server CPU: {r['cpu_first']:.3f}s to interactive; in all "
                  f"{r['cpu_visit']:.3f}s to open the lab and move a control, {r['cpu_full']:.3f}s scrolling to the "
                  f"plots too (medians of {args.alone})")
        if r["first_error"]:
            print(f"    first error: {r['first_error']}")
    print("against the targets (issue #13); 'control' is a visitor's first round trip, taken as soon as its own page "
          "is complete, while the rest of the room is still arriving:")
    for r in rows:
        growth = r["rss_after"] / r["rss_start"] - 1 if r["rss_start"] else float("nan")
        of_round = r["rss_after"] / r["rss_before"] - 1 if r["rss_before"] else float("nan")
        target = TARGET_INTERACTIVE_S.get(r["visitors"])
        tti = f"interactive max {r['tti_max']:.2f}s" + (f" (target {target:g}s: {'met' if r['tti_max'] <= target and not r['errors'] else 'MISSED'})"
                                                         if target else "")
        print(f"  {r['label']:<22} N={r['visitors']:<3} {tti}; memory +{int(args.settle)} s {growth:+.1%} of the server's start "
              f"({r['rss_after']:.0f} / {r['rss_start']:.0f} MB; target +{TARGET_MEMORY_GROWTH:.0%}: "
              f"{'met' if growth <= TARGET_MEMORY_GROWTH else 'MISSED'}), {of_round:+.1%} of the round's start; "
              f"control p50 {r['control_p50']:.3f}s")
    for label in dict.fromkeys(r["label"] for r in rows):
        r = next(x for x in rows if x["label"] == label)
        room = max(x["cpu_per_visit"] for x in rows if x["label"] == label)
        kinds = [("alone", r["cpu_visit"])] + ([] if args.scroll else [("in a room, the largest of the rounds", room)])
        for what, cpu in kinds:
            print(f"  {label:<22} server CPU of a new visit (open the lab, move a control), {what}: {cpu:.3f}s "
                  f"(target {TARGET_CPU_PER_VISIT_S:g}s: {'met' if cpu <= TARGET_CPU_PER_VISIT_S else 'MISSED'})")
        print(f"  {label:<22} of which to interactive {r['cpu_first']:.3f}s; a visit that also scrolls to the plots "
              f"(built only then, out of the first render) {r['cpu_full']:.3f}s in all")
        for query, cpu in r["links"].items():
            print(f"  {label:<22} opening /app?{query} alone, to its document: {cpu:.3f}s of server CPU")
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
