"""Linked views and pin and compare (issue #17, item 4), in real Chromium against the served lab and the export.

Hovering a cell outlines it, shows its K rollouts as dots (filled: passed) and moves the plots' hover markers
to its pass rate, all in the browser; the Pin button freezes the view as a ghost beside the grid with a
comparison at the same rollout budget, and the URL reproduces it. Every expectation is computed here from the
core (``sims``) or from the definitions, never read back from the page.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.grid_twins import cell_image
from grpo_lab.testing.lab_server import block_outside, grid_tip, wait_readout
from grpo_lab.grid.cells import FILTERED, cell_positions, cell_tiles
from grpo_lab.grid.markup import geometry
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.testing.page import FIND, axe_violations

pytestmark = [pytest.mark.browser, pytest.mark.slow]


#: JavaScript: the hover's marks on the plots beside the grid (lab/static/live_plots.js: one line across the
#: P(useful) curve and the histogram, a dot on the curve) as {curve, hist: [visible, location], dot: [p..., u...]},
#: or null before the plots are drawn
MARKERS_JS = f"""() => {{
  const view = ({FIND})('.gx-view');
  if (!view || !view.__grpoPlots || !view.__grpoPlots.data) return null;
  const svg = ({FIND})('#gx-outcome'), line = svg.querySelector('.gx-hover-line'), dot = svg.querySelector('.gx-hover-dot');
  const at = line ? [true, Number(line.getAttribute('data-p'))] : [false, 0];
  return {{curve: at, hist: at, dot: dot ? [[Number(dot.getAttribute('data-p'))], [Number(dot.getAttribute('data-pu'))]]
                                         : [[], []]}};
}}"""

#: JavaScript: the hover's marks (the outline's box and the tip's dots) and the hovered cell's box on the canvas
MARKS_JS = f"""([x, y, cols, rows]) => {{
  const o = ({FIND})('.gx-outline'), c = ({FIND})('#gx-grid'), tip = ({FIND})('#gx-tip');
  const b = o.getBoundingClientRect(), g = c.getBoundingClientRect();
  const w = g.width / cols, h = g.height / rows;
  return {{hidden: o.hidden, outline: [b.left, b.top, b.width, b.height],
           cell: [g.left + x * w, g.top + (rows - 1 - y) * h, w, h],
           dots: Array.from(tip.querySelectorAll('.gx-dot')).map(d => d.classList.contains('gx-pass') ? 1 : 0)}};
}}"""


def plots_ready(page) -> None:
    page.wait_for_function(f"() => ({MARKERS_JS})() !== null", timeout=30_000)


def check_hover(page, view, pop, K, i, cols, rows) -> None:
    """Point at prompt i: its outline, its K rollouts as dots (the core's, rollout by rollout) and the tip."""
    x, y = cell_positions(pop.pass_rates)
    page.locator("#gx-grid").evaluate("c => c.scrollIntoView({block: 'center'})")  # all of the grid on screen
    text = grid_tip(page, x[i], y[i], cols, rows)
    assert text.startswith(f"prompt {i} \u00b7 ") and f"successes {view.successes[i]} of {K}" in text, text
    marks = page.evaluate(MARKS_JS, [int(x[i]), int(y[i]), cols, rows])
    assert not marks["hidden"]
    np.testing.assert_allclose(marks["outline"], marks["cell"], atol=1.0)  # the outline sits on the cell
    want = (pop.uniforms(K)[i] < view.shared_rate[i]).astype(int).tolist()  # rollout j passes iff u[i, j] < q
    assert marks["dots"] == want and sum(want) == view.successes[i]


def test_hover_outlines_the_cell_shows_its_rollouts_and_moves_the_plot_markers(page, lab_url):
    s = Scenario(progress=0.4, K=8)
    pop = s.population()
    view = evaluate(s, pop)
    geo = geometry(pop.n)
    cols, rows = geo["cols"], geo["rows"]
    sent = []  # what the page tells the server: a hover must tell it nothing (a browser-only path)
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.goto(f"{lab_url}?progress=0.4&K=8")
    wait_readout(page)
    plots_ready(page)
    assert page.evaluate(MARKERS_JS)["curve"][0] is False  # no marker before a hover
    mixed = int(np.flatnonzero(view.outcome == 0)[0])
    page.wait_for_timeout(1_000)  # the page's own start-up messages are done
    before = len(sent)
    for i in (mixed, int(np.argmax(view.pass_rate)), int(np.argmin(view.pass_rate))):
        check_hover(page, view, pop, s.K, i, cols, rows)
        p = float(view.pass_rate[i])
        u = 1 - p ** s.K - (1 - p) ** s.K  # P(useful) of this group, from the definition
        page.wait_for_function(f"() => {{ const m = ({MARKERS_JS})(); return m.curve[1] === {p!r}; }}", timeout=5_000)
        m = page.evaluate(MARKERS_JS)
        assert m["curve"] == [True, p] and m["hist"] == [True, p]  # on the curve's plot and the histogram
        assert m["dot"][0] == [p] and m["dot"][1] == pytest.approx([u], abs=1e-14)
        tip = page.locator("#gx-tip").text_content()
        assert f"P(useful) at K = {s.K}: {percent(u)}" in tip
    page.mouse.move(0, 0)  # leaving the grid hides the outline, the tip and the markers
    page.wait_for_function(f"() => ({MARKERS_JS})().curve[0] === false", timeout=5_000)
    assert page.evaluate(MARKS_JS, [0, 0, cols, rows])["hidden"] is True
    assert page.evaluate(MARKERS_JS)["dot"] == [[], []]
    page.wait_for_timeout(500)
    assert sent[before:] == []  # three hovers and a leave: no message to the server
    # the marks follow the view: move K with the pointer on a cell and the dots become the new K's
    check_hover(page, view, pop, s.K, mixed, cols, rows)
    page.locator("#gx-K").evaluate("(el) => { el.value = '16'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    s16 = Scenario(progress=0.4, K=16)
    v16 = evaluate(s16, pop)
    marks = page.evaluate(MARKS_JS, [int(cell_positions(pop.pass_rates)[0][mixed]),
                                     int(cell_positions(pop.pass_rates)[1][mixed]), cols, rows])
    assert marks["dots"] == (pop.uniforms(16)[mixed] < v16.shared_rate[mixed]).astype(int).tolist()
    assert page.console_errors == []


def ghost_pixels(page) -> list[int]:
    return page.evaluate(f"() => Array.from(({FIND})('.gx-ghost-canvas').__grpoPixels)")


def compare_text(page) -> str:
    return page.evaluate(f"() => ({FIND})('#gx-compare').textContent")


def useful_per_1000(p, K) -> float:
    """Useful groups per 1,000 rollouts, from the definition (not sims.kcost)."""
    return 1000 * float(np.mean(1 - p ** K - (1 - p) ** K)) / K


def test_pin_at_k8_compare_with_k16_and_the_url_reproduces_it(page, browser, lab_url):
    pop = Scenario().population()
    geo = geometry(pop.n)
    cols, rows, P = geo["cols"], geo["rows"], geo["P"]
    x, y = cell_positions(pop.pass_rates)
    pinned = evaluate(Scenario(progress=0.5, K=8), pop)
    ghost_want = cell_image(np.where(pinned.kept, pinned.outcome, FILTERED), x, y, cell_tiles(P), cols, rows)
    p = pop.pass_rates ** (1 / (1 + Scenario().gain * 0.5))  # every prompt's pass rate at t = 0.5
    a, b = useful_per_1000(p, 8), useful_per_1000(p, 16)
    lead = (f"At the same rollout budget, now (K = 16, t = 0.5) buys {fixed(b / a, 2)}\u00d7 the useful groups the "
            f"pinned view (K = 8, t = 0.5) buys: {fixed(b, 1)} against {fixed(a, 1)} per 1,000 rollouts.")

    page.goto(f"{lab_url}?progress=0.5&K=8")
    wait_readout(page)
    assert page.locator("#gx-ghost").is_hidden()
    pin = page.get_by_role("button", name="Pin this view")
    pin.focus()
    page.keyboard.press("Enter")  # operable by keyboard
    page.locator("#gx-ghost").wait_for(state="visible", timeout=15_000)
    page.get_by_role("button", name="Unpin").wait_for(timeout=15_000)
    page.wait_for_function("() => new URLSearchParams(location.search).get('pin') === 'K8_t0.5'", timeout=15_000)
    assert ghost_pixels(page) == ghost_want.ravel().tolist()
    assert page.evaluate(f"() => ({FIND})('#gx-ghost-title').textContent") == "Pinned view: K = 8, t = 0.5"
    # the next view: K = 16, as a reader moves the slider
    page.locator("#gx-K").evaluate("(el) => { el.value = '16'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    page.wait_for_function(f"() => ({FIND})('#gx-compare').textContent.includes('Now: K = 16')", timeout=15_000)
    text = compare_text(page)
    assert lead in text, text
    assert "Pinned: K = 8, t = 0.5" in text
    assert f"Useful groups per 1,000 rollouts{fixed(a, 1)}{fixed(b, 1)}" in text
    assert f"Rollouts per useful group{fixed(8 / np.mean(1 - p ** 8 - (1 - p) ** 8), 1)}" in text
    shares = pinned.summary["useful_share_realised"], evaluate(Scenario(progress=0.5, K=16), pop).summary["useful_share_realised"]
    assert f"Groups with a gradient (realised){percent(shares[0])}{percent(shares[1])}" in text
    assert ghost_pixels(page) == ghost_want.ravel().tolist()  # the ghost is still the K = 8 view
    page.wait_for_function("() => new URLSearchParams(location.search).get('K') === '16'", timeout=15_000)
    # the P(useful) plot beside the grid draws the pinned K's curve beside the live one, and names it in its key
    page.wait_for_function(f"() => {{ const v = ({FIND})('.gx-view').__grpoPlots; return !!(v.pinned && v.pinned.useful); }}",
                           timeout=15_000)
    curve = page.evaluate(f"() => {{ const v = ({FIND})('.gx-view').__grpoPlots;"
                          " return [v.pinned.K, Array.from(v.pinned.useful), v.data.K, Array.from(v.data.useful)]; }")
    q = np.linspace(0.0, 1.0, 401)
    assert curve[0] == 8 and curve[2] == 16
    np.testing.assert_allclose(curve[1], 1 - q ** 8 - (1 - q) ** 8, atol=1e-12)
    np.testing.assert_allclose(curve[3], 1 - q ** 16 - (1 - q) ** 16, atol=1e-12)
    assert page.evaluate(f"() => ({FIND})('#gx-pin-key').hidden") is False
    url = page.url
    assert parse_qs(urlparse(url).query)["pin"] == ["K8_t0.5"]
    # the URL alone reproduces the pinned comparison in a new visit
    other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        other.goto(url)
        wait_readout(other)
        other.locator("#gx-ghost").wait_for(state="visible", timeout=15_000)
        other.wait_for_function(f"() => ({FIND})('#gx-compare').textContent.includes('Now: K = 16')", timeout=15_000)
        assert compare_text(other) == text
        assert ghost_pixels(other) == ghost_want.ravel().tolist()
        other.get_by_role("button", name="Unpin").wait_for(timeout=5_000)
    finally:
        other.context.close()
    # Unpin clears the ghost and the URL's pin
    page.get_by_role("button", name="Unpin").click()
    page.locator("#gx-ghost").wait_for(state="hidden", timeout=15_000)
    page.wait_for_function("() => !new URLSearchParams(location.search).has('pin')", timeout=15_000)
    page.get_by_role("button", name="Pin this view").wait_for(timeout=5_000)
    assert page.console_errors == []


def test_axe_finds_no_violation_with_a_pin_and_a_hover(page, lab_url):
    page.goto(f"{lab_url}?K=16&pin=K8_t0.0")
    wait_readout(page)
    page.locator("#gx-ghost").wait_for(state="visible", timeout=15_000)
    plots_ready(page)
    pop = Scenario().population()
    geo = geometry(pop.n)
    x, y = cell_positions(pop.pass_rates)
    page.locator("#gx-grid").evaluate("c => c.scrollIntoView({block: 'center'})")
    grid_tip(page, x[5], y[5], geo["cols"], geo["rows"])
    page.wait_for_function(f"() => ({MARKERS_JS})().curve[0] === true", timeout=5_000)
    assert axe_violations(page) == []
    assert page.console_errors == []


def test_export_hover_outlines_the_cell_and_shows_its_rollouts(page, tmp_path):
    out = tmp_path / "page.html"
    proc = run_cli("export", "--out", out, "--n-prompts", "300", "--seed", "9", "--progress", "0.7", "--K", "12",
                   "--draws", "1")
    assert proc.returncode == 0, proc.stderr
    attempted = block_outside(page, lambda u: u.startswith("file://"))
    page.goto(out.as_uri())
    page.wait_for_function("() => document.getElementById('grpo-export').getAttribute('data-ready') === 'true'")
    s = Scenario(n_prompts=300, seed=9, progress=0.7, K=12)
    pop = s.population()
    view = evaluate(s, pop)
    geo = geometry(300)
    for i in (0, 150, 299):
        check_hover(page, view, pop, s.K, i, geo["cols"], geo["rows"])
    page.mouse.move(0, 0)
    assert page.locator(".gx-outline").is_hidden()
    assert attempted == [] and page.console_errors == []


def test_hover_with_correlated_rollouts_shows_pythons_rollouts(page, lab_url):
    """With rho > 0 Python paints the grid and sends each prompt's shared rate q: the dots are u < q, rollout by
    rollout, as the core realises them; the plots' line still marks p, and no P(useful) dot (the browser's is rho = 0's)."""
    s = Scenario(progress=0.5, K=8, rho=0.4)
    pop = s.population()
    view = evaluate(s, pop)
    assert (view.shared_rate != view.pass_rate).any()
    geo = geometry(pop.n)
    page.goto(f"{lab_url}?progress=0.5&K=8&rho=0.4")
    wait_readout(page)
    plots_ready(page)
    # a prompt whose dots differ from what its pass rate alone would give: only q explains them
    differs = np.flatnonzero(((pop.uniforms(8) < view.shared_rate[:, None]) != (pop.uniforms(8) < view.pass_rate[:, None])).any(axis=1))
    for i in (int(differs[0]), int(differs[-1])):
        check_hover(page, view, pop, s.K, i, geo["cols"], geo["rows"])
        p = float(view.pass_rate[i])
        page.wait_for_function(f"() => ({MARKERS_JS})().curve[1] === {p!r}", timeout=5_000)
        assert page.evaluate(MARKERS_JS)["dot"] == [[], []]
        assert "P(useful)" not in page.locator("#gx-tip").text_content()
    assert page.console_errors == []


def test_pinned_view_fits_a_phone(browser, lab_url):
    """At 390 px the ghost and the comparison wrap under the grid: nothing scrolls sideways."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        page.goto(f"{lab_url}?K=16&progress=0.5&pin=K8_t0.5")
        wait_readout(page)
        page.locator("#gx-ghost").wait_for(state="visible", timeout=30_000)
        page.wait_for_function(f"() => ({FIND})('#gx-compare').textContent.includes('Now: K = 16')", timeout=15_000)
        widths = page.evaluate(f"""() => {{ const g = ({FIND})('#gx-ghost'), c = ({FIND})('.gx-compare-table');
          return [document.documentElement.scrollWidth, window.innerWidth, g.getBoundingClientRect().right,
                  c.getBoundingClientRect().right]; }}""")
        assert widths[0] <= widths[1], widths  # the page does not scroll sideways
        assert widths[2] <= widths[1] and widths[3] <= widths[1], widths  # the ghost and its table are on screen
    finally:
        context.close()
