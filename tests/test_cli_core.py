"""The command-line contract of the core subcommands: JSON keys, values from the core, exit statuses."""

from __future__ import annotations

import json

import pytest

from grpo_lab.cli import main
from grpo_lab.sims.advantages import advantages, coverage, expected_gradient_coef
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.scenario import Scenario, evaluate


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_json(capsys):
    code, out, _ = run(capsys, "table", "--K", "4", "8", "--p", "0.5", "0.9", "1", "--json")
    rows = json.loads(out)["rows"]
    assert code == 0 and len(rows) == 6
    keys = {"p", "K", "rho", "p_all_pass", "p_all_fail", "p_unanimous", "p_useful", "rollouts_per_useful"}
    assert all(set(r) == keys for r in rows)
    r = next(r for r in rows if r["p"] == 0.9 and r["K"] == 8)
    assert r["p_useful"] == pytest.approx(1 - 0.9**8 - 0.1**8)
    assert next(r for r in rows if r["p"] == 1)["rollouts_per_useful"] is None  # null where nothing is useful


def test_table_text(capsys):
    code, out, _ = run(capsys, "table", "--K", "8", "--p", "0.99")
    assert code == 0 and "0.077255" in out  # p_useful, fixed with 6 decimals (one format per column)


@pytest.mark.parametrize("argv", [
    [], ["--progress", "1"], ["--progress", "1", "--filter", "0.2", "0.8"],
    ["--K", "16", "--rho", "0.3", "--seed", "4", "--n-prompts", "900", "--a", "1", "--b", "1", "--progress", "0.4"],
])
def test_population_json_equals_core(capsys, argv):
    code, out, _ = run(capsys, "population", *argv, "--json")
    got = json.loads(out)
    p = got["parameters"]
    view = evaluate(Scenario(n_prompts=p["n_prompts"], a=p["a"], b=p["b"], seed=p["seed"], progress=p["progress"],
                             K=p["K"], rho=p["rho"], band=tuple(p["band"]) if p["band"] else None))
    for key in ("mean_pass_rate", "useful_share_expected", "useful_share_realised", "all_pass_share",
                "all_fail_share", "kept_share", "d_real", "d_iid", "rollout_amplification"):
        assert got[key] == view.summary[key], key
    assert code == 0


def test_population_defaults_are_the_lab_default(capsys):
    _, out, _ = run(capsys, "population", "--json")
    assert json.loads(out)["useful_share_realised"] == evaluate(Scenario()).summary["useful_share_realised"]


def test_advantages_json(capsys):
    _, out, _ = run(capsys, "advantages", "--rewards", "1,0,0,0", "--json")
    got = json.loads(out)
    assert set(got) == {"grpo", "dr_grpo", "sign", "tasa"}
    for name, values in got.items():
        assert values == pytest.approx(list(advantages([1, 0, 0, 0], name)))
    _, out, _ = run(capsys, "advantages", "--p", "0.25", "--G", "4", "--json")
    got = json.loads(out)
    assert got["expected_gradient_coef"]["sign"] == pytest.approx(float(expected_gradient_coef(0.25, 4, "sign")))
    assert got["coverage"]["dr_grpo"] == pytest.approx(float(coverage(0.25, 4, "dr_grpo")))


def test_validate_json(capsys):
    code, out, _ = run(capsys, "validate", "--groups", "20000", "--json")
    got = json.loads(out)
    assert code == 0 and got["passed"] is True and len(got["rows"]) >= 15
    assert {"p", "K", "exact", "mc", "abs_diff", "z"} <= set(got["rows"][0])
    for r in got["rows"]:
        assert r["exact"] == pytest.approx(float(outcome_probabilities(r["p"], r["K"])["p_useful"]))


@pytest.mark.parametrize("argv", [
    ["table", "--K", "0"], ["table", "--K", "-3"], ["table", "--p", "1.5"], ["table", "--p", "nan"],
    ["table", "--p", "abc"], ["population", "--filter", "0.8", "0.2"], ["population", "--n-prompts", "1000000000"],
    ["population", "--progress", "2"], ["population", "--rho", "1"], ["advantages", "--rewards", "1,x,0"],
    ["advantages", "--rewards", "1,0", "--estimator", "ppo"], ["advantages", "--p", "0.5"],
    ["advantages", "--p", "1.0", "--G", "4"], ["validate", "--groups", "0"], ["nonsense"],
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv):
    """In process (a process each cost 4-8 s on the loaded machine): an exception escaping main fails the test
    as a traceback would; argparse's own errors end in SystemExit(2) after their one line."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("grpo-lab") and "error" in err
    assert out == ""
