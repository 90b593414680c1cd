"""The doctor on scalars (sims/doctor/scalars_*.py): the population's moments against independent integrals, the
fit's intervals against simulated truth (coverage within binomial tolerance), what is and is not identified from
partial logs, the dispatch of ``diagnose`` and the command line on a scalars-only record, and the scalars fit beside
the group-level fit on a shipped run."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import betaln, expit, log_expit

from grpo_lab.cli import main
from grpo_lab.doctor_report import html_report, text_report
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.scalars_diagnose import diagnose_scalars
from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, fit_scalars, population_moments, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.jsonable import jsonable
from grpo_lab.sims.record import read_record, write_record

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "test"}


@pytest.mark.parametrize("a,b,g,t,K", [(1.5, 2.0, 2.0, 1.0, 8), (0.3, 0.4, -6.0, 2.5, 4), (20.0, 60.0, 9.0, 1.0, 16),
                                       (0.05, 0.08, 12.0, 1.0, 8)])
def test_logit_moments_against_quadrature(a, b, g, t, K):
    """E[q^K], E[(1-q)^K], E[q] for q = expit(logit p + g t), p ~ Beta(a, b), by adaptive quadrature over logit p."""
    c = g * t

    def expect(f):
        dens = lambda z: np.exp(a * log_expit(z) + b * log_expit(-z) - betaln(a, b))  # density of logit p  # noqa: E731
        pts = sorted({-c - 5.0, -c, -c + 5.0, 0.0})
        lo, hi = -80 - abs(c), 80 + abs(c)  # beyond: f at its limits times the tails' exact masses
        tails = f(0.0) * stats.beta.cdf(expit(lo), a, b) + f(1.0) * stats.beta.cdf(expit(-hi), b, a)
        return integrate.quad(lambda z: f(expit(z + c)) * dens(z), lo, hi, points=pts, limit=400,
                              epsabs=1e-11)[0] + tails

    m = population_moments(np.array([np.log(a), np.log(b), g]), [t], K)
    assert m["all_pass"][0] == pytest.approx(expect(lambda q: q**K), abs=5e-5)
    assert m["all_fail"][0] == pytest.approx(expect(lambda q: (1 - q) ** K), abs=5e-5)
    assert m["mean"][0] == pytest.approx(expect(lambda q: q), abs=5e-5)


def test_power_moments_against_quadrature():
    a, b, g, K = 1.2, 2.5, 3.0, 8
    s = 1 / (1 + g * 0.7)
    m = population_moments(np.array([np.log(a), np.log(b), g]), [0.7], K, "power")
    for key, f in (("all_pass", lambda p: p ** (s * K)), ("all_fail", lambda p: (1 - p**s) ** K)):
        want = integrate.quad(lambda p: f(p) * stats.beta.pdf(p, a, b), 0, 1, limit=200)[0]
        assert m[key][0] == pytest.approx(want, abs=1e-8)


def test_coverage_slice():
    """95% intervals over 40 simulated runs: each of alpha, beta, drift and the last step's all-pass / all-fail
    shares covers its truth in at least 34 of 40 (Binomial(40, 0.95) gives fewer with probability 0.014)."""
    a, b, rate, K, S, G = 1.5, 2.0, 0.03, 8, 40, 64
    g_true = rate * (S - 1)
    truth = population_moments(np.array([np.log(a), np.log(b), g_true]), [1.0], K)
    hits = np.zeros(5, int)
    for seed in range(40):
        f = fit_scalars(step_shares(simulate_shares(a, b, rate, K, S, G, seed=100 + seed)))
        iv, last = f["intervals"], f["last"]
        hits += [iv["alpha"][0] <= a <= iv["alpha"][1], iv["beta"][0] <= b <= iv["beta"][1],
                 iv["drift"][0] <= g_true <= iv["drift"][1],
                 last["all_pass_interval"][0] <= truth["all_pass"][0] <= last["all_pass_interval"][1],
                 last["all_fail_interval"][0] <= truth["all_fail"][0] <= last["all_fail_interval"][1]]
    assert np.all(hits >= 34), hits


def test_zero_std_only_identifies_the_mixed_share_not_the_split():
    a, b, rate, K = 1.5, 2.0, 0.02, 8
    rec = simulate_shares(a, b, rate, K, 80, 128, seed=5, logged=("frac_reward_zero_std",))
    f = fit_scalars(step_shares(rec))
    assert f["identified"] == {"mixed_share": True, "split": False, "population": False}
    assert any("not" in n and "zero-std" in n for n in f["notes"])
    truth = population_moments(np.array([np.log(a), np.log(b), rate * 79]), [1.0], K)
    lo, hi = f["last"]["mixed_interval"]
    assert lo <= 1 - truth["all_pass"][0] - truth["all_fail"][0] <= hi
    # the mirror population (beta, alpha, -g) gives the same unanimous shares: the likelihood cannot tell them apart
    th = f["theta"]
    m1 = population_moments(th, [0.0, 0.5, 1.0], K)
    m2 = population_moments(np.array([th[1], th[0], -th[2]]), [0.0, 0.5, 1.0], K)
    np.testing.assert_allclose(m1["all_pass"] + m1["all_fail"], m2["all_pass"] + m2["all_fail"], atol=1e-9)
    # with the mean reward as well, the split is identified
    rec2 = simulate_shares(a, b, rate, K, 80, 128, seed=5, logged=("frac_reward_zero_std", "reward_mean"))
    f2 = fit_scalars(step_shares(rec2))
    assert f2["identified"]["split"] and f2["used"]["reward_mean_steps"] == 80
    assert f2["intervals"]["drift"][0] <= rate * 79 <= f2["intervals"]["drift"][1]


def test_shaped_reward_mean_is_left_out():
    rec = simulate_shares(1.5, 2.0, 0.0, 8, 20, 64, seed=1)
    rec.steps["reward_mean"] = rec.steps["reward_mean"] + 0.5  # a format bonus: not a pass rate
    f = fit_scalars(step_shares(rec))
    assert f["used"]["reward_mean_steps"] == 0 and any("reward_mean left out" in n for n in f["notes"])


def test_diagnose_dispatches_a_scalars_only_record(tmp_path):
    rec = simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2)
    d = diagnose(rec, trainer_config=SETTINGS)
    assert d["scalars_only"] and d["run"]["K"] == 8 and d["run"]["groups_per_step"] == 96
    assert d["stall_forecast"]["available"] and d["stall_forecast"]["cause"] == "all-pass saturation"
    assert d["expiry"]["step"] is not None and d["expiry"]["step"] > 60
    assert d["samplers"]["rows"] and len(d["unavailable"]) >= 3
    json.dumps(jsonable(d), allow_nan=False)
    text = text_report(d)
    assert "needs the groups" in text and "stall forecast" in text
    page = html_report(d)
    assert page.count("<svg") == 3 and "Stall risk" in page and "<script" not in page  # shares, P(stall), the risk
    rk = d["stall_forecast"]["risk"]  # the first stall said: the group path's shapes and risk on the shares
    assert rk["available"] and rk["evidence"] == "per-step shares"
    assert d["when"]["stall"]["step"] == rk["first_stall"]["median"] and d["when"]["stall"]["level"] == rk["level"]
    assert "on the drift shapes' drawn mixed share alone" in text and "drift shapes (rolling-origin weights)" in text
    assert d["fit"]["source"] == "drift shapes" and "scalars fit: the measured drift" in text


def test_scalars_only_command_line(tmp_path, capsys):
    rec = simulate_shares(1.5, 2.0, 0.03, 8, 30, 96, seed=3, logged=("frac_reward_zero_std",))
    rec.meta["num_generations"] = None
    rec.steps["groups_per_step"][:] = np.nan
    write_record(tmp_path / "run", rec)
    assert main(["diagnose", str(tmp_path / "run")]) == 2
    assert "K) is unknown" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "run"), "--num-generations", "8"]) == 2
    assert "groups per step are unknown" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "run"), "--num-generations", "8", "--groups-per-step", "96",
                 "--lists", str(tmp_path / "lists")]) == 2
    assert "--lists needs" in capsys.readouterr().err
    html = tmp_path / "r.html"
    assert main(["diagnose", str(tmp_path / "run"), "--num-generations", "8", "--groups-per-step", "96",
                 "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "not identified" in out and html.exists()


def test_group_record_gets_the_scalars_fit_beside(runs_dir=None):
    from pathlib import Path

    rec = read_record(Path(__file__).parent.parent / "runs" / "broad-g4-dr_grpo-ds-lr0.0008-s1")
    d = diagnose(rec)
    for key in ("run", "fit", "cells", "mixture", "model", "correlation", "observed_unanimous", "predicted_unanimous",
                "windows", "pooled", "what_if", "samplers", "forecast", "skip", "prompts", "audit", "stall_forecast",
                "transitions", "lab_query", "timings"):
        assert key in d
    sb = d["scalars_fit"]
    assert sb["available"] and sb["fit"]["K"] == 4
    rows = {r["what"]: r for r in sb["rows"]}
    last = [r for k, r in rows.items() if k.startswith("mixed share")][0]
    # the groups' own share over the last steps, recomputed here
    st = np.asarray(rec.groups["step"])
    S = (np.asarray(rec.groups["rewards"]) > 0.5).sum(1)
    keep = np.isin(st, np.unique(st)[-10:])
    assert last["groups"] == pytest.approx(np.mean((S[keep] > 0) & (S[keep] < 4)))
    assert "scalars fit beside the groups" in text_report(d)
    assert "Scalars fit beside the groups" in html_report(d)
    # the scalars column is the scalars doctor's on the same rows logged alone (its one model: the shares' drift)
    ds = diagnose_scalars(_alone(rec), trainer_config=d["stall_forecast"]["settings"])
    assert ds["fit"]["source"] == "drift shapes"
    _same_as_alone(sb, ds)
    assert sb["when"]["stall"] == ds["when"]["stall"] and sb["when"]["expiry"] == ds["when"]["expiry"]
    from grpo_lab.doctor_report import html_fragment

    drift = next(r for k, r in rows.items() if k.startswith("drift"))
    figures = [f"{rows['mean pass rate over the run']['scalars']:.3g}",
               f"{drift['scalars']:.3g} +/- {drift['scalars_se']:.2g}", f"{100 * last['scalars']:.1f}%"]
    for words in (text_report(d), html_report(d), html_fragment(d, folded=True)):  # the lab's Diagnose section too
        assert all(f in words for f in figures), figures


def _alone(rec, keep=("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean")):
    """The shares ``keep`` of a record with groups as a scalars-only record (a tracker log of the same run), its
    groups per step counted here from the groups."""
    from grpo_lab.sims.scalars_record import scalars_record

    steps = np.asarray(rec.steps["step"])
    gs, held = np.unique(np.asarray(rec.groups["step"]), return_counts=True)
    n = np.array([held[gs == s][0] if (gs == s).any() else np.nan for s in steps], float)
    return scalars_record(rec.meta["name"], steps, {**{k: rec.steps[k] for k in keep}, "groups_per_step": n},
                          num_generations=np.asarray(rec.groups["rewards"]).shape[1], source={},
                          n_prompts=rec.meta["n_prompts"])


def _same_as_alone(sb: dict, ds: dict) -> None:
    """Each scalars figure of ``sb`` (:func:`side_by_side`) equals the one read off ``ds`` (the scalars doctor on the
    same rows alone)."""
    rows = {r["what"]: r for r in sb["rows"]}
    fit, s = ds["fit"], ds["fit"]["series"]
    assert sb["fit"]["model"] == ds["model"] and sb["expiry"].get("model") == ds["expiry"].get("model")
    span = fit["steps"][1] - fit["steps"][0]
    drift = next(r for k, r in rows.items() if k.startswith("drift"))
    assert drift["scalars"] == pytest.approx(100 * fit["drift"] / span)
    assert rows["mean pass rate over the run"]["scalars"] == pytest.approx(np.average(s["fitted_mean"],
                                                                                      weights=s["groups"]))
    mixed = next(r for k, r in rows.items() if k.startswith("mixed share"))
    lo, hi = (int(x) for x in mixed["what"].rsplit(" ", 1)[1].split("-"))
    inside = (s["step"] >= lo) & (s["step"] <= hi)
    assert mixed["scalars"] == pytest.approx(np.average(s["fitted_mixed"][inside], weights=s["groups"][inside]))
    assert rows["effective rate at the last step (model)"]["scalars"] == pytest.approx(ds["expiry"]["mixed_now"])
    exp = next(r for k, r in rows.items() if k.startswith("expiry step"))
    assert (exp["scalars"], exp["scalars_interval"]) == (ds["expiry"]["step"], ds["expiry"]["interval"])
    st = rows["stall step (P(stall) > 0.5)"]
    want = ds["stall_forecast"]["stall"]["0.5"]
    assert (st["scalars"], st["scalars_interval"]) == (want["step"], want["interval"])


def test_the_scalars_beside_a_mixed_only_log_follow_the_scalars_doctor():
    """A record with groups whose per-step scalars give the zero-std share alone: the scalars beside it are read as
    the scalars doctor reads such a log (:func:`.scalars_diagnose.diagnose_scalars`' routing of mixed-only rows)."""
    from grpo_lab.sims.doctor.fit import fit_beta
    from grpo_lab.sims.doctor.forecast import forecast
    from grpo_lab.sims.doctor.groups import run_groups
    from grpo_lab.sims.doctor.scalars_diagnose import side_by_side
    from grpo_lab.sims.doctor.stall import for_record
    from grpo_lab.sims.doctor.trainer_config import step_settings
    from grpo_lab.sims.record import RunRecord

    rec = read_record(Path(__file__).parent.parent / "runs" / "broad-g4-dr_grpo-ds-lr0.0008-s1")
    nan = np.full(len(rec.steps["step"]), np.nan)
    rec = RunRecord(meta=rec.meta, groups=rec.groups, steps={**rec.steps, "frac_all_pass": nan, "frac_all_fail": nan,
                                                             "reward_mean": nan})
    groups = run_groups(rec, None)
    fc = forecast(groups)
    trend = fc.pop("_trend")
    sizes = step_settings(rec.meta, None, groups.K)
    partial = {"forecast": fc, "fit": fit_beta(groups.counts(), groups.K),
               "stall_forecast": for_record(rec, groups, trend, sizes)}
    sb = side_by_side(rec, groups, partial, sizes, fc["threshold"])
    ds = diagnose_scalars(_alone(rec, ("frac_reward_zero_std",)), trainer_config=sizes, only="when")
    assert sb["available"]
    _same_as_alone(sb, ds)


def test_step_shares_refuses_a_record_without_shares():
    rec = simulate_shares(1.0, 1.0, 0.0, 4, 5, 8, seed=0, logged=())
    with pytest.raises(InputError, match="logs none of"):
        step_shares(rec)


def test_a_never_solved_share_is_found_and_preferred():
    """A population with 30% of prompts never solved: the logit_stuck fit's interval holds 0.3 and its drift's holds
    the truth, and the AIC prefers it to the plain logit drift (which has no place for a stuck mass)."""
    a, b, rate, K = 1.5, 1.5, 0.03, 8
    rec = simulate_shares(a, b, rate, K, 60, 128, seed=11, stuck=0.3)
    d = step_shares(rec)
    f = fit_scalars(d, "logit_stuck")
    assert f["intervals"]["stuck"][0] <= 0.3 <= f["intervals"]["stuck"][1]
    assert f["intervals"]["drift"][0] <= rate * 59 <= f["intervals"]["drift"][1]
    assert f["aic"] < fit_scalars(d, "logit")["aic"] - 10
    # the diagnosis's fit is the measured drift's (sims/doctor/shares_fit.py): its masses variant holds the stuck share
    f = diagnose(rec)["fit"]
    assert f["variant"] == "masses" and abs(f["population"]["w0"] - 0.3) < 0.05


def test_a_far_tail_cell_warns_nothing():
    """The first 29 steps of the tinker-cookbook fixture put a cell's mean pass rate at ~1e-300, whose
    p(1 - p) squared underflowed to 0 (a divide-by-zero warning inside the fit, an error in the tests)."""
    import shutil
    import warnings

    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.ingest.trackers import read_scalars

    src = Path(__file__).parent / "fixtures" / "trackers" / "jsonl"
    lines = (src / "metrics.jsonl").read_text().splitlines(keepends=True)[:29]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "metrics.jsonl").write_text("".join(lines))
        shutil.copy(src / "config.json", tmp)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rec = read_scalars(Path(tmp) / "metrics.jsonl")
            d = diagnose(rec)
            fit = best_fit(fit_models(step_shares(rec)))  # the drift maps (the diagnosis's fit is the measured drift's)
    assert d["scalars_only"] and d["fit"]["n_steps"] == 29 and fit["n_steps"] == 29 and not fit["at_bound"]
    assert np.isfinite([fit["alpha"], fit["beta"], fit["se_drift"]]).all()
