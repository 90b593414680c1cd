"""Doctor honesty: too few distinct prompts are refused; intervals hold where prompts repeat (sims/doctor/honesty.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from grpo_lab.cli import main
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.fit import fit_beta
from grpo_lab.sims.doctor.groups import RunGroups
from grpo_lab.sims.doctor.honesty import (MAX_REL_SE, MIN_PROMPTS, check_population, cluster_bootstrap,
                                          fit_beta_batch)
from grpo_lab.doctor_report import text_report
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import RunRecord, write_record

A, B, K = 0.7, 1.6, 8  #: the population of the issue's example


def _record(pid, rewards, n_prompts) -> RunRecord:
    n = len(rewards)
    return RunRecord(meta={"name": "honesty", "n_prompts": n_prompts, "num_generations": rewards.shape[1]},
                     groups={"step": np.repeat(np.arange(n // 4 + 1), 4)[:n].astype(np.int64),
                             "prompt_id": np.asarray(pid, np.int64), "rewards": rewards,
                             "advantages": np.full(rewards.shape, np.nan),
                             "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(n, bool)})


def test_a_single_prompt_is_not_a_population(tmp_path, capsys):
    """The issue's case: 40 groups of one prompt got Beta(27.9 +- 199, 1244 +- 8873) and a lab link; now refused."""
    rng = np.random.default_rng(0)
    rewards = (rng.random((40, 4)) < 0.02).astype(float)
    rec = _record(np.zeros(40), rewards, 1)
    with pytest.raises(InputError, match=f"1 distinct prompt: too few.*at least {MIN_PROMPTS} distinct"):
        diagnose(rec)
    write_record(tmp_path / "one", rec)
    assert main(["diagnose", str(tmp_path / "one")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "distinct prompt" in err[0]


def test_the_minimum_is_the_derived_one():
    """MIN_PROMPTS - 1 degrees of freedom give the between-prompt variance a relative SE of at most MAX_REL_SE
    (sqrt(2 / (P - 1)), checked by Monte Carlo on normal prompt means); one prompt fewer does not."""
    assert math.sqrt(2 / (MIN_PROMPTS - 1)) <= MAX_REL_SE < math.sqrt(2 / (MIN_PROMPTS - 2))
    rng = np.random.default_rng(1)
    v = np.var(rng.normal(size=(200_000, MIN_PROMPTS)), axis=1, ddof=1)
    assert np.std(v) == pytest.approx(math.sqrt(2 / (MIN_PROMPTS - 1)), rel=0.02)
    rewards = (rng.random((40, 4)) < 0.4).astype(float)
    for P, ok in ((MIN_PROMPTS - 1, False), (MIN_PROMPTS, True)):
        g = RunGroups(K=4, successes=rewards.sum(axis=1).astype(np.int64), step=np.arange(40),
                      prompt_id=np.arange(40) % P, n_prompts=P)
        if ok:
            assert check_population(g) == P
        else:
            with pytest.raises(InputError, match=f"{P} distinct prompts"):
                check_population(g)


def test_batched_fit_is_the_ml_fit():
    """fit_beta_batch reaches the same maximum as the doctor's scipy fit, edge cells and bounds included."""
    rng = np.random.default_rng(2)
    rows = [np.bincount(rng.binomial(K, rng.beta(a, b, n)), minlength=K + 1)
            for a, b, n in ((0.7, 1.6, 400), (3.0, 3.0, 300), (0.2, 0.3, 2000), (20.0, 5.0, 100), (0.5, 0.5, 50))]
    rows.append(np.array([30, 0, 0, 0, 0, 0, 0, 0, 12]))  # only unanimous groups: alpha, beta at the lower bound
    counts = np.asarray(rows, float)
    a, b = fit_beta_batch(counts, K)
    ll = lambda c, x, y: float(np.sum(c * stats.betabinom.logpmf(np.arange(K + 1), K, x, y)))  # noqa: E731
    for i, c in enumerate(counts):
        f = fit_beta(c, K)
        assert ll(c, a[i], b[i]) >= ll(c, f["alpha"], f["beta"]) - 1e-9 * abs(ll(c, f["alpha"], f["beta"]))
        if not f["at_bound"]:  # inside the bounds the maximum is unique: the same parameters
            assert a[i] == pytest.approx(f["alpha"], rel=1e-4) and b[i] == pytest.approx(f["beta"], rel=1e-4)


def _simulate(rng, P, draws):
    p = rng.beta(A, B, P)
    pid = np.repeat(np.arange(P), draws)
    S = rng.binomial(K, p[pid])
    return RunGroups(K=K, successes=S.astype(np.int64), step=np.arange(len(S)), prompt_id=pid, n_prompts=P)


@pytest.mark.slow
@pytest.mark.parametrize("P, draws", [(100, 8), (400, 1)])
def test_intervals_cover_with_and_without_repeats(P, draws):
    """95% intervals cover the true alpha and beta 95% +- 3 points of the time over R = 500 replicates.

    The coverage's Monte Carlo SE at 95% is sqrt(.95 .05 / 500) = 0.97 points, so +- 3 points is 3.1 SE (a true
    95% fails with probability 0.2% per parameter). With repeats (100 prompts drawn 8 times each), the Fisher
    intervals the doctor gave before cover far less often (checked on the first 100 replicates: below 85%)."""
    R = 500
    rng = np.random.default_rng(10 + draws)
    cover = np.zeros((R, 2), bool)
    fisher = []
    for i in range(R):
        g = _simulate(rng, P, draws)
        counts = g.counts()
        a, b = fit_beta_batch(counts[None], K)
        c = cluster_bootstrap(g, float(a[0]), float(b[0]), seed=i)
        cover[i] = (c["interval_alpha"][0] <= A <= c["interval_alpha"][1], c["interval_beta"][0] <= B <= c["interval_beta"][1])
        if draws > 1 and i < 100:
            f = fit_beta(counts, K)
            fisher.append(abs(f["alpha"] - A) <= 1.96 * f["se_alpha"])
    rate = cover.mean(axis=0)
    assert np.all(np.abs(rate - 0.95) <= 0.03), rate
    if draws > 1:
        assert np.mean(fisher) < 0.85


def test_diagnose_reports_the_honest_intervals():
    rng = np.random.default_rng(3)
    g = _simulate(rng, 60, 6)
    rewards = (np.arange(K)[None, :] < g.successes[:, None]).astype(float)
    d = diagnose(_record(g.prompt_id, rewards, 60))
    c = d["fit"]["cluster"]
    assert c["repeated_prompts"] == 60 and c["max_draws"] == 6 and c["prompts"] == 60
    # wider than the Fisher intervals: the groups of one prompt are not independent
    assert c["se_alpha"] > d["fit"]["se_alpha"] and c["se_beta"] > d["fit"]["se_beta"]
    lo, hi = c["interval_alpha"]
    assert lo < d["fit"]["alpha"] < hi
    assert "cluster bootstrap over prompts" in text_report(d)


def test_an_unidentified_spread_is_said_in_the_report():
    """TRL's own trl_run fixture (16 prompts, 40 groups): the mean is identified, the spread is not, and the report
    says so beside the interval (its alpha interval spans more than a factor 100)."""
    from pathlib import Path

    from grpo_lab.sims.ingest import ingest

    d = diagnose(ingest(Path(__file__).parent / "fixtures" / "ingest" / "trl_run", "trl"), tolerance=0.5)
    lo, hi = d["fit"]["cluster"]["interval_alpha"]
    assert hi / lo > 100
    assert "identifies the mean pass rate, not the spread" in text_report(d)
    shipped = diagnose(_record(*_shipped_like()))
    assert "not the spread" not in text_report(shipped)


def _shipped_like():
    rng = np.random.default_rng(4)
    g = _simulate(rng, 300, 4)
    return g.prompt_id, (np.arange(K)[None, :] < g.successes[:, None]).astype(float), 300
