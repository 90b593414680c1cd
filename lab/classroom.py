"""A class link: one key that admits a lecture hall arriving together from one address, and no one else.

A campus puts a whole class behind one address; the per-address limits of :mod:`grpo_lab.admission` (60 open tabs,
30 new pages at once) refuse the rest of it, and raising them opens the same door to any one address. A lecturer's
``grpo-lab serve --class N`` instead prints a link with a key, ``/app?class=KEY``, for the projector; its holders are
admitted by the key's **room** rather than by their address.

The key (:func:`sign`, :func:`verify`) is ``ROOM.N.EXPIRY.SIGNATURE``: a random room name, the room's size ``N``,
the time it expires (Unix seconds) and the first :data:`SIGNATURE_BYTES` bytes of HMAC-SHA256 over the first
three under the server's secret (``GRPO_LAB_CLASS_SECRET``, or random bytes made at start: the link then holds
until the server stops), in URL-safe base64. A key changed in any character, cut short, or signed under another
secret is refused; so is one past its expiry. Its size and expiry cannot be raised without the secret.

A room (:class:`Room`) admits, in all of the server's processes together (its counts are kept in a
:class:`Ledger` of memory shared by the ``--num-procs`` processes, made before they are forked):

* at most ``N`` **visitors** (distinct visitor cookies, ``grpo_lab_visitor``): the 1st to N-th browser to open the
  link take a place for as long as the key lasts; a browser past them gets "this class's room is full";
* at most :data:`TABS_PER_PLACE` x ``N`` **open pages** at once (a student's second tab, a reload); each counted
  against the process that serves it, so the pages of a process that died (killed, crashed) are freed at the room's
  next admission, not held until the server restarts;
* **new pages and sessions** from buckets of its own, :data:`TABS_PER_PLACE` x ``N`` at once (every place's tabs
  opened together) and refilled at ``N`` per :data:`REFILL_S` (a reload a minute per student): the room's total
  work, whatever the address.

A hostile client without the key gets today's per-address limits; one with the key, the room's, which are the
lecturer's ``N``: no more than a class. A refused key is answered with a page in words and holds nothing: no
session, no place, no cookie.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import math
import mmap
import os
import secrets
import struct
import tempfile
import threading
import time
from dataclasses import dataclass

from grpo_lab.process_life import alive, process_id
from grpo_lab.token_bucket import TokenBucket

__all__ = ["ClassKey", "Room", "sign", "verify", "new_key", "class_secret", "SECRET_ENV", "CLASS_COOKIE",
           "KeyRefused", "refusal_status", "Ledger", "ROOM_SLOTS", "OWNERS", "TABS_PER_PLACE", "REFILL_S", "MAX_CLASS", "DEFAULT_HOURS", "SIGNATURE_BYTES"]

SECRET_ENV = "GRPO_LAB_CLASS_SECRET"  #: a secret kept across restarts (any text); without it, random at start
CLASS_COOKIE = "grpo_lab_class"  #: the key, set on a page admitted by it (its websocket and reloads carry it)
SIGNATURE_BYTES = 16  #: bytes of the HMAC-SHA256 kept in the key (128 bits)
TABS_PER_PLACE = 2  #: open pages per place in the room
REFILL_S = 60.0  #: the room's bucket of new sessions refills N per this many seconds
MAX_CLASS = 2000  #: the largest room a key may name
MAX_KEY_CHARS = 120  #: longer is not a key
DEFAULT_HOURS = 4.0  #: how long a class link lasts unless ``--class-hours`` says
ROOM_SLOTS = 32  #: rooms a :class:`Ledger` holds at once (keys not expired); one past them counts per process
#: processes a room's open pages are counted against, each apart (a dead one's entry is reused); a page of a process
#: past them is counted in the room's total alone, and is not freed if that process dies
OWNERS = 64

_log = logging.getLogger("grpo_lab.classroom")


class KeyRefused(ValueError):
    """A key that admits no one; ``str()`` is what the visitor reads, ``status`` the HTTP status."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ClassKey:
    room: str  #: the room's random name (hex)
    size: int  #: N: places in the room
    expires: int  #: Unix seconds

    def payload(self) -> str:
        return f"{self.room}.{self.size}.{self.expires}"


def _mac(secret: bytes, payload: str) -> str:
    digest = hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:SIGNATURE_BYTES]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sign(key: ClassKey, secret: bytes) -> str:
    """The key's text: ``ROOM.N.EXPIRY.SIGNATURE``."""
    return f"{key.payload()}.{_mac(secret, key.payload())}"


def new_key(size: int, hours: float, secret: bytes, now: float | None = None) -> str:
    """A signed key for a new room of ``size`` places, valid ``hours`` from ``now``."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_CLASS:
        raise ValueError(f"a class has 1..{MAX_CLASS} places, got {size}")
    if not 0 < hours <= 24 * 366:
        raise ValueError(f"a class link lasts more than 0 and at most a year of hours, got {hours}")
    now = time.time() if now is None else now
    return sign(ClassKey(secrets.token_hex(4), size, int(math.ceil(now + 3600 * hours))), secret)


INVALID = ("This class link is not valid (it was changed or cut short, or it belongs to another server). "
           "Ask your lecturer for the link again, or open the lab without it.")
EXPIRED = "This class link expired at {when} UTC. Ask your lecturer for a new one, or open the lab without it."
FULL = ("This class's room is full: all {n} places are taken. Ask your lecturer to start the server with a larger "
        "--class, or open the lab without the link.")
FULL_TABS = "This class's room has {n} pages open, as many as it holds. Close a tab, then reload."
BUSY = "Too many new pages at once in this class; this page will try again in a few seconds."


def refusal_status(reason: str) -> int:
    """The HTTP status of a holder's refusal: 403 for a full room (no place will free up while the key lasts), 429
    for the rest (a tab closed, a few seconds, and it will pass)."""
    return 403 if reason.startswith(FULL.split(":")[0]) else 429


def verify(text: str | None, secret: bytes, now: float | None = None) -> ClassKey:
    """The :class:`ClassKey` that ``text`` signs under ``secret``, or :class:`KeyRefused` (403: not a key of this
    server's; 410: expired). The signature is compared in constant time."""
    if not text or len(text) > MAX_KEY_CHARS:
        raise KeyRefused(INVALID, 403)
    parts = text.split(".")
    if len(parts) != 4:
        raise KeyRefused(INVALID, 403)
    room, size, expires, mac = parts
    if not hmac.compare_digest(mac.encode(), _mac(secret, f"{room}.{size}.{expires}").encode()):
        raise KeyRefused(INVALID, 403)
    try:  # signed by this server: the fields are its own, but read them safely all the same
        key = ClassKey(room, int(size), int(expires))
    except ValueError:
        raise KeyRefused(INVALID, 403) from None
    if (time.time() if now is None else now) >= key.expires:
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.expires))
        raise KeyRefused(EXPIRED.format(when=when), 410)
    return key


def class_secret(environ=None) -> bytes:
    """The secret keys are signed under: :data:`SECRET_ENV` if set, else 32 random bytes (this run only)."""
    text = (os.environ if environ is None else environ).get(SECRET_ENV, "")
    return text.encode() if text else secrets.token_bytes(32)


try:
    import fcntl
except ImportError:  # no fcntl (Windows): one process only (Bokeh forks none there), the threads' lock alone
    fcntl = None

_IDENT = _PLACE = 16  #: bytes of a key's identity and of a visitor's place (BLAKE2b digests)
_FREE = bytes(_IDENT)
#: a room's slot: identity, expiry, size, open pages, places taken, page bucket (tokens, stamp), build bucket
_HEAD = struct.Struct("<16sqiiidddd")
_BUCKETS = {"page": 5, "build": 7}  #: a bucket's fields in _HEAD (tokens, then its stamp)
#: an owner of a room's open pages: pid (0: a free entry), pages open, start time (lab.process_life.process_id)
_OWNER = struct.Struct("<iiq")


class Ledger:
    """The rooms' counts in memory shared by the server's processes: made before ``--num-procs`` forks them (in
    :func:`grpo_lab.admission.install`), inherited by each, so a room of N admits N in all, whatever the number of
    processes. One process alone reads and writes it the same way.

    It is a file with no name (``memfd_create``; an unlinked temporary file where there is none) mapped shared, of
    ``slots`` rooms; a change is made under a lock of that file (``lockf``: a process's lock, released by the kernel
    if it dies holding it) and a lock of the process's threads. Each room's slot holds
    (:data:`_HEAD`): the key's identity (BLAKE2b-128 of its payload; all zeros: a free slot), its expiry (a slot whose
    key expired is free again, by ``wall``'s clock), its size, its open pages, its places taken, its two buckets
    (tokens, time of the last take; a time of minus infinity: full), then :data:`OWNERS` owners of its open pages
    (:data:`_OWNER`: the process, its pages; their sum and the pages no entry holds are the open pages), then the
    places: BLAKE2b-128 of each visitor cookie, up to :data:`MAX_CLASS`. The buckets' times are
    ``time.monotonic``'s (one clock for the whole machine)."""

    def __init__(self, slots: int = ROOM_SLOTS, wall=time.time):
        self.slots, self.wall = slots, wall
        self.slot_bytes = _HEAD.size + OWNERS * _OWNER.size + MAX_CLASS * _PLACE
        size = slots * self.slot_bytes
        if hasattr(os, "memfd_create"):
            self._fd = os.memfd_create("grpo-lab-rooms", getattr(os, "MFD_CLOEXEC", 0))
        else:
            handle, name = tempfile.mkstemp(prefix="grpo-lab-rooms-")
            os.unlink(name)
            self._fd = handle
        os.ftruncate(self._fd, size)  # zeros: every slot free
        self.map = mmap.mmap(self._fd, size)  # MAP_SHARED: the forked processes write the same pages
        self._threads = threading.Lock()

    def __del__(self):
        with contextlib.suppress(Exception):
            self.map.close()
            os.close(self._fd)

    @contextlib.contextmanager
    def locked(self):
        """Hold the ledger (every process of the server, every thread of this one) while the block runs; not
        reentrant (a POSIX lock is released whole by its first unlock)."""
        with self._threads:
            if fcntl is not None:
                fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def ident(self, slot: int) -> bytes:
        return bytes(self.map[slot * self.slot_bytes:slot * self.slot_bytes + _IDENT])

    def claim(self, ident: bytes, key: ClassKey) -> int | None:
        """The slot of the room ``ident`` (the ledger held): found, or a free one made its own (counts zero, buckets
        full); None when every slot holds a room not expired."""
        free, now = None, self.wall()
        for slot in range(self.slots):
            held, expires = struct.unpack_from("<16sq", self.map, slot * self.slot_bytes)
            if held == ident:
                return slot
            if free is None and (held == _FREE or expires <= now):
                free = slot
        if free is not None:
            self.write(free, ident, key.expires, key.size, 0, 0, float(TABS_PER_PLACE * key.size), -math.inf,
                       float(TABS_PER_PLACE * key.size), -math.inf)
            at = free * self.slot_bytes + _HEAD.size
            self.map[at:at + OWNERS * _OWNER.size] = bytes(OWNERS * _OWNER.size)  # no owners
        return free

    def read(self, slot: int) -> list:
        return list(_HEAD.unpack_from(self.map, slot * self.slot_bytes))

    def write(self, slot: int, *fields) -> None:
        _HEAD.pack_into(self.map, slot * self.slot_bytes, *fields)

    def _owner_at(self, slot: int, i: int) -> int:
        return slot * self.slot_bytes + _HEAD.size + i * _OWNER.size

    def count_mine(self, slot: int, change: int) -> None:
        """Add ``change`` (+1 or -1) to the open pages of ``slot`` counted against this process (the ledger held):
        its entry, made on its first page (a free or dead one's); the room's total with it. A close with none of
        its own open takes one from the total alone (a page counted where no entry was free)."""
        pid, start = process_id()
        fields = self.read(slot)
        entry = free = None
        for i in range(OWNERS):
            held, count, started = _OWNER.unpack_from(self.map, self._owner_at(slot, i))
            if (held, started) == (pid, start):
                entry = (i, count)
                break
            if free is None and (held == 0 or (count == 0 and not alive(held, started))):
                free = i
        if entry is None and change > 0 and free is not None:
            entry = (free, 0)
        if entry is not None and entry[1] + change >= 0:
            _OWNER.pack_into(self.map, self._owner_at(slot, entry[0]), pid, entry[1] + change, start)
        elif entry is None and change > 0:
            _log.warning("%d processes hold pages of one class room; one more is counted without its process", OWNERS)
        fields[3] = max(0, fields[3] + change)
        self.write(slot, *fields)

    def reclaim(self, slot: int) -> int:
        """Free the open pages of ``slot`` that processes no longer alive held (the ledger held): each such owner's
        entry emptied, its pages taken from the room's total. Returns the pages freed."""
        me, freed = process_id(), 0
        for i in range(OWNERS):
            held, count, started = _OWNER.unpack_from(self.map, self._owner_at(slot, i))
            if held and (held, started) != me and not alive(held, started):
                _OWNER.pack_into(self.map, self._owner_at(slot, i), 0, 0, 0)
                freed += count
        if freed:
            fields = self.read(slot)
            fields[3] = max(0, fields[3] - freed)
            self.write(slot, *fields)
            _log.warning("freed %d open pages of a class room held by server processes that died", freed)
        return freed

    def find_place(self, slot: int, place: bytes, taken: int) -> bool:
        """Whether ``place`` is among the first ``taken`` places of ``slot`` (a match at a place's boundary)."""
        start = slot * self.slot_bytes + _HEAD.size + OWNERS * _OWNER.size
        end, at = start + taken * _PLACE, start
        while (at := self.map.find(place, at, end)) >= 0:
            if (at - start) % _PLACE == 0:
                return True
            at += 1
        return False

    def add_place(self, slot: int, place: bytes, taken: int) -> None:
        at = slot * self.slot_bytes + _HEAD.size + OWNERS * _OWNER.size + taken * _PLACE
        self.map[at:at + _PLACE] = place


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=_IDENT).digest()


class Room:
    """One room's counts, in ``ledger`` (the server's, shared by its processes; a ledger of its own when none is
    given, or when the server's holds :data:`ROOM_SLOTS` rooms already: it then counts in this process alone): its
    places (visitors), its open pages, its buckets of new pages and of sessions built for a websocket (two, as an
    address has: :mod:`grpo_lab.admission`)."""

    def __init__(self, key: ClassKey, ledger: Ledger | None = None):
        self.key, self.ident = key, _digest(key.payload())
        self.ledger, self.slot = ledger, None
        if ledger is not None:
            with ledger.locked():
                self.slot = ledger.claim(self.ident, key)
        if self.slot is None:
            self._alone()

    def _alone(self) -> None:
        """Count in a ledger of this room's own (the server's has no slot free): in this process alone."""
        if self.ledger is not None:
            _log.warning("%d class rooms are open; room %s counts in each server process apart", self.ledger.slots,
                         self.key.room)
        self.ledger = Ledger(slots=1, wall=lambda: -math.inf)  # never expires: this room is its one slot
        with self.ledger.locked():
            self.slot = self.ledger.claim(self.ident, self.key)

    def _here(self) -> bool:
        """Whether the slot is still this room's (the ledger held): it is given to another only after the key
        expired, and then only a closing page of this room comes here."""
        return self.ledger.ident(self.slot) == self.ident

    def _claimed(self) -> bool:
        """Whether the room has its slot, claimed again if it was lost (cannot happen while the key is valid;
        counted afresh if it does)."""
        with self.ledger.locked():
            if not self._here():
                self.slot = self.ledger.claim(self.ident, self.key)
            return self.slot is not None

    @property
    def open(self) -> int:
        """Open pages of the room, in every process still alive."""
        with self.ledger.locked():
            if not self._here():
                return 0
            self.ledger.reclaim(self.slot)
            return self.ledger.read(self.slot)[3]

    @property
    def places(self) -> int:
        """Places taken (browsers admitted), in every process."""
        with self.ledger.locked():
            return self.ledger.read(self.slot)[4] if self._here() else 0

    def holds(self, visitor: str) -> bool:
        """Whether ``visitor`` (a cookie) has a place."""
        with self.ledger.locked():
            return self._here() and self.ledger.find_place(self.slot, _digest(visitor), self.ledger.read(self.slot)[4])

    def admit(self, visitor: str | None, kind: str | None, now: float, mine: str | None = None) -> str | None:
        """A page (``kind`` "page"), a session build ("build") or a websocket whose session exists (None) of
        ``visitor`` (None: a browser that has no cookie yet): why it is refused, or None, all in one hold of the
        ledger. In order: the room full for a visitor with no place (:data:`FULL`), its open pages
        (:data:`FULL_TABS`), ``mine`` (the caller's own refusal, if any: the browser's tabs), no token of the
        ``kind`` bucket (:data:`BUSY`). Admitted, a token is taken and a new visitor takes a place."""
        if not self._claimed():
            self._alone()
        with self.ledger.locked():
            self.ledger.reclaim(self.slot)  # a dead process's pages first (a server process killed)
            fields = self.ledger.read(self.slot)
            size, open_, taken = fields[2], fields[3], fields[4]
            place = _digest(visitor) if visitor else None
            known = place is not None and self.ledger.find_place(self.slot, place, taken)
            reason = FULL.format(n=size) if not known and taken >= size else None
            if not reason and open_ >= TABS_PER_PLACE * size:
                reason = FULL_TABS.format(n=TABS_PER_PLACE * size)
            reason = reason or mine
            if not reason and kind:
                at = _BUCKETS[kind]
                bucket = TokenBucket(size / REFILL_S, TABS_PER_PLACE * size, fields[at + 1])
                bucket.tokens = fields[at]
                if not bucket.take(now):
                    reason = BUSY
                fields[at], fields[at + 1] = bucket.tokens, bucket.stamp
            if not reason and place is not None and not known and taken < min(size, MAX_CLASS):
                self.ledger.add_place(self.slot, place, taken)
                fields[4] = taken + 1
            self.ledger.write(self.slot, *fields)
        return reason

    def opened(self) -> None:
        self._count(+1)

    def closed(self) -> None:
        self._count(-1)

    def _count(self, change: int) -> None:
        with self.ledger.locked():
            if self._here():
                self.ledger.count_mine(self.slot, change)
