"""The replay tab's Python side without a browser: uploads, notices, tolerance, session isolation, run listing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grpo_lab.replay.catalog import list_runs
from synthetic_record import synthetic_record
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record
from grpo_lab.sims.replay import scalar_step_series, step_series

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


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
    assert f'<span class="replay-effective-rate">{percent(s["effective_group_rate"][0])}</span>' in \
        view.slots[0].readouts.text
    assert np.isnan(s["rollouts_useful_cum"][0]) and '<span class="replay-useful">\u2013</span>' in \
        view.slots[0].readouts.text


def test_tolerance_is_applied_and_stated(tmp_path):
    view = ReplayView(runs_root=tmp_path)
    view.tolerance_input.value = 0.5
    upload(view, FIXTURES / "plain.jsonl", "jsonl")
    assert view.slots[0].view.tolerance == 0.5
    assert f'<span class="replay-tolerance">{fixed(0.5, 3)}</span>' in view.tolerance_pane.object
    want = step_series(ingest(FIXTURES / "plain.jsonl", "jsonl", tolerance=0.5))
    assert f'<span class="replay-all-fail">{percent(want["all_fail_share"][0])}</span>' in view.slots[0].readouts.text
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
