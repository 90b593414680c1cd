"""Play's fair share of the server: a frame budget per session, and no frames for a visitor who has left.

All sessions share one event loop. A Play tick at the heaviest settings (20,000 prompts, K = 64,
rho = 0.9: the server evaluates the grid and redraws the plots) costs most of a second; ticking every
80 ms, one visitor's Play used the whole loop and another visitor's round trip went from 0.1 s to 5 s.

:class:`FrameBudget` spaces a session's frames so that Play uses at most :data:`PLAY_SHARE` of the
server's time: after a frame that took ``w`` seconds of work, the next one may start ``w / share``
seconds after it began; ticks that come earlier are skipped (no work, no message: the animation
slows down instead of the server). A cheap frame (a small population, rho = 0, where the browser
paints) is not slowed: its next frame is due before the next tick anyway. The same budget bounds the
other redraws only the server can paint (dragging rho at 20,000 prompts): they wait for it and
coalesce (:meth:`FrameBudget.request`).

:func:`session_connected` tells whether a session's page is still open, so Play stops as soon as its
tab is closed rather than when Bokeh discards the session (up to half a minute later).
"""

from __future__ import annotations

import contextlib
import time

__all__ = ["PLAY_SHARE", "FrameBudget", "session_connected"]

PLAY_SHARE = 0.25  #: the largest share of the server's time one session's Play may use


class FrameBudget:
    """When the next frame may start, from the cost of the last one (``clock``: seconds, for tests).

    One per session, shared by Play's ticks and by redraws only the server can paint (rho > 0, a new
    population): :meth:`request` runs such a redraw now if the budget allows, else once, when it does
    (requests meanwhile coalesce into that one, which paints the state as it is then).
    """

    def __init__(self, share: float = PLAY_SHARE, clock=time.monotonic):
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share}")
        self.share, self.clock = share, clock
        self._next = -float("inf")
        self._pending = None

    def ready(self) -> bool:
        """Whether the last frame's share has been earned back (always true before the first)."""
        return self.clock() >= self._next

    @contextlib.contextmanager
    def frame(self):
        """Time the work of one frame: the next is due ``work / share`` after this one started."""
        start = self.clock()
        try:
            yield
        finally:
            self._next = start + (self.clock() - start) / self.share

    def request(self, fn, doc) -> None:
        """Run ``fn()`` as a frame: now if the budget allows (or there is no server ``doc``), else once
        when it does, with every request until then coalesced into that call."""
        if doc is None or (self._pending is None and self.ready()):
            with self.frame():
                fn()
            return
        if self._pending is None:
            def due():
                self._pending = None
                with self.frame():
                    fn()

            wait_ms = max(1, int(1000 * (self._next - self.clock())))
            self._pending = doc.add_timeout_callback(due, wait_ms)

def session_connected(doc) -> bool:
    """Whether ``doc``'s browser page is still connected (True outside a server session).

    Bokeh has no public connection count; this reads ``session_context._session.connection_count``
    (Bokeh 3.x) and answers True when that is not available, so Play then stops at the latest when
    the session is destroyed.
    """
    context = getattr(doc, "session_context", None)
    session = getattr(context, "_session", None)
    count = getattr(session, "connection_count", None)
    return count is None or count > 0
