"""The live lab's responsive layout: what goes where on a 360 px phone, a 1024x768 projector and a wide screen.

The first screen is a CSS grid of named areas (:func:`first_screen`): Play and Step, the other controls under
them, the grid with its controls, readouts and colour key beside both, and the formulas as a third column on a
wide screen (:data:`WIDE_PX`) or under the rest on a projector. On a phone (below :data:`NARROW_PX`) it is one
column: Play, then the grid with its controls, readouts and key, then the rest, with a smaller heading and a
tighter grid view (:data:`PHONE_CSS`), so Play, the main controls and readouts, the key and the top of the grid
are on a 390x844 phone's first screen. The plots below wrap two per row where they fit (:func:`plot_rows`).
Nothing is wider than the window, so the page never scrolls sideways (tested down to 360 px).

``?present=true`` (presentation mode, for a projector) scales the type up and leaves out the
formulas, the grid's secondary readouts and all plots but the K-cost table and the decay curve;
:data:`PRESENT_CSS` is its stylesheet (adopted by :class:`grpo_lab.access.PageAccess`), and the plots' own text,
which Bokeh draws on a canvas, is enlarged through the figures' properties (:func:`present_plots`).
"""

from __future__ import annotations

import panel as pn

__all__ = ["first_screen", "plot_rows", "GRID_SIZE", "NARROW_PX", "PHONE_CSS", "PRESENT_CSS",
           "PRESENT_PLOT_TEXT", "PRESENT_BUTTON_GROW", "present_buttons", "present_plots"]

NARROW_PX = 760  #: below this window width the first screen is one column, the grid first
#: the grid component's size on the full page: it takes what its box gives, from a phone's width to 560 px
GRID_SIZE = {"sizing_mode": "stretch_width", "min_width": 280, "max_width": 560}

WIDE_PX = 1100  #: from this window width the formulas sit beside the grid (a third column)

_FLEX_CSS = ":host { max-width: 100%; }"

#: the first screen as named areas (on the FlexBox's own box, ``#flexbox``): Play and Step above the other
#: controls, the grid beside them (spanning both), the formulas beside or under them; on a phone one column:
#: Play, the grid with its controls, readouts and key, then the rest
_FIRST_CSS = f"""
:host {{ max-width: 100%; }}
div[id^="flexbox"] {{ display: grid !important; align-items: start !important; column-gap: 0;
  grid-template-columns: minmax(260px, 400px) minmax(280px, 580px) minmax(0, 1fr); grid-template-rows: auto 1fr;
  grid-template-areas: "main grid side" "rest grid side"; }}
:host(.lab-no-side) div[id^="flexbox"] {{ grid-template-areas: "main grid ." "rest grid ."; }}
.lab-main-controls {{ grid-area: main; }} .lab-controls-col {{ grid-area: rest; }}
.lab-grid {{ grid-area: grid; }} .lab-side {{ grid-area: side; }}
.lab-main-controls, .lab-controls-col, .lab-side {{ min-width: 0 !important; }}
@media (max-width: {WIDE_PX - 1}px) {{
  div[id^="flexbox"], :host(.lab-no-side) div[id^="flexbox"] {{
    grid-template-columns: minmax(260px, 400px) minmax(280px, 1fr); grid-template-rows: auto 1fr auto;
    grid-template-areas: "main grid" "rest grid" "side side"; }}
}}
@media (max-width: {NARROW_PX}px) {{
  div[id^="flexbox"], :host(.lab-no-side) div[id^="flexbox"] {{ grid-template-columns: minmax(0, 1fr);
    grid-template-rows: none; grid-template-areas: "main" "grid" "rest" "side"; }}
}}
"""

#: a phone (one column): a smaller heading and a tighter grid view, so Play, the grid's controls, readouts and
#: key and the top of the grid share the first screen (adopted into every shadow root, like PRESENT_CSS)
PHONE_CSS = f"""
@media (max-width: {NARROW_PX}px) {{
  :host(.lab-header) h2 {{ font-size: 18px !important; margin: 2px 0 !important; }}
  :host(.lab-header) p {{ font-size: 13px !important; line-height: 1.35 !important; margin: 0 0 4px !important; }}
  .gx-view .gx-field {{ margin-bottom: .15em; }}
  .gx-view .gx-check {{ margin: 0 0 .25em; line-height: 1.3; }}
  .gx-view .gx-readouts {{ margin: .2em 0 .3em; }}
  .gx-view .grpo-readouts th, .gx-view .grpo-readouts td {{ padding: 1px 4px; line-height: 1.25; }}
  .gx-view .grpo-readouts .main td {{ font-size: 14px; }}
  .gx-view .grpo-readouts td:first-child {{ font-size: 13px; }}
  .gx-view .grpo-readouts td + td, .gx-view .grpo-readouts th + th {{ width: 1%; }}  /* numbers' columns: no wider than their text */
  .gx-view .grpo-readouts small {{ font-size: 11px; white-space: nowrap; }}
  .gx-view .grpo-legend {{ line-height: 1.35 !important; }}
}}
"""

#: presentation mode: larger type everywhere in the lab (Panel's widgets and the grid view read these)
PRESENT_CSS = """
.gx-view, .kcost p, .kcost-table, .bk-btn, .bk-slider-title, .side-controls, .sc-btn, .sc-hint { font-size: 18px !important; }
.grpo-legend, .grpo-legend span { font-size: 17px !important; }
.grpo-readouts table { font-size: 18px !important; }
.grpo-readouts .main td { font-size: 21px !important; }
"""


#: presentation mode: the plots' text (Bokeh's defaults: ticks 11px, axis labels 13px, titles 13px), sized so a
#: title and a vertical axis label still fit a plot of half a 1024 px projector; the figures grow by PRESENT_PLOT_GROW
PRESENT_PLOT_TEXT = {"tick": "16px", "axis": "16px", "title": "16px", "legend": "15px"}
PRESENT_PLOT_GROW = 1.35
#: presentation mode: the buttons' fixed widths grow with their labels (18 px against Bokeh's 13 px: without it
#: "New draw" and "Reset" overlapped)
PRESENT_BUTTON_GROW = 18 / 13


def _box(obj, basis: str, min_width: int, css: str, max_width: int | None = None, reuse: bool = False):
    """``obj`` in a flex item of the given basis and widths; ``reuse``: a Column or Row ``obj`` becomes the item
    itself (one Panel layout fewer to build and send per session)."""
    styles = {"flex": f"1 1 {basis}", "min-width": f"{min_width}px"}
    if max_width:
        styles["max-width"] = f"{max_width}px"
    if reuse and type(obj) in (pn.Column, pn.Row):
        obj.param.update(css_classes=[*obj.css_classes, css], styles={**obj.styles, **styles}, sizing_mode="stretch_width",
                         margin=(0, 8))
        return obj
    return pn.Column(obj, css_classes=[css], styles=styles, sizing_mode="stretch_width", margin=(0, 8))


def first_screen(main, controls, grid, side=None) -> pn.FlexBox:
    """``main`` (Play and Step: a row across the top), the other controls, the grid and ``side`` (the formulas;
    None in presentation mode). On a phone: ``main``, then the grid with its own controls, readouts and key,
    then the rest, so Play and the grid share the first screen."""
    grid.css_classes = list(dict.fromkeys([*grid.css_classes, "lab-grid"]))
    boxes = [_box(main, "auto", 0, "lab-main-controls", reuse=True), _box(controls, "auto", 0, "lab-controls-col", reuse=True), grid]
    if side is not None:
        boxes.append(_box(side, "auto", 0, "lab-side", reuse=True))
    return pn.FlexBox(*boxes, sizing_mode="stretch_width", stylesheets=[_FIRST_CSS],
                      css_classes=[] if side is not None else ["lab-no-side"])


def present_buttons(*buttons) -> None:
    """Presentation mode for Panel buttons of fixed width: each :data:`PRESENT_BUTTON_GROW` times wider."""
    for b in buttons:
        if b.width:
            b.width = round(b.width * PRESENT_BUTTON_GROW)


def present_plots(obj) -> None:
    """Presentation mode for the Bokeh figures in ``obj``: their tick labels, axis labels, titles and legends at
    :data:`PRESENT_PLOT_TEXT` (Bokeh draws them on a canvas, which the page's CSS does not reach), and each
    figure :data:`PRESENT_PLOT_GROW` times taller."""
    size = PRESENT_PLOT_TEXT
    for pane in obj.select(pn.pane.Bokeh):
        fig = pane.object
        for axis in getattr(fig, "axis", []):
            axis.major_label_text_font_size, axis.axis_label_text_font_size = size["tick"], size["axis"]
        if getattr(fig, "title", None) is not None:
            fig.title.text_font_size = size["title"]
        if getattr(fig, "height", None):
            fig.height = round(fig.height * PRESENT_PLOT_GROW)  # room for the larger axis labels
        for legend in getattr(fig, "legend", []):
            legend.label_text_font_size = size["legend"]


def plot_rows(*pairs, present: bool = False) -> list[pn.FlexBox]:
    """Each pair of panels side by side where they fit (420 px each at least), else one under the other;
    ``present``: with the figures' text enlarged (:func:`present_plots`)."""
    if present:
        for pair in pairs:
            for panel in pair:
                present_plots(panel)
    return [pn.FlexBox(*[_box(p, "420px", 280, "lab-plot", reuse=True) for p in pair], flex_wrap="wrap",
                       sizing_mode="stretch_width", stylesheets=[_FLEX_CSS]) for pair in pairs]
