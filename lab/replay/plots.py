"""The replay tab's Bokeh models: one :class:`Slot` per run shown (its series and its histogram)
and :class:`TimePlots` (the per-step series of both runs on one time axis); and the readout rows
and colour bins that :mod:`grpo_lab.replay.grid` sends to the browser grid view.

Python fills every source from a :class:`~lab.replay.model.RunView` when a run is chosen; the
histograms and the plots' step markers follow the step slider once it pauses.
"""

from __future__ import annotations

import html

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Div, NumeralTickFormatter, Range1d, Span, VBar
from bokeh.palettes import Cividis256

from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from ..palette import FILTERED_COLOR, OUTCOME_COLORS
from ..views.glyphs import AxisParts, add_dots, add_legend, add_line, lean_figure, stacked_bars
from .model import NOT_SAMPLED_CODE, READOUT_KEYS, SERIES, RunView

__all__ = ["Slot", "TimePlots", "readout_template", "rate_codes", "RATE_COLOURS", "NAN_RATE_CODE",
           "HIST_COLUMNS", "NOT_SAMPLED_LABEL", "READOUTS"]

NOT_SAMPLED_LABEL = "not sampled at this step"
MIN_WIDTH = 300  #: the figures' narrowest (a 360 px phone's column); they stretch to their column up to their width
#: the pass-rate view's colours: Cividis by pass rate in 256 bins of [0, 1], then grey for "no evaluation yet"
RATE_COLOURS = list(Cividis256) + [FILTERED_COLOR]
NAN_RATE_CODE = len(RATE_COLOURS) - 1


def rate_codes(rates) -> np.ndarray:
    """The pass-rate view's tile of each rate: bin ``floor(256 r)`` of Cividis256 (1.0 in the last), NaN grey.

    The binning of Bokeh's ``LinearColorMapper(low=0, high=1)``, done here once per run so the browser
    only looks the codes up while scrubbing.
    """
    r = np.asarray(rates, dtype=np.float64)
    code = np.clip(np.floor(np.nan_to_num(r, nan=0.0) * 256), 0, 255).astype(np.int16)
    return np.where(np.isnan(r), NAN_RATE_CODE, code).astype(np.int16)


#: histogram columns, in the order of sims.replay.HISTOGRAM_STATES
HIST_COLUMNS = ("mixed", "all_pass", "all_fail", "not_sampled")

#: readout rows: (label, SERIES key, format, CSS class stem)
READOUTS = (
    ("Step", "step", "fix0", "step"),
    ("Groups with a gradient (measured)", "eff", "pct", "effective-rate"),
    ("  rolling mean", "eff_roll", "pct", "effective-rolling"),
    ("  predicted, 1 - D_real", "pred_real", "pct", "predicted-real"),
    ("  predicted, 1 - D_iid", "pred_iid", "pct", "predicted-iid"),
    ("All-pass groups", "all_pass", "pct", "all-pass"),
    ("All-fail groups", "all_fail", "pct", "all-fail"),
    ("Mean reward", "reward", "fix3", "reward"),
    ("Evaluation pass rate (nearest)", "eval_pass", "pct", "eval-pass"),
    ("Rollouts generated (so far)", "gen_cum", "fix0", "generated"),
    ("Rollouts with a gradient (so far)", "useful_cum", "fix0", "useful"),
)
assert {r[1] for r in READOUTS} == set(READOUT_KEYS)

_CSS = """<style>
.replay-readouts table{border-collapse:collapse;font:13px/1.35 system-ui,sans-serif;width:100%}
.replay-readouts td{padding:1px 6px;border-bottom:1px solid #eee;text-align:right;white-space:pre}
.replay-readouts td:first-child{text-align:left}
.replay-readouts span{font-variant-numeric:tabular-nums;font-weight:600}
</style>"""


def readout_template(prefix: str) -> str:
    """Readout table whose value spans carry the CSS classes ``<prefix><stem>`` (e.g. ``replay-step``)."""
    # every value sits alone in a span marked data-v, so the browser rewrites just its text
    rows = "".join(f'<tr><td>{label}</td><td><span class="{prefix}{stem}" data-v>{{{{{key}:{fmt}}}}}</span></td></tr>'
                   for label, key, fmt, stem in READOUTS)
    return f'{_CSS}<div class="replay-readouts"><table>{rows}</table></div>'


class Slot:
    """One run's Bokeh part (its per-step series for :class:`TimePlots`, and its pass-rate histogram at the
    step shown); ``name`` is "a" or "b". The grid, readouts and captions are :class:`grpo_lab.replay.grid.ReplayGrid`'s."""

    def __init__(self, name: str, width: int = 400, axes: AxisParts | None = None):
        """``axes``: the axis parts the session's replay figures share (:func:`grpo_lab.views.glyphs.lean_figure`)."""
        self.name = name
        self.series = ColumnDataSource(data={k: np.zeros(0) for k in (*SERIES, "step", "ev_row")},
                                       name=f"replay_series_{name}")
        # the stacked histogram is one bar glyph (grpo_lab.views.glyphs.stacked_bars): its rows are each stack's bins
        self.hist = ColumnDataSource(data=_hist_rows(np.zeros((0, len(HIST_COLUMNS))), np.zeros(0)),
                                     name=f"replay_hist_{name}")
        self.hist_fig = lean_figure(axes, sizing_mode="stretch_width", max_width=width, min_width=MIN_WIDTH, height=220,
                                    x_range=(0, 1), title="", name=f"replay_hist_fig_{name}")
        self.hist_fig.add_glyph(self.hist, VBar(x="mid", bottom="bottom", top="top", width=0.095, fill_color="color",
                                                line_color="color"))
        self.hist_fig.title.text_font_size = "12px"
        self.hist_fig.xaxis.axis_label = "pass rate at the nearest evaluation"  # the colour: in the title
        self.hist_fig.yaxis.axis_label = "prompts"
        # said in words where the record has no evaluation (no pass rate to bin), instead of empty axes; the note
        # joins the layout the first time it is needed (one model fewer in a first render)
        self.empty = Div(text="", visible=False, css_classes=["replay-hist-empty"], styles=_EMPTY_STYLE)
        self.layout = column(self.hist_fig, sizing_mode="stretch_width", max_width=width)
        self.view: RunView | None = None
        self._mids = np.zeros(0)

    def load(self, view: RunView | None) -> None:
        """Send one run's series (or nothing) to the browser."""
        self.view = view
        if view is None:
            self.series.data = {k: np.zeros(0) for k in (*SERIES, "step", "ev_row")}
            self.hist.data = _hist_rows(np.zeros((0, len(HIST_COLUMNS))), np.zeros(0))
            self.layout.visible = False
            return
        self.layout.visible = True
        which = "Run" if self.name == "a" else "Compared run"
        drawn = bool(view.has_evals and view.hist.sum() > 0)
        if not drawn and self.empty not in self.layout.children:
            self.layout.children = [*self.layout.children, self.empty]
        self.hist_fig.visible, self.empty.visible = drawn, not drawn
        self.empty.text = "" if drawn else (f"{which} {html.escape(view.label)}: no pass-rate histogram, as the "
                                            "record holds no " + ("evaluation." if not view.has_evals else "group."))
        self.hist_fig.title.text = f"{which}: pass rates (colour: group at this step)"
        self.series.data = {**{k: np.asarray(v, float) for k, v in view.series.items()}, "ev_row": view.ev_row}
        self._mids = (view.hist_edges[:-1] + view.hist_edges[1:]) / 2
        self.hist.data = _hist_rows(np.zeros((len(self._mids), len(HIST_COLUMNS))), self._mids)

    def paint(self, row: int) -> None:
        """The histogram at step row ``row`` (-1: before the run's first step: empty)."""
        view = self.view
        if view is None:
            return
        counts = view.hist[row] if row >= 0 else np.zeros(view.hist.shape[1:], np.int64)
        bars = stacked_bars(counts, self._mids)
        self.hist.data.update(bottom=bars["bottom"], top=bars["top"])  # only these columns change, and are sent


#: the note that stands in for a plot without data
_EMPTY_STYLE = {"font": "13px/1.4 system-ui,sans-serif", "color": "#555", "padding": "8px", "border": "1px dashed #bbb",
                "margin": "4px 0"}


#: the histogram's stacks' colours, in the order of HIST_COLUMNS (bottom to top)
_HIST_COLORS = (OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL], FILTERED_COLOR)


def _hist_rows(counts: np.ndarray, mids: np.ndarray) -> dict:
    """The histogram glyph's rows for ``counts`` (bins x HIST_COLUMNS) at the bins' centres, with their colours."""
    return {**stacked_bars(counts, mids), "color": np.repeat(_HIST_COLORS, len(mids))}


class TimePlots:
    """Per-step series of run A (and B, dashed) on one shared time axis, each with the current step marked."""

    def __init__(self, a: Slot, b: Slot, width: int = 600, axes: AxisParts | None = None):
        """``axes``: the axis parts the session's replay figures share (:func:`grpo_lab.views.glyphs.lean_figure`)."""
        self.x_range = Range1d(0, 1)
        self.spans = []
        self.b_renderers = []

        def fig(title, y_label, y_range=None):
            f = lean_figure(axes, sizing_mode="stretch_width", max_width=width, min_width=MIN_WIDTH, height=210,
                            title=title, x_range=self.x_range, y_range=y_range or Range1d(-0.02, 1.02))
            f.yaxis.axis_label = y_label
            f.xaxis.axis_label = "step"
            span = Span(location=0, dimension="height", line_color="#444", line_dash="dotted", line_width=1.5)
            f.add_layout(span)
            self.spans.append(span)
            return f

        def legend(f, items):
            lg = add_legend(f, items, "top_left", place="right")  # beside the plot, as figure's legends sit
            lg.label_text_font_size, lg.spacing, lg.padding = "10px", 0, 4

        def b_line(f, col, color, width):
            self.b_renderers.append(add_line(f, b.series, "step", col, color, width=width, dash="dashdot"))

        green, orange, red = OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL]
        e = self.effective = fig("Groups with a gradient: measured vs predicted", "share of groups")
        legend(e, [("measured", add_dots(e, a.series, "step", "eff", green, size=3, alpha=0.5)),
                   ("rolling mean", add_line(e, a.series, "step", "eff_roll", green)),
                   ("1 - D_real", add_line(e, a.series, "step", "pred_real", "#0072B2", width=1.5)),
                   ("1 - D_iid", add_line(e, a.series, "step", "pred_iid", "#CC79A7", width=1.5, dash="dashed"))])
        b_line(e, "eff_roll", "#000000", 2)
        t = self.tails = fig("Both tails: unanimous groups", "share of groups")
        legend(t, [("all pass", add_line(t, a.series, "step", "all_pass", orange, width=2)),
                   ("all fail", add_line(t, a.series, "step", "all_fail", red, width=2))])
        for col, color in (("all_pass", orange), ("all_fail", red)):
            b_line(t, col, color, 1.5)
        r = self.reward = fig("Reward and evaluation pass rate", "mean")
        legend(r, [("mean reward", add_line(r, a.series, "step", "reward", "#56B4E9", width=2)),
                   ("eval pass rate", add_line(r, a.series, "step", "eval_pass", "#000000", width=2))])
        for col, color in (("reward", "#56B4E9"), ("eval_pass", "#000000")):
            b_line(r, col, color, 1.5)
        g = self.rollouts = fig("Rollouts: generated vs with a gradient", "rollouts (cumulative)",
                                y_range=Range1d(0, 1))
        g.yaxis.formatter = NumeralTickFormatter(format="0,0")  # 100,000 rather than 1.000e+5
        legend(g, [("generated", add_line(g, a.series, "step", "gen_cum", "#999999", width=2)),
                   ("in groups with a gradient", add_line(g, a.series, "step", "useful_cum", green, width=2))])
        for col, color in (("gen_cum", "#999999"), ("useful_cum", green)):
            b_line(g, col, color, 1.5)
        self.figures = [self.effective, self.tails, self.reward, self.rollouts]
        #: each figure's columns: a figure none of whose columns has a finite value in a run shown is hidden and
        #: its note (``replay-plot-empty``) says so
        self._columns = [("eff", "eff_roll", "pred_real", "pred_iid"), ("all_pass", "all_fail"),
                         ("reward", "eval_pass"), ("gen_cum", "useful_cum")]
        #: the note that names the plots not drawn (class ``replay-plot-empty``): made the first time one is not
        #: drawn; its holder (the view) shows it where :attr:`note` is not None
        self.note: Div | None = None
        self.on_note = lambda note: None  #: called with the note when it is first made (the view places it)

    def fit(self, steps: np.ndarray, slots) -> None:
        """Fit the shared time axis to ``steps`` and the rollout axis to the runs shown; show B's lines iff loaded."""
        lo, hi = (float(steps[0]), float(steps[-1])) if len(steps) else (0.0, 1.0)
        self.x_range.update(start=lo - 0.5, end=max(hi, lo + 1) + 0.5)
        tops = [np.nanmax(s.view.series["gen_cum"]) for s in slots
                if s.view is not None and np.isfinite(s.view.series["gen_cum"]).any()]
        self.rollouts.y_range.update(start=0, end=float(max(tops)) * 1.05 if tops else 1.0)
        has_b = slots[1].view is not None
        for r in self.b_renderers:
            r.visible = has_b
        views = [s.view for s in slots if s.view is not None]
        missing = []
        for f, cols in zip(self.figures, self._columns):
            f.visible = not views or any(np.isfinite(np.asarray(v.series[c], float)).any() for v in views for c in cols
                                         if c in v.series)
            if not f.visible:
                missing.append(html.escape(f.title.text))
        if missing and self.note is None:
            self.note = Div(text="", css_classes=["replay-plot-empty"], styles=_EMPTY_STYLE, sizing_mode="stretch_width")
            self.on_note(self.note)
        if self.note is not None:
            self.note.visible = bool(missing)
            self.note.text = (f"Not drawn, as {'these records hold' if len(views) > 1 else 'this record holds'} none "
                              f"of their series: {'; '.join(missing)}." if missing else "")
