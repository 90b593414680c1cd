"""The HTML of an exported page: the lab's grid view (controls, readouts, canvas) in a small shell.

No BokehJS: a Bokeh page spends most of a second starting BokehJS before it shows anything,
and an exported page needs none of Bokeh's machinery. It is the served lab's own grid view,
each part defined once and shared:

* the markup and data, :mod:`grpo_lab.grid_html` (the lab's LiveGrid component uses the same);
* the view, ``lab/static/gridview.js``, over the arithmetic of ``lab/static/kernel.js``
  (``grpoKernel.evaluate``, the twin of :func:`sims.scenario.evaluate`; ``grpoKernel.fill``, the twin
  of :func:`lab.grid.readout_html`) and the painter ``lab/static/cells.js``;
* the readouts, filled here by Python for the starting view so the numbers show before any script runs.

``lab/static/export_page.js`` is the page's glue: play, new draw (populations embedded in the
page state), and the provenance line naming the view shown.
"""

from __future__ import annotations

import html

from grpo_lab.grid_html import STYLE_PATH, controls_html, grid_html

STATE_ID = "grpo-export-state"
SCRIPTS = ("kernel.js", "cells.js", "gridview.js", "export_page.js")  #: in lab/static, in this order

TIPS = {
    "play": "Animate training progress from here up to 1 (press again to pause)",
    "new_draw": "Show the next population embedded in this file (another seed)",
}


def _shell_top(spec) -> str:
    return f"""<header class="gx-head">
  <h1 class="gx-title">{html.escape(spec.title)}</h1>
  <p class="gx-lede">Each cell is one prompt and its group of K rollouts. When all K agree (all pass or all
  fail) the group's advantage is zero and it teaches nothing. Push training progress and watch the groups
  that still carry a gradient drain away.</p>
</header>"""


def _buttons(n_draws: int, seed: int) -> str:
    tip = {k: html.escape(v, quote=True) for k, v in TIPS.items()}
    return f"""<div class="gx-row">
  <button type="button" class="gx-button gx-play" id="gx-play" aria-pressed="false" title="{tip['play']}">\u25b6
    Play / pause</button>
  <button type="button" class="gx-button" id="gx-new-draw" title="{tip['new_draw']}">New draw</button>
  <span class="gx-draw-label" id="gx-draw-label">seed {seed} (draw 1 of {n_draws})</span>
</div>"""


def _shell_bottom(spec, state) -> str:
    from grpo_lab.export import footer_text

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


def page_html(spec, state: dict) -> str:
    """The whole page: shell, buttons, controls, readouts (filled for the starting view), canvas, scripts."""
    from grpo_lab.export import STATIC, _script_json
    from grpo_lab.grid import TEMPLATES, readout_html
    from grpo_lab.sims.population import draw_population
    from grpo_lab.sims.scenario import evaluate

    first = evaluate(spec.scenario, draw_population(spec.n_prompts, spec.a, spec.b, spec.seed))
    scripts = "\n".join(f"<script>\n{(STATIC / name).read_text(encoding='utf-8')}\n</script>" for name in SCRIPTS)
    css = STYLE_PATH.read_text(encoding="utf-8") + (STATIC / "export.css").read_text(encoding="utf-8")
    controls = controls_html(spec.progress, spec.K, spec.filter_on, spec.band)
    grid = grid_html(spec.n_prompts, state["draws"][0]["geometry"], readout_html(first.summary, TEMPLATES["main"]))
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
<div class="gx-app gx-view">
{_buttons(len(state["draws"]), state["draws"][0]["seed"])}
{controls}
{grid}
<noscript><p class="gx-noscript">The controls need JavaScript; the numbers above are the starting view.</p></noscript>
</div>
{_shell_bottom(spec, state)}
</main>
<script type="application/json" id="{STATE_ID}">{_script_json(state)}</script>
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
