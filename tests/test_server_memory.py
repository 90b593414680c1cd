"""A served lab lets a room go: once its sessions are destroyed, none of their documents, sessions or views is
reachable in the server, and the process has released its memory (grpo_lab.memory), also in the process whose
page-rendering session ``--reuse-sessions`` keeps (which is never destroyed, and which no visitor holds).

The server is a real ``python -m grpo_lab.server`` subprocess (the command ``grpo-lab serve`` builds), with
tests/memory_probe.py as a plugin route reporting from inside it; visitors speak BokehJS's protocol over HTTP
and a websocket (benchmarks/bench_load.py's visitor). How much resident memory comes back is measured by
benchmarks/bench_load.py, not here.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grpo_lab.commands.serve import serve_command
from grpo_lab.testing.bokeh_visitor import visit  # the load benchmark's BokehJS-protocol visitor
from grpo_lab.testing.lab_server import free_port, serve
from grpo_lab.testing.memory_probe import probe

ROOT = Path(__file__).resolve().parents[1]

LIFETIME_MS = 1000  #: sessions unused this long are destroyed (the server's default is Bokeh's 15 s)


def test_a_room_that_left_leaves_no_session_behind_and_is_released():
    port = free_port()
    # one process, reusing sessions as grpo-lab serve's default two do: the probe always reaches the process
    # that served the visits, and the session kept to render pages from is built before the first visitor's own
    cmd = serve_command(port=port, num_procs=1) + ["--reuse-sessions", "--plugins", "grpo_lab.testing.memory_probe",
                                                   "--unused-session-lifetime", str(LIFETIME_MS)]
    env = {"GRPO_LAB_RUNS": str(ROOT / "runs")}
    with serve(cmd, port=port, env=env, path="/health") as health:  # waited for without opening a page
        base = health.rsplit("/", 1)[0]
        url = base + "/app"
        start = probe(base)
        # warmed before serving: the warm-up page is gone, nothing of a session exists yet
        assert (start["server_sessions"], start["lab_views"], start["shown_views"], start["releases"]) == (0, 0, 0, 0)
        assert start["frozen"] > 10_000  # what the warm-up left (modules, classes, shared caches): out of gc's sight

        def room():
            async def everyone():
                return await asyncio.gather(*[visit(url, 4 + i) for i in range(4)])
            return asyncio.run(everyone())

        with ThreadPoolExecutor(1) as pool:  # a fresh thread: the browser tests' driver may hold this one's loop
            results = pool.submit(room).result()
        assert [r.get("error") for r in results] == [None] * 4
        during = probe(base)
        assert during["alive"] >= 3 and during["lab_views"] >= 4  # the visitors' sessions + the kept template

        deadline = time.monotonic() + 90  # a guard: destroyed after LIFETIME_MS, checked every 5 s
        after = probe(base)
        while (after["alive"] or not after["releases"]) and time.monotonic() < deadline:
            time.sleep(1)
            after = probe(base)
        assert after["alive"] == 0
        assert after["releases"] == 1  # the room was released once, though the template session is kept
        kept = after["cached_sessions"]
        assert kept == 1
        assert after["server_sessions"] == kept  # the kept session alone
        assert after["lab_views"] == kept  # its page; every other visitor's view is unreachable
        assert after["documents"] == start["documents"] + kept  # documents not destroyed (see memory_probe)
        assert after["shown_views"] == kept


def test_no_visitor_holds_the_session_pages_are_rendered_from():
    """With ``--reuse-sessions`` (``grpo-lab serve``'s two processes) Panel keeps one session per process to render
    pages from, never destroyed, and handed the first page request its token: the first visitor of each process
    connected to it, so what that visitor loaded (an upload at the limit: about 80 MB per process) stayed for good
    after its tab closed, and later visitors' pages were rendered from its document (title, template). Now that session is built
    from the bare request before the first visitor's page, and the visitor gets a session of its own (alive: one;
    was none, the visitor's being the kept one). Panel keyed it by ``?theme=`` too: each made-up theme kept one more."""
    import urllib.request

    from grpo_lab.testing.bokeh_visitor import open_document
    from grpo_lab.testing.logged_server import logged_server

    with logged_server("--reuse-sessions", "--plugins", "grpo_lab.testing.memory_probe") as (url, log):
        base = url.rsplit("/", 1)[0]

        async def first_visitor():
            sock, *_ = await open_document(url + "?K=12")
            during = probe(base)
            sock.close()
            return during

        with ThreadPoolExecutor(1) as pool:  # a fresh thread: the browser tests' driver may hold this one's loop
            during = pool.submit(asyncio.run, first_visitor()).result()
        assert during["cached_sessions"] == 1  # the template
        assert during["alive"] == 1  # the first visitor's own session, not the template
        for theme in ("dark", "made-up-1", "made-up-2"):
            with urllib.request.urlopen(f"{url}?theme={theme}", timeout=60) as r:
                assert r.status == 200
        assert probe(base)["cached_sessions"] == 1  # one template for the app's path, whatever the query
