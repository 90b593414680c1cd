"""grpo_lab.memory and the server's allocator: a room's memory goes back to the system once its sessions end.

The effect on a served room (resident memory before, at peak and after) is measured by
benchmarks/bench_load.py; these check the mechanism.
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor

from tornado.ioloop import IOLoop

from grpo_lab import memory, server


def test_release_collects_cycles_and_trims_on_glibc():
    class Cycle:
        pass

    import gc
    import weakref

    a, b = Cycle(), Cycle()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    gc.disable()
    try:
        del a, b
        trimmed = memory.release()
        assert ref() is None  # the cycle was collected by release(), not by the (disabled) automatic gc
    finally:
        gc.enable()
    assert trimmed is (memory._TRIM is not None)
    if sys.platform.startswith("linux") and "glibc" in " ".join(__import__("platform").libc_ver()):
        assert trimmed


def test_a_room_is_released_once_after_its_last_session(monkeypatch):
    runs = []
    monkeypatch.setattr(memory, "release", lambda: runs.append(1))
    monkeypatch.setattr(memory, "RELEASE_DELAY_S", 0.05)

    monkeypatch.setattr(memory, "_live", 0)

    async def room():
        for _ in range(6):  # a room of six arrives
            memory.session_started()
        for _ in range(5):  # five leave: one is still there, nothing is released
            memory.release_soon(None)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert runs == []
        memory.release_soon(None)  # the last one leaves
        assert runs == []  # not at once: RELEASE_DELAY_S later
        await asyncio.sleep(0.2)
        return list(runs)

    def in_fresh_loop():
        loop = IOLoop()
        try:
            return loop.run_sync(room)
        finally:
            loop.close(all_fds=True)

    with ThreadPoolExecutor(1) as pool:  # a fresh thread: the browser tests' driver may hold this one's loop
        assert pool.submit(in_fresh_loop).result() == [1]


def test_the_server_restarts_under_the_allocator_unless_one_is_chosen(monkeypatch):
    calls = []
    monkeypatch.setattr(server.os, "execve", lambda exe, argv, env: calls.append((argv, env)))
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    server.with_allocator(["app.py", "--port", "5"])
    (argv, env), = calls
    assert argv[1:] == ["-m", "grpo_lab.server", "app.py", "--port", "5"]
    assert env["PYTHONMALLOC"] == memory.ALLOCATOR_ENV["PYTHONMALLOC"]
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")  # chosen by whoever starts it: kept
    server.with_allocator(["app.py"])
    assert len(calls) == 1

