"""The advantage explorer: one group's advantages under grpo, dr_grpo, sign and tasa, and each estimator's
expected gradient coefficient and coverage against p."""

from __future__ import annotations

import html

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, Range1d
from bokeh.palettes import Colorblind8
from bokeh.plotting import figure

from grpo_lab.notice import TextNotice
from grpo_lab.state import REWARD_SOURCES, AdvantageState

from .controls import hint as _hint, hinted as _hinted
from grpo_lab.sims import advantages as adv
from grpo_lab.sims.formatting import fixed

__all__ = ["AdvantageExplorer"]

_P = np.linspace(0.005, 0.995, 199)
#: one colour and dash per estimator, each at 3:1 or more against the white plot (WCAG's non-text contrast): Okabe-Ito
#: blue, black and reddish purple and a dark ochre (the palette's yellow and sky blue were 1.3:1 and 2.3:1), none of
#: them the lab's outcome colours
_COLORS = dict(zip(adv.ESTIMATORS, (Colorblind8[0], Colorblind8[7], "#A6761D", Colorblind8[6])))
_DASH = dict(zip(adv.ESTIMATORS, ("solid", "dashed", "dotted", "dashdot")))
_COEF_TITLE = "Expected gradient coefficient (units of |\u2207p|) at group size K = {K}"
_COVER_TITLE = "Coverage: P(group has any non-zero advantage) at K = {K}"
#: the coefficient's unit in words, under the plots
UNITS_TEXT = (
    "How to read the left plot: a rollout's expected update moves the model along \u2207p, the direction that raises "
    "the prompt's pass rate p, and the coefficient is how far, in units of |\u2207p| (the length of that direction). "
    "At 1 an estimator pushes p up as hard as following \u2207p itself; at 0.5 half as hard; at 0 (a group whose "
    "advantages are all zero) not at all. Right: the chance that a group of K at pass rate p has any non-zero "
    "advantage, so that the estimator pushes at all. Both assume binary rewards (pass or fail) at group size K.")
HEADROOM = 1.12  #: the plots' top sits this far above their highest curve (a curve at the top is off the border)
_DOC = {
    "grpo": "(r \u2212 mean) / (std + 10\u207b\u2074), as TRL",
    "dr_grpo": "r \u2212 mean (Dr. GRPO)",
    "sign": "sign(r \u2212 0.5) = 2r \u2212 1",
    "tasa": "+1/n\u208a above 0.5, \u22121/n\u208b below",
}

#: the table's cells are padded apart, so neighbouring numbers ("-0.353", "-0.353") never run together; on a phone
#: the table is tighter and scrolls within its own box (Chromium's scrollers take the keyboard focus themselves), so
#: the page never scrolls sideways
_TABLE_STYLE = ("<style>.adv-numbers{border-collapse:collapse;font-size:14px;text-align:right;"
                "font-variant-numeric:tabular-nums}.adv-numbers th,.adv-numbers td{padding:3px 10px;"
                "border-bottom:1px solid #ddd}.adv-source,.adv-doc{font-size:14px;margin:0 0 6px}"
                ".adv-doc{margin-top:6px;color:#333}.adv-scroll{max-width:100%;overflow-x:auto}"
                "@media (max-width:520px){.adv-numbers{font-size:12px}.adv-numbers th,.adv-numbers td{padding:2px 4px}}"
                "</style>")



class AdvantageExplorer:
    """Widgets bound to an AdvantageState, a table of advantages, and two curves against p."""

    def __init__(self, state: AdvantageState):
        self.state = state
        doc = pn.state.curdoc
        if doc is not None and doc.session_context is not None:  # K follows the typed rewards after their change is sent
            state.defer = doc.add_next_tick_callback
        p = state.param
        self.G = pn.widgets.IntSlider.from_param(p.G)
        self.correct = pn.widgets.IntSlider.from_param(p.correct, name="Correct rollouts", end=state.G)
        self.rewards = pn.widgets.TextInput.from_param(p.rewards_text, name="Or type rewards",
                                                       placeholder="e.g. 1, 0, 0, 0", description=None)
        # where the table's rewards come from, said in words: typing switches it, and the sliders grey out
        self.source = pn.widgets.RadioBoxGroup.from_param(
            p.source, name="Rewards from", options={label: key for key, label in REWARD_SOURCES.items()},
            css_classes=["adv-source-choice"])
        self.table = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["adv-table"])
        self.curves = ColumnDataSource({"p": _P, **{f"c_{n}": _P * 0 for n in adv.ESTIMATORS},
                                        **{f"v_{n}": _P * 0 for n in adv.ESTIMATORS}})
        coef = figure(height=260, sizing_mode="stretch_width", tools="", toolbar_location=None, x_range=(0, 1),
                      y_range=Range1d(0, 1), title=_COEF_TITLE.format(K=state.G))
        cover = figure(height=260, sizing_mode="stretch_width", tools="", toolbar_location=None, x_range=(0, 1),
                       y_range=Range1d(0, HEADROOM), title=_COVER_TITLE.format(K=state.G))
        self.coef, self.cover = coef, cover
        for n in adv.ESTIMATORS:
            coef.line("p", f"c_{n}", source=self.curves, color=_COLORS[n], line_dash=_DASH[n], line_width=2.5,
                      legend_label=n)
            cover.line("p", f"v_{n}", source=self.curves, color=_COLORS[n], line_dash=_DASH[n], line_width=2.5,
                       legend_label=n)
        for f in (coef, cover):
            f.xaxis.axis_label = "pass rate p"
            f.legend.label_text_font_size = "11px"
            f.legend.orientation = "horizontal"  # under the plot, where it covers no curve
            f.legend.spacing, f.legend.padding, f.legend.margin = 6, 2, 0
            f.add_layout(f.legend[0], "below")
        self.units = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["adv-units"])
        self.error = TextNotice("", "warning", css_classes=["adv-error"])  # quotes the typed text: shown verbatim
        state.param.watch(self._clamp, ["G"])
        state.param.watch(lambda *_e: self.refresh(), ["G", "correct", "rewards_text", "source"])
        state.param.watch(lambda _e: self._sliders_follow_source(), ["source"])
        self._sliders_follow_source()
        state.param.watch(lambda _e: self.refresh_curves(), ["G"])
        self.refresh()
        self.refresh_curves()
        self.panel = pn.Column(
            pn.pane.Markdown("## Advantage explorer\nChoose a group of K binary rollouts (or type any rewards) and "
                             "compare how the four estimators turn them into advantages."),
            pn.FlexBox(pn.Column(_hinted(self.G, p.G.doc), _hinted(self.correct, p.correct.doc), self.rewards,
                                 _hint("Rewards from:"), self.source, self.error, width=320),
                       pn.Column(self.table, min_width=300, sizing_mode="stretch_width"), flex_wrap="wrap",
                       sizing_mode="stretch_width"),
            pn.Row(pn.pane.Bokeh(coef, sizing_mode="stretch_width"), pn.pane.Bokeh(cover, sizing_mode="stretch_width"),
                   sizing_mode="stretch_width"),
            self.units,
            sizing_mode="stretch_width")

    def _sliders_follow_source(self) -> None:
        """The sliders are greyed out while the typed rewards are used (and the table says so)."""
        typed = self.state.source == "typed"
        self.G.disabled = self.correct.disabled = typed

    def _clamp(self, event) -> None:
        self.correct.end = event.new
        if self.state.correct > event.new:
            self.state.correct = event.new

    def refresh(self) -> None:
        t = self.state.table()
        self.error.show(self.state.error)
        r = t["rewards"]
        shown = min(r.size, 16)
        head = "".join(f"<th>{fixed(x, 2) if x % 1 else int(x)}</th>" for x in r[:shown])
        more = "<th>\u2026</th>" if r.size > shown else ""
        rows = []
        for n, a in t["advantages"].items():
            cells = "".join(f"<td>{fixed(x, 3)}</td>" for x in a[:shown])
            rows.append(f"<tr><th scope='row' style='text-align:left'>{n}</th>{cells}"
                        f"{'<td></td>' if more else ''}<td class='adv-max-{n}'><b>{fixed(t['max_abs'][n], 3)}</b></td></tr>")
        used = REWARD_SOURCES[self.state.source if not self.state.error else "binary"]
        K = r.size
        beyond = (f" The typed group has {K:,} rewards; the plots stop at K = {self.state.G}, the largest group size."
                  if K > self.state.G else "")
        self.units.object = f"<p class='adv-units-text' style='font-size:14px;margin:6px 0'>{UNITS_TEXT}{beyond}</p>"
        self.table.object = (
            f"{_TABLE_STYLE}<p class='adv-source'>The table uses {html.escape(used)}: a group of K = {K} "
            f"rewards.</p><div class='adv-scroll'>"
            f"<table class='adv-numbers'><tr><th scope='col' style='text-align:left'>reward</th>"
            f"{head}{more}<th scope='col'>max |A|</th></tr>" + "".join(rows) + "</table></div><p class='adv-doc'>"
            + "; ".join(f"<b>{n}</b>: {d}" for n, d in _DOC.items()) + ".</p>")

    def refresh_curves(self) -> None:
        G = self.state.G
        data = {"p": _P}
        for n in adv.ESTIMATORS:
            data[f"c_{n}"] = np.asarray(adv.expected_gradient_coef(_P, G, n), float)
            data[f"v_{n}"] = np.asarray(adv.coverage(_P, G, n), float)
        self.curves.data = data
        self.coef.title.text, self.cover.title.text = _COEF_TITLE.format(K=G), _COVER_TITLE.format(K=G)
        top = max(float(np.nanmax(data[f"c_{n}"])) for n in adv.ESTIMATORS)
        bottom = min(float(np.nanmin(data[f"c_{n}"])) for n in adv.ESTIMATORS)
        self.coef.y_range.update(start=min(0.0, bottom * HEADROOM), end=top * HEADROOM if top > 0 else 1.0)
