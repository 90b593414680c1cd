"""A student's check (issue 41, docs/teaching.md): each of the eight questions the lab teaches has an answer on the
page; in real Chromium this finds each answer's element and checks its numbers against the core (grpo_lab.sims),
computed here independently of the page. The tour's figures are checked against the element each step outlines."""

from __future__ import annotations

import re
import string

import numpy as np
import pytest

from grpo_lab.doctor_report.samplers_chart import NEVER_TRAINED_WORDS
from grpo_lab.grid.hover import unanimous_notes
from grpo_lab.sims import advantages as adv
from grpo_lab.sims.formatting import fixed, percent, points
from grpo_lab.sims.kcost import k_cost
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.samplers import compare
from grpo_lab.sims.samplers.compare import ORACLES
from grpo_lab.sims.scenario import ALL_PASS, MIXED, Scenario, evaluate
from grpo_lab.sims.sweep import useful_share_curve
from grpo_lab.testing.lab_server import PAGE_TEXT, READ_CLASS, TEXTS_OF_CLASS, show_plots, wait_readout
from grpo_lab.testing.page import FIND
from grpo_lab.testing.tour_check import SAMPLER, TEXT_AND_LABELS, check_step_numbers
from grpo_lab.views.tour import HIGHLIGHT_CLASS, TOUR, step_text, tour_figures

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def text_of(page, cls: str) -> str:
    return " ".join(page.evaluate(TEXTS_OF_CLASS, cls))


def wait_text(page, cls: str, want: str, timeout: float = 60_000) -> str:
    """Wait until the element of class ``cls`` says ``want`` (the page redraws after a pause), then its text."""
    page.wait_for_function(f"want => ({TEXTS_OF_CLASS})('{cls}').join(' ').includes(want)", arg=want, timeout=timeout)
    return text_of(page, cls)


def test_1_what_makes_a_group_useless(page, lab_url):
    """The key names the outcomes; a unanimous cell's own explanation (keyboard or pointer) says why its advantage is
    zero; the readouts count the useless groups as the core does."""
    page.goto(lab_url + "?progress=1")
    wait_readout(page)
    view = evaluate(Scenario(progress=1.0))
    legend = page.evaluate(READ_CLASS, "grpo-legend")
    assert "has a gradient" in legend and "unanimous, zero advantage" in legend, legend
    assert page.evaluate(READ_CLASS, "readout-all-pass") == percent(view.summary["all_pass_share"])
    assert page.evaluate(READ_CLASS, "readout-all-fail") == percent(view.summary["all_fail_share"])
    grid = page.locator("#gx-grid")
    grid.focus()  # the top left cell, the easiest prompts first: the keyboard walks right to an all-pass group
    said = "() => (" + READ_CLASS + ")('gx-cell-said')"
    page.wait_for_function(f"() => ({said})().startsWith('prompt ')", timeout=15_000)
    for _ in range(40):
        text = page.evaluate(said)
        if "all pass" in text:
            break
        grid.press("ArrowRight")
    i = int(re.match(r"prompt (\d+)", text).group(1))
    assert view.outcome[i] == ALL_PASS and "all pass (no gradient)" in text, text
    assert unanimous_notes()["pass"] in text and "A grpo: pass +0.000" in text, text


def test_2_why_training_makes_more_useless_groups(page, lab_url):
    """As t goes from 0 to 1 the mean pass rate rises and the share of groups with a gradient falls: the readouts
    at t = 1 and the decay curve's text, against the core."""
    page.goto(lab_url + "?progress=1")
    wait_readout(page)
    t0, t1 = evaluate(Scenario(progress=0.0)).summary, evaluate(Scenario(progress=1.0)).summary
    assert page.evaluate(READ_CLASS, "readout-mean-pass") == percent(t1["mean_pass_rate"])
    assert page.evaluate(READ_CLASS, "readout-useful") == percent(t1["useful_share_realised"])
    assert t1["mean_pass_rate"] > t0["mean_pass_rate"] and t1["useful_share_realised"] < t0["useful_share_realised"]
    s = Scenario()
    curve = useful_share_curve(s.population(), [0.0, 1.0], s.K, s.rho, None, s.gain)
    want = f"All prompts: {percent(curve['expected'][0])} at t = 0, {percent(curve['expected'][1])} at t = 1"
    page.wait_for_function(f"want => ({TEXT_AND_LABELS})('.gx-plot-decay').includes(want)", arg=want, timeout=60_000)


def test_3_what_the_filter_keeps(page, lab_url):
    page.goto(lab_url + "?progress=0.4&filter=true")
    wait_readout(page)
    sm = evaluate(Scenario(progress=0.4, band=(0.2, 0.8))).summary
    assert page.evaluate(READ_CLASS, "readout-kept") == percent(sm["kept_share"])
    n, kept = sm["n_prompts"], sm["n_kept"]
    wait_text(page, "state-caption", f"The filter removes {n - kept:,} of {n:,} prompts ({(n - kept) * 8:,} rollouts)")
    assert percent(sm["useful_share_realised"]) in text_of(page, "state-caption")


def test_4_how_the_estimators_differ_on_a_group(page, lab_url):
    page.goto(lab_url)
    wait_readout(page)
    page.get_by_role("tab", name="Advantages").click()
    page.wait_for_function(f"({PAGE_TEXT})().includes('dr_grpo')", timeout=60_000)
    r = np.array([1.0] + [0.0] * 7)  # the default group: K = 8, one correct
    for name in adv.ESTIMATORS:
        want = fixed(adv.max_abs_advantage(adv.advantages(r, name)), 3)
        assert page.evaluate(READ_CLASS, f"adv-max-{name}") == want, name
    assert "units of |\u2207p|" in text_of(page, "adv-units-text") and "how far" in text_of(page, "adv-units-text")


def test_5_k_more_useful_rollouts_but_fewer_useful_groups_per_rollout(page, lab_url):
    page.goto(lab_url + "?K=32&progress=1")
    wait_readout(page)
    show_plots(page)
    view = evaluate(Scenario(K=32, progress=1.0))
    c = k_cost(view.pass_rate, [8, 32])
    rollouts, groups = fixed(c["useful_rollouts_per_1000"][1], 0), fixed(c["useful_per_1000_rollouts"][1], 1)
    wait_text(page, "kcost-headline", f"{rollouts} / 32 = {groups}")
    assert page.evaluate(READ_CLASS, "kcost-useful-rollouts") == rollouts
    assert page.evaluate(READ_CLASS, "kcost-useful-groups") == groups
    # the sentence's rollouts are the grid's readout "useful rollouts per 1,000" (expected), and they rise with K
    assert page.evaluate(READ_CLASS, "readout-useful-per-1000-expected") == rollouts
    assert c["useful_rollouts_per_1000"][1] > c["useful_rollouts_per_1000"][0]
    assert c["useful_per_1000_rollouts"][1] < c["useful_per_1000_rollouts"][0]


def test_6_rho_the_correlated_formula_and_its_numbers(page, lab_url):
    page.goto(lab_url + "?rho=0.3&progress=0.5")
    wait_readout(page)
    show_plots(page)
    p = evaluate(Scenario(rho=0.3, progress=0.5)).pass_rate
    s = 1 / 0.3 - 1  # the beta-binomial's products, computed here from the formula the page writes
    i = np.arange(8)[:, None]
    share = np.mean(1 - np.prod((p * s + i) / (s + i), axis=0) - np.prod(((1 - p) * s + i) / (s + i), axis=0))
    formula = wait_text(page, "kcost-formula", "beta-binomial")
    assert f"rho = 0.3" in formula and f"s = 1/rho \u2212 1 = {fixed(s, 2)}" in formula, formula
    assert "P(all pass) = \u220f" in formula and "P(all fail) = \u220f" in formula
    assert "1 \u2212 p" not in formula.split("(at rho = 0")[0].split("P(all fail)")[0]  # not the independent form
    wait_text(page, "kcost-headline", f"At K = 8, {percent(share)} of groups carry a gradient")
    assert percent(k_cost(p, [8], rho=0.3)["useful_share"][0]) == percent(share)


def test_7_jensen_the_gap_in_percentage_points(page, lab_url):
    page.goto(lab_url + "?progress=0.5")
    wait_readout(page)
    show_plots(page)
    sm = evaluate(Scenario(progress=0.5)).summary
    gap = wait_text(page, "jensen-gap", points(sm["d_real"] - sm["d_iid"]))
    assert gap == points(sm["d_real"] - sm["d_iid"]) and gap.endswith("percentage points")
    assert page.evaluate(READ_CLASS, "jensen-real") == percent(sm["d_real"])
    assert page.evaluate(READ_CLASS, "jensen-iid") == percent(sm["d_iid"])
    assert points(sm["d_real"] - sm["d_iid"]) in step_text(4)  # and the tour says it


def test_8_samplers_the_oracle_is_a_bound_dapo_pays_for_discarded_rounds(page, lab_url):
    page.goto(lab_url + "?progress=0.5")
    wait_readout(page)
    page.locator(".bk-tab", has_text="Samplers").first.click()
    out = compare(draw_population(600, 2.0, 3.0, 1302).pass_rates, 8, 0.5, gain=Scenario().gain, band=(0.2, 0.8))
    rows = {r["sampler"]: r for r in out["rows"]}
    verdict = wait_text(page, "samplers-verdict", "At this budget")
    best = max((r for k, r in rows.items() if k != "plain"), key=lambda r: r["useful_per_1000"])
    assert best["sampler"] in ORACLES  # this population's winner is the oracle band ...
    assert "is an oracle" in verdict and "a bound no trainer can reach" in verdict, verdict  # ... said to be a bound
    runnable = max((r for k, r in rows.items() if k != "plain" and k not in ORACLES), key=lambda r: r["useful_per_1000"])
    assert f"{runnable['label']} gives the most ({fixed(runnable['useful_per_1000'], 1)}" in verdict, verdict
    notes = page.evaluate(TEXTS_OF_CLASS, "samplers-note")
    dapo, plain = rows["dapo"], rows["plain"]
    assert notes[0].startswith(f"{dapo['label']} trains on {fixed(dapo['useful_per_1000'], 1)} useful groups per 1,000 "
                               f"rollouts against plain GRPO's {fixed(plain['useful_per_1000'], 1)} because it pays for "
                               "every round it generates"), notes
    assert dapo["useful_per_1000"] < plain["useful_per_1000"]
    assert notes[1] == NEVER_TRAINED_WORDS


@pytest.mark.parametrize("n", range(1, len(TOUR) + 1))
def test_every_number_a_tour_step_quotes_is_what_its_outlined_element_shows(page, lab_url, n):
    """Step n's figures (tour_figures, from the core) are shown by the element it outlines, on screen, at its drain's
    start or after the move its text asks for, and every other number of its text by that element or the controls it
    names (grpo_lab.testing.tour_check)."""
    step, text, figures = TOUR[n - 1], step_text(n), tour_figures()
    keys = {f for _, f, _, _ in string.Formatter().parse(step.text) if f}
    assert keys == {*step.shows, *step.shows_first, *(step.move.shows if step.move else ())}, n  # each one checked
    if step.shows_first:
        page.add_init_script(SAMPLER)
    page.goto(f"{lab_url}?tour={n}")
    page.wait_for_function(f"() => ({READ_CLASS})('tour-step') && ({READ_CLASS})('tour-step').includes('{step.title}')",
                           timeout=60_000)
    page.wait_for_function(f"() => !!({FIND})('.{HIGHLIGHT_CLASS}')", timeout=60_000)
    if step.drain:
        page.wait_for_function(f"() => ({FIND})('#gx-progress-out').textContent === '1.00'", timeout=60_000)
    check_step_numbers(page, step, text, figures, HIGHLIGHT_CLASS)


def test_every_tour_figure_is_the_cores_computed_here_from_the_prompts():
    """Each figure the tour quotes against this test's own arithmetic on the core's prompts (their pass rates,
    outcomes and the filter's kept set): shares of mixed groups, 1 - p^K - (1 - p)^K averaged or at the mean, the
    K-cost table's K / U and 1000 U / K."""
    def at(**kw):
        return evaluate(Scenario(**kw))

    def useful(p, K):
        return 1 - p ** K - (1 - p) ** K

    t0, t1, k32, half = at(progress=0.0), at(progress=1.0), at(progress=1.0, K=32), at(progress=0.5)
    f04, band = at(progress=0.4, band=(0.2, 0.8)), at(progress=1.0, band=(0.2, 0.8))
    m, p = half.pass_rate.mean(), half.pass_rate
    want = {"useful_t0": percent(np.mean(t0.outcome == MIXED)), "useful_t1": percent(np.mean(t1.outcome == MIXED)),
            "useful_k32": percent(np.mean(k32.outcome == MIXED)), "mean_t05": percent(m),
            "iid_useful_t05": percent(useful(m, 8)), "real_useful_t05": percent(np.mean(useful(p, 8))),
            "jensen_t05": points(useful(m, 8) - np.mean(useful(p, 8))),
            "kept_t04": percent(np.mean(f04.kept)), "kept_t1": percent(np.mean(band.kept)),
            "useful_band_t1": percent(np.mean(useful(band.pass_rate[band.kept], 8))),
            "n_kept_t1": f"{int(band.kept.sum()):,}", "n_prompts": f"{band.kept.size:,}"}
    for K in (8, 32):
        u = np.mean(useful(t1.pass_rate, K))
        want |= {f"share_k{K}": percent(u), f"rpu_k{K}": fixed(K / u, 1), f"ug_k{K}": fixed(1000 * u / K, 1)}
    assert tour_figures() == want
