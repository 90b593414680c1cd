"""The run doctor in the lab: the Replay tab's Diagnose section and the link that opens the fitted
population in the live lab (its a, b and K reach the lab's state through the URL)."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs

import numpy as np
import pytest

from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, list_runs
from grpo_lab.replay.diagnose_view import DiagnoseView
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.record import RunRecord, read_record, write_record
from grpo_lab.state import sanitize

EVIL = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def record(n=400, label="q", K=4, seed=0):
    rng = np.random.default_rng(seed)
    P = 50
    pid = rng.integers(0, P, n)
    rewards = (rng.random((n, K)) < rng.beta(0.8, 0.8, P)[pid, None]).astype(float)
    return RunRecord(meta={"name": label, "n_prompts": P, "prompt_labels": [label] * P},
                     groups={"step": np.repeat(np.arange(n // 20), 20).astype(np.int64), "prompt_id": pid,
                             "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
                             "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(n, bool)})


def link_of(report: str) -> str:
    m = re.search(r'class="doctor-lab-link" href="([^"]*)"', report)
    assert m, "no lab link in the report"
    return unescape(m.group(1))


def test_diagnose_section_on_a_shipped_run_links_the_fitted_beta():
    path = next(iter(list_runs(DEFAULT_RUNS_DIR).values()))
    rec = read_record(path)
    v = DiagnoseView()
    v.set_record(rec)
    assert not v.button.disabled
    v.render()
    assert not v.notice.visible and "Run doctor" in v.report.object
    href = link_of(v.report.object)
    assert href.startswith("?")
    d = diagnose(rec)
    values, notices = sanitize(parse_qs(href[1:]))
    lo, hi = 0.05, 100.0  # the lab's Beta range (it clamps with a notice outside it)
    assert values["a"] == pytest.approx(min(max(d["fit"]["alpha"], lo), hi), rel=1e-3)
    assert values["b"] == pytest.approx(min(max(d["fit"]["beta"], lo), hi), rel=1e-3)
    assert values["K"] == d["run"]["K"]


def test_record_text_is_escaped():
    v = DiagnoseView()
    v.set_record(record(label=EVIL))
    v.render()
    assert "<script>alert" not in v.report.object and "<img src=x" not in v.report.object
    assert "&lt;script&gt;" in v.report.object


def test_a_run_the_doctor_cannot_fit_is_a_notice():
    v = DiagnoseView()
    v.set_record(record(n=20, label=EVIL))
    v.render()  # no exception: the page keeps working
    assert v.notice.visible and "too few" in v.notice.object and v.report.object == ""
    assert "<script" not in v.notice.object


def test_scalars_only_record_gets_the_doctor_on_scalars_or_says_what_it_lacks():
    from grpo_lab.sims.doctor.scalars_sim import simulate_shares

    rec = record()
    rec.groups = {k: val[:0] for k, val in rec.groups.items()}
    rec.steps = {"step": np.arange(1, 11), "frac_reward_zero_std": np.full(10, 0.4)}
    rec.meta["num_generations"] = 4
    v = DiagnoseView()
    v.set_record(rec)
    assert not v.button.disabled
    v.render()  # the record does not say its groups per step: one line, no report
    assert v.notice.visible and "groups per step" in v.notice.object and v.report.object == ""
    v.set_record(simulate_shares(1.5, 2.0, 0.02, 8, 30, 64, seed=0))
    v.render()
    assert not v.notice.visible and "Run doctor (scalars)" in v.report.object and "Needs the groups" in v.report.object
    assert "doctor-lab-link" in v.report.object


def test_replay_view_hands_the_chosen_run_to_the_doctor(tmp_path):
    write_record(tmp_path / "one", record())
    view = ReplayView(runs_root=tmp_path)
    assert view.diagnose._record is not None and not view.diagnose.button.disabled
    view.diagnose.render()
    assert "doctor-lab-link" in view.diagnose.report.object


def test_browser_diagnose_then_open_the_population_in_the_lab(page, tmp_path):
    """Real Chromium: Replay tab -> Diagnose this run -> the link opens the live lab on the fitted Beta and K."""
    from grpo_lab.testing.lab_server import serve

    from grpo_lab.sims.formatting import percent
    from grpo_lab.sims.scenario import Scenario, evaluate

    write_record(tmp_path / "runs" / "mine", record(label=EVIL, K=8, n=800))
    with serve(env={"GRPO_LAB_RUNS": str(tmp_path / "runs")}) as url:
        page.goto(url)
        page.get_by_text("Replay", exact=True).click()
        # GRPO_LAB_RUNS adds to the shipped runs (the tab opens on the featured one): choose ours
        page.locator(".replay-run select").select_option("mine")
        # the server swaps the run before the button acts on it (a click during the swap diagnoses the old run,
        # whose report the swap then discards): wait for the new run's line in the tolerance note
        page.locator("b", has_text=re.compile("^mine$")).first.wait_for(timeout=30_000)
        page.locator(".replay-diagnose-button button").click()
        link = page.locator(".doctor-lab-link")
        link.wait_for(timeout=60_000)
        href = link.get_attribute("href")
        assert EVIL in page.locator(".doctor-report h1").inner_text()  # the run's name shown as text, not run
        query = parse_qs(href.lstrip("?"))
        a, b, K = float(query["a"][0]), float(query["b"][0]), int(query["K"][0])
        assert K == 8
        page.goto(url + href)
        want = percent(evaluate(Scenario(a=min(max(a, 0.05), 100.0), b=min(max(b, 0.05), 100.0), K=K))
                       .summary["useful_share_realised"])
        page.wait_for_function(
            "(w) => { const f = (r) => { const e = r.querySelector('.readout-useful'); if (e) return e;"
            " for (const n of r.querySelectorAll('*')) if (n.shadowRoot) { const g = f(n.shadowRoot); if (g) return g; }"
            " return null; }; const e = f(document); return e && e.textContent.trim() === w; }", arg=want,
            timeout=30_000)
    assert not [e for e in page.console_errors if "alert" in e]
