"""A visitor that speaks BokehJS's websocket protocol, and a ``grpo-lab serve`` to visit: the load, fairness and
memory checks use them to open many sessions without a browser each.

``open_document`` opens a page as BokehJS does (GET, websocket with the page's token, ACK, PULL-DOC); ``visit``
times one visitor (interactive, complete, a control's round trip); ``Server`` runs ``grpo-lab serve`` on a free port
and reads its process tree's CPU and memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from grpo_lab.testing.lab_server import free_port

REPO = Path(__file__).resolve().parents[2]  #: the checkout (its runs/ are served, as the shipped ones)
STEP_TIMEOUT_S = 120  #: a visitor that waits longer than this for any step counts as an error


class Server:
    """``grpo-lab serve`` (its defaults) on a free loopback port; ``pythonpath`` first on its path."""

    def __init__(self, pythonpath: Path | None = None, extra: list[str] | None = None):
        self.port = free_port()
        env = {**os.environ, "GRPO_LAB_RUNS": str(REPO / "runs")}
        if pythonpath:
            env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{env.get('PYTHONPATH', '')}"
        cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--port", str(self.port), *(extra or [])]
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=tempfile.gettempdir())
        self.url = f"http://127.0.0.1:{self.port}/app"
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("the server exited: " + self.log.read().decode(errors="replace")[-600:])
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/static/extensions/panel/panel.min.js", timeout=5)
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("the server did not start within 120 s")

    def processes(self):
        import psutil

        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def cpu_s(self) -> float:
        total = 0.0
        for p in self.processes():
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except Exception:
                pass
        return total

    def rss_mb(self) -> float:
        total = 0
        for p in self.processes():
            try:
                total += p.memory_info().rss
            except Exception:
                pass
        return total / 2**20

    def stop(self) -> None:
        for p in reversed(self.processes()):
            try:
                p.terminate()
            except Exception:
                pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _find_grid(doc_json, component: str = "LiveGrid") -> str | None:
    """The id of a Panel component's data model (Panel names its class <component><n>): by default the grid's."""
    stack = [doc_json]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "object" and str(node.get("name", "")).startswith(component) and "id" in node:
                return node["id"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


async def _patch(conn, events: list):
    """Send a PATCH-DOC of these (serialised) document events, as BokehJS does; returns the message."""
    from bokeh.protocol.messages.patch_doc import patch_doc

    msg = patch_doc(patch_doc.create_header(), {}, {"events": events})
    await msg.send(conn)
    return msg


def load_client() -> None:
    """Import what :func:`open_document` uses (Bokeh's protocol and client, Tornado's clients): about 0.5 s on an
    idle machine, seconds under load, which a visitor timed from its first request must not count."""
    import bokeh.client.websocket  # noqa: F401
    import bokeh.protocol.receiver  # noqa: F401
    import tornado.httpclient  # noqa: F401
    import tornado.websocket  # noqa: F401


async def open_document(url: str, source: str | None = None, cookies: bool = False):
    """Open a page as BokehJS does: GET it, open its websocket with the page's token, wait for the server's ACK,
    send PULL-DOC-REQ and wait for the document. Returns ``(sock, conn, read, reply)``: ``read(kind)`` waits for the
    next message of that kind (an ERROR raises), ``reply`` is the PULL-DOC-REPLY. ``source``: the local address to
    connect from (another loopback address, 127.0.0.2, is another client to the server); ``cookies``: the websocket
    carries the cookies the page set, as a browser's does (the visitor's, a class link's)."""
    from tornado.httpclient import AsyncHTTPClient

    resp = await asyncio.wait_for(AsyncHTTPClient().fetch(url, connect_timeout=STEP_TIMEOUT_S, network_interface=source,
                                                          request_timeout=STEP_TIMEOUT_S), STEP_TIMEOUT_S)
    token = re.search(r'"token":\s*"([^"]+)"', resp.body.decode()).group(1)
    ws_url = url.split("?", 1)[0].replace("http://", "ws://") + "/ws"  # the query travels in the token
    jar = "; ".join(c.split(";", 1)[0] for c in resp.headers.get_list("Set-Cookie")) if cookies else ""
    return await _open_socket(ws_url, token, source, jar)


async def _open_socket(ws_url: str, token: str, source: str | None = None, cookie: str = ""):
    """:func:`open_document` from the websocket on: open it with ``token`` (and a ``Cookie`` header), wait for the
    ACK, pull the document."""
    from bokeh.client.websocket import WebSocketClientConnectionWrapper
    from bokeh.protocol import Protocol
    from bokeh.protocol.receiver import Receiver
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    headers = {"Cookie": cookie} if cookie else None
    sock = await asyncio.wait_for(websocket_connect(HTTPRequest(ws_url, network_interface=source, headers=headers),
                                                    subprotocols=["bokeh", token],
                                                    max_message_size=200 * 2**20), STEP_TIMEOUT_S)
    conn, protocol = WebSocketClientConnectionWrapper(sock), Protocol()
    receiver = Receiver(protocol)

    async def read(kind: str):
        while True:
            frag = await asyncio.wait_for(sock.read_message(), STEP_TIMEOUT_S)
            if frag is None:
                raise ConnectionError("the websocket closed")
            msg = await receiver.consume(frag)
            if msg is not None and msg.header["msgtype"] == kind:
                return msg
            if msg is not None and msg.header["msgtype"] == "ERROR":
                raise RuntimeError(msg.content.get("text"))

    await read("ACK")
    await protocol.create("PULL-DOC-REQ").send(conn)
    return sock, conn, read, await read("PULL-DOC-REPLY")


async def visit(url: str, K: int, cpu=None, scroll: bool = True) -> dict:
    """One visitor (see the module docstring; ``scroll``: it scrolls to the plots before moving the control);
    returns its timings in seconds, or its error."""
    t0 = time.perf_counter()
    out = {}
    try:
        sock, conn, read, reply = await open_document(url)
        out["interactive"] = time.perf_counter() - t0
        out["cpu_interactive"] = cpu() if cpu else float("nan")
        grid = _find_grid(reply.content["doc"])
        if grid is None:
            raise RuntimeError("no grid component in the document")
        placeholder = _find_grid(reply.content["doc"], "InView")  # the plots' (lab.views.in_view); None before it
        # the page has rendered: BokehJS tells the server (Panel then runs the session's onload callbacks)
        text = json.dumps(reply.content["doc"])
        await _patch(conn, [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": {
            "type": "event", "name": "document_ready", "values": {"type": "map", "entries": []}}}])
        plots = "lab-plots" in text and "lab-plots-ready" not in text  # coming (a placeholder: once scrolled to)
        if placeholder is not None and scroll:
            await _patch(conn, [{"kind": "ModelChanged", "model": {"id": placeholder}, "attr": "seen", "new": True}])
        wait_plots = plots and (scroll or placeholder is None)

        async def plots_ready():
            while "lab-plots-ready" not in json.dumps((await read("PATCH-DOC")).content):
                pass

        if wait_plots and scroll:
            await plots_ready()
        out["complete"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        msg = await _patch(conn, [{"kind": "ModelChanged", "model": {"id": grid}, "attr": "K", "new": K}])
        while (await read("OK")).header.get("reqid") != msg.header["msgid"]:
            pass  # the OKs of the earlier patches
        out["control"] = time.perf_counter() - t1
        if wait_plots and not scroll:
            await plots_ready()  # an earlier lab builds them anyway: the visit costs them too
        sock.close()
    except Exception as exc:  # counted and reported, never raised
        out["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return out
