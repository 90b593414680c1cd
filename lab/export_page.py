"""The HTML of an exported page: the lab's grid (:class:`lab.grid.Grid`) and controls in a small shell.

The Bokeh part is the lab's own grid, legend and main readouts (with the stable
hooks ``readout-useful``, ``readout-mean-pass``, ``readout-kept``) driven by the
grid's browser callback, plus Bokeh controls: progress (slider with play/pause),
K, the filter and its band, and "new draw". ``lab/static/export_page.js`` adds
what a server would otherwise do: the play loop, swapping in an embedded
population, and the provenance line that names the view shown. It does no
arithmetic; the grid callback runs ``grpoKernel.evaluate``.

The page is written with ``bokeh.embed.file_html`` and INLINE resources into a
template extending Bokeh's own, so it needs no network.
"""

from __future__ import annotations

import html

from jinja2 import Template

STATE_ID = "grpo-export-state"
ROOT_NAME = "grpo_export"

_TEMPLATE = Template("""{% extends base %}
{% from macros import embed %}
{% block title %}{{ page_title }}{% endblock %}
{% block preamble %}<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="grpo-lab {{ version }}">
<style>{{ css }}</style>
<script type="application/json" id="{{ state_id }}">{{ state_json }}</script>
<script>{{ page_js }}</script>{% endblock %}
{% block contents %}<main class="gx" id="grpo-export">
{{ shell_top }}
<div class="gx-app">{% for doc in docs %}{% for root in doc.roots %}{{ embed(root) }}{% endfor %}{% endfor %}</div>
{{ shell_bottom }}
</main>{% endblock %}
""")


def _shell_top(spec) -> str:
    return f"""<header class="gx-head">
  <h1 class="gx-title">{html.escape(spec.title)}</h1>
  <p class="gx-lede">Each cell is one prompt and its group of K rollouts. When all K agree (all pass or all
  fail) the group's advantage is zero and it teaches nothing. Push training progress and watch the groups
  that still carry a gradient drain away.</p>
</header>"""


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


def _extra_draws(spec, grid, draws: list[dict]) -> list[dict]:
    """Layout (cell x, y) of every embedded draw, computed by the grid itself; draw 0 is already in the grid."""
    from sims.population import draw_population

    scenario = spec.scenario
    out = []
    for d in draws[1:]:
        grid.set_population(draw_population(spec.n_prompts, spec.a, spec.b, d["seed"]), scenario)
        out.append({**d, "x": [int(v) for v in grid.source.data["x"]], "y": [int(v) for v in grid.source.data["y"]]})
    grid.set_population(draw_population(spec.n_prompts, spec.a, spec.b, spec.seed), scenario)
    return out


def build_document(spec, state: dict):
    """The Bokeh document: controls, grid, legend and main readouts, wired for the browser."""
    from bokeh.document import Document
    from bokeh.layouts import column, row
    from bokeh.models import Button, Checkbox, CustomJS, Div, RangeSlider, Slider, Toggle

    from lab.grid import Grid
    from sims.population import draw_population

    scenario = spec.scenario
    grid = Grid(draw_population(spec.n_prompts, spec.a, spec.b, spec.seed), scenario, readouts="main",
                width=560, sizing_mode="scale_width")
    state["draws"] = [state["draws"][0]] + _extra_draws(spec, grid, state["draws"])
    grid.figure.name = "grpo_grid_figure"
    stretch = "stretch_width"
    progress = Slider(start=0, end=1, step=0.001, value=spec.progress, title="Training progress t",
                      format="0.000", sizing_mode=stretch, name="progress")
    play = Toggle(label="\u25b6 Play / pause", active=False, width=130, name="play", button_type="success")
    K = Slider(start=1, end=64, step=1, value=spec.K, title="Group size K", sizing_mode=stretch, name="K")
    filt = Checkbox(label="Difficulty filter: keep prompts whose pass rate lies in the band", active=spec.filter_on,
                    name="filter")
    band = RangeSlider(start=0, end=1, step=0.01, value=spec.band, title="Filter band", format="0.00",
                       sizing_mode=stretch, name="band")
    new_draw = Button(label="New draw", width=110, name="new_draw")
    draw_label = Div(text="", name="draw_label", css_classes=["gx-draw-label"])
    repaint = grid.attach(progress=progress, K=K, filter=filt, band=band)
    hooks = dict(progress=progress, K=K, filter=filt, band=band, play=play, source=grid.source,
                 uniforms=grid.uniforms, repaint=repaint, draw_label=draw_label)
    describe = CustomJS(args=hooks, code="window.grpoExport.describe({progress, K, filter, band, draw_label});")
    for model, prop in ((progress, "value"), (K, "value"), (filt, "active"), (band, "value")):
        model.js_on_change(prop, describe)
    play.js_on_change("active", CustomJS(args=hooks, code="window.grpoExport.play({progress, play});"))
    new_draw.js_on_event("button_click", CustomJS(
        args=hooks, code="window.grpoExport.nextDraw({source, uniforms, repaint, progress, K, filter, band, draw_label});"))
    controls = column(row(play, progress, sizing_mode=stretch), K, filt, band,
                      row(new_draw, draw_label, sizing_mode=stretch), sizing_mode=stretch)
    layout = column(controls, grid.readouts, grid.figure, grid.legend, sizing_mode=stretch, name=ROOT_NAME)
    doc = Document()
    doc.add_root(layout)
    doc.js_on_event("document_ready", CustomJS(args=hooks, code="window.grpoExport.ready({progress, K, filter, band, draw_label});"))
    return doc


def page_html(spec, state: dict) -> str:
    """The whole page: Bokeh's standalone file template with the shell, state and glue inlined."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    from lab.export import STATIC, _script_json

    doc = build_document(spec, state)
    variables = {
        "page_title": spec.title,
        "version": state["version"],
        "css": (STATIC / "export.css").read_text(encoding="utf-8"),
        "shell_top": _shell_top(spec),
        "shell_bottom": _shell_bottom(spec, state),
        "state_id": STATE_ID,
        "state_json": _script_json({**state, "draws": [{k: v for k, v in d.items() if k not in ("p0", "u")}
                                                       if i == 0 else d for i, d in enumerate(state["draws"])]}),
        "page_js": (STATIC / "export_page.js").read_text(encoding="utf-8"),
    }
    return file_html(doc, INLINE, spec.title, template=_TEMPLATE, template_variables=variables)


#: JavaScript (for tests, the benchmark and people scripting the page): the text of every element with
#: one of the given CSS classes, looking inside Bokeh's shadow roots. Call with an array of class names.
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

#: JavaScript: set Bokeh controls of the exported page by name, e.g. {progress: 1, K: 16, filter: true,
#: band: [0.2, 0.8]}, in that order, as a reader's input would (each change runs the grid's callback).
SET_CONTROLS_JS = """(values) => {
  const doc = Bokeh.documents[0];
  for (const [name, v] of Object.entries(values)) {
    const m = doc.get_model_by_name(name);
    if (name === "filter") m.active = v; else m.value = v;
  }
}"""
