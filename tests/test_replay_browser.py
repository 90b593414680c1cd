"""The replay tab in real Chromium: scrubbing, side by side, uploads, offline, no console errors.

Every expected value is recomputed here from the record with the core (``sims.replay``,
``sims.formatting``), independently of the tab's own code paths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bokeh.palettes import Cividis256

from grid_twins import cell_image
from grpo_lab.grid.cells import cell_tiles
from lab_server import block_outside, serve_local
from synthetic_record import synthetic_record
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import read_record, write_record
from grpo_lab.sims.replay import NOT_SAMPLED, grid_states, step_series

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
RUN_A, RUN_B = "dr_grpo/seed0", "sign/seed0"

READ_CLASS = """(cls) => {
  const text = (node) => {  // visible text, descending into shadow roots, skipping <style>
    if (node.nodeType === 3) return node.textContent;
    if (node.tagName === 'STYLE' || node.tagName === 'SCRIPT') return '';
    let t = '';
    if (node.shadowRoot) for (const c of node.shadowRoot.childNodes) t += text(c);
    for (const c of node.childNodes) t += text(c);
    return t;
  };
  const out = [];
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.tagName !== 'STYLE' && el.classList && el.classList.contains(cls)) out.push(text(el).trim());
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return out;
}"""
CELL_CODES = "(name) => Array.from(Bokeh.documents[0].get_model_by_name(name).data.code)"
CELL_RATES = "(name) => Array.from(Bokeh.documents[0].get_model_by_name(name).data.rate)"
#: the picture a grid shows: [shape, pixels] of the image lab/static/cells.js painted for its renderer
PICTURE = """(name) => {
  const img = Bokeh.documents[0].get_model_by_name(name).__grpoImage;
  return [Array.from(img.shape), Array.from(img)];
}"""


def picture(page, name: str):
    """The image of a grid's picture (``name``: its pixels source): (rows * P, cols * P) uint32 RGBA, row 0 at
    the bottom."""
    (h, w), flat = page.evaluate(PICTURE, name)
    return np.array(flat, dtype=np.uint32).reshape(h, w)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_record(root / RUN_A, synthetic_record(n_prompts=64, steps=40, seed=0, name="dr_grpo"))
    write_record(root / RUN_B, synthetic_record(n_prompts=64, steps=50, seed=1, name="sign"))
    return root


@pytest.fixture(scope="module")
def server(runs):
    srv, url = serve_local(lambda: ReplayView(runs_root=runs))
    yield url
    srv.stop()


@pytest.fixture
def lab(page, server):
    """The served tab, every request to another host aborted and recorded."""
    origin = server.rstrip("/")
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws")))
    page.goto(server)
    page.wait_for_function(f"() => ({READ_CLASS})('replay-step').length > 0 && "
                           f"({READ_CLASS})('replay-step')[0] !== ''")
    page.outside_requests = outside
    yield page
    assert page.outside_requests == [], "requests left localhost"
    assert page.console_errors == []


def texts(page, cls):
    return page.evaluate(READ_CLASS, cls)


def expected_readouts(series, i, prefix="replay-"):
    """What the readouts must say at row i, formatted with sims.formatting from step_series."""
    return {
        f"{prefix}step": fixed(float(series["step"][i]), 0),
        f"{prefix}effective-rate": percent(series["effective_group_rate"][i]),
        f"{prefix}effective-rolling": percent(series["effective_group_rate_rolling"][i]),
        f"{prefix}predicted-real": percent(1 - series["predicted_d_real"][i]),
        f"{prefix}predicted-iid": percent(1 - series["predicted_d_iid"][i]),
        f"{prefix}all-pass": percent(series["all_pass_share"][i]),
        f"{prefix}all-fail": percent(series["all_fail_share"][i]),
        f"{prefix}reward": fixed(series["reward_mean"][i], 3),
        f"{prefix}eval-pass": percent(series["eval_pass_rate"][i]),
        f"{prefix}generated": fixed(series["rollouts_generated_cum"][i], 0),
        f"{prefix}useful": fixed(series["rollouts_useful_cum"][i], 0),
    }


def expected_codes(record, i):
    _, states = grid_states(record)
    return [3 if s == NOT_SAMPLED else int(s) for s in states[i]]


def wait_step(page, cls, value):
    page.wait_for_function(f"() => ({READ_CLASS})('{cls}')[0] === '{value}'")


def handle(page):
    h = page.locator(".replay-slider .noUi-handle")
    h.focus()
    return h


def scrub_to(page, pos):
    """Home, then ArrowRight pos times (noUiSlider's End key keeps the range it was built with)."""
    h = handle(page)
    h.press("Home")
    for _ in range(pos):
        h.press("ArrowRight")


def test_scrub_changes_grid_and_readouts_to_the_record(lab, runs):
    rec = read_record(runs / RUN_A)
    series = step_series(rec)
    seen = []
    for i in (0, 7, 23, len(series["step"]) - 1):
        scrub_to(lab, i)
        wait_step(lab, "replay-step", fixed(float(series["step"][i]), 0))
        got = {cls: texts(lab, cls)[0] for cls in expected_readouts(series, i)}
        assert got == expected_readouts(series, i)
        codes = lab.evaluate(CELL_CODES, "replay_cells_a")
        assert codes == expected_codes(rec, i)
        seen.append(tuple(codes))
        # the picture on screen shows those codes: the tiles of lab.grid placed at the cells' positions
        x, y = (np.array(lab.evaluate(f"() => Array.from(Bokeh.documents[0].get_model_by_name("
                                      f"'replay_cells_a').data.{c})")) for c in "xy")
        cols, rows = int(x.max()) + 1, int(y.max()) + 1
        shown = picture(lab, "replay_outcome_a_pixels")
        P = shown.shape[1] // cols
        np.testing.assert_array_equal(shown, cell_image(codes, x, y, cell_tiles(P), cols, rows))
    assert len(set(seen)) == len(seen), "scrubbing must change the grid"


def test_pass_rate_view_colours_by_the_nearest_evaluation(lab, runs):
    rec = read_record(runs / RUN_A)
    last = len(step_series(rec)["step"]) - 1
    scrub_to(lab, last)
    wait_step(lab, "replay-step", str(int(rec.groups["step"].max())))
    lab.get_by_text("pass rate at the nearest evaluation", exact=True).click()
    lab.wait_for_function("() => Bokeh.documents[0].get_model_by_name('replay_grid_a').renderers[1].visible")
    rates = np.array(lab.evaluate(CELL_RATES, "replay_cells_a"), dtype=float)
    ev = rec.evals["step"]
    want = rec.evals["pass_rate"][np.flatnonzero(ev <= rec.groups["step"].max())[-1]]
    np.testing.assert_allclose(rates, want.astype(np.float32), rtol=0, atol=0)
    # each cell is painted in the Cividis colour of its rate's bin (floor(256 r), as Bokeh's colour mappers bin)
    x, y = (np.array(lab.evaluate(f"() => Array.from(Bokeh.documents[0].get_model_by_name("
                                  f"'replay_cells_a').data.{c})")) for c in "xy")
    shown = picture(lab, "replay_rate_a_pixels")
    P = shown.shape[1] // (int(x.max()) + 1)
    for i in range(len(rates)):
        v = int(shown[int(y[i]) * P, int(x[i]) * P])  # the cell's first pixel
        colour = "#%02x%02x%02x" % (v & 255, v >> 8 & 255, v >> 16 & 255)
        assert colour == Cividis256[min(255, int(np.floor(rates[i] * 256)))].lower(), (i, rates[i])
    assert last > 0


def test_side_by_side_two_runs_on_one_time_axis(lab, runs):
    rec_a, rec_b = read_record(runs / RUN_A), read_record(runs / RUN_B)
    sa, sb = step_series(rec_a), step_series(rec_b)
    lab.locator(".replay-compare select").select_option(RUN_B)
    lab.wait_for_function(f"() => ({READ_CLASS})('replay-b-step').length > 0")
    axis = lab.evaluate("() => Array.from(Bokeh.documents[0].get_model_by_name('replay_axis').data.step)")
    assert axis == sorted(set(sa["step"].tolist()) | set(sb["step"].tolist()))
    scrub_to(lab, len(axis) - 1)  # run B is longer: A stays at its last step while B reaches its own
    wait_step(lab, "replay-b-step", fixed(float(sb["step"][-1]), 0))
    want = {**expected_readouts(sa, len(sa["step"]) - 1), **expected_readouts(sb, len(sb["step"]) - 1, "replay-b-")}
    assert {cls: texts(lab, cls)[0] for cls in want} == want
    assert lab.evaluate(CELL_CODES, "replay_cells_b") == expected_codes(rec_b, len(sb["step"]) - 1)
    scrub_to(lab, 12)
    wait_step(lab, "replay-step", fixed(float(axis[12]), 0))
    want = {**expected_readouts(sa, 12), **expected_readouts(sb, 12, "replay-b-")}
    assert {cls: texts(lab, cls)[0] for cls in want} == want


def test_malformed_upload_shows_the_line_and_the_page_survives(lab, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1, "prompt_id": "p1", "rewards": [1, 0]}\n{"step": 2, "prompt_id": \n')
    lab.locator(".replay-upload input[type=file]").set_input_files(str(bad))
    lab.wait_for_function(f"() => ({READ_CLASS})('replay-error').some(t => t.includes('line 2'))")
    # the page still works: a good upload replays, with its tolerance stated
    good = FIXTURES / "plain.jsonl"
    lab.locator(".replay-tolerance-input input").fill("0.25")
    lab.locator(".replay-tolerance-input input").press("Enter")
    lab.locator(".replay-upload input[type=file]").set_input_files(str(good))
    lab.wait_for_function(f"() => ({READ_CLASS})('replay-tolerance').includes('0.250')")
    rec = ingest(good, "jsonl", tolerance=0.25)
    series = step_series(rec)
    wait_step(lab, "replay-step", fixed(float(series["step"][0]), 0))
    want = expected_readouts(series, 0)
    assert {cls: texts(lab, cls)[0] for cls in want} == want
    assert lab.evaluate(CELL_CODES, "replay_cells_a") == expected_codes(rec, 0)
    assert any("evaluations" in t for t in texts(lab, "replay-missing"))
