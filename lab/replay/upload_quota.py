"""What one visitor's uploads may use of a server process at once: reads in progress and bytes held by its tabs.

Counted under each of a session's keys (:func:`grpo_lab.visitor.quota_keys`: the visitor cookie when the
browser sent one, and the client address), against the limits of
:class:`grpo_lab.replay.upload.UploadLimits`: ``visitor_reads`` / ``visitor_held_bytes`` per cookie,
``address_reads`` / ``address_held_bytes`` per address (larger: a classroom shares one NAT address).

* :meth:`UploadQuota.begin_read` admits a read (and counts it) or says why not, before any work;
  :meth:`UploadQuota.end_read` uncounts it when it ends, is cancelled or its tab closes.
* :meth:`UploadQuota.hold` records what a tab keeps (its run in the compact form plus the file's bytes,
  replacing what that tab held before), or says why not; :meth:`UploadQuota.drop` forgets a closed tab.

The messages say what the visitor can do. One instance per process (:data:`QUOTA`); thread-safe.
"""

from __future__ import annotations

import threading
from collections import Counter

from .upload import UPLOAD_LIMITS, UploadLimits

__all__ = ["UploadQuota", "QUOTA"]

_MiB = 1 << 20


class UploadQuota:
    """See the module docstring."""

    def __init__(self, limits: UploadLimits = UPLOAD_LIMITS):
        self.limits = limits
        self._lock = threading.Lock()
        self._reads: Counter = Counter()
        self._held: dict[object, tuple[tuple, int]] = {}  # tab token -> (its keys, bytes)

    def _read_limit(self, key) -> int:
        return self.limits.visitor_reads if key[0] == "cookie" else self.limits.address_reads

    def _held_limit(self, key) -> int:
        return self.limits.visitor_held_bytes if key[0] == "cookie" else self.limits.address_held_bytes

    def held(self, key, but=None) -> int:
        """Bytes held under ``key`` by every tab but ``but``."""
        with self._lock:
            return sum(n for token, (keys, n) in self._held.items() if key in keys and token != but)

    def reads(self, key) -> int:
        with self._lock:
            return self._reads[key]

    def begin_read(self, keys, token=None) -> str | None:
        """Count a new read under ``keys``; or, when one key is at its limit (reads, or bytes its other tabs
        hold), count nothing and return the message for the page."""
        for key in keys:
            if self.held(key, but=token) >= self._held_limit(key):
                return self._held_message(key, 0)
        with self._lock:
            for key in keys:
                n = self._reads[key]
                if n >= self._read_limit(key):
                    if key[0] == "cookie":
                        return f"You already have {n} uploads being read; wait for one to finish, then upload again."
                    return (f"{n} uploads from your network are being read on this server; wait for one to "
                            "finish, then upload again.")
            for key in keys:
                self._reads[key] += 1
        return None

    def end_read(self, keys) -> None:
        with self._lock:
            for key in keys:
                self._reads[key] -= 1
                if self._reads[key] <= 0:
                    del self._reads[key]

    def hold(self, keys, token, nbytes: int) -> str | None:
        """Record that tab ``token`` now keeps ``nbytes`` (instead of what it kept); or, if that would pass a
        key's limit, keep the tab's old holding and return the message for the page."""
        for key in keys:
            if self.held(key, but=token) + nbytes > self._held_limit(key):
                return self._held_message(key, nbytes)
        with self._lock:
            self._held[token] = (tuple(keys), int(nbytes))
        return None

    def drop(self, token) -> None:
        """The tab closed (or let its upload go): it holds nothing any more."""
        with self._lock:
            self._held.pop(token, None)

    def _held_message(self, key, nbytes: int) -> str:
        held, limit = self.held(key), self._held_limit(key)
        who = "Your open tabs" if key[0] == "cookie" else "Open tabs from your network"
        size = f" and this run takes {nbytes / _MiB:.0f} MB" if nbytes else ""
        return (f"{who} already hold {held / _MiB:.0f} MB of uploaded runs{size}; this server keeps up to "
                f"{limit / _MiB:g} MB per {'visitor' if key[0] == 'cookie' else 'address'}. Close a tab that holds "
                "an upload (or upload a smaller run), then try again.")


QUOTA = UploadQuota()
