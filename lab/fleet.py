"""Every run of a folder, ranked by when it will stop learning: ``grpo-lab fleet DIR`` and the lab's Fleet page.

:class:`Fleet` ``(folder, settings=None)`` finds the folder's runs, as the Replay finds them: run records (groups or
scalars only; :func:`grpo_lab.replay.catalog.list_runs`) and tracker logs (TensorBoard, W&B, metrics.jsonl,
MLflow, trackio, HF Trainer consoles; :func:`grpo_lab.replay.trackers.tracker_logs`). :meth:`Fleet.refresh` looks again (new runs are
added, vanished ones dropped), reads each run that changed incrementally (a record's new chunks only,
:class:`grpo_lab.sims.record_steps.StepsReader`; a log's appended bytes only,
:class:`grpo_lab.sims.ingest.trackers.follow.LogFollower`), forecasts it
(:func:`grpo_lab.sims.doctor.fleet.run_forecast`: expiry, and the stall where the loop's ``settings`` are given or
the record carries its own dynamic-sampling config) and returns the rows ranked
(:func:`grpo_lab.sims.doctor.fleet.rank_key`). A run that cannot be read is listed with its reason, last; one read
before keeps its last good forecast and says why it was not updated. ``stats`` counts what the refresh read.

**The doctor's forecast.** The trend above is a quick triage figure; the forecast a row shows and is ranked on is the
doctor's (its one answer to "when", equal to ``grpo-lab diagnose RUN --json``'s ``when`` under the same settings and
threshold; :func:`grpo_lab.sims.doctor.fleet.doctor_forecast`) wherever it is computed, per ``doctor``:

``"off"``         the trend alone, each row's ``source`` saying ``trend (quick)`` (``grpo-lab fleet --quick``);
``"now"``         each refresh diagnoses every run whose version is not in the cache, ``jobs`` runs at a time in
                  processes of their own (``grpo-lab fleet``);
``"background"``  each refresh hands the runs to diagnose to one worker thread and returns at once; a row shows the
                  trend labelled ``trend, doctor pending`` until the doctor's figure is in (then
                  :attr:`Fleet.doctor_version` counts up and :meth:`Fleet.rows` ranks again), and a run that grew keeps
                  the doctor's last figure, labelled with the step it covers, until the new one is in (the server).

The doctor runs only the stages its answer to "when" reads (``only``, default ``"when"``:
:func:`grpo_lab.sims.doctor.diagnose`'s, the same ``when`` as the whole diagnosis; None runs the whole diagnosis, as
before, for benchmarks/bench_fleet.py's comparison).

A run is diagnosed again only when it changed (:mod:`grpo_lab.fleet_doctor`: its files' names, sizes and times); the
results are kept in ``cache`` (a :class:`grpo_lab.fleet_doctor.DoctorCache`: in memory by default, on disk for the
command line). Where the doctor refuses a run (too few groups, K unknown) the row shows the trend, labelled with the
doctor's reason.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["Fleet", "FleetRun", "SPARK_CHARS", "DOCTOR_MODES", "sparkline", "row_text", "forecast_text"]

DOCTOR_MODES = ("off", "now", "background")  #: when the doctor's forecast is computed (see the module docstring)
QUICK, PENDING = "trend (quick)", "trend, doctor pending"  #: a row's ``source`` where it shows the trend

SPARK_CHARS = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"  #: a sparkline's eight levels (0 to 1)


@dataclass
class FleetRun:
    """One run of the fleet: how it is known (``kind``: groups, scalars, or ``tracker log (fmt)``), its reader, and
    its last forecast."""

    label: str
    kind: str
    source: object  # a record directory (str) or a TrackerSource
    reader: object = None
    forecast: dict | None = None
    error: str = ""
    settings_source: str = ""
    replay_label: str = ""  #: the run's label in the Replay (a tracker log's with its prefix)
    settings: dict | None = None  #: the loop's settings the run is forecast under
    record: object = None  #: a tracker log's record as last read (what the doctor diagnoses)
    record_sig: tuple | None = None  #: the version of the log ``record`` was read from
    doctor: dict | None = None  #: the doctor's entry (:func:`grpo_lab.fleet_doctor.diagnose_entry`)
    doctor_sig: object = None  #: the version of the run ``doctor`` was made from
    pending_sig: object = None  #: the version being diagnosed in the background
    current_sig: object = None  #: the run's version at the last refresh

    def row(self, mode: str = "off") -> dict:
        f = self.forecast or {}
        trend = {"forecast": f.get("forecast"), "left": f.get("left"), "expiry": f.get("expiry"),
                 "stall": f.get("stall")}
        out = {"run": self.label, "replay_label": self.replay_label or self.label, "kind": self.kind,
               "source": str(getattr(self.source, "path", self.source)),
               "steps": f.get("steps", 0), "last_step": f.get("last_step"), "mixed_now": f.get("mixed_now"),
               "fit_now": f.get("fit_now"), **trend, "spark": f.get("spark", []),
               "band": f.get("band"), "reason": self.error or f.get("reason", ""),
               "settings": self.settings_source, "trend": trend, "forecast_source": QUICK, "when": None}
        d = self.doctor
        if mode == "off":
            return out
        if d is not None and "forecast" in d:
            out.update(d["forecast"], when=d["when"], forecast_source="doctor" if self.doctor_sig == self.current_sig
                       else f"doctor, to step {d['last_step']}; updating")
        elif d is not None:
            out["forecast_source"] = f"trend; the doctor: {d['error']}"
        else:
            out["forecast_source"] = PENDING
        return out


@dataclass
class Fleet:
    """See the module docstring."""

    folder: str
    settings: dict | None = None
    threshold: float | None = None
    doctor: str = "off"  #: one of DOCTOR_MODES
    jobs: int = 1  #: processes diagnosing at once in the "now" mode
    only: str | None = "when"  #: the doctor's stages run (diagnose's ``only``; None: the whole diagnosis)
    cache: object = None  #: a grpo_lab.fleet_doctor.DoctorCache (default: one in memory)
    runs: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    doctor_version: int = 0  #: counts the doctor's forecasts landed in the background
    on_doctor: object = None  #: called (no argument) from the worker when a forecast lands in the background
    _pool: object = None
    _lock: object = field(default_factory=threading.Lock)

    def __post_init__(self):
        from .fleet_doctor import DoctorCache

        if self.doctor not in DOCTOR_MODES:
            raise InputError(f"doctor must be one of {', '.join(DOCTOR_MODES)}, got {self.doctor!r}")
        if self.cache is None:
            self.cache = DoctorCache()

    def _scan(self) -> dict:
        from grpo_lab.replay.catalog import list_runs
        from grpo_lab.replay.trackers import PREFIX, tracker_logs

        root = Path(self.folder)
        if not root.is_dir():
            raise InputError(f"{self.folder!r} is not a folder")
        found = {label: ("record", str(path), label) for label, path in list_runs(root).items()}
        for label, src in tracker_logs(root).items():
            found.setdefault(label[len(PREFIX):], (f"tracker log ({src.fmt})", src, label))
        return found

    def refresh(self) -> list[dict]:
        """Look again, read what changed, forecast; the rows ranked (see the module docstring)."""
        t0 = time.perf_counter()
        found = self._scan()
        self.runs = {k: v for k, v in self.runs.items() if k in found}
        read = bytes_read = 0
        for label, (kind, source, replay_label) in found.items():
            run = self.runs.get(label)
            if run is None:
                run = self.runs[label] = FleetRun(label, kind, source, replay_label=replay_label)
            did, n = self._update(run)
            read += did
            bytes_read += n
        diagnosed = self._doctor() if self.doctor != "off" else 0
        rows = self.rows()
        self.stats = {"runs": len(rows), "read": read, "bytes_read": bytes_read, "diagnosed": diagnosed,
                      "seconds": time.perf_counter() - t0}
        return rows

    def rows(self) -> list[dict]:
        """The rows as they stand (the doctor's figures landed so far), ranked; reads nothing."""
        from grpo_lab.sims.doctor.fleet import rank_key

        with self._lock:
            rows = [r.row(self.doctor) for r in self.runs.values()]
        return sorted(rows, key=lambda r: (rank_key(r), r["run"]))

    def _doctor(self) -> int:
        """Find each run's doctor forecast for its current version: from the cache, else diagnosed now or handed to
        the worker (see the module docstring). Returns how many were diagnosed here."""
        from .fleet_doctor import doctor_key, run_signature

        todo = []
        for run in list(self.runs.values()):
            sig = run.record_sig if not isinstance(run.source, str) else run_signature(run.source)
            run.current_sig = sig
            if run.forecast is None or sig is None or sig == run.doctor_sig or sig == run.pending_sig:
                continue
            key = doctor_key(run.source, run.settings, self._threshold())
            got = self.cache.get(key, sig)
            if got is not None:
                with self._lock:
                    run.doctor, run.doctor_sig = got, sig
                continue
            if self.doctor == "now":
                todo.append((run, key, sig))
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="fleet-doctor")
            run.pending_sig = sig
            self._pool.submit(self._diagnose, run, key, sig, run.record, True)
        if len(todo) > 1 and self.jobs > 1:
            self._diagnose_apart(todo)
        else:
            for run, key, sig in todo:
                self._diagnose(run, key, sig, run.record)
        return len(todo)

    def _diagnose_apart(self, todo: list) -> None:
        """Diagnose ``todo`` in up to ``jobs`` processes (forked where this process runs no other thread, else
        spawned), each result kept as :meth:`_diagnose` keeps it."""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        fork = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
        ctx = multiprocessing.get_context("fork" if fork else "spawn")
        with ProcessPoolExecutor(min(self.jobs, len(todo)), mp_context=ctx) as pool:
            futures = [pool.submit(_entry, run.source, run.record, run.settings, self._threshold(), self.only)
                       for run, _, _ in todo]
            for (run, key, sig), future in zip(todo, futures):
                self._keep(run, key, sig, future.result())

    def _threshold(self) -> float:
        from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD

        return self.threshold or DEFAULT_THRESHOLD

    def _diagnose(self, run: FleetRun, key: str, sig, record, background: bool = False) -> None:
        """Diagnose one version of the run (a record folder read whole here, a tracker log's record as read) and keep
        the result."""
        try:
            entry = _entry(run.source, record, run.settings, self._threshold(), self.only)
        except Exception as exc:  # noqa: BLE001: in the worker, a run the doctor trips on is said in its row
            if not background:
                raise
            entry = {"error": f"{type(exc).__name__}: {exc}"}
        self._keep(run, key, sig, entry)
        if background and self.on_doctor is not None:
            self.on_doctor()

    def _keep(self, run: FleetRun, key: str, sig, entry: dict) -> None:
        self.cache.put(key, sig, entry)
        with self._lock:
            run.doctor, run.doctor_sig = entry, sig
            if run.pending_sig == sig:
                run.pending_sig = None
            self.doctor_version += 1

    def _update(self, run: FleetRun) -> tuple[int, int]:
        """Read ``run`` if it changed and forecast it: ``(1 if read else 0, bytes read)``."""
        from grpo_lab.sims.doctor.fleet import mixed_series, run_forecast

        try:
            if isinstance(run.source, str):
                from grpo_lab.sims.record_steps import StepsReader

                if run.reader is None:
                    run.reader = StepsReader(run.source)
                if not run.reader.changed() and run.forecast is not None:
                    return 0, 0
                meta, steps, held = run.reader.read()
                n = run.reader.bytes_read
                run.kind = "scalars" if meta.get("scalars_only") or not held else "groups"
                settings, run.settings_source = self._settings(meta)
                run.settings = self.settings
            else:
                from grpo_lab.replay.trackers import signature
                from grpo_lab.sims.ingest.trackers.follow import LogFollower

                if run.reader is None:
                    run.reader = LogFollower(run.source.path, run.source.fmt, run=run.source.run)
                    run.reader.last_sig = None
                sig = signature(run.source)
                if sig is not None and sig == run.reader.last_sig and run.forecast is not None:
                    return 0, 0
                rec = run.reader.refresh()
                run.reader.last_sig = sig
                n = run.reader.bytes_read
                if run.reader.change in ("truncated", "replaced") and run.forecast is not None:
                    run.error = f"{run.reader.status.split(';')[0]}: the forecast shown is the last good one"
                    return 1, n
                steps, held = rec.steps, None
                settings, run.settings_source = self._settings(rec.meta)
                run.settings, run.record, run.record_sig = self.settings, rec, sig
            s, m, g = mixed_series(steps, held)
            run.forecast = run_forecast(s, m, g, settings, self._threshold())
            run.error = ""
            return 1, n
        except (InputError, OSError) as exc:
            run.error = (f"not updated: {exc}" if run.forecast is not None else str(exc))
            return 1, 0

    def _settings(self, meta: dict) -> tuple[dict | None, str]:
        from grpo_lab.sims.doctor.trainer_config import resolve_settings

        got = resolve_settings(meta, self.settings)  # flags override one value each of the sizes the record keeps
        if self.settings is not None:
            return got, str(got.get("source", "given"))
        return got, ("the record's own config" if got else "")


def _entry(source, record, settings, threshold, only: str | None = "when") -> dict:
    """The doctor's entry of one run (:func:`grpo_lab.fleet_doctor.diagnose_entry`): a record folder read whole
    here, a tracker log's ``record`` as read; a run that cannot be read gives ``{error}``."""
    from .fleet_doctor import diagnose_entry

    try:
        if isinstance(source, str):
            from grpo_lab.sims.record import read_record

            record = read_record(source)
        return diagnose_entry(record, settings, threshold, only=only)
    except (InputError, OSError) as exc:
        return {"error": str(exc)}


def sparkline(values, lo: float = 0.0, hi: float = 1.0) -> str:
    """``values`` (shares in [lo, hi]) as a line of :data:`SPARK_CHARS`; NaN as a space."""
    out = []
    for v in values:
        if v is None or v != v:
            out.append(" ")
            continue
        k = int(round((min(max(v, lo), hi) - lo) / (hi - lo) * (len(SPARK_CHARS) - 1)))
        out.append(SPARK_CHARS[k])
    return "".join(out)


def _step(x) -> str:
    return "-" if x is None else f"{x:.0f}"


def forecast_text(row: dict) -> str:
    """The forecast a row is ranked on, in words: what (stall or expiry), when (now, step s, beyond the horizon, or
    the doctor's words where it gives no verdict), its interval with its level, and where the figure comes from
    (the doctor, or the trend labelled as such); the reason where there is no forecast."""
    if row.get("forecast") is None:
        return row.get("reason") or "no forecast"
    fc = row[row["forecast"]]
    lo, hi = fc["interval"]
    level = f" {100 * fc['level']:.0f}%" if fc.get("level") else " 95%"
    if row["left"] is None:  # the doctor's own word: "uncertain" (two trends the log cannot tell apart) or none
        word = "uncertain" if str(fc.get("status", "")).startswith("uncertain") else "no verdict"
        when = f"{word} (grpo-lab diagnose says why)"
    else:
        when = ("beyond the horizon" if fc["step"] is None and row["left"] != 0 else
                "now" if row["left"] == 0 else f"step {fc['step']:.0f}")
    return f"{row['forecast']} {when} [{_step(lo)}, {_step(hi)}]{level} ({row.get('forecast_source', QUICK)})"


def row_text(rank: int, row: dict) -> str:
    """One line of ``grpo-lab fleet``: rank, run, kind, steps, mixed share now, the forecast with its interval and
    where it comes from (:func:`forecast_text`), the sparkline (or the reason there is no forecast)."""
    head = f"{rank:>3}  {row['run'][:44]:<44} {row['kind'][:22]:<22} {row['steps']:>6}"
    if row["forecast"] is None:
        return f"{head}  {'':>6}  {row['reason']}" + (f"; {row['forecast_source']}" if "doctor:" in
                                                       row.get("forecast_source", "") else "")
    note = f"  ({row['reason']})" if row["reason"] else ""
    return f"{head}  {100 * row['mixed_now']:5.1f}%  {forecast_text(row):<56} {sparkline(row['spark'])}{note}"
