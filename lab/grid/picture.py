"""The replay's grid as a Bokeh image (:class:`Picture`), its hover lookup and its Div writer.

Only the Replay tab uses these; the live lab and the exported page draw with the browser grid view
(``lab/static/gridview.js``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from bokeh.core.properties import expr
from bokeh.models import ColumnDataSource, CustomJS, CustomJSExpr

from ..kernel import kernel_source

__all__ = ["Picture", "with_browser_code", "CELL_UNDER_MOUSE_JS", "DIV_WRITER_JS"]

CELLS_PATH = Path(__file__).resolve().parents[1] / "static" / "cells.js"


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
