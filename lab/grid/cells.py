"""The grid's cells: the near-square layout and the pictures of one cell (tiles).

``grid_shape(n)``, ``cell_positions(keys)``
    The near-square layout, largest key top-left (ties by id).
``cell_pixels(width, cols)``, ``cell_tiles(P)``, ``colour_tiles(P, colours)``
    The picture's resolution and the tile of each cell code (Okabe-Ito outcome colours, grey for
    filtered, a + / - mark when unanimous). The browser's painter (``lab/static/cells.js``) copies
    these tiles into one image; ``tests/grid_twins.py`` holds its Python twin.
``FILTERED``
    The cell code of a prompt the filter removed (the replay: one not sampled at a step).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from ..palette import FILTERED_ALPHA, FILTERED_COLOR, OUTCOME_COLORS, OUTCOME_MARK_ALPHA, OUTCOME_MARKS

__all__ = ["FILTERED", "CELL_GAP", "grid_shape", "cell_positions", "cell_pixels", "colour_tiles", "cell_tiles"]

CELL_GAP = 0.12  #: share of a cell's side left blank between neighbours
#: cell code: the outcome (MIXED, ALL_PASS, ALL_FAIL) for a kept prompt, FILTERED for one the filter removed
FILTERED = 3


def grid_shape(n: int) -> tuple[int, int]:
    """(columns, rows) of a near-square grid holding n cells: columns = ceil(sqrt n)."""
    cols = max(1, math.ceil(math.sqrt(n)))
    return cols, max(1, math.ceil(n / cols))


def cell_positions(keys) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) cell centres for n prompts on the :func:`grid_shape` grid, largest key top-left (ties by id).

    The live lab passes the pass rates (easiest prompt top-left); the replay tab passes each prompt's
    pass rate at the run's first evaluation.
    """
    keys = np.asarray(keys, dtype=float)
    n = len(keys)
    cols, rows = grid_shape(n)
    order = np.argsort(-keys, kind="stable")
    rank = np.empty(n, int)
    rank[order] = np.arange(n)
    return (rank % cols).astype(float), (rows - 1 - rank // cols).astype(float)


def cell_pixels(width: int, cols: int) -> int:
    """Image pixels per side of a cell at the grid's nominal width: the repaint's cost grows with their square.

    Cells under 10 screen pixels get one image pixel per screen pixel (at least 3); larger ones
    one per two screen pixels (at most 12), which Bokeh draws unsmoothed, so edges stay crisp.
    """
    screen = width // max(cols, 1)
    return int(max(3, screen if screen < 10 else min(12, screen // 2)))


def _rgba32(color: str, alpha: float) -> int:
    """A colour as one little-endian RGBA uint32 (the byte order of a canvas ImageData)."""
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return r | g << 8 | b << 16 | int(round(255 * alpha)) << 24


def _cell_span(P: int) -> tuple[int, int]:
    """The pixels [lo, hi) of a cell's side that are painted; the rest is the gap to its neighbours."""
    gap = max(1, int(round(CELL_GAP * P)))
    return gap // 2, P - (gap - gap // 2)


def colour_tiles(P: int, colours) -> np.ndarray:
    """One plain P x P tile (uint32 RGBA, with the cell gap) per ``(colour, alpha)`` in ``colours``."""
    lo, hi = _cell_span(P)
    tiles = np.zeros((len(colours), P, P), np.uint32)
    for i, (colour, alpha) in enumerate(colours):
        tiles[i, lo:hi, lo:hi] = _rgba32(colour, alpha)
    return tiles


@lru_cache(maxsize=32)
def cell_tiles(P: int) -> np.ndarray:
    """The pictures of one cell, P x P RGBA (uint32, row 0 at the bottom), indexed by cell code.

    Tiles 0-2 are the outcomes MIXED, ALL_PASS, ALL_FAIL in their colours, tile 3 the grey of a
    prompt the filter removed (or, in the replay, one not sampled). A gap of about CELL_GAP of the
    side is left blank, and unanimous cells carry their mark (palette.OUTCOME_MARKS: a black + on
    all-pass, - on all-fail) when P >= 5, so colour is never the only cue.
    """
    colours = [(OUTCOME_COLORS[c], 1.0) for c in (MIXED, ALL_PASS, ALL_FAIL)] + [(FILTERED_COLOR, FILTERED_ALPHA)]
    tiles = colour_tiles(P, colours)
    lo, hi = _cell_span(P)
    side = hi - lo
    if P >= 5:
        thick = max(1, int(round(side / 8)))
        arm = max(1, int(round(0.2 * side)))
        b0 = lo + (side - thick) // 2  # the bar's rows [b0, b0 + thick), centred in the cell
        a0, a1 = b0 - arm, b0 + thick + arm  # its columns: the same centre, so + is symmetric
        black = _rgba32("#000000", 1.0)
        for code in (MIXED, ALL_PASS, ALL_FAIL):
            if OUTCOME_MARK_ALPHA[code] == 0:
                continue
            tiles[code, b0:b0 + thick, a0:a1] = black  # the bar of - and +
            if OUTCOME_MARKS[code] == "cross":
                tiles[code, a0:a1, b0:b0 + thick] = black  # the upright of +
    tiles.setflags(write=False)
    return tiles
