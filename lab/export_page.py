"""The HTML of an exported page: plain HTML controls, the grid on a <canvas>, the lab's readouts.

No BokehJS: a Bokeh page spends most of a second starting BokehJS before it shows anything,
and an exported page needs none of Bokeh's machinery. What it shares with the lab is the
part that matters, each defined once:

* the arithmetic, ``lab/static/kernel.js`` (``grpoKernel.evaluate``, the twin of
  :func:`sims.scenario.evaluate`, and ``grpoKernel.fill``, the twin of :func:`lab.grid.readout_html`);
* the cell painter, ``lab/static/cells.js`` (``grpoCells.canvas``), with the lab's tiles
  (:func:`lab.grid.cell_tiles`), layout (:func:`lab.grid.cell_positions`) and legend;
* the readout template with the stable hooks ``readout-useful``, ``readout-mean-pass`` and
  ``readout-kept`` (:data:`lab.grid.TEMPLATES`), filled here by Python for the starting view so
  the numbers show before any script runs.

``lab/static/export_page.js`` is the glue: it reads the controls, calls the kernel, paints,
writes the readouts' text, and adds what a server would otherwise do (play, new draw, the
provenance line naming the view shown, the hover tip).
"""

from __future__ import annotations

import base64
import html

import numpy as np

STATE_ID = "grpo-export-state"
GRID_WIDTH = 560  #: the grid's nominal width in CSS pixels (it scales down with its column)

CONTROL_TIPS = {
    "play": "Animate training progress from here up to 1 (press again to pause)",
    "progress": "How far training has gone: each prompt's pass rate rises from p0 to p0^(1/(1 + g t))",
    "K": "Rollouts per prompt; a group teaches nothing when all K agree",
    "filter": "Keep only prompts whose current pass rate lies inside the band (dynamic sampling)",
    "band": "The pass rates the filter keeps, low to high",
    "new_draw": "Show the next population embedded in this file (another seed)",
}


def _shell_top(spec) -> str:
    return f"""<header class="gx-head">
  <h1 class="gx-title">{html.escape(spec.title)}</h1>
  <p class="gx-lede">Each cell is one prompt and its group of K rollouts. When all K agree (all pass or all
  fail) the group's advantage is zero and it teaches nothing. Push training progress and watch the groups
  that still carry a gradient drain away.</p>
</header>"""


def _controls(spec, n_draws: int, seed: int) -> str:
    tip = {k: html.escape(v, quote=True) for k, v in CONTROL_TIPS.items()}
    lo, hi = spec.band
    checked = " checked" if spec.filter_on else ""
    return f"""<form class="gx-controls" id="gx-controls" autocomplete="off" onsubmit="return false">
  <div class="gx-row">
    <button type="button" class="gx-button gx-play" id="gx-play" aria-pressed="false" title="{tip['play']}">\u25b6
      Play / pause</button>
    <label class="gx-field gx-grow" title="{tip['progress']}"><span>Training progress t
      <output id="gx-progress-out">{spec.progress:.3f}</output></span>
      <input type="range" id="gx-progress" name="progress" min="0" max="1" step="0.001" value="{spec.progress!r}"></label>
  </div>
  <label class="gx-field" title="{tip['K']}"><span>Group size K <output id="gx-K-out">{spec.K}</output></span>
    <input type="range" id="gx-K" name="K" min="1" max="64" step="1" value="{spec.K}"></label>
  <label class="gx-check" title="{tip['filter']}"><input type="checkbox" id="gx-filter" name="filter"{checked}>
    Difficulty filter: keep prompts whose pass rate lies in the band</label>
  <fieldset class="gx-field gx-band" title="{tip['band']}"><legend>Filter band
    <output id="gx-band-out">{lo:.2f} \u2013 {hi:.2f}</output></legend>
    <input type="range" id="gx-band-lo" name="band_lo" aria-label="Filter band, low end" min="0" max="1"
      step="0.01" value="{lo!r}">
    <input type="range" id="gx-band-hi" name="band_hi" aria-label="Filter band, high end" min="0" max="1"
      step="0.01" value="{hi!r}"></fieldset>
  <div class="gx-row">
    <button type="button" class="gx-button" id="gx-new-draw" title="{tip['new_draw']}">New draw</button>
    <span class="gx-draw-label" id="gx-draw-label">seed {seed} (draw 1 of {n_draws})</span>
  </div>
</form>"""


def _grid(spec, geometry: dict, first_readouts: str) -> str:
    from lab.grid import legend_html

    W, H = geometry["cols"] * geometry["P"], geometry["rows"] * geometry["P"]
    label = html.escape(f"{spec.n_prompts} prompts, one cell each, coloured by the outcome of its group", quote=True)
    return f"""<div class="gx-readouts" id="gx-readouts">{first_readouts}</div>
<div class="gx-grid" id="gx-grid-box">
  <canvas id="gx-grid" width="{W}" height="{H}" role="img" aria-label="{label}"></canvas>
  <div class="gx-tip" id="gx-tip" role="tooltip" hidden></div>
</div>
{legend_html()}
<noscript><p class="gx-noscript">The controls need JavaScript; the numbers above are the starting view.</p></noscript>"""


def _shell_bottom(spec, state) -> str:
    from lab.export import footer_text

    e = html.escape
    seeds = [d["seed"] for d in state["draws"]]
    plural = "s" if len(seeds) != 1 else ""
    return f"""<footer class="gx-foot">
  <p>Showing population seed <b id="gx-seed">{seeds[0]}</b> (draw <span id="gx-draw-index">1</span> of
  {len(seeds)}). This file embeds {len(seeds)} pre-drawn population{plural} (seed{plural}
  {", ".join(str(s) for s in seeds)}), each exactly the one <code>grpo-lab</code> draws for that seed;
  "New draw" cycles through them. Everything is computed in your browser; nothing is fetched.</p>
  <p>{footer_text(spec)}. Made with grpo-lab {e(state["version"])}.</p>
  <p>Reproduce this file:<br><code class="gx-cmd" id="gx-export-cmd">{e(state["command"])}</code></p>
  <p>Check the view shown:<br><code class="gx-cmd" id="gx-view-cmd"></code></p>
</footer>"""


def grid_state(n_prompts: int) -> dict:
    """The picture's geometry ({cols, rows, P}) and its tiles (little-endian uint32, base64) for n prompts."""
    from lab.grid import cell_pixels, cell_tiles, grid_shape

    cols, rows = grid_shape(n_prompts)
    P = cell_pixels(GRID_WIDTH, cols)
    tiles = np.ascontiguousarray(cell_tiles(P), dtype="<u4")
    return {"geometry": {"cols": cols, "rows": rows, "P": P},
            "tiles": base64.b64encode(tiles.tobytes()).decode()}


def browser_state(spec, state: dict) -> dict:
    """What the glue reads: the page state plus the grid's layout per draw, tiles, template and words."""
    from lab.grid import FILTERED, STATE_WORDS, TEMPLATES, cell_positions
    from lab.palette import FILTERED_LABEL
    from sims.population import draw_population
    from sims.scenario import ALL_FAIL, ALL_PASS, MIXED

    draws = []
    for d in state["draws"]:
        x, y = cell_positions(draw_population(spec.n_prompts, spec.a, spec.b, d["seed"]).pass_rates)
        draws.append({**d, "x": x.astype(int).tolist(), "y": y.astype(int).tolist()})
    return {**state, "draws": draws, **grid_state(spec.n_prompts), "template": TEMPLATES["main"],
            "filtered_code": FILTERED, "words": [STATE_WORDS[c] for c in (MIXED, ALL_PASS, ALL_FAIL)],
            "filtered_label": FILTERED_LABEL}


def page_html(spec, state: dict) -> str:
    """The whole page: shell, controls, readouts (filled for the starting view), canvas, state and scripts."""
    from lab.export import STATIC, _script_json
    from lab.grid import TEMPLATES, readout_html
    from sims.population import draw_population
    from sims.scenario import evaluate

    full = browser_state(spec, state)
    first = evaluate(spec.scenario, draw_population(spec.n_prompts, spec.a, spec.b, spec.seed))
    scripts = "\n".join(f"<script>\n{(STATIC / name).read_text(encoding='utf-8')}\n</script>"
                        for name in ("kernel.js", "cells.js", "export_page.js"))
    css = (STATIC / "export.css").read_text(encoding="utf-8")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="grpo-lab {html.escape(state["version"])}">
<title>{html.escape(spec.title)}</title>
<style>
{css}</style>
</head>
<body>
<main class="gx" id="grpo-export">
{_shell_top(spec)}
<div class="gx-app">
{_controls(spec, len(state["draws"]), state["draws"][0]["seed"])}
{_grid(spec, full["geometry"], readout_html(first.summary, TEMPLATES["main"]))}
</div>
{_shell_bottom(spec, state)}
</main>
<script type="application/json" id="{STATE_ID}">{_script_json(full)}</script>
{scripts}
</body>
</html>
"""


#: JavaScript (for tests, the benchmark and people scripting the page): the text of every element with
#: one of the given CSS classes, looking inside shadow roots too (the served lab's Bokeh views have them).
#: Call with an array of class names.
READ_HOOKS_JS = """(classes) => {
  const found = {};
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      for (const c of classes) if (el.classList.contains(c) && !(c in found)) found[c] = el.textContent.trim();
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return found;
}"""

#: JavaScript: set the exported page's controls by name, e.g. {progress: 1, K: 16, filter: true,
#: band: [0.2, 0.8]}, in that order, as a reader's input would (each fires the control's own event).
SET_CONTROLS_JS = """(values) => {
  const set = (id, v) => {
    const el = document.getElementById(id);
    if (el.type === "checkbox") el.checked = !!v; else el.value = String(v);
    el.dispatchEvent(new Event(el.type === "checkbox" ? "change" : "input", {bubbles: true}));
  };
  for (const [name, v] of Object.entries(values)) {
    if (name === "band") { set("gx-band-lo", v[0]); set("gx-band-hi", v[1]); } else set("gx-" + name, v);
  }
}"""
