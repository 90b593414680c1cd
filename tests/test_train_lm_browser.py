"""The shipped SmolLM2 records (runs/lm) in the Replay tab in real Chromium: picked from the run menu, scrubbed
to the last step, every readout and the grid's pixels equal to what the record gives, recomputed with the core
(``sims.replay``) as tests/test_replay_browser.py does for synthetic records."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.grid_twins import cell_image
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS as READ_CLASS
from grpo_lab.testing.lab_server import block_outside, serve_local
from grpo_lab.testing.replay_page import expected_codes, expected_readouts, layout, picture, scrub_to, texts, wait_step
from grpo_lab.grid.cells import cell_tiles
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.record import read_record
from grpo_lab.sims.replay import step_series

LM = DEFAULT_RUNS_DIR / "lm"


@pytest.fixture(scope="module")
def server():
    import panel as pn

    from grpo_lab.access import PageAccess

    srv, url = serve_local(lambda: pn.Column(PageAccess(), ReplayView(runs_root=LM)))
    yield url
    srv.stop()


@pytest.mark.parametrize("name", ["cpu-g4-sign", "cpu-g8-dr_grpo", "cpu-g8-sign-ds-p20"])  # G = 4, G = 8, DAPO
def test_a_shipped_lm_record_replays_to_its_last_step(page, server, name):
    origin = server.rstrip("/")
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws")))
    page.goto(server)
    page.wait_for_function(f"() => ({READ_CLASS})('replay-step').length > 0 && ({READ_CLASS})('replay-step')[0] !== ''")
    page.locator(".replay-run select").select_option(name)
    page.wait_for_function(f"() => ({READ_CLASS})('gx-caption')[0].startsWith('Run: {name}.')")
    rec = read_record(LM / name)
    series = step_series(rec)
    last = len(series["step"]) - 1
    want = expected_readouts(series, last)
    scrub_to(page, last)
    wait_step(page, "replay-step", want["replay-step"])
    assert {cls: texts(page, cls)[0] for cls in want} == want
    x, y, cols, rows, P = layout(rec)
    np.testing.assert_array_equal(picture(page, "a"), cell_image(expected_codes(rec, last), x, y, cell_tiles(P),
                                                                 cols, rows))
    assert outside == [] and page.console_errors == []
