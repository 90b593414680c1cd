"""Issue 41's paper cuts in real Chromium: a typed reward vector sets K for the sliders and the plots and bad text is
said in words; the P(gradient) curve reads out on hover and on keyboard focus; the grid's cells are reached by the
keyboard, each read out; the embed has a level-one heading; an upload's error is shown at the upload control and
read out. Every number is checked against the core (grpo_lab.sims)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grpo_lab.app import TITLE
from grpo_lab.grid.markup import geometry
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.testing.lab_server import PAGE_TEXT, READ_CLASS, TEXTS_OF_CLASS, grid_tip, wait_readout
from grpo_lab.testing.page import FIND, axe_violations
from grpo_lab.testing.upload import open_replay

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: JavaScript: an attribute of the first element matching a selector, through shadow roots
ATTR = f"([sel, name]) => {{ const e = ({FIND})(sel); return e ? e.getAttribute(name) : null; }}"


def open_advantages(page, lab_url):
    page.goto(lab_url)
    wait_readout(page)
    page.get_by_role("tab", name="Advantages").click()
    page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)


def test_typed_rewards_set_k_for_the_sliders_and_plots_and_bad_text_is_said_in_words(page, lab_url):
    open_advantages(page, lab_url)
    box = page.get_by_role("textbox", name="Or type rewards")
    box.fill("1, 0, 0, 1")
    box.press("Enter")
    source = f"() => ({FIND})('.adv-source').textContent"
    page.wait_for_function(f"() => ({source})().includes('K = 4')", timeout=15_000)
    k = page.get_by_role("slider", name="Group size K")
    expect(k).to_have_attribute("aria-valuenow", re.compile(r"^4(\.0+)?$"), timeout=15_000)  # the slider reads K = 4
    box.fill("1, 0, abc")
    box.press("Enter")
    page.wait_for_function(f"() => ({TEXTS_OF_CLASS})('adv-error').join(' ').includes('abc')", timeout=15_000)
    said = " ".join(page.evaluate(TEXTS_OF_CLASS, "adv-error"))
    assert "\u201cabc\u201d is not a number" in said and "could not convert" not in said, said
    expect(k).to_have_attribute("aria-valuenow", re.compile(r"^8(\.0+)?$"), timeout=15_000)  # the sliders' own K again
    assert page.console_errors == []


def reading(page) -> tuple[float, str, int]:
    text = page.evaluate(READ_CLASS, "gx-curve-read")
    m = re.fullmatch(r"At pass rate p = ([\d.]+): P\(gradient\) = ([\d.]+%) at K = (\d+)", text)
    assert m, text
    return float(m.group(1)), m.group(2), int(m.group(3))


def test_the_p_gradient_curve_reads_out_on_hover_and_on_keyboard_focus(page, lab_url):
    page.goto(lab_url + "?K=16&progress=0.3")
    wait_readout(page)
    svg = page.locator("#gx-outcome")
    box = svg.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.2)  # over the curve, right of middle
    page.wait_for_function(f"({READ_CLASS})('gx-curve-read').startsWith('At pass rate')", timeout=15_000)
    p, value, K = reading(page)
    assert K == 16 and 0.3 < p < 0.9, (p, K)
    assert value == percent(outcome_probabilities(p, 16)["p_useful"])  # the core's P(useful) at that p
    expect(page.locator(".gx-probe-dot")).to_have_count(1)  # the point read is marked on the curve
    # the keyboard: the reading is a slider; focus starts at the mean pass rate, the arrow keys move it
    page.mouse.move(0, 0)
    reader = page.locator(".gx-curve-read")
    reader.focus()
    mean = evaluate(Scenario(K=16, progress=0.3)).summary["mean_pass_rate"]
    p0, _, _ = reading(page)
    assert p0 == pytest.approx(round(mean, 2))
    for key, step in (("ArrowRight", 0.01), ("PageUp", 0.1), ("ArrowLeft", -0.01)):
        reader.press(key)
        p1, value, _ = reading(page)
        assert p1 == pytest.approx(round(p0 + step, 2)) and value == percent(outcome_probabilities(p1, 16)["p_useful"])
        p0 = p1
    reader.press("End")
    assert reading(page)[:2] == (1.0, "0.0%")
    assert page.evaluate(ATTR, [".gx-curve-read", "aria-valuetext"]) == page.evaluate(READ_CLASS, "gx-curve-read")
    assert page.console_errors == []


def test_grid_cells_are_reached_by_keyboard_and_read_out(page, lab_url):
    page.goto(lab_url + "?progress=0.5")
    wait_readout(page)
    view = evaluate(Scenario(progress=0.5))
    g = geometry(view.pass_rate.size)
    grid = page.locator("#gx-grid")
    grid.focus()
    said = "() => (" + READ_CLASS + ")('gx-cell-said')"
    page.wait_for_function(f"() => ({said})().startsWith('prompt ')", timeout=15_000)
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        grid.press(key)
    text = page.evaluate(said)
    assert text == page.locator("#gx-tip").text_content()  # the tip shown beside the cell is what is read out
    i = int(re.match(r"prompt (\d+)", text).group(1))
    assert f"pass rate now {percent(view.pass_rate[i])}" in text and f"successes {view.successes[i]} of 8" in text
    # the same cell by the mouse: cell (2, rows - 2), row 0 at the bottom
    assert grid_tip(page, 2, g["rows"] - 2, g["cols"], g["rows"]) == text
    assert page.evaluate(f"() => ({FIND})('#gx-cell-said').getAttribute('aria-live')") == "polite"
    grid.focus()
    grid.press("Escape")
    expect(page.locator("#gx-tip")).to_be_hidden()
    assert page.console_errors == []


def test_the_embed_has_a_level_one_heading_and_no_axe_violation(page, lab_url):
    page.goto(lab_url + "?embed=true")
    wait_readout(page)
    page.wait_for_function(f"() => !!({FIND})('h1.page-access-heading')", timeout=15_000)
    assert page.evaluate(f"() => ({FIND})('h1').textContent") == TITLE
    assert page.get_by_role("heading", level=1).count() == 1
    assert axe_violations(page, best_practice=True) == []
    assert page.console_errors == []


def test_an_uploads_error_is_shown_at_the_upload_control_and_read_out(page, lab_url, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 1, "prompt_id": "p1", "rewards": [1, 0]}\n' * 5 +
                   '{"step": 2, "prompt_id": "p2", "rewards": ["x", 0]}\n')
    upload = open_replay(page, lab_url)
    upload.set_input_files(str(bad))
    page.wait_for_function(f"() => (({READ_CLASS})('upload-error') || '').includes('line 6')", timeout=60_000)
    error = page.locator(".replay-upload .upload-error")
    assert error.get_attribute("role") == "alert"  # read out as it appears
    assert page.evaluate(READ_CLASS, "upload-error").startswith("Upload not loaded: ")
    control, said = page.locator(".replay-upload input[type=file]").bounding_box(), error.bounding_box()
    assert 0 <= said["y"] - (control["y"] + control["height"]) < 120, (control, said)  # just under the control
    # a good upload clears it
    upload.set_input_files(files=[{"name": "good.jsonl", "mimeType": "application/json",
                                   "buffer": b'{"step": 1, "prompt_id": "p1", "rewards": [1, 0]}\n'}])
    expect(error).to_be_hidden(timeout=60_000)
    assert page.console_errors == []
