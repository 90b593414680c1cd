"""lab.grid in a standalone Bokeh page (file_html + INLINE): the browser's repaint equals Python's.

For each setting the CustomJS glue (kernel + glue) repaints the grid and readouts in Chromium;
the cells' codes, outcomes and successes, the picture of the cells and the readout text must
equal what ``Grid.columns`` / ``cell_image`` / ``readout_html`` compute from ``sims.scenario.evaluate``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lab.grid import (FILTERED, TEMPLATES, Grid, advantage_table, advantage_text, cell_image, cell_pixels, cell_tiles,
                      grid_shape, readout_html)
from lab.palette import FILTERED_COLOR, OUTCOME_COLORS
from sims import advantages as adv
from sims.formatting import percent
from lab_server import PAGE_TEXT
from sims.scenario import ALL_FAIL, ALL_PASS, MIXED, Scenario, evaluate

SETTINGS = [dict(progress=1.0), dict(progress=0.3, K=64), dict(progress=0.7, K=1),
            dict(progress=1.0, band=(0.2, 0.8)), dict(progress=0.5, K=4, band=(0.95, 1.0))]


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


def _as_rendered(page, html: str) -> str:
    """``html`` as the browser serialises it once parsed (what innerHTML reads back)."""
    return page.evaluate("h => { const d = document.createElement('div'); d.innerHTML = h; return d.innerHTML; }", html)


STANDALONE = """
import sys
from bokeh.embed import file_html
from bokeh.layouts import column
from bokeh.models import Checkbox, RangeSlider, Slider
from bokeh.resources import INLINE
from lab.grid import Grid
from sims.scenario import Scenario

base = Scenario(n_prompts=900, seed=11)
grid = Grid(base.population(), base)
prog = Slider(start=0, end=1, step=0.01, value=0, name="progress")
K = Slider(start=1, end=64, step=1, value=8, name="K")
flt = Checkbox(active=False, name="filter")
band = RangeSlider(start=0, end=1, step=0.01, value=(0.2, 0.8), name="band")
grid.attach(progress=prog, K=K, filter=flt, band=band)
open(sys.argv[1], "w", encoding="utf-8").write(file_html(column(prog, K, flt, band, grid.layout), INLINE, "grid"))
"""


@pytest.mark.browser
def test_browser_repaint_equals_python(page, tmp_path):
    base = Scenario(n_prompts=900, seed=11)
    pop = base.population()
    grid = Grid(pop, base)  # Python's side of the comparison
    # the standalone page is written by a fresh interpreter: once Panel is imported (as other tests in this
    # process do), Bokeh's file_html also links Panel's extension bundles, which a file:// page cannot load
    path = tmp_path / "grid.html"
    subprocess.run([sys.executable, "-c", STANDALONE, str(path)], check=True, timeout=300)
    page.goto(path.as_uri())
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0")
    for kw in SETTINGS:
        s = Scenario(n_prompts=900, seed=11, K=kw.get("K", 8), progress=kw["progress"], band=kw.get("band"))
        lo, hi = s.band or (0.2, 0.8)
        page.evaluate("""([t, K, f, lo, hi]) => {
            const d = Bokeh.documents[0], m = n => d.get_model_by_name(n);
            m('grpo_readouts').text = '';  // so the wait below sees this repaint, not the previous one
            m('band').value = [lo, hi]; m('filter').active = f; m('K').value = K; m('progress').value = t;
        }""", [s.progress, s.K, s.band is not None, lo, hi])
        # the browser writes the rendered readouts at once and the model's text once the controls pause
        page.wait_for_function("""() => {
            const m = n => Bokeh.documents[0].get_model_by_name(n), text = m('grpo_readouts').text;
            if (!text) return false;
            const v = Bokeh.index.find_one(m('grpo_readouts')), probe = document.createElement('div');
            probe.innerHTML = text;
            return v && v.markup_el && v.markup_el.innerHTML === probe.innerHTML;
        }""", timeout=20_000)
        js = page.evaluate("""() => {
            const d = Bokeh.documents[0], m = n => d.get_model_by_name(n), g = m('grpo_grid').data;
            const img = window.grpoCells.image(m('grpo_grid_pixels'), g, m('grpo_grid_geometry').data,
                                               m('grpo_grid_tiles').data.t);
            return {code: Array.from(g.code), image: Array.from(img), shape: Array.from(img.shape),
                    k: Array.from(g.k), outcome: Array.from(g.outcome), kept: Array.from(g.kept),
                    K: m('grpo_grid_state').data.K[0], readouts: m('grpo_readouts').text,
                    shown: Bokeh.index.find_one(m('grpo_readouts')).markup_el.innerHTML};
        }""")
        view = evaluate(s, pop)
        py = grid.columns(view, s.K)
        for col in ("code", "k", "outcome", "kept"):
            assert js[col] == np.asarray(py[col]).tolist(), (kw, col)
        cols, rows = grid_shape(900)
        want = cell_image(py["code"], py["x"], py["y"], cell_tiles(cell_pixels(520, cols)), cols, rows)
        assert js["shape"] == list(want.shape)
        assert js["image"] == want.ravel().tolist(), kw  # the browser's picture is Python's, pixel for pixel
        assert js["K"] == s.K
        assert js["readouts"] == readout_html(view.summary, grid.template), kw
        assert js["shown"] == _as_rendered(page, js["readouts"]), kw
    # hover: the cell under the mouse names its prompt, pass rate now and successes (last setting above)
    for i in (0, 417, 899):
        xy = page.evaluate("""(i) => {
            const d = Bokeh.documents[0], g = d.get_model_by_name('grpo_grid').data;
            const v = Bokeh.index.find_one(d.get_model_by_name('grpo_grid_figure'));
            v.canvas_view.el.scrollIntoView({block: "center"});
            const r = v.canvas_view.el.getBoundingClientRect();
            return [r.left + v.frame.x_scale.compute(g.x[i]), r.top + v.frame.y_scale.compute(g.y[i])];
        }""", i)
        page.mouse.move(*xy)
        text = f"prompt: {i} "
        page.wait_for_function(f"({PAGE_TEXT})().replace(/\\s+/g, ' ').includes({text!r})", timeout=10_000)
        shown = " ".join(page.evaluate(PAGE_TEXT).split())
        assert f"pass rate now: {percent(view.pass_rate[i])}" in shown, shown[-400:]
        assert f"successes: {view.successes[i]} of {s.K}" in shown
        page.mouse.move(0, 0)
    assert page.console_errors == []
