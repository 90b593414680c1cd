"""The served lab (``panel serve lab/app.py``) in real Chromium: readouts equal the core, URL state, offline.

One server for the module, started on a free port and stopped at the end. Expected
values come from ``sims.scenario.evaluate`` and ``sims.formatting.percent`` (the same
text ``grpo-lab population`` prints), never from the lab's own code.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from grpo_lab.testing.lab_server import PAGE_TEXT, READ_CLASS, block_outside, grid_tip, wait_readout
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.fixture
def offline(page, lab_url):
    """Route every request: our own origin continues, anything else is aborted and recorded."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(lab_url))
    page.outside_requests = block_outside(page, lambda url: url.startswith(origin + "/") or url == origin)
    return page


def readouts(page) -> dict:
    return {cls: page.evaluate(READ_CLASS, cls) for cls in ("readout-useful", "readout-mean-pass", "readout-kept")}


def expected(**kw) -> dict:
    s = evaluate(Scenario(**kw)).summary
    return {"readout-useful": percent(s["useful_share_realised"]), "readout-mean-pass": percent(s["mean_pass_rate"]),
            "readout-kept": percent(s["kept_share"])}


def press_progress(page, key: str) -> None:
    handle = page.locator("#gx-progress")
    handle.focus()
    handle.press(key)


def wait_for_text(page, cls: str, text: str, timeout: float = 15_000) -> None:
    page.wait_for_function(f"({READ_CLASS})('{cls}') === {text!r}", timeout=timeout)


def test_default_view_renders_offline_without_console_errors(offline, lab_url):
    page = offline
    page.goto(lab_url)
    wait_readout(page)
    page.wait_for_timeout(500)
    assert readouts(page) == expected()  # the default view is exactly Scenario()
    text = page.evaluate(PAGE_TEXT)
    for words in ("mixed", "all pass", "all fail", "removed by the filter", "Training progress", "Group size K"):
        assert words in text
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lab-default.png"), full_page=False)
    assert page.console_errors == []
    assert page.outside_requests == []


def test_progress_drains_useful_share_and_equals_core(offline, lab_url):
    page = offline
    page.goto(lab_url)
    start = wait_readout(page)
    assert start == percent(evaluate(Scenario(progress=0.0, K=8)).summary["useful_share_realised"])
    assert 88.0 <= float(start.rstrip("%")) <= 91.0
    press_progress(page, "End")
    end_expected = percent(evaluate(Scenario(progress=1.0, K=8)).summary["useful_share_realised"])
    wait_for_text(page, "readout-useful", end_expected)
    assert 56.0 <= float(end_expected.rstrip("%")) <= 60.0
    assert readouts(page) == expected(progress=1.0)
    press_progress(page, "ArrowLeft")  # one step: t = 0.99
    wait_for_text(page, "readout-useful", expected(progress=0.99)["readout-useful"])
    assert readouts(page) == expected(progress=0.99)
    assert page.console_errors == [] and page.outside_requests == []


def test_filter_toggle_changes_kept_share(offline, lab_url):
    page = offline
    page.goto(lab_url + "?progress=1")
    wait_for_text(page, "readout-useful", expected(progress=1.0)["readout-useful"])
    assert page.evaluate(READ_CLASS, "readout-kept") == "100.0%"
    page.locator("#gx-filter").click()
    want = expected(progress=1.0, band=(0.2, 0.8))
    wait_for_text(page, "readout-kept", want["readout-kept"])
    assert readouts(page) == want
    assert want["readout-kept"] != "100.0%"
    page.locator("#gx-filter").click()
    wait_for_text(page, "readout-kept", "100.0%")
    assert page.console_errors == []


@pytest.mark.parametrize("query, scenario", [
    ("progress=0.5&K=16&filter=true&band_lo=0.3&band_hi=0.9&n_prompts=900&a=1.5&b=2.5&seed=7",
     dict(progress=0.5, K=16, band=(0.3, 0.9), n_prompts=900, a=1.5, b=2.5, seed=7)),
    ("progress=0.4&K=4&rho=0.3", dict(progress=0.4, K=4, rho=0.3)),  # rho > 0: painted by the server
])
def test_url_reproduces_the_view(page, lab_url, query, scenario):
    page.goto(f"{lab_url}?{query}")
    want = expected(**scenario)
    wait_for_text(page, "readout-useful", want["readout-useful"])
    assert readouts(page) == want
    assert "corrected" not in page.evaluate(PAGE_TEXT)
    assert page.console_errors == []


def test_bad_url_values_are_survived_with_a_notice(page, lab_url):
    page.goto(f"{lab_url}?K=-3&progress=abc&n_prompts=10^9&seed=x&filter=maybe")
    want = expected(K=1)  # K clamped to 1; progress, n_prompts, seed and filter back to their defaults
    wait_for_text(page, "readout-useful", want["readout-useful"])
    assert readouts(page) == want
    page.wait_for_function(f"({PAGE_TEXT})().includes('URL parameters were corrected')", timeout=15_000)
    text = page.evaluate(PAGE_TEXT)
    for name in ("K=-3", "progress=abc", "n_prompts=10^9"):
        assert name in text
    page.wait_for_function("() => !location.search.includes('abc')", timeout=15_000)  # the URL is repaired too
    assert page.console_errors == []


def test_url_follows_the_controls_once_they_pause(page, lab_url):
    """Dragging does not push one history entry per step: the URL is written once the control is still."""
    page.goto(lab_url)
    wait_readout(page)
    page.wait_for_function("() => location.search.includes('progress=0.0')", timeout=15_000)
    before = page.evaluate("() => history.length")
    handle = page.locator("#gx-progress")
    handle.focus()
    for _ in range(6):  # six steps of 0.01, quicker than the URL's delay
        handle.press("ArrowRight")
    wait_for_text(page, "readout-useful", expected(progress=0.06)["readout-useful"])
    page.wait_for_function("() => Math.abs(new URLSearchParams(location.search).get('progress') - 0.06) < 1e-9",
                           timeout=15_000)
    assert page.evaluate("() => history.length") - before <= 3  # a write per pause, not one per step
    query = dict(parse_qsl(urlsplit(page.url).query))
    assert query["K"] == "8" and query["seed"] == "1302"  # the whole state, not just what moved
    assert page.console_errors == []


def test_sessions_are_independent(browser, lab_url):
    ctx_a, ctx_b = browser.new_context(), browser.new_context()
    try:
        a, b = ctx_a.new_page(), ctx_b.new_page()
        a.goto(lab_url)
        b.goto(lab_url)
        wait_readout(a)
        wait_readout(b)
        handle = a.locator("#gx-progress")
        handle.focus()
        handle.press("End")
        wait_for_text(a, "readout-useful", expected(progress=1.0)["readout-useful"])
        a.locator("button", has_text="New draw").first.click()
        a.wait_for_function("() => location.search.includes('seed=')", timeout=15_000)
        b.wait_for_timeout(1000)
        assert readouts(b) == expected()
        query = dict(parse_qsl(urlsplit(b.url).query))
        assert query.get("seed", "1302") == "1302" and float(query.get("progress", 0)) == 0.0
    finally:
        ctx_a.close()
        ctx_b.close()


def test_embed_shows_only_grid_main_controls_and_readouts(page, lab_url):
    page.goto(f"{lab_url}?embed=true&progress=1")
    wait_for_text(page, "readout-useful", expected(progress=1.0)["readout-useful"])
    assert readouts(page) == expected(progress=1.0)
    assert page.evaluate(READ_CLASS, "readout-all-pass") is None  # only the main readouts
    text = page.evaluate(PAGE_TEXT)
    assert "Training progress" in text and "Advantages" not in text and "Jensen" not in text
    assert page.console_errors == []


def test_every_tab_opens_in_the_full_page(offline, lab_url):
    """Tabs are built when first shown: the Advantages and Replay tabs render there, offline, without errors."""
    page = offline
    page.goto(lab_url)
    wait_readout(page)
    page.locator(".bk-tab", has_text="Advantages").first.click()
    page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)
    page.locator(".bk-tab", has_text="Replay").first.click()
    step = wait_readout(page, "replay-step", timeout=90_000)  # the first shipped run is loaded and painted
    assert step.strip() != ""
    page.locator(".bk-tab", has_text="Live lab").first.click()
    press_progress(page, "End")
    wait_for_text(page, "readout-useful", expected(progress=1.0)["readout-useful"])
    assert page.console_errors == [] and page.outside_requests == []


# --- the grid view: the picture, the readouts and the hover equal the core ----------------------------

GRID_SETTINGS = [dict(progress=1.0), dict(progress=0.3, K=64), dict(progress=0.7, K=1),
                 dict(progress=1.0, band=(0.2, 0.8)), dict(progress=0.5, K=4, band=(0.95, 1.0))]

SET_INPUT = """(el, v) => {
  if (el.type === "checkbox") { if (el.checked !== v) el.click(); return; }
  el.value = String(v);
  el.dispatchEvent(new Event("input", {bubbles: true}));
}"""


def test_grid_picture_readouts_and_hover_equal_the_core(page, lab_url):
    """After each move of the controls, the canvas holds exactly lab.grid.cell_image of the core's view, the
    whole readout table is readout_html of its summary, and hovering a cell names that prompt, its successes
    and its advantages under every estimator as sims computes them."""
    from grpo_lab.testing.grid_twins import advantage_text, cell_image
    from grpo_lab.grid.cells import FILTERED, cell_positions, cell_tiles
    from grpo_lab.grid.markup import geometry
    from grpo_lab.grid.readouts import TEMPLATES, readout_html
    from grpo_lab.sims.advantages import ESTIMATORS

    page.goto(f"{lab_url}?n_prompts=900&seed=11")
    wait_readout(page)
    geo = geometry(900)
    cols, rows, P = geo["cols"], geo["rows"], geo["P"]
    for kw in GRID_SETTINGS:
        s = Scenario(n_prompts=900, seed=11, progress=kw["progress"], K=kw.get("K", 8), band=kw.get("band"))
        lo, hi = s.band or (0.2, 0.8)
        for sel, value in (("#gx-band-lo", 0.0), ("#gx-band-hi", hi), ("#gx-band-lo", lo),
                           ("#gx-filter", s.band is not None), ("#gx-K", s.K), ("#gx-progress", s.progress)):
            page.locator(sel).evaluate(SET_INPUT, value)
        pop = s.population()
        view = evaluate(s, pop)
        want = readout_html(view.summary, TEMPLATES["full"])
        shown = page.locator("#gx-readouts").evaluate(
            "(el, h) => { const d = document.createElement('div'); d.innerHTML = h; return [el.innerHTML, d.innerHTML]; }",
            want)
        assert shown[0] == shown[1], kw  # the whole table, as Python renders it
        x, y = cell_positions(pop.pass_rates)
        code = np.where(view.kept, view.outcome, FILTERED)
        img = page.locator("#gx-grid").evaluate("c => [c.height, c.width, Array.from(c.__grpoPixels)]")
        assert img[:2] == [rows * P, cols * P]
        assert img[2] == cell_image(code, x, y, cell_tiles(P), cols, rows).ravel().tolist(), kw
    # hover (last setting): the cell under the pointer names its prompt as the core sees it
    for i in (0, 417, 899):
        text = grid_tip(page, x[i], y[i], cols, rows)
        assert text.startswith(f"prompt {i} \u00b7 "), text
        assert f"pass rate now {percent(view.pass_rate[i])}" in text
        assert f"successes {view.successes[i]} of {s.K}" in text
        for name in ESTIMATORS:
            assert f"A {name}: {advantage_text(s.K, int(view.successes[i]), name)}" in text, (name, text)
    page.mouse.move(0, 0)
    assert page.console_errors == []


def test_server_paints_the_grid_while_rho_is_positive(page, lab_url):
    """With rho > 0 the kernel does not apply: moving progress sends the value to Python, whose view is shown."""
    page.goto(f"{lab_url}?progress=0.4&K=4&rho=0.3")
    want = expected(progress=0.4, K=4, rho=0.3)
    wait_for_text(page, "readout-useful", want["readout-useful"])
    press_progress(page, "End")
    want = expected(progress=1.0, K=4, rho=0.3)
    wait_for_text(page, "readout-useful", want["readout-useful"])
    assert readouts(page) == want
    assert want != expected(progress=1.0, K=4)  # rho matters, so this is not the kernel's answer
    assert page.console_errors == []


def test_reset_restores_the_defaults_and_the_url(page, lab_url):
    """Reset changes every control at once (one batch of state changes); the grid and the URL follow."""
    page.goto(f"{lab_url}?K=16&progress=0.5")
    wait_for_text(page, "readout-useful", expected(K=16, progress=0.5)["readout-useful"])
    page.locator("button", has_text="Reset").first.click()
    wait_for_text(page, "readout-useful", expected()["readout-useful"])
    assert readouts(page) == expected()
    page.wait_for_function("() => new URLSearchParams(location.search).get('K') === '8'", timeout=15_000)
    assert float(dict(parse_qsl(urlsplit(page.url).query))["progress"]) == 0.0
    assert page.locator("#gx-K-out").text_content() == "8"
    assert page.console_errors == []
