"""Run a function once the controls have been still for a while (a timer in the Bokeh server document).

The live lab's plots and the page URL both follow the controls this way: while a slider moves,
each change restarts the timer, so the work happens once per pause instead of once per step.
"""

from __future__ import annotations

__all__ = ["Debounce"]


class Debounce:
    """Call ``fn()`` ``delay_ms`` after the last :meth:`trigger`; at once when there is no server document."""

    def __init__(self, fn, delay_ms: int):
        self.fn, self.delay_ms = fn, delay_ms
        self._doc = self._pending = None

    def trigger(self, doc) -> None:
        """Restart the timer in ``doc`` (a Bokeh document, or None outside a server: run now)."""
        self.cancel()
        if doc is None:
            self.fn()
            return
        self._doc = doc
        self._pending = doc.add_timeout_callback(self._run, self.delay_ms)

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
        self.fn()
