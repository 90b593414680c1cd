"""The Replay tab's *Diagnose* section: the run doctor on the run being replayed.

``DiagnoseView()`` is a ``pn.viewable.Viewer``; the replay view hands it the chosen run with
``set_record(record)`` (``grow(record)``: the same run with more steps, as it is written: the report stays, with
a note of the last step it covers). *Diagnose this run* runs :func:`grpo_lab.sims.doctor.diagnose` in a worker
thread (the server keeps answering meanwhile) and shows the report (:func:`grpo_lab.doctor_report.html_fragment`,
folded: the pictures' sections open (the fit against observed, the forecast, the samplers' chart, the stall
forecast, the transitions), what-ifs, skipping, the audit, the prompt lists and the plain text folded; inline SVG,
no script, every text from the record escaped; in a box that scrolls, at most :data:`REPORT_HEIGHT` tall) with an
*Open this population in the lab* link: the page's own address with the query
``a=..&b=..&K=..`` of the fitted Beta, which the live lab reads on load. A run the doctor cannot fit shows a
notice (plain text) and the page keeps working. A record of per-step tracker scalars only gets the doctor on
scalars (docs/doctor.md, "The doctor on scalars"), or the one line saying what it lacks (K, the groups per step).
``set_settings((trainer_config, K))`` sets the trainer loop it is diagnosed under (the Replay's trainer-loop
controls, :func:`grpo_lab.replay.live_forecast.trainer_settings`): a report shown under others is cleared.

Stable CSS classes: ``replay-diagnose-button``, ``replay-diagnose`` (the report), ``replay-diagnose-notice``;
inside the report the link has class ``doctor-lab-link``.
"""

from __future__ import annotations

import asyncio
import html

import panel as pn

from grpo_lab.sims.doctor import diagnose
from grpo_lab.doctor_report import html_fragment
from grpo_lab.sims.errors import InputError

__all__ = ["DiagnoseView", "diagnose_html"]

_HELP = ("**Diagnose.** Fit this run's difficulty from its groups, check the fit, forecast when the effective "
         "group rate falls below 0.5, and price K, dynamic sampling and a difficulty band on it "
         "(docs/doctor.md). The link opens the fitted population in the live lab.")
_IDLE, _BUSY = "Diagnose this run", "Diagnosing..."
REPORT_HEIGHT = "85vh"  #: the report's box; it scrolls within


def diagnose_html(record, settings=(None, None)) -> tuple[str | None, str | None]:
    """(report HTML, None) for a record the doctor can fit, else (None, a one-line reason); ``settings``:
    ``(trainer_config, num_generations)`` (None, None: the record's own)."""
    try:
        d = diagnose(record, trainer_config=settings[0], num_generations=settings[1])
    except InputError as exc:
        return None, f"Cannot diagnose this run: {exc}"
    return html_fragment(d, lab_href="?" + d["lab_query"], folded=True), None


def _last_step(record) -> int | None:
    """The last step a record holds (its steps table, else its groups), None for none."""
    for table in (record.steps, record.groups):
        steps = table.get("step") if table else None
        if steps is not None and len(steps):
            return int(max(steps))
    return None


class DiagnoseView(pn.viewable.Viewer):
    """One session's Diagnose section (see the module docstring)."""

    def __init__(self, **params):
        super().__init__(**params)
        self._record = None
        self._settings = (None, None)
        self._run = object()  # this run's token: set_record makes a new one, grow keeps it
        self._shown = None  # the record the report shown was made from
        self.button = pn.widgets.Button(label=_IDLE, color="primary", disabled=True,
                                        css_classes=["replay-diagnose-button"])
        self.notice = pn.pane.HTML("", visible=False, css_classes=["replay-diagnose-notice"],
                                   styles={"color": "#8a4b00", "background": "#fff6e0", "padding": "4px 8px"})
        # the report scrolls in a box of at most REPORT_HEIGHT of the window: the page does not grow by thousands of px
        self.report = pn.pane.HTML("", css_classes=["replay-diagnose"], sizing_mode="stretch_width",
                                   styles={"max-height": REPORT_HEIGHT, "overflow-y": "auto"})
        self.button.on_click(self._on_click)
        # the notice joins the section the first time it has something to say (one model fewer in a first render)
        self._layout = pn.Column(pn.pane.Markdown(_HELP, sizing_mode="stretch_width", max_width=560), self.button,
                                 self.report, sizing_mode="stretch_width")

    def __panel__(self):
        return self._layout

    @property
    def record(self):
        """The run as it stands (None: nothing chosen)."""
        return self._record

    def set_settings(self, settings) -> None:
        """The trainer loop to diagnose under (see the module docstring); a report shown is cleared."""
        if settings != self._settings:
            self._settings = settings
            self.set_record(self._record)

    def set_record(self, record) -> None:
        """The run to diagnose (None: nothing chosen); clears the previous report."""
        self._record = record
        self._run = object()  # a report under way for another run is dropped when it lands
        self._shown = None
        self.report.object = ""
        self._note("")
        self.button.disabled = record is None

    def grow(self, record) -> None:
        """The same run with more steps (a record or tracker log followed as it is written): the next click
        diagnoses them; a report shown, or under way, stays, with a note of the last step it covers."""
        self._record = record
        self._say_covered()

    def _say_covered(self) -> None:
        if self._shown is not None and self.report.object:
            done, now = _last_step(self._shown), _last_step(self._record)
            self._note("" if done == now else f"This report covers the run up to step {done}; it has reached step "
                                              f"{now} since: press {_IDLE} again to include the new steps.")

    def _note(self, text: str) -> None:
        self.notice.object = html.escape(text)
        self.notice.visible = bool(text)
        if text and self.notice not in self._layout.objects:
            self._layout.insert(2, self.notice)

    def _show(self, report: str | None, error: str | None) -> None:
        self.report.object = report or ""
        self._note(error or "")

    def render(self) -> None:
        """Diagnose the current run now, in this thread (tests; the button uses a worker thread)."""
        self._shown = self._record
        self._show(*diagnose_html(self._record, self._settings))
        self._say_covered()

    async def _on_click(self, _event) -> None:
        record, run = self._record, self._run
        if record is None:
            return
        self.button.param.update(disabled=True, label=_BUSY)
        try:
            report, error = await asyncio.get_running_loop().run_in_executor(None, diagnose_html, record,
                                                                                   self._settings)
        finally:
            self.button.param.update(disabled=False, label=_IDLE)
        if run is self._run:  # another run may have been chosen meanwhile (new steps of this one may have landed)
            self._shown = record
            self._show(report, error)
            self._say_covered()
