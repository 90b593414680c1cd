"""The served lab in real Chromium, by keyboard and through the accessibility tree, and checked with axe-core.

axe-core is the copy the ``axe-playwright-python`` package ships (test extra), loaded into the page with
``page.add_script_tag``: no download at test time. Rules run: WCAG 2.0 / 2.1 / 2.2, levels A and AA, and axe's
best-practice rules.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grpo_lab.testing.lab_server import PAGE_TEXT, show_plots, wait_readout
from grpo_lab.testing.page import FIND, axe_violations, contrast

pytestmark = [pytest.mark.browser, pytest.mark.slow]


#: JavaScript: the element that has the focus, through shadow roots
FOCUSED = """() => { let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return a; }"""



#: JavaScript: how many help icons (Panel's description "?" and TooltipIcon) the page holds, through shadow roots
HELP_ICONS = """() => { let n = 0; function walk(root) { for (const e of root.querySelectorAll('*')) {
  if (e.matches('.bk-description, .bk-panel-models-widgets-TooltipIcon')) n++;
  if (e.shadowRoot) walk(e.shadowRoot); } } walk(document); return n; }"""


def ready(page) -> None:
    wait_readout(page)
    page.get_by_role("tab", name="Live lab").wait_for(timeout=15_000)  # the page's access fixes are in


def test_axe_finds_no_wcag_aa_or_best_practice_violation_in_any_tab(page, lab_url):
    """WCAG 2.x A/AA and axe's best-practice rules (one main landmark holding all content, a level-one heading,
    headings one level at a time, no empty table header) on every tab, the Live lab's secondary plots built."""
    page.goto(lab_url)
    ready(page)
    show_plots(page)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    tab = page.get_by_role("tab", name="Advantages")
    tab.focus()
    page.keyboard.press("Enter")  # opened by keyboard
    page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    page.get_by_role("tab", name="Advantages").focus()
    page.keyboard.press("ArrowRight")  # the Replay tab: its step control (Panel's Player) is named too
    wait_readout(page, "replay-step", timeout=90_000)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    page.get_by_role("tab", name="Fleet").click()  # the runs ranked (lab.views.fleet): a table of links and sparklines
    page.wait_for_function("() => !!(" + FIND + ")('.fleet-table')", timeout=120_000)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    page.get_by_role("tab", name="Samplers").click()
    page.wait_for_function("() => !!(" + FIND + ")('.samplers-tab')", timeout=60_000)  # built (lab.views.samplers)
    page.wait_for_timeout(2000)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    assert page.console_errors == []


def test_axe_finds_no_violation_in_presentation_mode(page, lab_url):
    page.goto(lab_url + "?present=true")
    ready(page)
    page.wait_for_timeout(500)
    assert axe_violations(page, best_practice=True) == []
    assert page.console_errors == []


def test_tabs_come_first_and_open_by_keyboard_and_every_control_has_a_name(page, lab_url):
    page.goto(lab_url)
    ready(page)
    page.wait_for_timeout(300)
    tree = page.locator("body").aria_snapshot()
    for line in ('tab "Live lab" [selected]', 'tab "Advantages"', 'slider "Training progress t"',
                 'slider "Group size K"', 'slider "Rollout correlation rho"', 'slider "Filter band, low end"',
                 'spinbutton "Prompts"', 'spinbutton "Beta a"', 'spinbutton "Beta b"', 'spinbutton "Seed"',
                 'button "New draw"', 'button "Reset"', 'checkbox "Difficulty filter'):
        assert line in tree, line
    # the Tab order is the screen's: the header's tour link, the tabs, Play and Step, the grid's own controls
    # (progress, K, the filter and its band), then the rest (Pin, rho, the population); all named
    stops = []
    for _ in range(17):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(f"() => {{ const a = ({FOCUSED})(); return a.getAttribute('aria-label') || "
                                   "(a.labels && a.labels[0] ? a.labels[0].textContent : a.textContent).trim(); }"))
    assert stops[:8] == ["guided tour", "Live lab", "Advantages", "Replay", "Fleet", "Samplers", "\u25b6 Play",
                         "Step"], stops
    assert stops[8:10] == ["Training progress t", "Group size K"], stops
    assert stops[10].startswith("Difficulty filter"), stops
    assert stops[11:13] == ["Filter band, low end", "Filter band, high end"], stops
    assert "Rollout correlation rho" in stops[13:], stops
    assert all(s for s in stops), stops
    assert page.evaluate(HELP_ICONS) == 0  # help is text under the controls, not a "?" on a label
    # Right arrow on a tab opens the next one
    page.get_by_role("tab", name="Live lab").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)
    page.wait_for_function("() => true")
    assert 'tab "Advantages" [selected]' in page.locator("body").aria_snapshot()
    page.keyboard.press("ArrowLeft")
    page.get_by_role("tab", name="Live lab", selected=True).wait_for(timeout=15_000)
    assert page.console_errors == []


def test_focus_ring_is_visible_with_3_to_1_contrast(page, lab_url):
    page.goto(lab_url)
    ready(page)
    page.get_by_role("tab", name="Samplers").focus()
    page.keyboard.press("Tab")  # to Play, by keyboard (so :focus-visible applies)
    ring = page.evaluate(f"""() => {{ const a = ({FOCUSED})(); const s = getComputedStyle(a);
      return [a.textContent.trim(), s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; }}""")
    assert ring[0] == "\u25b6 Play"
    assert ring[1] == "solid" and ring[2] >= 2
    rgb = [int(x) for x in ring[3][ring[3].index("(") + 1:ring[3].index(")")].split(",")[:3]]
    assert contrast(rgb, (255, 255, 255)) >= 3.0  # against the page around the button
    assert page.console_errors == []


def test_readouts_are_a_polite_live_region_and_say_which_prompts_they_count(page, lab_url):
    page.goto(lab_url + "?progress=1")
    ready(page)
    assert page.evaluate(f"() => ({FIND})('#gx-readouts').getAttribute('aria-live')") == "polite"
    mean_label = f"() => ({FIND})('.readout-mean-pass').closest('tr').cells[0].innerText.trim()"
    assert page.evaluate(mean_label) == "Mean pass rate, all prompts"
    page.locator("#gx-filter").click()
    page.wait_for_function(f"() => ({mean_label})() === 'Mean pass rate, kept prompts'", timeout=15_000)
    assert page.console_errors == []


def open_advantages(page, lab_url) -> None:
    page.goto(lab_url)
    ready(page)
    page.get_by_role("tab", name="Advantages").click()
    page.wait_for_function(f"() => ({FIND})('.adv-numbers') !== null", timeout=60_000)


TABLE_GAPS = f"""() => {{
  const t = ({FIND})('.adv-numbers');
  const gaps = [];
  for (const row of t.rows) {{
    const boxes = Array.from(row.cells).slice(1).map(c => {{
      const r = document.createRange(); r.selectNodeContents(c); return r.getBoundingClientRect(); }});
    for (let i = 1; i < boxes.length; i++) if (boxes[i].width && boxes[i - 1].width) gaps.push(boxes[i].left - boxes[i - 1].right);
  }}
  return gaps;
}}"""


def test_advantages_numbers_stand_apart_and_the_tab_says_k(page, lab_url):
    open_advantages(page, lab_url)
    gaps = page.evaluate(TABLE_GAPS)
    assert gaps and min(gaps) >= 8, gaps  # "-0.353" and "-0.353" never run together
    text = page.evaluate(PAGE_TEXT)
    assert "Group size K" in text and "Group size G" not in text and "group size G" not in text
    assert "Group size K: rollouts in the group." in text  # help shown as text, not behind an icon on the label
    assert page.evaluate(HELP_ICONS) == 0
    assert page.console_errors == []


def test_typed_rewards_say_so_and_the_sliders_step_aside(page, lab_url):
    open_advantages(page, lab_url)
    source = f"() => ({FIND})('.adv-source').textContent"
    assert "K pass / fail rollouts (the sliders)" in page.evaluate(source)
    k_slider = page.locator(".noUi-target", has=page.get_by_role("slider", name="Group size K"))
    expect(k_slider).not_to_have_attribute("disabled", re.compile(".*"))  # the sliders in use
    box = page.get_by_role("textbox", name="Or type rewards")
    box.fill("1, 0, 0.5")
    box.press("Enter")
    page.wait_for_function(f"() => ({source})().includes('the typed reward vector')", timeout=15_000)
    # the radio and the slider are other models of the same change: they may arrive a message later
    expect(page.get_by_role("radio", name="the typed reward vector")).to_be_checked(timeout=15_000)
    expect(k_slider).to_have_attribute("disabled", re.compile(".*"), timeout=15_000)
    page.get_by_role("radio", name="K pass / fail rollouts (the sliders)").check()
    page.wait_for_function(f"() => ({source})().includes('the sliders')", timeout=15_000)
    assert "K = 8" in page.evaluate(source)  # the sliders' group again, with the typed text still there
    assert page.console_errors == []
