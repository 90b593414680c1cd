"""`grpo-lab diagnose`: the JSON contract on a shipped run and an ingested TRL run, bad input (one line,
exit 2), the prompt lists, and the HTML report (self-contained, escaped, no request when opened)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, list_runs
from grpo_lab.sims.doctor.whatif import WHAT_IF_K
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.outcomes import p_useful
from grpo_lab.sims.record import RunRecord, read_record, summarise, write_record

TRL_RUN = Path(__file__).parent / "fixtures" / "ingest" / "trl_run"
EVIL = "<script>alert('x')</script> & <img src=http://example.invalid/x.png>"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def shipped():
    runs = list_runs(DEFAULT_RUNS_DIR)
    assert runs, "the repository ships run records under runs/"
    return next(iter(runs.values()))


def synthetic(n=400, K=4, label=None, seed=0, **meta) -> RunRecord:
    rng = np.random.default_rng(seed)
    P = 60
    pid = rng.integers(0, P, n)
    p = rng.beta(0.7, 0.7, P)
    rewards = (rng.random((n, K)) < p[pid, None]).astype(float)
    labels = [label or f"q{i}" for i in range(P)]
    return RunRecord(meta={"name": label or "synthetic", "n_prompts": P, "num_generations": K,
                           "prompt_labels": labels, **meta},
                     groups={"step": np.repeat(np.arange(n // 20), 20).astype(np.int64), "prompt_id": pid,
                             "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
                             "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(n, bool)})


def test_json_contract_on_a_shipped_run(capsys, shipped):
    code, out, err = run(capsys, "diagnose", shipped, "--json")
    assert code == 0, err
    d = json.loads(out)
    rec = read_record(shipped)
    s = summarise(rec)
    K = d["run"]["K"]
    assert K == s["num_generations"] and d["run"]["groups"] == s["groups"]
    assert d["fit"]["alpha"] > 0 and d["fit"]["beta"] > 0 and d["fit"]["se_alpha"] > 0
    # observed shares are the record's own, recomputed independently by summarise
    assert d["observed_unanimous"]["all_pass"] == pytest.approx(s["frac_all_pass"])
    assert d["observed_unanimous"]["all_fail"] == pytest.approx(s["frac_all_fail"])
    assert set(d["predicted_unanimous"]) >= {"all_pass", "all_fail"}
    assert [r["K"] for r in d["what_if"]] == list(WHAT_IF_K)
    for row in d["what_if"]:
        assert row["rollouts_per_useful_group"] == pytest.approx(row["K"] / row["effective_group_rate"])
    bt = d["forecast"]["backtest"]
    assert bt["available"] and np.isfinite(bt["mae"])  # reported, whatever it is
    assert set(d["prompts"]) >= {"retire", "hard", "live", "caution"}
    counts = d["prompts"]["counts"]
    assert counts["retire"] + counts["hard"] + counts["live"] + counts["never_drawn"] == rec.n_prompts
    assert d["lab_query"].startswith("a=")


def test_text_output_names_each_part(capsys, shipped):
    code, out, _ = run(capsys, "diagnose", shipped)
    assert code == 0
    for word in ("fit: Beta(", "what-if", "forecast:", "backtest", "prompts: retire", "caution"):
        assert word in out


def test_ingested_trl_run(capsys, tmp_path):
    """The real TRL fixture: binary with its `correct` reward; its summed reward needs --tolerance."""
    write_record(tmp_path / "correct", ingest(TRL_RUN, "trl", reward_columns=["correct"]))
    code, out, err = run(capsys, "diagnose", tmp_path / "correct", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["run"]["K"] == 4 and not d["run"]["binarised"]
    write_record(tmp_path / "total", ingest(TRL_RUN, "trl"))
    code, out, err = run(capsys, "diagnose", tmp_path / "total")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "not binary" in err
    code, out, err = run(capsys, "diagnose", tmp_path / "total", "--tolerance", "0", "--json")
    assert code == 0 and json.loads(out)["run"]["binarised"]


@pytest.mark.parametrize("case,message", [("short", "too few"), ("mixed", "mixes group sizes"),
                                          ("missing", "neither a run record"), ("band", "LO <= HI")])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, case, message):
    argv = []
    if case == "short":
        write_record(tmp_path / "r", synthetic(n=20))
    elif case == "mixed":
        rec = synthetic(K=6)
        rec.groups["rewards"][::2, 4:] = np.nan
        write_record(tmp_path / "r", rec)
    elif case == "band":
        write_record(tmp_path / "r", synthetic())
        argv = ["--band", "0.8", "0.2"]
    code, out, err = run(capsys, "diagnose", tmp_path / "r", *argv)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_lists_written(capsys, tmp_path):
    write_record(tmp_path / "r", synthetic())
    code, out, _ = run(capsys, "diagnose", tmp_path / "r", "--lists", tmp_path / "lists", "--json")
    d = json.loads(out)
    for name in ("retire", "hard", "live"):
        rows = [json.loads(x) for x in (tmp_path / "lists" / f"{name}.jsonl").read_text().splitlines()]
        assert [r["prompt_id"] for r in rows] == [r["prompt_id"] for r in d["prompts"][name]]


def test_what_if_uses_the_core(capsys, tmp_path):
    """The K table at the run's K equals the core's P(useful) averaged over the fitted Beta (quadrature)."""
    from scipy import integrate, stats

    write_record(tmp_path / "r", synthetic(n=2000, K=8))
    d = json.loads(run(capsys, "diagnose", tmp_path / "r", "--json")[1])
    a, b = d["fit"]["alpha"], d["fit"]["beta"]
    for row in d["what_if"]:
        want = integrate.quad(lambda p: p_useful(p, row["K"]) * stats.beta.pdf(p, a, b), 0, 1, limit=200)[0]
        assert row["effective_group_rate"] == pytest.approx(want, rel=1e-6)


def test_html_report_is_offline_and_escaped(capsys, tmp_path, page):
    write_record(tmp_path / "r", synthetic(label=EVIL))
    out = tmp_path / "report.html"
    code, _, err = run(capsys, "diagnose", tmp_path / "r", "--html", out)
    assert code == 0, err
    text = out.read_text()
    assert EVIL not in text and "<script" not in text and "<img" not in text
    assert "&lt;script&gt;" in text
    assert "src=" not in text.replace("&lt;img src=", "") and "href=" not in text and "url(" not in text
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert requests == [out.as_uri()]
    assert page.locator("svg").count() >= 3
    assert not page.console_errors
