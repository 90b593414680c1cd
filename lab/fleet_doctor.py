"""The doctor's forecast of each run of a fleet, computed once per version of the run and kept.

The fleet shows the doctor's one answer to "when" (:func:`grpo_lab.sims.doctor.when.when`, the ``when`` of
``grpo-lab diagnose RUN --json``) for each run, from the doctor's stages that answer reads and nothing else
(``diagnose(..., only="when")``: the same ``when`` and P(stall) ahead as the whole diagnosis, in a fraction of its time
for a record with groups). It still costs up to seconds a run (a scalars fit and its model choice), so it is
computed once per *version* of the run: the names, sizes and modification times of the files its reader reads
(:func:`run_signature`: a record folder's files; a tracker log's, :func:`grpo_lab.replay.trackers.signature`), with
the settings it is diagnosed under (the loop's settings, the threshold) and the code that diagnoses it
(:func:`code_version`: the core's source files' sizes and times, so an upgrade recomputes). A run that grew has a new version and is diagnosed again;
the others are not.

:class:`DoctorCache` keeps the results in memory (the server's fleet) and on disk (``grpo-lab fleet`` run after
run): one small JSON file per run and settings (the doctor's ``when``, the forecast the fleet ranks on, the run's last
step, or the doctor's one-line refusal) under the user's cache folder (:func:`grpo_lab.sims.cache.cache_root`:
``$GRPO_LAB_CACHE``, else ``$XDG_CACHE_HOME/grpo-lab``, else ``~/.cache/grpo-lab``; subfolder ``fleet-doctor``),
never in the runs' folder. Each file is written through a temporary file and a rename; at most
:data:`MAX_FILES` are kept (the least recently written go first); a file that is missing, unreadable or of another
version is a miss. Deleting the folder only costs the time to diagnose again.

:func:`diagnose_entry` diagnoses one record and returns what is kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["CACHE_VERSION", "MAX_FILES", "DoctorCache", "run_signature", "code_version", "diagnose_entry",
           "doctor_key"]

CACHE_VERSION = 1  #: the layout of a kept entry; a file of another version is a miss
MAX_FILES = 2000  #: files kept on disk (a few KB each); the least recently written are removed beyond it
MAX_MEMORY = 512  #: entries kept in memory by one cache


def run_signature(source) -> tuple | None:
    """``((file, size, mtime_ns), ...)`` of what the run's reader reads: a record folder's files (``source`` a str),
    else a tracker log's (:func:`grpo_lab.replay.trackers.signature`); None where it cannot be listed now."""
    if not isinstance(source, str):
        from grpo_lab.replay.trackers import signature

        return signature(source)
    try:
        with os.scandir(source) as it:
            return tuple(sorted((e.name, st.st_size, st.st_mtime_ns) for e in it
                                if e.is_file(follow_symlinks=False) and not e.name.startswith(".")
                                for st in [e.stat(follow_symlinks=False)]))
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A digest of the numerical core's source files (names, sizes, modification times): a cached forecast made by
    other code is a miss."""
    import grpo_lab.sims as sims

    root = Path(sims.__file__).parent
    parts = []
    for f in sorted(root.rglob("*.py")):
        try:
            st = f.stat()
        except OSError:
            continue
        parts.append(f"{f.relative_to(root).as_posix()}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def doctor_key(source, settings: dict | None, threshold: float) -> str:
    """The cache key of a run and the settings it is diagnosed under (not its version: that is checked apart)."""
    what = source if isinstance(source, str) else [source.path, source.fmt, source.run]
    where = os.path.realpath(what) if isinstance(what, str) else [os.path.realpath(what[0]), *what[1:]]
    text = json.dumps([CACHE_VERSION, code_version(), where, settings, float(threshold)], sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def diagnose_entry(record, settings: dict | None, threshold: float, num_generations: int | None = None,
                   only: str | None = "when") -> dict:
    """What is kept of the doctor's diagnosis of ``record`` (as ``grpo-lab diagnose`` runs it, with
    ``trainer_config=settings``, ``threshold`` and ``num_generations``; only the stages ``when`` and the tracker's
    figures read: ``only="when"``; None: the whole diagnosis, the same entry): ``{when, forecast, last_step,
    p_stall_next, next_steps}`` (:func:`grpo_lab.sims.doctor.fleet.doctor_forecast`; P(stall within the next
    ``next_steps`` steps), :mod:`grpo_lab.sims.doctor.tracker_values`, None where there is no stall forecast), or
    ``{error}`` with the doctor's one-line refusal."""
    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.doctor.fleet import doctor_forecast, last_step
    from grpo_lab.sims.doctor.tracker_values import PREFIX, next_steps
    from grpo_lab.sims.jsonable import jsonable

    try:
        d = diagnose(record, threshold=threshold, trainer_config=settings, num_generations=num_generations,
                     only=only)
    except InputError as exc:
        return {"error": str(exc)}
    last = last_step(record)
    when = jsonable(d["when"])  # as diagnose --json prints it
    return {"when": when, "forecast": doctor_forecast(when, last), "last_step": last,
            "p_stall_next": d["tracker"].get(PREFIX + "p_stall_next"), "next_steps": next_steps(last or 0)}


class DoctorCache:
    """Entries by :func:`doctor_key`, each with the run's version it was made from (see the module docstring).
    ``folder=None``: memory only. Thread-safe."""

    def __init__(self, folder: Path | None = None):
        self.folder = None if folder is None else Path(folder)
        self._memory: dict = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @classmethod
    def user(cls) -> "DoctorCache":
        """A cache in the user's cache folder (see the module docstring)."""
        from grpo_lab.sims.cache import cache_root

        return cls(cache_root() / "fleet-doctor")

    def get(self, key: str, signature) -> dict | None:
        """The entry of ``key`` made from this version of the run, else None."""
        sig = _plain(signature)
        with self._lock:
            got = self._memory.get(key)
        if got is None and self.folder is not None:
            try:
                got = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError):
                got = None
        if isinstance(got, dict) and got.get("version") == CACHE_VERSION and got.get("sig") == sig:
            self.hits += 1
            self._remember(key, got)
            return got["entry"]
        self.misses += 1
        return None

    def put(self, key: str, signature, entry: dict) -> None:
        """Keep ``entry`` for this version of the run (on disk too where there is a folder; a write that fails is
        dropped: the cache only saves time)."""
        got = {"version": CACHE_VERSION, "sig": _plain(signature), "entry": entry}
        self._remember(key, got)
        if self.folder is None:
            return
        from grpo_lab.sims.record import atomic_write_bytes

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.folder / f"{key}.json", json.dumps(got).encode("utf-8"))
        except (OSError, ValueError):
            pass

    def _remember(self, key: str, got: dict) -> None:
        with self._lock:
            self._memory.pop(key, None)
            self._memory[key] = got
            while len(self._memory) > MAX_MEMORY:
                self._memory.pop(next(iter(self._memory)))

    def prune(self, keep: int = MAX_FILES) -> int:
        """Remove the least recently written files beyond ``keep``; returns how many were removed."""
        if self.folder is None:
            return 0
        try:
            files = [(e.stat().st_mtime_ns, e.path) for e in os.scandir(self.folder)
                     if e.is_file() and e.name.endswith(".json")]
        except OSError:
            return 0
        files.sort()
        gone = 0
        for _, path in files[:max(0, len(files) - keep)]:
            try:
                os.remove(path)
                gone += 1
            except OSError:
                pass
        return gone


def _plain(signature):
    """A signature as JSON gives it back (lists), so one read from disk compares equal."""
    return json.loads(json.dumps(signature))
