"""The doctor report's in-plot legends (lab/doctor_report/svg.py): every name at 12 px or more, in ink of 4.5:1 or more
on the plot's white, each beside a swatch in its series' colour, and within the plot's width (a second row when the
first is full)."""

from __future__ import annotations

import re

from grpo_lab.doctor_report.svg import COLORS, svg
from grpo_lab.testing.page import contrast

WHITE = (255, 255, 255)


def rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def test_legends_are_12px_dark_ink_beside_their_colour_and_inside_the_plot():
    names = ["observed", "rolling", "trend fit", "projection", "back-test forecast", "all-fail fitted"]
    colours = ["#bbb", COLORS["obs"], COLORS["fit"], COLORS["proj"], COLORS["back"], COLORS["fail"]]
    series = [{"name": n, "x": [0, 1, 2], "y": [0.1, 0.5, 0.9], "color": c, **({"kind": "points"} if i == 0 else {})}
              for i, (n, c) in enumerate(zip(names, colours))]
    out = svg("A plot", series, (0, 2))
    width = float(re.search(r'<svg[^>]* width="(\d+)"', out).group(1))
    legends = re.findall(r'<text x="([\d.]+)" y="([\d.]+)" font-size="(\d+)" fill="(#[0-9a-f]+)">([^<]+)</text>', out)
    assert [t[4] for t in legends] == names  # every series named, in order
    for x, _y, size, fill, name in legends:
        assert int(size) >= 12 and contrast(rgb(fill), WHITE) >= 4.5, (name, size, fill)
        assert float(x) + 7 * len(name) <= width - 4, name  # inside the plot
    assert len({t[1] for t in legends}) == 2  # six names take two rows
    for colour in colours:  # each series' colour is drawn beside its name (a swatch), not as the text's colour
        assert re.search(rf'(stroke|fill)="{colour}"[^<>]*/><text', out), colour
