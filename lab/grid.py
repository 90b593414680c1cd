"""The prompt grid: one cell per prompt, recoloured in the browser by the browser kernel.

Pure Bokeh (no Panel import), so it serves the Panel app (``lab/app.py``) and any
standalone Bokeh page (``bokeh.embed.file_html`` with INLINE resources). The exported page
(``grpo-lab export``, ``lab/export_page.py``) has no Bokeh; it shares this module's tiles,
layout, legend and readout template, and the same browser kernel and painter.

Public API (stable; other modules import it)
--------------------------------------------
``Grid(population, scenario=None, *, readouts="full", width=520, sizing_mode=None)``
    Builds the models for one population and paints them for ``scenario``
    (``sims.scenario.Scenario``; its n_prompts/a/b/seed are ignored in favour of
    ``population``). Attributes:

    * ``figure``    the Bokeh figure of cells: one ``image_rgba`` that
                    ``lab/static/cells.js`` paints in the browser from the source's ``code``,
                    ``x``, ``y`` with the tiles of :func:`cell_tiles` (Okabe-Ito outcome colours,
                    grey for filtered, a + / - mark when unanimous), so a repaint is one picture
                    however many prompts; hover: prompt id, group state, pass rate now, successes
                    k of K, and the advantages of a passing / failing rollout under grpo,
                    dr_grpo, sign and tasa;
    * ``source``    ColumnDataSource, one row per prompt in prompt-id order (see COLUMNS); the
                    kernel writes ``p_now``, ``k``, ``outcome``, ``kept``, ``code`` into it in place;
                    no glyph draws it (the hover reads it);
    * ``picture``   the :class:`Picture` drawing the cells (its ``geometry``, ``tiles`` and
                    one-row ``pixels`` sources: the image's shape, its tiles, and its painter);
    * ``uniforms``  ColumnDataSource with the kernel's float32 uniforms ``u`` (n * 64);
    * ``state``     ColumnDataSource {"K": [K]}: the K last painted (read by the hover);
    * ``adv``, ``adv_values``  the advantage lookup table (:func:`advantage_table`);
    * ``legend``    a Div naming the three outcomes in words plus the filtered-out state;
    * ``readouts``  a Div holding a table whose value spans carry the stable CSS classes
                    ``readout-useful`` (share of groups with a gradient, realised),
                    ``readout-mean-pass``, ``readout-kept``, and ``readout-<stem>`` /
                    ``readout-<stem>-expected`` for the other rows of READOUTS
                    (``readouts="main"`` keeps only the three stable rows, for embeds);
    * ``layout``    column(figure, legend, readouts), ready to show.

``Grid.show(view, K)``
    Paint an evaluated view (``sims.scenario.evaluate``) from Python: the server path,
    used at start-up, after a new population, and whenever rho > 0 (the kernel covers
    rho = 0 only).
``Grid.set_population(population, scenario)``
    Replace the population (new draw, other n/a/b) and repaint.
``Grid.js_args(progress, K, filter, band=None, band_lo=None, band_hi=None, rho=None)``
    The ``args`` dict for a ``CustomJS`` running :func:`callback_code`. Each control is a
    Bokeh model (Slider ``value``, Checkbox/Toggle ``active``, RangeSlider ``value``) or a
    plain number/bool; Panel widgets may be passed to ``widget.jscallback(args=...)``,
    which resolves them to their models.
``Grid.callback(**controls) -> CustomJS`` and ``Grid.attach(**controls)``
    The CustomJS, and the same attached to every given Bokeh control's value/active.
``callback_code() -> str``
    Kernel source + glue: recolours the grid and rewrites the readouts from
    (progress, K, filter, band) entirely in the browser. With rho > 0 it does nothing
    (the server repaints; dragging then costs a server round trip).
``readout_html(summary, template)``
    Python's rendering of a readout template, identical to the browser's.
``cell_positions(keys)``, ``legend_html(grey_label)``, ``Picture(fig, cells, name, column)``
    The cell layout, the legend and a grid drawn as one image, shared with the replay grid
    (``lab/replay/``), whose grey cells mean "not sampled this step".
``cell_pixels(width, cols)``, ``cell_tiles(P)``, ``cell_image(code, x, y, tiles, cols, rows)``
    The picture's resolution, the tile of each cell code, and the Python twin of the browser's
    painter (``grpoCells.paint``); tests check the two agree pixel for pixel.

The browser does no arithmetic of its own beyond ``lab/static/kernel.js`` (``cells.js`` only copies
tiles): advantages are
looked up in a table computed here by ``sims.advantages`` (row ``offset[K] + k``), and
every number is printed by ``grpoKernel.percent`` / ``grpoKernel.fixed`` (twins of
``sims.formatting``), so Python's rendering (:meth:`Grid.show`) and the browser's agree.

Standalone use (a Bokeh page of your own)::

    grid = Grid(scenario.population(), scenario, sizing_mode="scale_width")
    grid.attach(progress=slider, K=k_slider, filter=checkbox, band=range_slider)
    html = file_html(column(slider, k_slider, checkbox, range_slider, grid.layout), INLINE)
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
from bokeh.layouts import column
from bokeh.core.properties import expr
from bokeh.models import ColumnDataSource, CustomJS, CustomJSExpr, CustomJSHover, Div, HoverTool, Range1d
from bokeh.plotting import figure

from sims.advantages import ESTIMATORS, advantages
from sims.formatting import fixed, percent
from sims.population import Population
from sims.scenario import ALL_FAIL, ALL_PASS, MIXED, Scenario, evaluate

from .kernel import K_MAX, kernel_arrays, kernel_source
from .palette import (FILTERED_ALPHA, FILTERED_COLOR, FILTERED_LABEL, OUTCOME_COLORS, OUTCOME_MARK_ALPHA,
                      OUTCOME_MARKS, OUTCOME_SYMBOLS,
                      OUTCOME_LABELS)

__all__ = ["Grid", "callback_code", "readout_html", "grid_shape", "cell_positions", "legend_html",
           "cell_pixels", "cell_tiles", "cell_image",
           "colour_tiles", "Picture", "with_browser_code", "CELL_UNDER_MOUSE_JS",
           "advantage_table", "advantage_text", "DIV_WRITER_JS",
           "READOUTS", "COLUMNS", "TEMPLATES", "STATE_WORDS", "FILTERED"]

#: columns of Grid.source, one row per prompt (prompt-id order); the kernel writes p_now, k, outcome, kept in place
COLUMNS = ("prompt", "x", "y", "p0", "p_now", "k", "outcome", "kept", "code")
CELLS_PATH = Path(__file__).with_name("static") / "cells.js"
CELL_GAP = 0.12  #: share of a cell's side left blank between neighbours
#: cell code: the outcome (MIXED, ALL_PASS, ALL_FAIL) for a kept prompt, FILTERED for one the filter removed
FILTERED = 3
STATE_WORDS = {MIXED: "mixed (has a gradient)", ALL_PASS: "all pass (no gradient)", ALL_FAIL: "all fail (no gradient)"}

#: readout rows: (label, expected summary key or None, realised key or None, format, CSS class stem)
READOUTS = (
    ("Mean pass rate", None, "mean_pass_rate", "pct", "mean-pass"),
    ("Groups with a gradient", "useful_share_expected", "useful_share_realised", "pct", "useful"),
    ("All-pass groups", "all_pass_share_expected", "all_pass_share", "pct", "all-pass"),
    ("All-fail groups", "all_fail_share_expected", "all_fail_share", "pct", "all-fail"),
    ("Prompts kept by the filter", None, "kept_share", "pct", "kept"),
    ("Rollouts per useful group", "rollouts_per_useful_expected", "rollouts_per_useful_realised", "fix1",
     "rollouts-per-useful"),
    ("Useful rollouts per 1,000", "useful_per_1000_expected", "useful_per_1000_realised", "fix0",
     "useful-per-1000"),
)
_MAIN = ("mean-pass", "useful", "kept")

_PLACEHOLDER = re.compile(r"\{\{(\w+):(\w+)\}\}")
_CSS = """
<style>
.grpo-readouts table{border-collapse:collapse;font:13px/1.35 system-ui,sans-serif;width:100%}
.grpo-readouts th,.grpo-readouts td{padding:2px 6px;text-align:right;border-bottom:1px solid #eee}
.grpo-readouts th:first-child,.grpo-readouts td:first-child{text-align:left}
.grpo-readouts .main td{font-size:15px}
.grpo-readouts span[class^=readout-]{font-variant-numeric:tabular-nums;font-weight:600}
</style>"""


def _readout_template(which: str) -> str:
    rows = [r for r in READOUTS if which == "full" or r[4] in _MAIN]
    body = []
    for label, exp, real, fmt, stem in rows:
        # every value sits alone in a span marked data-v, so the browser can rewrite just its text
        e = f'<span class="readout-{stem}-expected" data-v>{{{{{exp}:{fmt}}}}}</span>' if exp else ""
        r = f'<span class="readout-{stem}" data-v>{{{{{real}:{fmt}}}}}</span>'
        extra = (' <small>(<span data-v>{{n_kept:int}}</span> of <span data-v>{{n_prompts:int}}</span>)</small>'
                 if stem == "kept" else "")
        cls = ' class="main"' if stem in _MAIN else ""
        body.append(f"<tr{cls}><td>{label}</td><td>{e}</td><td>{r}{extra}</td></tr>")
    head = "<tr><th></th><th>expected</th><th>realised</th></tr>"
    return f'{_CSS}<div class="grpo-readouts"><table>{head}{"".join(body)}</table></div>'


#: readout templates: "full" (every readout) and "main" (the three stable hooks, for embeds)
TEMPLATES = {"full": _readout_template("full"), "main": _readout_template("main")}


def _format(value, fmt: str) -> str:
    if fmt == "pct":
        return percent(value)
    if fmt == "int":
        return str(int(value))
    return fixed(value, int(fmt[3:]))


def readout_html(summary: dict, template: str) -> str:
    """Fill a readout template from a summary (the same text the browser writes)."""
    return _PLACEHOLDER.sub(lambda m: _format(summary[m.group(1)], m.group(2)), template)


def grid_shape(n: int) -> tuple[int, int]:
    """(columns, rows) of a near-square grid holding n cells: columns = ceil(sqrt n)."""
    cols = max(1, math.ceil(math.sqrt(n)))
    return cols, max(1, math.ceil(n / cols))


def cell_positions(keys) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) cell centres for n prompts on the :func:`grid_shape` grid, largest key top-left (ties by id).

    The live lab passes the pass rates (easiest prompt top-left); the replay tab passes each prompt's
    pass rate at the run's first evaluation.
    """
    keys = np.asarray(keys, dtype=float)
    n = len(keys)
    cols, rows = grid_shape(n)
    order = np.argsort(-keys, kind="stable")
    rank = np.empty(n, int)
    rank[order] = np.arange(n)
    return (rank % cols).astype(float), (rows - 1 - rank // cols).astype(float)


@lru_cache(maxsize=1)
def advantage_table() -> dict[str, np.ndarray]:
    """Advantages of a passing and a failing rollout, per estimator, for every (K, k), as float32.

    Row ``offset[K] + k`` (1 <= K <= 64, 0 <= k <= K) holds, for a group of K binary rollouts
    with k correct, ``<estimator>_pass`` and ``<estimator>_fail`` from
    :func:`sims.advantages.advantages` (NaN where no rollout passes / fails). ``offset`` has
    K_MAX + 1 entries. The browser only looks entries up; it computes none.
    """
    offset = np.zeros(K_MAX + 1, np.int32)
    total = 0
    for K in range(1, K_MAX + 1):
        offset[K] = total
        total += K + 1
    table = {f"{name}_{side}": np.full(total, np.nan, np.float32) for name in ESTIMATORS for side in ("pass", "fail")}
    for K in range(1, K_MAX + 1):
        k = np.arange(K + 1)
        rewards = (np.arange(K)[None, :] < k[:, None]).astype(float)  # k ones, then zeros
        rows = slice(offset[K], offset[K] + K + 1)
        for name in ESTIMATORS:
            adv = advantages(rewards, name)
            table[f"{name}_pass"][rows] = np.where(k > 0, adv[:, 0], np.nan)
            table[f"{name}_fail"][rows] = np.where(k < K, adv[:, -1], np.nan)
    for v in table.values():
        v.setflags(write=False)
    offset.setflags(write=False)
    return {"offset": offset, **table}


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "") + fixed(v, 3)


def advantage_text(K: int, k: int, name: str) -> str:
    """Hover text of the advantages in a group of K with k correct (as the browser writes it)."""
    t = advantage_table()
    i = int(t["offset"][K]) + int(k)
    parts = [f"{side} {_signed(float(t[f'{name}_{side}'][i]))}" for side in ("pass", "fail")
             if not np.isnan(t[f"{name}_{side}"][i])]
    return ", ".join(parts)


def legend_html(grey_label: str = FILTERED_LABEL) -> str:
    """The legend: the three outcomes in words with colour and mark, then the grey cell labelled ``grey_label``."""
    def swatch(color, symbol, alpha=1.0):
        return (f'<span style="display:inline-block;width:14px;height:14px;vertical-align:-2px;margin-right:5px;'
                f'opacity:{alpha};border:1px solid #999;background:{color};color:#000;font:bold 13px/14px '
                f'system-ui,sans-serif;text-align:center">{symbol}</span>')

    items = [(OUTCOME_COLORS[c], OUTCOME_SYMBOLS[c], 1.0, OUTCOME_LABELS[c]) for c in (MIXED, ALL_PASS, ALL_FAIL)]
    items.append((FILTERED_COLOR, "", max(FILTERED_ALPHA, 0.6), grey_label))
    spans = "".join(f'<span style="margin-right:14px;white-space:nowrap;display:inline-block">'
                    f'{swatch(c, s, a)}{label}</span>' for c, s, a, label in items)
    return f'<div class="grpo-legend" style="font:13px/1.6 system-ui,sans-serif">{spans}</div>'


def cell_pixels(width: int, cols: int) -> int:
    """Image pixels per side of a cell at the grid's nominal width: the repaint's cost grows with their square.

    Cells under 10 screen pixels get one image pixel per screen pixel (at least 3); larger ones
    one per two screen pixels (at most 12), which Bokeh draws unsmoothed, so edges stay crisp.
    """
    screen = width // max(cols, 1)
    return int(max(3, screen if screen < 10 else min(12, screen // 2)))


def _rgba32(color: str, alpha: float) -> int:
    """A colour as one little-endian RGBA uint32 (the byte order of a canvas ImageData)."""
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return r | g << 8 | b << 16 | int(round(255 * alpha)) << 24


def _cell_span(P: int) -> tuple[int, int]:
    """The pixels [lo, hi) of a cell's side that are painted; the rest is the gap to its neighbours."""
    gap = max(1, int(round(CELL_GAP * P)))
    return gap // 2, P - (gap - gap // 2)


def colour_tiles(P: int, colours) -> np.ndarray:
    """One plain P x P tile (uint32 RGBA, with the cell gap) per ``(colour, alpha)`` in ``colours``."""
    lo, hi = _cell_span(P)
    tiles = np.zeros((len(colours), P, P), np.uint32)
    for i, (colour, alpha) in enumerate(colours):
        tiles[i, lo:hi, lo:hi] = _rgba32(colour, alpha)
    return tiles


@lru_cache(maxsize=32)
def cell_tiles(P: int) -> np.ndarray:
    """The pictures of one cell, P x P RGBA (uint32, row 0 at the bottom), indexed by cell code.

    Tiles 0-2 are the outcomes MIXED, ALL_PASS, ALL_FAIL in their colours, tile 3 the grey of a
    prompt the filter removed (or, in the replay, one not sampled). A gap of about CELL_GAP of the
    side is left blank, and unanimous cells carry their mark (palette.OUTCOME_MARKS: a black + on
    all-pass, - on all-fail) when P >= 5, so colour is never the only cue.
    """
    colours = [(OUTCOME_COLORS[c], 1.0) for c in (MIXED, ALL_PASS, ALL_FAIL)] + [(FILTERED_COLOR, FILTERED_ALPHA)]
    tiles = colour_tiles(P, colours)
    lo, hi = _cell_span(P)
    side = hi - lo
    if P >= 5:
        thick = max(1, int(round(side / 8)))
        arm = max(1, int(round(0.2 * side)))
        b0 = lo + (side - thick) // 2  # the bar's rows [b0, b0 + thick), centred in the cell
        a0, a1 = b0 - arm, b0 + thick + arm  # its columns: the same centre, so + is symmetric
        black = _rgba32("#000000", 1.0)
        for code in (MIXED, ALL_PASS, ALL_FAIL):
            if OUTCOME_MARK_ALPHA[code] == 0:
                continue
            tiles[code, b0:b0 + thick, a0:a1] = black  # the bar of - and +
            if OUTCOME_MARKS[code] == "cross":
                tiles[code, a0:a1, b0:b0 + thick] = black  # the upright of +
    tiles.setflags(write=False)
    return tiles


def cell_image(code, x, y, tiles: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """The grid as one image, (rows * P, cols * P) uint32, row 0 at the bottom: tile ``code[i]`` at cell (x[i], y[i]).

    The Python twin of ``grpoCells.paint`` (``lab/static/cells.js``), which draws the grid in the
    browser; cells no prompt occupies stay transparent.
    """
    P = tiles.shape[1]
    img = np.zeros((rows, P, cols, P), np.uint32)
    img[np.asarray(y, int), :, np.asarray(x, int), :] = tiles[np.asarray(code, int)]
    return img.reshape(rows * P, cols * P)


#: JS helper ``write(div, html, values, key)``, shared by the grid's glue and the replay's scrubber
DIV_WRITER_JS = r"""
/* Rewriting a Div's text makes Bokeh lay out the whole page again (tens of ms in the served lab).
   While the controls move, write the rendered Div's HTML directly; the model's text follows once
   they pause, so the document (and the server) end with the same text. Given `values` (the texts
   of the html's data-v spans, in order) and `key` (what the html was filled from), a Div already
   showing that key only has those texts replaced: no parsing, and the browser restyles nothing. */
function write(div, html, values, key) {
  var views = window.__grpoDivViews || (window.__grpoDivViews = {});
  var view = views[div.id];
  if (view === undefined && window.Bokeh && Bokeh.index && Bokeh.index.find_one) {
    view = views[div.id] = Bokeh.index.find_one(div);
  }
  if (!view || !view.markup_el || !view.markup_el.isConnected) { div.text = html; return; }
  var el = view.markup_el, slots = el.__grpoSlots;
  if (values && slots && el.__grpoKey === key && slots.length === values.length && slots[0].isConnected) {
    for (var i = 0; i < values.length; i++) if (slots[i].data !== values[i]) slots[i].data = values[i];
  } else {
    el.innerHTML = html;
    el.__grpoKey = key;
    el.__grpoSlots = Array.prototype.map.call(el.querySelectorAll("[data-v]"), function (s) {
      return s.firstChild || s.appendChild(document.createTextNode(""));
    });
  }
  clearTimeout(div.__grpoSync);
  div.__grpoSync = setTimeout(function () { if (div.text !== html) div.text = html; }, 300);
}
"""

_GLUE = DIV_WRITER_JS + r"""
var G = window.grpoKernel;
function num(m, d) {
  if (m === null || m === undefined) return d;
  if (typeof m === "number") return m;
  if (typeof m === "boolean") return m ? 1 : 0;
  return m.value !== undefined && m.value !== null ? Number(m.value) : d;
}
function flag(m) {
  if (m === null || m === undefined) return false;
  if (typeof m === "boolean" || typeof m === "number") return !!m;
  if (m.active !== undefined) return Array.isArray(m.active) ? m.active.length > 0 : !!m.active;
  return !!m.value;
}
if (num(rho, 0) > 0) return;  /* the kernel covers rho = 0; with rho > 0 the server repaints */
var lo = 0, hi = 1;
if (band && band.value) { lo = Number(band.value[0]); hi = Number(band.value[1]); }
lo = num(band_lo, lo); hi = num(band_hi, hi);
var Kv = Math.min(Math.max(Math.round(num(K, 8)), 1), stride);
var t = Math.min(Math.max(num(progress, 0), 0), 1);
var d = source.data;
var out = {pass_rate: d.p_now, successes: d.k, outcome: d.outcome, kept: d.kept};
G.evaluate({p0: d.p0, u: uniforms.data.u, stride: stride, gain: gain},
           {progress: t, K: Kv, filter: flag(filter), band_lo: lo, band_hi: hi}, out);
d.p_now = out.pass_rate; d.k = out.successes; d.outcome = out.outcome; d.kept = out.kept;
var n = d.p0.length, oc = out.outcome, kept = out.kept, code = d.code;
for (var x = 0; x < n; x++) code[x] = kept[x] ? oc[x] : filtered_code;
state.data.K[0] = Kv;
/* the source itself is drawn by nothing (the hover reads it in place): repaint the cells' image alone */
window.grpoCells.repaint(picture, d);
for (var r = 0; r < readouts.length; r++) {
  var filled = G.fill(templates[r], out.summary);
  write(readouts[r], filled.html, filled.values, templates[r]);
}
"""

#: CustomJSHover prelude for a :class:`Picture`: ``i``, the row of ``source`` whose cell is under the mouse
#: (-1: none), from the data coordinates; needs args ``source`` (the cells) and ``geometry``
CELL_UNDER_MOUSE_JS = r"""
var d = source.data, g = geometry.data, cols = g.cols[0], rows = g.rows[0];
if (source.__grpoSlotsFor !== d.x || !source.__grpoSlots || source.__grpoSlots.length !== cols * rows) {
  var slots = new Int32Array(cols * rows).fill(-1);
  for (var p = 0; p < d.x.length; p++) slots[d.y[p] * cols + d.x[p]] = p;
  source.__grpoSlots = slots; source.__grpoSlotsFor = d.x;
}
var cx = Math.round(special_vars.x), cy = Math.round(special_vars.y);
var i = (cx >= 0 && cx < cols && cy >= 0 && cy < rows) ? source.__grpoSlots[cy * cols + cx] : -1;
"""

_HOVER = CELL_UNDER_MOUSE_JS + r"""
var G = window.grpoKernel;
if (i < 0) return "";
if (format === "prompt") return String(d.prompt[i]);
if (format === "pct") return G.percent(d.p_now[i]);
if (format === "group") return d.kept[i] ? words[d.outcome[i]] : filtered_label + ", " + words[d.outcome[i]];
var K = state.data.K[0], k = d.k[i];
if (format === "kofK") return k + " of " + K;
var j = offset.data.offset[K] + k, parts = [];
["pass", "fail"].forEach(function (side) {
  var a = adv.data[format + "_" + side][j];
  if (!isNaN(a)) parts.push(side + " " + (a >= 0 ? "+" : "") + G.fixed(a, 3));
});
return parts.join(", ");
"""


def with_browser_code(code: str) -> str:
    """``code`` preceded by the kernel and the cell painter, each defined once per page."""
    cells = CELLS_PATH.read_text(encoding="utf-8")
    return ("if (!window.grpoKernel) {\n" + kernel_source() + "\n}\nif (!window.grpoCells) {\n" + cells + "\n}\n"
            + code)


def callback_code() -> str:
    """CustomJS code: the kernel (defined once per page) and the glue that repaints grid and readouts.

    Expects the args of :meth:`Grid.js_args`.
    """
    return with_browser_code(_GLUE)


class Picture:
    """A grid of cells drawn as one image on ``fig``: tile ``cells.data[column][i]`` at (x[i], y[i]).

    ``geometry`` ({cols, rows, P}) and ``tiles`` ({"t": flat uint32 tiles}) are ColumnDataSources
    Python fills (:meth:`set`); the pixels are painted in the browser by ``lab/static/cells.js``
    whenever the picture's one-row source ``pixels`` changes. A repaint from Python (new data in
    ``cells``) repaints it by itself; browser code that changes ``cells`` in place calls
    ``grpoCells.repaint(picture, cells.data)`` with :meth:`js_arg` passed in as ``picture``.
    """

    def __init__(self, fig, cells: ColumnDataSource, name: str, column: str = "code",
                 geometry: ColumnDataSource | None = None, **renderer_kw):
        self.cells, self.column = cells, column
        self.geometry = geometry or ColumnDataSource(data={"cols": [1], "rows": [1], "P": [3]},
                                                     name=f"{name}_geometry")
        self.tiles = ColumnDataSource(data={"t": np.zeros(0, np.uint32)}, name=f"{name}_tiles")
        self.pixels = ColumnDataSource(data={"row": [0]}, name=f"{name}_pixels")
        paint = CustomJSExpr(args={"cells": cells, "geometry": self.geometry, "tiles": self.tiles},
                             code=with_browser_code(f"return [window.grpoCells.image(this, cells.data, geometry.data, "
                                               f"tiles.data.t, {column!r})];"))
        self.renderer = fig.image_rgba(image=expr(paint), x=-0.5, y=-0.5, dw=1, dh=1, source=self.pixels,
                                       name=f"{name}_picture", **renderer_kw)
        cells.js_on_change("data", CustomJS(args={"pixels": self.pixels}, code="pixels.change.emit();"))

    def set(self, cols: int, rows: int, P: int, tiles: np.ndarray) -> None:
        """The grid's shape and the tiles (``(n_tiles, P, P)`` uint32) its codes index."""
        self.renderer.glyph.update(dw=cols, dh=rows)
        self.geometry.data = {"cols": [int(cols)], "rows": [int(rows)], "P": [int(P)]}
        self.tiles.data = {"t": np.ascontiguousarray(tiles, np.uint32).ravel()}

    def js_arg(self) -> dict:
        """The picture as a CustomJS arg, for ``grpoCells.repaint``."""
        return {"pixels": self.pixels, "geometry": self.geometry, "tiles": self.tiles, "column": self.column}


class Grid:
    """The grid, legend and readouts of one population (see the module docstring for the API)."""

    def __init__(self, population: Population, scenario: Scenario | None = None, *, readouts: str = "full",
                 width: int = 520, sizing_mode: str | None = None):
        if readouts not in TEMPLATES:
            raise ValueError(f"readouts must be one of {sorted(TEMPLATES)}")
        scenario = scenario or Scenario()
        self.template = TEMPLATES[readouts]
        self.source = ColumnDataSource(data={c: [] for c in COLUMNS}, name="grpo_grid")
        self.uniforms = ColumnDataSource(data={"u": np.zeros(0, np.float32)}, name="grpo_uniforms")
        self.state = ColumnDataSource(data={"K": [int(scenario.K)]}, name="grpo_grid_state")
        table = advantage_table()
        self.adv = ColumnDataSource(data={"offset": np.asarray(table["offset"])}, name="grpo_adv_offset")
        self.adv_values = ColumnDataSource(data={k: np.asarray(v) for k, v in table.items() if k != "offset"},
                                           name="grpo_adv")
        self.figure = figure(width=width, height=width, tools="", toolbar_location=None,
                             sizing_mode=sizing_mode, min_border=2, outline_line_color=None,
                             x_range=Range1d(0, 1), y_range=Range1d(0, 1), name="grpo_grid_figure")
        self.figure.axis.visible = False
        self.figure.grid.visible = False
        self.figure.title.visible = False
        # the cells are one image (lab/static/cells.js paints it from the source's code, x and y), so a
        # repaint draws one picture however many prompts there are; geometry and tiles come from Python
        self.picture = Picture(self.figure, self.source, "grpo_grid")
        self._width = width
        fmt = CustomJSHover(code=with_browser_code(_HOVER), args={
            "source": self.source, "state": self.state, "adv": self.adv_values, "offset": self.adv,
            "geometry": self.picture.geometry,
            "words": [STATE_WORDS[c] for c in (MIXED, ALL_PASS, ALL_FAIL)], "filtered_label": FILTERED_LABEL})
        tips = [("prompt", "$x{prompt}"), ("group", "$x{group}"), ("pass rate now", "$x{pct}"),
                ("successes", "$x{kofK}")] + [(f"A {name}", f"$x{{{name}}}") for name in ESTIMATORS]
        self.figure.add_tools(HoverTool(renderers=[self.picture.renderer], tooltips=tips, formatters={"$x": fmt}))
        size_kw = {"width": width} if sizing_mode is None else {"sizing_mode": "stretch_width"}
        self.legend = Div(text=legend_html(), name="grpo_legend", **size_kw)  # wraps under the grid
        # a fixed height, so the page below does not jump as rows change
        rows = len(READOUTS) if readouts == "full" else len(_MAIN)
        self.readouts = Div(text="", height=28 * rows + 34, name="grpo_readouts", **size_kw)
        self.layout = column(self.figure, self.legend, self.readouts, sizing_mode=sizing_mode)
        self.set_population(population, scenario)

    # --- server-side painting -------------------------------------------------------------
    def set_population(self, population: Population, scenario: Scenario) -> None:
        """Replace the population (uniforms, layout) and paint ``scenario`` on it."""
        self.population = population
        self.gain = float(scenario.gain)
        arr = kernel_arrays(population, self.gain)
        cols, rows = grid_shape(population.n)
        self._xy = cell_positions(population.pass_rates)
        self.figure.x_range.update(start=-0.5, end=cols - 0.5)
        self.figure.y_range.update(start=-0.5, end=rows - 0.5)
        P = cell_pixels(self._width, cols)
        self.picture.set(cols, rows, P, cell_tiles(P))
        self.uniforms.data = {"u": arr["u"]}
        self.show(evaluate(scenario, population), scenario.K)

    def columns(self, view, K: int) -> dict:
        """The source's columns for an evaluated view (what the browser glue writes for rho = 0)."""
        kept = view.kept.astype(np.uint8)
        outcome = view.outcome.astype(np.int8)
        return {
            "prompt": np.arange(self.population.n, dtype=np.int32), "x": self._xy[0], "y": self._xy[1],
            "p0": np.ascontiguousarray(self.population.pass_rates, dtype=np.float64),
            "p_now": np.asarray(view.pass_rate, dtype=np.float64), "k": view.successes.astype(np.int32),
            "outcome": outcome, "kept": kept,
            "code": np.where(kept == 1, outcome, FILTERED).astype(np.int8),
        }

    def show(self, view, K: int) -> None:
        """Paint an evaluated view and its readouts from Python."""
        self.state.data = {"K": [int(K)]}
        self.source.data = self.columns(view, K)
        self.readouts.text = readout_html(view.summary, self.template)

    # --- browser-side painting -----------------------------------------------------------
    def js_args(self, progress=None, K=None, filter=None, band=None, band_lo=None, band_hi=None, rho=None) -> dict:
        """Args of :func:`callback_code` for these controls (models, Panel widgets or plain values)."""
        return {
            "source": self.source, "uniforms": self.uniforms, "state": self.state, "readouts": [self.readouts],
            "templates": [self.template], "stride": K_MAX, "gain": self.gain, "filtered_code": FILTERED,
            "picture": self.picture.js_arg(),
            "progress": progress, "K": K, "filter": filter, "band": band, "band_lo": band_lo,
            "band_hi": band_hi, "rho": rho,
        }

    def callback(self, **controls) -> CustomJS:
        """A CustomJS that repaints this grid from the given controls (see :meth:`js_args`)."""
        return CustomJS(args=self.js_args(**controls), code=callback_code())

    def attach(self, **controls) -> CustomJS:
        """Attach :meth:`callback` to every given Bokeh control (``value`` or ``active``); returns it."""
        cb = self.callback(**controls)
        for model in controls.values():
            if model is None or isinstance(model, (int, float, bool)):
                continue
            prop = "active" if "active" in model.properties() else "value"
            model.js_on_change(prop, cb)
        return cb
