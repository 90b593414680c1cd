"""Run a function once the controls have been still for a while (a timer in the Bokeh server document).

The live lab's plots and the page URL both follow the controls this way: while a slider moves,
each change restarts the timer, so the work happens once per pause instead of once per step.
Changes that never pause (Play's ticks) pass ``max_wait_ms``: the work then also happens at the
first trigger that comes that long after the burst began, so it follows at a bounded rate.
"""

from __future__ import annotations

import time

__all__ = ["Debounce"]


class Debounce:
    """Call ``fn()`` ``delay_ms`` after the last :meth:`trigger`; at once when there is no server document.

    ``clock`` (seconds, monotonic) is for tests.
    """

    def __init__(self, fn, delay_ms: int, clock=time.monotonic):
        self.fn, self.delay_ms, self.clock = fn, delay_ms, clock
        self._doc = self._pending = self._since = self._last_run = None

    def trigger(self, doc, max_wait_ms: int | None = None) -> None:
        """Restart the timer in ``doc`` (a Bokeh document, or None outside a server: run now).

        With ``max_wait_ms``, a trigger that comes at least that long after the first still-waiting
        one runs ``fn()`` now instead, so a stream of triggers with no pause calls it about once per
        ``max_wait_ms`` (and once more after the last).
        """
        now = self.clock()
        since = self._since if self._pending is not None else None
        if since is None and max_wait_ms is not None and self._last_run is not None \
                and (now - self._last_run) * 1000.0 < max_wait_ms:
            since = self._last_run  # the stream goes on: measure from the last call
        self.cancel()
        if doc is None:
            self._call(now)
            return
        if since is not None and max_wait_ms is not None and (now - since) * 1000.0 >= max_wait_ms:
            self._call(now)
            return
        self._doc, self._since = doc, now if since is None else since
        self._pending = doc.add_timeout_callback(self._run, self.delay_ms)

    def _call(self, now: float) -> None:
        self._last_run = now
        self.fn()

    def cancel(self) -> None:
        """Drop a pending call, if any."""
        if self._pending is not None:
            try:
                self._doc.remove_timeout_callback(self._pending)
            except ValueError:  # already ran
                pass
        self._pending = None

    def _run(self) -> None:
        self._pending = None
        self._call(self.clock())
