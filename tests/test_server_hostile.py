"""A client that talks out of turn gets its socket closed and at most one log line; an address's lines are
rate-limited; nothing a client can send gives a traceback (grpo_lab.socket_guard, issue #35).

Against a real ``python -m grpo_lab.server`` (``grpo-lab serve``'s command, one process reusing sessions as the
default two do, so a page's session is built when its websocket arrives), raw websockets (Tornado's client,
:mod:`grpo_lab.testing.hostile_client`) send: PULL-DOC-REQ every 50 ms from before the server's ACK (six at once,
the issue's attack), frames after their own close, each malformed message of ``MALFORMED``, each bad handshake.
The server's log is counted; then a plain visitor still gets a working page, and no session of the
misbehaving sockets is left (the memory probe, after Bokeh's unused-session lifetime).
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

from grpo_lab.socket_guard import LINES_BURST, LINES_PER_MINUTE, MALFORMED as CLOSE_MALFORMED, OUT_OF_TURN, ClientLog
from grpo_lab.testing import hostile_client as h
from grpo_lab.testing.bokeh_visitor import visit
from grpo_lab.testing.logged_server import logged_server
from grpo_lab.testing.run_async import run_async


def test_client_log_is_rate_limited_per_address_and_says_what_it_held_back():
    t = [0.0]
    said = []

    class Sink:
        def log(self, level, fmt, *args):
            said.append(fmt % args)

    log = ClientLog(burst=3, per_minute=6, logger=Sink(), clock=lambda: t[0])
    assert [log.say("a", f"a{i}") for i in range(5)] == [True, True, True, False, False]
    assert log.say("b", "b0")  # another address has its own lines
    t[0] = 9.9  # 0.99 of a line refilled (6 a minute)
    assert not log.say("a", "late")
    t[0] = 10.1
    assert log.say("a", "back")
    assert said == ["a0", "a1", "a2", "b0", "back (3 more lines from this address were not logged)"]


def _misbehave(url: str) -> dict:
    async def main():
        out = {"before ACK": await asyncio.gather(*[h.before_ack(url, repeat=20, every_s=0.05) for _ in range(6)])}
        out["after close"] = [await h.after_close(url)]
        for name in h.MALFORMED:
            out[name] = [await h.malformed(url, name)]
        for name in h.HANDSHAKES:
            out[name] = [await h.bad_handshake(url, name)]
        return out

    return run_async(main())


def test_out_of_turn_and_malformed_clients_are_closed_with_one_quiet_line_each():
    extra = ("--reuse-sessions", "--plugins", "grpo_lab.testing.memory_probe", "--unused-session-lifetime", "1000")
    with logged_server(*extra, num_procs=1) as (url, log):
        before = len(log().splitlines())
        t0 = time.monotonic()
        outcome = _misbehave(url)
        took = time.monotonic() - t0
        time.sleep(1.0)
        lines = log().splitlines()[before:]
        assert not any("Traceback" in line or line.startswith((" ", "\t")) for line in lines), "\n".join(lines[:40])
        connections = sum(len(v) for v in outcome.values())
        assert len(lines) <= connections  # one line per connection at most
        # every connection came from 127.0.0.1: its lines are rate-limited (a burst, then a few a minute)
        assert len(lines) <= LINES_BURST + took * LINES_PER_MINUTE / 60 + 1, "\n".join(lines)
        assert all("websocket from 127.0.0.1" in line for line in lines)
        # closed by the server, each with its code (a message before the ACK: policy; the rest: protocol)
        assert any(r == f"closed {OUT_OF_TURN}" for r in outcome["before ACK"]), outcome
        assert all(r in (f"closed {OUT_OF_TURN}", "open") for r in outcome["before ACK"]), outcome
        for name in ("not json", "header without a type", "unknown message type", "binary frame first",
                     "a list for a header", "many buffers", "server-only type"):
            assert outcome[name] == [f"closed {CLOSE_MALFORMED}"], (name, outcome[name])
        # a patch the session cannot apply is answered with Bokeh's ERROR, the socket stays (BokehJS may race)
        assert outcome["nonsense patch"] == ["open"]
        for name in h.HANDSHAKES:
            assert outcome[name][0].startswith(("closed", "refused")), (name, outcome[name])

        # the server still serves a visitor, and lets every misbehaving socket's session go
        base = url.rsplit("/", 1)[0]
        result = run_async(visit(url, 8, scroll=False))
        assert "error" not in result, result
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with urllib.request.urlopen(base + "/memory-probe", timeout=60) as r:
                alive = json.loads(r.read())["alive"]
            if alive == 0:
                break
            time.sleep(1)
        assert alive == 0


def test_sessions_opened_without_pages_take_tokens_of_their_own_bucket():
    """Bokeh's own client opens a session with a websocket alone (a session id of its making, no page request):
    the address's bucket of builds (``--new-sessions-burst`` at once) refuses the rest at the handshake (HTTP 429),
    before any session is built. The flooding address's next page is rendered (its bucket of pages is untouched) but
    its websocket is refused too; another address has buckets of its own."""
    burst = 3
    with logged_server("--reuse-sessions", "--new-sessions-burst", str(burst), "--new-sessions-per-second", "0.01",
                       num_procs=1) as (url, log):
        async def flood():
            socks, errors = await h.pull_sessions(url, burst + 4)
            for sock in socks:
                sock.close()
            return len(socks), [str(e) for e in errors]

        opened, errors = run_async(flood())
        assert opened == burst, errors
        assert len(errors) == 4 and all("429" in e for e in errors), errors
        result = run_async(visit(url, 8, scroll=False))
        assert "429" in result.get("error", ""), result
        from grpo_lab.testing.bokeh_visitor import open_document

        async def other():  # another address has buckets of its own
            sock, *_ = await open_document(url, source="127.0.0.2")
            sock.close()
        run_async(other())
