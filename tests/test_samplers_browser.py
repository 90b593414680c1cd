"""The Samplers tab in real Chromium: opened, it shows the core's table for the page's population; it follows
a control change (its K slider, moved with the keyboard); it is not built before it is opened.

Expected rows come from ``grpo_lab.sims.samplers.compare`` on the drawn population, formatted by
``grpo_lab.doctor_report.samplers.table_rows`` (the report's formatting), never from the view's code.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, serve, wait_readout
from grpo_lab.testing.page import FIND  # the first element matching a selector, through shadow roots
from grpo_lab.doctor_report.samplers import HEAD, table_rows
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
    return [row[:6] for row in [HEAD, *table_rows(out)]]  # the shift in steps is not shown: no run length


def wait_rows(page, want, timeout=60_000):
    page.wait_for_function(f"want => JSON.stringify(({TABLE_ROWS})()) === JSON.stringify(want)", arg=want,
                           timeout=timeout)
    return page.evaluate(TABLE_ROWS)


def test_samplers_tab_shows_the_core_table_and_follows_k(page):
    with serve() as url:
        page.goto(f"{url}?n_prompts=300&a=1.5&b=2&K=6&progress=0.3")
        wait_readout(page)
        assert page.evaluate(TABLE_ROWS) is None  # not built before it is opened
        page.locator(".bk-tab", has_text="Samplers").first.click()
        want = core_rows(300, 1.5, 2.0, 1302, 6, 0.3)
        assert len(want) == 8 and want[1][0] == "plain GRPO" and want[0][-1] == "shift (t)"
        assert wait_rows(page, want) == want
        settings = page.evaluate(READ_CLASS, "samplers-settings")
        assert "300 prompts, K = 6" in settings and "at t = 0.3" in settings
        # one step right on the K slider of this tab: K = 7, the table follows
        handle = page.locator(".samplers-controls .noUi-handle").nth(1)
        handle.focus()
        handle.press("ArrowRight")
        want7 = core_rows(300, 1.5, 2.0, 1302, 7, 0.3)
        assert want7 != want
        assert wait_rows(page, want7) == want7
        assert page.console_errors == []
