"""lab.grid in a standalone Bokeh page (file_html + INLINE): the browser's repaint equals Python's.

For each setting the CustomJS glue (kernel + glue) repaints the grid and readouts in Chromium;
the cells' codes, marks, outcomes and successes and the readout text must equal what
``Grid.columns`` / ``readout_html`` compute from ``sims.scenario.evaluate``.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from lab.grid import TEMPLATES, Grid, advantage_table, advantage_text, grid_shape, readout_html
from sims import advantages as adv
from sims.formatting import percent
from sims.scenario import Scenario, evaluate

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
    assert f'<span class="readout-useful">{percent(view.summary["useful_share_realised"])}</span>' in html
    assert f'<span class="readout-kept">{percent(1.0)}</span>' in html


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
            return {code: Array.from(g.code), mark: Array.from(g.mark), mark_alpha: Array.from(g.mark_alpha),
                    k: Array.from(g.k), outcome: Array.from(g.outcome), kept: Array.from(g.kept),
                    K: m('grpo_grid_state').data.K[0], readouts: m('grpo_readouts').text,
                    shown: Bokeh.index.find_one(m('grpo_readouts')).markup_el.innerHTML};
        }""")
        view = evaluate(s, pop)
        py = grid.columns(view, s.K)
        for col in ("code", "mark", "mark_alpha", "k", "outcome", "kept"):
            assert js[col] == np.asarray(py[col]).tolist(), (kw, col)
        assert js["K"] == s.K
        assert js["readouts"] == readout_html(view.summary, grid.template), kw
        assert js["shown"] == _as_rendered(page, js["readouts"]), kw
    assert page.console_errors == []
