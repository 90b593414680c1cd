"""Websocket clients that talk out of turn, for the quiet-log test and the websocket-flood benchmark.

Each ``async`` function below opens one raw websocket (Tornado's client, no BokehJS) to a served lab page and
misbehaves in one way; it returns what the server did (``"closed"`` with the close code, or ``"open"`` if the
server still held the socket after ``linger_s``). Every loop is bounded in count and time. Only loopback
addresses are ever contacted (the ``url`` comes from a test's own server).

* :func:`before_ack`: sends PULL-DOC-REQ (and more) before the server's ACK, while the session is being built;
* :func:`after_close`: closes, then keeps writing on the socket (frames after the close frame);
* :func:`malformed`: one of :data:`MALFORMED` (not JSON, a header without a type, an unknown message type,
  a binary frame first, a document patch of nonsense, a huge buffer count, ...);
* :func:`bad_handshake`: no token, a forged token, the wrong subprotocol;
* :func:`pull_sessions`: ``n`` sessions built and pulled as Bokeh's own client does (``bokeh.client``: a
  websocket with a session id of the client's making, no page request), kept open.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

__all__ = ["page_token", "before_ack", "after_close", "malformed", "bad_handshake", "MALFORMED", "HANDSHAKES",
           "pull_sessions", "ws_url"]

STEP_S = 30.0  #: the longest any one step waits


def ws_url(url: str) -> str:
    return url.split("?", 1)[0].replace("http://", "ws://") + "/ws"


async def page_token(url: str, source: str | None = None) -> str:
    """The session token of a freshly requested page (as BokehJS reads it from the page)."""
    from tornado.httpclient import AsyncHTTPClient

    resp = await AsyncHTTPClient().fetch(url, request_timeout=STEP_S, network_interface=source)
    return re.search(r'"token":\s*"([^"]+)"', resp.body.decode()).group(1)


async def _connect(url: str, subprotocols, source: str | None = None):
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    return await asyncio.wait_for(websocket_connect(HTTPRequest(ws_url(url), network_interface=source),
                                                    subprotocols=subprotocols), STEP_S)


def _frames(msgtype: str, content: object = None) -> list[str]:
    """A Bokeh protocol message as its three text frames (header, metadata, content)."""
    header = {"msgid": str(time.monotonic_ns()), "msgtype": msgtype}
    return [json.dumps(header), "{}", json.dumps({} if content is None else content)]


async def _outcome(sock, linger_s: float) -> str:
    """Read until the server closes the socket or ``linger_s`` passes."""
    deadline = time.monotonic() + linger_s
    try:
        while time.monotonic() < deadline:
            try:
                msg = await asyncio.wait_for(sock.read_message(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break
            if msg is None:
                return f"closed {sock.close_code}"
        return "open"
    finally:
        sock.close()  # Tornado's client warns about a socket never closed, even one the server closed


async def _send(sock, frames, binary: bool = False) -> None:
    from tornado.websocket import WebSocketClosedError

    for frame in frames:
        try:
            await sock.write_message(frame, binary=binary)
        except WebSocketClosedError:
            return


async def before_ack(url: str, repeat: int = 20, every_s: float = 0.05, linger_s: float = 3.0,
                     source: str | None = None) -> str:
    """PULL-DOC-REQ sent at once, then every ``every_s`` (``repeat`` times), without waiting for the ACK."""
    sock = await _connect(url, ["bokeh", await page_token(url, source)], source)
    for _ in range(repeat):
        await _send(sock, _frames("PULL-DOC-REQ"))
        if sock.protocol is None or sock.close_code is not None:
            break
        await asyncio.sleep(every_s)
    return await _outcome(sock, linger_s)


async def after_close(url: str, repeat: int = 20, linger_s: float = 2.0) -> str:
    """Wait for the ACK, send a close frame, then keep writing frames on the raw stream."""
    from tornado.websocket import WebSocketClosedError

    sock = await _connect(url, ["bokeh", await page_token(url)])
    await asyncio.wait_for(sock.read_message(), STEP_S)  # the ACK
    proto = sock.protocol
    sock.close(1000, "bye")
    for _ in range(repeat):  # what a client that ignores its own close sends: frames on the stream regardless
        try:
            for frame in _frames("PULL-DOC-REQ"):
                proto._write_frame(True, 0x1, frame.encode())
        except (WebSocketClosedError, AttributeError, OSError):
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(linger_s)
    return f"closed {sock.close_code}"


#: malformed messages: name -> (frames, binary)
MALFORMED = {
    "not json": (["{nope", "{}", "{}"], False),
    "header without a type": ([json.dumps({"msgid": "1"}), "{}", "{}"], False),
    "unknown message type": (_frames("NO-SUCH-TYPE"), False),
    "binary frame first": ([b"\x00\x01\x02"], True),
    "a list for a header": (["[1, 2, 3]", "{}", "{}"], False),
    "nonsense patch": (_frames("PATCH-DOC", {"events": [{"kind": "ModelChanged", "model": {"id": "nope"},
                                                          "attr": "x", "new": 1}]}), False),
    "patch of not a list": (_frames("PATCH-DOC", {"events": 7}), False),
    "many buffers": ([json.dumps({"msgid": "1", "msgtype": "PATCH-DOC", "num_buffers": 10**9}), "{}", "{}"], False),
    "server-only type": (_frames("ACK"), False),
}


async def malformed(url: str, name: str, repeat: int = 5, linger_s: float = 2.0) -> str:
    """After the ACK, send :data:`MALFORMED` ``[name]`` up to ``repeat`` times (until the server closes)."""
    frames, binary = MALFORMED[name]
    sock = await _connect(url, ["bokeh", await page_token(url)])
    await asyncio.wait_for(sock.read_message(), STEP_S)  # the ACK
    for _ in range(repeat):
        if sock.protocol is None or sock.close_code is not None:
            break
        await _send(sock, frames, binary)
        await asyncio.sleep(0.05)
    return await _outcome(sock, linger_s)


#: handshakes the server must refuse: name -> subprotocols (a function of a real page token)
HANDSHAKES = {
    "no token": lambda token: ["bokeh"],
    "forged token": lambda token: ["bokeh", "eyJzZXNzaW9uX2lkIjogIngifQ.bm90LWEtc2lnbmF0dXJl"],
    "wrong subprotocol": lambda token: ["chat", token],
}


async def bad_handshake(url: str, name: str, linger_s: float = 2.0) -> str:
    try:
        sock = await _connect(url, HANDSHAKES[name](await page_token(url)))
    except Exception as exc:  # refused at the handshake
        return f"refused {type(exc).__name__}"
    await _send(sock, _frames("PULL-DOC-REQ"))
    return await _outcome(sock, linger_s)


async def pull_sessions(url: str, n: int, source: str | None = None, timeout_s: float = 120.0) -> list:
    """``n`` sessions opened at once as ``bokeh.client.pull_session`` does (a session id of the client's own, the
    websocket with no page request before it; the server builds the document, the client pulls it); the open
    sockets (the caller closes them) and the errors."""
    from bokeh.util.token import generate_jwt_token, generate_session_id

    from grpo_lab.testing.bokeh_visitor import _open_socket

    async def one():
        token = generate_jwt_token(generate_session_id(), signed=False)
        sock, *_ = await _open_socket(ws_url(url), token, source)
        return sock

    done = await asyncio.wait_for(asyncio.gather(*[one() for _ in range(n)], return_exceptions=True), timeout_s)
    return [d for d in done if not isinstance(d, BaseException)], [d for d in done if isinstance(d, BaseException)]
