"""grpo_lab.grid's shared parts in Python: advantage table, layout, tiles, the picture and the readout templates.

The browser's side (the grid view painting exactly ``cell_image`` of the core's view, its readouts and
hover) is checked in a real browser by tests/test_lab_browser.py (served lab) and tests/test_export.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.grid_twins import advantage_text, cell_image
from grpo_lab.grid.cells import FILTERED, cell_pixels, cell_tiles, grid_shape
from grpo_lab.grid.hover import advantage_table
from grpo_lab.grid.readouts import TEMPLATES, readout_html
from grpo_lab.palette import FILTERED_COLOR, OUTCOME_COLORS
from grpo_lab.sims import advantages as adv
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED, Scenario, evaluate


def test_advantage_table_is_the_core():
    t = advantage_table()
    for K, k in [(1, 0), (1, 1), (4, 1), (16, 1), (8, 8), (64, 17)]:
        r = (np.arange(K) < k).astype(float)
        for name in adv.ESTIMATORS:
            a = adv.advantages(r, name)
            i = t["offset"][K] + k
            if k > 0:
                assert t[f"{name}_pass"][i] == np.float32(a[0])
            if k < K:
                assert t[f"{name}_fail"][i] == np.float32(a[-1])
    assert abs(float(advantage_text(16, 1, "grpo").split()[1].rstrip(",")) - 3.75) < 2e-3  # seed 000: A = 3.75


def test_grid_shape_is_near_square():
    for n in (1, 2, 600, 601, 10_000, 20_000):
        cols, rows = grid_shape(n)
        assert cols * rows >= n and cols * (rows - 1) < n and abs(cols - rows) <= 1


def test_python_readouts_equal_the_summary():
    view = evaluate(Scenario(progress=1.0))
    html = readout_html(view.summary, TEMPLATES["main"])
    assert f'<span class="readout-useful" data-v>{percent(view.summary["useful_share_realised"])}</span>' in html
    assert f'<span class="readout-kept" data-v>{percent(1.0)}</span>' in html


def _rgb(v) -> str:
    v = int(v)
    return "#%02X%02X%02X" % (v & 255, v >> 8 & 255, v >> 16 & 255)


@pytest.mark.parametrize("P", [3, 5, 11, 12])
def test_cell_tiles_show_colour_gap_and_mark(P):
    t = cell_tiles(P)
    assert t.shape == (FILTERED + 1, P, P) and t.dtype == np.uint32
    for code in (MIXED, ALL_PASS, ALL_FAIL):
        assert _rgb(t[code, 0, 0]) == OUTCOME_COLORS[code].upper() and t[code, 0, 0] >> 24 == 255
    assert _rgb(t[FILTERED, 0, 0]) == FILTERED_COLOR.upper() and 0 < t[FILTERED, 0, 0] >> 24 < 255
    for tile in t:  # a blank gap along one side, so neighbouring cells stay apart
        assert (tile[-1, :] == 0).all() and (tile[:, -1] == 0).all()
    black = t == np.uint32(0xFF000000)
    assert not black[MIXED].any() and not black[FILTERED].any()  # mixed and filtered cells carry no mark
    if P >= 5:  # + on all pass (as tall as wide), - on all fail (a bar only), both centred in the cell
        fr, fc = np.nonzero(t[MIXED])
        for code in (ALL_PASS, ALL_FAIL):
            r, c = np.nonzero(black[code])
            assert abs((c.min() + c.max()) - (fc.min() + fc.max())) <= 1
            assert abs((r.min() + r.max()) - (fr.min() + fr.max())) <= 1
        assert len(set(np.nonzero(black[ALL_PASS])[0])) == len(set(np.nonzero(black[ALL_PASS])[1])) >= 3
        assert len(set(np.nonzero(black[ALL_FAIL])[0])) < len(set(np.nonzero(black[ALL_FAIL])[1]))
    else:
        assert not black.any()


def test_cell_image_places_each_prompts_tile():
    rng = np.random.default_rng(3)
    cols, rows, P = 7, 5, 4
    n = 33
    slots = rng.permutation(cols * rows)[:n]
    x, y, code = slots % cols, slots // cols, rng.integers(0, FILTERED + 1, n)
    img = cell_image(code, x.astype(float), y.astype(float), cell_tiles(P), cols, rows)
    assert img.shape == (rows * P, cols * P)
    for i in range(n):  # independent: cut each cell out of the picture
        np.testing.assert_array_equal(img[y[i] * P:(y[i] + 1) * P, x[i] * P:(x[i] + 1) * P], cell_tiles(P)[code[i]])
    empty = set(range(cols * rows)) - set(slots.tolist())
    for s in empty:
        assert (img[s // cols * P:(s // cols + 1) * P, s % cols * P:(s % cols + 1) * P] == 0).all()


def test_cell_pixels_keeps_small_cells_one_to_one_and_halves_large_ones():
    assert cell_pixels(560, 100) == 5 and cell_pixels(560, 142) == 3 and cell_pixels(560, 300) == 3
    assert cell_pixels(560, 25) == 11 and cell_pixels(560, 2) == 12
