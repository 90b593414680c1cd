"""Token buckets keyed by client address: the admission's new pages and builds, the client log's lines.

A :class:`TokenBucket` holds ``burst`` tokens at most, refilled at ``rate`` per second; :meth:`TokenBucket.take`
takes one if there is one. :func:`bucket_for` finds an address's bucket in a dict of them, making a full one for a
new address; past :data:`MAX_ADDRESSES` it first forgets the buckets that are full again (their addresses have been
quiet long enough to be new), so a stream of fresh addresses holds a bounded dict.
"""

from __future__ import annotations

__all__ = ["TokenBucket", "bucket_for", "MAX_ADDRESSES"]

MAX_ADDRESSES = 10_000  #: buckets kept before the full ones are forgotten


class TokenBucket:
    """``burst`` tokens at most, refilled at ``rate`` per second; :meth:`take` takes one if there is one."""

    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate: float, burst: int, now: float):
        self.rate, self.burst, self.tokens, self.stamp = float(rate), float(burst), float(burst), now

    def level(self, now: float) -> float:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        return self.tokens

    def take(self, now: float) -> bool:
        if self.level(now) >= 1.0:
            self.tokens -= 1.0
            return True
        return False


def bucket_for(buckets: dict, address: str, rate: float, burst: float, now: float, keep=lambda address: False):
    """``buckets[address]``, a full :class:`TokenBucket` of ``rate`` and ``burst`` made for a new address; before
    adding one past :data:`MAX_ADDRESSES`, the full buckets are forgotten (except those ``keep(address)`` keeps)."""
    bucket = buckets.get(address)
    if bucket is None:
        if len(buckets) > MAX_ADDRESSES:
            for a in [a for a, b in buckets.items() if b.level(now) >= b.burst and not keep(a)]:
                del buckets[a]
        bucket = buckets[address] = TokenBucket(rate, burst, now)
    return bucket
