"""The markup and data of the browser grid view (``lab/static/gridview.js``): controls, readouts, canvas.

One producer for both hosts of the view: the served lab's :class:`lab.live_grid.LiveGrid`
component and the exported page (``lab/export_page.py``). The view's arithmetic is the
browser kernel's; everything here is layout and packing:

* :func:`controls_html`: training progress, group size K, the difficulty filter and its band, as
  native inputs (keyboard, touch and screen readers work as everywhere), each with a tooltip;
* :func:`grid_html`: the readout table (``lab.grid.TEMPLATES``, with the stable hooks
  ``readout-useful``, ``readout-mean-pass``, ``readout-kept``), the <canvas> of cells, the hover
  tip and the legend;
* :func:`grid_data`: one population packed for the view (:func:`lab.kernel.kernel_data_b64`,
  the cell layout of :func:`lab.grid.cell_positions`, the tiles of :func:`lab.grid.cell_tiles`).

The element ids (``gx-progress``, ``gx-K``, ``gx-filter``, ``gx-band-lo``, ``gx-band-hi``,
``gx-grid``, ``gx-tip``, ``gx-readouts``) are the view's hooks; a page holds one view.
"""

from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path

import numpy as np

from grpo_lab.sims.population import Population

from .grid import (FILTERED, STATE_WORDS, TEMPLATES, advantage_table, cell_pixels, cell_positions, cell_tiles,
                   grid_shape, legend_html)
from .kernel import b64, kernel_data_b64
from .palette import FILTERED_LABEL

__all__ = ["GRID_WIDTH", "CONTROL_TIPS", "controls_html", "grid_html", "grid_data", "hover_advantages", "STYLE_PATH"]

GRID_WIDTH = 560  #: the grid's nominal width in CSS pixels (it scales down with its column)
STYLE_PATH = Path(__file__).with_name("static") / "gridview.css"

CONTROL_TIPS = {
    "progress": "How far training has gone: each prompt's pass rate rises from p0 to p0^(1/(1 + g t))",
    "K": "Rollouts per prompt (group size); a group teaches nothing when all K agree",
    "filter": "Keep only prompts whose current pass rate lies inside the band (dynamic sampling)",
    "band": "The pass rates the filter keeps, low to high",
}


def controls_html(progress: float, K: int, filter_on: bool, band: tuple[float, float], *,
                  progress_step: float = 0.001) -> str:
    """The view's four controls, showing these values (the view keeps the exact values it paints)."""
    tip = {k: html.escape(v, quote=True) for k, v in CONTROL_TIPS.items()}
    digits = max(0, -int(np.floor(np.log10(progress_step))))
    lo, hi = band
    checked = " checked" if filter_on else ""
    return f"""<div class="gx-controls">
  <label class="gx-field" title="{tip['progress']}"><span>Training progress t
    <output id="gx-progress-out" data-digits="{digits}">{progress:.{digits}f}</output></span>
    <input type="range" id="gx-progress" name="progress" min="0" max="1" step="{progress_step!r}" value="{progress!r}"></label>
  <label class="gx-field" title="{tip['K']}"><span>Group size K <output id="gx-K-out">{K}</output></span>
    <input type="range" id="gx-K" name="K" min="1" max="64" step="1" value="{K}"></label>
  <label class="gx-check" title="{tip['filter']}"><input type="checkbox" id="gx-filter" name="filter"{checked}>
    Difficulty filter: keep prompts whose pass rate lies in the band</label>
  <fieldset class="gx-field gx-band{'' if filter_on else ' gx-off'}" title="{tip['band']}"><legend>Filter band
    <output id="gx-band-out">{lo:.2f} \u2013 {hi:.2f}</output></legend>
    <input type="range" id="gx-band-lo" name="band_lo" aria-label="Filter band, low end" min="0" max="1"
      step="0.01" value="{lo!r}">
    <input type="range" id="gx-band-hi" name="band_hi" aria-label="Filter band, high end" min="0" max="1"
      step="0.01" value="{hi!r}"></fieldset>
</div>"""


def grid_html(n_prompts: int, geometry: dict, readouts: str = "") -> str:
    """Readouts (``readouts``: their filled HTML, or empty until the view paints), canvas, tip and legend."""
    W, H = geometry["cols"] * geometry["P"], geometry["rows"] * geometry["P"]
    label = html.escape(f"{n_prompts} prompts, one cell each, coloured by the outcome of its group", quote=True)
    return f"""<div class="gx-readouts" id="gx-readouts">{readouts}</div>
<div class="gx-grid">
  <canvas id="gx-grid" width="{W}" height="{H}" role="img" aria-label="{label}"></canvas>
  <div class="gx-tip" id="gx-tip" role="tooltip" hidden></div>
</div>
{legend_html()}"""


def geometry(n_prompts: int, width: int = GRID_WIDTH) -> dict:
    """The picture's shape: {cols, rows, P} (P image pixels per cell side, :func:`lab.grid.cell_pixels`)."""
    cols, rows = grid_shape(n_prompts)
    return {"cols": cols, "rows": rows, "P": cell_pixels(width, cols)}


@lru_cache(maxsize=1)
def hover_advantages() -> dict:
    """:func:`lab.grid.advantage_table` as the view's hover reads it (``grpoGridView``'s ``advantages``;
    JSON-ready, NaN as null). The same for every population, so it is sent once per view."""
    from grpo_lab.sims.advantages import ESTIMATORS

    t = advantage_table()
    out = {"names": list(ESTIMATORS), "offset": t["offset"].tolist()}
    for key, values in t.items():
        if key != "offset":  # NaN (no such rollout) travels as null
            out[key] = [None if np.isnan(v) else round(float(v), 6) for v in values]
    return out


def grid_data(population: Population, gain: float, *, readouts: str = "main", width: int = GRID_WIDTH) -> dict:
    """One population packed for ``grpoGridView.setData`` (JSON-ready).

    ``readouts`` picks the readout template ("main": the three stable hooks; "full": every row).
    """
    geo = geometry(population.n, width)
    x, y = cell_positions(population.pass_rates)
    data = {**kernel_data_b64(population, gain), "x": x.astype(int).tolist(), "y": y.astype(int).tolist(),
            "geometry": geo, "tiles": b64(cell_tiles(geo["P"]), "<u4"),
            "template": TEMPLATES[readouts], "filtered_code": FILTERED,
            "words": [STATE_WORDS[c] for c in sorted(STATE_WORDS)], "filtered_label": FILTERED_LABEL}
    return data
