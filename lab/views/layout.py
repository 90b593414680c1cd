"""The live lab's responsive layout: the story on one screen, on a 1440x900 laptop, a 1024x768 projector and a phone.

The first screen is a CSS grid of named areas (:func:`first_screen`): Play and Step across the top, then the grid
component at the page's width, which lays out its own three columns (``lab/static/live_layout.css``): the
controls and readouts, the colour key over the whole grid (as large as the window's height allows), and the decay
curve and the P(useful) histogram by outcome. The other controls (rho, the population) and the caption, and the
formulas, come under it (side by side from :data:`WIDE_PX`); the secondary plots (K-cost table, Jensen gap)
below those, in rows of two where they fit (:func:`plot_rows`). On a phone (below :data:`NARROW_PX`) all is one
column: Play, the grid's controls, readouts, key and grid, its plots, then the rest, with a smaller heading and a
tighter grid view (:data:`PHONE_CSS`). Nothing is wider than the window, so the page never scrolls sideways
(tested down to 360 px). The page carries ``<meta name="viewport">`` (:data:`VIEWPORT_TEMPLATE`), so a phone
lays it out at its own width.

``?present=true`` (presentation mode, for a projector's back row at 1920x1080 down to 1024x768) puts the grid on
the left, as tall as the window allows, and beside it the controls a lecturer touches, the three main readouts in
large type and the two plots; the heading and the tour's link go on Play's row (:func:`present_heading`), and rho,
the population, Pin, the formulas and the secondary plots are left out; :data:`PRESENT_CSS` is its stylesheet
(adopted by :class:`grpo_lab.access.PageAccess`). Its guided tour's box docks beside the lab (a column at the right of
a wide window) or above it (a band), as ``lab/static/tour.js`` measures, and :data:`PRESENT_CSS` leaves it that room
(``--present-tour-w``, ``--present-tour-h``), so it covers nothing; the caption and the P(gradient) curve's reading
are read out, not drawn (the plot shows the value read beside its dot). On a phone the grid's controls, readouts and key are compact
(:data:`PHONE_CSS`), so the slider and most of the grid share the first screen.
"""

from __future__ import annotations

import html

import panel as pn

__all__ = ["SR_ONLY_CSS", "first_screen", "plot_rows", "GRID_SIZE", "NARROW_PX", "PHONE_CSS", "PRESENT_CSS",
           "PRESENT_PLOT_TEXT", "PRESENT_BUTTON_GROW", "present_buttons", "present_heading", "present_plots", "VIEWPORT_TEMPLATE",
           "page_template"]

#: the page's template (Panel's, extended): a ``<meta name="viewport">``, so a phone lays the page out at its
#: own width instead of 980 px scaled down
VIEWPORT_TEMPLATE = ("{% block preamble %}{{ super() }}"
                     '<meta name="viewport" content="width=device-width, initial-scale=1">{% endblock %}')


def page_template(doc) -> None:
    """Give a server session's document :data:`VIEWPORT_TEMPLATE` (Panel extends its base page with it)."""
    doc.template = VIEWPORT_TEMPLATE

#: CSS declarations that take an element off the screen yet leave it to screen readers (a live region keeps speaking)
SR_ONLY_CSS = ("position: absolute !important; width: 1px !important; height: 1px !important; overflow: hidden !important; "
               "clip-path: inset(50%) !important; margin: 0 !important;")

NARROW_PX = 760  #: below this window width the first screen is one column, the grid first
#: the grid component (its controls, readouts, key, grid and two plots) takes the page's width
GRID_SIZE = {"sizing_mode": "stretch_width", "min_width": 280}

WIDE_PX = 1100  #: from this window width the side controls and the formulas sit side by side under the grid

_FLEX_CSS = ":host { max-width: 100%; }"

#: the first screen as named areas (on the FlexBox's own box, ``#flexbox``): Play and Step across the top, the
#: grid component (controls, readouts, key, grid and the two plots: lab/static/live_layout.css) under them at
#: the page's width, then the other controls and the formulas (side by side on a wide screen)
_FIRST_CSS = f"""
:host {{ max-width: 100%; }}
div[id^="flexbox"] {{ display: grid !important; align-items: start !important; column-gap: 0;
  grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); grid-template-rows: auto auto auto;
  grid-template-areas: "main main" "grid grid" "rest side"; }}
:host(.lab-no-side) div[id^="flexbox"] {{ grid-template-areas: "main main" "grid grid" "rest rest"; }}
.lab-main-controls {{ grid-area: main; }} .lab-controls-col {{ grid-area: rest; }}
.lab-grid {{ grid-area: grid; }} .lab-side {{ grid-area: side; }}
.lab-main-controls, .lab-controls-col, .lab-side, .lab-grid {{ min-width: 0 !important; }}
@media (max-width: {WIDE_PX - 1}px) {{
  div[id^="flexbox"], :host(.lab-no-side) div[id^="flexbox"] {{ grid-template-columns: minmax(0, 1fr);
    grid-template-areas: "main" "grid" "rest" "side"; }}
}}
"""

#: a phone (one column): a smaller heading and a tighter grid view, so Play, the grid's controls, readouts and
#: key and the top of the grid share the first screen (adopted into every shadow root, like PRESENT_CSS)
PHONE_CSS = f"""
@media (max-width: {NARROW_PX}px) {{
  :host(.lab-header) h1 {{ font-size: 18px !important; margin: 2px 0 !important; }}
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
  /* compact, so the slider and most of the grid share the first screen (390x844: 88% of the grid): progress and K
     side by side, then the filter and its band; the three main readouts (the others are folded away on a phone:
     rollouts per useful group is in the K-cost table below, the all-pass and all-fail shares in the caption); the
     key in two columns */
  .gx-view > .gx-controls[data-spec] {{ display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); column-gap: 14px;
    margin-bottom: .2em; }}
  .gx-view .gx-check {{ font-size: 13px; }}
  #gx-readouts .grpo-readouts tr:not(.main):not(:first-child) {{ display: none; }}
  .gx-view > .grpo-legend {{ display: grid; grid-template-columns: auto auto; column-gap: 8px;
    font-size: 12px !important; }}
  .gx-view > .grpo-legend > span {{ margin-right: 0 !important; white-space: normal !important; }}
  /* the Advantages tab's table of numbers: its cells wrap and shrink instead of widening the page */
  table.adv-numbers {{ width: 100% !important; table-layout: fixed; font-size: 12px !important; }}
  table.adv-numbers th, table.adv-numbers td {{ white-space: normal !important; overflow-wrap: anywhere;
    padding: 2px 3px !important; min-width: 0 !important; }}
  /* the Replay tab's columns and texts of fixed width (560-600 px): no wider than the phone, rows wrap */
  .bk-panel-models-layout-Column, .bk-panel-models-markup-HTML, .bk-panel-models-markup-HTML > div {{
    min-width: 0 !important; max-width: 100% !important; }}
  .bk-panel-models-markup-HTML.markdown {{ width: auto !important; }}
  :host(.markdown) div {{ min-width: 0 !important; width: auto !important; max-width: 100% !important; }}
  :host(.bk-Row) {{ flex-wrap: wrap !important; max-width: 100% !important; }}
  .bk-btn-group .bk-btn {{ white-space: normal !important; }}
}}
"""

#: presentation mode (a projector's back row, 1920x1080 down to 1024x768): the grid on the left, as tall as the window
#: allows (at most the component's width less PRESENT_SIDE_PX); beside it the controls a lecturer touches (two
#: columns), the three main readouts in large type, the key, then the two plots, which fill the rest of the window's
#: height (stacked on a tall window, side by side on a short one). Every text is larger; rho, the population, Pin
#: and the secondary material are not built (lab.views.live)
PRESENT_ABOVE_PX = 175  #: the tabs and Play / Step above the grid, the key under it (two lines), and a margin
PRESENT_ABOVE_SHORT_PX = 172  #: the same on a short window (up to 900 px), where the key takes three lines
PRESENT_SIDE_PX = 600  #: the least width the column beside the grid keeps (beside the tour's box too: lab/static/tour.js)
PRESENT_TOUR_BUTTON_PX = 104  #: the tour's Back / Next / End tour buttons in presentation mode (three fit its 380 px column)
PRESENT_TOP_PX = 100  #: the tabs and Play / Step's row above the grid component: it reaches down to the window's foot
PRESENT_SIDE_NARROW_PX = 480  #: the same in a container of 880 to 1100 px (a 1024 px projector, or 1280 px beside the tour)
PRESENT_CSS = f"""
/* the guided tour's box (lab/static/tour.js docks it): the page leaves it a column at the right (--present-tour-w) or
   a band at the top (--present-tour-h, taken from the grid's height); its text for the back row (22 px at 1080 px) */
.grpo-lab {{ box-sizing: border-box; padding-right: var(--present-tour-w, 0px) !important; }}
.tour-step {{ font-size: max(16px, 2.05vh) !important; line-height: 1.4 !important; }}
:host(.tour-buttons) {{ flex-wrap: wrap !important; }}
/* a step's figure (the K-cost table: the page has none) in the box: its headline and table; in a band at the top, the
   table alone, beside the step's text */
:host(.kcost) p, :host(.kcost) .kcost-table {{ font-size: max(14px, 1.6vh) !important; }}
:host(.kcost) p:not(.kcost-headline) {{ display: none !important; }}
:host(.kcost) .kcost-headline {{ display: var(--tour-figure-lead, block) !important; }}  /* in a band: the table alone */
/* the headline's sentence tying useful rollouts to useful groups: the step's own text says it, with the table's figures */
:host(.kcost) .kcost-tie {{ display: none !important; }}
:host(.kcost) .kcost-table th, :host(.kcost) .kcost-table td {{ padding: 1px 4px !important; line-height: 1.25; }}
:host(.kcost) .kcost-table td:first-child {{ white-space: nowrap; }}
:host(.tour-with-figure[data-dock=top]) {{ display: grid !important; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr);
  grid-template-rows: auto 1fr; column-gap: 12px; }}
/* the text beside the table and the buttons under the table, so the band is no taller than the longer of the two; and
   the table without its last column (the cost against K = 4: the rollouts per useful group say it), so the band leaves
   a 4:3 projector's lab its rows (step 7's text, 7 lines, and the table, with the buttons, about 210 px at 1024x768) */
:host(.tour-with-figure[data-dock=top]) > .tour-text {{ grid-column: 1; grid-row: 1 / 3; }}
:host(.tour-with-figure[data-dock=top]) > .tour-buttons {{ grid-column: 2; grid-row: 2; align-self: start; }}
:host(.tour-with-figure[data-dock=top]) > .tour-figure {{ grid-column: 2; grid-row: 1; }}
:host(.kcost) .kcost-table th:last-child, :host(.kcost) .kcost-table td:last-child {{
  display: var(--tour-figure-cell, table-cell) !important; }}
/* the caption (the view in words) is read out, not drawn: the readouts show its numbers, and the first screen keeps
   its rows for the grid */
.lab-caption {{ {SR_ONLY_CSS} }}
/* the P(gradient) curve's reading too (its 13 px line under the plot would take the plots' last rows): the plot marks
   the point read and writes its value beside it (lab/static/live_plots.js), larger; the keyboard's focus on the
   reading outlines the plot */
.gx-curve-read {{ {SR_ONLY_CSS} }}
.gx-plot-outcome:has(.gx-curve-read:focus-visible) .gx-svg {{ outline: 3px solid #0b57d0; outline-offset: 2px; }}
:host(.lab-header) h1 {{ font-size: 26px !important; margin: 2px 0 !important; }}
.bk-tab {{ font-size: 17px !important; }}
.bk-btn {{ font-size: 20px !important; }}
.state-caption {{ font-size: 20px !important; line-height: 1.35 !important; }}
.gx-view {{ font-size: 18px !important; }}
.grpo-legend, .grpo-legend span {{ font-size: 18px !important; }}
.grpo-readouts table {{ font-size: 19px !important; }}
.grpo-readouts .main td {{ font-size: clamp(19px, 1.5cqw, 28px) !important; }}
.grpo-readouts .main td + td {{ font-size: clamp(22px, 2cqw, 38px) !important; }}
.gx-view .grpo-readouts td + td, .gx-view .grpo-readouts th + th {{ width: 1%; white-space: nowrap; }}
.gx-view .grpo-readouts th, .gx-view .grpo-readouts td {{ padding: 2px 6px !important; line-height: 1.2 !important; }}
.gx-view .grpo-readouts small {{ font-size: 16px; }}
.gx-view .gx-field {{ margin-bottom: .2em; }}
.gx-plot-title {{ font-size: 18px !important; }}
.gx-plot-key {{ font-size: 16px !important; }}
.gx-title-long {{ display: none; }}
.gx-title-short {{ display: inline !important; }}
.gx-svg {{ font-size: 18px !important; }}
@container (min-width: 880px) {{
  .gx-view {{ column-gap: 20px !important; min-height: calc(100vh - {PRESENT_TOP_PX}px - var(--present-tour-h, 0px));
    grid-template-columns: minmax(300px, min(calc(100vh - {PRESENT_ABOVE_PX}px - var(--present-tour-h, 0px)), calc(100cqw - {PRESENT_SIDE_PX}px)))
                           minmax(0, 1fr) !important;
    grid-template-rows: auto auto auto 1fr !important;  /* the plots span a flexible row: the key follows the grid */
    grid-template-areas: "grid controls" "grid readouts" "grid plots" "legend plots" !important; }}
  .gx-view > .gx-grid {{ align-self: start; }}
  .gx-view > .gx-controls {{ display: grid; grid-template-columns: 1fr 1fr; column-gap: 20px; margin: 0; }}
  .gx-view > .gx-readouts {{ margin: .2em 0 .4em; }}
  .gx-view > .grpo-legend {{ margin-top: .2em; align-self: start; }}
  /* the plots fill the rest of the grid's height: stacked, or side by side on a short window */
  .gx-view > .gx-plots {{ align-self: stretch; display: flex; flex-direction: column; gap: 6px 16px; }}
  .gx-plot {{ flex: 1 1 0; min-height: 0; min-width: 0; display: flex; flex-direction: column; margin: 0; }}
  .gx-svg {{ flex: 1 1 0; height: auto !important; min-height: 100px; }}
}}
@media (max-height: 900px) {{
  @container (min-width: 880px) {{
    .gx-view > .gx-plots {{ flex-direction: row; }}
    .grpo-legend, .grpo-legend span {{ font-size: 16px !important; }}
    .gx-view {{ grid-template-columns: minmax(300px, min(calc(100vh - {PRESENT_ABOVE_SHORT_PX}px - var(--present-tour-h, 0px)),
      calc(100cqw - {PRESENT_SIDE_PX}px))) minmax(0, 1fr) !important; }}
  }}
}}
/* a 1024 px projector: the same, with a little less type beside a grid that keeps 30% of the screen */
@container (min-width: 880px) and (max-width: 1100px) {{
  .gx-view {{ font-size: 16px !important; grid-template-columns: minmax(300px, min(calc(100vh - {PRESENT_ABOVE_SHORT_PX}px - var(--present-tour-h, 0px)),
    calc(100cqw - {PRESENT_SIDE_NARROW_PX}px))) minmax(0, 1fr) !important; }}
  .grpo-legend, .grpo-legend span {{ font-size: 16px !important; }}
  .grpo-readouts .main td {{ font-size: 17px !important; }}
  .grpo-readouts .main td + td {{ font-size: 22px !important; }}
  .gx-view .grpo-readouts small {{ font-size: 14px; }}
  .gx-plot-title {{ font-size: 18px !important; }}
  .gx-plot-key {{ font-size: 14px !important; }}
  .gx-svg {{ font-size: 15px !important; min-height: 90px; }}
  .gx-view > .gx-plots {{ min-height: calc(100vh - 450px - var(--present-tour-h, 0px)); }}  /* down to the window's foot, past the key */
}}
"""


#: presentation mode: the plots' text (Bokeh's defaults: ticks 11px, axis labels 13px, titles 13px), sized so a
#: title and a vertical axis label still fit a plot of half a 1024 px projector; the figures grow by PRESENT_PLOT_GROW
PRESENT_PLOT_TEXT = {"tick": "16px", "axis": "16px", "title": "16px", "legend": "15px"}
PRESENT_PLOT_GROW = 1.35
#: presentation mode: the buttons' fixed widths grow with their labels (18 px against Bokeh's 13 px: without it
#: "New draw" and "Reset" overlapped)
PRESENT_BUTTON_GROW = 18 / 13


def _box(obj, basis: str, min_width: int, css: str, max_width: int | None = None, reuse: bool = False):
    """``obj`` in a flex item of the given basis and widths; ``reuse``: a Column, Row or pane ``obj`` becomes the
    item itself (one Panel layout fewer to build and send per session)."""
    styles = {"flex": f"1 1 {basis}", "min-width": f"{min_width}px"}
    if max_width:
        styles["max-width"] = f"{max_width}px"
    if reuse and (type(obj) in (pn.Column, pn.Row) or isinstance(obj, pn.pane.HTML)):
        obj.param.update(css_classes=[*obj.css_classes, css], styles={**obj.styles, **styles}, sizing_mode="stretch_width",
                         margin=(0, 8))
        return obj
    return pn.Column(obj, css_classes=[css], styles=styles, sizing_mode="stretch_width", margin=(0, 8))


def first_screen(main, controls, grid, side=None) -> pn.FlexBox:
    """``main`` (Play and Step: a row across the top), the other controls, the grid and ``side`` (the formulas;
    None in presentation mode). On a phone: ``main``, then the grid with its own controls, readouts and key,
    then the rest, so Play and the grid share the first screen."""
    grid.css_classes = list(dict.fromkeys([*grid.css_classes, "lab-grid"]))
    grid.margin = (0, 10)
    # the document's order is the screen's (and the keyboard's): Play and Step, the grid's own controls, then the rest
    boxes = [_box(main, "auto", 0, "lab-main-controls", reuse=True), grid, _box(controls, "auto", 0, "lab-controls-col", reuse=True)]
    if side is not None:
        boxes.append(_box(side, "auto", 0, "lab-side", reuse=True))
    return pn.FlexBox(*boxes, sizing_mode="stretch_width", stylesheets=[_FIRST_CSS],
                      css_classes=[] if side is not None else ["lab-no-side"])


def present_heading(title: str) -> pn.pane.HTML:
    """Presentation mode: the page's heading (its ``h1``) and the guided tour's link, on Play and Step's row."""
    return pn.pane.HTML(f"<div class='present-heading'><a href='?present=true&amp;tour=1'>Guided tour</a>"
                        f"<h1>{html.escape(title)}</h1></div>", css_classes=["present-heading"], margin=(0, 10),
                        stylesheets=[_HEADING_CSS])


_HEADING_CSS = """
.present-heading { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 28px; }
.present-heading a { font-size: 20px; display: var(--present-tour-link, inline); }  /* hidden while a tour runs */
.present-heading h1 { font-size: 22px; margin: 0; color: #333; }
"""


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
