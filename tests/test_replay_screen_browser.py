"""The Replay tab on one screen in real Chromium, as the Live lab: at 1440x900 and 1024x768 the step slider, the
grid and the plots are on the first screen together; after an upload the widget names the file read; a run
without evaluations says so where its pass-rate histogram would be, and no plot is drawn as empty axes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.record import write_record
from grpo_lab.testing.lab_server import READ_CLASS, TEXTS_OF_CLASS, open_local, serve_local
from grpo_lab.testing.page import FIND
from grpo_lab.testing.synthetic_record import synthetic_record

pytestmark = [pytest.mark.browser]

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"

#: JavaScript: the bounding boxes of the slider, the first run's canvas and the four time plots (through shadow roots)
BOXES = f"""() => {{
  const box = (el) => {{ const r = el.getBoundingClientRect(); return {{x: r.x, y: r.y, w: r.width, h: r.height}}; }};
  const all = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {{
    if (el.classList && el.classList.contains('bk-Figure')) all.push(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  }});
  walk(document);
  return {{slider: box(({FIND})('#gx-step')), canvas: box(({FIND})('.gx-run[data-run=a] .gx-canvas')),
          figures: all.map(box).filter(b => b.w > 0 && b.h > 0)}};
}}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    import panel as pn

    from grpo_lab.access import PageAccess

    root = tmp_path_factory.mktemp("runs")
    # as many prompts as the shipped runs (600): the grid is as tall as a real run's
    write_record(root / "run", synthetic_record(n_prompts=600, steps=30, prompts_per_step=128, seed=0, name="run"))
    srv, url = serve_local(lambda: pn.Column(PageAccess(), ReplayView(runs_root=root)))
    yield url
    srv.stop()


def _open(page, url):
    outside = open_local(page, url, f"({TEXTS_OF_CLASS})('replay-step').length > 0 && "
                                    f"({TEXTS_OF_CLASS})('replay-step')[0] !== ''")
    page.wait_for_timeout(500)  # Panel's layout settles
    return outside


@pytest.mark.parametrize("width,height", [(1440, 900), (1024, 768)])
def test_slider_grid_and_plots_on_one_screen(page, server, width, height):
    page.set_viewport_size({"width": width, "height": height})
    assert _open(page, server) == []
    b = page.evaluate(BOXES)
    s, c = b["slider"], b["canvas"]
    assert 0 <= s["y"] and s["y"] + s["h"] <= height, s  # the slider is on the first screen
    seen = (min(c["y"] + c["h"], height) - c["y"]) / c["h"]
    assert c["y"] < height / 2 and seen >= (0.9 if width >= 1440 else 0.6), (c, seen)  # so is the grid, most of it
    # at least one time plot whole on the first screen, beside the grid (not under it)
    beside = [f for f in b["figures"] if f["y"] >= 0 and f["y"] + f["h"] <= height and f["x"] >= c["x"] + c["w"]]
    assert len(beside) >= (3 if width >= 1440 else 1), b["figures"]
    assert page.console_errors == []


def test_upload_names_the_file_and_a_run_without_evaluations_says_so(page, server):
    page.set_viewport_size({"width": 1440, "height": 900})
    _open(page, server)
    assert page.evaluate(READ_CLASS, "upload-file") == "No file read yet."
    # the shipped-like run has evaluations: its histogram is drawn, no note
    assert page.evaluate(f"() => ({TEXTS_OF_CLASS})('replay-hist-empty').filter(t => t).length") == 0
    good = FIXTURES / "plain.jsonl"  # groups only: no evaluations
    page.locator(".replay-upload input[type=file]").set_input_files(str(good))
    page.wait_for_function(f"() => ({TEXTS_OF_CLASS})('gx-caption').some(t => t.startsWith('Run: upload: plain.jsonl'))")
    name = page.evaluate(READ_CLASS, "upload-file")
    assert name.startswith("File: plain.jsonl (") and name.endswith(" MB)"), name
    page.wait_for_function(f"() => ({TEXTS_OF_CLASS})('replay-hist-empty').some(t => t.includes('no evaluation'))")
    # the histogram's figure is not drawn (no empty axes); the reward plot is, as the record has rewards
    hidden = page.evaluate(f"""() => {{ const out = [];
      const walk = (root) => root.querySelectorAll('*').forEach((el) => {{
        if (el.classList && el.classList.contains('bk-Figure')) out.push(el.getBoundingClientRect().height);
        if (el.shadowRoot) walk(el.shadowRoot); }});
      walk(document); return out; }}""")
    assert sum(h > 0 for h in hidden) == 4, hidden  # the four time plots, no histogram
    assert page.evaluate(f"() => ({TEXTS_OF_CLASS})('replay-plot-empty').filter(t => t).length") == 0
    assert page.console_errors == []
