"""The served lab in real Chromium: the K question answered for the current population, and Play moving it.

Expected numbers come from ``sims.scenario.evaluate`` and ``sims.kcost.k_cost`` (the core), printed with
``sims.formatting``; never from the lab's own view code.
"""

from __future__ import annotations

import pytest

from grpo_lab.testing.lab_server import READ_CLASS, show_plots, wait_readout
from grpo_lab.testing.page import FIND
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.kcost import k_cost
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TABLE_ROWS = f"""() => {{
  const t = ({FIND})('.kcost-table');
  if (!t) return null;
  return Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.cells).map(c => c.textContent.trim()));
}}"""


def wait_kcost(page, K: int, progress: float) -> list[list[str]]:
    """The K-cost table's rows once it shows the row of the current K for this progress (header first)."""
    show_plots(page)  # the table is drawn with the plots, once the visitor gets to them
    page.wait_for_function(f"() => {{ const r = ({TABLE_ROWS})(); return r && r.some(x => x[0] === '{K} (now)'); }}",
                           timeout=30_000)
    return page.evaluate(TABLE_ROWS)


def core_rows(s: Scenario) -> list[list[str]]:
    v = evaluate(s)
    Ks = sorted({4, 8, 16, 32, 64, s.K})
    c = k_cost(v.pass_rate[v.kept], Ks, rho=s.rho, baseline_K=4)
    return [[f"{K}{' (now)' if K == s.K else ''}", percent(c["useful_share"][i]),
             fixed(c["useful_per_1000_rollouts"][i], 1), fixed(c["rollouts_per_useful"][i], 1),
             fixed(c["cost_vs_baseline"][i], 2) + "\u00d7"] for i, K in enumerate(Ks)]


@pytest.mark.parametrize("query, scenario", [
    ("progress=1&K=64", Scenario(progress=1.0, K=64)),
    ("progress=0.5&K=12&filter=true", Scenario(progress=0.5, K=12, band=(0.2, 0.8))),
])
def test_kcost_table_answers_the_k_question_for_this_population(page, lab_url, query, scenario):
    """Useful groups per 1,000 rollouts and rollouts per useful group across K, cost against a named K = 4."""
    page.goto(f"{lab_url}?{query}")
    wait_readout(page)
    rows = wait_kcost(page, scenario.K, scenario.progress)
    assert rows[0] == ["K", "groups with a gradient", "useful groups per 1,000 rollouts", "rollouts per useful group",
                       "cost per useful group vs K = 4"]
    assert rows[1:] == core_rows(scenario)
    headline = page.evaluate(READ_CLASS, "kcost-headline")
    i = [r[0] for r in rows[1:]].index(f"{scenario.K} (now)")
    want = core_rows(scenario)[i]
    assert f"{want[2]} useful groups per 1,000 rollouts" in headline
    assert f"{want[4]} the cost at K = 4" in headline
    if scenario.K == 64:  # the share alone reads nearly 100%: the cost says bigger K is not free
        assert float(want[1].rstrip("%")) > 95 and float(want[4].rstrip("\u00d7")) > 5
    counted = page.evaluate(READ_CLASS, "kcost-counted")
    sm = evaluate(scenario).summary
    n, kept, K = sm["n_prompts"], sm["n_kept"], scenario.K
    if scenario.band is None:
        assert f"all {n:,} prompts ({n * K:,} rollouts per step at K = {K})" in counted
    else:  # what the filter keeps, in prompts and in rollouts
        assert kept < n
        assert f"keeps {kept:,} of {n:,} prompts ({percent(kept / n)})" in counted
        assert f"{kept * K:,} of {n * K:,} rollouts per step" in counted
    assert page.console_errors == []


def test_play_moves_the_plots_and_tables_while_it_plays(page, lab_url):
    """During Play the K-cost table and the Jensen text follow the animation (not only once it stops)."""
    page.goto(lab_url)
    wait_readout(page)
    rows0 = wait_kcost(page, 8, 0.0)
    jensen0 = page.evaluate(READ_CLASS, "jensen-caption")
    page.locator("button", has_text="Play").first.click()
    # changed while the animation is still short of its end (Play runs t from 0 to 1)
    page.wait_for_function(
        f"""([rows0, jensen0]) => {{
          const out = ({FIND})('#gx-progress-out');
          const t = out ? Number(out.textContent) : 1;
          const j = ({FIND})('.jensen-caption');
          return t > 0 && t < 0.8 && JSON.stringify(({TABLE_ROWS})()) !== JSON.stringify(rows0)
                 && j && j.textContent.trim() !== jensen0;
        }}""", arg=[rows0, jensen0], timeout=30_000, polling=50)
    # and once it stops at t = 1 the table is the core's for t = 1
    page.wait_for_function(f"() => {{ const o = ({FIND})('#gx-progress-out'); return o && Number(o.textContent) === 1; }}",
                           timeout=60_000)
    page.wait_for_function(f"want => JSON.stringify(({TABLE_ROWS})().slice(1)) === JSON.stringify(want)",
                           arg=core_rows(Scenario(progress=1.0)), timeout=15_000)
    assert page.console_errors == []


def test_caption_says_what_the_view_shows_and_follows_the_controls(page, lab_url):
    """'41.7% are all-pass: 2,000 rollouts bought nothing': counted here from the core's realised groups."""
    from grpo_lab.sims.scenario import ALL_PASS, MIXED

    def want(s: Scenario) -> list[str]:
        v = evaluate(s)
        n = int(v.kept.sum())
        mixed, all_pass = int(((v.outcome == MIXED) & v.kept).sum()), int(((v.outcome == ALL_PASS) & v.kept).sum())
        return [f"At t = {s.progress:.2f} with K = {s.K}, {percent(mixed / n)} of groups carry a gradient.",
                f"{percent(all_pass / n)} are all-pass: {all_pass * s.K:,} rollouts bought nothing."]

    caption = f"() => {{ const c = ({FIND})('.state-caption'); return c ? c.textContent : ''; }}"
    page.goto(f"{lab_url}?progress=1")
    wait_readout(page)
    for line in want(Scenario(progress=1.0)):
        page.wait_for_function(f"line => ({caption})().includes(line)", arg=line, timeout=15_000)
    handle = page.locator("#gx-K")
    handle.focus()
    handle.press("ArrowRight")  # K = 9: the caption follows once the control rests
    for line in want(Scenario(progress=1.0, K=9)):
        page.wait_for_function(f"line => ({caption})().includes(line)", arg=line, timeout=15_000)
    assert page.console_errors == []
