r"""Parse the files of a large output folder on every core: threads by default, processes when asked.

Threads (the default, :func:`map_files`): the files are read one after another in the calling
thread, under the bundle's size cap (:meth:`.common.Bundle.read`), and each file's bytes are
handed to a pool of :func:`workers` threads that parse them; pyarrow's JSON reader releases the
GIL, so reading the next file and parsing two others run at once on two cores, with no copying
between processes. At most ``threads + 1`` files' bytes are held at a time (bounded memory), and
results come back in file order. Not used under an upload's row/time budget (:mod:`.budget` is per
thread): there every file is parsed in the calling thread.

Processes (``Bundle.workers`` > 1: ``grpo-lab ingest --workers N`` or ``ingest(..., workers=N)``):
only for what is safe to hand to another process: files of a folder on disk (not an upload, not a
zip), with no upload budget in force, totalling at least :data:`PARALLEL_MIN_BYTES`. The size cap
is checked on the files' sizes before any is read, and each worker refuses a file that grew past
its size or starts with a pickle header, as :meth:`.common.Bundle.read` does. Workers are started
with ``spawn`` (never ``fork``: the lab's server has threads), and exceptions (an
:class:`InputError` naming a file and line) travel back unchanged. If the pool breaks (a worker
killed, a ``__main__`` that cannot be re-imported), the remaining files are read in this process.
Measured on the shared 2-core machine under load, 2 processes were *slower* than one process
(31-34 s against 13-17 s for 100,000 verl groups): pickling each file's results back costs more
than it saves; threads share memory and do not pay it.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from ..errors import InputError
from .budget import _ACTIVE
from .common import Bundle, _refuse_pickle

__all__ = ["map_files", "PARALLEL_MIN_BYTES", "THREADS_MIN_FILES", "workers"]

PARALLEL_MIN_BYTES = 256 * 1024 * 1024  #: below this a folder is read in this process
_MAX_WORKERS = 8
THREADS_MIN_FILES = 3  #: fewer files than this are parsed in the calling thread (no pool to start)


def workers() -> int:
    """Worker processes to use: the cores this process may run on (at most :data:`_MAX_WORKERS`)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, _MAX_WORKERS))


def _read_and_call(path: str, label: str, size: int, fn, args: tuple):
    with open(path, "rb") as fh:
        data = fh.read(size + 1)
    if len(data) > size:
        raise InputError(f"{label}: grew while it was being read; read it again when the run has stopped writing")
    _refuse_pickle(label, data[:8])
    return fn(data, label, *args)


def map_files(bundle: Bundle, names: list[str], fn, args: tuple = ()):
    """Yield ``fn(data, label, *args)`` for each file in ``names``, in order, reading under ``bundle``'s cap.

    ``fn`` must be a module-level function (it is sent to the workers) and return something picklable.
    """
    sizes = [bundle.entries[n][0] for n in names]
    root = Path(bundle.origin)
    n_workers = min(int(getattr(bundle, "workers", 1) or 1), workers())
    parallel = (n_workers > 1 and not bundle.single and bundle.origin != "upload"
                and not bundle.origin.endswith(".zip") and root.is_dir() and _ACTIVE.get() is None
                and len(names) > 1 and sum(sizes) >= PARALLEL_MIN_BYTES
                and bundle.read_bytes + sum(sizes) <= bundle.max_bytes)
    done = 0
    if parallel:
        try:
            with ProcessPoolExecutor(max_workers=n_workers, mp_context=get_context("spawn")) as pool:
                futures = [pool.submit(_read_and_call, str(root / n), bundle.label(n), s, fn, args)
                           for n, s in zip(names, sizes)]
                try:
                    for future, size in zip(futures, sizes):
                        result = future.result()
                        bundle.read_bytes += size
                        if bundle.progress is not None:
                            bundle.progress.update(size)
                        done += 1
                        yield result
                finally:
                    for future in futures:
                        future.cancel()
        except BrokenProcessPool:
            pass  # read what is left here
    rest = names[done:]
    n_threads = workers()
    if n_threads > 1 and len(rest) >= THREADS_MIN_FILES and _ACTIVE.get() is None:
        yield from _threaded(bundle, rest, fn, args, n_threads)
        return
    for name in rest:
        yield fn(bundle.read(name, cache=False), bundle.label(name), *args)


def _threaded(bundle: Bundle, names: list[str], fn, args: tuple, n_threads: int):
    """``fn`` over ``names`` on ``n_threads`` threads, files read here in order, results in file order;
    at most ``n_threads + 1`` files' bytes held at once. An exception in ``fn`` is raised at its file's turn."""
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=n_threads, thread_name_prefix="grpo-lab-ingest") as pool:
        try:
            for name in names:
                pending.append(pool.submit(fn, bundle.read(name, cache=False), bundle.label(name), *args))
                while len(pending) > n_threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
