r"""A reading budget for untrusted uploads: rows and seconds, checked *while* a file is read.

The byte budget is the ingest's ``max_bytes`` (:class:`grpo_lab.sims.ingest.common.Bundle`
refuses a file, or a zip member as it decompresses, that would pass it). :class:`Budget`
adds what bytes alone do not bound:

* **rows** -- lines of a text file (counted with one ``bytes.count`` before it is parsed) or
  rows of a parquet file (from its footer), summed over the files read;
* **seconds** -- wall time since the budget was made, checked at every file read, every
  MiB of zip decompression and every :data:`CHECK_EVERY_LINES` JSON lines parsed;
* **cancel** -- :meth:`Budget.cancel` (the visitor left) stops the read at the next check.

A budget is a hook, not a parameter threaded through every reader: ``with use_budget(b):``
makes ``b`` the budget of the ingest run inside the block (in this thread or task: a
:class:`contextvars.ContextVar`), and the readers call :func:`charge` at the check points
above, which does nothing when no budget is in force (the CLI's ``grpo-lab ingest``).
Passing a limit raises :class:`grpo_lab.sims.errors.InputError` with a one-line message.
``rows`` and ``nbytes`` are readable from another thread while the read runs (progress).
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field

from ..errors import InputError

__all__ = ["Budget", "use_budget", "charge", "count_rows", "CHECK_EVERY_LINES"]

CHECK_EVERY_LINES = 4096  #: JSON lines parsed between two checks of the clock

_ACTIVE: contextvars.ContextVar["Budget | None"] = contextvars.ContextVar("grpo_lab_ingest_budget", default=None)


@dataclass
class Budget:
    """Limits on one ingest: ``max_rows`` rows and ``max_seconds`` seconds (None: no limit)."""

    max_rows: int | None = None
    max_seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    rows: int = 0  #: rows counted so far
    nbytes: int = 0  #: bytes read (zip members: decompressed) so far
    cancelled: bool = False

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def cancel(self) -> None:
        """Stop the read at its next check (it raises InputError there)."""
        self.cancelled = True

    def charge(self, rows: int = 0, nbytes: int = 0, where: str = "the upload") -> None:
        """Count ``rows`` and ``nbytes``; raise InputError if a limit is passed or the read was cancelled."""
        self.rows += rows
        self.nbytes += nbytes
        if self.cancelled:
            raise InputError(f"{where}: reading was cancelled")
        if self.max_rows is not None and self.rows > self.max_rows:
            raise InputError(f"{where}: more than {self.max_rows:,} rows, this server's limit for one upload "
                             "(convert large runs with grpo-lab ingest instead)")
        if self.max_seconds is not None and self.elapsed() > self.max_seconds:
            raise InputError(f"{where}: reading took more than {self.max_seconds:g} s, this server's limit for "
                             "one upload (convert large runs with grpo-lab ingest instead)")


@contextlib.contextmanager
def use_budget(budget: Budget | None):
    """Make ``budget`` the one :func:`charge` counts against inside the block (None: no budget)."""
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def charge(rows: int = 0, nbytes: int = 0, where: str = "the upload") -> None:
    """Count against the budget in force, if any (see :meth:`Budget.charge`); free when there is none."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.charge(rows, nbytes, where)


def count_rows(data: bytes) -> int:
    """Rows in a file's bytes: a parquet file's row count from its footer, else its number of lines.

    Only asked while a budget is in force; a parquet footer that cannot be read counts 0 rows
    (the reader then reports the file as unreadable).
    """
    if _ACTIVE.get() is None:
        return 0
    if data[:4] == b"PAR1":
        try:
            import io

            import pyarrow.parquet as pq

            return int(pq.ParquetFile(io.BytesIO(data)).metadata.num_rows)
        except Exception:  # not readable: the format's reader names the problem
            return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
