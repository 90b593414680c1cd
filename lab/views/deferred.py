"""What a visit builds after its first render, one build at a time per server process, the event loop free between.

The lab's plots leave a visit's first render and are built when the visitor gets to them (``lab.views.live``,
``lab.views.in_view``). When a room arrives together and scrolls down, those builds (about 0.1-0.2 s of CPU each) used to be timers that came due
together and ran back to back: a visitor's first control move, or another visitor's page, waited behind all
of them (the load benchmark's control round trip went to a p50 of 1.5 s with 30 visitors). A
:class:`BuildQueue` runs them one at a time, each :data:`GAP_MS` after the previous one ended, through the
session's own document callback (its lock held, as any Bokeh callback); between two builds the server reads
its sockets, so a waiting message is handled after at most one build.

A build whose session has gone is skipped (``STALL_S`` after it was handed to its document at the latest: a
destroyed session never runs it), so the queue never stalls.
"""

from __future__ import annotations

import weakref
from collections import deque

__all__ = ["BuildQueue", "GAP_MS", "STALL_S", "defer_build"]

GAP_MS = 5  #: the event loop's time between two builds (its sockets are read there)
STALL_S = 2.0  #: a build not started this long after it was handed to its document is given up on


class BuildQueue:
    """Deferred builds of one event loop: :meth:`add` a document and a function; they run in order, one at a time."""

    def __init__(self, loop, gap_ms: int = GAP_MS, stall_s: float = STALL_S):
        self.loop, self.gap_s, self.stall_s = loop, gap_ms / 1000, stall_s
        self._queue: deque = deque()
        self._busy = None  # a token while a build is scheduled or running; None when idle

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, doc, fn, delay_ms: int = 0) -> None:
        """Queue ``fn`` to run in ``doc``'s callback context; when idle, the first runs after ``delay_ms``."""
        self._queue.append((weakref.ref(doc), fn))
        if self._busy is None:
            self._next_in(delay_ms / 1000)

    def _next_in(self, delay_s: float) -> None:
        token = self._busy = object()
        self.loop.call_later(delay_s, lambda: self._start(token))

    def _start(self, token) -> None:
        if token is not self._busy:
            return
        while self._queue:
            ref, fn = self._queue.popleft()
            doc = ref()
            if doc is not None:
                break
        else:
            self._busy = None
            return
        running = self._busy = object()

        def done() -> None:
            if self._busy is running:
                self._next_in(self.gap_s)

        def run() -> None:
            try:
                fn()
            finally:
                done()

        try:
            doc.add_next_tick_callback(run)
        except Exception:  # the session is gone: nothing to build for it
            done()
            return
        self.loop.call_later(self.stall_s, done)  # a callback a destroyed session never runs stalls nothing


_QUEUES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def defer_build(doc, fn, delay_ms: int = 0) -> None:
    """Queue ``fn`` for ``doc`` in the current event loop's :class:`BuildQueue` (one per loop, made on first use)."""
    from tornado.ioloop import IOLoop

    loop = IOLoop.current()
    queue = _QUEUES.get(loop)
    if queue is None:
        queue = _QUEUES[loop] = BuildQueue(loop)
    queue.add(doc, fn, delay_ms)
