"""The controls beside the grid (rho, the population, New draw, Reset) as one component (grpo_lab.views.side_controls).

Without a browser: the browser's bounds, steps and help are LabState's own, and the component and the state move
together both ways. In Chromium: typed numbers reach the state, the URL and the grid (against the core); a number
out of bounds is clamped, an empty field goes back to its value; rho from the keyboard makes Python paint the grid;
New draw and Reset answer.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, wait_readout
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.state import LabState, PlayState
from grpo_lab.views.side_controls import FIELDS, SideControls, side_controls, side_spec


def test_the_spec_is_read_from_the_state_parameters():
    spec = side_spec()
    assert list(spec["controls"]) == list(FIELDS) == ["rho", "n_prompts", "a", "b", "seed", "loop", "gen_batch",
                                                      "train_batch", "cap"]
    loop = spec["controls"]["loop"]  # the trainer loop of the stall overlay: a select of the state's options
    assert loop["kind"] == "select" and loop["options"] == list(LabState.param.loop.objects) == ["none", "DAPO", "GRPO"]
    assert SideControls.param.loop.default == LabState.param.loop.default and loop["doc"] == LabState.param.loop.doc
    for name in [n for n in FIELDS if n != "loop"]:
        p, c = LabState.param[name], spec["controls"][name]
        assert (c["min"], c["max"], c["doc"]) == (p.bounds[0], p.bounds[1], p.doc)
        assert getattr(SideControls.param[name], "bounds") == p.bounds
        assert SideControls.param[name].default == p.default
    assert spec["controls"]["rho"]["step"] == LabState.param.rho.step
    assert spec["controls"]["rho"]["digits"] == 2 and spec["controls"]["seed"]["kind"] == "integer"


def test_component_and_state_move_together_and_the_buttons_answer():
    lab, play = LabState(), PlayState()
    c = side_controls(lab, play)
    c.param.update(rho=0.3, n_prompts=1234)  # from the browser
    assert (lab.rho, lab.n_prompts) == (0.3, 1234)
    lab.param.update(a=4.5, seed=7)  # from the URL or the tour
    assert (c.a, c.seed) == (4.5, 7)
    c.new_draw_clicks += 1
    assert lab.seed != 7 and c.seed == lab.seed
    play.playing = True
    c.reset_clicks += 1
    assert not play.playing
    assert {n: getattr(lab, n) for n in FIELDS} == {n: LabState.param[n].default for n in FIELDS}
    assert {n: getattr(c, n) for n in FIELDS} == {n: LabState.param[n].default for n in FIELDS}
    with pytest.raises(ValueError):
        c.n_prompts = 10**9  # the bounds hold in Python too (the browser clamps before sending)


def _query(page) -> dict:
    return dict(parse_qsl(urlsplit(page.url).query))


def _commit(page, name: str, text: str) -> None:
    field = page.locator(f"#sc-{name}")
    field.fill(text)
    field.press("Enter")


def _useful(**kw) -> str:
    return percent(evaluate(Scenario(**kw)).summary["useful_share_realised"])


@pytest.mark.browser
@pytest.mark.slow
def test_typed_values_clamped_values_and_the_buttons_in_chromium(page, lab_url):
    page.goto(f"{lab_url}?progress=0.6")
    wait_readout(page)
    _commit(page, "n_prompts", "1234")
    _commit(page, "a", "0.7")
    page.wait_for_function("() => new URLSearchParams(location.search).get('a') === '0.7'", timeout=15_000)
    want = _useful(progress=0.6, n_prompts=1234, a=0.7)
    page.wait_for_function(f"({READ_CLASS})('readout-useful') === {want!r}", timeout=15_000)
    assert _query(page)["n_prompts"] == "1234"
    _commit(page, "seed", "-5")  # below the bound: clamped to 0, and shown so
    page.wait_for_function("() => new URLSearchParams(location.search).get('seed') === '0'", timeout=15_000)
    assert page.locator("#sc-seed").input_value() == "0"
    _commit(page, "b", "")  # not a number: the field shows its value again, nothing is sent
    assert page.locator("#sc-b").input_value() == "3"
    _commit(page, "n_prompts", "17.6")  # an integer field rounds
    page.wait_for_function("() => new URLSearchParams(location.search).get('n_prompts') === '18'", timeout=15_000)
    # rho from the keyboard: two steps of 0.05; Python paints the grid (the kernel covers rho = 0 only)
    page.locator("#sc-rho").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('rho') === '0.1'", timeout=15_000)
    want = _useful(progress=0.6, n_prompts=18, a=0.7, seed=0, rho=0.1)
    page.wait_for_function(f"({READ_CLASS})('readout-useful') === {want!r}", timeout=15_000)
    assert page.locator("#sc-rho").input_value() == "0.1"
    page.get_by_role("button", name="New draw", exact=True).click()
    page.wait_for_function("() => !['0', null].includes(new URLSearchParams(location.search).get('seed'))",
                           timeout=15_000)
    assert page.locator("#sc-seed").input_value() == _query(page)["seed"]
    page.get_by_role("button", name="Reset", exact=True).click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('n_prompts') === '600'", timeout=15_000)
    page.wait_for_function(f"({READ_CLASS})('readout-useful') === {_useful()!r}", timeout=15_000)
    values = {n: page.locator(f"#sc-{n}").input_value() for n in FIELDS}
    assert values == {"rho": "0", "n_prompts": "600", "a": "2", "b": "3", "seed": "1302", "loop": "none",
                      "gen_batch": "512", "train_batch": "512", "cap": "2"}
    assert page.console_errors == []
