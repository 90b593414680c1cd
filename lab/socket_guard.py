"""A websocket that a client cannot make talk: out-of-turn and malformed messages close it with one log line at
most, and the lines of one address are rate-limited.

Bokeh's websocket handler (``bokeh/server/views/ws.py``, 3.9) logs a traceback for much a client can send: a
message before the server's ACK (``_receive`` on a ``None`` receiver: AttributeError), a text that is not JSON or
names no known message type (``Unhandled exception receiving a message``), a document patch it cannot apply
(``error handling message``, from ``bokeh.server.protocol_handler``), a handshake without the ``bokeh``
subprotocol or a token (``open`` raises ``ProtocolError``: Tornado's ``Uncaught exception``), and it goes on
handling messages that arrive after it closed the socket. Six raw websockets sending PULL-DOC-REQ every 50 ms
before the ACK wrote 464 tracebacks (5.3 MB of log) in 25 s (issue #35).

:class:`GuardedSocket` (a mixin put before Panel's handler by :func:`grpo_lab.admission.install`):

* **A message before the ACK** (the session is still being built, or waiting its turn at admission): the socket
  is closed (code :data:`OUT_OF_TURN`), and the session it was waiting for is not built (the build checks
  :func:`gone` after its turn) or, if it was under way, is let go once built (no connection stays subscribed to it,
  so Bokeh destroys it as unused).
* **A malformed message** (not JSON, no or an unknown type, a bad buffer header, a type only the server sends):
  closed with code :data:`MALFORMED`.
* **A message after the close** (the server's or the client's): dropped, no line.
* **A message the session could not apply** (a patch naming models that do not exist): Bokeh's ERROR reply is
  sent as before and the connection stays (BokehJS may race a model the server just replaced), logged once per
  connection, without a traceback.
* **A refused handshake** (no ``bokeh`` subprotocol, no token, an expired one; an origin not allowed): one line.

Every line goes through :data:`CLIENT_LOG` (:class:`ClientLog`): at most :data:`LINES_BURST` lines per address at
once, refilled at :data:`LINES_PER_MINUTE` a minute; lines over it are counted and said in one line when the
address may log again. Bokeh's own per-connection lines (``bokeh.server.views.ws``, ``bokeh.server.protocol_handler``,
``bokeh.protocol``: "WebSocket connection opened", "ServerConnection created", ..., three or more per visit, any
number per misbehaving client) are silenced by :func:`quiet_bokeh_socket_logs`; these are the lab's instead.
"""

from __future__ import annotations

import logging
import time

from grpo_lab.token_bucket import TokenBucket, bucket_for

__all__ = ["ClientLog", "CLIENT_LOG", "GuardedSocket", "quiet_bokeh_socket_logs", "gone", "OUT_OF_TURN", "MALFORMED",
           "LINES_BURST", "LINES_PER_MINUTE", "BOKEH_SOCKET_LOGGERS"]

_log = logging.getLogger("grpo_lab.socket")

OUT_OF_TURN = 1008  #: close code (RFC 6455 "policy violation") of a socket that talked before the server's ACK
MALFORMED = 1002  #: close code (RFC 6455 "protocol error") of a socket that sent a message the protocol has not
LINES_BURST = 10  #: log lines one address may cause at once
LINES_PER_MINUTE = 6.0  #: and then per minute
#: Bokeh's loggers of websocket connections: every line they write is about one client's connection
BOKEH_SOCKET_LOGGERS = ("bokeh.server.views.ws", "bokeh.server.protocol_handler", "bokeh.protocol")


class ClientLog:
    """Log lines caused by clients, rate-limited per address (a token bucket of ``burst`` lines refilled at
    ``per_minute``); ``clock``: seconds, for tests. ``say`` returns whether the line was written."""

    def __init__(self, burst: int = LINES_BURST, per_minute: float = LINES_PER_MINUTE, logger=_log, clock=time.monotonic):
        self.burst, self.rate, self.logger, self.clock = float(burst), per_minute / 60.0, logger, clock
        self._buckets: dict[str, TokenBucket] = {}  # address -> its lines' bucket
        self._held: dict[str, int] = {}  # address -> lines held back since its last line

    def say(self, address: str, line: str, level: int = logging.WARNING) -> bool:
        now = self.clock()
        bucket = bucket_for(self._buckets, address, self.rate, self.burst, now, keep=self._held.__contains__)
        if not bucket.take(now):
            self._held[address] = self._held.get(address, 0) + 1
            return False
        held = self._held.pop(address, 0)
        more = f" ({held} more lines from this address were not logged)" if held else ""
        self.logger.log(level, "%s%s", line, more)
        return True


CLIENT_LOG = ClientLog()  #: this process's


def quiet_bokeh_socket_logs() -> None:
    """Silence :data:`BOKEH_SOCKET_LOGGERS` (their children inherit the level): the lab logs for them; the lab's own
    loggers (``grpo_lab``) log at Bokeh's level (``--log-level``, set before the server is built)."""
    for name in BOKEH_SOCKET_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    logging.getLogger("grpo_lab").setLevel(logging.getLogger("bokeh").getEffectiveLevel())


def gone(request) -> bool:
    """Whether the websocket of ``request`` has closed (marked by :class:`GuardedSocket`); a session build waiting
    for its turn checks it and does not build a session nobody will use."""
    return bool(getattr(request, "_grpo_lab_socket_gone", False))


class GuardedSocket:
    """A mixin for Bokeh's (Panel's) websocket handler: see the module docstring."""

    _closing = False  # the server closed, or the client did: later messages are dropped
    _said = False  # this connection has had its line
    _apply_errors = 0

    def _say(self, line: str, level: int = logging.WARNING) -> None:
        """One line per connection at most (and the address's rate)."""
        if not self._said:
            self._said = True
            address = str(getattr(self.request, "remote_ip", "") or "")
            CLIENT_LOG.say(address, f"websocket from {address or 'an unknown address'}: {line}", level)

    def _refuse(self, code: int, line: str) -> None:
        self._say(f"{line}; closed")
        self.close(code, line[:120])

    def close(self, code=None, reason=None):
        self._closing = True
        self.request._grpo_lab_socket_gone = True
        return super().close(code, reason)

    def check_origin(self, origin: str) -> bool:
        if super().check_origin(origin):
            return True
        self._say(f"refused: origin {origin[:200]!r} is not allowed (--allow-websocket-origin or GRPO_LAB_ORIGINS "
                  "adds one)")
        return False

    def open(self, *args, **kwargs):
        from bokeh.protocol.exceptions import ProtocolError

        try:
            return super().open(*args, **kwargs)
        except ProtocolError as exc:  # Bokeh closed it already
            self._closing = True
            self._say(f"refused at its handshake: {exc}")
            return None

    async def _async_open(self, token: str) -> None:
        """Bokeh's (Panel's): the session found or built, the connection made, the ACK sent; a socket closed
        meanwhile lets the session go, and a session that could not be made is one line."""
        try:
            await super()._async_open(token)
        except Exception as exc:  # noqa: BLE001: whatever a token or a closed page made of it; Bokeh closed it
            if not self._closing:  # a tab closed before its session was built is no one's fault: no line
                self._say(f"no session: {type(exc).__name__}: {str(exc)[:200]}")
            self._closing = True
            return
        if self._closing and self.connection is not None:  # closed while its session was built: let it go
            self.application.client_lost(self.connection)

    async def on_message(self, fragment) -> None:
        from bokeh.protocol.exceptions import MessageError, ProtocolError, ValidationError

        if self._closing:
            return
        if self.receiver is None or self.connection is None:
            return self._refuse(OUT_OF_TURN, "a message before the server's ACK (out of turn)")
        try:
            message = await self.receiver.consume(fragment)
        except (MessageError, ProtocolError, ValidationError) as exc:
            return self._refuse(MALFORMED, f"a malformed message ({str(exc)[:120]})")
        except Exception as exc:  # noqa: BLE001: not JSON, an unknown type (KeyError), ...: all the client's doing
            return self._refuse(MALFORMED, f"a malformed message ({type(exc).__name__}: {str(exc)[:80]})")
        if message is None:
            return None
        if message.msgtype not in self.handler._handlers:
            return self._refuse(MALFORMED, f"a {message.msgtype} message, which only the server sends")
        work = await self._handle(message)
        if work is not None and not self._closing:
            if getattr(work, "msgtype", None) == "ERROR":
                self._say(f"a {message.msgtype} message the session could not apply: "
                          f"{str(work.content.get('text'))[:200]}")
            await self._schedule(work)
        return None

    def _protocol_error(self, message: str) -> None:
        self._refuse(MALFORMED, f"a protocol error ({message[:120]})")

    def _internal_error(self, message: str) -> None:
        self._refuse(MALFORMED, f"a message the server could not handle ({message[:120]})")

    async def send_message(self, message) -> None:
        if self._closing:
            return None
        return await super().send_message(message)

    def on_close(self) -> None:
        self._closing = True
        self.request._grpo_lab_socket_gone = True
        connection = self.connection
        if connection is None:
            return None
        if connection._session is None or getattr(connection._session, "destroyed", False):
            self.application.client_lost(connection)  # its session is gone already (destroyed): nothing to tell it
            return None
        return super().on_close()
