"""lab.process_life: a live process is alive; a dead one (reaped, or a zombie not yet reaped) and a pid whose
start time is not the one recorded (a reused pid) are not. Real processes, forked here."""

from __future__ import annotations

import os
import signal

from grpo_lab.process_life import alive, process_id


def test_this_process_is_alive_and_a_reused_pid_is_not_it():
    pid, start = process_id()
    assert pid == os.getpid() and start > 0  # Linux: /proc/self/stat's field 22
    assert alive(pid, start)
    assert not alive(pid, start + 1)  # same pid, another start: another process
    assert not alive(0, 0) and not alive(-1, 0)


def test_a_child_is_alive_until_it_dies_then_dead_as_a_zombie_and_once_reaped():
    said, say = os.pipe()
    hold_read, hold_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(say, b"%d %d" % process_id())
            os.read(hold_read, 1)  # waits to be killed
        finally:
            os._exit(1)
    try:
        child = tuple(int(x) for x in os.read(said, 64).split())
        assert child[0] == pid and child != process_id() and alive(*child)
        os.kill(pid, signal.SIGKILL)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped
        os.kill(pid, 0)  # the zombie still has its pid: a plain kill(pid, 0) would call it alive
        assert not alive(*child)
    finally:
        os.waitpid(pid, 0)
        for fd in (said, say, hold_read, hold_write):
            os.close(fd)
    assert not alive(*child)
