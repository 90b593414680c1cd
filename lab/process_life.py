"""Whether a process of the server is still alive, told apart from a later process given the same pid.

A process is named by ``(pid, start)``: its pid and its start time in clock ticks since boot (field 22 of Linux's
``/proc/PID/stat``; 0 where there is no ``/proc``). :func:`alive` says whether that process still runs:

* no process of that pid (``os.kill(pid, 0)`` raises ProcessLookupError): dead;
* a zombie (state ``Z`` or ``X`` in ``/proc/PID/stat``: it died and its parent has not yet reaped it with
  ``waitpid``): dead, since it holds nothing any more;
* a process of that pid that started at another time (the pid was reused): dead, it is another process;
* one that exists but belongs to another user (PermissionError): alive.

Without ``/proc`` only the first and the last are told (a zombie, or a reused pid, reads as alive: the safe side
for a count that must not be freed too early).
"""

from __future__ import annotations

import os

__all__ = ["process_id", "alive"]

_ME: tuple[int, int] | None = None


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start)`` of ``pid`` from ``/proc/PID/stat``, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()  # after the command's name, which may hold spaces and parentheses
    try:
        return fields[0], int(fields[19])  # field 3 (state) and field 22 (starttime) of proc(5)
    except (IndexError, ValueError):
        return None


def process_id() -> tuple[int, int]:
    """This process's ``(pid, start)`` (read again after a fork)."""
    global _ME
    pid = os.getpid()
    if _ME is None or _ME[0] != pid:
        stat = _stat(pid)
        _ME = (pid, stat[1] if stat else 0)
    return _ME


def alive(pid: int, start: int) -> bool:
    """Whether the process ``(pid, start)`` (as :func:`process_id` gave it) still runs (see the module docstring)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _stat(pid)
    if stat is None:
        return True
    state, started = stat
    return state not in ("Z", "X") and (start == 0 or started == start)
