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
        fleet = Fleet(str(tmp_path), doctor="now")  # kept: its refresh after the growth diagnoses the two grown alone
        want = [r["run"] for r in fleet.refresh()]
        # the order grpo-lab fleet gives, once the doctor's forecasts computed in the background are all in
        page.wait_for_function(f"(want) => JSON.stringify(({NAMES})()) === JSON.stringify(want)", arg=want,
                               timeout=300_000)
        page.wait_for_function(f"() => ({TEXTS_OF_CLASS})('fleet-forecast').every(t => / \\((doctor|trend; the "
                               "doctor: .*)\\)$/.test(t))", timeout=300_000)
        assert page.locator(".fleet-row svg.fleet-spark").count() == 6
        grow(runs[:2], 10)  # two runs log ten more steps: the list follows without a reload
        rows = fleet.refresh()
        page.wait_for_function(f"(want) => JSON.stringify(({NAMES})()) === JSON.stringify(want)",
                               arg=[r["run"] for r in rows], timeout=300_000)
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


def test_the_replay_uploads_a_tensorboard_event_file(page, lab_url):
    event = next((FIXTURES / "trl_tensorboard").rglob("*tfevents*"))  # PyTorch's SummaryWriter, via TRL
    want = read_scalars(event.parent)
    upload = open_replay(page, lab_url)
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


#: JavaScript: the element that has the focus, through shadow roots: [its class, its text]
FOCUSED = """() => { let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return a ? [a.className || '', (a.textContent || '').trim()] : ['', '']; }"""


def test_the_fleet_opens_a_run_by_keyboard_alone(tmp_path, page):
    """Tab reaches the Fleet tab's run links while it is shown, Enter opens the run in the Replay; the links are out
    of the Tab order (and axe finds no focusable element under aria-hidden) while another tab is shown."""
    from grpo_lab.testing.page import axe_violations

    make_fleet(tmp_path, n=3, steps=30, seed=5)
    port = free_port()
    cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--runs", str(tmp_path), "--port", str(port),
           "--num-procs", "1"]
    with serve(cmd=cmd, port=port) as url:
        outside = open_local(page, url, "() => document.querySelector('body') !== null", timeout=300_000)
        page.get_by_role("tab", name="Live lab").wait_for(timeout=120_000)
        page.get_by_role("tab", name="Live lab").focus()
        for _ in range(3):  # Live lab -> Advantages -> Replay -> Fleet, by the arrow keys
            page.keyboard.press("ArrowRight")
        page.get_by_role("tab", name="Fleet", selected=True).wait_for(timeout=60_000)
        page.wait_for_function(f"({NAMES})().length === 3", timeout=300_000)
        names = page.evaluate(NAMES)
        seen = []
        for _ in range(12):  # from the tab, Tab into the tab's content: the first run link comes
            page.keyboard.press("Tab")
            seen.append(page.evaluate(FOCUSED))
            if "fleet-open" in seen[-1][0]:
                break
        assert seen[-1] == ["fleet-open", names[0]], seen
        page.keyboard.press("Tab")
        assert page.evaluate(FOCUSED) == ["fleet-open", names[1]]
        page.keyboard.press("Shift+Tab")
        label = next(r["replay_label"] for r in Fleet(str(tmp_path)).refresh() if r["run"] == names[0])
        page.keyboard.press("Enter")  # opens the first run in the Replay
        page.wait_for_url(re.compile(r"tab=replay"), timeout=60_000)
        page.wait_for_function(f"() => ({READ_CLASS})('replay-step') !== null", timeout=300_000)
        assert page.locator(".replay-run select").input_value() == label
        # back on a page where the Fleet was built and then hidden: its links are not focusable there
        page.goto(url + "?tab=fleet")
        page.wait_for_function(f"({NAMES})().length === 3", timeout=300_000)
        page.get_by_role("tab", name="Fleet").focus()
        page.keyboard.press("ArrowRight")  # to Samplers: the Fleet is hidden
        page.get_by_role("tab", name="Samplers", selected=True).wait_for(timeout=60_000)
        page.wait_for_timeout(1500)
        assert [v for v in axe_violations(page) if v["id"] == "aria-hidden-focus"] == []
        stops = []
        for _ in range(8):
            page.keyboard.press("Tab")
            stops.append(page.evaluate(FOCUSED)[0])
        assert not [s for s in stops if "fleet-open" in s], stops
        assert outside == [] and page.console_errors == []
