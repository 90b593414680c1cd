"""The replay tab's Bokeh models: one :class:`Slot` per run shown (its series and its histogram)
and :class:`TimePlots` (the per-step series of both runs on one time axis); and the readout rows
and colour bins that :mod:`grpo_lab.replay.grid` sends to the browser grid view.

Python fills every source from a :class:`~lab.replay.model.RunView` when a run is chosen; the
histograms and the plots' step markers follow the step slider once it pauses.
"""

from __future__ import annotations

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, Range1d, Span
from bokeh.palettes import Cividis256
from bokeh.plotting import figure

from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from ..palette import FILTERED_COLOR, OUTCOME_COLORS
from .model import NOT_SAMPLED_CODE, READOUT_KEYS, SERIES, RunView

__all__ = ["Slot", "TimePlots", "readout_template", "rate_codes", "RATE_COLOURS", "NAN_RATE_CODE",
           "HIST_COLUMNS", "NOT_SAMPLED_LABEL", "READOUTS"]

NOT_SAMPLED_LABEL = "not sampled at this step"
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

    def __init__(self, name: str, width: int = 400):
        self.name = name
        self.series = ColumnDataSource(data={k: np.zeros(0) for k in (*SERIES, "step", "ev_row")},
                                       name=f"replay_series_{name}")
        self.hist = ColumnDataSource(data={"mid": [], **{c: [] for c in HIST_COLUMNS}}, name=f"replay_hist_{name}")
        self.hist_fig = figure(width=width, height=220, tools="", toolbar_location=None, x_range=(0, 1),
                               title="", name=f"replay_hist_fig_{name}")
        colors = [OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL], FILTERED_COLOR]
        self.hist_fig.vbar_stack(list(HIST_COLUMNS), x="mid", width=0.095, source=self.hist, color=colors)
        self.hist_fig.title.text_font_size = "12px"
        self.hist_fig.xaxis.axis_label = "pass rate at the nearest evaluation (colour: group at this step)"
        self.hist_fig.yaxis.axis_label = "prompts"
        self.layout = column(self.hist_fig)
        self.view: RunView | None = None

    def load(self, view: RunView | None) -> None:
        """Send one run's series (or nothing) to the browser."""
        self.view = view
        if view is None:
            self.series.data = {k: np.zeros(0) for k in (*SERIES, "step", "ev_row")}
            self.hist.data = {"mid": [], **{c: [] for c in HIST_COLUMNS}}
            self.layout.visible = False
            return
        self.layout.visible = True
        self.hist_fig.title.text = "Run: pass rates" if self.name == "a" else "Compared run: pass rates"
        self.series.data = {**{k: np.asarray(v, float) for k, v in view.series.items()}, "ev_row": view.ev_row}
        mids = (view.hist_edges[:-1] + view.hist_edges[1:]) / 2
        self.hist.data = {"mid": mids, **{c: np.zeros(len(mids), np.int32) for c in HIST_COLUMNS}}

    def paint(self, row: int) -> None:
        """The histogram at step row ``row`` (-1: before the run's first step: empty)."""
        view = self.view
        if view is None:
            return
        counts = view.hist[row] if row >= 0 else np.zeros(view.hist.shape[1:], np.int64)
        self.hist.data.update({c: counts[:, j].astype(np.int32) for j, c in enumerate(HIST_COLUMNS)})


class TimePlots:
    """Per-step series of run A (and B, dashed) on one shared time axis, each with the current step marked."""

    def __init__(self, a: Slot, b: Slot, width: int = 600):
        self.x_range = Range1d(0, 1)
        self.spans = []
        self.b_renderers = []

        def fig(title, y_label, y_range=None):
            f = figure(width=width, height=210, tools="", toolbar_location=None, title=title,
                       x_range=self.x_range, y_range=y_range or Range1d(-0.02, 1.02))
            f.yaxis.axis_label = y_label
            span = Span(location=0, dimension="height", line_color="#444", line_dash="dotted", line_width=1.5)
            f.add_layout(span)
            self.spans.append(span)
            return f

        green, orange, red = OUTCOME_COLORS[MIXED], OUTCOME_COLORS[ALL_PASS], OUTCOME_COLORS[ALL_FAIL]
        self.effective = fig("Groups with a gradient per step: measured vs predicted", "share of groups")
        e = self.effective
        e.scatter("step", "eff", source=a.series, size=3, color=green, alpha=0.5, legend_label="measured")
        e.line("step", "eff_roll", source=a.series, color=green, line_width=2.5, legend_label="rolling mean")
        e.line("step", "pred_real", source=a.series, color="#0072B2", line_width=1.5, legend_label="1 - D_real")
        e.line("step", "pred_iid", source=a.series, color="#CC79A7", line_dash="dashed", line_width=1.5,
               legend_label="1 - D_iid")
        self.b_renderers.append(e.line("step", "eff_roll", source=b.series, color="#000000", line_dash="dashdot",
                                       line_width=2))
        self.tails = fig("Both tails: unanimous groups per step", "share of groups")
        self.tails.line("step", "all_pass", source=a.series, color=orange, line_width=2, legend_label="all pass")
        self.tails.line("step", "all_fail", source=a.series, color=red, line_width=2, legend_label="all fail")
        for col, color in (("all_pass", orange), ("all_fail", red)):
            self.b_renderers.append(self.tails.line("step", col, source=b.series, color=color, line_dash="dashdot",
                                                    line_width=1.5))
        self.reward = fig("Reward and evaluation pass rate", "mean")
        self.reward.line("step", "reward", source=a.series, color="#56B4E9", line_width=2, legend_label="mean reward")
        self.reward.line("step", "eval_pass", source=a.series, color="#000000", line_width=2,
                         legend_label="eval pass rate")
        for col, color in (("reward", "#56B4E9"), ("eval_pass", "#000000")):
            self.b_renderers.append(self.reward.line("step", col, source=b.series, color=color, line_dash="dashdot",
                                                     line_width=1.5))
        self.rollouts = fig("Rollouts generated vs rollouts that carried a gradient", "rollouts (cumulative)",
                            y_range=Range1d(0, 1))
        self.rollouts.line("step", "gen_cum", source=a.series, color="#999999", line_width=2, legend_label="generated")
        self.rollouts.line("step", "useful_cum", source=a.series, color=green, line_width=2,
                           legend_label="in groups with a gradient")
        for col, color in (("gen_cum", "#999999"), ("useful_cum", green)):
            self.b_renderers.append(self.rollouts.line("step", col, source=b.series, color=color, line_dash="dashdot",
                                                       line_width=1.5))
        for f in (self.effective, self.tails, self.reward, self.rollouts):
            f.legend.label_text_font_size = "10px"
            f.legend.spacing = 0
            f.legend.padding = 4
            f.add_layout(f.legend[0], "right")
            f.xaxis.axis_label = "step"
        self.figures = [self.effective, self.tails, self.reward, self.rollouts]
        self.layout = column(*self.figures)

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
