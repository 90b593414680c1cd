"""The live lab's two plots beside the grid, as markup: :func:`plots_html` (drawn by ``lab/static/live_plots.js``).

The decay curve (share of groups with a gradient against training progress t, over all prompts and over the
filter's band; lines expected, dots realised, a vertical line at the current t) and the P(useful) curve for the
current K over the histogram of current pass rates split by realised outcome. Both are SVG in the grid's own
component, so they repaint in the same event as the grid (``lab/static/live_grid.js``); their data comes from
the browser kernel (rho = 0) or from Python (rho > 0, ``LiveGrid.curves``). Each ``<svg>`` is ``role="img"`` with
an ``aria-label`` that Python writes from the core (:mod:`grpo_lab.views.plot_text`, ``LiveGrid.plot_text``).
Titles and keys are HTML above the plots, so they wrap instead of being cut and never cover the bars. Under the
P(useful) curve a reading (``gx-curve-read``, a slider for the keyboard: arrow keys, Page Up / Down, Home / End)
says the curve's value at the pass rate pointed at or chosen, from the curve drawn.

A blog's frame (the grid view's ``gx-embed`` container, 480 to 879 px wide: ``lab/static/gridview.css``) has no room
for the plots beside the grid: there a small switch (:data:`SHOW_SWITCH`, two radio buttons, hidden elsewhere) shows
the two plots in the grid's place, and the grid again, with no script.
"""

from __future__ import annotations

import html
import json

from grpo_lab.palette import ALL_FAIL_COLOR, ALL_PASS_COLOR, FILTERED_COLOR, FILTERED_LABEL, MIXED_COLOR

__all__ = ["plots_html", "PLOT_COLORS", "CURVE_HINT", "SHOW_SWITCH"]

#: the plots' colours: the lab's palette (the histogram's stacks, bottom to top, and the two decay lines)
PLOT_COLORS = {"mixed": MIXED_COLOR, "all_pass": ALL_PASS_COLOR, "all_fail": ALL_FAIL_COLOR, "filtered": FILTERED_COLOR}


#: the curve's reading before the first: how to get one (lab/static/live_plots.js then writes "At pass rate p = ...")
CURVE_HINT = "Point at the curve, or focus here and press the arrow keys, to read P(gradient) at a pass rate."

#: the switch between the grid and the plots in a blog's frame (CSS alone: lab/static/gridview.css)
SHOW_SWITCH = ('<fieldset class="gx-show"><legend>Show</legend>'
               '<label><input type="radio" name="gx-show" value="grid" checked> the grid</label>'
               '<label><input type="radio" name="gx-show" value="plots" class="gx-show-plots"> the plots</label>'
               '</fieldset>')


def _swatch(color: str, label: str, kind: str = "box", extra: str = "") -> str:
    mark = {"box": f'<i class="gx-sw" style="background:{color}"></i>',
            "line": f'<i class="gx-ln" style="border-top-color:{color}"></i>',
            "dash": f'<i class="gx-ln gx-dash" style="border-top-color:{color}"></i>'}[kind]
    return f'<span class="gx-k"{extra}>{mark}{html.escape(label)}</span>'


def _title(long: str, short: str) -> str:
    """A plot's title, with the short form presentation mode shows instead (lab.views.layout.PRESENT_CSS)."""
    return (f'<span class="gx-title-long">{html.escape(long)}</span>'
            f'<span class="gx-title-short" style="display:none">{html.escape(short)}</span>')


def plots_html(decay_label: str = "", outcome_label: str = "") -> str:
    """Both plots: a title, a key and an empty ``<svg>`` each (``aria-label``: the given text alternatives), after the
    frame's switch between them and the grid (:data:`SHOW_SWITCH`)."""
    colors = html.escape(json.dumps(PLOT_COLORS), quote=True)
    return f"""{SHOW_SWITCH}
<div class="gx-plots" data-colors="{colors}">
<figure class="gx-plot gx-plot-decay">
  <figcaption class="gx-plot-title">{_title("Groups with a gradient as training progresses", "Groups with a gradient over training")}</figcaption>
  <div class="gx-plot-key">{_swatch(MIXED_COLOR, "all prompts", "line")}{_swatch(ALL_PASS_COLOR, "with the filter's band", "dash")}<span class="gx-k gx-note">lines expected, dots realised; black line: t now</span></div>
  <svg id="gx-decay" class="gx-svg gx-svg-decay" role="img" aria-label="{html.escape(decay_label, quote=True)}"></svg>
</figure>
<figure class="gx-plot gx-plot-outcome">
  <figcaption class="gx-plot-title">{_title("P(group has a gradient) at this K, over the prompts by pass rate now", "P(gradient) and prompts by pass rate")}</figcaption>
  <div class="gx-plot-key">{_swatch(MIXED_COLOR, "mixed")}{_swatch(ALL_PASS_COLOR, "all pass")}{_swatch(ALL_FAIL_COLOR, "all fail")}{_swatch(FILTERED_COLOR, FILTERED_LABEL)}<span class="gx-k gx-note">dashed: mean pass rate</span>{_swatch("#767676", "pinned view", "dash", ' id="gx-pin-key" hidden')}</div>
  <svg id="gx-outcome" class="gx-svg gx-svg-outcome" role="img" aria-label="{html.escape(outcome_label, quote=True)}"></svg>
  <div class="gx-curve-read" style="font-size:13px;line-height:1.35;margin:2px 0;cursor:default" role="slider" tabindex="0" aria-label="Pass rate p at which to read the P(gradient) curve" aria-valuemin="0" aria-valuemax="1" aria-valuenow="0.5" aria-valuetext="{html.escape(CURVE_HINT, quote=True)}">{html.escape(CURVE_HINT)}</div>
</figure>
</div>"""
