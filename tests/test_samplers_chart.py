"""The samplers' picture and words (lab/doctor_report/samplers_chart.py) on hand-made sections: the verdict's three
cases, the expiry in words, the chart's bars proportional to the values with whiskers where an interval exists, and
every label escaped."""

from __future__ import annotations

import re

import pytest

from grpo_lab.doctor_report.samplers_chart import (NEVER_TRAINED_WORDS, Z95, about_html, expiry_words, samplers_svg,
                                                   verdict, verdict_notes)

SETTINGS = {"K": 8, "prompts": 600, "epochs": 4.0, "budget_rollouts": 19200.0, "batch": 32, "gen_batch": 32,
            "max_num_gen_batches": 10, "band": [0.2, 0.8], "n_retire": 3, "p_easy": 0.5, "p_hard": 0.5,
            "pods_factor": 2, "k_max_factor": 2, "threshold": 0.5}


def section(values: dict[str, tuple], labels: dict[str, str] | None = None) -> dict:
    """{sampler: (useful_per_1000, never_trained[, mc_se of useful])} as compare() lays a section out."""
    rows = []
    for key, v in values.items():
        row = {"sampler": key, "label": (labels or {}).get(key, key), "useful_per_1000": v[0], "never_trained": v[1],
               "details": {}}
        if len(v) > 2:
            row["mc_se"] = {"useful_per_1000": v[2]}
        rows.append(row)
    return {"settings": SETTINGS, "rows": rows}


def test_verdict_names_the_best_sampler_and_its_cost():
    s = section({"plain": (100.0, 0.01), "band": (130.0, 0.25), "pods": (60.0, 0.01)},
                {"plain": "plain GRPO", "band": "pass-rate band", "pods": "PODS"})
    assert verdict(s) == ("At this budget (4 epochs of plain GRPO, 19,200 rollouts), pass-rate band gives 30% more "
                          "useful groups than plain GRPO (130.0 vs 100.0 per 1,000 rollouts), at the cost of never "
                          "training on 25.0% of prompts (plain GRPO: 1.0%). Pass-rate band is an oracle: it reads each "
                          "prompt's true pass rate, which no trainer knows, so its figure is a bound no trainer can "
                          "reach; of the samplers a trainer can run, PODS gives the most (60.0 per 1,000 rollouts).")


def test_verdict_when_none_beats_plain_and_when_the_gain_is_simulation_noise():
    none = verdict(section({"plain": (100.0, 0.01), "pods": (60.0, 0.01)}))
    assert "no sampler gives more useful groups per 1,000 rollouts than plain GRPO (100.0)" in none
    # a simulated sampler 1.0 above plain with a Monte Carlo SE of 1.0: its 95% interval reaches plain's value
    close = verdict(section({"plain": (100.0, 0.01), "greso": (101.0, 0.02, 1.0)}))
    assert "about as many useful groups as plain GRPO (101.0 vs 100.0" in close and "% more" not in close
    assert 1.0 - Z95 * 1.0 < 0  # the premise: the interval's low end lies below plain's value
    clear = verdict(section({"plain": (100.0, 0.01), "greso": (110.0, 0.02, 1.0)}))
    assert "10% more useful groups" in clear


def test_verdict_notes_say_why_dapo_costs_more_and_what_never_trained_counts():
    s = section({"plain": (100.0, 0.01), "dapo": (62.5, 0.1)}, {"plain": "plain GRPO", "dapo": "DAPO dynamic sampling"})
    s["rows"][1]["details"] = {"rounds_expected": 2.0}
    dapo, never = verdict_notes(s)
    assert dapo == ("DAPO dynamic sampling trains on 62.5 useful groups per 1,000 rollouts against plain GRPO's 100.0 "
                    "because it pays for every round it generates (about 2.0 rounds of 32 prompts for each step of 32 "
                    "groups) and discards the groups without a gradient and the useful groups past the step's 32: "
                    "those rollouts are paid for and never trained on.")
    assert never == NEVER_TRAINED_WORDS and "Never trained" in never
    assert verdict_notes(section({"plain": (100.0, 0.01)})) == [NEVER_TRAINED_WORDS]  # no DAPO row: no DAPO sentence


@pytest.mark.parametrize("t,steps,said", [
    (0.0, None, "already below"), (None, None, "beyond the run"), (0.5612, None, "at t = 0.56"),
    (1.306, None, "beyond the run"), (0.5, 200, "after 100 steps"), (7.595, 200, "beyond the run (1,519 steps)"),
    (None, 200, "beyond the run"), (0.0, 200, "already below")])
def test_expiry_in_words(t, steps, said):
    assert expiry_words(t, steps) == said


def test_chart_bars_are_proportional_whiskers_where_an_interval_exists_and_labels_escaped():
    evil = "<script>alert(1)</script>"
    s = section({"plain": (100.0, 0.1), "greso": (150.0, 0.3, 2.0), "dapo": (50.0, float("nan"))},
                {"plain": "plain GRPO", "greso": evil, "dapo": "DAPO"})
    svg = samplers_svg(s)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', svg)]
    useful, never = widths[:3], widths[3:]  # the NaN share has no bar
    assert useful[1] / useful[0] == pytest.approx(1.5, rel=1e-3) and useful[2] / useful[0] == pytest.approx(0.5, rel=1e-3)
    assert len(never) == 2 and never[1] / never[0] == pytest.approx(3.0, rel=1e-3)
    assert svg.count('class="samplers-interval"') == 1  # greso's useful groups only (its share has no SE here)
    assert "95% Monte Carlo intervals" in svg
    # the doctor's bootstrap intervals, where a row carries them, are drawn and said so
    s["rows"][0]["interval"] = {"useful_per_1000": [95.0, 105.0], "never_trained": [0.08, 0.12]}
    svg = samplers_svg(s)
    assert svg.count('class="samplers-interval"') == 3 and "the fit's bootstrap populations" in svg


def test_settings_in_words_link_the_papers_only_where_asked():
    s = section({"plain": (100.0, 0.01), "greso": (101.0, 0.02), "pods": (60.0, 0.01)})
    linked, plain = about_html(s), about_html(s, links=False)
    assert linked.count("<a href='https://arxiv.org/abs/") == 3 and "href" not in plain
    assert "arXiv 2506.02177" in plain and "1 - 0.5^z after all-pass" in plain and "16 rollouts generated" in plain
