"""The "Replay" tab: scrub through a recorded run (shipped, ingested or uploaded), alone or beside another.

A run still being written is followed (a record: :mod:`.follow`; a tracker log in a runs folder: :mod:`.trackers`).

``ReplayView(state=None, runs_root=None)`` is a ``pn.viewable.Viewer``; build one per session
(``lab/app.py`` does, and tests serve it alone). The grid, its one step slider, Play, hover,
captions and readouts are :class:`grpo_lab.replay.grid.ReplayGrid` (the browser grid view in
frames mode): scrubbing and play run in the browser; the plots' step markers and the histograms
follow once the slider pauses. Choosing a run, the view or an upload goes through Python.

Stable CSS classes for tests and scripts: readouts ``replay-step``, ``replay-effective-rate``,
``replay-effective-rolling``, ``replay-predicted-real``, ``replay-predicted-iid``,
``replay-all-pass``, ``replay-all-fail``, ``replay-reward``, ``replay-eval-pass``,
``replay-generated``, ``replay-useful`` (the compared run: ``replay-b-<stem>``), inside the grid
component (``#gx-step`` the step slider, ``#gx-play`` Play, ``.gx-run[data-run=a|b]`` a run's block with
its ``.gx-caption`` and ``.gx-canvas``);
``replay-tolerance`` (the tolerance in force), ``replay-error`` (error notice), ``replay-missing``
(what the record lacks); widgets ``replay-run``, ``replay-compare``, ``replay-grid`` (the
component), ``replay-view``, ``replay-upload``, ``replay-format``, ``replay-tolerance-input``,
``replay-pair`` (a named side-by-side view, :data:`~grpo_lab.replay.catalog.PAIRS`; ``?replay=NAME``
opens it) and ``replay-pair-link`` (the link that reopens it); ``replay-controls`` the column of controls and grid;
the trainer loop the doctor's stall risk is computed under (:data:`~grpo_lab.replay.state.TRAINER`: ``replay-loop``,
``replay-K``, ``replay-gen_batch``, ``replay-train_batch``, ``replay-cap``; in the URL as ``replay_loop=DAPO`` ...,
read when the page opens and written back as they change (:meth:`ReplayView.url_values`, lab.url_sync), and
``replay-trainer-link`` the link to the run under them) and ``replay-live-forecast``
(the followed run's forecast line, :mod:`.live_forecast`: the doctor's, computed off the server's loop).

The layout wraps: the controls and the grid (up to 600 px) beside the plots where both fit, else one under the
other; pickers, upload inputs and the histograms wrap within it, and the figures stretch to their column, so no
part is clipped at any width and a 390 px phone does not scroll sideways.
"""

from __future__ import annotations

import os
from html import escape as html_escape
from urllib.parse import urlencode

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource

from grpo_lab.memo import Memo
from grpo_lab.memory import trim
from grpo_lab.notice import NoticeLines, TextNotice, plain_html
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.record import RunRecord, read_record
from grpo_lab.visitor import quota_keys, visitor_key

from .catalog import list_runs, pairs_in
from .diagnose_view import DiagnoseView
from .follow import POLL_S, RecordFollower
from .live_forecast import LiveForecast, trainer_settings
from .trackers import TrackerFollower, TrackerSource, follower, read_shared, tracker_logs
from .model import RunView, rows_for, union_steps
from .grid import ReplayGrid, frames_data
from ..views.glyphs import AxisParts
from ..views.play_budget import FrameBudget
from .plots import Slot, TimePlots
from .state import NONE, TRAINER, UPLOAD_PREFIX, URL_PREFIX, VIEWS, ReplayState, trainer_query
from .compact import held_bytes
from .upload import describe_limits, load_upload
from .upload_quota import QUOTA
from .upload_input import UploadInput
from .upload_job import UploadJob

__all__ = ["ReplayView"]

_HELP = """**Replay a run.** Choose a run and drag the step slider (or press play). Each cell is one prompt,
coloured by its group's outcome at that step: mixed (the rollouts disagree, so the group has a gradient),
all pass or all fail (unanimous: zero advantage, no gradient); grey cells were not sampled at that step.
The plots show the share of groups with a gradient per step against two predictions from the pass rates
measured at the nearest evaluation: 1 - D_real (each prompt's own pass rate) and 1 - D_iid (their mean
alone); their gap is the Jensen gap. Pick a second run under *Compare with* to draw both on one time axis."""


#: records on disk as the replay shows them, shared by every session of the process (a class opening one link
#: reads and prepares its runs once); keyed by the folder and its run.json's time and size, so a record still being
#: written is read again once it changes. Shared values: never modified (RunView is built once and only read).
#: Dropped when the room has left (``room=True``: grpo_lab.memory.release), so their memory goes back.
#: the run pickers: all three share a row where it is wide enough (the run's grows twice as fast), else wrap;
#: never wider than 320 px
_PICK = {"sizing_mode": "stretch_width", "min_width": 160, "max_width": 320, "styles": {"flex": "1 1 170px"}}


def _item(basis: str, max_width: int | None) -> dict:
    """The styles of a flex item of this basis that may shrink below its content (and grow up to ``max_width``)."""
    styles = {"flex": f"1 1 {basis}", "min-width": "0"}
    if max_width:
        styles["max-width"] = f"{max_width}px"
    return styles


def _wrap(*objs, basis: str | None = None) -> pn.FlexBox:
    """``objs`` side by side where they fit, else wrapped onto further rows (each of ``basis`` when given)."""
    if basis:
        for obj in objs:
            obj.styles = {**obj.styles, **_item(basis, None)}
    return pn.FlexBox(*objs, flex_wrap="wrap", sizing_mode="stretch_width", styles={"min-width": "0"})


_RUN_VIEWS = Memo(8, room=True)


def _record_key(path: str) -> tuple | None:
    """(folder, run.json's modification time in ns, its size), or None if it cannot be read (read_record says why)."""
    try:
        st = os.stat(os.path.join(path, "run.json"))
    except OSError:
        return None
    return os.path.realpath(path), st.st_mtime_ns, st.st_size


def _followed(f) -> str | TrackerSource | None:
    """What a follower follows, as ``state.choices`` names it: a record's folder (str) or a tracker log; None for an
    upload."""
    if isinstance(f, TrackerFollower):
        return f.source
    return None if f.path is None else str(f.path)


class ReplayView(pn.viewable.Viewer):
    """One session's replay tab (see the module docstring)."""

    #: the query keys :meth:`url_values` writes (the app's address bar, lab.url_sync), and the state's parameters
    #: they follow
    URL_KEYS = (*(URL_PREFIX + name for name in TRAINER), "run", "replay")
    URL_WATCH = (*TRAINER, "run", "pair")

    def __init__(self, state: ReplayState | None = None, runs_root=None, pair: str | None = None,
                 run: str | None = None, query: dict | None = None, **params):
        super().__init__(**params)
        self.state = state or ReplayState()
        if query is None and pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            from grpo_lab.app import session_query

            query = session_query()
        trainer, trainer_notices = trainer_query(query or {})  # ?replay_loop=DAPO&replay_K=8...
        self.state.param.update(**trainer)
        self._upload_bytes: tuple[str, bytes] | None = None
        self._quota_keys = None  # the visitor's keys (grpo_lab.visitor.quota_keys), from this tab's first upload
        self._quota_token = object()  # this tab in the visitor's upload quota
        shipped = {label: str(path) for label, path in list_runs(runs_root).items()}
        shipped.update({label: src for label, src in tracker_logs(runs_root).items() if label not in shipped})
        self.state.choices = {**shipped, **{k: v for k, v in self.state.choices.items() if k not in shipped}}
        if not self.state.run and self.state.choices:
            self.state.run = next(iter(self.state.choices))
        self.pairs = pairs_in(self.state.choices)  # the named side-by-side views whose runs are here
        if pair in self.pairs:
            self.state.param.update(pair=pair, run=self.pairs[pair][1], compare=self.pairs[pair][2])
        elif run in self.state.choices:  # ?run=LABEL (the Fleet tab's links)
            self.state.run = run

        axes = AxisParts()  # one ticker, formatter and label policy for all of the tab's axes
        self.slots = [Slot("a", axes=axes), Slot("b", axes=axes)]
        self.diagnose = DiagnoseView()  # the run doctor on the chosen run (docs/doctor.md)
        self.diagnose.set_settings(self._trainer())  # under the trainer loop's controls
        self.plots = TimePlots(*self.slots, axes=axes)
        self.axis = ColumnDataSource(data={"step": np.zeros(0, np.int64), "row_a": np.zeros(0, np.int32),
                                           "row_b": np.zeros(0, np.int32)}, name="replay_axis")

        self.run_select = pn.widgets.Select(label="Run", css_classes=["replay-run"],
                                            **{**_PICK, "styles": {"flex": "2 1 220px"}})
        self.compare_select = pn.widgets.Select(label="Compare with", css_classes=["replay-compare"],
                                                **_PICK)
        self.pair_select = pn.widgets.Select(label="Side by side, one start", css_classes=["replay-pair"], **_PICK,
                                             options={NONE: NONE, **{t: name for name, (t, _, _) in self.pairs.items()}},
                                             value=self.state.pair if self.state.pair in self.pairs else NONE)
        self.pair_link = pn.pane.HTML("", css_classes=["replay-pair-link"])
        self.view_toggle = pn.widgets.RadioButtonGroup(options=list(VIEWS), value=self.state.view,
                                                       css_classes=["replay-view"], sizing_mode="stretch_width",
                                                       max_width=440, stylesheets=[".bk-btn { white-space: normal; }"])
        # one step control: the grid component's slider (and Play); ``value`` is the position on the axis
        self.grid = ReplayGrid(css_classes=["replay-grid"], sizing_mode="stretch_width")
        self.slider = self.grid
        # the markers and histograms follow within the visitor's share of the server (lab.views.play_budget)
        self._frames = FrameBudget(visitor=visitor_key(getattr(pn.state.curdoc, "session_context", None)))
        self.grid.param.watch(lambda e: self._frames.request(lambda: self.paint(self.grid.value), pn.state.curdoc),
                              "value")

        # refuses a file over the limit in the browser; the server reads it off the event loop (UploadJob)
        # any file: a TensorBoard event file's name has no extension to offer in the picker
        self.file_input = UploadInput(css_classes=["replay-upload"], width=300, accept="")
        self._job: UploadJob | None = None
        self.format_select = pn.widgets.Select(label="Format of the upload", options=list(self.state.param.upload_format.objects),
                                               value=self.state.upload_format, css_classes=["replay-format"], width=150)
        self.tolerance_input = pn.widgets.FloatInput(label="Reward tolerance", value=self.state.tolerance, start=0.0,
                                                     step=0.01, css_classes=["replay-tolerance-input"], width=150)
        for w, doc in ((self.run_select, self.state.param.run.doc), (self.compare_select, self.state.param.compare.doc),
                       (self.pair_select, self.state.param.pair.doc),
                       (self.format_select, self.state.param.upload_format.doc),
                       (self.tolerance_input, self.state.param.tolerance.doc)):
            w.description = doc

        self.tolerance_pane = pn.pane.HTML("", css_classes=["replay-tolerance-pane"], sizing_mode="stretch_width")
        # record names, file names and ingest messages come from visitors: notices show them as plain text
        self.missing_pane = TextNotice("", "warning", css_classes=["replay-missing"])
        self.error_pane = TextNotice("", "danger", css_classes=["replay-error"])
        # a followed run: its live forecast (live_forecast.py); a log that stopped growing, was truncated or replaced,
        # said in words (trackers.py); one pane, two lines
        self.follow_pane = NoticeLines(["replay-live-forecast", "replay-follow"], css_classes=["replay-following"])
        served = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
        self.live = LiveForecast(lambda text: self.follow_pane.show("replay-live-forecast", text),
                                 doc=pn.state.curdoc if served else None)
        # the trainer loop of the doctor's stall risk: the Live lab's own controls (state.TRAINER)
        self.trainer_widgets = [
            (pn.widgets.Select if name == "loop" else pn.widgets.IntInput).from_param(
                self.state.param[name], css_classes=[f"replay-{name}"], width=120, description=self.state.param[name].doc)
            for name in TRAINER]
        self.trainer_link = pn.pane.HTML("", css_classes=["replay-trainer-link"])

        self.run_select.param.watch(lambda e: setattr(self.state, "run", e.new), "value")
        self.compare_select.param.watch(lambda e: setattr(self.state, "compare", e.new), "value")
        self.pair_select.param.watch(lambda e: self.choose_pair(e.new), "value")
        self.state.param.watch(self._off_pair, ["run", "compare"])
        self.view_toggle.param.watch(lambda e: setattr(self.state, "view", e.new), "value")
        self.format_select.param.watch(self._on_format, "value")
        self.tolerance_input.param.watch(self._on_tolerance, "value")
        self.file_input.param.watch(self._on_upload, "value")
        self.state.param.watch(self._on_runs, ["run", "compare"])
        self.state.param.watch(self._on_view, "view")
        self.state.param.watch(self._on_error, "error")
        self.state.param.watch(self._on_trainer, list(TRAINER))

        self._followers: list[RecordFollower | TrackerFollower] = []  # runs being written (follow.py, trackers.py)
        self._poller = None
        self._sync_options()
        self._on_runs()
        self._show_pair()
        if pair is not None and pair not in self.pairs:  # from the URL: said as plain text, the page goes on
            self.state.error = (f"No side-by-side view named {pair!r} here; choose one under Side by side "
                                f"({', '.join(self.pairs) or 'none'}).")
        elif run is not None and run not in self.state.choices:
            self.state.error = f"No run named {run!r} here; choose one under Run."
        elif trainer_notices:
            self.state.error = "Some URL parameters were not used: " + "; ".join(trainer_notices) + "."
        self._show_trainer_link()
        self._layout = self._build_layout()

    # --- layout (it wraps: from a 360 px phone, one column, to a wide screen, controls beside the plots) ---------
    def _build_layout(self):
        """One screen at 1440x900 and 1024x768, as the Live lab: the pickers, the view, the grid with its step slider
        and Play at the top of the left column, the plots beside it; the tolerance, the upload and the help under
        the grid (tests/test_replay_screen_browser.py)."""
        upload = pn.Column(
            pn.pane.Markdown("**Your own run.** Upload a plain JSONL of groups, a verl rollout dump (JSONL), TRL "
                             "completions (parquet) or TRL `trainer_state.json` (scalars only), or a .zip of an output "
                             "folder; or a tracker's log (scalars only): a TensorBoard event file, a W&B `.wandb` "
                             "log or history export, a trackio `.db`, a `metrics.jsonl`, a TRL console log (`train.log`: "
                             "the metric dicts the trainer printed), or a .zip of a TensorBoard, "
                             "W&B or MLflow run folder (format *tracker*). It stays in this browser session. "
                             + describe_limits()),
            _wrap(self.file_input, self.format_select, self.tolerance_input), sizing_mode="stretch_width")
        a, b = self.slots
        wide = {"sizing_mode": "stretch_width"}
        # the time plots two a row where the column is wide enough (one screen at 1440x900), else one a row; a note
        # above them names any not drawn (made the first time, TimePlots.on_note)
        plots = pn.Column(_wrap(*[pn.pane.Bokeh(f, **wide) for f in self.plots.figures], basis="380px"),
                          _wrap(pn.pane.Bokeh(a.layout, **wide), pn.pane.Bokeh(b.layout, **wide), basis="300px"),
                          sizing_mode="stretch_width", styles=_item("480px", None))
        trainer = pn.Column(
            pn.pane.Markdown("**Trainer loop**, for the doctor's stall risk on a run whose log does not carry its "
                             "trainer's settings (a tracker log): the loop, K, prompts a round, groups a step and the "
                             "rounds cap, as grpo-lab diagnose's --num-generations, --gen-batch-size, "
                             "--train-batch-size and --max-num-gen-batches.", sizing_mode="stretch_width"),
            _wrap(*self.trainer_widgets), self.trainer_link, sizing_mode="stretch_width",
            css_classes=["replay-trainer"])
        left = pn.Column(_wrap(self.run_select, self.compare_select, self.pair_select, self.pair_link),
                         self.view_toggle, self.grid, self.tolerance_pane, trainer, upload,
                         pn.pane.Markdown(_HELP, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width", styles=_item("360px", 600), css_classes=["replay-controls"])
        self.plots.on_note = lambda note: plots.insert(0, pn.pane.Bokeh(note, sizing_mode="stretch_width"))
        if self.plots.note is not None:  # already made while the runs were first loaded
            self.plots.on_note(self.plots.note)
        return pn.Column(self.error_pane, self.missing_pane, self.follow_pane, _wrap(left, plots, basis=None),
                         self.diagnose,
                         css_classes=["replay-tab"], sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout

    # --- runs -----------------------------------------------------------------------------
    def _sync_options(self) -> None:
        labels = list(self.state.choices)
        self.run_select.options = labels
        if self.state.run in labels:
            self.run_select.value = self.state.run
        self.compare_select.options = [NONE, *labels]
        self.compare_select.value = self.state.compare if self.state.compare in labels else NONE

    def choose_pair(self, name: str) -> None:
        """Show the named side-by-side view (both runs at once), or leave the runs as they are for (none)."""
        if name not in self.pairs:
            self.state.pair = NONE
        else:
            _, run, other = self.pairs[name]
            self.state.param.update(pair=name, run=run, compare=other)  # one reload for both runs
            self.run_select.value, self.compare_select.value = run, other
        self._show_pair()

    def _off_pair(self, *_events) -> None:
        """A run picked by hand that is not the pair's: no named view any more."""
        name = self.state.pair
        if name in self.pairs and (self.state.run, self.state.compare) != self.pairs[name][1:]:
            self.state.pair = NONE
            self._show_pair()

    def _show_pair(self) -> None:
        name = self.state.pair if self.state.pair in self.pairs else NONE
        self.pair_select.value = name
        self.pair_link.object = ("" if name == NONE else
                                 f'<a href="?{urlencode({"replay": name})}">Link to this view</a>')

    def _load(self, label: str, fresh: RunRecord | None = None) -> RunView | None:
        if not label or label == NONE or label not in self.state.choices:
            return None
        source = self.state.choices[label]
        if isinstance(source, TrackerSource):  # a live tracker log: read as it stands now (trackers.py)
            return RunView(label, fresh if fresh is not None else read_shared(source))
        if fresh is None and isinstance(source, str):  # a record on disk: the same for every session
            key = _record_key(source)
            if key is not None:
                return _RUN_VIEWS.get((key, label), lambda: RunView(label, read_record(source)))
        rec = fresh if fresh is not None else read_record(source) if isinstance(source, str) else source
        return RunView(label, rec)

    def _on_runs(self, *_events, fresh=(None, None), pin: bool = False) -> None:
        try:
            views = [self._load(self.state.run, fresh[0]), self._load(self.state.compare, fresh[1])]
        except InputError as exc:
            self.state.error = f"Cannot replay this run: {exc}"
            return
        self.state.error = ""
        self._follow(views)
        if self._followers[0] is not None and self._followers[0].active and all(r is None for r in fresh):
            pin = True  # a run still being written opens at its latest step
        for slot, view in zip(self.slots, views):
            slot.load(view)
        grown = any(r is not None for r in fresh) and views[0] is not None  # a followed run's new steps: same run
        if grown:
            self.diagnose.grow(views[0].record)
        else:
            self.diagnose.set_record(views[0].record if views[0] is not None else None)
        steps = union_steps(*views)
        self.axis.data = {"step": steps, "row_a": rows_for(views[0], steps), "row_b": rows_for(views[1], steps)}
        self.plots.fit(steps, self.slots)
        self._describe(views)
        live = self._followers[0] is not None and self._followers[0].active and views[0] is not None
        if live:
            self.live.update(views[0].record, self._trainer(), same_run=grown)
        else:
            self.live.clear()
        self._show_trainer_link()
        pos = (len(steps) - 1 if pin else min(self.grid.value, len(steps) - 1)) if len(steps) else 0
        self.grid.param.update(frames=frames_data(views, steps), value=pos, rates=self.state.view == VIEWS[1])
        self.paint(pos)

    def _trainer(self) -> tuple:
        """The doctor's settings of the trainer loop's controls (:func:`.live_forecast.trainer_settings`)."""
        try:
            return trainer_settings(*self.state.trainer())
        except InputError as exc:
            self.state.error = f"Trainer loop not used: {exc}"
            return None, None

    def _on_trainer(self, *_events) -> None:
        """Other trainer settings: the followed run's forecast and the Diagnose section redone under them."""
        settings = self._trainer()
        self.diagnose.set_settings(settings)
        follower = self._followers[0] if self._followers else None
        record = self.diagnose.record
        if follower is not None and follower.active and record is not None:
            self.live.update(record, settings, same_run=False)
        self._show_trainer_link()

    def _show_trainer_link(self) -> None:
        run = self.state.run
        if self.state.loop not in ("DAPO", "GRPO") or not run or run.startswith(UPLOAD_PREFIX):
            self.trainer_link.object = ""
            return
        query = {"tab": "replay", "run": run, **{URL_PREFIX + n: v for n, v in zip(TRAINER, self.state.trainer())}}
        self.trainer_link.object = f'<a href="?{html_escape(urlencode(query))}">Link to this run under this loop</a>'

    def url_values(self) -> dict[str, str]:
        """The query that reopens this view: the trainer loop's settings that are not at their defaults
        (``replay_K=8`` ...), and the named side-by-side view (``replay=NAME``) or else the run where it is not the
        one the tab opens on (``run=LABEL``; an upload lives only in this session and is not named)."""
        out = {URL_PREFIX + name: str(value) for name, value in zip(TRAINER, self.state.trainer())
               if value != self.state.param[name].default}
        run, first = self.state.run, next(iter(self.state.choices), None)
        if self.state.pair in self.pairs:
            out["replay"] = self.state.pair
        elif run and run != first and not run.startswith(UPLOAD_PREFIX):
            out["run"] = run
        return out

    def _follow(self, views) -> None:
        """Poll the shown runs that are still being written (every POLL_S s, in a served session)."""
        sources = [self.state.choices.get(label) for label in (self.state.run, self.state.compare)]
        served = pn.state.curdoc is not None and pn.state.curdoc.session_context is not None
        # a run still shown keeps its follower: what it has seen (a step written while the last one was read), and a
        # read under way, are not lost at a redraw
        kept = {_followed(f): f for f in self._followers if f is not None and _followed(f) is not None}
        self._followers = [None if v is None else kept.get(src) if isinstance(src, (str, TrackerSource)) and src in kept
                           else follower(src, v.record, background=served) for src, v in zip(sources, views)]
        live = any(f is not None and f.active for f in self._followers)
        if live and self._poller is None and served:
            self._poller = pn.state.add_periodic_callback(self.poll, period=int(POLL_S * 1000))
        elif not live and self._poller is not None:
            self._poller.stop()
            self._poller = None

    def poll(self) -> None:
        """Re-read followed runs whose run.json (a tracker log: its files) changed; a slider at the last step stays at
        the last step."""
        fresh = tuple(f.poll() if f is not None else None for f in self._followers)
        self.follow_pane.show("replay-follow", " ".join(f.notice for f in self._followers if getattr(f, "notice", "")))
        if any(r is not None for r in fresh):
            self._on_runs(fresh=fresh, pin=self.slider.value >= len(self.axis.data["step"]) - 1)

    def paint(self, pos: int) -> None:
        """The plots' step markers and the histograms at axis position ``pos`` (the grid, its readouts and
        captions repaint in the browser on every slider move; these follow once it pauses)."""
        steps = self.axis.data["step"]
        for span in self.plots.spans:
            span.location = float(steps[pos]) if len(steps) else 0.0
        for slot, key in zip(self.slots, ("row_a", "row_b")):
            rows = self.axis.data[key]
            slot.paint(int(rows[pos]) if len(rows) else -1)

    def _describe(self, views) -> None:
        parts, missing = [], []
        for view in views:
            if view is None:
                continue
            tol = view.tolerance
            how = ("binary rewards: a group is degenerate when all its rewards are equal" if tol == 0 else
                   f"a group is degenerate when max - min of its rewards is at most {fixed(tol, 3)}")
            parts.append(f"<b>{plain_html(view.label)}</b>: reward tolerance in force "
                         f"<span class=\"replay-tolerance\">{fixed(tol, 3)}</span> ({how})")
            missing += [f"{view.label}: {m}" for m in view.missing()]
        self.tolerance_pane.object = "<br>".join(parts)
        self.state.notice = "; ".join(missing)
        text = ("Not in this record, so not shown: " + "; ".join(missing)) if missing else ""
        if views[0] is None:  # the server's runs folder is not named: visitors need not know its path
            text = ("No run to replay yet: this server has no run records. Upload a file below, or convert a run "
                    "with grpo-lab ingest PATH --format {trl,verl,jsonl} (without --out it goes to the user's runs "
                    "folder, which the lab lists) and reload.")
        self.missing_pane.show(text)

    def _on_view(self, event) -> None:
        self.grid.rates = event.new == VIEWS[1]

    def _on_error(self, event) -> None:
        self.error_pane.show(event.new)

    # --- uploads --------------------------------------------------------------------------
    def _on_upload(self, event) -> None:
        if event.new is None:
            return
        self._upload_bytes = (self.file_input.filename or "upload", bytes(event.new))
        self.file_input.error = ""  # a new file: the last one's error no longer applies
        self._ingest()

    def _on_format(self, event) -> None:
        self.state.upload_format = event.new
        if self._upload_bytes:
            self._ingest()

    def _on_tolerance(self, event) -> None:
        value = event.new
        if value is None or not np.isfinite(value) or value < 0:
            self.state.error = f"Reward tolerance must be a number >= 0, got {value!r}; keeping {self.state.tolerance}"
            return
        self.state.tolerance = float(value)
        if self._upload_bytes:
            self._ingest()

    def _ingest(self) -> None:
        """Read the upload: on the upload worker in a served session, here and now without a server."""
        name, data = self._upload_bytes
        fmt, tolerance = self.state.upload_format, self.state.tolerance
        doc = pn.state.curdoc
        if self._job is not None:
            self._job.cancel()  # a newer file, format or tolerance replaces the read in progress
            self._job = None
        if doc is None or doc.session_context is None:
            self._loaded(name, fmt, tolerance, *load_upload(name, data, fmt, tolerance))
            return
        if self._quota_keys is None:  # the first upload of this tab: its keys, and letting go when it closes
            self._quota_keys = quota_keys(doc.session_context)
            pn.state.on_session_destroyed(lambda _context: self._let_go())
        refused = QUOTA.begin_read(self._quota_keys, token=self._quota_token)
        if refused:
            self.file_input.status = ""
            self._upload_failed(f"Upload not read: {refused}")
            return
        self._job = UploadJob(doc, name, data, fmt, tolerance, self.file_input,
                              lambda rec, error: self._loaded(name, fmt, tolerance, rec, error), self._quota_keys)

    def _upload_failed(self, message: str) -> None:
        """Why an upload was not used: at the top of the tab and beside the upload control, read out there."""
        self.state.error = message
        self.file_input.error = message

    def _let_go(self) -> None:
        """The tab closed: its upload no longer counts for its visitor, and its memory goes back (trimmed)."""
        QUOTA.drop(self._quota_token)
        self._upload_bytes = None
        for label in [k for k in self.state.choices if k.startswith(UPLOAD_PREFIX)]:
            del self.state.choices[label]  # in place: no redraw of a page that is gone
        trim()

    def _loaded(self, name: str, fmt: str, tolerance: float, rec, error: str) -> None:
        """An upload was read (``rec``) or refused (``error``): list it and show it, or say why not."""
        self._job = None
        if rec is None:
            self._upload_failed(f"Upload not loaded: {error}")
            return
        if self._quota_keys is not None:
            size = held_bytes(rec) + len(self._upload_bytes[1] if self._upload_bytes else b"")
            refused = QUOTA.hold(self._quota_keys, self._quota_token, size)
            if refused:
                self.file_input.status = ""
                self._upload_failed(f"Upload not kept: {refused}")
                return
        self.file_input.error = ""
        label = f"{UPLOAD_PREFIX}{name} ({fmt}, tolerance {fixed(tolerance, 3)})"
        self.state.choices = {**{k: v for k, v in self.state.choices.items() if not k.startswith(UPLOAD_PREFIX)},
                              label: rec}
        self._sync_options()
        if self.state.run == label:
            self._on_runs()
        else:
            self.state.run = label
            self.run_select.value = label
