"""The Samplers tab: seven samplers side by side on the live lab's population at an equal rollout budget.

Reads the session's :class:`~grpo_lab.state.LabState` (the population: n_prompts, a, b, seed; progress; K;
the filter's band, used as the band sampler's) and shows :func:`grpo_lab.sims.samplers.compare`'s table,
formatted as the doctor's report formats it (:mod:`grpo_lab.doctor_report.samplers`). Its two sliders are
the lab's own progress and K (moving them here moves them in the Live lab too). The population is drawn
once per population key and the expiries once per (population, K, band): moving the progress recomputes the
table alone. When K or the band moves in a served session, the table is sent at once with its two expiry
cells pending and the expiry search (the slow part) runs on the next tick, then the table again
(benchmarks/bench_samplers.py for the computation; benchmarks/bench_samplers_browser.py for control change ->
table painted in Chromium). Built only when the tab is opened.
"""

from __future__ import annotations

import html

import panel as pn

from grpo_lab.doctor_report.markup import table
from grpo_lab.doctor_report.samplers import HEAD, settings_text, table_rows
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.samplers import compare
from grpo_lab.sims.samplers.compare import expiries

__all__ = ["SamplersView", "WATCHED", "LAB_COLUMNS", "samplers_for"]

#: the report's columns the tab shows: all but the shift in steps (the lab's progress has no run length)
LAB_COLUMNS = 6

#: the table's expiry columns (expires at t, shift): searched after the rest is shown when K or the band moves
EXPIRY_COLUMNS = (4, 5)
PENDING = "\u2026"  #: what those cells show meanwhile

#: the LabState parameters the table depends on
WATCHED = ("progress", "K", "n_prompts", "a", "b", "seed", "band_lo", "band_hi")

_STYLE = ("<style>.samplers-table{border-collapse:collapse;width:100%;text-align:right;font-size:14px}"
          ".samplers-table th,.samplers-table td{padding:3px 8px;border-bottom:1px solid #ddd}"
          ".samplers-table th{font-weight:600;vertical-align:bottom}"
          ".samplers-table th:first-child,.samplers-table td:first-child{text-align:left}"
          ".samplers p{margin:0 0 6px;font-size:14px;line-height:1.45}</style>")


def samplers_for(lab, population=None, expiry_t=None) -> dict:
    """``compare`` for the view ``lab`` describes (the population drawn unless given; the expiries computed
    unless given: they depend on the population, K and the band, not on the progress)."""
    pop = population if population is not None else draw_population(lab.n_prompts, lab.a, lab.b, lab.seed)
    return compare(pop.pass_rates, lab.K, lab.progress, gain=lab.scenario().gain, band=lab.band(),
                   expiry_t=expiry_t)


class SamplersView:
    """The tab's controls, settings line and table; :meth:`update` redraws from the LabState."""

    def __init__(self, lab):
        self.lab = lab
        self._pop_key, self._pop = None, None
        self._expiry_key, self._expiry = None, None
        self.table = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["samplers"])
        controls = pn.Row(pn.widgets.FloatSlider.from_param(lab.param.progress),
                          pn.widgets.IntSlider.from_param(lab.param.K),
                          css_classes=["samplers-controls"])
        intro = pn.pane.HTML(
            "<p style='font-size:14px;margin:0 0 6px'>Seven samplers on this population at the same rollout budget: "
            "useful groups (rollouts that disagree, trained on) per 1,000 rollouts generated, the share of prompts "
            "never trained on, and how much later (in training progress t) each one's useful groups per K "
            "rollouts fall below 0.5 than plain GRPO's. Formulas and Monte Carlo checks: docs/doctor.md, "
            "\u201cSamplers side by side\u201d.</p>", sizing_mode="stretch_width")
        self.panel = pn.Column(intro, controls, self.table, sizing_mode="stretch_width", css_classes=["samplers-tab"])
        lab.param.watch(lambda *_events: self.update(), list(WATCHED))
        self.update()

    def _population(self):
        key = self.lab.population_key()
        if key != self._pop_key:
            self._pop_key, self._pop = key, draw_population(*key)
        return self._pop

    def _expiries(self, pop):
        key = (self._pop_key, self.lab.K, self.lab.band())
        if key != self._expiry_key:
            self._expiry = expiries(pop.pass_rates, self.lab.K, self.lab.scenario().gain, band=self.lab.band())
            self._expiry_key = key
        return self._expiry

    def _fill_expiries(self) -> None:
        """The deferred part of a K or band change: the expiry search, then the table again."""
        try:
            self._expiries(self._population())
        except InputError:
            pass  # update() shows the notice
        self.update()

    def update(self) -> None:
        pending = False
        try:
            pop = self._population()
            doc = pn.state.curdoc
            if (self._pop_key, self.lab.K, self.lab.band()) != self._expiry_key and doc is not None and doc.session_context:
                # send the table at once; the expiry search (the slow part) follows on the next tick
                pending = True
                out = samplers_for(self.lab, pop, {})
                doc.add_next_tick_callback(self._fill_expiries)
            else:
                out = samplers_for(self.lab, pop, self._expiries(pop))
        except InputError as exc:
            self.table.object = f"<p class='samplers-notice'>{html.escape(str(exc))}</p>"
            return
        rows = [r[:EXPIRY_COLUMNS[0]] + [PENDING] * len(EXPIRY_COLUMNS) + r[EXPIRY_COLUMNS[-1] + 1:] if pending else r
                for r in table_rows(out)]
        grid = table([row[:LAB_COLUMNS] for row in rows], HEAD[:LAB_COLUMNS], "samplers-table")  # the report's, escaped
        settings = html.escape(settings_text(out))
        self.table.object = (f"{_STYLE}<p class='samplers-settings'>{settings} (at t = {self.lab.progress:g})</p>"
                             f"<div style='overflow-x:auto'>{grid}</div>")
