"""One upload being read off the event loop, for one session: progress, result delivery, cancel.

``UploadJob(doc, name, data, fmt, tolerance, widget, done, keys)`` starts the read in a reading
process of its own (:func:`grpo_lab.replay.upload.start_upload`), shows its progress (the seconds it
has been reading) in ``widget.status`` every :data:`PROGRESS_MS` while ``widget.busy`` is on, and
calls ``done(record, error)`` on the session's own event-loop turn (``doc.add_next_tick_callback``,
the one Bokeh document call that is safe from another thread) when the read ends. A newer upload
or the session closing cancels it: a read still waiting for its lane never starts, and one
already running is stopped (its process terminated). The read counts once against the visitor's
``keys`` in :data:`grpo_lab.replay.upload_quota.QUOTA` (admitted by the caller), uncounted when it
ends either way. The record arrives in the compact form (:func:`grpo_lab.replay.compact.unpack`).
"""

from __future__ import annotations

import logging
import threading
import time
from functools import partial

import panel as pn

from .compact import unpack
from .upload import start_upload, upload_failed
from .upload_quota import QUOTA

__all__ = ["UploadJob", "PROGRESS_MS"]

PROGRESS_MS = 500  #: how often the progress line is refreshed while an upload is read
_log = logging.getLogger(__name__)


class UploadJob:
    """See the module docstring."""

    def __init__(self, doc, name: str, data: bytes, fmt: str, tolerance: float, widget, done, keys=()):
        self.doc, self.name, self.widget, self.done = doc, name, widget, done
        self.started, self.cancelled = time.monotonic(), False
        self._keys, self._counted = tuple(keys), threading.Lock()
        widget.param.update(busy=True, status=f"Reading {name}\u2026")
        self._progress = pn.state.add_periodic_callback(self._show_progress, PROGRESS_MS)
        pn.state.on_session_destroyed(lambda _context: self.cancel())
        self.read = start_upload(name, data, fmt, tolerance)
        self.future = self.read.future
        self.future.add_done_callback(self._finished)

    def _uncount(self) -> None:
        """End this read in the visitor's quota (once, whichever of cancel and finish comes first)."""
        if self._counted.acquire(blocking=False):
            QUOTA.end_read(self._keys)

    def cancel(self) -> None:
        self.cancelled = True
        self.read.cancel()
        self._stop_progress()
        self._uncount()

    def _stop_progress(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _show_progress(self) -> None:
        self.widget.status = f"Reading {self.name}\u2026 {time.monotonic() - self.started:.0f} s"

    def _finished(self, future) -> None:
        """On the worker thread: hand the result to the session's event loop (unless the session is gone).

        Whatever goes wrong here is delivered as the read's error: an exception out of a future's done callback
        is only logged by ``concurrent.futures``, and the page then said "Reading ..." for ever, its seconds
        still counting, with no reader left and the result held in the server (issue #35: two at-limit uploads
        sat so for over 100 s)."""
        self._uncount()
        if self.cancelled:
            return
        try:
            failed = upload_failed(future, self.name)  # read_packed never raises; its process can die
            if failed:
                result = (None, failed)
            else:
                packed, error = future.result()
                result = (None if packed is None else unpack(packed)), error
        except MemoryError:
            result = (None, f"{self.name}: too large to unpack on this server now; try again later")
        except Exception as exc:  # noqa: BLE001: delivered as the read's error, never left hanging
            _log.warning("an upload's result could not be delivered: %s: %s", type(exc).__name__, exc)
            result = (None, f"{self.name}: not read ({type(exc).__name__})")
        try:
            self.doc.add_next_tick_callback(partial(self._deliver, *result))
        except Exception:  # the session closed meanwhile: nobody to tell
            _log.debug("upload finished after its session closed")

    def _deliver(self, record, error: str) -> None:
        self._stop_progress()
        status = "" if record is None else f"Read {self.name} in {time.monotonic() - self.started:.1f} s."
        self.widget.param.update(busy=False, status=status)
        self.done(record, error)
