"""Play's fair share of the server: a frame budget per session for what only the server can draw.

All sessions share one event loop. Play runs in the browser (the grid view's play loop), which sends the
progress every ``play_sync_ms`` (``grpo_lab.grid.spec.PLAY_SYNC_MS``) so the plots, tables and captions
follow; at the heaviest settings (20,000 prompts, K = 64, rho = 0.9: the server evaluates the grid too)
one such redraw costs most of a second, and drawing every one of them would let one visitor's Play take
the whole loop (another visitor's round trip went from 0.1 s to 5 s when Play was a server tick).

:class:`FrameBudget` spaces a session's redraws so that they use at most :data:`PLAY_SHARE` of the
server's time: after a redraw that took ``w`` seconds of work, the next one may start ``w / share``
seconds after it began; what arrives earlier waits and coalesces into one redraw of the state as it is
then (:meth:`FrameBudget.request`): the plots follow the animation more slowly instead of the server. A
cheap redraw (a small population, rho = 0) is not slowed: its next one is due before the next push
anyway. The same budget bounds the other redraws only the server can paint (dragging rho at 20,000
prompts). When the page closes, its pushes stop with it.
"""

from __future__ import annotations

import contextlib
import time

__all__ = ["PLAY_SHARE", "FrameBudget"]

PLAY_SHARE = 0.25  #: the largest share of the server's time one session's Play (and server painting) may use


class FrameBudget:
    """When the next frame may start, from the cost of the last one (``clock``: seconds, for tests).

    One per session, shared by Play's progress pushes and by redraws only the server can paint (rho > 0, a new
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
