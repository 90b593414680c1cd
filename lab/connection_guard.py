"""The lab's HTTP server outlasts a connection flood: connections counted and capped, slow ones closed on a
deadline, headers bounded, accepts paused (not a traceback) when the process is out of files, the access log
rate-limited per address.

Before (issue #41): 2,200 idle half-open connections from one address, with the common limit of 1,024 open files,
ran the server out of file descriptors; Tornado's accept handler raised ``EMFILE`` at every pass of the event loop
(821,328 tracebacks, 489 MB of log in 4 minutes) and answered no one for 193 s. Headers of 3 MB were read from
any number of connections at once (200 never finished held 560 MB); every 404 was logged with its whole URL.

* **Open files** (:func:`raise_open_files`): the soft ``RLIMIT_NOFILE`` is raised to the hard one (the most a
  process may ask without privilege; :data:`MAX_OPEN_FILES` at most) and the server says both at start.
* **Connections** (:class:`ConnectionCounts`): at most ``total`` open in a process (the open-file limit less
  :data:`RESERVED_FILES` for the files, pipes and sockets the lab itself opens) and ``per_address`` from one address
  (:data:`ADDRESS_SHARE` of the total: a lecture hall behind one address fits, and another address always finds
  room). A connection over either is closed as soon as it is accepted, before any byte is read; one rate-limited
  line says so. Behind a proxy (``--use-xheaders``) every connection comes from the proxy: only the total counts.
* **Deadlines** (:data:`HTTP_SERVER_OPTIONS`, Tornado's ``HTTPServer`` options): a request's headers must arrive
  within :data:`HEADER_DEADLINE_S` of the connection's last request (``idle_connection_timeout``: an idle or
  half-open connection is closed then), a body within :data:`BODY_DEADLINE_S` (``body_timeout``), and a body is at
  most :data:`MAX_BODY_BYTES` (the lab takes its uploads over the websocket; no HTTP route reads a body).
* **Headers** (:class:`LabStream`): Tornado reads up to ``max_header_size`` (:data:`MAX_HEADER_BYTES`, room for
  Chromium's longest URL, 2 MiB, so that a pasted long link gets the lab's 414 page rather than a reset); past what
  a browser's ordinary headers take (:data:`BROWSER_HEADER_BYTES`, 64 KiB) a connection needs one of
  :data:`LONG_HEADER_SLOTS` slots of the process, held until its headers are read or it closes; without one it is
  closed. 200 connections sending 2.9 MB of headers hold at most that many times 2 MiB, plus 64 KiB each.
* **Out of files anyway** (:meth:`LabHTTPServer.add_sockets`): an ``accept`` that fails with ``EMFILE``/``ENFILE``
  (or ``ENOBUFS``/``ENOMEM``) pauses accepting for :data:`ACCEPT_PAUSE_S` with one rate-limited line, instead of
  raising at every pass of the loop.
* **Access log** (:func:`log_request`, the application's ``log_function``): one line per request, as Tornado's,
  but through a per-address bucket (:data:`ACCESS_BURST` lines at once, :data:`ACCESS_PER_MINUTE` a minute after;
  lines held back are counted and said in the next one) and with the URL cut to :data:`LOGGED_URL_CHARS`. Tornado's
  own per-connection lines (an unsatisfiable read, a malformed message) go through the same bucket.
"""

from __future__ import annotations

import errno
import logging
import resource
import socket

from tornado import httpserver
from tornado.ioloop import IOLoop
from tornado.iostream import IOStream, UnsatisfiableReadError
from tornado.log import access_log, gen_log

from grpo_lab.socket_guard import ClientLog

__all__ = ["raise_open_files", "ConnectionCounts", "LabStream", "LabHTTPServer", "HTTP_SERVER_OPTIONS", "log_request",
           "ACCESS_LOG", "MAX_HEADER_BYTES", "BROWSER_HEADER_BYTES", "LONG_HEADER_SLOTS", "HEADER_DEADLINE_S",
           "BODY_DEADLINE_S", "MAX_BODY_BYTES", "RESERVED_FILES", "ADDRESS_SHARE", "LOGGED_URL_CHARS", "ACCESS_BURST",
           "ACCESS_PER_MINUTE", "install_connection_guard", "COUNTS"]

_log = logging.getLogger("grpo_lab.connections")

MAX_OPEN_FILES = 1 << 16  #: the soft open-file limit asked for at most
RESERVED_FILES = 128  #: files kept for the lab's own use (logs, uploads' readers, pipes) besides connections
ADDRESS_SHARE = 0.75  #: of the connections a process allows, the share one address may hold
MAX_HEADER_BYTES = (2 << 20) + (64 << 10)  #: a request's line and headers: Chromium's longest URL (2 MiB) and 64 KiB
BROWSER_HEADER_BYTES = 64 << 10  #: headers past this need a long-header slot (Tornado's own default bound)
LONG_HEADER_SLOTS = 8  #: connections of a process reading headers past BROWSER_HEADER_BYTES at once
HEADER_DEADLINE_S = 20.0  #: a request's headers within this of the connection's opening or its last request (s)
BODY_DEADLINE_S = 20.0  #: a request's body within this (s)
MAX_BODY_BYTES = 1 << 20  #: a request's body (the lab's routes read none; uploads go over the websocket)
TRIM_DELAY_S = 2.0  #: after the last long headers were let go, their memory is given back this much later (s)
ACCEPT_PAUSE_S = 0.5  #: accepting paused this long after the process ran out of files (s)
LOGGED_URL_CHARS = 200  #: a logged URL is cut to this many characters
ACCESS_BURST = 30  #: access-log lines one address may cause at once
ACCESS_PER_MINUTE = 30.0  #: and then per minute

#: Tornado ``HTTPServer`` options (``tornado/httpserver.py``: ``idle_connection_timeout`` is also the deadline for a
#: request's headers, ``body_timeout`` for its body)
HTTP_SERVER_OPTIONS = {"max_header_size": MAX_HEADER_BYTES, "idle_connection_timeout": HEADER_DEADLINE_S,
                       "body_timeout": BODY_DEADLINE_S, "max_body_size": MAX_BODY_BYTES}

ACCESS_LOG = ClientLog(burst=ACCESS_BURST, per_minute=ACCESS_PER_MINUTE, logger=access_log)  #: this process's
CONNECTION_LOG = ClientLog(logger=_log)  #: lines about refused connections, per address


def raise_open_files(limit: int = MAX_OPEN_FILES) -> tuple[int, int]:
    """Raise this process's soft open-file limit to its hard limit (``limit`` at most; never lowered);
    ``(soft, hard)`` after (``hard`` is -1 for unlimited)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = limit if hard == resource.RLIM_INFINITY else min(hard, limit)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft, (-1 if hard == resource.RLIM_INFINITY else hard)


class ConnectionCounts:
    """Open connections of one process, in all and by address, under caps derived from the open-file limit."""

    def __init__(self, open_files: int | None = None):
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0] if open_files is None else open_files
        self.total = max(16, soft - max(RESERVED_FILES, soft // 8))
        self.per_address = max(8, int(self.total * ADDRESS_SHARE))
        self.open = 0
        self.by_address: dict[str, int] = {}
        self.long_headers = 0  #: connections holding a long-header slot

    def admit(self, address: str | None) -> str | None:
        """Count a new connection from ``address`` (None: not counted by address), or why it is refused."""
        if self.open >= self.total:
            return f"{self.open} connections open, as many as this process allows ({self.total})"
        if address is not None and self.by_address.get(address, 0) >= self.per_address:
            return f"{self.per_address} connections open from this address, as many as one address may hold"
        self.open += 1
        if address is not None:
            self.by_address[address] = self.by_address.get(address, 0) + 1
        return None

    def release(self, address: str | None) -> None:
        self.open = max(0, self.open - 1)
        if address is not None and address in self.by_address:
            self.by_address[address] -= 1
            if self.by_address[address] <= 0:
                del self.by_address[address]


COUNTS = ConnectionCounts()  #: this process's (remade by install_connection_guard once the limit is raised)


class LabStream(IOStream):
    """A connection's stream: released from :data:`COUNTS` when it closes; headers past
    :data:`BROWSER_HEADER_BYTES` only with a long-header slot."""

    _address: str | None = None
    _counted = False
    _long = False

    def _check_max_bytes(self, delimiter, size: int) -> None:
        if size > BROWSER_HEADER_BYTES and not self._long and self._read_max_bytes is not None:
            if COUNTS.long_headers >= LONG_HEADER_SLOTS:
                raise UnsatisfiableReadError(f"headers past {BROWSER_HEADER_BYTES} bytes while {LONG_HEADER_SLOTS} "
                                             "connections read long headers")
            COUNTS.long_headers += 1
            self._long = True
        super()._check_max_bytes(delimiter, size)

    def _let_long_go(self) -> None:
        if self._long:
            self._long = False
            COUNTS.long_headers = max(0, COUNTS.long_headers - 1)
            if COUNTS.long_headers == 0:
                _trim_soon()

    def _finish_read(self, size: int) -> None:
        self._let_long_go()
        super()._finish_read(size)

    def close_fd(self) -> None:
        self._let_long_go()
        if self._counted:
            self._counted = False
            COUNTS.release(self._address)
        super().close_fd()


_trim_pending = [False]


def _trim_soon() -> None:
    """Once no connection reads long headers, give their buffers' pages back to the system
    (:func:`grpo_lab.memory.trim`) after :data:`TRIM_DELAY_S`, once however many such connections closed meanwhile:
    the buffers, up to 2 MiB each, are freed into the C library's heap, which keeps their pages (a flood of long
    headers left the server 35-50 MB larger 20 s after it ended)."""
    if _trim_pending[0]:
        return
    _trim_pending[0] = True

    def run() -> None:
        from grpo_lab.memory import trim

        _trim_pending[0] = False
        if COUNTS.long_headers == 0:
            trim()

    IOLoop.current().call_later(TRIM_DELAY_S, run)


class LabHTTPServer(httpserver.HTTPServer):
    """Tornado's HTTP server with the counts, the streams and the accepts of this module (Bokeh builds it)."""

    def _handle_connection(self, connection: socket.socket, address) -> None:
        ip = address[0] if isinstance(address, tuple) and address else None
        refused = COUNTS.admit(None if self.xheaders else ip)
        if refused:
            connection.close()
            CONNECTION_LOG.say(str(ip), f"connection from {ip} closed: {refused}")
            return
        if self.ssl_options is not None:  # TLS: Tornado's own stream (counted, never released early: rarely used)
            COUNTS.release(None if self.xheaders else ip)
            return super()._handle_connection(connection, address)
        stream = LabStream(connection, max_buffer_size=self.max_buffer_size, read_chunk_size=self.read_chunk_size)
        stream._address, stream._counted = (None if self.xheaders else ip), True
        self.handle_stream(stream, address)

    def add_sockets(self, sockets) -> None:
        for sock in sockets:
            self._sockets[sock.fileno()] = sock
            self._handlers[sock.fileno()] = _accept_handler(sock, self._handle_connection)


#: accept()'s errors that mean "out of files or memory for now": pause, do not raise at every pass of the loop
PAUSE_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def _accept_handler(sock: socket.socket, callback):
    """Tornado's ``netutil.add_accept_handler`` (6.x, the same batches of accepts), but an accept failing for want of
    files pauses accepting for :data:`ACCEPT_PAUSE_S` with one rate-limited line. Returns the remover."""
    io_loop = IOLoop.current()
    state = {"removed": False, "paused": False}

    def resume() -> None:
        if not state["removed"] and state["paused"]:
            state["paused"] = False
            io_loop.add_handler(sock, handler, IOLoop.READ)

    def handler(fd, events) -> None:
        for _ in range(128):
            if state["removed"] or state["paused"]:
                return
            try:
                connection, address = sock.accept()
            except BlockingIOError:
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno not in PAUSE_ERRNOS:
                    raise
                state["paused"] = True
                io_loop.remove_handler(sock)
                io_loop.call_later(ACCEPT_PAUSE_S, resume)
                CONNECTION_LOG.say("", f"accepting paused for {ACCEPT_PAUSE_S:g} s: {exc.strerror} "
                                       f"({COUNTS.open} connections open)")
                return
            callback(connection, address)

    def remove() -> None:
        if not state["paused"]:
            io_loop.remove_handler(sock)
        state["removed"] = True

    io_loop.add_handler(sock, handler, IOLoop.READ)
    return remove


def log_request(handler) -> None:
    """The application's access log (``log_function``): Tornado's line, the URL cut to :data:`LOGGED_URL_CHARS`,
    through :data:`ACCESS_LOG`'s per-address bucket."""
    status = handler.get_status()
    request = handler.request
    uri = request.uri or ""
    if len(uri) > LOGGED_URL_CHARS:
        uri = f"{uri[:LOGGED_URL_CHARS]}... ({len(uri):,} characters)"
    level = logging.INFO if status < 400 else logging.WARNING if status < 500 else logging.ERROR
    line = f"{status} {request.method} {uri} ({request.remote_ip}) {1000.0 * request.request_time():.2f}ms"
    ACCESS_LOG.say(str(request.remote_ip), line, level)


class _TornadoConnectionLines(logging.Filter):
    """Tornado's lines about one client's connection (an unsatisfiable read, a malformed message), through the
    per-address bucket instead of one per connection."""

    PREFIXES = ("Unsatisfiable read", "Malformed HTTP message")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(self.PREFIXES):
            return True
        CONNECTION_LOG.say("tornado", message[:LOGGED_URL_CHARS], record.levelno)
        return False


def install_connection_guard() -> tuple[int, int]:
    """Raise the open-file limit, size :data:`COUNTS` from it, have Bokeh build :class:`LabHTTPServer`s and route
    Tornado's per-connection lines through the bucket; ``(soft, hard)`` open-file limits."""
    global COUNTS
    from bokeh.server import server

    limits = raise_open_files()
    COUNTS = ConnectionCounts()
    server.HTTPServer = LabHTTPServer
    if not any(isinstance(f, _TornadoConnectionLines) for f in gen_log.filters):
        gen_log.addFilter(_TornadoConnectionLines())
    return limits
