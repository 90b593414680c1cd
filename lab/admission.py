"""Admission control for the lab's server: no one address, tab or flood of sessions starves the others.

``python -m grpo_lab.server`` (``grpo-lab serve``) puts the lab's page, websocket and component routes behind
the checks below (:func:`install`, which swaps Bokeh's/Panel's per-app handlers for the subclasses here).

* **New pages per second, per address** (a token bucket, :class:`TokenBucket`): each page request
  (``GET /app``, Bokeh's ``autoload.js``) takes one token from its address's bucket, which holds at most
  ``burst`` tokens and refills at ``new_per_second``. Without a token the request gets HTTP 429 and a short
  page of the lab's ("too many new pages at once from this address"; the page asks again by itself after
  :data:`RETRY_S` seconds), and no session is built: Bokeh builds a session on the page request (or, with ``--reuse-sessions``, on the websocket the
  page opens), so refusing the page refuses the work.
* **New sessions per second, per address, for websockets alone**: a websocket that names a session the process does
  not have (it would be built for it) takes a token from a second bucket of the address, of the same size
  (:meth:`Admission.admit_build`); without one it is refused at its handshake (HTTP 429). A page's own websocket
  finds its token (the page took one of the other bucket), but a client that opens websockets without pages, as
  Bokeh's own ``bokeh.client.pull_session`` does (a session id of its own making), passed the page bucket
  entirely: 100 such sessions at once were all built (issue #35).
* **Open sessions, per address and per visitor**: a page's websocket is its open session. A page request
  from an address (or a visitor) that already has ``per_address`` (``per_visitor``) websockets open gets
  HTTP 429 and "too many open tabs from this address; close some and reload"; a websocket over the cap is
  refused at its handshake (HTTP 429), before any session is built.
* **Turns by address** (:class:`FairGate`): building a session, rendering a page and serializing a session's
  document for its page (the websocket's first request, ``PULL-DOC-REQ``) each take the server's event loop for
  a while, so at most :data:`BUILD_SLOTS` of them are under way at once in a process, and the page
  requests and websockets waiting for one are served address by address in turn (round robin), within an
  address browser by browser (the visitor cookie), each one's own in the order they came; an address new to the
  queue goes first, and :data:`PASSES` passes of the event loop separate two turns, queued or not (a request just
  read reaches the gate before the next build starts); while one address floods, another address's next request
  (its websocket, its document) is waited for up to :data:`FOLLOW_S` after its turn and goes first. A flood from one
  address then waits behind itself: a visitor from another address waits for at most the builds under way and one
  of each other waiting address, not for the whole flood.
* **The visitor cookie** :data:`VISITOR_COOKIE` (``grpo_lab_visitor``): a random token set on every page
  response of a request that has none (``HttpOnly``, ``SameSite=Lax``, ``Path=/``). A visitor is that
  cookie; with no cookie (a script), the address alone counts. Other parts of the lab key per-visitor
  quotas by it: read ``pn.state.curdoc.session_context.request.cookies`` (the websocket's request carries it).
* **Idle sessions released**: a page that has sent the server no message for ``idle_minutes`` has its
  websocket closed (code :data:`IDLE_CLOSE_CODE`), so Bokeh destroys its session about 20 s later and its
  memory goes back. Every session's page shows :data:`CLOSED_NOTICE` when its connection is lost
  (:func:`notice_on_disconnect`, a ``connection_lost`` callback of the document): it can reload.
* **No visitor holds the page template** (:func:`_page_template`): with ``--reuse-sessions`` Panel renders pages from
  one session per process, kept for good; it is built from the bare request (no query, cookie or header) before
  the first visitor's page, and keyed by the app's path alone, so every visitor's session is its own and is
  destroyed after its tab closes (the first visitor's used to be that template: its upload stayed for good).
* **Too-long addresses**: Tornado resets a connection whose request line and headers exceed 64 KB
  (Chromium's own limit on a URL is 2 MB); the server reads up to :data:`MAX_HEADER_BYTES` and a page
  request whose URL is longer than :data:`MAX_URL_CHARS` gets HTTP 414 and a short page with a link to the
  lab without the query, instead of a reset connection.

* **A class link's holders** (:mod:`grpo_lab.classroom`): a page request with a valid ``class=`` key, or a request
  carrying the key's cookie (the page's websocket, a reload), is admitted by the key's room (its places, open tabs
  and buckets) instead of by the address's caps and buckets, and waits its turns at the gate in the room's queue; a
  ``class=`` key that is not valid or has expired gets the lab's short page saying so (403 / 410), nothing held. A
  stale or forged class cookie is no key: the address's limits apply. A room's counts are the one limit shared by
  the ``--num-procs`` processes (:class:`grpo_lab.classroom.Ledger`): a room of N admits N in all.
* **Every page loads** :data:`SOCKET_NOTICE_PATH` first (``lab/static/socket_refused.js``): a page whose websocket is
  refused (429 at its handshake) says so and tries again, rather than staying blank.

Client = the request's ``remote_ip`` (behind a proxy, serve with ``--use-xheaders`` so that it is the
visitor's address). The defaults (:data:`DEFAULT_LIMITS`) fit a classroom of 30 behind one school NAT on
2 cores: 30 pages at once from one address pass the burst, 60 tabs may stay open from one address, 12 from
one browser. **All limits are per server process** (a class link's room aside): with ``--num-procs 2`` an address
may get up to twice as much, spread over the two processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import html
import logging
import secrets
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from tornado import web

from grpo_lab.connection_guard import MAX_HEADER_BYTES  # what the server reads of a request's line and headers
from grpo_lab.socket_guard import gone, quiet_bokeh_socket_logs
from grpo_lab.token_bucket import TokenBucket, bucket_for

__all__ = ["VISITOR_COOKIE", "Limits", "DEFAULT_LIMITS", "TokenBucket", "Admission", "install", "MAX_URL_CHARS",
           "MAX_HEADER_BYTES", "IDLE_CLOSE_CODE", "CLOSED_NOTICE", "notice_on_disconnect", "error_page", "FairGate",
           "BUILD_SLOTS", "PASSES", "LISTEN_BACKLOG", "SOCKET_NOTICE_PATH"]

_log = logging.getLogger("grpo_lab.admission")

VISITOR_COOKIE = "grpo_lab_visitor"  #: the visitor's cookie: a random token, HttpOnly, SameSite=Lax, Path=/
MAX_URL_CHARS = 16_384  #: a page request with a longer URL gets HTTP 414 and the lab's short page
BUILD_SLOTS = 1  #: sessions built (or pages rendered) at once in one process (2 cores, 2 processes); the others wait their turn
PASSES = 16  #: event-loop passes between one turn of the gate and the next (requests just read reach the gate first)
FOLLOW_S = 0.15  #: after an address's turn, how long the slot waits for its next request while a flood waits (s)
BACKLOG = 8  #: requests of one address waiting for the gate that make it a flood (others' turns are then followed)
ROOM_TURN_PREFIX = "class:"  #: the gate's turn key of a class's room is this and the room's name
ROOM_TURNS = 4  #: turns in a row a class's room takes at the gate before the next address's (an address takes one)
LISTEN_BACKLOG = 1024  #: connections the kernel queues for the server before it accepts them (Tornado's 128 overflowed in a flood)
SOCKET_NOTICE_PATH = "/grpo-lab/socket-refused.js"  #: lab/static/socket_refused.js, put first in every page's <head>
IDLE_CLOSE_CODE = 4000  #: the websocket close code of an idle page released
IDLE_CHECK_S = 30.0  #: how often each process looks for idle pages (s); at most the idle time itself
CLOSED_NOTICE = ("This page has lost its connection to the lab's server (it was left idle for a while, or the "
                 "server stopped). Reload the page to continue.")


@dataclass(frozen=True)
class Limits:
    """The operator's knobs (``grpo-lab serve --help``), per server process."""

    per_address: int = 60  #: open sessions (websockets) from one address: a class of 30 behind one NAT, 2 tabs each
    per_visitor: int = 12  #: open sessions from one browser (the visitor cookie)
    new_per_second: float = 10.0  #: new pages per second from one address, sustained
    burst: int = 30  #: new pages at once from one address (a class arriving together)
    idle_minutes: float = 30.0  #: a page with no message for this long is released; 0: never


DEFAULT_LIMITS = Limits()


class FairGate:
    """At most ``slots`` holders at once; waiters are served address by address in turn (round robin), within an
    address visitor by visitor in turn, FIFO within a visitor.

    ``async with gate.turn(address, visitor): ...``. A released slot goes to the next waiter, or is free again, only
    after :data:`PASSES` passes of the event loop (the count of holders does not drop in between), whether or not
    anyone waits, so that requests just read off the network reach the gate before it is handed on: a newcomer's
    request is queued before the flood's next build starts, not after several of them. (A build never yields to
    the loop: when the slot was freed at once with nobody queued, the flood's requests ready in the same pass took
    it one after the other, none ever queued, and the loop read nothing new until the whole batch was built.) The next waiter is taken from the address at the front
    of the rotation (which then moves to the back), and in it from its visitor at the front; an address (or a
    visitor) with nobody waiting that joins comes to the front, ahead of those already waiting (it had no turn
    among them). A turn taken inside a turn (the same task: a page request building its session) is the outer one's.

    While one address floods (:data:`BACKLOG` or more of its requests waiting), the turn of another address with
    nobody else waiting is *followed*: the slot waits up to ``follow_s`` (:data:`FOLLOW_S`) for that address's next
    request (a page's websocket follows its page, its document request follows its session), which then goes first.
    Otherwise a newcomer's three steps each arrived just after the flood's next build had started, and waited for
    it; the flood alone pays for the wait, at most ``follow_s`` per turn of another address.

    ``weight(key)`` (default 1): the turns in a row a key takes, while it has waiters, before the rotation moves on
    (weighted round robin). A class's room, one key for its whole class (:func:`_turn_key`), takes
    :data:`ROOM_TURNS`: a class of 150 behind one address's flood of page requests otherwise built one session for
    each of the flood's, and arrived at half the server's pace (median 18.9 s to interactive during a flood, 0.37 s
    without); any other address still waits at most that many of the room's builds.
    """

    def __init__(self, slots: int = BUILD_SLOTS, passes: int = 0, follow_s: float = 0.0, weight=None):
        self.slots, self.busy, self.passes, self.follow_s = slots, 0, passes, follow_s
        self.weight = weight or (lambda key: 1)
        self.streak = (None, 0)  #: (key, turns it has taken in a row)
        self.following = None  #: (address, timer) while the slot is held for that address's next request
        self.queues: OrderedDict[str, OrderedDict[str, deque]] = OrderedDict()
        self.holding = contextvars.ContextVar(f"holding_{id(self)}", default=False)

    @contextlib.asynccontextmanager
    async def turn(self, key: str, visitor: str | None = None):
        if self.holding.get():
            yield
            return
        if self.busy < self.slots and not self.queues:
            self.busy += 1
        else:
            waiter = asyncio.get_running_loop().create_future()
            self._enqueue(key, visitor or "", waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._release()  # handed a slot just as it was cancelled: pass it on
                else:
                    self._drop(key, visitor or "", waiter)
                raise
        mark = self.holding.set(True)
        try:
            yield
        finally:
            self.holding.reset(mark)
            self._release(None, key)

    def _enqueue(self, key: str, visitor: str, waiter) -> None:
        visitors = self.queues.get(key)
        if visitors is None:
            visitors = self.queues[key] = OrderedDict()
            self.queues.move_to_end(key, last=False)  # a newcomer's turn comes first
        if visitor not in visitors:
            visitors[visitor] = deque()
            visitors.move_to_end(visitor, last=False)
        visitors[visitor].append(waiter)
        if self.following is not None and self.following[0] == key:  # the follow-up came: it goes first
            self.following[1].cancel()
            self._hand_on()

    def _drop(self, key: str, visitor: str, waiter) -> None:
        visitors = self.queues.get(key)
        queue = visitors.get(visitor) if visitors is not None else None
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del visitors[visitor]
            if not visitors:
                del self.queues[key]

    def _release(self, left: int | None = None, key: str | None = None) -> None:
        left = self.passes if left is None else left
        if left > 0:  # even with nobody waiting: a build runs without yielding, so the flood's next request,
            # ready in the same pass of the loop, would otherwise take the slot before the loop reads anyone new
            asyncio.get_running_loop().call_soon(self._release, left - 1, key)
            return
        if key is not None and self._backlog_elsewhere(key):
            self.following = (key, asyncio.get_running_loop().call_later(self.follow_s, self._hand_on))
            return
        self._hand_on()

    def _backlog_elsewhere(self, key: str) -> bool:
        """Whether to hold the slot for ``key``'s next request (:data:`FOLLOW_S`): ``key`` has nobody waiting and the
        address next in turn has :data:`BACKLOG` or more waiting (a flood)."""
        if self.follow_s <= 0 or not self.queues or key in self.queues:
            return False
        _, visitors = next(iter(self.queues.items()))
        return sum(len(q) for q in visitors.values()) >= BACKLOG

    def _hand_on(self) -> None:
        """Give the slot to the next waiter in turn, or free it."""
        self.following = None
        while self.queues:
            key, visitors = next(iter(self.queues.items()))
            visitor, queue = next(iter(visitors.items()))
            waiter = queue.popleft()
            if queue:
                visitors.move_to_end(visitor)  # this visitor's next waiter comes after every other visitor's
            else:
                del visitors[visitor]
            taken = self.streak[1] + 1 if self.streak[0] == key else 1
            if visitors and taken < self.weight(key):
                self.streak = (key, taken)  # its next waiter goes next too: its weight's turns in a row
            elif visitors:
                self.queues.move_to_end(key)  # this address's next waiter comes after every other address's
                self.streak = (None, 0)
            else:
                del self.queues[key]
                self.streak = (None, 0)
            if not waiter.done():
                waiter.set_result(None)
                return
        self.busy -= 1


TOO_MANY_NEW = "Too many new pages at once from this address; this page will try again in a few seconds."
RETRY_S = 3  #: a page refused for the rate of new pages asks again after this long
TOO_MANY_OPEN = "Too many open tabs from this address; close some of them, then reload."
TOO_MANY_MINE = "Too many open tabs in this browser; close some of them, then reload."


class Admission:
    """One process's counts: buckets and open websockets by address, open websockets by visitor."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, clock=time.monotonic, secret: bytes | None = None,
                 wall=time.time):
        self.limits, self.clock, self.wall = limits, clock, wall
        self.secret = secret  #: the class links' secret (grpo_lab.classroom); None: no class link is valid
        self.rooms: dict = {}  #: room name -> grpo_lab.classroom.Room (this process's handles on the ledger's rooms)
        self.ledger = None  #: the rooms' counts, shared by the processes forked after this (grpo_lab.classroom.Ledger)
        if secret is not None:
            from grpo_lab.classroom import Ledger

            self.ledger = Ledger(wall=lambda: self.wall())
        self.gate = FairGate(passes=PASSES, follow_s=FOLLOW_S, weight=room_turns)  #: the turns of session builds and page renders (used in the event loop only)
        self.buckets: dict[str, TokenBucket] = {}  #: new pages, by address
        self.build_buckets: dict[str, TokenBucket] = {}  #: sessions built for a websocket, by address
        self.open_by_address: dict[str, int] = {}
        self.open_by_visitor: dict[str, int] = {}
        self.sockets: set = set()  #: the open lab websockets (their handlers), for the idle check

    def over_cap(self, address: str, visitor: str | None) -> str | None:
        """Why a new session from ``address`` / ``visitor`` is refused for the open ones, or None."""
        if self.open_by_address.get(address, 0) >= self.limits.per_address:
            return TOO_MANY_OPEN
        if visitor and self.open_by_visitor.get(visitor, 0) >= self.limits.per_visitor:
            return TOO_MANY_MINE
        return None

    def admit_page(self, address: str, visitor: str | None) -> str | None:
        """A page request: why it is refused, or None (then one token of the address's bucket is taken)."""
        return self.over_cap(address, visitor) or self._take(self.buckets, address)

    def admit_build(self, address: str, visitor: str | None) -> str | None:
        """A websocket whose session does not exist yet (it would be built for it): why it is refused, or None
        (then one token of the address's bucket of builds is taken). Pages and builds have buckets of their own, of
        the same size: a page admitted finds a token for its own websocket's build (``--reuse-sessions``: the page
        is rendered from a kept session, the visitor's is built when its websocket arrives) unless the address
        opened websockets without pages, as Bokeh's own client does (``bokeh.client.pull_session``: a session id
        of the client's making), which the page bucket never saw."""
        return self.over_cap(address, visitor) or self._take(self.build_buckets, address)

    def _take(self, buckets: dict, address: str) -> str | None:
        now = self.clock()
        bucket = bucket_for(buckets, address, self.limits.new_per_second, self.limits.burst, now)
        return None if bucket.take(now) else TOO_MANY_NEW

    def class_key(self, text: str | None):
        """The class key ``text`` signs (:func:`grpo_lab.classroom.verify`), or :class:`~grpo_lab.classroom.KeyRefused`."""
        from grpo_lab.classroom import INVALID, KeyRefused, verify

        if self.secret is None:
            raise KeyRefused(INVALID, 403)
        return verify(text, self.secret, self.wall())

    def room(self, key):
        """The room of a verified key (its counts in :attr:`ledger`, made at its first holder in any process);
        this process's handles on rooms whose keys expired are forgotten then."""
        from grpo_lab.classroom import Room

        room = self.rooms.get(key.room)
        if room is None or room.key != key:
            now = self.wall()
            for name in [n for n, r in self.rooms.items() if r.key.expires <= now]:
                del self.rooms[name]
            room = self.rooms[key.room] = Room(key, self.ledger)
        return room

    def admit_class(self, key, visitor: str | None, kind: str) -> str | None:
        """A page (``kind`` "page") or a session build ("build", a websocket naming a session not built yet; None
        for a websocket whose session exists) of a key's holder: why it is refused, or None (then a token of the
        room's ``kind`` bucket is taken). Caps: the room's places, its open pages, the visitor's tabs; never the
        address's. A visitor admitted takes a place (a page without a cookie takes it with the cookie it is given).
        The room's counts are those of every server process (:meth:`grpo_lab.classroom.Room.admit`); the visitor's
        tabs, this process's, like every per-address and per-visitor count."""
        mine = visitor and self.open_by_visitor.get(visitor, 0) >= self.limits.per_visitor
        return self.room(key).admit(visitor, kind, self.clock(), TOO_MANY_MINE if mine else None)

    def opened(self, address: str, visitor: str | None, room=None) -> None:
        if room is not None:  # a class's page counts in its room (all processes), not against its address's cap
            room.opened()
            address = None
        if address is not None:
            self.open_by_address[address] = self.open_by_address.get(address, 0) + 1
        if visitor:
            self.open_by_visitor[visitor] = self.open_by_visitor.get(visitor, 0) + 1

    def closed(self, address: str, visitor: str | None, room=None) -> None:
        if room is not None:  # freed in the room's shared count
            room.closed()
            address = None
        for table, key in ((self.open_by_address, address), (self.open_by_visitor, visitor)):
            if key and key in table:
                table[key] -= 1
                if table[key] <= 0:
                    del table[key]


def error_page(title: str, message: str, link: str = "/", retry_s: int = 0) -> str:
    """A short page of the lab's (no script, no outside resource): ``message`` and a link back to the lab;
    with ``retry_s``, the browser asks again by itself after that many seconds."""
    refresh = f"<meta http-equiv='refresh' content='{int(retry_s)}'>" if retry_s else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>{refresh}<title>grpo-lab: "
            f"{html.escape(title)}</title><meta name='viewport' content='width=device-width,initial-scale=1'>"
            "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em}</style>"
            f"</head><body><h1>grpo-lab</h1><p class='lab-refused'>{html.escape(message)}</p>"
            f"<p><a href='{html.escape(link, quote=True)}'>Open the lab</a></p></body></html>")


def _visitor(handler: web.RequestHandler) -> str | None:
    return _request_visitor(handler.request)


def _request_visitor(request) -> str | None:
    """The visitor cookie of a Tornado request, when it is one the lab could have set (or None)."""
    try:
        morsel = request.cookies.get(VISITOR_COOKIE)
    except Exception:  # no request, or a malformed Cookie header (http.cookies.CookieError)
        return None
    value = morsel.value if morsel is not None else None
    return value if value and len(value) <= 64 and value.isalnum() else None


def _refuse(handler: web.RequestHandler, status: int, title: str, message: str) -> None:
    """Answer ``status`` with the lab's short page; a page refused for the rate retries by itself
    (:data:`RETRY_S`: a class behind one address that arrives faster than the bucket refills gets in)."""
    from grpo_lab.classroom import BUSY

    handler.set_status(status)
    retry = RETRY_S if message in (TOO_MANY_NEW, BUSY) else 0
    if status == 429:
        handler.set_header("Retry-After", str(retry or RETRY_S))
    handler.set_header("Cache-Control", "no-store")
    handler.set_header("Content-Type", "text/html; charset=utf-8")
    handler.finish(error_page(title, message, handler.request.path, retry))


def _page_handler(base, admission: Admission):
    """``base`` (Panel's page or autoload handler) behind the URL length, the bucket and the caps."""

    class AdmittedPage(base):
        async def prepare(self):
            if len(self.request.uri) > MAX_URL_CHARS:
                return _refuse(self, 414, "address too long",
                               f"This address is too long ({len(self.request.uri):,} characters; the lab reads at "
                               f"most {MAX_URL_CHARS:,}). Open the lab without it and set the controls on the page.")
            visitor = _visitor(self)
            key, text, refused = _class_key(self, admission, page=True)
            if refused is not None:
                return _refuse(self, refused.status, "class link", str(refused))
            if key is not None:
                from grpo_lab.classroom import CLASS_COOKIE, refusal_status

                given = visitor or secrets.token_hex(16)  # a first visit takes its place with the cookie it gets
                reason = admission.admit_class(key, given, "page")
                if reason:
                    return _refuse(self, refusal_status(reason), "class link", reason)
                self.request._grpo_lab_turn = f"{ROOM_TURN_PREFIX}{key.room}"
                if text is not None:
                    self.set_cookie(CLASS_COOKIE, text, path="/", httponly=True, samesite="Lax", expires=key.expires)
            else:
                given = None
                reason = admission.admit_page(self.request.remote_ip, visitor)
                if reason:
                    return _refuse(self, 429, "busy", reason)
            if visitor is None:
                self.set_cookie(VISITOR_COOKIE, given or secrets.token_hex(16), path="/", httponly=True,
                                samesite="Lax")
            result = super().prepare()
            if result is not None:
                await result

        def write(self, chunk):
            """The page, with :data:`SOCKET_NOTICE_PATH` loaded first in its ``<head>`` (a page whose websocket is
            refused says so and tries again, rather than staying blank)."""
            html_page = str(self._headers.get("Content-Type", "")).startswith("text/html")  # not autoload.js
            if self.get_status() == 200 and html_page and isinstance(chunk, str) and "<head>" in chunk and \
                    SOCKET_NOTICE_PATH not in chunk:
                chunk = chunk.replace("<head>", f"<head><script src='{SOCKET_NOTICE_PATH}'></script>", 1)
            return super().write(chunk)

        async def get(self, *args, **kwargs):
            async with admission.gate.turn(_turn_key(self.request), _visitor(self)):
                await _page_template(self)
                return await super().get(*args, **kwargs)

    AdmittedPage.__name__ = AdmittedPage.__qualname__ = f"Admitted{base.__name__}"
    return AdmittedPage


def _class_key(handler, admission: Admission, page: bool):
    """``(key, text, refused)`` of a request: the class key of its ``class=`` query argument (a page request only;
    ``text`` is then that argument, and ``refused`` a :class:`~grpo_lab.classroom.KeyRefused` for a key that admits
    no one) or, without one, of its class cookie (a stale or forged cookie is no key: the address's limits apply)."""
    from grpo_lab.classroom import CLASS_COOKIE, KeyRefused

    if page:
        text = handler.get_query_argument("class", None)
        if text is not None:
            try:
                return admission.class_key(text), text, None
            except KeyRefused as exc:
                return None, None, exc
    try:
        morsel = handler.request.cookies.get(CLASS_COOKIE)
    except Exception:  # a malformed Cookie header (http.cookies.CookieError)
        morsel = None
    if morsel is not None and morsel.value:
        try:
            return admission.class_key(morsel.value), None, None
        except KeyRefused:
            pass
    return None, None, None


def room_turns(key: str) -> int:
    """The gate's weight of a turn key (:class:`FairGate`): :data:`ROOM_TURNS` for a class's room, else 1."""
    return ROOM_TURNS if key.startswith(ROOM_TURN_PREFIX) else 1


def _turn_key(request) -> str:
    """Whose turn a request waits for at the gate: its class's room (all its holders in one queue, whatever their
    address), or its address."""
    return getattr(request, "_grpo_lab_turn", None) or getattr(request, "remote_ip", None) or ""


def _template_key(request):
    """The key of the session Panel renders pages from (``--reuse-sessions``): the app's path alone. Panel's own
    key adds the ``theme`` query argument, so each ``?theme=...`` a visitor made up built one more such session,
    kept for good (never expired): memory without bound from plain GETs."""
    return request.path


async def _page_template(handler) -> None:
    """With ``--reuse-sessions``: build the session Panel renders pages from before a visitor's page, from the
    request without its query, cookies and headers, unless it is there already; the visitor then gets a session of
    its own, built when its websocket arrives.

    Panel makes the first page request's session that template and hands the visitor its token: the first visitor
    of each process connected to it, and it is never destroyed, so what that visitor loaded stayed for good after
    the tab closed (an upload at the limit, about 80 MB per process: issue #25, 1.38x a cold start 60 s after the
    tabs closed), and every later visitor's page was rendered from that visitor's document (its title, its
    template)."""
    from panel.config import config
    from panel.io.server import DocHandler
    from panel.io.state import state

    if not config.reuse_sessions or not isinstance(handler, DocHandler):
        return
    request = handler.request
    key_func = state._session_key_funcs.get(request.path)
    if key_func is not None and key_func(request) in state._sessions:
        return
    from tornado.httputil import HTTPHeaders

    fields = ("arguments", "query_arguments", "query", "uri", "headers", "_cookies")  # _cookies: parsed, cached
    saved = {name: request.__dict__[name] for name in fields if name in request.__dict__}
    request.arguments, request.query_arguments, request.query, request.uri = {}, {}, "", request.path
    request.headers = HTTPHeaders({"Host": request.headers.get("Host", "")})
    request.__dict__.pop("_cookies", None)
    try:
        await handler.get_session()  # Panel's: builds it and keeps it as the template of the page's key
    finally:
        request.__dict__.pop("_cookies", None)
        request.__dict__.update(saved)


def _socket_handler(base, admission: Admission):
    """``base`` (Panel's websocket handler) behind the caps, counted while open, released when idle."""

    from grpo_lab.socket_guard import GuardedSocket

    class AdmittedSocket(GuardedSocket, base):
        _counted = False
        _room = None

        async def prepare(self):
            self._address, self._visitor = self.request.remote_ip, _visitor(self)
            key, _, _ = _class_key(self, admission, page=False)
            self._room = admission.room(key) if key is not None else None
            if key is not None:
                reason = admission.admit_class(key, self._visitor, "build" if _builds_session(self) else None)
                self.request._grpo_lab_turn = f"{ROOM_TURN_PREFIX}{key.room}"
            elif _builds_session(self):
                reason = admission.admit_build(self._address, self._visitor)
            else:
                reason = admission.over_cap(self._address, self._visitor)
            if reason:
                return _refuse(self, 429, "busy", reason)
            result = super().prepare()
            if result is not None:
                await result

        def open(self, *args, **kwargs):
            admission.opened(self._address, self._visitor, self._room)
            self._counted, self.last_message = True, admission.clock()
            admission.sockets.add(self)
            _start_idle_check(admission)
            return super().open(*args, **kwargs)

        async def _handle(self, message):
            if message.msgtype != "PULL-DOC-REQ":
                return await super()._handle(message)
            async with admission.gate.turn(_turn_key(self.request), self._visitor):  # the whole document serialized for the page
                reply = await super()._handle(message)
                if reply is not None and hasattr(reply, "content_json"):
                    reply.content_json  # noqa: B018 (encoded now, in the turn, and kept: the send only writes it)
                return reply

        async def on_message(self, fragment):
            self.last_message = admission.clock()
            return await super().on_message(fragment)

        def on_close(self):
            if self._counted:
                self._counted = False
                admission.sockets.discard(self)
                admission.closed(self._address, self._visitor, self._room)
            return super().on_close()

    AdmittedSocket.__name__ = AdmittedSocket.__qualname__ = f"Admitted{base.__name__}"
    return AdmittedSocket


def _builds_session(handler) -> bool:
    """Whether the websocket request of ``handler`` names a session this process does not have (it would build
    one): the session id of the token in its ``Sec-WebSocket-Protocol`` header (``bokeh, TOKEN``); a header
    that names none counts as a build (Bokeh refuses it after the handshake anyway)."""
    from bokeh.util.token import get_session_id

    parts = [p.strip() for p in handler.request.headers.get("Sec-WebSocket-Protocol", "").split(",")]
    try:
        session_id = get_session_id(parts[1]) if len(parts) == 2 else ""
    except Exception:  # noqa: BLE001: a token that is not one
        return True
    context = getattr(handler, "application_context", None)
    return not session_id or context is None or session_id not in getattr(context, "_sessions", {})


def release_idle(admission: Admission) -> int:
    """Close the websockets of pages with no message for ``idle_minutes``; how many were closed."""
    minutes = admission.limits.idle_minutes
    if not minutes or minutes <= 0:
        return 0
    cutoff = admission.clock() - 60.0 * minutes
    idle = [s for s in admission.sockets if s.last_message < cutoff]
    for sock in idle:
        admission.sockets.discard(sock)
        sock.close(IDLE_CLOSE_CODE, "idle")
    if idle:  # one line per check (Bokeh's own line per closed socket is silenced: grpo_lab.socket_guard)
        _log.info("released %d idle page(s) (no message for %g minutes; code=%d)", len(idle), minutes, IDLE_CLOSE_CODE)
    return len(idle)


def _start_idle_check(admission: Admission) -> None:
    """Start this process's idle check, once, at its first websocket (a loop must not be touched before the
    ``--num-procs`` fork)."""
    if getattr(admission, "_idle_check", None) is not None or not admission.limits.idle_minutes:
        return
    from tornado.ioloop import PeriodicCallback

    period = min(IDLE_CHECK_S, 60.0 * admission.limits.idle_minutes / 4)
    admission._idle_check = PeriodicCallback(lambda: release_idle(admission), max(0.2, period) * 1000)
    admission._idle_check.start()


def notice_on_disconnect(doc) -> None:
    """Have ``doc``'s page show :data:`CLOSED_NOTICE` (a fixed banner) when its connection is lost."""
    from bokeh.models import CustomJS

    code = """
if (document.getElementById('lab-closed-notice')) return;
const d = document.createElement('div');
d.id = 'lab-closed-notice';
d.setAttribute('role', 'alert');
d.textContent = notice;
d.style.cssText = 'position:fixed;top:0;left:0;right:0;z-index:10000;padding:0.75em 1em;background:#fff3cd;' +
  'color:#3d2c00;border-bottom:2px solid #b58100;font:16px/1.4 system-ui,sans-serif;text-align:center';
document.body.appendChild(d);
"""
    doc.js_on_event("connection_lost", CustomJS(code=code, args={"notice": CLOSED_NOTICE}))


def install(limits: Limits = DEFAULT_LIMITS, secret: bytes | None = None) -> Admission:
    """Put Bokeh's per-app page, autoload and websocket routes behind one :class:`Admission` (this process's,
    inherited by forked workers, each then counting its own), before the server is built; and show every
    session's page :data:`CLOSED_NOTICE` when its connection is lost."""
    from bokeh.server import urls
    from panel.io.state import state

    admission = Admission(limits, secret=secret)
    from tornado.websocket import WebSocketHandler

    patterns = []
    for route, handler, *rest in urls.per_app_patterns:
        base = getattr(handler, "__admitted_base__", handler)
        if issubclass(base, WebSocketHandler):
            wrapped = _socket_handler(base, admission)
        elif route.endswith("autoload.js") or route == r"/?":
            wrapped = _page_handler(base, admission)
        else:
            patterns.append((route, base, *rest))
            continue
        wrapped.__admitted_base__ = base
        patterns.append((route, wrapped, *rest))
    urls.per_app_patterns[:] = patterns
    state.on_session_created(lambda context: notice_on_disconnect(context._document))
    from panel.config import config

    if config.session_key_func is None:  # one page template per app path (see _page_template)
        config.session_key_func = _template_key
    _gate_session_builds(admission.gate)
    _deepen_listen_queue()
    quiet_bokeh_socket_logs()
    return admission


def _deepen_listen_queue(backlog: int = LISTEN_BACKLOG) -> None:
    """Have Bokeh's server listen with a queue of ``backlog`` connections (the kernel caps it at
    ``net.core.somaxconn``). With Tornado's 128, 200 connections at once from one client overflowed it: the kernel
    dropped the connections beyond it (the newcomer's among them), and each dropped one came back only after TCP's
    retries (1, 3, 7, 15 s...), so a newcomer 2 s into a flood waited 26 s. ``listen`` again on a listening socket
    changes its queue (Linux)."""
    from bokeh.server import server

    bind = getattr(server.bind_sockets, "__wrapped__", server.bind_sockets)

    @functools.wraps(bind)
    def bind_sockets(address, port):
        sockets, port = bind(address, port)
        for sock in sockets:
            sock.listen(backlog)
        return sockets, port

    server.bind_sockets = bind_sockets


def _gate_session_builds(gate: FairGate) -> None:
    """Have Bokeh build each session in a turn of ``gate`` (by the request's address): the build alone, not the
    sends around it, which may wait on a slow client. (Bokeh makes its application contexts itself, so its method is
    wrapped, in this process only.)"""
    from bokeh.server.contexts import ApplicationContext

    build = getattr(ApplicationContext.create_session_if_needed, "__wrapped__", ApplicationContext.create_session_if_needed)

    @functools.wraps(build)
    async def create_session_if_needed(self, session_id, request=None, token=None):
        if session_id in self._sessions:  # found, not built
            return await build(self, session_id, request, token)
        async with gate.turn(_turn_key(request), _request_visitor(request)):
            if gone(request):  # its websocket closed while it waited: nobody would use it
                from bokeh.protocol.exceptions import ProtocolError

                raise ProtocolError("the page's websocket closed before its session was built")
            return await build(self, session_id, request, token)

    ApplicationContext.create_session_if_needed = create_session_if_needed
