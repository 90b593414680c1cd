"""Presentation mode's guided tour for a projector's back row (issue 41), in real Chromium at 1920x1080, 1280x720 and
1024x768, at every step: the tour's text is at least 22 px at 1920x1080 (2% of the window's height at the others), its
box lies in the window beside or above the lab and covers no part of it (the grid, the key, the controls, the Play
row, the readouts, both plots), the grid keeps at least 30% of a 1920x1080 screen, its text and figure are whole
(nothing scrolled or cut), the page does not scroll, the step's subject is outlined and on the screen and shows the
figures the step quotes, the plots keep their keys, no two of a plot's texts overlap, and the P(gradient) curve runs clear of its label. Step 7 talks about the K-cost table, which presentation mode's page does not build: the box shows it, with the
core's numbers.
"""

from __future__ import annotations

import pytest

from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.palette import MIXED_COLOR
from grpo_lab.sims.kcost import BASELINE_K, k_cost
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.testing.lab_server import READ_CLASS
from grpo_lab.testing.page import FIND
from grpo_lab.testing.screen import SHOWN_BOX, UNCOVERED_READOUTS, on_screen, open_sized, overlap
from grpo_lab.testing.tour_check import TEXT_AND_LABELS, shown
from grpo_lab.views.tour import HIGHLIGHT_CLASS, KCOST, TOUR, tour_figures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

GRID_SHARE = 0.30  #: the least share of a 1920x1080 screen the grid keeps with the tour open (issue 41)
#: the lab's parts the tour's box must leave uncovered, and keep on the screen
PARTS = {"tabs": ".bk-header", "play row": ".lab-main-controls", "grid": "#gx-grid", "key": ".grpo-legend",
         "controls": ".gx-controls", "readouts": ".gx-readouts", "decay plot": ".gx-plot-decay",
         "outcome plot": ".gx-plot-outcome", "decay key": ".gx-plot-decay .gx-plot-key",
         "outcome key": ".gx-plot-outcome .gx-plot-key"}
#: JavaScript: the tour's box (its size, how it docks, whether its content overflows it or scrolls inside it), the
#: step's text font size, the highlighted elements, and the page's scroll extents
TOUR_STATE = "([cls]) => { const find = (" + FIND + """);
  const roots = [document];
  for (let i = 0; i < roots.length; i++) for (const e of roots[i].querySelectorAll('*')) if (e.shadowRoot) roots.push(e.shadowRoot);
  const box = find('.tour'), r = box.getBoundingClientRect();
  let scrolled = [];
  const inside = [box.shadowRoot];
  for (let i = 0; i < inside.length; i++) for (const e of inside[i].querySelectorAll('*')) {
    if (e.shadowRoot) inside.push(e.shadowRoot);
    if (e.scrollWidth > e.clientWidth + 1 && /auto|scroll|hidden/.test(getComputedStyle(e).overflowX)) scrolled.push(e.className);
  }
  const marked = [];
  for (const root of roots) for (const e of root.querySelectorAll('.' + cls)) { const b = e.getBoundingClientRect();
    marked.push({top: b.top, bottom: b.bottom, left: b.left, right: b.right, width: b.width, inBox: box.contains(e) ||
      (e.getRootNode() !== document && (function up(n) { while (n && n !== box) n = n.getRootNode().host || null; return n === box; })(e)),
      classes: e.className}); }
  const text = find('.tour-step');
  return {box: {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height,
                dock: box.getAttribute('data-dock'), overflow: box.scrollHeight - box.clientHeight, scrolled},
          font: parseFloat(getComputedStyle(text).fontSize), text: text.textContent, textBox: text.getBoundingClientRect().toJSON(),
          marked, pageH: document.documentElement.scrollHeight, pageW: document.documentElement.scrollWidth,
          w: innerWidth, h: innerHeight}; }"""
#: JavaScript: pairs of texts of one plot (tick labels, axis and curve labels) whose boxes overlap by more than a pixel
TEXTS_CROSSING = "(sel) => { const svg = (" + FIND + """)(sel); const t = Array.from(svg.querySelectorAll('text'))
    .map(e => [e.textContent, e.getBoundingClientRect()]).filter(([s, b]) => s.trim() && b.width > 0);
  const out = [];
  for (let i = 0; i < t.length; i++) for (let j = i + 1; j < t.length; j++) { const a = t[i][1], b = t[j][1];
    if (Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1)
      out.push([t[i][0], t[j][0], a.top, b.top]); }
  return out; }"""
#: JavaScript: the P(gradient) curve's label and the curve (its path's box), in the outcome plot
CURVE_LABEL = "(colour) => { const svg = (" + FIND + """)('#gx-outcome'); const label = svg.querySelector('.gx-curve-label');
  const curve = Array.from(svg.querySelectorAll('path')).find(p => p.getAttribute('stroke') === colour && p.getAttribute('fill') === 'none');
  const a = label.getBoundingClientRect(), b = curve.getBoundingClientRect();
  return {label: {top: a.top, bottom: a.bottom, left: a.left, right: a.right, text: label.textContent},
          curve: {top: b.top, bottom: b.bottom, left: b.left, right: b.right}}; }"""
#: JavaScript: the K-cost table's rows (K, then each cell's text) as the page shows them
KCOST_ROWS = "() => { const t = (" + FIND + """)('.kcost-table'); if (!t) return null;
  return Array.from(t.querySelectorAll('tr')).slice(1).map(r => Array.from(r.cells).map(c => c.textContent.trim())); }"""


def _wait_step(page, n: int) -> None:
    """Step n's text is shown, its subject outlined, the box docked; then Panel's layout and the dock settle."""
    page.wait_for_function(f"() => ({READ_CLASS})('tour-step').includes('step {n} of {len(TOUR)}:')", timeout=20_000)
    page.wait_for_function("(targets) => { const e = (" + FIND + ")('[data-tour-step]'); const b = (" + FIND + ")('.tour');"
                           " return !!e && targets.some(t => { try { return e.matches(t); } catch (err) { return false; } })"
                           " && !!b && !!b.getAttribute('data-dock'); }", arg=list(TOUR[n - 1].targets), timeout=30_000)
    if TOUR[n - 1].drain:  # the drain runs training progress to its end first
        page.wait_for_function("() => (" + FIND + ")('#gx-progress-out').textContent === '1.00'", timeout=30_000)
    # the layout has settled: the box, the grid, the readouts and the plots kept their places over five polls
    page.wait_for_function("() => { const find = (" + FIND + """);
      const sig = ['.tour', '#gx-grid', '.gx-readouts', '.gx-plots', '.tour-step'].map(s => { const e = find(s);
        return e ? JSON.stringify(e.getBoundingClientRect()) : ''; }).join('|') + document.documentElement.scrollHeight;
      const w = window.__layoutSettle = window.__layoutSettle || {sig: '', same: 0};
      w.same = sig === w.sig ? w.same + 1 : 0; w.sig = sig; return w.same >= 5; }""", polling=200, timeout=30_000)


def _check_step(page, n: int, width: int, height: int) -> None:
    got = page.evaluate(TOUR_STATE, [HIGHLIGHT_CLASS])
    box, where = got["box"], (width, height, n)
    assert got["w"] == width and got["h"] == height
    # the back row reads it: 22 px at 1920x1080, and at least as large a share of a smaller window's height (16 px)
    assert got["font"] >= (22 if height >= 1080 else 16), (where, got["font"])
    assert TOUR[n - 1].title in got["text"], where
    # the box and its text on the screen, whole: nothing taller than the box, nothing scrolled sideways inside it
    assert box["dock"] in ("right", "top"), where
    assert on_screen(box, width, height) and on_screen(got["textBox"], width, height), (where, box)
    assert box["overflow"] <= 1 and box["scrolled"] == [], (where, box)
    for name in ("\u2190 Back", "Next \u2192", "End tour"):
        b = page.get_by_role("button", name=name, exact=True).bounding_box()
        b = {"left": b["x"], "top": b["y"], "right": b["x"] + b["width"], "bottom": b["y"] + b["height"]}
        assert on_screen(b, width, height) and b["left"] >= box["left"] - 0.5 and b["right"] <= box["right"] + 0.5, \
            (where, name, b, box)
    # the page fits the window: no scrolling in either direction
    assert got["pageH"] <= height + 1 and got["pageW"] <= width + 1, (where, got["pageH"], got["pageW"])
    # every part of the lab on the screen, none under the box, and no two of them over one another
    parts = {name: page.evaluate(SHOWN_BOX, sel) for name, sel in PARTS.items()}
    for name, part in parts.items():
        assert part is not None, (where, name)
        assert on_screen(part, width, height), (where, name, part)
        assert not overlap(part, box), (where, name, part, box)
    main = ["play row", "grid", "controls", "readouts", "decay plot", "outcome plot", "key"]
    for i, a in enumerate(main):
        for b in main[i + 1:]:
            assert not overlap(parts[a], parts[b]), (where, a, parts[a], b, parts[b])
    assert all(page.evaluate(UNCOVERED_READOUTS)), (where, "a readout lies under something")
    # the grid keeps at least 30% of a 1920x1080 screen beside the tour (38% without it)
    grid = parts["grid"]
    if (width, height) == (1920, 1080):
        assert grid["width"] * grid["height"] >= GRID_SHARE * width * height, (where, grid)
    # the named controls (Play and the progress slider for "press Play", "drag training progress") are whole
    for sel in ("#gx-progress", "#gx-K", "#gx-filter"):
        c = page.evaluate(SHOWN_BOX, sel)
        assert c is not None and on_screen(c, width, height) and not overlap(c, box), (where, sel, c)
    play = page.get_by_role("button", name="\u25b6 Play").bounding_box()
    play = {"left": play["x"], "top": play["y"], "right": play["x"] + play["width"], "bottom": play["y"] + play["height"]}
    assert on_screen(play, width, height) and not overlap(play, box), (where, play)
    # the step's subject: one element outlined, on the screen; the box itself only for a figure it shows
    marked = got["marked"]
    assert len(marked) == 1 and marked[0]["width"] > 0 and on_screen(marked[0], width, height), (where, marked)
    if KCOST[0] in TOUR[n - 1].targets:
        assert marked[0]["inBox"] and "kcost" in marked[0]["classes"], (where, marked)
    else:
        assert not marked[0]["inBox"] and not overlap(marked[0], box), (where, marked, box)
    # which shows the figures the step quotes of it (the core's: tests/test_teaching_browser.py checks them all)
    outlined, figures = page.evaluate(TEXT_AND_LABELS, "." + HIGHLIGHT_CLASS), tour_figures()
    for key in TOUR[n - 1].shows:
        assert shown(figures[key], outlined), (where, key, figures[key], outlined)
    # the plots keep their keys, and the P(gradient) curve runs clear of its label
    for note in ("lines expected, dots realised", "dashed: mean pass rate"):
        assert page.get_by_text(note).first.is_visible(), (where, note)
    for svg in ("#gx-decay", "#gx-outcome"):  # no tick label runs into another, or into a label
        assert page.evaluate(TEXTS_CROSSING, svg) == [], (where, svg)
    curve = page.evaluate(CURVE_LABEL, MIXED_COLOR)
    assert curve["label"]["text"].startswith("P(gradient), K = ")
    assert curve["label"]["bottom"] <= curve["curve"]["top"] + 0.5, (where, curve)


@pytest.mark.parametrize("width, height", [(1920, 1080), (1280, 720), (1024, 768)])
def test_every_step_of_the_tour_is_whole_beside_a_whole_lab(browser, lab_url, width, height):
    context, page, errors = open_sized(browser, lab_url + "?present=true&tour=1", width, height)
    try:
        for n in range(1, len(TOUR) + 1):
            if n > 1:
                page.get_by_role("button", name="Next \u2192").click()
            _wait_step(page, n)
            _check_step(page, n, width, height)
        page.get_by_role("button", name="End tour").click()  # the lab takes its whole window back
        page.wait_for_function("() => !(" + FIND + ")('[data-tour-step]')", timeout=15_000)
        page.wait_for_function("() => getComputedStyle(document.documentElement).getPropertyValue('--present-tour-w')"
                               " === '0px' && getComputedStyle(document.documentElement)"
                               ".getPropertyValue('--present-tour-h') === '0px'", timeout=15_000)
        assert page.get_by_role("link", name="Guided tour").is_visible()
    finally:
        context.close()
    assert errors == []


def test_the_tour_docks_beside_the_lab_on_a_wide_projector_and_above_it_on_a_4_3_one(browser, lab_url):
    """At 1920x1080 the box is a column at the right (the lab narrower, whole); at 1024x768 a band at the top."""
    for (width, height), dock in (((1920, 1080), "right"), ((1024, 768), "top")):
        context, page, errors = open_sized(browser, lab_url + "?present=true&tour=4", width, height)
        try:
            _wait_step(page, 4)
            got = page.evaluate(TOUR_STATE, [HIGHLIGHT_CLASS])
            assert got["box"]["dock"] == dock
            grid = page.evaluate(SHOWN_BOX, "#gx-grid")
            if dock == "right":
                assert got["box"]["right"] >= width - 0.5 and got["box"]["height"] >= height - 1
                assert grid["width"] * grid["height"] >= 0.2 * width * height, grid  # the grid stays large
            else:
                assert got["box"]["top"] <= 0.5 and grid["top"] >= got["box"]["bottom"]
        finally:
            context.close()
        assert errors == []


def test_step_7_shows_the_k_cost_table_with_the_cores_numbers_in_presentation_mode(browser, lab_url):
    n = next(i for i, s in enumerate(TOUR, 1) if KCOST[0] in s.targets)
    context, page, errors = open_sized(browser, lab_url + f"?present=true&tour={n}", 1920, 1080)
    try:
        _wait_step(page, n)
        settings = TOUR[n - 1].settings
        scenario = Scenario(progress=settings["progress"], K=settings["K"])
        view = evaluate(scenario)
        rows = page.evaluate(KCOST_ROWS)
        assert rows is not None
        ks = [int(r[0].split()[0]) for r in rows]
        c = k_cost(view.pass_rate[view.kept], ks, rho=0.0, baseline_K=BASELINE_K)
        for j, r in enumerate(rows):
            assert r[1] == percent(c["useful_share"][j]), r
            assert r[3] == fixed(c["rollouts_per_useful"][j], 1), r
        assert "(now)" in rows[ks.index(settings["K"])][0]
        # the next step takes the table away again
        page.get_by_role("button", name="Next \u2192").click()
        _wait_step(page, n + 1)
        assert page.evaluate(KCOST_ROWS) is None
    finally:
        context.close()
    assert errors == []
