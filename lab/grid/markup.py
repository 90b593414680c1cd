"""The markup and data of the browser grid view (``lab/static/gridview.js``): controls, readouts, canvas.

One producer for every host of the view: the served lab's :class:`grpo_lab.grid.component.LiveGrid`
and the exported page (``lab/export_page.py``). The view's arithmetic is the browser kernel's;
everything here is layout and packing:

* :func:`controls_html`: the controls of :data:`grpo_lab.grid.spec.VIEW_CONTROLS` as native inputs
  (keyboard, touch and screen readers work as everywhere), each with its tooltip; every bound, step
  and tooltip is the spec's (:func:`grpo_lab.grid.spec.control_spec`);
* :func:`grid_html`: the readout table (:data:`grpo_lab.grid.readouts.TEMPLATES`, with the stable hooks
  ``readout-useful``, ``readout-mean-pass``, ``readout-kept``), the <canvas> of cells, the hover
  tip and the legend (:func:`legend_html`);
* :func:`grid_data`: one population packed for the view (:func:`grpo_lab.kernel.kernel_data_b64`,
  the cell layout of :func:`grpo_lab.grid.cells.cell_positions`, the tiles of
  :func:`grpo_lab.grid.cells.cell_tiles`), cached per population: it depends on no session.

The element ids (``gx-progress``, ``gx-K``, ``gx-filter``, ``gx-band-lo``, ``gx-band-hi``,
``gx-grid``, ``gx-tip``, ``gx-readouts``) are the view's hooks; a page holds one view.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from grpo_lab.sims.population import Population
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from ..kernel import b64, kernel_data_b64
from ..memo import Memo, array_key
from ..palette import FILTERED_ALPHA, FILTERED_COLOR, FILTERED_LABEL, OUTCOME_COLORS, OUTCOME_LABELS, OUTCOME_SYMBOLS
from .cells import FILTERED, cell_pixels, cell_positions, cell_tiles, grid_shape
from .readouts import STATE_WORDS, TEMPLATES
from .spec import control_spec

__all__ = ["GRID_WIDTH", "STATIC", "STYLE_PATH", "controls_html", "grid_html", "grid_data", "legend_html",
           "geometry", "spec_json", "frames_html"]

GRID_WIDTH = 560  #: the grid's nominal width in CSS pixels (it scales down with its column)
STATIC = Path(__file__).resolve().parents[1] / "static"
STYLE_PATH = STATIC / "gridview.css"


def _range(name: str, c: dict, value, extra: str = "") -> str:
    """A native range input for control ``name`` of a control spec, showing ``value``."""
    return (f'<input type="range" id="gx-{name.replace("_", "-")}" '
            f'name="{name}"{extra} min="{c["min"]!r}" max="{c["max"]!r}" step="{c["step"]!r}" value="{value!r}">')


def spec_json(spec: dict) -> str:
    """A control spec as the markup carries it (the view reads it from ``data-spec``), HTML-escaped."""
    return html.escape(json.dumps(spec, separators=(",", ":")), quote=True)


def controls_html(values: dict, spec: dict | None = None) -> str:
    """The view's controls (:func:`grpo_lab.grid.spec.control_spec`, default: the served lab's), showing
    ``values`` {progress, K, filter, band_lo, band_hi}. The view keeps the exact values it paints; the
    inputs show the nearest step."""
    spec = spec or control_spec()
    c = spec["controls"]
    tip = {name: html.escape(c[name]["doc"], quote=True) for name in c}
    label = {name: html.escape(c[name]["label"], quote=True) for name in c}  # each declared once, on its parameter
    band_tip = html.escape("The pass rates the filter keeps, low to high", quote=True)
    pd, bd = c["progress"]["digits"], c["band_lo"]["digits"]
    lo, hi = values["band_lo"], values["band_hi"]
    on = bool(values["filter"])
    checked = " checked" if on else ""
    return f"""<div class="gx-controls" data-spec="{spec_json(spec)}">
  <label class="gx-field" title="{tip['progress']}"><span>{label['progress']}
    <output id="gx-progress-out">{values['progress']:.{pd}f}</output></span>
    {_range("progress", c["progress"], values["progress"], f' aria-label="{label["progress"]}"')}</label>
  <label class="gx-field" title="{tip['K']}"><span>{label['K']} <output id="gx-K-out">{values['K']}</output></span>
    {_range("K", c["K"], values["K"], f' aria-label="{label["K"]}"')}</label>
  <label class="gx-check" title="{tip['filter']}"><input type="checkbox" id="gx-filter" name="filter"{checked}>
    {label['filter']}</label>
  <fieldset class="gx-field gx-band{'' if on else ' gx-off'}" title="{band_tip}"><legend>Filter band
    <output id="gx-band-out">{lo:.{bd}f} \u2013 {hi:.{bd}f}</output></legend>
    {_range("band_lo", c["band_lo"], lo, f' aria-label="{label["band_lo"]}"')}
    {_range("band_hi", c["band_hi"], hi, f' aria-label="{label["band_hi"]}"')}</fieldset>
</div>"""


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


#: how a keyboard explores the grid (lab/static/gridview.js): said in the canvas's name
CELL_KEYS = ("Focus the grid and use the arrow keys to move from cell to cell (Home and End: the row's ends, Page Up "
             "and Page Down: the top and bottom rows, Escape: hide); each cell's prompt, group and advantages are "
             "shown beside it and read out.")
#: in the accessibility tree, not on screen (the live region that reads out the focused cell)
_SR_ONLY = ("position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip-path:inset(50%);"
            "white-space:nowrap;border:0")


def grid_html(n_prompts: int, geometry: dict, readouts: str = "") -> str:
    """Readouts (``readouts``: their filled HTML, or empty until the view paints), legend, canvas and tip.

    The legend sits above the canvas, so the colour key is on the first screen with the grid."""
    W, H = geometry["cols"] * geometry["P"], geometry["rows"] * geometry["P"]
    label = html.escape(f"{n_prompts} prompts, one cell each, coloured by the outcome of its group. {CELL_KEYS}",
                        quote=True)
    return f"""<div class="gx-readouts" id="gx-readouts" aria-live="polite">{readouts}</div>
{legend_html()}
<div class="gx-grid">
  <canvas id="gx-grid" width="{W}" height="{H}" role="img" tabindex="0" aria-label="{label}"></canvas>
  <div class="gx-tip" id="gx-tip" role="tooltip" hidden></div>
  <div class="gx-cell-said" id="gx-cell-said" aria-live="polite" style="{_SR_ONLY}"></div>
</div>"""


def geometry(n_prompts: int, width: int = GRID_WIDTH) -> dict:
    """The picture's shape: {cols, rows, P} (P image pixels per cell side, :func:`grpo_lab.grid.cells.cell_pixels`)."""
    cols, rows = grid_shape(n_prompts)
    return {"cols": cols, "rows": rows, "P": cell_pixels(width, cols)}


_PACKED = Memo(16)  #: grid_data's cache: a population's packing depends on no session


def grid_data(population: Population, gain: float, *, readouts: str = "main", width: int = GRID_WIDTH) -> dict:
    """One population packed for ``grpoGridView.setData`` (JSON-ready; shared, do not modify).

    ``readouts`` picks the readout template ("main": the three stable hooks; "full": every row).
    The packing is cached per (seed, size, pass rates, gain, readouts, width), the whole of what it
    depends on (the uniforms are the seed's), so every visit to the default view reuses one.
    """
    def pack() -> dict:
        geo = geometry(population.n, width)
        x, y = cell_positions(population.pass_rates)
        return {**kernel_data_b64(population, gain), "x": b64(x, "<i4"), "y": b64(y, "<i4"),
                "geometry": geo, "tiles": b64(cell_tiles(geo["P"]), "<u4"),
                "template": TEMPLATES[readouts], "filtered_code": FILTERED,
                "words": [STATE_WORDS[c] for c in sorted(STATE_WORDS)], "filtered_label": FILTERED_LABEL}

    key = (population.seed, population.n, array_key(population.pass_rates), float(gain), readouts, width)
    return _PACKED.get(key, pack)


def frames_html(grey_label: str, rate_key: str, runs: tuple[str, ...] = ("a", "b")) -> str:
    """The view's frames mode (``grpoGridView.frames``, the Replay tab): Play and one step slider for the
    shared time axis, then per run a block with its caption, the outcome legend (grey: ``grey_label``) or the
    pass-rate key (``rate_key``: its HTML), the canvas and the tip, and its readouts (a polite live region) under
    the canvas, so that slider and grid share the first screen.
    The captions, readouts and canvas labels are filled by the browser from the frames' data (as text)."""
    blocks = "".join(f"""<section class="gx-run" data-run="{r}" hidden>
  <p class="gx-caption"></p>
  <div class="gx-key-outcome">{legend_html(grey_label)}</div><div class="gx-key-rate">{rate_key}</div>
  <div class="gx-grid"><canvas class="gx-canvas" width="1" height="1" role="img"></canvas>
    <div class="gx-tip" role="tooltip" hidden></div></div>
  <div class="gx-readouts" aria-live="polite"></div>
</section>""" for r in runs)
    return f"""<div class="gx-frames-view">
<div class="gx-controls gx-row">
  <button type="button" class="gx-button gx-play" id="gx-play" aria-pressed="false">Play</button>
  <label class="gx-field gx-step-field"><span>Step <output id="gx-step-out">\u2013</output></span>
    <input type="range" id="gx-step" name="step" min="0" max="0" step="1" value="0" aria-label="Step"></label>
</div>
<div class="gx-runs">{blocks}</div>
</div>"""
