"""Browser-side scrubbing: one ``CustomJS`` that repaints both runs' grids, histograms and readouts
and moves the current-step markers, by indexing arrays sent once (no server round trip).

The browser does no arithmetic of its own: cell codes, pass rates (and their colour bins,
:func:`lab.replay.plots.rate_codes`), histogram counts and readout values were all computed in
Python and are looked up at ``row * n + x`` (and so on); ``lab/static/cells.js`` paints the grids;
numbers are printed by ``grpoKernel.percent`` / ``grpoKernel.fixed`` from ``lab/static/kernel.js``,
the twins of ``sims.formatting`` that :meth:`lab.replay.plots.Slot.paint` uses on the server.

Args (:func:`scrub_args`): ``slider`` (the step-position control; None: the model the callback is
attached to, ``cb_obj``), ``axis`` (ColumnDataSource with
``step`` and each run's ``row_a`` / ``row_b``), ``spans``, and per run ``cells_*``, ``states_*``,
``rates_*``, ``rcodes_*``, ``series_*``, ``histall_*``, ``hist_*``, ``readouts_*``, ``template_*`` and
``pictures_*`` (the outcome and pass-rate :class:`lab.grid.Picture` of its grid).
"""

from __future__ import annotations

from bokeh.models import ColumnDataSource, CustomJS

from ..grid.picture import DIV_WRITER_JS, with_browser_code
from .model import NOT_SAMPLED_CODE
from .plots import HIST_COLUMNS, NAN_RATE_CODE, Slot

__all__ = ["SCRUB_JS", "scrub_args", "scrub_callback"]

SCRUB_JS = r"""
var G = window.grpoKernel;
var u = axis.data.step, U = u.length;
if (!U) return;
var pos = Math.min(Math.max(Math.round(Number((slider || cb_obj).value)), 0), U - 1);
function fmt(v, f) { return f === "pct" ? G.percent(v) : G.fixed(v, Number(f.slice(3))); }
function paint(row, cells, states, rates, rcodes, series, readouts, template, pics) {
  var d = cells.data, code = d.code, n = code.length;
  if (!n && !series.data.step.length) { readouts.text = ""; return; }
  var S = states.data.s, R = rates.data.r, RC = rcodes.data.c, ev = row >= 0 ? series.data.ev_row[row] : -1;
  for (var x = 0; x < n; x++) {
    code[x] = row >= 0 ? S[row * n + x] : not_sampled;
    d.rate[x] = ev >= 0 ? R[ev * n + x] : NaN;
    d.rate_code[x] = ev >= 0 ? RC[ev * n + x] : nan_rate_code;
  }
  /* the cells' source is drawn by nothing (the hover reads it in place): repaint the two pictures */
  for (var p = 0; p < pics.length; p++) window.grpoCells.repaint(pics[p], d);
  write(readouts, template.replace(/\{\{(\w+):(\w+)\}\}/g, function (m, k, f) {
    return fmt(row >= 0 ? series.data[k][row] : NaN, f);
  }));
}
paint(axis.data.row_a[pos], cells_a, states_a, rates_a, rcodes_a, series_a, readouts_a, template_a, pictures_a);
paint(axis.data.row_b[pos], cells_b, states_b, rates_b, rcodes_b, series_b, readouts_b, template_b, pictures_b);
function histogram(row, histall, hist) {
  var C = histall.data.c, h = hist.data, bins = h.mid.length;
  for (var b = 0; b < bins; b++) {
    for (var j = 0; j < hist_columns.length; j++) {
      h[hist_columns[j]][b] = row >= 0 ? C[(row * bins + b) * hist_columns.length + j] : 0;
    }
  }
  hist.change.emit();
}
/* The step markers and histograms repaint whole plots (axes, labels): they follow once the slider
   pauses, so while it moves every frame goes to the grids and readouts. */
clearTimeout(window.__grpoScrubLater);
window.__grpoScrubLater = setTimeout(function () {
  for (var i = 0; i < spans.length; i++) spans[i].location = u[pos];
  histogram(axis.data.row_a[pos], histall_a, hist_a);
  histogram(axis.data.row_b[pos], histall_b, hist_b);
}, 200);
"""


def scrub_args(slider, axis: ColumnDataSource, spans: list, slots: list[Slot]) -> dict:
    """The CustomJS args for :data:`SCRUB_JS` (``slider`` may be a Bokeh model or a Panel widget)."""
    args = {"slider": slider, "axis": axis, "spans": spans, "hist_columns": list(HIST_COLUMNS),
            "not_sampled": NOT_SAMPLED_CODE, "nan_rate_code": NAN_RATE_CODE}
    for s in slots:
        for key in ("cells", "states", "rates", "rcodes", "series", "histall", "hist", "readouts"):
            args[f"{key}_{s.name}"] = getattr(s, key)
        args[f"template_{s.name}"] = s.template
        args[f"pictures_{s.name}"] = [s.outcome.js_arg(), s.rate.js_arg()]
    return args


def scrub_code() -> str:
    """Kernel (for its formatters) and cell painter (each defined once per page) + the scrub glue."""
    return with_browser_code(DIV_WRITER_JS + SCRUB_JS)


def scrub_callback(slider, axis, spans, slots) -> CustomJS:
    """A CustomJS repainting every slot at ``slider.value`` (attach it to the slider's ``value``)."""
    return CustomJS(args=scrub_args(slider, axis, spans, slots), code=scrub_code())
