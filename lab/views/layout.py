"""The live lab's responsive layout: what goes where on a 360 px phone, a 1024x768 projector and a wide screen.

The first screen holds the grid with its controls, readouts and legend (the grid component), the
other controls and the formulas, as boxes that wrap: side by side on a wide screen, the formulas
under the rest on a projector, and one column on a phone with the grid first. The plots below wrap
the same way (two per row where they fit). Nothing is wider than the window, so the page never
scrolls sideways.

``?present=true`` (presentation mode, for a projector) scales the type up and leaves out the
formulas, the grid's secondary readouts and all plots but the K-cost table and the decay curve;
:data:`PRESENT_CSS` is its stylesheet (adopted by :class:`grpo_lab.access.PageAccess`).
"""

from __future__ import annotations

import panel as pn

__all__ = ["first_screen", "plot_rows", "GRID_SIZE", "NARROW_PX", "PRESENT_CSS"]

NARROW_PX = 760  #: below this window width the first screen is one column, the grid first
#: the grid component's size on the full page: it takes what its box gives, from a phone's width to 560 px
GRID_SIZE = {"sizing_mode": "stretch_width", "min_width": 280, "max_width": 560}

_FLEX_CSS = f"""
:host {{ max-width: 100%; }}
@media (max-width: {NARROW_PX}px) {{ .lab-grid {{ order: -1; }} }}
"""

#: presentation mode: larger type everywhere in the lab (Panel's widgets and the grid view read these)
PRESENT_CSS = """
.gx-view, .kcost p, .kcost-table, .bk-btn, .bk-slider-title { font-size: 18px !important; }
.grpo-legend, .grpo-legend span { font-size: 17px !important; }
.grpo-readouts table { font-size: 18px !important; }
.grpo-readouts .main td { font-size: 21px !important; }
"""


def _box(obj, basis: str, min_width: int, css: str, max_width: int | None = None):
    styles = {"flex": f"1 1 {basis}", "min-width": f"{min_width}px"}
    if max_width:
        styles["max-width"] = f"{max_width}px"
    return pn.Column(obj, css_classes=[css], styles=styles, sizing_mode="stretch_width", margin=(0, 8))


def first_screen(controls, grid, side=None) -> pn.FlexBox:
    """Controls, the grid (first on a phone) and ``side`` (the formulas; None in presentation mode)."""
    grid.css_classes = list(dict.fromkeys([*grid.css_classes, "lab-grid"]))
    grid.styles = {**grid.styles, "flex": "2 1 420px", "min-width": "280px", "max-width": "580px"}
    boxes = [_box(controls, "300px", 260, "lab-controls-col", max_width=400), grid]
    if side is not None:
        boxes.append(_box(side, "320px", 280, "lab-side"))
    return pn.FlexBox(*boxes, flex_wrap="wrap", align_items="flex-start", sizing_mode="stretch_width",
                      stylesheets=[_FLEX_CSS])


def plot_rows(*pairs) -> list[pn.FlexBox]:
    """Each pair of panels side by side where they fit (420 px each at least), else one under the other."""
    return [pn.FlexBox(*[_box(p, "420px", 280, "lab-plot") for p in pair], flex_wrap="wrap",
                       sizing_mode="stretch_width", stylesheets=[_FLEX_CSS]) for pair in pairs]
