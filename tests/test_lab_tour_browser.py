"""The guided tour in real Chromium: a step is in the URL (?tour=N), sets the controls, and Next / End move it."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from lab_server import READ_CLASS, serve, wait_readout
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def lab_url():
    with serve() as url:
        yield url


def useful(**kw) -> str:
    return percent(evaluate(Scenario(**kw)).summary["useful_share_realised"])


def wait_for_text(page, cls: str, text: str) -> None:
    page.wait_for_function(f"({READ_CLASS})('{cls}') === {text!r}", timeout=15_000)


def query(page) -> dict:
    return dict(parse_qsl(urlsplit(page.url).query))


def test_a_linked_tour_step_sets_the_view_and_next_and_end_move_it(page, lab_url):
    page.goto(lab_url)
    wait_readout(page)
    link = page.get_by_role("link", name="guided tour")
    assert link.get_attribute("href") == "?tour=1"
    assert page.evaluate(READ_CLASS, "tour-step") is None  # no tour box until asked
    page.goto(f"{lab_url}?tour=3")  # "Bigger K and its bill": t = 1, K = 32
    wait_for_text(page, "readout-useful", useful(progress=1.0, K=32))
    assert "step 3 of 5: Bigger K and its bill" in page.evaluate(READ_CLASS, "tour-step")
    assert page.locator("#gx-K-out").text_content() == "32"
    page.wait_for_function("() => new URLSearchParams(location.search).get('tour') === '3'", timeout=15_000)
    assert query(page)["K"] == "32"
    page.get_by_role("button", name="Next \u2192").click()  # the filter and its shrinking pool
    want = evaluate(Scenario(progress=1.0, K=8, band=(0.2, 0.8))).summary
    wait_for_text(page, "readout-kept", percent(want["kept_share"]))
    assert page.locator("#gx-filter").is_checked()
    page.wait_for_function("() => new URLSearchParams(location.search).get('tour') === '4'", timeout=15_000)
    page.get_by_role("button", name="End tour").click()
    page.wait_for_function(f"() => ({READ_CLASS})('tour-step') === null || "
                           "!new URLSearchParams(location.search).has('tour')", timeout=15_000)
    page.wait_for_function("() => !new URLSearchParams(location.search).has('tour')", timeout=15_000)
    assert query(page)["filter"] == "true"  # the view stays where the tour left it
    assert page.console_errors == []


def test_a_bad_tour_step_is_no_tour(page, lab_url):
    page.goto(f"{lab_url}?tour=99&K=4")
    wait_for_text(page, "readout-useful", useful(K=4))
    assert page.evaluate(READ_CLASS, "tour-step") is None
    assert page.console_errors == []
