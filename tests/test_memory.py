"""grpo_lab.memory and the server's allocator: a room's memory goes back to the system once its sessions end.

The effect on a served room (resident memory before, at peak and after) is measured by
benchmarks/bench_load.py; these check the mechanism.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

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


class FakeSession:
    def __init__(self):
        self.destroyed = False


def fake_room(monkeypatch, n: int):
    """A server context with n sessions, plus the one Panel keeps to render pages from (never destroyed)."""
    from panel.io.state import state

    kept = FakeSession()
    monkeypatch.setattr(state, "_sessions", {"/app": kept})
    sessions = [kept, *(FakeSession() for _ in range(n))]
    return SimpleNamespace(server_context=SimpleNamespace(sessions=sessions)), sessions[1:]


def test_alive_sessions_leave_out_the_destroyed_and_the_kept(monkeypatch):
    context, room = fake_room(monkeypatch, 3)
    assert memory.alive_sessions(context.server_context) == 3
    room[0].destroyed = True
    assert memory.alive_sessions(context.server_context) == 2


def in_fresh_loop(coroutine):
    def run():
        loop = IOLoop()
        try:
            return loop.run_sync(coroutine)
        finally:
            loop.close(all_fds=True)

    with ThreadPoolExecutor(1) as pool:  # a fresh thread: the browser tests' driver may hold this one's loop
        return pool.submit(run).result()


def test_a_room_is_released_once_after_its_last_session(monkeypatch):
    runs = []
    monkeypatch.setattr(memory, "release", lambda: runs.append(1))
    monkeypatch.setattr(memory, "RELEASE_DELAY_S", 0.05)
    context, room = fake_room(monkeypatch, 6)  # a room of six, the first of them on the kept session
    released = memory.releases()

    async def leave():
        for session in room[:5]:  # five leave: one is still there, nothing is released
            session.destroyed = True
            memory.release_soon(context)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        assert runs == []
        room[5].destroyed = True
        memory.release_soon(context)  # the last one leaves (the kept session stays: it never counts)
        assert runs == []  # not at once: RELEASE_DELAY_S later
        await asyncio.sleep(0.2)
        return list(runs)

    assert in_fresh_loop(leave) == [1]
    assert memory.releases() == released + 1


def test_a_visitor_arriving_before_the_release_calls_it_off(monkeypatch):
    runs = []
    monkeypatch.setattr(memory, "release", lambda: runs.append(1))
    monkeypatch.setattr(memory, "RELEASE_DELAY_S", 0.1)
    context, room = fake_room(monkeypatch, 2)

    async def arrive_meanwhile():
        for session in room:  # the room leaves: a release is scheduled
            session.destroyed = True
            memory.release_soon(context)
        newcomer = FakeSession()
        context.server_context.sessions.append(newcomer)  # a new visitor's session, before the release runs
        await asyncio.sleep(0.3)
        assert runs == []  # it is alive when the release would run: nothing ran
        newcomer.destroyed = True
        memory.release_soon(context)  # it leaves: scheduled again
        another = FakeSession()
        context.server_context.sessions.append(another)  # another page opens before it runs: nothing runs
        await asyncio.sleep(0.3)
        assert runs == []
        another.destroyed = True
        memory.release_soon(context)  # its end schedules it again, and it runs
        await asyncio.sleep(0.3)
        return list(runs)

    assert in_fresh_loop(arrive_meanwhile) == [1]


def test_the_server_restarts_under_the_allocator_keeping_what_the_environment_chose(monkeypatch):
    calls = []
    monkeypatch.setattr(server.os, "execve", lambda exe, argv, env: calls.append((argv, env)))
    for key in memory.ALLOCATOR_ENV:
        monkeypatch.delenv(key, raising=False)
    server.with_allocator(["app.py", "--port", "5"])
    (argv, env), = calls
    assert argv[1:] == ["-m", "grpo_lab.server", "app.py", "--port", "5"]
    assert env["PYTHONMALLOC"] == "malloc" and env["MALLOC_MMAP_THRESHOLD_"] == str(16 << 20)
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")  # chosen by whoever starts it: kept, the threshold added
    server.with_allocator(["app.py"])
    assert calls[1][1]["PYTHONMALLOC"] == "pymalloc" and calls[1][1]["MALLOC_MMAP_THRESHOLD_"] == str(16 << 20)
    for key in memory.ALLOCATOR_ENV:  # everything chosen (as after the restart itself): no restart
        monkeypatch.setenv(key, "chosen")
    server.with_allocator(["app.py"])
    assert len(calls) == 2


#: a child process: a large block freed (raising glibc's dynamic threshold), then a smaller large block under a
#: small object that outlives it, as an upload's result arrives among a session's objects; prints the resident
#: memory (kB) the freed block left, with no trim
_LEFT_BEHIND = """
import sys
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
first = bytearray(30 << 20); del first
before = rss()
block = bytearray(20 << 20)
for i in range(0, len(block), 4096): block[i] = 1
keep = [bytes(64) for _ in range(2000)]
del block
print(rss() - before)
"""


def test_the_server_allocator_gives_a_freed_large_block_back_at_once():
    """Under :data:`grpo_lab.memory.ALLOCATOR_ENV` a large block freed leaves no resident memory, even after a
    larger one raised glibc's dynamic threshold (without the fixed threshold the 20 MB stay resident)."""
    def left(env):
        clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "PYTHONMALLOC"}
        out = subprocess.run([sys.executable, "-c", _LEFT_BEHIND], env={**clean, **env}, capture_output=True,
                             text=True, check=True, timeout=60)
        return int(out.stdout)

    assert left({"PYTHONMALLOC": "malloc"}) > 16 * 1024  # the mechanism: glibc's own threshold keeps the pages
    assert left(memory.ALLOCATOR_ENV) < 1024


def test_a_release_drops_what_only_a_room_shared_and_keeps_the_rest():
    """A replay link's runs (a memo made with room=True, several MB a run) go with the room; the lab's small
    caches stay for the next visitor."""
    from grpo_lab.memo import _ROOM_MEMOS, Memo
    from grpo_lab.replay import view as replay_view

    room, kept = Memo(4, room=True), Memo(4)
    room.get("run", lambda: bytearray(10))
    kept.get("curve", lambda: (1, 2))
    assert replay_view._RUN_VIEWS in _ROOM_MEMOS
    memory.release()
    calls = []
    room.get("run", lambda: calls.append("computed again") or bytearray(10))
    kept.get("curve", lambda: calls.append("curve computed again"))
    assert calls == ["computed again"]
