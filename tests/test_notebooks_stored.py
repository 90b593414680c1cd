"""The notebooks as stored (not executed here: tests/test_notebooks.py runs them): each carries its pictures, and
draws the group outcomes in the lab's key (grpo_lab.palette: green mixed / has a gradient, orange all pass,
vermillion all fail), never one outcome in another's colour."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from grpo_lab.palette import ALL_FAIL_COLOR, ALL_PASS_COLOR, MIXED_COLOR

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
#: each notebook, the fewest figures it stores and the outcome colours its figures show
STORED = {"01_arithmetic.ipynb": (5, (MIXED_COLOR, ALL_PASS_COLOR, ALL_FAIL_COLOR)),
          "02_run_and_decay.ipynb": (4, (MIXED_COLOR, ALL_PASS_COLOR, ALL_FAIL_COLOR)),
          "03_doctor.ipynb": (2, (MIXED_COLOR, ALL_PASS_COLOR, ALL_FAIL_COLOR))}
#: a plotted label naming an outcome, and the palette constant its line must use
OUTCOME_WORDS = {"all fail": "ALL_FAIL_COLOR", "all pass": "ALL_PASS_COLOR", "gradient": "MIXED_COLOR"}


def images(nb) -> list[np.ndarray]:
    """The stored PNG outputs as (h, w, 3) uint8 arrays."""
    from matplotlib.image import imread

    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            png = o.get("data", {}).get("image/png")
            if png:
                rgba = imread(io.BytesIO(base64.b64decode(png)), format="png")
                out.append(np.round(rgba[..., :3] * 255).astype(np.int16))
    return out


def wrong_colours(line: str) -> list[str]:
    """The outcome labels plotted on ``line`` (``label="..."``) whose palette colour the line does not name."""
    return [label for label in re.findall(r'(?<!\w)label="([^"]*)"', line)
            for words, constant in OUTCOME_WORDS.items() if words in label.lower() and constant not in line]


def pixels_of(img: np.ndarray, colour: str, tol: int = 6) -> int:
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int(np.sum(np.all(np.abs(img - rgb) <= tol, axis=-1)))


@pytest.mark.parametrize("name", sorted(STORED))
def test_a_stored_notebook_carries_its_pictures_in_the_labs_colours(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    fewest, colours = STORED[name]
    shown = images(nb)
    assert len(shown) >= fewest, (name, len(shown))
    for colour in colours:  # each outcome colour is drawn (a line or bars of it: many pixels), somewhere
        assert max(pixels_of(img, colour) for img in shown) >= 50, (name, colour)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "grpo_lab.palette" in code
    for line in code.splitlines():  # a plotted outcome by name uses its own colour
        assert not wrong_colours(line), (name, line)


def test_the_outcome_rule_catches_all_fail_drawn_green():
    """The old notebook 02 drew "all fail" with matplotlib's third default colour (green): the label rule rejects it."""
    assert wrong_colours('ax.plot(s["step"], s["all_fail_share"], alpha=0.5, label="all fail")') == ["all fail"]
    assert wrong_colours('ax.plot(x, y, color=MIXED_COLOR, label="all fail")') == ["all fail"]
    assert wrong_colours('ax.plot(x, y, color=ALL_FAIL_COLOR, label="all fail")') == []
    assert wrong_colours('ax.set(ylabel="P(group has a gradient)")') == []  # an axis label plots nothing
