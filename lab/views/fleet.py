"""The "Fleet" tab: every run of the server's runs folders ranked by when it will stop learning, refreshed as they grow.

The folders are those ``grpo-lab serve --runs DIR`` names (``GRPO_LAB_RUNS``); without any, the shipped runs. One
:class:`grpo_lab.fleet.Fleet` per folder is shared by every session of the process (:func:`shared_rows`): it is
refreshed in a thread of its own at most every :data:`POLL_S` seconds while a page shows it (each refresh reads only
what the runs appended), never on the server's loop; a page polls for the newest rows and redraws its table when
they change. The forecast shown is the doctor's (``grpo-lab diagnose``'s one answer to "when"), computed in the
background once per version of each run and kept in memory (``Fleet(doctor="background")``); until a run's is in,
its row shows the quick trend labelled "trend, doctor pending", and a run that grew keeps the doctor's last figure,
labelled with the step it covers, until the new one lands (the rows are ranked again as each lands). The table (class ``fleet-table``, one ``fleet-row`` a run, ranked) says per run: its rank, its name (a
link that opens it in the Replay: ``?tab=replay&run=LABEL``), how it is known, its steps, its mixed share at the last
step, the forecast it is ranked on with its 95% interval, and a sparkline (inline SVG, drawn from Python) of its
mixed share per step with the trend's 95% band and the threshold. Every name shown is a visitor-independent file
name, escaped all the same. The links are in the Tab order while the tab is shown (Enter opens the run in the
Replay). Panel hides a tab that is not shown with ``visibility: hidden`` and ``aria-hidden``, which leaves its links
focusable in the accessibility tree's eyes (axe's aria-hidden-focus); so the tab's column is also not displayed while
it carries ``aria-hidden`` (:data:`HIDDEN_CSS`), which takes its links out of the Tab order until it is shown.
"""

from __future__ import annotations

import html
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import panel as pn

__all__ = ["FleetView", "POLL_S", "fleet_folders", "shared_rows", "table_html", "spark_svg"]

POLL_S = 5.0  #: seconds between two refreshes of a folder's fleet while a page shows it
SPARK_W, SPARK_H = 160, 28  #: a sparkline's size in CSS pixels

#: the tab's column is not displayed while Panel marks it hidden (a tab not shown): its links leave the Tab order
HIDDEN_CSS = ':host([aria-hidden="true"]) { display: none !important; }'

_LOCK = threading.Lock()
_FLEETS: dict = {}  # folder -> {"fleet", "rows", "at", "pending"}
_POOL: ThreadPoolExecutor | None = None


def fleet_folders() -> list[Path]:
    """The folders the tab lists: ``GRPO_LAB_RUNS`` (``serve --runs``), else the shipped runs."""
    from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR

    env = [Path(d) for d in os.environ.get("GRPO_LAB_RUNS", "").split(os.pathsep) if d.strip()]
    return env or [DEFAULT_RUNS_DIR]


def _refresh(folder: str) -> None:
    entry = _FLEETS[folder]
    try:
        rows = entry["fleet"].refresh()
        error = ""
    except Exception as exc:  # noqa: BLE001: a folder that cannot be listed is said on the page, the server goes on
        rows, error = entry["rows"], f"{folder}: {exc}"
    with _LOCK:
        entry.update(rows=rows, error=error, at=time.monotonic(), pending=False, version=entry["version"] + 1)


def _landed(folder: str) -> None:
    """A doctor's forecast landed (in the fleet's worker): the rows ranked again, nothing read."""
    entry = _FLEETS[folder]
    rows = entry["fleet"].rows()
    with _LOCK:
        if entry["rows"] is not None:
            entry.update(rows=rows, version=entry["version"] + 1)


def shared_rows(folder: str) -> tuple[list | None, str, int]:
    """``(rows or None while first read, error, version)`` of ``folder``'s shared fleet; starts a refresh in the
    background when the last is :data:`POLL_S` seconds old and none is running."""
    global _POOL
    from grpo_lab.fleet import Fleet

    with _LOCK:
        entry = _FLEETS.get(folder)
        if entry is None:
            fleet = Fleet(folder, doctor="background")
            fleet.on_doctor = lambda: _landed(folder)
            entry = _FLEETS[folder] = {"fleet": fleet, "rows": None, "error": "", "at": -1e9,
                                       "pending": False, "version": 0}
        if not entry["pending"] and time.monotonic() - entry["at"] >= POLL_S:
            entry["pending"] = True
            if _POOL is None:
                _POOL = ThreadPoolExecutor(1, thread_name_prefix="fleet-read")
            _POOL.submit(_refresh, folder)
        return entry["rows"], entry["error"], entry["version"]


def spark_svg(row: dict, threshold: float) -> str:
    """The run's sparkline as inline SVG: observed mixed share per step (the line), the trend's 95% band (shaded) and
    the threshold (dashed); x from the first step to one run length past the last (or past the forecast step, where
    that is further, within the horizon), y over [0, 1]."""
    band, spark = row.get("band"), row.get("spark") or []
    if not spark:
        return ""
    last = row.get("last_step") or 1
    first = band["step"][0] if band else 0.0
    fc = row.get(row["forecast"]) if row.get("forecast") else None
    ahead = max(2 * last - first, 1.1 * fc["step"] if fc and fc["step"] is not None else 0.0)  # the run, once more
    x_max = min(band["step"][-1], ahead) if band else last
    span = max(x_max - first, 1e-9)
    X = (lambda s: 2 + (SPARK_W - 4) * (s - first) / span)
    Y = (lambda v: 2 + (SPARK_H - 4) * (1.0 - min(max(v, 0.0), 1.0)))
    n = len(spark)
    xs = [first + (last - first) * (i + 0.5) / n for i in range(n)]
    line = " ".join(f"{X(x):.1f},{Y(v):.1f}" for x, v in zip(xs, spark) if v is not None)
    parts = [f'<svg class="fleet-spark" width="{SPARK_W}" height="{SPARK_H}" viewBox="0 0 {SPARK_W} {SPARK_H}" '
             f'role="img" aria-label="mixed share per step, with the trend\'s 95% band">']
    if band:
        kept = [i for i, s in enumerate(band["step"]) if s <= x_max]
        top = " ".join(f"{X(band['step'][i]):.1f},{Y(band['hi'][i]):.1f}" for i in kept)
        bottom = " ".join(f"{X(band['step'][i]):.1f},{Y(band['lo'][i]):.1f}" for i in reversed(kept))
        parts.append(f'<polygon points="{top} {bottom}" fill="#9ecae1" fill-opacity="0.5"/>')
    parts.append(f'<line x1="2" x2="{SPARK_W - 2}" y1="{Y(threshold):.1f}" y2="{Y(threshold):.1f}" stroke="#999" '
                 'stroke-dasharray="3,2"/>')
    parts.append(f'<polyline points="{line}" fill="none" stroke="#08519c" stroke-width="1.5"/></svg>')
    return "".join(parts)


def table_html(rows: list[dict], threshold: float) -> str:
    """The ranked table (see the module docstring)."""
    from grpo_lab.fleet import forecast_text

    head = ("<tr><th>#</th><th>run</th><th>known from</th><th>steps</th><th>mixed now</th>"
            "<th>forecast [interval] (from)</th><th>mixed share</th></tr>")
    body = []
    for i, r in enumerate(rows, 1):
        link = "?" + urlencode({"tab": "replay", "run": r.get("replay_label") or r["run"]})
        mixed = "" if r.get("mixed_now") is None else f"{100 * r['mixed_now']:.1f}%"
        note = f'<div class="fleet-note">{html.escape(r["reason"])}</div>' if r.get("reason") and r.get("forecast") \
            else ""
        body.append(f'<tr class="fleet-row"><td>{i}</td><td><a class="fleet-open" '
                    f'href="{html.escape(link)}">'
                    f'{html.escape(r["run"])}</a></td><td>{html.escape(r["kind"])}</td>'
                    f'<td class="fleet-steps">{r["steps"]}</td>'
                    f'<td>{mixed}</td><td class="fleet-forecast">{html.escape(forecast_text(r))}{note}</td>'
                    f'<td>{spark_svg(r, threshold)}</td></tr>')
    return (f'<table class="fleet-table" style="border-collapse:collapse;font-size:13px">{head}{"".join(body)}'
            "</table>")


class FleetView:
    """One session's Fleet tab (see the module docstring)."""

    def __init__(self, folders=None):
        from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD

        self.folders = [str(f) for f in (folders or fleet_folders())]
        self.threshold = DEFAULT_THRESHOLD
        self.status = pn.pane.HTML("Reading the runs\u2026", css_classes=["fleet-status"], sizing_mode="stretch_width")
        self.table = pn.pane.HTML("", css_classes=["fleet-list"], sizing_mode="stretch_width")
        self._seen: tuple | None = None
        self.panel = pn.Column(
            pn.pane.Markdown("**Every run of the folder, ranked by when it will stop learning**: first the runs "
                             "whose dynamic sampling is forecast to stall soonest (where the loop's settings are "
                             "known), else whose mixed share crosses 50% soonest. The forecast is the doctor's "
                             "(grpo-lab diagnose); until it is computed for a run, its row shows a quick trend of the "
                             "mixed share, labelled *trend, doctor pending*. The sparkline shades that trend's 95% "
                             "band. The list follows the runs as they grow; a run's name opens it in the Replay.",
                             sizing_mode="stretch_width"),
            self.status, self.table, css_classes=["fleet-tab"], sizing_mode="stretch_width", stylesheets=[HIDDEN_CSS])
        self.update()
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            cb = pn.state.add_periodic_callback(self.update, period=1000)
            pn.state.on_session_destroyed(lambda _ctx: cb.stop())

    def update(self) -> None:
        """Show the newest rows of the shared fleets (nothing is read here: see :func:`shared_rows`)."""
        got = [shared_rows(f) for f in self.folders]
        key = tuple(v for _, _, v in got)
        if key == self._seen:
            return
        if any(rows is None for rows, _, _ in got):
            if not any(err for _, err, _ in got):
                return  # still the first read
        self._seen = key
        rows = [r for rs, _, _ in got for r in (rs or [])]
        from grpo_lab.sims.doctor.fleet import rank_key

        rows.sort(key=lambda r: (rank_key(r), r["run"]))
        errors = [e for _, e, _ in got if e]
        self.status.object = html.escape(f"{len(rows)} runs in {', '.join(self.folders)}"
                                         + (f"; not read: {'; '.join(errors)}" if errors else ""))
        self.table.object = table_html(rows, self.threshold)
