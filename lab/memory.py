"""Give a closed room's memory back to the system: the allocator the server runs with, and a trim after sessions end.

Measured with ``benchmarks/bench_load.py``: after 15 sessions closed and were destroyed, every one of their
Python objects was gone (no LiveLab, no Document left) but the server kept its peak resident memory. CPython's
small-object allocator (pymalloc) takes memory in 1 MiB arenas and returns an arena only when every object in
it is freed; the objects a room leaves alive (caches, interned strings, Bokeh's and Panel's class-level state)
are spread over the arenas its sessions filled, so none was returned (``sys._debugmallocstats``: 110 arenas
held, 62 MB of blocks in use, 0 reclaimed). Two steps give it back:

* the server runs with the C library's allocator for small objects (:data:`ALLOCATOR_ENV`,
  ``PYTHONMALLOC=malloc``; :mod:`grpo_lab.server` sets it for itself), whose free pages can be returned
  wherever they lie in the heap, and with that allocator's threshold for giving a large block pages of its own
  fixed at 16 MiB (``MALLOC_MMAP_THRESHOLD_``). glibc's threshold is dynamic: each large block freed raises it
  (up to 32 MiB), after which the large blocks an upload brings (its pickled result, received on a reading lane's
  thread; the record's arrays) are carved from the heaps, among small objects that outlive them, and their pages
  are not all given back (one process, two rounds of four uploads at the limit, every tab closed and released:
  +25-31 MB resident for good, 15 MB of it in the reading thread's own heap; fixed at 16 MiB: +13 MB, at 1 MiB
  +11 MB). Fixed at 1 MiB, every array of a heavy Play frame (20,000 prompts x K = 64: 10 MB) would be mapped
  and faulted in afresh: its computation took 160 ms against 143 ms; at 16 MiB, 138 ms;
* :func:`release_soon`, called when a session is destroyed, runs :func:`release` once no session of the
  application is alive in the process (:func:`alive_sessions`) and :data:`RELEASE_DELAY_S` has passed: a
  garbage collection (Bokeh documents hold reference cycles) and glibc's ``malloc_trim(0)``, which hands the
  free pages back. A room leaving costs one release, and a room still there none.

Which sessions are alive is read from the server itself, not counted: Panel's ``--reuse-sessions`` keeps one
session per process to render pages from, never destroyed (the first visitor of the process connected to that
very session until :func:`grpo_lab.admission._page_template` built it apart); a count of sessions opened minus
sessions destroyed stayed at 1 in that process for good, so it never released again (seen with ``grpo-lab
serve``'s two processes: one kept a whole room's peak). That cached session is left out of :func:`alive_sessions`.

Where the C library is not glibc (no ``malloc_trim``), :func:`release` only collects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

__all__ = ["ALLOCATOR_ENV", "RELEASE_DELAY_S", "alive_sessions", "release", "release_soon", "releases", "trim"]

#: the server's allocator (set before the interpreter starts; a variable already in the environment is kept)
ALLOCATOR_ENV = {"PYTHONMALLOC": "malloc", "MALLOC_MMAP_THRESHOLD_": str(16 << 20)}
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
_released = 0  # releases run by release_soon in this process


def release() -> bool:
    """Drop the values only a room shared (:func:`grpo_lab.memo.drop_room_values`: a replay link's runs), collect
    garbage, then return the heap's free pages to the system; whether a trim ran (glibc only)."""
    from grpo_lab.memo import drop_room_values

    drop_room_values()
    return trim()


def trim() -> bool:
    """Collect garbage and return the heap's free pages to the system (what a closed tab's upload held), without
    dropping any value a room shares; whether a trim ran (glibc only)."""
    gc.collect()
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def releases() -> int:
    """How many releases :func:`release_soon` has run in this process (a room that left counts one)."""
    return _released


def alive_sessions(server_context) -> int:
    """Sessions of ``server_context``'s application (a Bokeh ``ServerContext``) not destroyed yet, leaving out
    the sessions Panel keeps to render pages from (``--reuse-sessions``: never destroyed, so never counted).

    A session whose websocket has closed is alive until the server destroys it (Bokeh's unused-session
    lifetime, 15 s by default, checked every 17 s). Sessions of another application on the same server
    (such as ``/`` when it is an index page) are not seen.
    """
    from panel.io.state import state

    kept = {id(s) for s in state._sessions.values()}
    return sum(1 for s in server_context.sessions if not s.destroyed and id(s) not in kept)


def _cancel_pending() -> None:
    global _pending
    if _pending is not None:
        loop, timeout = _pending
        loop.remove_timeout(timeout)
        _pending = None


def release_soon(session_context) -> None:
    """A session was destroyed (an ``on_session_destroyed`` callback): once no session is alive in its
    application (:func:`alive_sessions`), schedule :func:`release` RELEASE_DELAY_S from now on the server's
    event loop, replacing one already scheduled (a room leaving is released once). It runs only if still no
    session is alive then. While sessions are alive nothing runs: a collection and a trim in the middle of a
    room would cost it CPU and page faults for memory it is about to reuse."""
    global _pending
    from tornado.ioloop import IOLoop

    server_context = session_context.server_context
    if alive_sessions(server_context):
        return
    _cancel_pending()
    loop = IOLoop.current()

    def run() -> None:
        global _pending, _released
        _pending = None
        if alive_sessions(server_context):  # a visitor arrived meanwhile: its own end releases
            return
        release()
        _released += 1

    _pending = (loop, loop.call_later(RELEASE_DELAY_S, run))
