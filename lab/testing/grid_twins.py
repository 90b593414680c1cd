"""Python twins of browser code, for the tests only: the cell painter and the hover's advantage text."""

from __future__ import annotations

import numpy as np

from grpo_lab.grid.hover import advantage_table
from grpo_lab.sims.formatting import fixed

__all__ = ["cell_image", "advantage_text"]


def cell_image(code, x, y, tiles: np.ndarray, cols: int, rows: int) -> np.ndarray:
    """The grid as one image, (rows * P, cols * P) uint32, row 0 at the bottom: tile ``code[i]`` at cell (x[i], y[i]).

    The Python twin of ``grpoCells.paint`` (``lab/static/cells.js``), which draws the grid in the
    browser; cells no prompt occupies stay transparent.
    """
    P = tiles.shape[1]
    img = np.zeros((rows, P, cols, P), np.uint32)
    img[np.asarray(y, int), :, np.asarray(x, int), :] = tiles[np.asarray(code, int)]
    return img.reshape(rows * P, cols * P)


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "") + fixed(v, 3)


def advantage_text(K: int, k: int, name: str) -> str:
    """Hover text of the advantages in a group of K with k correct (as the browser writes it)."""
    t = advantage_table()
    i = int(t["offset"][K]) + int(k)
    parts = [f"{side} {_signed(float(t[f'{name}_{side}'][i]))}" for side in ("pass", "fail")
             if not np.isnan(t[f"{name}_{side}"][i])]
    return ", ".join(parts)
