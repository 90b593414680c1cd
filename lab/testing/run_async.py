"""A coroutine run to its end on a fresh event loop in a thread of its own (``run_async``).

A test worker may hold a session-wide Playwright browser, and Playwright's sync API keeps an asyncio loop running
in the main thread, so ``asyncio.run`` there raises "cannot be called from a running event loop" (and the unstarted
coroutine warns, much later, in whichever test the garbage collector meets it). Running the coroutine in its own
thread gives it a loop of its own whatever the main thread holds.
"""

from __future__ import annotations

import asyncio
import threading

__all__ = ["run_async"]


def run_async(coro, timeout: float | None = None):
    """``asyncio.run(coro)`` in a new thread; returns its result or raises its exception (TimeoutError after
    ``timeout`` seconds, the thread left to finish on its own)."""
    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as exc:  # handed to the caller
            out["error"] = exc

    t = threading.Thread(target=target, name="run_async", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"the coroutine did not finish within {timeout} s")
    if "error" in out:
        raise out["error"]
    return out.get("value")
