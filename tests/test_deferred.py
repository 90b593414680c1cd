"""lab.views.deferred: a room's deferred builds run one at a time, in order, with the event loop free between."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from tornado.ioloop import IOLoop

from grpo_lab.views.deferred import BuildQueue


class Doc:
    """What the queue uses of a Bokeh document: add_next_tick_callback (run on the loop's next turn)."""

    def __init__(self, loop, alive=True):
        self.loop, self.alive = loop, alive

    def add_next_tick_callback(self, fn):
        if self.alive:  # a destroyed session never runs it
            self.loop.add_callback(fn)


def in_fresh_loop(coro_fn):
    def run():
        loop = IOLoop()
        try:
            return loop.run_sync(lambda: coro_fn(loop))
        finally:
            loop.close(all_fds=True)

    with ThreadPoolExecutor(1) as pool:  # a fresh thread: a browser test's driver may hold this one's loop
        return pool.submit(run).result()


def test_builds_run_one_at_a_time_in_order_with_the_loop_free_between():
    async def room(loop):
        log = []
        queue = BuildQueue(loop, gap_ms=5, stall_s=5)
        docs = [Doc(loop) for _ in range(4)]

        def build(i):
            def fn():
                log.append(("start", i))
                assert len([e for e in log if e[0] == "start"]) - len([e for e in log if e[0] == "end"]) == 1
                log.append(("end", i))
            return fn

        for i, doc in enumerate(docs):
            queue.add(doc, build(i), delay_ms=20)

        async def message():  # a visitor's message arriving while builds are queued
            await asyncio.sleep(0.03)
            log.append(("message", None))

        await asyncio.gather(message(), asyncio.sleep(0.3))
        return log

    log = in_fresh_loop(room)
    starts = [i for kind, i in log if kind == "start"]
    assert starts == [0, 1, 2, 3]
    m = log.index(("message", None))
    assert 0 < m < len(log) - 1 and log[m - 1][0] == "end"  # handled between two builds, not after all of them


def test_a_build_for_a_session_gone_does_not_stall_the_queue():
    async def room(loop):
        ran = []
        queue = BuildQueue(loop, gap_ms=1, stall_s=0.05)
        gone, alive = Doc(loop, alive=False), Doc(loop)  # the queue holds documents weakly: kept here
        queue.add(gone, lambda: ran.append("gone"))
        queue.add(alive, lambda: ran.append("next"))
        await asyncio.sleep(0.3)
        return ran

    assert in_fresh_loop(room) == ["next"]
