"""The replay tab in real Chromium: scrubbing, play, hover, side by side, uploads, offline, no console errors.

The tab draws with the browser grid view in frames mode (``grpoGridView.frames``, one
:class:`grpo_lab.replay.grid.ReplayGrid`). Every expected value is recomputed here from the record
with the core (``sims.replay``, ``sims.formatting``) or from its raw groups, independently of the
tab's own code paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bokeh.palettes import Cividis256

from grpo_lab.testing.grid_twins import cell_image
from grpo_lab.grid.cells import cell_pixels, cell_positions, cell_tiles, grid_shape
from grpo_lab.grid.markup import GRID_WIDTH
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS as READ_CLASS
from grpo_lab.testing.lab_server import open_local, serve_local
from grpo_lab.testing.replay_page import (expected_codes, expected_readouts, hover_cell, layout, picture, scrub_to,
                                           texts, wait_step)
from grpo_lab.testing.synthetic_record import synthetic_record
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import read_record, write_record
from grpo_lab.sims.replay import step_series

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
RUN_A, RUN_B = "dr_grpo/seed0", "sign/seed0"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_record(root / RUN_A, synthetic_record(n_prompts=64, steps=40, seed=0, name="dr_grpo"))
    write_record(root / RUN_B, synthetic_record(n_prompts=64, steps=50, seed=1, name="sign"))
    return root


@pytest.fixture(scope="module")
def server(runs):
    import panel as pn

    from grpo_lab.access import PageAccess

    # as the app serves the tab: with the page's accessibility fixes for Bokeh's own widgets
    srv, url = serve_local(lambda: pn.Column(PageAccess(), ReplayView(runs_root=runs)))
    yield url
    srv.stop()


@pytest.fixture
def lab(page, server):
    """The served tab, every request to another host aborted and recorded."""
    page.outside_requests = open_local(page, server, f"({READ_CLASS})('replay-step').length > 0 && "
                                                     f"({READ_CLASS})('replay-step')[0] !== ''")
    yield page
    assert page.outside_requests == [], "requests left localhost"
    assert page.console_errors == []


def test_scrub_changes_grid_readouts_and_hover_to_the_record(lab, runs):
    rec = read_record(runs / RUN_A)
    series = step_series(rec)
    x, y, cols, rows, P = layout(rec)
    seen = []
    for i in (0, 7, 23, len(series["step"]) - 1):
        scrub_to(lab, i)
        wait_step(lab, "replay-step", fixed(float(series["step"][i]), 0))
        got = {cls: texts(lab, cls)[0] for cls in expected_readouts(series, i)}
        assert got == expected_readouts(series, i)
        codes = expected_codes(rec, i)
        # the canvas shows the record's outcomes at that step: the tiles of lab.grid at the cells' places
        shown = picture(lab)
        np.testing.assert_array_equal(shown, cell_image(codes, x, y, cell_tiles(P), cols, rows))
        seen.append(tuple(codes))
    assert len(set(seen)) == len(seen), "scrubbing must change the grid"
    # hover at the last step: the prompt, its group, its pass rate at the nearest evaluation and k of K, from
    # the raw groups (the last group recorded for the prompt at that step)
    g, last = rec.groups, series["step"][-1]
    ev = rec.evals["pass_rate"][np.flatnonzero(rec.evals["step"] <= last)[-1]]
    labels = rec.meta.get("prompt_labels") or [str(i) for i in range(rec.n_prompts)]
    sampled = np.unique(g["prompt_id"][g["step"] == last])
    others = np.setdiff1d(np.arange(rec.n_prompts), sampled)
    assert len(sampled) >= 2
    for prompt in [*sampled[:2], *others[:1]]:
        text = hover_cell(lab, "a", x[prompt], y[prompt], cols, rows)
        assert text.startswith(f"prompt {labels[prompt]} \u00b7 "), text
        assert f"pass rate at the nearest evaluation {percent(float(ev[prompt]))}" in text, text
        at = np.flatnonzero((g["step"] == last) & (g["prompt_id"] == prompt))
        if len(at):
            r = g["rewards"][at[-1]]
            assert f"{int(np.sum(r > 0.5))} of {int(np.sum(~np.isnan(r)))} rollouts passed" in text, text
        else:
            assert "not sampled" in text and "rollouts passed" not in text, text
    lab.mouse.move(0, 0)


def test_pass_rate_view_colours_by_the_nearest_evaluation(lab, runs):
    rec = read_record(runs / RUN_A)
    last = len(step_series(rec)["step"]) - 1
    scrub_to(lab, last)
    wait_step(lab, "replay-step", str(int(rec.groups["step"].max())))
    lab.get_by_text("pass rate at the nearest evaluation", exact=True).click()
    lab.locator(".gx-key-rate").first.wait_for(state="visible")
    ev = rec.evals["step"]
    rates = rec.evals["pass_rate"][np.flatnonzero(ev <= rec.groups["step"].max())[-1]].astype(np.float32)
    # each cell is painted in the Cividis colour of its rate's bin (floor(256 r), as Bokeh's colour mappers bin)
    x, y, cols, rows, P = layout(rec)
    shown = picture(lab)  # setRates shows the key and repaints in one call
    for i in range(len(rates)):
        v = int(shown[int(y[i]) * P + P // 2, int(x[i]) * P + P // 2])  # the cell's centre
        colour = "#%02x%02x%02x" % (v & 255, v >> 8 & 255, v >> 16 & 255)
        assert colour == Cividis256[min(255, int(np.floor(float(rates[i]) * 256)))].lower(), (i, rates[i])
    assert last > 0


def test_side_by_side_two_runs_on_one_time_axis_with_a_caption_each(lab, runs):
    rec_a, rec_b = read_record(runs / RUN_A), read_record(runs / RUN_B)
    sa, sb = step_series(rec_a), step_series(rec_b)
    lab.locator(".replay-compare select").select_option(RUN_B)
    lab.wait_for_function(f"() => ({READ_CLASS})('replay-b-step').length > 0")
    captions = texts(lab, "gx-caption")
    assert captions[0].startswith(f"Run: {RUN_A}. {rec_a.n_prompts} prompts, {len(sa['step'])} recorded steps")
    assert RUN_B in captions[1] and f"{len(sb['step'])} recorded steps" in captions[1]
    axis = sorted(set(sa["step"].tolist()) | set(sb["step"].tolist()))
    assert lab.locator("#gx-step").get_attribute("max") == str(len(axis) - 1)
    scrub_to(lab, len(axis) - 1)  # run B is longer: A stays at its last step while B reaches its own
    wait_step(lab, "replay-b-step", fixed(float(sb["step"][-1]), 0))
    want = {**expected_readouts(sa, len(sa["step"]) - 1), **expected_readouts(sb, len(sb["step"]) - 1, "replay-b-")}
    assert {cls: texts(lab, cls)[0] for cls in want} == want
    x, y, cols, rows, P = layout(rec_b)
    np.testing.assert_array_equal(picture(lab, "b"), cell_image(expected_codes(rec_b, len(sb["step"]) - 1), x, y,
                                                                cell_tiles(P), cols, rows))
    scrub_to(lab, 12)
    wait_step(lab, "replay-step", fixed(float(axis[12]), 0))
    want = {**expected_readouts(sa, 12), **expected_readouts(sb, 12, "replay-b-")}
    assert {cls: texts(lab, cls)[0] for cls in want} == want


def test_play_runs_in_the_browser_and_the_plots_follow(lab, runs):
    rec = read_record(runs / RUN_A)
    series = step_series(rec)
    scrub_to(lab, len(series["step"]) - 5)
    play = lab.get_by_role("button", name="Play", exact=True)
    play.click()
    lab.get_by_role("button", name="Pause", exact=True).wait_for()
    wait_step(lab, "replay-step", fixed(float(series["step"][-1]), 0))  # it plays to the end, then stops
    lab.get_by_role("button", name="Play", exact=True).wait_for()
    got = {cls: texts(lab, cls)[0] for cls in expected_readouts(series, len(series["step"]) - 1)}
    assert got == expected_readouts(series, len(series["step"]) - 1)
    # the time-series plots' step markers follow (Python hears the position when play stops)
    last = float(series["step"][-1])
    lab.wait_for_function(f"""() => {{
      const spans = []; for (const m of Bokeh.documents[0].all_models) if (m.type === 'Span') spans.push(m.location);
      return spans.length === 4 && spans.every(v => v === {last});
    }}""")


def test_one_step_control_and_every_control_named_in_words(lab):
    """One slider for the step (not two for one value); every button, slider and field has a name in words."""
    assert lab.get_by_role("slider").count() == 1
    assert lab.get_by_role("slider", name="Step").count() == 1
    names = lab.evaluate("""() => {
      const out = [];
      const walk = (root) => root.querySelectorAll('button, input, select').forEach((el) => {
        if (el.type === 'hidden' || el.closest('[hidden]')) return;
        let name = el.getAttribute('aria-label') || (el.labels && el.labels[0] ? el.labels[0].textContent : '')
                   || el.getAttribute('title') || (el.tagName === 'BUTTON' ? el.textContent : '');
        const by = el.getAttribute('aria-labelledby');
        if (!name && by) name = by.split(' ').map(id => (root.getElementById ? root.getElementById(id) : null))
                                  .filter(Boolean).map(n => n.textContent).join(' ');
        out.push([el.tagName + '.' + (el.type || ''), (name || '').trim()]);
      });
      const all = (root) => { walk(root); root.querySelectorAll('*').forEach(el => el.shadowRoot && all(el.shadowRoot)); };
      all(document);
      return out;
    }""")
    assert names, "no controls found"
    unnamed = [(kind, name) for kind, name in names if not re.search(r"[A-Za-z]{2,}", name)]
    assert unnamed == [], unnamed


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
    assert any("evaluations" in t for t in texts(lab, "replay-missing"))


def test_after_an_upload_every_readout_is_the_new_runs(lab, runs):
    """#17: at the last step of a 40-step run, upload a short record: the step, rollout counts and evaluation
    pass rate are the upload's (no count above what it holds, no evaluation it lacks), the caption names it."""
    rec_a = read_record(runs / RUN_A)
    last_a = len(step_series(rec_a)["step"]) - 1
    scrub_to(lab, last_a)
    wait_step(lab, "replay-step", fixed(float(step_series(rec_a)["step"][-1]), 0))
    # the position has been sent to Python (before the upload, on the same websocket): without this wait the
    # upload could overtake it and the new run open at the old run's last position known to the server
    lab.locator(f'.gx-view[data-synced="{last_a}"]').wait_for(state="attached")
    good = FIXTURES / "plain.jsonl"
    lab.locator(".replay-upload input[type=file]").set_input_files(str(good))
    rec = ingest(good, "jsonl")
    series = step_series(rec)
    last = len(series["step"]) - 1
    wait_step(lab, "replay-step", fixed(float(series["step"][last]), 0))
    want = expected_readouts(series, last)
    assert {cls: texts(lab, cls)[0] for cls in want} == want
    possible = int(np.sum(~np.isnan(rec.groups["rewards"])))
    assert int(texts(lab, "replay-generated")[0]) <= possible
    assert texts(lab, "replay-eval-pass")[0] == percent(float("nan"))  # the upload has no evaluations
    assert texts(lab, "gx-caption")[0].startswith("Run: upload: plain.jsonl")
    x, y, cols, rows, P = layout(rec) if len(rec.evals.get("pass_rate", [])) else (None,) * 5
    if x is None:  # no evaluations: cells in prompt order (every key -1, ties by id)
        x, y = (v.astype(int) for v in cell_positions(np.full(rec.n_prompts, -1.0)))
        cols, rows = grid_shape(rec.n_prompts)
        P = cell_pixels(GRID_WIDTH, cols)
    np.testing.assert_array_equal(picture(lab), cell_image(expected_codes(rec, last), x, y, cell_tiles(P), cols, rows))
