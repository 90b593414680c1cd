"""Give a closed room's memory back to the system: the allocator the server runs with, and a trim after sessions end.

Measured with ``benchmarks/bench_load.py``: after 15 sessions closed and were destroyed, every one of their
Python objects was gone (no LiveLab, no Document left) but the server kept its peak resident memory. CPython's
small-object allocator (pymalloc) takes memory in 1 MiB arenas and returns an arena only when every object in
it is freed; the objects a room leaves alive (caches, interned strings, Bokeh's and Panel's class-level state)
are spread over the arenas its sessions filled, so none was returned (``sys._debugmallocstats``: 110 arenas
held, 62 MB of blocks in use, 0 reclaimed). Two steps give it back:

* the server runs with the C library's allocator for small objects (:data:`ALLOCATOR_ENV`,
  ``PYTHONMALLOC=malloc``; :mod:`grpo_lab.server` sets it for itself), whose free pages can be returned
  wherever they lie in the heap;
* :func:`release_soon`, called when a session is destroyed, runs :func:`release` once the last session alive
  in the process has been destroyed (:func:`session_started` counts them) and :data:`RELEASE_DELAY_S` has
  passed: a garbage collection (Bokeh documents hold reference cycles) and glibc's ``malloc_trim(0)``, which
  hands the free pages back. A room leaving costs one release, and a room still there none.

Where the C library is not glibc (no ``malloc_trim``), :func:`release` only collects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

__all__ = ["ALLOCATOR_ENV", "RELEASE_DELAY_S", "release", "release_soon", "session_started"]

ALLOCATOR_ENV = {"PYTHONMALLOC": "malloc"}  #: the server's allocator (set before the interpreter starts)
RELEASE_DELAY_S = 2.0  #: release this long after the last session destroyed (one release per room leaving)


def _malloc_trim():
    """glibc's ``malloc_trim`` as a callable, or None where there is none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()
_pending = None  # (loop, timeout) of the next release, while one is scheduled


def release() -> bool:
    """Collect garbage, then return the heap's free pages to the system; whether a trim ran (glibc only)."""
    gc.collect()
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


_live = 0  # sessions of this process built and not yet destroyed


def session_started() -> None:
    """Count a session of this process whose page has opened (its ``release_soon`` comes when it is destroyed;
    one destroyed uncounted, such as a page that never connected, counts for nothing)."""
    global _live
    _live += 1


def release_soon(session_context) -> None:
    """A session was destroyed (an ``on_session_destroyed`` callback): once it was the last one alive in this
    process, schedule :func:`release` RELEASE_DELAY_S from now on the server's event loop, replacing one already
    scheduled (a room leaving is released once). While sessions are alive nothing runs: a collection and a trim
    in the middle of a room would cost it CPU and page faults for memory it is about to reuse."""
    global _pending, _live
    from tornado.ioloop import IOLoop

    _live = max(0, _live - 1)
    if _live:
        return
    loop = IOLoop.current()
    if _pending is not None and _pending[0] is loop:
        loop.remove_timeout(_pending[1])

    def run() -> None:
        global _pending
        _pending = None
        release()

    _pending = (loop, loop.call_later(RELEASE_DELAY_S, run))
