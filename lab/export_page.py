"""The HTML of an exported page: the lab's grid view (controls, readouts, canvas) in a small shell.

No BokehJS: a Bokeh page spends most of a second starting BokehJS before it shows anything,
and an exported page needs none of Bokeh's machinery. It is the served lab's own grid view,
each part defined once and shared:

* the controls from the grid's spec (:mod:`grpo_lab.grid.spec`, with the page's finer progress step),
  the markup and data, :mod:`grpo_lab.grid.markup` (the lab's LiveGrid component uses the same);
* the view, ``lab/static/gridview.js``, over the arithmetic of ``lab/static/kernel.js``
  (``grpoKernel.evaluate``, the twin of :func:`sims.scenario.evaluate`; ``grpoKernel.fill``, the twin
  of :func:`grpo_lab.grid.readouts.readout_html`) and the painter ``lab/static/cells.js``;
* the readouts, filled here by Python for the starting view (from the summary the export already
  computed) so the numbers show before any script runs.

``lab/static/export_page.js`` is the page's glue: play, new draw (populations embedded in the
page state), and the provenance line naming the view shown.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json

from .embed import caption_html
from .grid.markup import STATIC, STYLE_PATH, controls_html, grid_html
from .grid.plots import plots_html
from .grid.readouts import TEMPLATES, readout_html
from .grid.spec import EXPORT_PROGRESS_STEP, control_spec

STATE_ID = "grpo-export-state"
CAPTION_ID = "gx-embed-caption"
POLICY_META = "grpo-lab:content-security-policy"  #: the meta naming the page's strictest policy
SCRIPTS = ("kernel.js", "cells.js", "gridview.js", "live_plots.js", "export_page.js")  #: in lab/static, in this order
#: the plots' text alternatives: the page has no Python to rewrite them as the controls move, so they say what the
#: plots show in words (the numbers are the readouts')
PLOT_LABELS = {"decay": "Chart: the share of groups with a gradient as training progress t goes from 0 to 1, expected "
                        "(lines) and realised (dots), over all prompts and over the filter's band; a vertical line "
                        "marks the current t.",
               "outcome": "Chart: the chance that a group of K has a gradient, against the pass rate p, over a "
                          "histogram of the prompts' current pass rates split by their group's outcome."}

TIPS = {
    "play": "Animate training progress from here up to 1 (press again to pause)",
    "new_draw": "Show the next population embedded in this file (another seed)",
}


def _shell_top(spec) -> str:
    """The heading and its introduction (none with ``--no-title``), then the caption (hidden while empty;
    the page's URL may set it)."""
    caption = caption_html(spec.caption, CAPTION_ID)
    if not spec.show_title:
        return caption
    return f"""<header class="gx-head">
  <h1 class="gx-title">{html.escape(spec.title)}</h1>
  <p class="gx-lede">Each cell is one prompt and its group of K rollouts. When all K agree (all pass or all
  fail) the group's advantage is zero and it teaches nothing. Push training progress and watch the groups
  that still carry a gradient drain away.</p>
</header>
{caption}"""


def _buttons(n_draws: int, seed: int) -> str:
    tip = {k: html.escape(v, quote=True) for k, v in TIPS.items()}
    return f"""<div class="gx-row">
  <button type="button" class="gx-button gx-play" id="gx-play" aria-pressed="false" title="{tip['play']}">\u25b6
    Play / pause</button>
  <button type="button" class="gx-button" id="gx-new-draw" title="{tip['new_draw']}">New draw</button>
  <span class="gx-draw-label" id="gx-draw-label">seed {seed} (draw 1 of {n_draws})</span>
</div>"""


def script_json(obj) -> str:
    """JSON safe to place inside a <script> element: ``<``, ``>`` and ``&`` written as JSON escapes (``\\u003c``
    ...), so no text in it (a title, a command line) can close the element or open a comment or a tag."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def footer_text(spec) -> str:
    """The static part of the provenance footer (the page fills in the seed on show)."""
    filt = f"filter {'on' if spec.filter_on else 'off'}, band [{spec.band[0]:g}, {spec.band[1]:g}]"
    return html.escape(f"{spec.n_prompts} prompts from Beta({spec.a:g}, {spec.b:g}), decay gain {spec.gain:g}; "
                       f"starting view t = {spec.progress:g}, K = {spec.K}, {filt}")


def _shell_bottom(spec, state) -> str:
    """The provenance footer (none with ``--no-footer``)."""
    if not spec.show_footer:
        return ""
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


def content_policy(scripts) -> str:
    """The strictest Content Security Policy the page works under: its own inline scripts (by their SHA-256)
    and nothing else; no eval, no request to any host, no plugin, no form, no <base>. Inline styles are
    allowed (the grid's legend and readouts carry style attributes).

    The page names it in ``<meta name="grpo-lab:content-security-policy">`` (inert) for a host to send as
    its ``Content-Security-Policy`` header; it is not enforced by a ``http-equiv`` meta, which would also
    stop tools that evaluate script in the page (Playwright's ``wait_for_function``)."""
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(t.encode()).digest()).decode()}'" for t in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def page_html(spec, state: dict, summary: dict) -> str:
    """The whole page: shell, buttons, controls, readouts (filled from ``summary``, the starting view's),
    canvas, scripts. ``spec`` is a validated :class:`grpo_lab.export.ExportSpec`, ``state`` its page state."""
    sources = [f"\n{(STATIC / name).read_text(encoding='utf-8')}\n" for name in SCRIPTS]
    scripts = "\n".join(f"<script>{text}</script>" for text in sources)
    css = "".join((STATIC / name).read_text(encoding="utf-8") for name in (STYLE_PATH.name, "live_layout.css", "export.css"))
    values = {"progress": spec.progress, "K": spec.K, "filter": spec.filter_on, "band_lo": spec.band[0],
              "band_hi": spec.band[1]}
    controls = controls_html(values, control_spec(EXPORT_PROGRESS_STEP))
    grid = grid_html(spec.n_prompts, state["draws"][0]["geometry"], readout_html(summary, TEMPLATES["main"]))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="{POLICY_META}" content="{content_policy(sources)}">
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
{plots_html(PLOT_LABELS["decay"], PLOT_LABELS["outcome"])}
<noscript><p class="gx-noscript">The controls need JavaScript; the numbers above are the starting view.</p></noscript>
</div>
{_shell_bottom(spec, state)}
</main>
<script type="application/json" id="{STATE_ID}">{script_json(state)}</script>
{scripts}
</body>
</html>
"""
