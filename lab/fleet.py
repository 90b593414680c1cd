"""Every run of a folder, ranked by when it will stop learning: ``grpo-lab fleet DIR`` and the lab's Fleet page.

:class:`Fleet` ``(folder, settings=None)`` finds the folder's runs, as the Replay finds them: run records (groups or
scalars only; :func:`grpo_lab.replay.catalog.list_runs`) and tracker logs (TensorBoard, W&B, metrics.jsonl,
MLflow, trackio; :func:`grpo_lab.replay.trackers.tracker_logs`). :meth:`Fleet.refresh` looks again (new runs are
added, vanished ones dropped), reads each run that changed incrementally (a record's new chunks only,
:class:`grpo_lab.sims.record_steps.StepsReader`; a log's appended bytes only,
:class:`grpo_lab.sims.ingest.trackers.follow.LogFollower`), forecasts it
(:func:`grpo_lab.sims.doctor.fleet.run_forecast`: expiry, and the stall where the loop's ``settings`` are given or
the record carries its own dynamic-sampling config) and returns the rows ranked
(:func:`grpo_lab.sims.doctor.fleet.rank_key`). A run that cannot be read is listed with its reason, last; one read
before keeps its last good forecast and says why it was not updated. ``stats`` counts what the refresh read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["Fleet", "FleetRun", "SPARK_CHARS", "sparkline", "row_text"]

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

    def row(self) -> dict:
        f = self.forecast or {}
        return {"run": self.label, "replay_label": self.replay_label or self.label, "kind": self.kind,
                "source": str(getattr(self.source, "path", self.source)),
                "steps": f.get("steps", 0), "last_step": f.get("last_step"), "mixed_now": f.get("mixed_now"),
                "fit_now": f.get("fit_now"), "forecast": f.get("forecast"), "left": f.get("left"),
                "expiry": f.get("expiry"), "stall": f.get("stall"), "spark": f.get("spark", []),
                "band": f.get("band"), "reason": self.error or f.get("reason", ""),
                "settings": self.settings_source}


@dataclass
class Fleet:
    """See the module docstring."""

    folder: str
    settings: dict | None = None
    threshold: float | None = None
    runs: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

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
        from grpo_lab.sims.doctor.fleet import rank_key

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
        rows = sorted((r.row() for r in self.runs.values()),
                      key=lambda r: (rank_key(r), r["run"]))
        self.stats = {"runs": len(rows), "read": read, "bytes_read": bytes_read,
                      "seconds": time.perf_counter() - t0}
        return rows

    def _update(self, run: FleetRun) -> tuple[int, int]:
        """Read ``run`` if it changed and forecast it: ``(1 if read else 0, bytes read)``."""
        from grpo_lab.sims.doctor.fleet import mixed_series, run_forecast
        from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD

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
            s, m, g = mixed_series(steps, held)
            run.forecast = run_forecast(s, m, g, settings, self.threshold or DEFAULT_THRESHOLD)
            run.error = ""
            return 1, n
        except (InputError, OSError) as exc:
            run.error = (f"not updated: {exc}" if run.forecast is not None else str(exc))
            return 1, 0

    def _settings(self, meta: dict) -> tuple[dict | None, str]:
        from grpo_lab.sims.doctor.trainer_config import settings_from_record

        if self.settings is not None:
            return self.settings, str(self.settings.get("source", "given"))
        own = settings_from_record(meta)
        return own, ("the record's own config" if own else "")


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


def row_text(rank: int, row: dict) -> str:
    """One line of ``grpo-lab fleet``: rank, run, kind, steps, mixed share now, the forecast with its 95% interval,
    the sparkline (or the reason there is no forecast)."""
    head = f"{rank:>3}  {row['run'][:44]:<44} {row['kind'][:22]:<22} {row['steps']:>6}"
    if row["forecast"] is None:
        return f"{head}  {'':>6}  {row['reason']}"
    fc = row[row["forecast"]]
    lo, hi = fc["interval"]
    when = ("beyond horizon" if fc["step"] is None else
            "now" if row["left"] == 0 else f"step {fc['step']:.0f}")
    what = f"{row['forecast']} {when} [{_step(lo)}, {_step(hi)}]"
    note = f"  ({row['reason']})" if row["reason"] else ""
    return f"{head}  {100 * row['mixed_now']:5.1f}%  {what:<34} {sparkline(row['spark'])}{note}"
