"""A class behind one address, and floods of slow connections (issue #41), each beside a baseline of the same run.

* **class**: N visitors (default 150) arrive from one address (127.0.0.1) evenly over S seconds (default 10), each
  as BokehJS does (GET the page, its websocket carrying the cookies the page set, the document pulled:
  :func:`grpo_lab.testing.bokeh_visitor.open_document`), and keep their tab open to the end. With the class link
  (``grpo-lab serve --class N``, the link read from the server's first lines) against the same arrivals on the plain
  URL (today's per-address limits): admitted, refused, time to interactive (from each one's arrival) p50 / p95 /
  max, the server's CPU per visit. Target: every one interactive within 10 s.
* **floods**: the server run as ``grpo-lab serve`` (two processes) with the common open-file limit of 1,024, soft and
  hard (``--open-files``); a newcomer from another address (127.0.0.2) opens the lab (page and document) three
  times on the idle server, then three times during each flood, from 127.0.0.1: ``--half-open`` connections that
  send nothing (2,200); ``--slow`` connections (200) for 25 s each, sending headers that never end (1 KB every
  0.5 s), a body of 900 KB at that pace, headers of 2.9 MB never finished (64 KB every 0.2 s), a 2.9 MB body at that
  pace. Printed: the newcomer's median against idle, the connections still open (held by the server after 3 s;
  still open after 25 s), the server's memory (RSS of its processes) at its peak, 5 s and 20 s after the flood closed,
  and the log lines and tracebacks it wrote. Target: the newcomer within 3x of idle. ``--baseline REF`` runs the floods
  against the server of a git commit first (``grpo_lab.testing.snapshot``), in the same run.

* **hostile**: the class arrives with its link (``grpo-lab serve --class N``, two processes) as in *class*, once on a
  quiet server (the baseline) and once while a hostile client on another address (127.0.0.2, without the key) floods
  it, from a second before the first arrival to 10 s after the last: ``--hostile-half-open`` connections that send
  nothing (600) and ``--hostile-pagers`` clients (8) asking ``GET /app`` one after the other as fast as they are
  answered. A newcomer on a third address (127.0.0.3, in a process of its own) opens the lab three times on the
  quiet server (idle), then at 2, 5 and 8 s into the arrival. Printed for each: the class admitted, its median and
  max time to interactive, the newcomer's median and max against idle (target within 3x), what the flood sent and
  got, and the load average. Targets: all N admitted, every one interactive within 10 s, the newcomer within 3x.

Timings move with the machine's load (printed with them): compare within one run only.
Usage: python benchmarks/bench_class_floods.py [--only class|floods|hostile] [--visitors 150] [--spread 10]
[--half-open 2200] [--slow 200] [--open-files 1024] [--baseline REF] [--hostile-half-open 600]
[--hostile-pagers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import statistics
import time
from urllib.parse import urlsplit

import psutil

from grpo_lab.testing.bokeh_visitor import Server, load_client, open_document
from grpo_lab.testing.logged_server import logged_server
from grpo_lab.testing.stats import percentile

TARGET_INTERACTIVE_S = 10.0
TARGET_RATIO = 3.0
HOLD_S = 25.0  #: how long the slow floods go on (past the server's 20 s deadlines)
NEWCOMER_TIMEOUT_S = 30.0  #: a newcomer with no page by then counts as infinitely slow


def load() -> str:
    return "load %.1f/%.1f" % os.getloadavg()[:2]


# -- the class ------------------------------------------------------------------------------------------------------

async def _arrivals(url: str, n: int, spread_s: float, at: float | None = None) -> list[dict]:
    """``n`` visitors opening ``url`` evenly over ``spread_s`` from ``at`` (time.time(); now if None), each keeping
    its tab open until all have come; each one's time to interactive, or its error."""
    from tornado.httpclient import AsyncHTTPClient

    AsyncHTTPClient.configure(None, max_clients=n + 10)
    socks = []
    await asyncio.sleep(max(0.0, (at or 0.0) - time.time()))

    async def one(i: int) -> dict:
        await asyncio.sleep(i * spread_s / n)
        t0 = time.perf_counter()
        try:
            sock, *_ = await open_document(url, cookies=True)
            socks.append(sock)
            return {"interactive": time.perf_counter() - t0}
        except Exception as exc:  # counted, never raised
            return {"error": f"{type(exc).__name__}: {exc}"[:120]}

    out = await asyncio.gather(*[one(i) for i in range(n)])
    for sock in socks:
        sock.close()
    return out


def class_link(server: Server) -> str:
    """The class link a server started with ``--class N`` printed."""
    server.log.seek(0)
    return re.search(r"class link for \d+ \(until [^)]*\): (\S+)", server.log.read().decode()).group(1)


def interactive_figures(out: list[dict]) -> tuple[list[float], list[str], str]:
    """``(sorted times to interactive, errors, "p50 .., p95 .., max ..")`` of arrivals."""
    times = sorted(o["interactive"] for o in out if "interactive" in o)
    fig = (f"p50 {percentile(times, 0.5):.2f} s, p95 {percentile(times, 0.95):.2f} s, max {times[-1]:.2f} s"
           if times else "none")
    return times, [o["error"] for o in out if "error" in o], fig


def bench_class(n: int, spread_s: float) -> None:
    load_client()
    for label, extra in (("plain URL (baseline)", []), (f"class link (--class {n})", ["--class", str(n)])):
        server = Server(extra=extra)
        try:
            url = class_link(server) if extra else server.url
            before, cpu0 = load(), server.cpu_s()
            out = asyncio.run(_arrivals(url, n, spread_s))
            cpu = (server.cpu_s() - cpu0) / n
        finally:
            server.stop()
        times, errors, fig = interactive_figures(out)
        kinds = sorted({re.sub(r"\d+\.\d+", "", e)[:60] for e in errors})
        print(f"class {label}: {len(times)}/{n} interactive ({fig}; target max {TARGET_INTERACTIVE_S:g} s), "
              f"{len(errors)} refused {kinds[:3]}, server CPU {cpu:.3f} s a visit ({before} -> {load()})", flush=True)


# -- a hostile address during the class's arrival ----------------------------------------------------------------------

HOSTILE = "127.0.0.2"  #: the hostile client's address (the class arrives from 127.0.0.1)
THIRD = "127.0.0.3"  #: the newcomer's address
NEWCOMER_AT_S = (2.0, 5.0, 8.0)  #: when the newcomer opens the lab, from the first arrival (s)
FLOOD_BEFORE_S, FLOOD_AFTER_S = 1.0, 10.0  #: the flood starts this long before the first arrival, ends after the last


def _newcomer_process(url: str, source: str, ats: list[float], out) -> None:
    """In a process of its own (the class's client parses 150 documents, which must not slow this visitor's own
    measurement): at each of ``ats`` (time.time(); or as soon as the visit before ends), open the lab from
    ``source``; put the times to interactive (inf for a visit that failed) on ``out``."""
    load_client()  # before the clock starts

    async def visits():
        times = []
        for at in ats:
            await asyncio.sleep(max(0.0, at - time.time()))
            t0 = time.perf_counter()
            try:
                sock, *_ = await asyncio.wait_for(open_document(url, source), NEWCOMER_TIMEOUT_S)
                sock.close()
                times.append(time.perf_counter() - t0)
            except Exception:  # no page within the timeout, or refused
                times.append(float("inf"))
        return times

    out.put(asyncio.run(visits()))


async def _hostile(host: str, port: int, path: str, at: float, until: float, half_open: int, pagers: int) -> dict:
    """From :data:`HOSTILE`, from ``at`` to ``until`` (time.time()): ``half_open`` connections that send nothing, and
    ``pagers`` clients each asking ``GET path`` (no key, no cookie) on a new connection as soon as the last is
    answered. What it sent and got: connections opened and still open at the end, page statuses."""
    await asyncio.sleep(max(0.0, at - time.time()))
    held, statuses = [], {}

    async def hold():
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(HOSTILE, 0))
        except OSError:
            return
        held.append((reader, writer))

    async def pager():
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        while time.time() < until:
            try:
                reader, writer = await asyncio.open_connection(host, port, local_addr=(HOSTILE, 0))
                writer.write(request)
                line = await asyncio.wait_for(reader.readline(), 30)
                await asyncio.wait_for(reader.read(), 30)
                writer.close()
                status = line.split()[1].decode() if len(line.split()) > 1 else "closed"
            except (OSError, asyncio.TimeoutError):
                status = "error"
            statuses[status] = statuses.get(status, 0) + 1

    await asyncio.gather(*[hold() for _ in range(half_open)])
    await asyncio.gather(*[pager() for _ in range(pagers)])
    await asyncio.sleep(0.5)  # the server's last closes read
    still = sum(not reader.at_eof() and not writer.transport.is_closing() for reader, writer in held)
    for _, writer in held:
        writer.close()
    return {"opened": len(held), "still": still, "statuses": statuses}


def _hostile_process(url: str, at: float, until: float, half_open: int, pagers: int, out) -> None:
    parts = urlsplit(url)
    out.put(asyncio.run(_hostile(parts.hostname, parts.port, parts.path, at, until, half_open, pagers)))


def _spawn(target, *args):
    """Run ``target(*args, queue)`` in a spawned process; returns a function waiting for what it put."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, out), daemon=True)
    proc.start()

    def result():
        got = out.get(timeout=900)
        proc.join(30)
        return got

    return result


def bench_hostile(n: int, spread_s: float, half_open: int, pagers: int) -> None:
    load_client()
    for label, flood in (("quiet (baseline)", False), (f"hostile flood from {HOSTILE}", True)):
        server = Server(extra=["--class", str(n)])
        try:
            link = class_link(server)
            idle = _spawn(_newcomer_process, server.url, THIRD, [time.time()] * 4)()[1:]  # the first: warm
            start = time.time() + 8  # the helper processes start (and import) meanwhile
            newcomer = _spawn(_newcomer_process, server.url, THIRD, [start + a for a in NEWCOMER_AT_S])
            hostile = _spawn(_hostile_process, server.url, start - FLOOD_BEFORE_S, start + spread_s + FLOOD_AFTER_S,
                             half_open, pagers) if flood else None
            before, cpu0 = load(), server.cpu_s()
            out = asyncio.run(_arrivals(link, n, spread_s, start))
            during, sent = newcomer(), hostile() if hostile else None
            cpu, after = server.cpu_s() - cpu0, load()
        finally:
            server.stop()
        times, errors, _ = interactive_figures(out)
        fig = f"median {statistics.median(times):.2f} s, max {times[-1]:.2f} s" if times else "none"
        kinds = sorted({re.sub(r"\d+\.\d+", "", e)[:60] for e in errors})
        idle_s, during_s = statistics.median(idle), statistics.median(during)
        flood_said = (f"; the flood: {sent['opened']} half-open connections ({sent['still']} still open at its end), "
                      f"{sum(sent['statuses'].values())} pages asked {dict(sorted(sent['statuses'].items()))}"
                      if sent else "")
        print(f"hostile {label}: class {len(times)}/{n} admitted and interactive ({fig}; target all, max "
              f"{TARGET_INTERACTIVE_S:g} s), {len(errors)} refused {kinds[:3]}; newcomer from {THIRD} median "
              f"{during_s:.2f} s, max {max(during):.2f} s during the arrival against {idle_s:.2f} s idle "
              f"({during_s / idle_s:.1f}x, target {TARGET_RATIO:g}x){flood_said}; server CPU {cpu:.0f} s "
              f"({before} -> {after})", flush=True)


# -- the floods -----------------------------------------------------------------------------------------------------

async def _newcomer(url: str) -> float:
    t0 = time.perf_counter()
    sock, *_ = await open_document(url, source="127.0.0.2")
    took = time.perf_counter() - t0
    sock.close()
    return took


def newcomer_s(url: str, times: int = 3) -> float:
    out = []
    for _ in range(times):
        try:
            out.append(asyncio.run(asyncio.wait_for(_newcomer(url), NEWCOMER_TIMEOUT_S)))
        except Exception:  # no page within the timeout
            out.append(float("inf"))
        time.sleep(0.5)
    return statistics.median(out)


async def _slow(host: str, port: int, n: int, head: bytes, hold_s: float, held: list, chunk: int = 1024,
                every_s: float = 0.5, total: int = 1 << 30) -> None:
    """``n`` connections each sending ``head``, then ``chunk`` bytes every ``every_s`` up to ``total`` bytes (then
    nothing: a request never finished), for ``hold_s`` or until the server closes it; ``held`` gets whether each
    was still open at the end."""
    async def one():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            return
        writer.write(head)
        alive, sent = True, 0
        t_end = time.monotonic() + hold_s
        while time.monotonic() < t_end:
            try:
                if sent < total:
                    writer.write(b"a" * chunk)
                    sent += chunk
                    await writer.drain()
            except (ConnectionError, OSError):
                alive = False
                break
            await asyncio.sleep(every_s)
            if reader.at_eof() or writer.transport.is_closing():  # closed by the server, or reset
                alive = False
                break
        held.append(alive)
        writer.close()

    await asyncio.gather(*[one() for _ in range(n)])


def server_rss_mb(log) -> float:
    total, pids = 0, set(log.pids())
    for pid in list(pids):  # the workers and the process that forked them
        try:
            pids.add(psutil.Process(pid).ppid())
        except psutil.Error:
            pass
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def bench_floods(half_open: int, slow: int, open_files: int, pythonpath: str | None, label: str) -> None:
    import threading

    env = {"PYTHONPATH": pythonpath} if pythonpath else None
    with logged_server(num_procs=2, open_files=open_files, env=env) as (url, log):
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
        newcomer_s(url, 1)  # each process has served a page once
        idle = newcomer_s(url)
        print(f"floods {label}: newcomer idle {idle:.2f} s ({load()}); open files {open_files}", flush=True)

        def report(name: str, during: float, held: str, lines_before: int, rss: float) -> None:
            time.sleep(5)
            after_5 = server_rss_mb(log)
            time.sleep(15)
            text = log()
            lines = text.splitlines()[lines_before:]
            print(f"floods {label} {name}: newcomer {during:.2f} s against {idle:.2f} s idle "
                  f"({during / idle:.1f}x, target {TARGET_RATIO:g}x); {held}; "
                  f"RSS {rss:.0f} MB at its peak, {after_5:.0f} MB 5 s and {server_rss_mb(log):.0f} MB 20 s after; "
                  f"{len(lines)} log lines "
                  f"({sum(len(x) for x in lines) / 1e6:.2f} MB), {sum('Traceback' in x for x in lines)} tracebacks "
                  f"({load()})", flush=True)

        # half-open connections: connect, send nothing
        mark = len(log().splitlines())
        flood = []
        for _ in range(half_open):
            try:
                flood.append(socket.create_connection((host, port), timeout=10))
            except OSError:
                break
        time.sleep(3)
        held = sum(1 for s in flood if not _closed(s))
        rss = server_rss_mb(log)
        during = newcomer_s(url)
        for s in flood:
            s.close()
        report(f"{half_open} half-open", during, f"{held} held by the server after 3 s", mark, rss)

        pace = {"chunk": 1024, "every_s": 0.5}  # 2 KB/s a connection
        fast = {"chunk": 65536, "every_s": 0.2, "total": 2_900_000}  # 2.9 MB in 9 s, then never finished
        for name, head, how in (
                (f"{slow} slow headers (1 KB every 0.5 s)", b"GET /app HTTP/1.1\r\nHost: x\r\nX-Pad: ", pace),
                (f"{slow} slow 900 KB bodies (1 KB every 0.5 s)",
                 b"POST /app HTTP/1.1\r\nHost: x\r\nContent-Length: 900000\r\n\r\n", pace),
                (f"{slow} 2.9 MB headers (64 KB every 0.2 s, never finished)",
                 b"GET /app HTTP/1.1\r\nHost: x\r\nX-Pad: ", fast),
                (f"{slow} 2.9 MB bodies (64 KB every 0.2 s)",
                 b"POST /app HTTP/1.1\r\nHost: x\r\nContent-Length: 2900000\r\n\r\n", fast)):
            mark, alive, peak = len(log().splitlines()), [], [0.0]
            thread = threading.Thread(target=lambda h=head, k=how: asyncio.run(
                _slow(host, port, slow, h, HOLD_S, alive, **k)))
            def sample():
                while thread.is_alive():
                    peak[0] = max(peak[0], server_rss_mb(log))
                    time.sleep(0.5)

            thread.start()
            sampler = threading.Thread(target=sample)
            sampler.start()
            time.sleep(3)
            during = newcomer_s(url)
            thread.join()
            sampler.join()
            report(name, during, f"{sum(alive)} still open after {HOLD_S:g} s", mark, peak[0])


def _closed(sock: socket.socket) -> bool:
    import select

    poll = select.poll()  # select() takes no descriptor past 1,023
    poll.register(sock, select.POLLIN)
    if not poll.poll(0):
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=("class", "floods", "hostile"))
    parser.add_argument("--visitors", type=int, default=150)
    parser.add_argument("--spread", type=float, default=10.0)
    parser.add_argument("--half-open", type=int, default=2200)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--baseline", metavar="REF")
    parser.add_argument("--hostile-half-open", type=int, default=600)
    parser.add_argument("--hostile-pagers", type=int, default=8)
    args = parser.parse_args()
    if args.only in (None, "class"):
        bench_class(args.visitors, args.spread)
    if args.only in (None, "hostile"):
        bench_hostile(args.visitors, args.spread, args.hostile_half_open, args.hostile_pagers)
    if args.only in (None, "floods"):
        if args.baseline:
            from grpo_lab.testing.snapshot import snapshot

            bench_floods(args.half_open, args.slow, args.open_files, str(snapshot(args.baseline)), args.baseline)
        bench_floods(args.half_open, args.slow, args.open_files, None, "this tree")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
