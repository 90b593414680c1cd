"""The Samplers tab in real Chromium: opened, it shows the core's table for the page's population, its chart and
a one-sentence verdict; it follows a control change (its K slider, moved with the keyboard); it is not built
before it is opened.

Expected rows come from ``grpo_lab.sims.samplers.compare`` on the drawn population, formatted by
``grpo_lab.doctor_report.samplers.table_rows`` (the report's formatting), never from the view's code; the
verdict's figures are recomputed here from ``compare``'s numbers.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, wait_readout
from grpo_lab.testing.page import FIND, axe_violations  # FIND: the first match, through shadow roots
from grpo_lab.doctor_report.samplers import HEAD, table_rows
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.samplers import compare

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TABLE_ROWS = f"""() => {{
  const t = ({FIND})('.samplers-table');
  if (!t) return null;
  return Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.cells).map(c => c.textContent.trim()));
}}"""


def core_rows(n, a, b, seed, K, t, band=(0.2, 0.8)):
    out = compare(draw_population(n, a, b, seed).pass_rates, K, t, band=band)
    return [row[:5] for row in [HEAD, *table_rows(out)]]  # the shift is not shown: no run length


def check_verdict(text: str, out: dict) -> None:
    """The verdict names the sampler with the most useful groups per 1,000 rollouts, its gain over plain GRPO
    and its never-trained share, all recomputed from ``out``."""
    rows = {r["sampler"]: r for r in out["rows"]}
    plain = rows.pop("plain")
    best = max(rows.values(), key=lambda r: r["useful_per_1000"])
    assert best["useful_per_1000"] > plain["useful_per_1000"]  # the population chosen has a winner
    assert text.startswith(f"At this budget ({out['settings']['epochs']:g} epochs of plain GRPO"), text
    assert f", {best['label']} gives " in text, text
    se = best["details"].get("useful_per_1000_se")
    if se is None or best["useful_per_1000"] - 1.96 * se > plain["useful_per_1000"]:
        assert f"{percent(best['useful_per_1000'] / plain['useful_per_1000'] - 1, 0)} more useful groups" in text, text
    assert f"never training on {percent(best['never_trained'])} of prompts" in text, text


def check_chart(page, out: dict) -> None:
    """The chart: a bar per sampler in each panel, bars ordered as the core's values; whiskers on the simulated ones."""
    bars = page.evaluate(f"() => Array.from(({FIND})('.samplers-chart').querySelectorAll('rect'))"
                         ".map(r => parseFloat(r.getAttribute('width')))")
    n = len(out["rows"])
    assert len(bars) == 2 * n
    for got, key in ((bars[:n], "useful_per_1000"), (bars[n:], "never_trained")):
        vals = [r[key] for r in out["rows"]]
        ratios = [g / v for g, v in zip(got, vals) if v > 0]
        assert max(ratios) == pytest.approx(min(ratios), rel=0.02), (key, got, vals)  # bar length proportional
    whiskers = page.evaluate(f"() => ({FIND})('.samplers-chart').querySelectorAll('.samplers-interval').length")
    simulated = sum(f"{k}_se" in r["details"] for r in out["rows"] for k in ("useful_per_1000", "never_trained"))
    assert whiskers == simulated >= 3


def wait_rows(page, want, timeout=60_000):
    page.wait_for_function(f"want => JSON.stringify(({TABLE_ROWS})()) === JSON.stringify(want)", arg=want,
                           timeout=timeout)
    return page.evaluate(TABLE_ROWS)


def test_samplers_tab_shows_the_core_table_and_follows_k(page, lab_url):
    page.goto(f"{lab_url}?n_prompts=300&a=1.5&b=2&K=6&progress=0.3")
    wait_readout(page)
    assert page.evaluate(TABLE_ROWS) is None  # not built before it is opened
    page.locator(".bk-tab", has_text="Samplers").first.click()
    want = core_rows(300, 1.5, 2.0, 1302, 6, 0.3)
    assert len(want) == 8 and want[1][0] == "plain GRPO" and want[0][-1] == "expires"
    assert wait_rows(page, want) == want
    out = compare(draw_population(300, 1.5, 2.0, 1302).pass_rates, 6, 0.3)
    check_verdict(page.evaluate(READ_CLASS, "samplers-verdict"), out)
    check_chart(page, out)
    # expiry in words: never a t past the slider's end (1)
    for row, r in zip(want[1:], out["rows"]):
        t = r["expiry_t"]
        assert row[4] == ("already below" if t == 0 else "beyond the run" if t is None or t > 1 else
                          f"at t = {fixed(t, 2)}"), (row, t)
    # each sampler's settings in words, with its paper's link (not followed: the lab makes no outside request)
    links = page.evaluate(f"() => Array.from(({FIND})('.samplers-about').querySelectorAll('a')).map(a => a.href)")
    assert len(links) == 7 and all(x.startswith("https://arxiv.org/abs/") for x in links), links
    assert "GRESO p_e" not in page.evaluate(READ_CLASS, "samplers-about")
    assert axe_violations(page) == []  # WCAG A/AA: the chart, verdict, table and links
    # one step right on the K slider of this tab: K = 7, the table follows
    handle = page.locator(".samplers-controls .noUi-handle").nth(1)
    handle.focus()
    handle.press("ArrowRight")
    want7 = core_rows(300, 1.5, 2.0, 1302, 7, 0.3)
    assert want7 != want
    assert wait_rows(page, want7) == want7
    assert page.console_errors == []


def test_at_k_2_the_tab_gives_no_expiry_and_says_why(page, lab_url):
    """At K = 2 no sampler's rate reaches the threshold of 0.5 (a group is mixed with chance at most 1/2): the tab
    shows "-" for every expiry, as the core's table does, and says why under it, not "already below" seven times."""
    page.goto(f"{lab_url}?n_prompts=300&a=1.5&b=2&K=2&progress=0.3")
    wait_readout(page)
    page.locator(".bk-tab", has_text="Samplers").first.click()
    want = core_rows(300, 1.5, 2.0, 1302, 2, 0.3)
    assert [row[4] for row in want[1:]] == ["-"] * 7
    assert wait_rows(page, want) == want
    about = page.evaluate(READ_CLASS, "samplers-expiry")
    assert "none here: groups of K = 2 give at most 0.5 useful groups per K rollouts" in about, about
    assert page.console_errors == []
