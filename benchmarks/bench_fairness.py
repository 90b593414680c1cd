"""Two visitors on one lab server: does one visitor's heavy work slow the other's page?

Two figures, each beside its idle baseline measured in the same run (headless Chromium, the lab
served as ``grpo-lab serve`` serves it, ``python -m grpo_lab.server``):

* **play**: visitor B's round trip (B at ``?rho=0.3``, where the server paints the grid: a press of
  the progress slider goes to Python and the readout changes when the evaluated view comes back;
  timed from the key press to the new readout, in Python) while the server is idle, then while
  visitor A plays training progress at the heaviest settings (``?n_prompts=20000&K=64&rho=0.9``
  + Play), then after A's tab is closed mid-play. The goal: B's median while A plays at most twice
  its idle median, and back to idle once A has left.
* **upload**: how long visitor B's page takes to load (goto to the first readout) while idle, then
  while visitor A's upload at the server's budget (about 60 MB of JSONL in a zip) is being read.
* **components** (:func:`bench_components`, issue #25): the server's memory (RSS of its processes) and a
  visitor's control round trip before and after one client asks Panel's ``/components/`` route for modules
  the lab does not use (``torch``, ``this``, ``scipy.io``, ``..``); the goal: memory unchanged (+0 MB).
* **flood** (:func:`bench_flood`, issue #25): 200 sessions opened at once by one client (GET and websocket,
  as BokehJS does: ``grpo_lab.testing.bokeh_visitor.open_document``) and a newcomer from another address (127.0.0.2) arriving 2 s
  later: its time to interactive against the same visit on the idle server in the same run; the goal: at most 3x.

Three attacks of issue 25 (each a function of its own, printed as a line ``ratio <name>: ...``):

* **play8**: eight tabs of one visitor (one browser context, one visitor cookie) at the heavy settings,
  playing with the plots in view; another visitor's round trip (B, as in *play*) p90 against its idle p90
  in the same run (target <= 2x).
* **upload-memory**: the server's resident memory (every process of it, readers included: psutil) at
  start, after four visitors' uploads at the limit were read, and 60 s after those sessions closed
  (target: within 15% of the start).
* **upload-queue**: how long a 0.3 MB upload takes while four uploads at the limit are read, against the
  same upload on an idle server (target <= 5 s).
* **upload-stress** (issue #35, only when asked: ``--only upload-stress --rounds 20``): rounds of four uploads at the
  limit, about half of the tabs closed at random moments: no upload stuck, no reader left, memory 60 s later.
* **wsflood** (issue #35): 100 and 200 sessions opened at once from one address as Bokeh's own client opens them
  (websockets alone, the documents built and pulled); a newcomer from 127.0.0.2 2 s in and while they are held,
  against idle (target <= 3x).

The visitor cookie (``grpo_lab_visitor``) is set on each browser context by the benchmark, as the lab's
pages set it, so the attacks measure the same whether or not the server in this tree sets it.

Timings on a shared machine move with its load: compare figures within one run only.
Usage: python benchmarks/bench_fairness.py [--presses 15]
[--only play|upload|components|flood|wsflood|play8|upload-memory|upload-queue|upload-stress] [--rounds 20]
[--baseline REF] [-- extra server flags]. ``--baseline REF`` (wsflood, play8, upload-memory, upload-stress) first
measures the server of another commit (``grpo_lab.testing.snapshot.snapshot(REF)``, on ``PYTHONPATH``), in the same
run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


from grpo_lab.testing.chromium import launch
from grpo_lab.testing.lab_server import READ_CLASS, TEXTS_OF_CLASS, free_port, serve, show_plots, wait_readout
from grpo_lab.testing.stats import p90
from grpo_lab.testing.visitors import open_tabs, visitor
HEAVY = "?n_prompts=20000&K=64&rho=0.9"
LIGHT = "?rho=0.3"


def round_trips(page, n: int) -> list[float]:
    """Seconds from an ArrowRight on the progress slider to the server-painted readout changing, n times."""
    handle = page.locator("#gx-progress")
    out = []
    for i in range(n):
        before = page.evaluate(READ_CLASS, "readout-useful")
        handle.focus()
        t0 = time.perf_counter()
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function(f"({READ_CLASS})('readout-useful') !== {before!r}", timeout=120_000)
        out.append(time.perf_counter() - t0)
        page.wait_for_timeout(150)
    return out


def median_ms(xs: list[float]) -> str:
    return f"median {1000 * statistics.median(xs):7.0f} ms, max {1000 * max(xs):7.0f} ms ({len(xs)} presses)"


def bench_play(browser, url: str, presses: int) -> None:
    b_ctx, a_ctx = browser.new_context(), browser.new_context()
    b = b_ctx.new_page()
    b.goto(url + LIGHT)
    wait_readout(b)
    b.wait_for_timeout(1500)
    idle = round_trips(b, presses)
    a = a_ctx.new_page()
    a.goto(url + HEAVY, timeout=120_000)
    wait_readout(a, timeout=120_000)
    a.wait_for_timeout(3000)  # the heavy page's plots are built after load
    a.get_by_role("button", name="\u25b6 Play").click()
    a.wait_for_timeout(2000)
    start = a.evaluate(READ_CLASS, "readout-useful")
    playing = round_trips(b, presses)
    now = a.evaluate(READ_CLASS, "readout-useful")
    print(f"play   A's useful share moved from {start} to {now} while B measured (A still playing: "
          f"{a.get_by_role('button', name=chr(0x275a) * 2 + ' Pause').count() == 1})")
    a_ctx.close()  # A leaves mid-play
    b.wait_for_timeout(5000)
    after = round_trips(b, presses)
    b_ctx.close()
    print(f"play   B idle:                     {median_ms(idle)}")
    print(f"play   B while A plays (heavy):    {median_ms(playing)}   ratio of medians "
          f"{statistics.median(playing) / statistics.median(idle):.2f}")
    print(f"play   B 5 s after A's tab closed: {median_ms(after)}")


def bench_upload(browser, url: str) -> None:
    from grpo_lab.testing.upload import STATUS, budget_sized_zip, open_replay

    from grpo_lab.replay.upload import UPLOAD_LIMITS

    def load_time() -> float:
        ctx = browser.new_context()
        page = ctx.new_page()
        t0 = time.perf_counter()
        page.goto(url)
        wait_readout(page)
        dt = time.perf_counter() - t0
        ctx.close()
        return dt

    idle = [load_time() for _ in range(3)]
    data, n = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))
    a_ctx = browser.new_context()
    a = a_ctx.new_page()
    upload = open_replay(a, url)
    upload.set_input_files(files=[{"name": "big.zip", "mimeType": "application/zip", "buffer": data}])
    a.wait_for_function(f"({STATUS})().startsWith('Reading big.zip')", timeout=60_000)
    a.wait_for_timeout(3000)
    busy = []
    while a.evaluate(STATUS).startswith("Reading") and len(busy) < 3:
        busy.append(load_time())
    a_ctx.close()
    print(f"upload B page load idle:              median {statistics.median(idle):.2f} s ({len(idle)} loads)")
    print(f"upload B page load during A's upload: median {statistics.median(busy):.2f} s, max {max(busy):.2f} s "
          f"({len(busy)} loads; {n:,} lines, {len(data) / 2**20:.1f} MB zip)")


#: what a hostile client names in /components/ (the module imported by Panel's handler before the fix)
HOSTILE_COMPONENTS = ["torch/Tensor/__css__/a.css", "this/x/__css__/a.css", "scipy.io/x/__css__/a.css",
                      "../x/__css__/a.css", "antigravity/x/__css__/a.css"]


def _control_round_trips(url: str, n: int = 5) -> list[float]:
    """A visitor's control round trip (``grpo_lab.testing.bokeh_visitor.visit``: a K change sent, the server's OK back), n visits."""
    import asyncio

    from grpo_lab.testing.bokeh_visitor import visit

    out = []
    for i in range(n):
        r = asyncio.run(visit(url, 4 + 4 * (i % 8), scroll=False))
        if "error" in r:
            raise RuntimeError(r["error"])
        out.append(r["control"])
    return out


def bench_components(extra: list[str]) -> None:
    """Server RSS and a visitor's control round trip before and after requests for modules the lab does not use."""
    import http.client

    from grpo_lab.testing.bokeh_visitor import Server

    server = Server(extra=extra)
    try:
        _control_round_trips(server.url, 2)  # warm: first visits in each process
        time.sleep(2)
        ctl0 = _control_round_trips(server.url)
        time.sleep(2)
        rss0 = server.rss_mb()  # after the visits: the requests below are all that happens between the two
        codes = []
        for path in HOSTILE_COMPONENTS:
            for _ in range(4):  # reach both processes
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
                conn.request("GET", "/components/" + path)
                codes.append(conn.getresponse().status)
                conn.close()
        time.sleep(2)
        rss1 = server.rss_mb()
        ctl1 = _control_round_trips(server.url)
    finally:
        server.stop()
    print(f"components statuses: {sorted(set(codes))} for {', '.join(p.split('/')[0] for p in HOSTILE_COMPONENTS)}")
    print(f"components server RSS before {rss0:.0f} MB, after {rss1:.0f} MB (+{rss1 - rss0:.0f} MB)")
    print(f"components control round trip median before {1000 * statistics.median(ctl0):.0f} ms, "
          f"after {1000 * statistics.median(ctl1):.0f} ms")
    print(f"ratio components: server RSS after / before = {rss1 / rss0:.2f} (+{rss1 - rss0:.0f} MB; target 1.00, "
          f"+0 MB); control round trip after / before = {statistics.median(ctl1) / statistics.median(ctl0):.2f}")


FLOOD = 200  #: sessions one client opens at once
NEWCOMER_AFTER_S = 2.0  #: when the newcomer arrives after the flood started
NEWCOMER = "127.0.0.2"  #: the newcomer's address (another client; the flood comes from 127.0.0.1)


def _visitor_process(url: str, at: float, n: int, out) -> None:
    """In a process of its own (the flood's client parses the documents it gets, which must not slow this
    visitor's own measurement): at ``at`` (time.time()), open the lab ``n`` times from :data:`NEWCOMER`, one after
    the other; put the times to interactive (s) or the error on ``out``."""
    import asyncio

    from grpo_lab.testing.bokeh_visitor import load_client, open_document

    load_client()  # before the clock starts: the first visit timed the client's own imports (1-2 s in a flood)

    async def visits():
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            sock, *_ = await open_document(url, NEWCOMER)
            times.append(time.perf_counter() - t0)
            sock.close()
        return times

    time.sleep(max(0.0, at - time.time()))
    try:
        out.put(asyncio.run(visits()))
    except Exception as exc:  # reported by the parent
        out.put(f"{type(exc).__name__}: {exc}")


def _visitor(url: str, at: float, n: int):
    """Start :func:`_visitor_process` (spawned: a fresh interpreter); returns a function waiting for its times."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_visitor_process, args=(url, at, n, out), daemon=True)
    proc.start()

    def result() -> list[float] | str:
        """The times, or the error that ended the visits (a step longer than grpo_lab.testing.bokeh_visitor.STEP_TIMEOUT_S)."""
        got = out.get(timeout=600)
        proc.join(30)
        return got

    return result


def bench_flood(extra: list[str]) -> None:
    """A newcomer's time to interactive while one client opens 200 sessions at once, against the idle server."""
    import asyncio

    from grpo_lab.testing.bokeh_visitor import Server, open_document
    from tornado.httpclient import AsyncHTTPClient

    async def opened(url: str):
        sock, *_ = await open_document(url)
        return sock

    async def flood(url: str, at: float):
        AsyncHTTPClient.configure(None, max_clients=FLOOD + 20)  # no queue in the client itself
        await asyncio.sleep(max(0.0, at - time.time()))
        done = await asyncio.gather(*[opened(url) for _ in range(FLOOD)], return_exceptions=True)
        socks = [d for d in done if not isinstance(d, BaseException)]
        for sock in socks:
            sock.close()
        return len(socks), [d for d in done if isinstance(d, BaseException)]

    server = Server(extra=extra)
    try:
        idle = _visitor(server.url, time.time(), 3)()  # the same visitor, the server idle
        if isinstance(idle, str):
            raise RuntimeError(f"the idle visits failed: {idle}")
        time.sleep(2)
        start = time.time() + 10  # the newcomer's process is started (and imports) meanwhile
        newcomer = _visitor(server.url, start + NEWCOMER_AFTER_S, 1)
        n_open, errors = asyncio.run(flood(server.url, start))
        newcomer = newcomer()
    finally:
        server.stop()
    kinds = sorted({f"{type(e).__name__}: {str(e)[:60]}" for e in errors})
    print(f"flood  {FLOOD} sessions at once from one client: {n_open} opened, {len(errors)} refused or failed "
          f"({'; '.join(kinds[:3])})")
    if isinstance(newcomer, str):
        from grpo_lab.testing.bokeh_visitor import STEP_TIMEOUT_S

        print(f"flood  newcomer (another address) {NEWCOMER_AFTER_S:.0f} s later: not interactive ({newcomer}; "
              f"a step's limit is {STEP_TIMEOUT_S} s); idle median {statistics.median(idle):.2f} s")
        print(f"ratio flood: newcomer time to interactive / idle = inf (not interactive; target <= 3)")
        return
    print(f"flood  newcomer (another address) {NEWCOMER_AFTER_S:.0f} s later: time to interactive {newcomer[0]:.2f} s; "
          f"idle median {statistics.median(idle):.2f} s ({len(idle)} visits)")
    print(f"ratio flood: newcomer time to interactive / idle = {newcomer[0] / statistics.median(idle):.1f} "
          "(target <= 3)")
WS_FLOODS = (100, 200)  #: sessions one client opens at once as Bokeh's own client does (no page request)


def bench_wsflood(extra: list[str], sizes=WS_FLOODS, pythonpath=None, label: str = "this tree") -> None:
    """A newcomer's time to interactive (from :data:`NEWCOMER`) 2 s into ``n`` sessions opened at once from one
    address as ``bokeh.client.pull_session`` opens them (a websocket with a session id of the client's own, no page
    request: the documents built and pulled; ``grpo_lab.testing.hostile_client.pull_sessions``), and again while
    they are held open, against the same visit on the idle server in the same run."""
    import asyncio

    from grpo_lab.testing.bokeh_visitor import Server
    from grpo_lab.testing.hostile_client import pull_sessions
    from tornado.httpclient import AsyncHTTPClient

    async def flood(url: str, at: float, n: int, hold_until_done):
        AsyncHTTPClient.configure(None, max_clients=n + 20)
        await asyncio.sleep(max(0.0, at - time.time()))
        socks, errors = await pull_sessions(url, n, timeout_s=300)
        held = hold_until_done()  # the newcomer visits again while they are open
        for sock in socks:
            sock.close()
        return len(socks), errors, held

    server = Server(pythonpath, extra=extra)
    try:
        idle = _visitor(server.url, time.time(), 3)()
        if isinstance(idle, str):
            raise RuntimeError(f"the idle visits failed: {idle}")
        base = statistics.median(idle)
        print(f"wsflood [{label}] load average {os.getloadavg()[0]:.1f} before")
        for n in sizes:
            time.sleep(20)  # the previous flood's sessions destroyed (unused 15 s, checked every 5 s)
            start = time.time() + 10
            during = _visitor(server.url, start + NEWCOMER_AFTER_S, 1)
            n_open, errors, held = asyncio.run(flood(server.url, start, n,
                                                     lambda: _visitor(server.url, time.time(), 3)()))
            during = during()
            kinds = sorted({f"{type(e).__name__}: {str(e)[:60]}" for e in errors})
            print(f"wsflood [{label}] {n} sessions from one client as Bokeh's client opens them: {n_open} built and pulled, "
                  f"{len(errors)} refused or failed ({'; '.join(kinds[:3])})")
            print(f"wsflood [{label}] load average {os.getloadavg()[0]:.1f} after {n}")
            for when, got in (("2 s into the flood", during), ("while they are held open", held)):
                if isinstance(got, str):
                    print(f"ratio wsflood [{label}] {n} {when}: inf (not interactive: {got}; target <= 3)")
                    continue
                t = statistics.median(got)
                print(f"ratio wsflood [{label}] {n} {when}: newcomer (another address) time to interactive {t:.2f} s "
                      f"(visits {', '.join(f'{x:.2f}' for x in got)}) / idle {base:.2f} s = {t / base:.1f} "
                      "(target <= 3)")
    finally:
        server.stop()


def _protocol_trips_process(url: str, n: int, out) -> None:
    """In a process of its own: visitor C opens ``url`` by protocol (``grpo_lab.testing.bokeh_visitor``) and moves the
    grid's progress ``n`` times, each timed from the PATCH-DOC sent to the server's PATCH-DOC carrying the grid's new
    ``view`` (at rho > 0 the server paints it); puts the seconds (or the error) on ``out``."""
    import asyncio
    import json as _json

    from grpo_lab.testing.bokeh_visitor import _find_grid, _patch, load_client, open_document

    load_client()

    async def trips():
        sock, conn, read, reply = await open_document(url)
        grid = _find_grid(reply.content["doc"])
        await _patch(conn, [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {  # the page rendered
            "type": "event", "name": "document_ready", "values": {"type": "map", "entries": []}}}])
        await asyncio.sleep(1.0)
        times = []
        for i in range(n):
            t0 = time.perf_counter()
            await _patch(conn, [{"kind": "ModelChanged", "model": {"id": grid}, "attr": "progress",
                                 "new": round(0.3 + 0.01 * (i % 20), 2)}])
            while '"view"' not in _json.dumps((await read("PATCH-DOC")).content):
                pass
            times.append(time.perf_counter() - t0)
            await asyncio.sleep(0.15)
        sock.close()
        return times

    try:
        out.put(asyncio.run(trips()))
    except Exception as exc:  # reported by the parent
        out.put(f"{type(exc).__name__}: {exc}")


def protocol_round_trips(url: str, n: int) -> list[float]:
    """:func:`_protocol_trips_process` in a spawned process; its round trips (s)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_protocol_trips_process, args=(url, n, out), daemon=True)
    proc.start()
    got = out.get(timeout=600)
    proc.join(30)
    if isinstance(got, str):
        raise RuntimeError(f"the protocol visitor failed: {got}")
    return got


def bench_play8(browser, url: str, presses: int) -> None:
    """Eight heavy tabs of visitor A playing with plots in view; B's round trip p90 against its idle p90, B in
    Chromium (a key press to the readout changed) and C by protocol (a progress patch to the server's view back)."""
    b_ctx = visitor(browser, url, "bench-b")
    b = b_ctx.new_page()
    b.goto(url + LIGHT)
    wait_readout(b)
    b.wait_for_timeout(1500)
    idle = round_trips(b, presses)
    idle_c = protocol_round_trips(url + LIGHT, 2 * presses)
    load_idle = os.getloadavg()[0]
    a_ctx = visitor(browser, url, "bench-a")
    tabs = open_tabs(a_ctx, url + HEAVY, 8)
    for a in tabs:
        show_plots(a, timeout=180_000)
        a.locator(".lab-plots").first.scroll_into_view_if_needed()  # the plots in view while playing
        a.get_by_role("button", name="\u25b6 Play").click()
    tabs[0].wait_for_timeout(3000)
    load_play = os.getloadavg()[0]
    playing = round_trips(b, presses)
    playing_c = protocol_round_trips(url + LIGHT, 2 * presses)
    busy = sum(any(a.evaluate(TEXTS_OF_CLASS, "lab-busy")) for a in tabs)
    a_ctx.close()
    b_ctx.close()
    print(f"play8  load average {load_idle:.1f} before, {load_play:.1f} while A played")
    print(f"play8  B idle (Chromium):          {median_ms(idle)}, p90 {1000 * p90(idle):.0f} ms")
    print(f"play8  B while A's 8 tabs play:    {median_ms(playing)}, p90 {1000 * p90(playing):.0f} ms "
          f"({busy} of A's tabs showed the busy notice)")
    print(f"play8  C idle (protocol):          {median_ms(idle_c)}, p90 {1000 * p90(idle_c):.0f} ms")
    print(f"play8  C while A's 8 tabs play:    {median_ms(playing_c)}, p90 {1000 * p90(playing_c):.0f} ms")
    print(f"ratio play8: B's round trip p90 {p90(playing):.2f} s while 8 heavy tabs play / idle p90 {p90(idle):.2f} s "
          f"= {p90(playing) / p90(idle):.2f} (target <= 2)")
    print(f"ratio play8 protocol: C's round trip p90 {p90(playing_c):.2f} s / idle p90 {p90(idle_c):.2f} s "
          f"= {p90(playing_c) / p90(idle_c):.2f} (target <= 2)")


def server_rss(port: int) -> tuple[float, int]:
    """(MB resident, processes) of the server on ``port``: its first process and every descendant."""
    import psutil

    roots = [p for p in psutil.process_iter(["cmdline"])
             if str(port) in (p.info["cmdline"] or []) and "grpo_lab.server" in (p.info["cmdline"] or [])]
    procs = {p.pid: p for r in roots for p in [r, *r.children(recursive=True)]}
    total = 0
    for p in procs.values():
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20, len(procs)


def upload_at_limit(browser, url: str, name: str, data: bytes):
    """Visitor ``name`` opens the replay tab and uploads ``data`` as big.zip; (context, page)."""
    from grpo_lab.testing.upload import open_replay

    ctx = visitor(browser, url, name)
    page = ctx.new_page()
    upload = open_replay(page, url)
    upload.set_input_files(files=[{"name": "big.zip", "mimeType": "application/zip", "buffer": data}])
    return ctx, page


def wait_read(page, name: str, timeout: float = 900_000) -> None:
    from grpo_lab.testing.upload import STATUS

    page.wait_for_function(f"({STATUS})().startsWith('Read {name} in') || "
                           f"({TEXTS_OF_CLASS})('replay-error').some(t => t.length > 0)", timeout=timeout)


def bench_upload_memory(browser, url: str, port: int) -> None:
    """Server RSS at start, after four uploads at the limit, and 60 s after their sessions closed."""
    from grpo_lab.testing.upload import budget_sized_zip

    from grpo_lab.replay.upload import UPLOAD_LIMITS

    data, n = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))
    start, _ = server_rss(port)
    peak = start
    visits = [upload_at_limit(browser, url, f"bench-m{i}", data) for i in range(4)]
    for _, page in visits:
        wait_read(page, "big.zip")
    after, n_procs = server_rss(port)
    for ctx, _ in visits:
        ctx.close()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60:
        time.sleep(5)
        peak = max(peak, server_rss(port)[0])
    later, n_later = server_rss(port)
    print(f"upload-memory server RSS: start {start:.0f} MB; after 4 uploads at the limit ({n:,} lines each) "
          f"{after:.0f} MB ({n_procs} processes); 60 s after they closed {later:.0f} MB ({n_later} processes)")
    print(f"ratio upload-memory: server RSS 60 s after the upload sessions closed {later:.0f} MB / at start "
          f"{start:.0f} MB = {later / start:.2f} (target <= 1.15)")


def bench_upload_queue(browser, url: str) -> None:
    """A 0.3 MB upload's time while four uploads at the limit are read, against the same upload on an idle server."""
    from grpo_lab.testing.upload import STATUS, budget_sized_zip, open_replay

    from grpo_lab.replay.upload import UPLOAD_LIMITS

    line = '{"step": %d, "prompt_id": "p%04d", "rewards": [1, 0, 1, 1, 0, 0, 1, %d]}\n'
    small = "".join(line % (i // 500, i % 500, i % 2) for i in range(4500)).encode()

    def small_upload(name: str) -> float:
        ctx = visitor(browser, url, name)
        page = ctx.new_page()
        upload = open_replay(page, url)
        page.wait_for_timeout(500)
        t0 = time.perf_counter()
        upload.set_input_files(files=[{"name": "small.jsonl", "mimeType": "application/json", "buffer": small}])
        wait_read(page, "small.jsonl")
        dt = time.perf_counter() - t0
        said.append(page.evaluate(STATUS) or " ".join(page.evaluate(TEXTS_OF_CLASS, "replay-error")))
        ctx.close()
        return dt

    said: list[str] = []
    idle = [small_upload(f"bench-s{i}") for i in range(3)]
    data, _ = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))
    visits = [upload_at_limit(browser, url, f"bench-q{i}", data) for i in range(4)]
    for _, page in visits:
        page.wait_for_function(f"({STATUS})().startsWith('Reading big.zip')", timeout=60_000)
    visits[0][1].wait_for_timeout(2000)
    busy = small_upload("bench-s-busy")
    still = sum(page.evaluate(STATUS).startswith("Reading") for _, page in visits)
    for ctx, _ in visits:
        ctx.close()
    print(f"upload-queue a {len(small) / 1e6:.2f} MB upload: idle {statistics.median(idle):.2f} s; while four uploads "
          f"at the limit are read {busy:.2f} s ({still} of the four still reading when it finished); the page said: "
          f"{' | '.join(said)}")
    print(f"ratio upload-queue: {busy:.2f} s during four large reads / {statistics.median(idle):.2f} s idle = "
          f"{busy / statistics.median(idle):.2f} (target: {busy:.2f} s <= 5 s)")


def bench_upload_stress(browser, url: str, port: int, rounds: int) -> None:
    """``rounds`` rounds of four visitors uploading a zip at the limit at once, about half of the tabs closed at
    random moments (``grpo_lab.testing.upload_stress``): no upload stuck without a reader, no reader left once the
    spares retired, and the server's memory 60 s after the last round against its start."""
    import collections
    import random

    import psutil

    from grpo_lab.testing.upload import budget_sized_zip
    from grpo_lab.testing.upload_stress import readers, stress_round

    from grpo_lab.replay.upload import UPLOAD_LIMITS

    data, n = budget_sized_zip(UPLOAD_LIMITS.decompressed_bytes - (1 << 20))
    root = [p.pid for p in psutil.process_iter(["cmdline"])
            if str(port) in (p.info["cmdline"] or []) and "grpo_lab.server" in (p.info["cmdline"] or [])]
    start, _ = server_rss(port)
    rng, counts, t0 = random.Random(35), collections.Counter(), time.monotonic()
    for r in range(rounds):
        got = stress_round(browser, url, data, 4, rng, close_within_s=20.0, stuck_s=300, tag=str(r))
        counts.update(o.split(":")[0] for o in got)
        print(f"upload-stress round {r + 1}/{rounds}: {', '.join(got)} (load average {os.getloadavg()[0]:.1f})",
              flush=True)
    ended = time.monotonic()
    took = ended - t0
    # 60 s after the last round, whatever the readers do meanwhile (this waited only for the readers once, and so
    # measured about 20 s after: before the last round's sessions were destroyed and released)
    left, gone, path = readers(root), None, []
    while time.monotonic() < ended + 60:
        time.sleep(2)
        left = readers(root)
        if not left and gone is None:
            gone = time.monotonic() - ended
        if not path or time.monotonic() - ended >= 10 * len(path):
            path.append(f"{time.monotonic() - ended:.0f} s {server_rss(port)[0]:.0f} MB")
    later, n_procs = server_rss(port)
    print(f"upload-stress server RSS after the last round: {'; '.join(path)}; readers gone after "
          f"{'-' if gone is None else f'{gone:.0f} s'}")
    print(f"upload-stress {rounds} rounds of four uploads at the limit ({n:,} lines, {len(data) / 2**20:.1f} MB zip) "
          f"in {took:.0f} s: {dict(counts)}; reading processes left {len(left)}")
    print(f"ratio upload-stress: stuck {counts.get('stuck', 0)} (target 0); readers left {len(left)} (target 0); "
          f"server RSS 60 s after {later:.0f} MB / at start {start:.0f} MB = {later / start:.2f} (target <= 1.15; "
          f"{n_procs} processes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--presses", type=int, default=15)
    parser.add_argument("--only", choices=("play", "upload", "components", "flood", "wsflood", "play8",
                                           "upload-memory", "upload-queue", "upload-stress"))
    parser.add_argument("--rounds", type=int, default=20, help="upload-stress's rounds of four at-limit uploads")
    parser.add_argument("--sessions", type=int, nargs="+", default=list(WS_FLOODS), help="wsflood's sizes")
    parser.add_argument("--baseline", metavar="REF",
                        help="wsflood, play8, upload-memory, upload-stress: measure the server of this git commit first")
    parser.add_argument("server_flags", nargs="*", help="extra flags for the server (after --)")
    args = parser.parse_args()
    if args.only in (None, "components"):
        bench_components(args.server_flags)
    if args.only in (None, "flood"):
        bench_flood(args.server_flags)
    if args.only in (None, "wsflood"):
        if args.baseline:
            from grpo_lab.testing.snapshot import snapshot

            bench_wsflood(args.server_flags, args.sessions, snapshot(args.baseline), f"baseline {args.baseline}")
        bench_wsflood(args.server_flags, args.sessions)
    if args.only in ("components", "flood", "wsflood"):
        return 0
    from playwright.sync_api import sync_playwright

    from grpo_lab.commands.serve import serve_command

    servers = [("this tree", {})]
    if args.baseline and args.only in ("play8", "upload-memory", "upload-stress"):
        from grpo_lab.testing.snapshot import snapshot

        servers.insert(0, (f"baseline {args.baseline}", {"PYTHONPATH": str(snapshot(args.baseline))}))
    for label, env in servers:
        port = free_port()
        print(f"[{label}]")
        with serve(cmd=[*serve_command(port=port), *args.server_flags], port=port, env=env) as url, \
                sync_playwright() as pw:
            browser = launch(pw, background_tabs=True)
            if args.only in (None, "play"):
                bench_play(browser, url, args.presses)
            if args.only in (None, "upload"):
                bench_upload(browser, url)
            if args.only in (None, "play8"):
                bench_play8(browser, url, args.presses)
            if args.only in (None, "upload-memory"):
                bench_upload_memory(browser, url, port)
            if args.only in (None, "upload-queue"):
                bench_upload_queue(browser, url)
            if args.only == "upload-stress":
                bench_upload_stress(browser, url, port, args.rounds)
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
