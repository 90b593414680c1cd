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

A room (:class:`Room`, per server process like every limit) admits:

* at most ``N`` **visitors** (distinct visitor cookies, ``grpo_lab_visitor``): the 1st to N-th browser to open the
  link take a place for as long as the key lasts; a browser past them gets "this class's room is full";
* at most :data:`TABS_PER_PLACE` x ``N`` **open pages** at once (a student's second tab, a reload);
* **new pages and sessions** from buckets of its own, :data:`TABS_PER_PLACE` x ``N`` at once (every place's tabs
  opened together) and refilled at ``N`` per :data:`REFILL_S` (a reload a minute per student): the room's total
  work, whatever the address.

A hostile client without the key gets today's per-address limits; one with the key, the room's, which are the
lecturer's ``N``: no more than a class. A refused key is answered with a page in words and holds nothing: no
session, no place, no cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import secrets
import time
from dataclasses import dataclass, field

from grpo_lab.token_bucket import TokenBucket

__all__ = ["ClassKey", "Room", "sign", "verify", "new_key", "class_secret", "SECRET_ENV", "CLASS_COOKIE",
           "KeyRefused", "refusal_status", "TABS_PER_PLACE", "REFILL_S", "MAX_CLASS", "DEFAULT_HOURS", "SIGNATURE_BYTES"]

SECRET_ENV = "GRPO_LAB_CLASS_SECRET"  #: a secret kept across restarts (any text); without it, random at start
CLASS_COOKIE = "grpo_lab_class"  #: the key, set on a page admitted by it (its websocket and reloads carry it)
SIGNATURE_BYTES = 16  #: bytes of the HMAC-SHA256 kept in the key (128 bits)
TABS_PER_PLACE = 2  #: open pages per place in the room
REFILL_S = 60.0  #: the room's bucket of new sessions refills N per this many seconds
MAX_CLASS = 2000  #: the largest room a key may name
MAX_KEY_CHARS = 120  #: longer is not a key
DEFAULT_HOURS = 4.0  #: how long a class link lasts unless ``--class-hours`` says


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


@dataclass
class Room:
    """One room's counts in this process: its places (visitors), its open pages, its buckets of new pages and of
    sessions built for a websocket (two, as an address has: :mod:`grpo_lab.admission`)."""

    key: ClassKey
    visitors: set = field(default_factory=set)
    open: int = 0
    buckets: dict = field(default_factory=dict)  #: "page" / "build" -> TokenBucket

    def place(self, visitor: str | None) -> str | None:
        """Why ``visitor`` (a cookie; None for a browser that has none yet, which gets one with this page) gets no
        place, or None: a new visitor takes one while there are some."""
        if visitor in self.visitors:
            return None
        if len(self.visitors) >= self.key.size:
            return FULL.format(n=self.key.size)
        return None

    def take_place(self, visitor: str) -> None:
        if len(self.visitors) < self.key.size:
            self.visitors.add(visitor)

    def over_cap(self) -> str | None:
        return FULL_TABS.format(n=TABS_PER_PLACE * self.key.size) if self.open >= TABS_PER_PLACE * self.key.size \
            else None

    def take_token(self, kind: str, now: float) -> str | None:
        """Take one of the room's ``kind`` tokens ("page" or "build"): None, or why not."""
        bucket = self.buckets.get(kind)
        if bucket is None:
            bucket = self.buckets[kind] = TokenBucket(self.key.size / REFILL_S, TABS_PER_PLACE * self.key.size, now)
        return None if bucket.take(now) else BUSY
