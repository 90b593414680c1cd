"""Following a run record that is still being written (the built-in trainer's, the TRL recorder's).

:class:`RecordFollower` is the replay tab's polling logic without Panel: given a record
directory it says whether ``run.json`` changed since the last read (its size and
modification time), re-reads the record when it did, and stops once the record says
``complete`` (or the path is not a directory: uploads never change). Reading a record
that a writer is replacing can fail for a moment (a chunk file removed between reading
``run.json`` and reading the chunk); such a read is skipped and tried again at the next
poll. The tab polls every :data:`POLL_S` seconds, so a new step appears within about
two polls of the writer's flush.
"""

from __future__ import annotations

from pathlib import Path

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import RunRecord, read_record

__all__ = ["RecordFollower", "POLL_S", "finished"]

POLL_S = 1.0  #: seconds between two polls of a record still being written


def finished(record: RunRecord) -> bool:
    """Whether a record says it is complete (records without the flag are finished runs)."""
    return bool(record.meta.get("complete", True))


class RecordFollower:
    """Poll one record directory (see the module docstring)."""

    def __init__(self, source, record: RunRecord | None = None):
        self.path = Path(source) if isinstance(source, str) else None
        self.active = self.path is not None and self.path.is_dir() and (record is None or not finished(record))
        self._seen = self._signature() if self.active else None

    def _signature(self):
        try:
            st = (self.path / "run.json").stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def poll(self) -> RunRecord | None:
        """The re-read record when ``run.json`` changed (and reads cleanly), else None.

        Deactivates itself once the record read is complete.
        """
        if not self.active:
            return None
        sig = self._signature()
        if sig is None or sig == self._seen:
            return None
        try:
            record = read_record(self.path)
        except InputError:
            return None  # caught mid-replacement: the next poll reads the newer run.json
        self._seen = sig
        if finished(record):
            self.active = False
        return record
