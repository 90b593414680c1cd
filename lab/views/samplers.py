"""The Samplers tab: seven samplers side by side on the live lab's population at an equal rollout budget.

Reads the session's :class:`~grpo_lab.state.LabState` (the population: n_prompts, a, b, seed; progress; K;
the filter's band, used as the band sampler's) and shows :func:`grpo_lab.sims.samplers.compare`'s result as a
picture with a verdict: one sentence in plain words (:func:`grpo_lab.doctor_report.samplers_chart.verdict`), the
chart of useful groups per 1,000 rollouts and of prompts never trained on with the simulated samplers' 95%
Monte Carlo intervals (:func:`~grpo_lab.doctor_report.samplers_chart.samplers_svg`, the doctor report's own
chart), the table as the doctor's report formats it (:mod:`grpo_lab.doctor_report.samplers`; the expiry as a
progress t within the run or "beyond the run"), and each sampler's settings in words with a link to its paper.
Its two sliders are the lab's own progress and K (moving them here moves them in the Live lab too). The
population is drawn once per population key and the expiries once per (population, K, band): moving the
progress recomputes the rest alone. When K or the band moves in a served session, the tab is sent at once with
its expiry cells pending and the expiry search (the slow part) runs on the next tick, then the tab again
(benchmarks/bench_samplers.py for the computation; benchmarks/bench_samplers_browser.py for control change ->
table painted in Chromium). Built only when the tab is opened.

Stable CSS classes: ``samplers-verdict``, ``samplers-chart``, ``samplers-note`` (what the verdict's figures mean), ``samplers-table``, ``samplers-about`` (the
settings in words), ``samplers-expiry`` (what "expires" means; why there is none where K cannot reach the threshold),
``samplers-doctor-link``, ``samplers-notice``.
"""

from __future__ import annotations

import html

import panel as pn

from grpo_lab.doctor_report.markup import table
from grpo_lab.doctor_report.samplers import HEAD, table_rows
from grpo_lab.doctor_report.samplers_chart import about_html, samplers_svg, verdict, verdict_notes
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.samplers import compare
from grpo_lab.sims.samplers.compare import expiries

__all__ = ["SamplersView", "WATCHED", "LAB_COLUMNS", "samplers_for"]

#: the report's columns the tab shows: all but the shift (the lab's progress has no run length; the expiry says it)
LAB_COLUMNS = 5

#: the table's expiry column: searched after the rest is shown when K or the band moves
EXPIRY_COLUMNS = (4,)
PENDING = "\u2026"  #: what those cells show meanwhile

#: the LabState parameters the table depends on
WATCHED = ("progress", "K", "n_prompts", "a", "b", "seed", "band_lo", "band_hi")

_STYLE = ("<style>.samplers-table{border-collapse:collapse;width:100%;text-align:right;font-size:14px}"
          ".samplers-table th,.samplers-table td{padding:3px 8px;border-bottom:1px solid #ddd}"
          ".samplers-table th{font-weight:600;vertical-align:bottom}"
          ".samplers-table th:first-child,.samplers-table td:first-child{text-align:left}"
          ".samplers p{margin:0 0 6px;font-size:14px;line-height:1.45}"
          "p.samplers-verdict{font-size:17px;line-height:1.4;margin:4px 0 8px;max-width:60em}"
          ".samplers-row{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}"
          ".samplers-row>div{flex:1 1 420px;min-width:0}.samplers-row>div:first-child{flex:1 1 600px}"
          "figure.samplers-chart{margin:0}figure.samplers-chart figcaption{font-weight:600;font-size:14px}"
          ".samplers-table td{white-space:nowrap}.samplers-table td:first-child{white-space:normal}"
          "</style>")


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
            "<p style='font-size:14px;margin:0 0 6px'>Seven ways of spending the same rollout budget on this "
            "population (the Live lab's): how many useful groups (rollouts that disagree, so GRPO gets a gradient) "
            "each one trains on per 1,000 rollouts generated, how many prompts it never trains on, and when its "
            "useful groups per K rollouts fall below half.</p>", sizing_mode="stretch_width")
        # the settings in words change with K and the band only: a pane of their own, sent when they change
        self.about = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["samplers-words"])
        self.panel = pn.Column(intro, controls, self.table, self.about, sizing_mode="stretch_width",
                               css_classes=["samplers-tab"])
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
            self.about.object = ""
            return
        rows = [[PENDING if i in EXPIRY_COLUMNS else c for i, c in enumerate(r)] if pending else r
                for r in table_rows(out)]
        grid = table([row[:LAB_COLUMNS] for row in rows], HEAD[:LAB_COLUMNS], "samplers-table")  # the report's, escaped
        notes = "".join(f"<p class='samplers-note'>{html.escape(n)}</p>" for n in verdict_notes(out))
        self.table.object = (f"{_STYLE}<p class='samplers-verdict'>{html.escape(verdict(out))}</p>{notes}"
                             f"<div class='samplers-row'><div>{samplers_svg(out, _title(out))}</div>"
                             f"<div style='overflow-x:auto'>{grid}</div></div>")
        self.about.object = (f"<style>.samplers-about{{font-size:13px;line-height:1.4;margin:4px 0;padding-left:1.2em}}"
                             f"p{{font-size:13px;margin:4px 0}}</style>{about_html(out)}<p class='samplers-expiry'>Expiry: when a sampler's "
                             f"useful groups per K rollouts fall below {out['settings']['threshold']:g}, at a training "
                             "progress t of this lab (0 to 1) or beyond the run"
                             + (f"; none here: {html.escape(out['settings']['expiry_unreachable'])}"
                                if out["settings"].get("expiry_unreachable") else "")
                             + ". For your own run, the run doctor "
                             "compares the same samplers on its fitted population: <a class='samplers-doctor-link' "
                             "href='?tab=replay'>Replay tab, Diagnose this run</a>.</p>")  # unchanged text: not sent


def _title(out: dict) -> str:
    s = out["settings"]
    return (f"{s['prompts']:,} prompts, groups of K = {s['K']}, at training progress t = {s['progress']:g}; "
            f"each sampler spends {s['budget_rollouts']:,.0f} rollouts ({s['epochs']:g} epochs of plain GRPO)")
