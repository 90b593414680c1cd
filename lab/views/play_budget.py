"""Heavy work's fair share of the server: one budget per process, shared by a visitor's tabs and by all visitors.

All sessions of a server process share one event loop. Play runs in the browser (the grid view's play loop),
which sends the progress every ``play_sync_ms`` (``grpo_lab.grid.spec.PLAY_SYNC_MS``) so the plots, tables
and captions follow; at the heaviest settings (20,000 prompts, K = 64, rho = 0.9: the server evaluates the
grid too) one such redraw costs most of a second, and drawing every one of them would let one visitor's Play
take the whole loop. A budget per tab was not enough: eight tabs of one visitor at those settings, playing,
put another visitor's round trip at median 2.0x idle, p90 1.67 s, max 5.55 s.

:class:`FrameBudget` (one per session) spaces a session's heavy redraws; the time each one takes is charged
to :class:`HeavyWork` (one per process, :data:`HEAVY_WORK`) under the session's visitor
(:func:`grpo_lab.visitor.visitor_key`). A redraw of work ``w`` that began at ``t`` makes the next one due

* for the session: at ``t + w / share`` (``share`` = :data:`PLAY_SHARE`);
* for every tab of its visitor: ``w / visitor_share`` after the visitor's previous due time or ``t``, whichever
  is later (the visitor's tabs together use at most :data:`PLAY_SHARE` of the process);
* for heavy work of all visitors together: ``w / total_share`` after the total's previous due time or
  ``t`` (at most :data:`HEAVY_SHARE` of the process). This total holds back only the visitors using more
  than half an equal part of it lately (``total_share / 2n`` among the ``n`` visitors with any recent use,
  usage decaying over :data:`USAGE_TAU_S`; half, because a heavy visitor's decaying usage dips between its
  frames): a visitor using little is never made to wait by the heavy ones.

**The event loop is not held by a heavy frame** (issue #35): a redraw may come in two parts, ``prepare()`` (the
values from the core: pure computation, no Bokeh model touched) and ``fn(prepared)`` (the models updated from
them). ``prepare`` runs in the process's one heavy-work thread (:data:`HEAVY_THREAD`), and ``fn`` then on the
event loop, in the document's lock. numpy's and scipy's array loops release the GIL, so the loop serves other
visitors' messages while a frame is computed: a heavy frame at 20,000 prompts (about 0.8 s of CPU, most of it the
Jensen curves' and the decay curve's beta-binomial sums) used to hold the loop for all of it, and another visitor's
round trip that arrived meanwhile waited for the rest (play8: p90 2.42x idle). One thread per process: visitors'
heavy frames are computed one at a time, as before. While it computes, the interpreter's switch interval is 1 ms
(:data:`SWITCH_INTERVAL_S`, Python's default 5 ms): the loop's thread gives the GIL up at every socket read and
write and waited up to 5 ms each time to get it back (with 5 ms, another visitor's p90 was 2.26x idle in Chromium;
with 1 ms, 1.25x, beside 2.05x before this change, in the same run). Only heavy frames go there: a session whose last frame took
less than :data:`INLINE_WORK_S` of CPU (and a session's first frame) computes inline, so a light visitor's redraw never
waits in that thread's queue behind a heavy visitor's (it did, in a first version: 99 s once, at load 15). The frame's work charged to the budget is the thread's
wall time plus ``fn``'s.

A redraw asked for before it is due waits and coalesces into one redraw of the state as it is then
(:meth:`FrameBudget.request`): the plots follow the animation more slowly instead of the server. When a
redraw waits for the shared budget (another tab of the visitor, or the total) more than :data:`BUSY_AFTER_S`
longer than for its own, the session's ``on_busy(True)`` is called (the page shows :data:`BUSY_NOTICE`), and
``on_busy(False)`` when a redraw runs at once :data:`BUSY_CLEAR_S` after the last one held back. A cheap redraw (a small population, rho = 0) is not slowed: its next one is due
before the next push anyway. The same budget bounds the other redraws only the server can paint (dragging
rho at 20,000 prompts).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from concurrent.futures import ThreadPoolExecutor

__all__ = ["HEAVY_THREAD", "INLINE_WORK_S", "SWITCH_INTERVAL_S", "PLAY_SHARE", "HEAVY_SHARE", "BUSY_AFTER_S", "BUSY_CLEAR_S", "USAGE_TAU_S", "BUSY_NOTICE", "HeavyWork", "HEAVY_WORK",
           "FrameBudget"]

PLAY_SHARE = 0.25  #: the largest share of a server process's time one visitor's heavy redraws (all tabs) may use
HEAVY_SHARE = 0.5  #: the largest share of a server process's time heavy redraws of all visitors together may use
BUSY_AFTER_S = 0.1  #: a redraw held back this much longer than its own spacing shows the busy notice
BUSY_CLEAR_S = 5.0  #: the busy notice goes once no redraw has been held back for this long (it does not flicker)
USAGE_TAU_S = 5.0  #: how fast a visitor's recent use of heavy work is forgotten (time constant, seconds)
BUSY_NOTICE = "The server is busy: the plots follow Play (and redraws at these settings) less often."
#: the thread a process's heavy frames are computed in (their ``prepare``), off the event loop
HEAVY_THREAD = ThreadPoolExecutor(1, thread_name_prefix="grpo-lab-heavy")
#: a session whose last frame's computation took less than this much CPU (s, the computing thread's own time, which
#: the machine's load does not inflate as it does wall time) computes its next one inline: a light visitor's frame
#: never queues behind the heavy ones in :data:`HEAVY_THREAD` (its first frame is inline too)
INLINE_WORK_S = 0.15


def _check_share(share: float, name: str) -> None:
    if not 0 < share <= 1:
        raise ValueError(f"{name} must be in (0, 1], got {share}")


class HeavyWork:
    """When each visitor may start its next heavy redraw, from the work they and everyone did (see the module
    docstring). ``clock``: seconds, for tests. One per process; all calls come from its event loop."""

    def __init__(self, visitor_share: float = PLAY_SHARE, total_share: float = HEAVY_SHARE,
                 tau: float = USAGE_TAU_S, clock=time.monotonic):
        _check_share(visitor_share, "visitor_share")
        _check_share(total_share, "total_share")
        self.visitor_share, self.total_share, self.tau, self.clock = visitor_share, total_share, tau, clock
        self._visitor_next: dict[str, float] = {}
        self._total_next = -math.inf
        self._usage: dict[str, tuple[float, float]] = {}  # visitor -> (share used lately, as of time)

    def usage(self, visitor: str, now: float | None = None) -> float:
        """The visitor's recent share of the process (work per second, decaying with ``tau``)."""
        used, at = self._usage.get(visitor, (0.0, 0.0))
        now = self.clock() if now is None else now
        return used * math.exp(-max(0.0, now - at) / self.tau)

    def due(self, visitor: str) -> float:
        """When the visitor may start its next heavy redraw (a time on ``clock``; past or now: at once)."""
        now = self.clock()
        due = self._visitor_next.get(visitor, -math.inf)
        if self._total_next > now:
            usage = {v: self.usage(v, now) for v in self._usage}
            usage = {v: u for v, u in usage.items() if u > 1e-3}
            if usage.get(visitor, 0.0) > 0.5 * self.total_share / max(1, len(usage)):
                due = max(due, self._total_next)
        return due

    def spent(self, visitor: str, start: float, work: float) -> None:
        """Charge ``work`` seconds of a redraw the visitor began at ``start``."""
        self._visitor_next[visitor] = max(self._visitor_next.get(visitor, -math.inf), start) + work / self.visitor_share
        self._total_next = max(self._total_next, start) + work / self.total_share
        now = max(start + work, self.clock())
        self._usage[visitor] = (self.usage(visitor, now) + work / self.tau, now)
        self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop visitors whose budget is earned back and whose usage has faded (a visitor who left)."""
        if len(self._usage) < 64:
            return
        for v in [v for v in self._usage if self._visitor_next.get(v, -math.inf) < now and self.usage(v, now) < 1e-3]:
            self._usage.pop(v, None)
            self._visitor_next.pop(v, None)


HEAVY_WORK = HeavyWork()  #: the process's budget for heavy work


class FrameBudget:
    """When the session's next heavy frame may start: its own spacing, its visitor's and the process's shared
    budget (:class:`HeavyWork`). ``clock``: seconds, for tests; ``visitor``: the session's visitor key;
    ``work``: the shared budget (a fresh one of its own when None and ``clock`` is given, else :data:`HEAVY_WORK`).

    Shared by Play's progress pushes and by redraws only the server can paint (rho > 0, a new population):
    :meth:`request` runs such a redraw now if the budget allows, else once, when it does (requests meanwhile
    coalesce into that one, which paints the state as it is then).
    """

    def __init__(self, share: float = PLAY_SHARE, clock=None, visitor: str = "", work: HeavyWork | None = None,
                 on_busy=None):
        _check_share(share, "share")
        if work is None:
            work = HEAVY_WORK if clock is None else HeavyWork(clock=clock)
        self.share, self.clock, self.work = share, clock or time.monotonic, work
        self.visitor, self.on_busy = visitor or f"session:{id(self)}", on_busy
        self._next = -float("inf")
        self._pending = None
        self._computing = False  # a frame's prepare is running in the heavy thread
        self._last_cpu = 0.0  # the last frame's computation, CPU s: under INLINE_WORK_S the next is computed inline
        self._again = None  # a request that came meanwhile: (fn, doc, prepare)
        self.busy = False  #: a frame waited for the shared budget lately, not only for its own
        self._held_at = -math.inf  # when a frame was last held back by the shared budget

    def due(self) -> float:
        """When the next frame may start: the later of the session's own due time and its visitor's."""
        return max(self._next, self.work.due(self.visitor))

    def ready(self) -> bool:
        """Whether the frame may start now (always true before the first of the visitor's)."""
        return self.clock() >= self.due()

    @contextlib.contextmanager
    def frame(self):
        """Time the work of one frame and charge it: to this session and to its visitor's shared budget."""
        start = self.clock()
        try:
            yield
        finally:
            self._charge(start, self.clock() - start)

    def _charge(self, start: float, work: float) -> None:
        """Charge ``work`` seconds of a frame begun at ``start``: this session's next frame is due after its share,
        and the visitor's (and every visitor's) budget is spent."""
        self._next = start + work / self.share
        self.work.spent(self.visitor, start, work)

    def _set_busy(self, busy: bool) -> None:
        if busy != self.busy:
            self.busy = busy
            if self.on_busy is not None:
                self.on_busy(busy)

    def request(self, fn, doc, prepare=None) -> None:
        """Run a frame: ``fn()``, or with ``prepare``, ``fn(prepare())`` (``prepare`` in :data:`HEAVY_THREAD` when
        there is a server ``doc`` and a running event loop); now if the budget allows (or there is no server
        ``doc``), else once when it does, with every request until then coalesced into that one."""
        if doc is None or (self._pending is None and self.ready()):
            if self.clock() - self._held_at >= BUSY_CLEAR_S:
                self._set_busy(False)
            self._run(fn, doc, prepare)
            return
        if self._pending is None:
            self._schedule(fn, doc, prepare)
        elif self._computing:  # a frame being computed shows the state it began with: one more follows it
            self._again = (fn, doc, prepare)

    def _run(self, fn, doc, prepare) -> None:
        """One frame now: inline, or its ``prepare`` in the heavy thread and ``fn`` back on the loop."""
        loop = _running_loop()
        if prepare is None or doc is None or loop is None or self._last_cpu < INLINE_WORK_S:
            with self.frame():
                cpu = time.thread_time()
                fn(prepare()) if prepare is not None else fn()
                self._last_cpu = time.thread_time() - cpu
            return
        start = self.clock()
        _short_switch_interval()

        def computed_by_thread():
            cpu = time.thread_time()
            try:
                return prepare()
            finally:
                self._last_cpu = time.thread_time() - cpu

        self._pending = future = loop.run_in_executor(HEAVY_THREAD, computed_by_thread)
        self._computing = True

        def done() -> None:
            self._pending, self._computing = None, False
            again, self._again = self._again, None
            if again is not None:
                self.request(*again)

        def apply():
            began = self.clock()
            try:
                fn(future.result())
            finally:
                self._charge(start, (began - start) + (self.clock() - began))  # the thread's wall time, then fn's
                done()

        def computed(_future) -> None:
            if future.cancelled() or future.exception() is not None:
                done()
                if not future.cancelled():
                    future.result()  # raised here, on the loop, as an inline frame's error would be
                return
            try:
                doc.add_next_tick_callback(apply)  # in the document's lock, as Bokeh's callbacks run
            except Exception:  # noqa: BLE001: the session was destroyed meanwhile (its tab closed)
                self._pending, self._computing, self._again = None, False, None

        future.add_done_callback(computed)

    def _schedule(self, fn, doc, prepare=None) -> None:
        """Run ``fn`` when due; a frame found not yet due then (the visitor's other tabs went first) waits again."""
        due = self.due()
        # held back by the visitor's other tabs or by the total, noticeably longer than by its own spacing
        if due > max(self._next, self.clock()) + BUSY_AFTER_S:
            self._held_at = self.clock()
            self._set_busy(True)

        def run():
            self._pending = None
            if not self.ready():
                self._schedule(fn, doc, prepare)
                return
            self._run(fn, doc, prepare)

        wait_ms = max(1, int(1000 * (due - self.clock())))
        self._pending = doc.add_timeout_callback(run, wait_ms)


#: the interpreter's switch interval (s) while heavy frames are computed in a thread: the event loop's thread, which
#: gives the GIL up at every socket read and write, waits up to this long for it to come back (Python's 5 ms made a
#: round trip of many such hand-overs slower)
SWITCH_INTERVAL_S = 0.001


def _short_switch_interval() -> None:
    import sys

    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


def _running_loop():
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
