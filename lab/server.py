"""``python -m grpo_lab.server APP [panel serve options]``: ``panel serve`` plus the lab's HTTP hardening.

It takes ``panel serve``'s command line (``grpo-lab serve`` and the Dockerfile build it), plus the lab's admission
flags (:data:`ADMISSION_FLAGS`: ``--max-sessions-per-address``, ``--max-sessions-per-visitor``,
``--new-sessions-per-second``, ``--new-sessions-burst``, ``--idle-minutes``) and the class link's
(:data:`CLASS_FLAGS`: ``--class N``, ``--class-hours H``), and adds:

* **A class link** (:mod:`grpo_lab.classroom`): with ``--class N`` it prints, once it listens, the lab's URL with a
  ``class=`` key signed with the server's secret (``GRPO_LAB_CLASS_SECRET``, or random at start): its holders are
  admitted by a room of N rather than by their address.
* **Connection floods outlasted** (:mod:`grpo_lab.connection_guard`): the open-file limit raised and said at start,
  connections capped in all and per address below it, headers and bodies on deadlines, headers past a browser's on a
  few connections at once, accepts paused when out of files, the access log rate-limited per address.

* **Fair to every visitor** (:mod:`grpo_lab.admission`): per-address limits on new pages per second and on open
  sessions (HTTP 429 and a short page of the lab's, no session built), the visitor cookie ``grpo_lab_visitor``,
  idle pages released after ``--idle-minutes``, and a too-long URL answered with HTTP 414 and a short page
  rather than a reset connection (the server reads request headers up to ``admission.MAX_HEADER_BYTES``).
* **Only the lab's own components** from Panel's ``/components/<module>/...`` route
  (:class:`grpo_lab.components.LabComponents`): a module name that is not already imported in the lab's
  packages gets 404, with no import.

* **Security headers on every response** (a Tornado output transform, :class:`SecurityHeaders`):
  :data:`CONTENT_SECURITY_POLICY` (with the page's own websocket origin filled in),
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``.
  The policy lets the page load nothing from another host (scripts, styles, images, fonts, fetches and
  websockets: ``'self'`` only) and forbids inline event handlers (``script-src-attr 'none'``), so markup
  smuggled into the page could neither run ``onerror=`` / ``onload=`` handlers nor call out. What Panel 1.9
  and Bokeh 3.9 need, and so allow: inline ``<script>`` elements (the page's document and its start-up call
  are inline, with a per-session token, so no fixed hash covers them: ``'unsafe-inline'``), ``eval``
  (Bokeh's ``CustomJS`` and Panel's ESM components compile their code in the browser: ``'unsafe-eval'``),
  ``blob:`` scripts (Panel imports an ESM component's module, such as the lab's grid, from a ``blob:`` URL the
  page itself made, and fetches it first: ``connect-src`` too; no host can serve one), inline styles, and
  ``data:``/``blob:`` images (canvas pictures, icons). ``frame-ancestors`` is not set:
  ``?embed=true`` is meant for other sites' iframes.
* **A cheap health endpoint**, :data:`HEALTH_PATH`: ``200 {"ok": true}`` from the server's event loop,
  without building a session (the Dockerfile's HEALTHCHECK uses it).
* **Memory given back after a room leaves** (:mod:`grpo_lab.memory`): run as ``python -m grpo_lab.server`` it
  restarts itself once with the C library's allocator (``PYTHONMALLOC=malloc`` and a fixed threshold for large
  blocks, :func:`with_allocator`), and the
  app releases free memory to the system after sessions are destroyed. Closed sessions are looked for every
  :data:`CHECK_UNUSED_SESSIONS_MS` (Bokeh's default is 17 s) and destroyed once unused for Bokeh's 15 s, so a
  room's memory is back about 20 s after it left (``--check-unused-sessions`` still overrides).
* **The lab warmed before serving** (:func:`warm`): serving the lab's ``app.py``, the process imports the lab
  and builds one page, in no session, before it starts (and forks its ``--num-procs`` workers): the modules and
  process-wide caches every visit needs are there from the start rather than arriving with the first
  visitor, so the server's memory after its start is its steady state and each worker starts with them.
* **Workers that end with the server**: with ``--num-procs`` > 1 Tornado forks the workers and the first process
  only waits on them; stopped with ``kill PID`` (SIGTERM) it ended alone and left the workers serving. Each
  worker now asks Linux to send it SIGTERM when the process that forked it ends (:func:`die_with_parent`),
  and stops as Bokeh stops on SIGTERM.
* **Quiet closed sockets**: a visitor who closes the tab while the server is sending to it made Tornado
  log "Task exception was never retrieved" and a traceback (``WebSocketClosedError``); the event loop's
  exception handler (:func:`quiet_closed_sockets`) turns that into one info line. Other errors are
  logged as before.
* **A client cannot make the server talk** (:mod:`grpo_lab.socket_guard`, put in by :func:`grpo_lab.admission.install`):
  a websocket that talks out of turn or sends what the protocol has not is closed with one log line at most, an
  address's lines rate-limited, no traceback; Bokeh's per-connection log lines are silenced.

Both are also importable for other servers: ``ROUTES`` (``panel serve --plugins grpo_lab.server`` adds the
health route alone) and :class:`SecurityHeaders` (Tornado ``transforms=[SecurityHeaders]``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
import time
from pathlib import Path

from tornado import web
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

__all__ = ["CONTENT_SECURITY_POLICY", "content_security_policy", "HEALTH_PATH", "SECURITY_HEADERS", "SecurityHeaders",
           "HealthHandler",
           "ROUTES", "quiet_closed_sockets", "main", "with_allocator", "warm", "die_with_parent",
           "CHECK_UNUSED_SESSIONS_MS", "ADMISSION_FLAGS", "parse_limits", "CLASS_FLAGS", "parse_class",
           "class_link", "SocketNoticeHandler"]

_log = logging.getLogger("grpo_lab.server")

#: the page's Content-Security-Policy, ``{websocket}`` standing for the page's own websocket origins (see the
#: module docstring for why each source is there; :func:`content_security_policy` fills it in)
CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval' blob:",
    "script-src-attr 'none'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self' blob: {websocket}",
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
])

#: headers added to every response besides the policy
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def content_security_policy(host: str) -> str:
    """The policy for a page served as ``host`` (the request's Host): its websocket is ``ws(s)://host``.

    ``'self'`` covers a same-origin websocket in current Chromium and Firefox, but not in every browser
    (older Safari); naming it costs nothing. A forged Host only changes the forger's own response.
    """
    host = "".join(c for c in str(host) if c.isalnum() or c in ".-:[]")  # a header value: no spaces, no ';'
    return CONTENT_SECURITY_POLICY.format(websocket=f"ws://{host} wss://{host}" if host else "")

HEALTH_PATH = "/health"  #: answers 200 without building a session
#: how often the server looks for closed sessions to destroy (ms); each is destroyed once unused for Bokeh's
#: ``--unused-session-lifetime`` (15 s), and its room's memory released then (grpo_lab.memory)
CHECK_UNUSED_SESSIONS_MS = 5000


class SecurityHeaders(web.OutputTransform):
    """Adds :data:`SECURITY_HEADERS` to every response (a Tornado output transform).

    It also installs :func:`quiet_closed_sockets` on the serving process's event loop at its first
    request: with ``--num-procs`` > 1 the processes are forked after the server is configured, and
    a loop must not be touched before the fork.
    """

    def __init__(self, request):
        super().__init__(request)
        self.policy = content_security_policy(getattr(request, "host", ""))
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() is not quiet_closed_sockets:
            loop.set_exception_handler(quiet_closed_sockets)

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        headers.setdefault("Content-Security-Policy", self.policy)
        for name, value in SECURITY_HEADERS.items():
            headers.setdefault(name, value)
        return status_code, headers, chunk


class SocketNoticeHandler(web.RequestHandler):
    """``GET`` :data:`grpo_lab.admission.SOCKET_NOTICE_PATH`: ``lab/static/socket_refused.js``, the script every
    page loads first (a websocket refused at its handshake shows a notice and the page tries again)."""

    SCRIPT = (Path(__file__).with_name("static") / "socket_refused.js").read_bytes()

    def get(self) -> None:
        self.set_header("Content-Type", "text/javascript; charset=utf-8")
        self.set_header("Cache-Control", "public, max-age=3600")
        self.write(self.SCRIPT)


class HealthHandler(web.RequestHandler):
    """``GET /health``: ``{"ok": true}`` once the event loop answers; no Bokeh session is made."""

    def get(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.write({"ok": True})


def say(line: str) -> None:
    """Write one line to stderr in one call, then flush: ``print`` writes the text and its newline apart, and a log
    line another thread writes between the two (Bokeh's "app running at") lands on the same line."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _routes():
    from grpo_lab.admission import SOCKET_NOTICE_PATH

    return [(HEALTH_PATH, HealthHandler), (SOCKET_NOTICE_PATH, SocketNoticeHandler)]


ROUTES = _routes()


def quiet_closed_sockets(loop, context: dict) -> None:
    """An asyncio exception handler: a send to a page that has closed is one info line, not a traceback."""
    if isinstance(context.get("exception"), (WebSocketClosedError, StreamClosedError)):
        _log.info("a page closed while the server was sending to it; message dropped")
        return
    loop.default_exception_handler(context)


def _serve_command():
    """Panel's ``serve`` subcommand, with the transform and the health route added to the server's options."""
    from panel.command.serve import Serve

    from grpo_lab.admission import install
    from grpo_lab.components import lab_routes
    from grpo_lab.connection_guard import HTTP_SERVER_OPTIONS, install_connection_guard, log_request

    class LabServe(Serve):
        limits = None  #: the admission limits (grpo_lab.admission.Limits); set by main()
        secret = None  #: the class links' secret (grpo_lab.classroom), or None
        class_key = None  #: the key printed in the class link (``--class N``), or None
        open_files = None  #: (soft, hard) open-file limits once raised

        def customize_kwargs(self, args, server_kwargs):
            kwargs = super().customize_kwargs(args, server_kwargs)
            kwargs["extra_patterns"] = [*lab_routes(kwargs.get("extra_patterns", [])), *ROUTES]
            self.open_files = install_connection_guard()
            kwargs["http_server_kwargs"] = {**kwargs.get("http_server_kwargs", {}), **HTTP_SERVER_OPTIONS}
            kwargs["log_function"] = log_request
            if self.limits is not None:
                install(self.limits, self.secret)
            kwargs["transforms"] = [*kwargs.get("transforms", []), SecurityHeaders]
            if args.check_unused_sessions is None:
                kwargs["check_unused_sessions_milliseconds"] = CHECK_UNUSED_SESSIONS_MS
            return kwargs

        def customize_server(self, server):
            """Say where the lab is once its socket listens (the first process only, with ``--num-procs`` > 1)."""
            from tornado.process import task_id

            server = super().customize_server(server)
            if task_id() in (None, 0) and server.port:
                from grpo_lab import connection_guard as guard

                host = server.address or "localhost"
                if host in ("0.0.0.0", "::"):  # every interface: the machine's name is what others type
                    import socket

                    host = socket.gethostname()
                apps = sorted(p for p in server._tornado.app_paths if p != "/") or ["/"]
                url = f"http://{host}:{server.port}{apps[0]}"
                say(f"grpo-lab: serving the lab at {url} (Ctrl-C to stop)")
                if self.class_key is not None:
                    from grpo_lab.classroom import verify

                    key = verify(self.class_key, self.secret)
                    until = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.expires))
                    say(f"grpo-lab: class link for {key.size} (until {until} UTC): {url}?class={self.class_key}")
                soft, hard = self.open_files or (0, 0)
                say(f"grpo-lab: open files: {soft} (hard limit {'unlimited' if hard < 0 else hard}); connections: "
                    f"{guard.COUNTS.total} per process, {guard.COUNTS.per_address} from one address")
            return server

    return LabServe


def main(argv: list[str] | None = None) -> int:
    """Parse ``panel serve``'s arguments and serve with the lab's headers and health route."""
    limits, rest = parse_limits(sys.argv[1:] if argv is None else argv)
    room, rest = parse_class(rest)
    parser = argparse.ArgumentParser(prog="python -m grpo_lab.server",
                                     description="panel serve, with the lab's security headers and /health")
    command = _serve_command()(parser=parser)
    command.limits = limits
    command.secret, command.class_key = class_link(room)
    args = parser.parse_args(rest)
    warm(args.files)
    parent = os.getpid()
    os.register_at_fork(after_in_child=lambda: die_with_parent(parent))  # the --num-procs workers
    command.invoke(args)
    return 0


#: the lab's own flags (option, field of grpo_lab.admission.Limits, type), taken out before panel serve's parser
ADMISSION_FLAGS = [("--max-sessions-per-address", "per_address", int),
                   ("--max-sessions-per-visitor", "per_visitor", int),
                   ("--new-sessions-per-second", "new_per_second", float),
                   ("--new-sessions-burst", "burst", int),
                   ("--idle-minutes", "idle_minutes", float)]


#: the class link's flags (option, what it sets, type, default, help): ``grpo-lab serve`` declares them from here
CLASS_FLAGS = [("--class", "size", int, 0,
                "print a class link for a room of N: its holders are admitted by the room (N browsers, 2 tabs each, "
                "N new pages a minute) rather than by their address; see docs/lab.md (default 0: none)"),
               ("--class-hours", "hours", float, None, "how long the class link lasts (default 4 hours)")]


def parse_class(argv: list[str]):
    """``({size, hours}, the other arguments)``: the :data:`CLASS_FLAGS` in ``argv``."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag, dest, kind, default, _ in CLASS_FLAGS:
        parser.add_argument(flag, dest=dest, type=kind, default=default)
    known, rest = parser.parse_known_args(argv)
    return vars(known), rest


def class_link(room: dict):
    """``(secret, key)``: the class links' secret (:func:`grpo_lab.classroom.class_secret`; None when there is no
    ``--class`` and no ``GRPO_LAB_CLASS_SECRET``: no key is valid) and a new key for ``--class N`` (or None)."""
    from grpo_lab import classroom

    size = room.get("size") or 0
    if not size and not os.environ.get(classroom.SECRET_ENV):
        return None, None
    secret = classroom.class_secret()
    hours = room.get("hours") or classroom.DEFAULT_HOURS
    return secret, (classroom.new_key(size, hours, secret) if size else None)


def parse_limits(argv: list[str]):
    """``(Limits, the other arguments)``: the :data:`ADMISSION_FLAGS` in ``argv`` over the defaults."""
    from dataclasses import replace

    from grpo_lab.admission import DEFAULT_LIMITS

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag, field, kind in ADMISSION_FLAGS:
        parser.add_argument(flag, dest=field, type=kind, default=getattr(DEFAULT_LIMITS, field))
    known, rest = parser.parse_known_args(argv)
    return replace(DEFAULT_LIMITS, **vars(known)), rest


#: what a visitor's first use of a tab imports (the tabs built when first opened; the upload readers' pool)
FIRST_USE_MODULES = ("grpo_lab.replay.view", "grpo_lab.views.samplers", "grpo_lab.replay.upload_pool")


def warm_first_use() -> None:
    """Before the workers fork: import :data:`FIRST_USE_MODULES` and start multiprocessing's resource tracker
    (a process that each upload reader's ``spawn`` otherwise starts at the first upload, in every server process),
    so that what a first upload leaves for good is part of the server's memory at its start, shared by its
    processes, not growth after the first visitors' uploads (issue #25: 1.21x a cold start 60 s after they left)."""
    import importlib
    from multiprocessing import resource_tracker

    for name in FIRST_USE_MODULES:
        importlib.import_module(name)
    resource_tracker.ensure_running()


def die_with_parent(parent: int) -> bool:
    """In a process forked by ``parent``: have Linux send it SIGTERM when ``parent`` ends (``prctl``'s
    ``PR_SET_PDEATHSIG``); if ``parent`` has already ended, send it now. Whether it could be asked (Linux only)."""
    import ctypes
    import ctypes.util
    import signal

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(1, int(signal.SIGTERM), 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent ended before the request was made
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def warm(files: list[str]) -> bool:
    """If ``files`` (the apps to serve) include the lab's ``app.py`` (or a copy of it): import the lab and build one
    default page in a document of its own (no session, no event loop, no thread), then let it go; whether it did.

    What stays is process-wide: the modules, Bokeh's and Panel's model classes, the caches of values that
    depend on no session (:mod:`grpo_lab.memo`). It is then moved out of the garbage collector's sight
    (``gc.freeze``, as Python's documentation advises before forking workers): about 180,000 objects that a
    full collection, such as the one releasing a room's memory, would otherwise walk every time (0.3 s of CPU
    each, measured under load; almost nothing once frozen), and whose pages a collection in a worker no
    longer writes to (fewer of them copied after the fork). Any other app is served as it is.
    """
    from grpo_lab.commands.serve import APP_PATH

    if not any(_is_lab_app(f, APP_PATH) for f in files or []):
        return False
    from bokeh.document import Document
    from panel.io.state import state

    from grpo_lab.app import build_app
    from grpo_lab.memory import release

    warm_first_use()
    page = build_app({})
    root = page.get_root(Document())
    page._cleanup(root)  # Panel's own teardown of a root, and its entry in the table of shown views
    state._views.pop(root.ref["id"], None)
    del page, root
    release()
    gc.freeze()  # what is left lives as long as the process: no collection walks it again (see above)
    return True


def _is_lab_app(path: str, app: os.PathLike) -> bool:
    """Whether ``path`` is the lab's ``app.py``: that file, or a copy of it (the Dockerfile serves the copy in its
    working folder, the package's own being installed elsewhere)."""
    try:
        return os.path.realpath(path) == os.path.realpath(app) or Path(path).read_bytes() == Path(app).read_bytes()
    except OSError:
        return False


def with_allocator(argv: list[str]) -> None:
    """Run this server again under :data:`grpo_lab.memory.ALLOCATOR_ENV` (replacing the process, so the same
    process id serves): the allocator is chosen when the interpreter starts. A variable the environment sets
    already (``PYTHONMALLOC=pymalloc``, say) is kept; the others are added. Nothing to add: no restart."""
    from grpo_lab.memory import ALLOCATOR_ENV

    missing = {k: v for k, v in ALLOCATOR_ENV.items() if k not in os.environ}
    if not missing:
        return
    os.execve(sys.executable, [sys.executable, "-m", "grpo_lab.server", *argv], {**os.environ, **missing})


if __name__ == "__main__":
    with_allocator(sys.argv[1:])
    sys.exit(main())
