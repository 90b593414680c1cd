"""The prompt grid's parts, shared by the live lab, the exported page and the replay.

The live lab and the exported page draw the grid with the browser grid view
(``lab/static/gridview.js``; markup and data from :mod:`grpo_lab.grid_html`; the served lab's
component is :class:`lab.live_grid.LiveGrid`); the replay draws its grids as Bokeh images
(:class:`Picture`). What they share is here:

``READOUTS``, ``TEMPLATES``, ``readout_html(summary, template)``
    The readout rows and their templates: a table whose value spans carry the stable CSS classes
    ``readout-useful`` (share of groups with a gradient, realised), ``readout-mean-pass``,
    ``readout-kept``, and ``readout-<stem>`` / ``readout-<stem>-expected`` for the other rows
    ("main" keeps only the three stable rows, for embeds). ``readout_html`` is Python's rendering,
    identical to the browser's (``grpoKernel.fill``).
``grid_shape(n)``, ``cell_positions(keys)``, ``legend_html(grey_label)``
    The near-square layout (largest key top-left) and the legend naming the outcomes in words.
``cell_pixels(width, cols)``, ``cell_tiles(P)``, ``colour_tiles(P, colours)``, ``cell_image(...)``
    The picture's resolution, the tile of each cell code (Okabe-Ito outcome colours, grey for
    filtered, a + / - mark when unanimous), and the Python twin of the browser's painter
    (``grpoCells.paint``); tests check the two agree pixel for pixel.
``advantage_table()``, ``advantage_text(K, k, name)``
    The advantages of a passing / failing rollout under every estimator for every (K, k), computed
    by ``sims.advantages``; the grid's hover looks them up and computes none.
``Picture(fig, cells, name, column)``, ``CELL_UNDER_MOUSE_JS``, ``DIV_WRITER_JS``, ``with_browser_code``
    A grid drawn as one Bokeh image, its hover lookup, and the Div writer (the replay's).

The browser does no arithmetic of its own beyond ``lab/static/kernel.js`` (``cells.js`` only copies
tiles), and every number is printed by ``grpoKernel.percent`` / ``grpoKernel.fixed`` (twins of
``sims.formatting``), so Python's rendering and the browser's agree.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
from bokeh.core.properties import expr
from bokeh.models import ColumnDataSource, CustomJS, CustomJSExpr

from grpo_lab.sims.advantages import ESTIMATORS, advantages
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from .kernel import K_MAX, kernel_source
from .palette import (FILTERED_ALPHA, FILTERED_COLOR, FILTERED_LABEL, OUTCOME_COLORS, OUTCOME_MARK_ALPHA,
                      OUTCOME_MARKS, OUTCOME_SYMBOLS, OUTCOME_LABELS)

__all__ = ["readout_html", "grid_shape", "cell_positions", "legend_html",
           "cell_pixels", "cell_tiles", "cell_image",
           "colour_tiles", "Picture", "with_browser_code", "CELL_UNDER_MOUSE_JS",
           "advantage_table", "advantage_text", "DIV_WRITER_JS",
           "READOUTS", "TEMPLATES", "STATE_WORDS", "FILTERED"]

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

def with_browser_code(code: str) -> str:
    """``code`` preceded by the kernel and the cell painter, each defined once per page."""
    cells = CELLS_PATH.read_text(encoding="utf-8")
    return ("if (!window.grpoKernel) {\n" + kernel_source() + "\n}\nif (!window.grpoCells) {\n" + cells + "\n}\n"
            + code)


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
