"""The Replay tab's grid frames are sparse (only the sampled cells of each step) and decode exactly.

``frames_data`` sends, per run, ``offsets`` per step and per kept cell its prompt, code, k and K
(:func:`grpo_lab.replay.grid.sparse_cells`). A reference decoder written here rebuilds the dense
(steps, prompts) tables and compares them with the replay model (:class:`RunView` codes) and the core
(:func:`grpo_lab.sims.replay.grid_successes`); in Chromium the painted grid and the hover (group state,
k of K, pass rate at the nearest evaluation) at step 0, a middle step and the last step, for run A and a
compared run B, and at the newest step of a record followed while it grows, must be those of the dense tables.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.grid_twins import cell_image
from grpo_lab.testing.lab_server import serve_local
from grpo_lab.testing.replay_frames import array, decode_dense
from grpo_lab.testing.synthetic_record import synthetic_record
from grpo_lab.testing.replay_page import READ_CLASS, hover_cell, wait_step
from grpo_lab.grid.cells import cell_pixels, cell_tiles
from grpo_lab.grid.markup import GRID_WIDTH
from grpo_lab.replay.grid import WORDS, frames_data, sparse_cells
from grpo_lab.replay.model import NOT_SAMPLED_CODE, RunView, rows_for, union_steps
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.record import RunRecord, read_record, write_record
from grpo_lab.sims.replay import grid_successes

RUN_A, RUN_B = "sparse/a", "sparse/b"


def with_missing_rewards(rec: RunRecord, seed: int) -> RunRecord:
    """``rec`` with some rollouts' rewards NaN (so K < G in places: K is data, not a constant)."""
    rng = np.random.default_rng(seed)
    r = rec.groups["rewards"].copy()
    r[rng.random(r.shape) < 0.15] = np.nan
    r[np.all(np.isnan(r), axis=1), 0] = 1.0  # every group keeps a reward
    return RunRecord(meta=rec.meta, groups={**rec.groups, "rewards": r}, evals=rec.evals, steps=rec.steps)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_record(root / RUN_A, synthetic_record(n_prompts=96, steps=30, prompts_per_step=12, seed=4, name="a"))
    write_record(root / RUN_B, with_missing_rewards(
        synthetic_record(n_prompts=80, steps=45, G=6, prompts_per_step=10, seed=5, name="b"), seed=6))
    return root


def test_sparse_cells_round_trip_and_edge_cases():
    ns = NOT_SAMPLED_CODE
    codes = np.array([[ns, 0, ns], [ns, ns, ns], [2, ns, 1]], np.int8)
    k = np.array([[0, 3, 0], [0, 0, 0], [0, 0, 4]], np.int16)
    K = np.array([[0, 4, 2], [0, 0, 0], [4, 0, 4]], np.int16)  # (0, 2): "not sampled" yet K = 2: kept
    got = sparse_cells(codes, k, K)
    assert got["offsets"].tolist() == [0, 2, 2, 4]
    assert got["prompt"].tolist() == [1, 2, 0, 2]
    assert got["code"].tolist() == [0, ns, 2, 1] and got["k"].tolist() == [3, 0, 0, 4]
    assert got["K"].tolist() == [4, 2, 4, 4]
    empty = sparse_cells(np.zeros((0, 5), np.int8), np.zeros((0, 5), np.int16), np.zeros((0, 5), np.int16))
    assert empty["offsets"].tolist() == [0] and len(empty["prompt"]) == 0


def test_frames_are_sparse_and_decode_to_the_dense_tables_of_run_a_and_b(runs):
    va, vb = (RunView(name, read_record(runs / name)) for name in (RUN_A, RUN_B))
    axis = union_steps(va, vb)
    frames = frames_data([va, vb], axis)
    for view, run in zip((va, vb), frames["runs"]):
        codes, k, K = decode_dense(run, len(view.steps))
        want_k, want_K = grid_successes(view.record)
        np.testing.assert_array_equal(codes, view.codes)
        np.testing.assert_array_equal(k, want_k)
        np.testing.assert_array_equal(K, want_K)
        sampled = view.codes != NOT_SAMPLED_CODE
        assert run["index"] == "u2"  # fewer than 65,536 prompts: two bytes per cell's prompt
        assert len(array(run["codes"], "i1")) == sampled.sum() < 0.25 * sampled.size  # only the sampled cells
        assert (~sampled[0]).any() and (~sampled[-1]).any()  # step 0 and the last step have unsampled cells
        if view is vb:  # rollouts without a reward do not count in K: K varies from group to group
            assert K[sampled].min() < K.max() == 6
        assert np.array_equal(rows_for(view, axis), array(run["rows"], "i4"))



def test_more_than_65536_prompts_send_four_byte_prompt_indices():
    view = RunView("wide", synthetic_record(n_prompts=70_000, steps=3, prompts_per_step=40, seed=7))
    run = frames_data([view, None], view.steps)["runs"][0]
    assert run["index"] == "i4"
    codes, k, K = decode_dense(run, len(view.steps))
    np.testing.assert_array_equal(codes, view.codes)
    want_k, want_K = grid_successes(view.record)
    np.testing.assert_array_equal(k, want_k)
    np.testing.assert_array_equal(K, want_K)
    assert array(run["prompt"], "i4").max() >= 1 << 16  # a prompt past two bytes' reach is among the cells

@pytest.fixture(scope="module")
def server(runs):
    import panel as pn

    srv, url = serve_local(lambda: pn.Column(ReplayView(runs_root=runs)))
    yield url
    srv.stop()


@pytest.mark.browser
def test_chromium_paints_and_hovers_the_dense_tables_at_first_middle_and_last_step(page, server, runs):
    va, vb = (RunView(name, read_record(runs / name)) for name in (RUN_A, RUN_B))
    axis = union_steps(va, vb)
    page.goto(server)
    page.wait_for_function(f"() => ({READ_CLASS})('replay-step').some(t => t !== '')")
    page.locator(".replay-run select").select_option(RUN_A)
    page.locator(".replay-compare select").select_option(RUN_B)
    page.wait_for_function(f"() => ({READ_CLASS})('replay-b-step').some(t => t !== '')")
    step = page.locator("#gx-step")
    assert step.get_attribute("max") == str(len(axis) - 1)
    checked = 0
    for pos in (0, len(axis) // 2, len(axis) - 1):
        step.focus()
        step.press("Home")
        for _ in range(pos):
            step.press("ArrowRight")
        wait_step(page, "replay-b-step", fixed(float(vb.steps[rows_for(vb, axis[pos:pos + 1])[0]]), 0))
        wait_step(page, "replay-step", fixed(float(va.steps[rows_for(va, axis[pos:pos + 1])[0]]), 0))
        for run, view in (("a", va), ("b", vb)):
            row = int(rows_for(view, axis[pos:pos + 1])[0])
            assert row >= 0
            cols, rows = int(view.x.max()) + 1, int(view.y.max()) + 1
            P = cell_pixels(GRID_WIDTH, cols)
            shown = page.locator(f'.gx-run[data-run="{run}"] canvas').evaluate(
                "c => [c.height, c.width, Array.from(c.__grpoPixels)]")
            picture = np.array(shown[2], np.uint32).reshape(shown[0], shown[1])
            np.testing.assert_array_equal(picture, cell_image(view.codes[row].tolist(), view.x, view.y,
                                                              cell_tiles(P), cols, rows))
            k, K = grid_successes(view.record)
            sampled = np.flatnonzero(view.codes[row] != NOT_SAMPLED_CODE)
            unsampled = np.flatnonzero(view.codes[row] == NOT_SAMPLED_CODE)
            rates = view.eval_rates[view.ev_row[row]]
            for prompt in (*sampled[[0, -1]], unsampled[0]):
                text = hover_cell(page, run, int(view.x[prompt]), int(view.y[prompt]), cols, rows)
                assert text.startswith(f"prompt {view.prompt_labels[prompt]} \u00b7 "), text
                assert WORDS[view.codes[row, prompt]] in text, text
                assert f"pass rate at the nearest evaluation {percent(float(rates[prompt]))}" in text, text
                if K[row, prompt]:
                    assert f"{k[row, prompt]} of {K[row, prompt]} rollouts passed" in text, text
                else:
                    assert "rollouts passed" not in text, text
                checked += 1
            page.mouse.move(0, 0)
    assert checked == 18
    assert page.console_errors == []



@pytest.mark.browser
def test_chromium_following_a_growing_record_paints_and_hovers_its_new_last_step(tmp_path, page):
    """Live follow re-sends the frames as the record grows: the page shows the newest step's cells exactly."""
    from grpo_lab.testing.growing_record import append_step as _step, growing_record as _writer

    app, rng = _writer(tmp_path / "live", 2)
    srv, url = serve_local(lambda: ReplayView(runs_root=tmp_path))
    try:
        page.goto(url, timeout=300_000)
        wait_step(page, "replay-step", fixed(2.0, 0))
        for s in range(3, 7):
            _step(app, s, rng)
            app.flush(steps_completed=s)
        app.flush(complete=True)
        wait_step(page, "replay-step", fixed(6.0, 0))  # pinned to the latest step, never reloaded
        view = RunView("live", read_record(tmp_path / "live"))
        row, n = len(view.steps) - 1, view.n_prompts
        cols, rows = int(view.x.max()) + 1, int(view.y.max()) + 1
        shown = page.locator('.gx-run[data-run="a"] canvas').evaluate(
            "c => [c.height, c.width, Array.from(c.__grpoPixels)]")
        np.testing.assert_array_equal(np.array(shown[2], np.uint32).reshape(shown[0], shown[1]),
                                      cell_image(view.codes[row].tolist(), view.x, view.y,
                                                 cell_tiles(cell_pixels(GRID_WIDTH, cols)), cols, rows))
        k, K = grid_successes(view.record)
        sampled = np.flatnonzero(view.codes[row] != NOT_SAMPLED_CODE)
        assert 0 < len(sampled) < n
        for prompt in (sampled[0], np.flatnonzero(view.codes[row] == NOT_SAMPLED_CODE)[0]):
            text = hover_cell(page, "a", int(view.x[prompt]), int(view.y[prompt]), cols, rows)
            assert WORDS[view.codes[row, prompt]] in text, text
            assert (f"{k[row, prompt]} of {K[row, prompt]} rollouts passed" in text) == (K[row, prompt] > 0), text
        assert page.console_errors == []
    finally:
        srv.stop()
