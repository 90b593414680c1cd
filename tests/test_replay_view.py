"""The replay tab's Python side without a browser: uploads, notices, tolerance, session isolation, run listing."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from grpo_lab.replay.catalog import list_runs
from grpo_lab.testing.replay_frames import decode_dense
from grpo_lab.testing.synthetic_record import synthetic_record
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record
from grpo_lab.sims.replay import scalar_step_series, step_series

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def sent(view, key: str, run: int = 0) -> np.ndarray:
    """A readout series as the grid component sends it to the browser (frames_data: base64 float64)."""
    return np.frombuffer(base64.b64decode(view.grid.frames["runs"][run]["series"][key]), "<f8")


def upload(view, path: Path, fmt: str):
    view.format_select.value = fmt
    view.file_input.filename = path.name
    view.file_input.value = path.read_bytes()


def test_list_runs_finds_nested_record_directories(tmp_path):
    write_record(tmp_path / "dr_grpo" / "seed0", synthetic_record(steps=3))
    write_record(tmp_path / "solo", synthetic_record(steps=3))
    (tmp_path / "empty").mkdir()
    assert list(list_runs(tmp_path)) == ["dr_grpo/seed0", "solo"]
    assert list_runs(tmp_path / "absent") == {}


def test_scalars_only_upload_shows_what_it_can_and_says_what_is_missing(tmp_path):
    view = ReplayView(runs_root=tmp_path)
    upload(view, FIXTURES / "trl_run" / "trainer_state.json", "trl")
    assert view.state.error == ""
    assert view.state.run.startswith("upload: trainer_state.json")
    assert "per-group rewards" in view.state.notice and view.missing_pane.visible
    s = scalar_step_series(ingest(FIXTURES / "trl_run" / "trainer_state.json", "trl"))
    np.testing.assert_array_equal(sent(view, "eff"), s["effective_group_rate"])
    assert np.isnan(s["rollouts_useful_cum"]).all() and np.isnan(sent(view, "useful_cum")).all()
    assert "scalars only" in view.grid.frames["runs"][0]["caption"]


def test_tolerance_is_applied_and_stated(tmp_path):
    view = ReplayView(runs_root=tmp_path)
    view.tolerance_input.value = 0.5
    upload(view, FIXTURES / "plain.jsonl", "jsonl")
    assert view.slots[0].view.tolerance == 0.5
    assert f'<span class="replay-tolerance">{fixed(0.5, 3)}</span>' in view.tolerance_pane.object
    want = step_series(ingest(FIXTURES / "plain.jsonl", "jsonl", tolerance=0.5))
    np.testing.assert_array_equal(sent(view, "all_fail"), want["all_fail_share"])
    view.tolerance_input.value = 0.0  # re-ingests the same upload
    assert view.slots[0].view.tolerance == 0.0
    view.tolerance_input.value = -1.0
    assert "tolerance" in view.state.error and view.error_pane.visible and view.state.tolerance == 0.0


def test_wrong_format_is_an_error_notice_and_the_run_stays(tmp_path):
    write_record(tmp_path / "r", synthetic_record(steps=4))
    view = ReplayView(runs_root=tmp_path)
    upload(view, FIXTURES / "plain.jsonl", "trl")
    assert view.state.error.startswith("Upload not loaded:") and view.error_pane.visible
    assert view.state.run == "r" and view.slots[0].view is not None


def test_uploads_do_not_leak_between_sessions(tmp_path):
    write_record(tmp_path / "r", synthetic_record(steps=4))
    one, two = ReplayView(runs_root=tmp_path), ReplayView(runs_root=tmp_path)
    upload(one, FIXTURES / "plain.jsonl", "jsonl")
    assert any(k.startswith("upload: ") for k in one.state.choices)
    assert list(two.state.choices) == ["r"] and list(two.run_select.options) == ["r"]
    assert two.state.run == "r"


def test_rate_codes_bin_like_a_linear_colour_mapper():
    from grpo_lab.replay.plots import NAN_RATE_CODE, RATE_COLOURS, rate_codes

    got = rate_codes(np.array([0.0, 1 / 256 - 1e-9, 1 / 256, 0.5, 0.999, 1.0, np.nan], np.float32)).tolist()
    assert got == [0, 0, 1, 128, 255, 255, NAN_RATE_CODE]
    assert NAN_RATE_CODE == 256 and len(RATE_COLOURS) == 257


def test_hover_counts_are_each_groups_passing_rollouts(tmp_path):
    """k of K sent for the hover: per step and prompt, the last group recorded there, counted from its rewards."""
    rec = ingest(FIXTURES / "plain.jsonl", "jsonl")
    write_record(tmp_path / "r", rec)
    view = ReplayView(runs_root=tmp_path)
    run = view.grid.frames["runs"][0]
    steps = np.unique(rec.groups["step"])
    assert run["counts"] == "u1"  # groups of 4: a byte per count
    _, k, K = decode_dense(run, len(steps))  # sparse frames: only the sampled cells are sent
    want_k, want_K = np.zeros_like(k), np.zeros_like(K)
    for step, pid, rewards in zip(rec.groups["step"], rec.groups["prompt_id"], rec.groups["rewards"]):
        row = list(steps).index(step)
        want_k[row, pid] = sum(1 for r in rewards if r == r and r > 0.5)
        want_K[row, pid] = sum(1 for r in rewards if r == r)
    np.testing.assert_array_equal(k, want_k)
    np.testing.assert_array_equal(K, want_K)
    assert want_K.max() == 4


def test_the_stacked_histogram_rows_are_the_runs_counts_at_the_step(tmp_path):
    """One bar glyph draws the four stacks: stack j's bin i is row j * bins + i, from the stacks below it to its top."""
    from grpo_lab.replay.plots import HIST_COLUMNS

    write_record(tmp_path / "r", synthetic_record(steps=5))
    view = ReplayView(runs_root=tmp_path)
    slot = view.slots[0]
    for pos in (0, 3, 4):
        view.paint(pos)
        row = int(view.axis.data["row_a"][pos])
        counts = slot.view.hist[row]  # bins x stacks, from grpo_lab.sims.replay.step_histograms
        bins = counts.shape[0]
        data = slot.hist.data
        drawn = (np.asarray(data["top"]) - np.asarray(data["bottom"])).reshape(len(HIST_COLUMNS), bins).T
        np.testing.assert_array_equal(drawn, counts)
        np.testing.assert_array_equal(np.asarray(data["bottom"]).reshape(len(HIST_COLUMNS), bins)[0], 0)
        np.testing.assert_array_equal(np.asarray(data["top"]).reshape(len(HIST_COLUMNS), bins)[-1], counts.sum(1))
        mids = (slot.view.hist_edges[:-1] + slot.view.hist_edges[1:]) / 2
        np.testing.assert_allclose(np.asarray(data["mid"]), np.tile(mids, len(HIST_COLUMNS)))
    assert counts.sum() > 0


def test_sessions_share_a_record_on_disk_until_it_changes(tmp_path):
    """Two visitors of one run read and prepare it once; a record written again is read again."""
    import os

    write_record(tmp_path / "r", synthetic_record(steps=3))
    first, second = ReplayView(runs_root=tmp_path), ReplayView(runs_root=tmp_path)
    assert first.slots[0].view is second.slots[0].view and len(first.slots[0].view.steps) == 3
    write_record(tmp_path / "r", synthetic_record(steps=5))
    st = os.stat(tmp_path / "r" / "run.json")
    os.utime(tmp_path / "r" / "run.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a coarse clock
    third = ReplayView(runs_root=tmp_path)
    assert third.slots[0].view is not first.slots[0].view and len(third.slots[0].view.steps) == 5
    assert len(first.slots[0].view.steps) == 3  # what the first visitor shows is left alone


def test_plots_without_data_say_so_instead_of_empty_axes(tmp_path):
    """A scalars-only record (TRL's trainer_state.json): the plots whose series it does not hold are not drawn and a
    note names them; the pass-rate histogram, with no evaluation to bin, is a sentence too. Which series are empty is
    read from what the grid component sends the browser."""
    view = ReplayView(runs_root=tmp_path)
    upload(view, FIXTURES / "trl_run" / "trainer_state.json", "trl")
    drawn = {f.title.text: f.visible for f in view.plots.figures}
    series = {"Groups with a gradient: measured vs predicted": ("eff", "eff_roll", "pred_real", "pred_iid"),
              "Both tails: unanimous groups": ("all_pass", "all_fail"),
              "Reward and evaluation pass rate": ("reward", "eval_pass"),
              "Rollouts: generated vs with a gradient": ("gen_cum", "useful_cum")}
    want = {title: any(np.isfinite(sent(view, k)).any() for k in keys) for title, keys in series.items()}
    assert drawn == want and not all(want.values()) and any(want.values()), (drawn, want)
    note = view.plots.note
    assert note is not None and note.visible
    assert all((title in note.text) == (not ok) for title, ok in want.items()), note.text
    hist = view.slots[0]
    assert not hist.hist_fig.visible and hist.empty.visible and "no evaluation" in hist.empty.text
    # a run with evaluations and groups: every plot drawn, no note made
    write_record(tmp_path / "full" / "run", synthetic_record(steps=4))
    full = ReplayView(runs_root=tmp_path / "full")
    assert all(f.visible for f in full.plots.figures) and full.plots.note is None
    assert full.slots[0].hist_fig.visible and not full.slots[0].empty.visible
