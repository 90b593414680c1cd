"""`grpo-lab samplers` (table, JSON, bad input: one line, exit 2), the doctor's "Samplers" section and JSON key
on a shipped run, and the lab's Samplers tab built lazily from the session's LabState (no browser)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, list_runs
from grpo_lab.sims.outcomes import p_useful
from grpo_lab.sims.population import degeneracy_real, draw_population
from grpo_lab.sims.samplers import SAMPLERS, beta_pass_rates


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's own errors (the CLI's Parser: one line, status 2)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_table_and_json(capsys):
    code, out, err = run(capsys, "samplers", "--a", "2", "--b", "3", "--K", "8", "--n-prompts", "400", "--steps", "100")
    assert code == 0, err
    lines = out.splitlines()
    for label, _ in SAMPLERS.values():
        assert any(line.strip().startswith(label) for line in lines)
    code, out, err = run(capsys, "samplers", "--a", "2", "--b", "3", "--K", "8", "--n-prompts", "400", "--json")
    d = json.loads(out)
    p = draw_population(400, 2, 3).pass_rates
    plain = d["rows"][0]
    assert plain["sampler"] == "plain" and plain["useful_per_1000"] == pytest.approx(
        1000 * (1 - degeneracy_real(p, 8)) / 8, rel=1e-12)
    plain_text = next(line for line in lines if line.strip().startswith("plain GRPO"))
    assert f"{plain['useful_per_1000']:.1f}" in plain_text


@pytest.mark.parametrize("argv", [
    ["--K", "1"], ["--band", "0.9", "0.1"], ["--a", "-1"], ["--epochs", "nan"], ["--p-easy", "1.5"],
    ["--max-num-gen-batches", "-2"], ["--n-prompts", "200000"], ["--steps", "0"], ["--progress", "2"],
    ["--batch", "x"], ["--pods-factor", "1"], ["--threshold", "1"],
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    code, out, err = run(capsys, "samplers", *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_doctor_report_and_json_have_the_samplers_section(capsys, tmp_path):
    runs = list_runs(DEFAULT_RUNS_DIR)
    name, path = next(iter(runs.items()))
    code, out, err = run(capsys, "diagnose", path, "--json")
    assert code == 0, err
    d = json.loads(out)
    s = d["samplers"]
    K = d["run"]["K"]
    assert [r["sampler"] for r in s["rows"]] == list(SAMPLERS)
    assert s["settings"]["K"] == K and s["settings"]["prompts"] == min(d["run"]["prompts"], 20_000)
    assert s["settings"]["batch"] == d["run"]["batch_groups"] and s["settings"]["steps"] == d["run"]["steps"]
    # plain GRPO on the fitted population: the effective rate at the run's K, as the what-if table has it
    pop = [(w, a, b) for w, a, b in s["population"]]
    p = beta_pass_rates(pop if len(pop) > 1 else (pop[0][1], pop[0][2]), s["settings"]["prompts"])
    assert s["rows"][0]["useful_per_1000"] == pytest.approx(1000 * float(np.mean(p_useful(p, K))) / K, rel=1e-12)
    code, out, err = run(capsys, "diagnose", path, "--html", tmp_path / "r.html")
    assert "samplers at an equal rollout budget" in out and "Knapsack allocation" in out
    page = (tmp_path / "r.html").read_text()
    section = page[page.index("<h2>Samplers side by side</h2>"):]
    assert section.count("<tr>") >= 1 + len(SAMPLERS) and f"<td>{s['rows'][0]['useful_per_1000']:.1f} [" in section  # its interval follows


def test_samplers_tab_is_lazy_and_follows_the_lab_state():
    from grpo_lab.app import TABS, Session
    from grpo_lab.state import AdvantageState, LabState, PlayState
    from grpo_lab.views.samplers import SamplersView, samplers_for

    assert [t for t, _ in TABS][-1] == "Samplers"
    lab = LabState(n_prompts=200, K=6)
    view = SamplersView(lab)
    first = view.table.object
    assert "plain GRPO" in first and "K = 6" in first
    lab.progress = 0.5
    assert view.table.object != first and "at training progress t = 0.5" in view.table.object
    rows = samplers_for(lab)["rows"]
    assert f"{rows[0]['useful_per_1000']:.1f}" in view.table.object
    lab.a = 0.05  # still valid; a bound the core accepts
    assert "plain GRPO" in view.table.object
    lab.K = 1  # the lab allows K = 1; no group of one rollout is useful: a notice, and the page keeps running
    assert "samplers-notice" in view.table.object and "K must be at least 2" in view.table.object
    lab.K = 4
    assert "plain GRPO" in view.table.object
    built = TABS[-1][1](Session(LabState(), PlayState(), AdvantageState()))
    assert "samplers-tab" in built.css_classes
