"""Each upload read in a process of its own that ends with the read, in lanes so small files never wait for large.

Measured before (one reader process per server process, kept for good): after one read at the limit the
reader stayed at 0.52-0.70 GB; a 0.3 MB upload waited 24 s behind four large ones. Now:

* :class:`Read` runs ``fn(*args)`` in a ``spawn`` process of its own (it imports the readers, not the app)
  and takes its one result back through a pipe; the process then exits, and the read's peak memory goes
  back to the system with it. A large file's worker runs at a lower priority than the server
  (:data:`READ_NICE`), so long reads take spare cores, not the event loop's; a small file's, short, does not.
  :meth:`Read.cancel` stops a read still waiting for its lane and terminates one already running (a newer
  upload or the tab closing).
* :class:`ReadLanes` holds two lanes of worker slots: files up to ``small_bytes`` go to the small lane
  (``small_slots`` at once), the others to the large lane (``large_slots`` at once, at most the machine's
  cores); reads beyond a lane's slots wait their turn in it, never in the other.
* Starting a process costs its imports (numpy and scipy: about a second of CPU, several seconds on a loaded
  machine), more than reading a small file. So each lane keeps one *spare*: a process started ahead, its
  imports (``preload``) done, waiting for one read; a read takes the lane's spare when there is one, else
  starts its own, and a new spare is started once the read is over (not during it: two processes importing
  at once would slow the read). A large upload also restocks the small lane's spare, so a small file
  arriving during large reads finds one. A spare that gets no read within
  :data:`SPARE_IDLE_S` is retired (its pipe closed, its exit waited for), so an idle server holds no reader
  at all, not even a zombie.

A worker that dies (killed for memory) ends its read with :class:`ReaderDied`; the lane goes on.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

__all__ = ["READ_NICE", "SPARE_IDLE_S", "Read", "ReadLanes", "ReaderDied"]

READ_NICE = {"small": 0, "large": 10}  #: how much lower than the server a lane's readers run (os.nice increment)
SPARE_IDLE_S = 20.0  #: a spare reader that gets no read within this many seconds exits


class ReaderDied(RuntimeError):
    """The reading process ended without a result."""


def _child(conn, nice: int, preload: str | None, idle_s: float) -> None:
    """A reading process: lower its priority, import ``preload``, wait up to ``idle_s`` for one
    ``(fn, args)``, send back ``fn(*args)`` and exit."""
    try:
        os.nice(nice)
    except (OSError, AttributeError):
        pass
    if preload:
        importlib.import_module(preload)
    if not conn.poll(idle_s):
        return
    try:
        fn, args = conn.recv()
    except EOFError:  # retired by the server while idle
        return
    conn.send(fn(*args))
    conn.close()


def _start(nice: int, preload: str | None, idle_s: float):
    """A new reading process and the parent's end of its pipe."""
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe(duplex=True)
    process = ctx.Process(target=_child, args=(theirs, nice, preload, idle_s), daemon=True,
                          name="grpo-lab-upload-read")
    process.start()
    theirs.close()
    return process, mine


REAP_CLOSE_TRIES = 100  #: tries of ``close()`` after the join, :data:`REAP_CLOSE_WAIT_S` apart (see :func:`_reap`)
REAP_CLOSE_WAIT_S = 0.01


def _reap(process) -> None:
    """Wait for a read's process to exit (killed after 10 s) and release its handles. multiprocessing's own cleanup
    of finished children (run by ``Process.start`` in whichever thread starts the next reader) may reap the same
    child at the same moment: this thread's ``waitpid`` then fails (ECHILD) and, until that thread has stored the exit
    code, ``close()`` takes the child for running and raises ValueError (seen once in CI: an unhandled exception in
    this thread). The close is then tried again a moment later; a child whose exit code never arrives is left to
    the garbage collector, which closes its handles."""
    process.join(10)
    if process.is_alive():
        process.kill()
        process.join()
    for _ in range(REAP_CLOSE_TRIES):
        try:
            process.close()
            return
        except ValueError:
            time.sleep(REAP_CLOSE_WAIT_S)


class Read:
    """One read in its own process (see the module docstring); ``future`` gets ``fn(*args)``'s return value."""

    def __init__(self, lane: "_Lane", fn, args: tuple):
        self._lock = threading.Lock()
        self._process = None
        self._cancelled = False
        self.pid: int | None = None  #: the reading process's id, once it started
        self.started = threading.Event()  #: set when the read was handed to its process
        self.future: Future = lane.pool.submit(self._run, lane, fn, args)

    def _run(self, lane: "_Lane", fn, args):
        with self._lock:
            if self._cancelled:
                raise CancelledError()
            process, conn = lane.take()
            self._process, self.pid = process, process.pid
        try:
            conn.send((fn, args))
            self.started.set()
            return conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            raise ReaderDied("the reading process ended without a result") from None
        finally:
            conn.close()
            with self._lock:
                self._process = None
            # the result is here: the process's exit (its interpreter's teardown) is waited for apart
            threading.Thread(target=_reap, args=(process,), daemon=True).start()
            lane.restock()

    def cancel(self) -> None:
        """Never start, or stop now (the future then ends with :class:`ReaderDied` or is cancelled)."""
        with self._lock:
            self._cancelled = True
            if self._process is not None and self._process.is_alive():
                self._process.terminate()
        self.future.cancel()


class _Lane:
    """Worker slots (threads, each waiting on one reading process) and the lane's spare process."""

    def __init__(self, name: str, slots: int, preload: str | None, idle_s: float):
        self.pool = ThreadPoolExecutor(max(1, slots), thread_name_prefix=f"upload-{name}")
        self.nice, self.preload, self.idle_s = READ_NICE[name], preload, idle_s
        self._lock = threading.Lock()
        self._spare = None

    def take(self):
        """A reading process for one read: the spare if it is still waiting, else a new one."""
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and not spare[0].is_alive():
            spare[1].close()
            _reap(spare[0])
            spare = None
        return spare or _start(self.nice, self.preload, self.idle_s)

    def restock(self) -> None:
        """Start the spare (after a read) unless one is waiting."""
        with self._lock:
            if not self.preload:
                return
            if self._spare is not None and not self._spare[0].is_alive():  # gone idle: start a fresh one
                self._spare[1].close()
                _reap(self._spare[0])
                self._spare = None
            if self._spare is None:
                self._spare = spare = _start(self.nice, self.preload, self.idle_s + 5)
                timer = threading.Timer(self.idle_s, self._retire, args=(spare,))
                timer.daemon = True
                timer.start()

    def _retire(self, spare) -> None:
        """The spare got no read in ``idle_s``: close its pipe (it exits) and wait for it, so no zombie stays."""
        with self._lock:
            if self._spare is not spare:
                return  # taken by a read meanwhile
            self._spare = None
        spare[1].close()
        _reap(spare[0])


class ReadLanes:
    """Two lanes of reading processes: small files apart from large ones (see the module docstring).

    ``preload``: the module a spare imports ahead of its read (the one ``fn`` lives in); None: no spares.
    """

    def __init__(self, large_slots: int, small_slots: int, small_bytes: int, preload: str | None = None,
                 idle_s: float = SPARE_IDLE_S):
        self.small_bytes = small_bytes
        self.large = _Lane("large", large_slots, preload, idle_s)
        self.small = _Lane("small", small_slots, preload, idle_s)

    def submit(self, size: int, fn, *args) -> Read:
        """Read ``fn(*args)`` in the lane for a read of ``size`` bytes. Any upload restocks the small lane's
        spare: while large files are read, a small one may follow at any moment and should not wait for imports."""
        lane = self.small if size <= self.small_bytes else self.large
        if lane is self.large:
            self.small.restock()
        return Read(lane, fn, args)
