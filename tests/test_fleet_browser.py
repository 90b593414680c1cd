"""In real Chromium: ``grpo-lab serve --runs DIR`` lists every run of the folder in the Fleet tab, ranked as
``grpo-lab fleet`` ranks them, follows them as they grow and opens one in the Replay; and the Replay's upload takes
a tracker's log (a TensorBoard event file written by PyTorch's SummaryWriter)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from grpo_lab.fleet import Fleet
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.testing.fleet_runs import grow, make_fleet
from grpo_lab.testing.lab_server import READ_CLASS, TEXTS_OF_CLASS, free_port, open_local, serve
from grpo_lab.testing.upload import STATUS, open_replay

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIXTURES = Path(__file__).parent / "fixtures" / "trackers"
#: JavaScript: the run names of the Fleet tab's rows, in order
NAMES = f"() => ({TEXTS_OF_CLASS})('fleet-open')"


def test_the_fleet_tab_ranks_follows_and_opens_a_run(tmp_path, page):
    runs = make_fleet(tmp_path, n=6, steps=30, seed=4)
    port = free_port()
    cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--runs", str(tmp_path), "--port", str(port),
           "--num-procs", "1"]
    with serve(cmd=cmd, port=port) as url:
        outside = open_local(page, url + "?tab=fleet", f"({NAMES})().length === 6", timeout=300_000)
        want = [r["run"] for r in Fleet(str(tmp_path)).refresh()]
        assert page.evaluate(NAMES) == want  # the order grpo-lab fleet gives
        assert page.locator(".fleet-row svg.fleet-spark").count() == 6
        grow(runs[:2], 10)  # two runs log ten more steps: the list follows without a reload
        rows = Fleet(str(tmp_path)).refresh()
        page.wait_for_function(f"(want) => JSON.stringify(({NAMES})()) === JSON.stringify(want)",
                               arg=[r["run"] for r in rows], timeout=120_000)
        steps = [str(r["steps"]) for r in rows]  # 40 steps for the two that grew, 30 for the others
        assert sorted(steps) == ["30"] * 4 + ["40"] * 2
        page.wait_for_function(f"(want) => JSON.stringify(({TEXTS_OF_CLASS})('fleet-steps')) === JSON.stringify(want)",
                               arg=steps, timeout=120_000)
        first = rows[0]
        page.locator(".fleet-open").first.click()  # opens it in the Replay
        page.wait_for_function(f"() => ({READ_CLASS})('replay-step') !== null", timeout=300_000)
        assert page.locator(".replay-run select").input_value() == first["replay_label"]
        page.wait_for_function(f"() => ({READ_CLASS})('replay-step') === '{fixed(float(first['last_step']), 0)}'",
                               timeout=120_000)
        assert outside == [] and page.console_errors == []


def test_the_replay_uploads_a_tensorboard_event_file(page):
    event = next((FIXTURES / "trl_tensorboard").rglob("*tfevents*"))  # PyTorch's SummaryWriter, via TRL
    want = read_scalars(event.parent)
    with serve() as url:
        upload = open_replay(page, url)
        upload.set_input_files(files=[{"name": event.name, "mimeType": "application/octet-stream",
                                       "buffer": event.read_bytes()}])
        page.wait_for_function(f"({STATUS})().startsWith('Read {event.name}')", timeout=120_000)
        from playwright.sync_api import expect

        expect(page.locator(".replay-run select")).to_have_value(re.compile(re.escape(f"upload: {event.name}")),
                                                                 timeout=60_000)
        steps = [fixed(float(x), 0) for x in want.steps["step"]]  # the slider is on one of the log's steps
        page.wait_for_function(f"(steps) => steps.includes(({READ_CLASS})('replay-step'))", arg=steps,
                               timeout=60_000)
        missing = " ".join(page.evaluate(TEXTS_OF_CLASS, "replay-missing"))  # scalars only: what it lacks, said
        assert f"upload: {event.name}" in missing
        assert page.console_errors == []
