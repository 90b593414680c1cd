"""Predictive bands, the back-test, the rewards' kind, the one forecast of "when" and its checks (issue 39, items
3-6 and 9)."""

from __future__ import annotations

import json
import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.backtest import backtest, observed_mixed
from grpo_lab.sims.doctor.predictive import band, dispersion, quantiles
from grpo_lab.sims.doctor.rewards import classify_scalars, max_mixed_share
from grpo_lab.sims.doctor.scalars_fit import fit_scalars, step_shares
from grpo_lab.sims.doctor.scalars_forecast import _draw_mixed, mixed_dispersion, quasi_fit
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo, simulate_shares
from grpo_lab.sims.doctor.tie_trend import fit_tie_trend
from grpo_lab.sims.doctor.when import check_cause, check_expiry, logged_tail
from grpo_lab.sims.record import read_record
from grpo_lab.sims.scalars_record import scalars_record

SRC = {"format": "test", "trainer": "trl", "run": "t", "dialect": {}, "missing": [], "notes": []}


def _mixture_ppf(P, n, q):
    """Independent: the smallest k with mean_d Binomial(n, p_d).cdf(k) >= q, by scanning k (scipy.stats)."""
    k = np.arange(n + 1)
    cdf = np.mean(stats.binom.cdf(k[None, :], n, np.asarray(P)[:, None]), axis=0)
    return int(k[np.searchsorted(cdf, q - 1e-12)])


@pytest.mark.parametrize("n", [1, 7, 64, 500])
def test_quantiles_equal_a_direct_scan_of_the_mixture(n):
    rng = np.random.default_rng(n)
    P = rng.uniform(0.0, 1.0, (30, 4))
    P[:, 0] = 0.0
    got = quantiles(P, n, [0.05, 0.5, 0.95])
    for j in range(4):
        for i, q in enumerate((0.05, 0.5, 0.95)):
            assert got[i, j] == _mixture_ppf(P[:, j], n, q) / n


def test_dispersion_is_one_on_binomial_rows_and_large_on_overdispersed_ones():
    rng = np.random.default_rng(1)
    pi = rng.uniform(0.2, 0.8, 2000)
    n = np.full(2000, 50.0)
    assert dispersion(rng.binomial(50, pi) / 50, n, pi, 0) == pytest.approx(1.0, abs=0.1)
    noisy = np.clip(pi + rng.normal(0, 0.15, 2000), 0.01, 0.99)  # beta-binomial-like extra spread
    phi = dispersion(rng.binomial(50, noisy) / 50, n, pi, 0)
    # independent: the extra variance 50 * 0.15^2 over the binomial's pi(1 - pi) is about 1 + 50 * 0.0225 / 0.2
    assert 3.0 < phi < 9.0


def _fit_and_score(seed, fit_steps=30, later=30, n_draws=200):
    """Fit the logit drift on the first ``fit_steps`` steps of a simulated run; score the band on the next ``later``
    steps: (rows inside, rows, the band's own probability mass over those rows)."""
    rec = simulate_shares(1.5, 2.0, 0.03, 8, fit_steps + later, 64, seed=seed)
    d = step_shares(rec)
    fit = fit_scalars(d.subset(np.arange(len(d.step)) < fit_steps), "logit")
    steps = d.step[fit_steps:].astype(float)
    P = _draw_mixed(quasi_fit(fit), steps, 8, n_draws, seed)
    phi = mixed_dispersion(fit)
    b = band(P, 64, 0.9, phi)
    obs = observed_mixed(d)[fit_steps:]
    inside = (obs >= b["lo"] - 1e-12) & (obs <= b["hi"] + 1e-12)
    # the band's own mass: P(lo <= X / n_eff <= hi) under its mixture (discreteness makes it >= 0.9)
    n_eff = max(1, round(64 / phi))
    mass = np.mean(stats.binom.cdf(np.round(b["hi"] * n_eff)[None, :], n_eff, P)
                   - stats.binom.cdf(np.round(b["lo"] * n_eff)[None, :] - 1, n_eff, P), axis=0)
    return inside.sum(), len(obs), mass.sum(), phi


def test_predictive_band_covers_future_rows_at_its_level():
    """Monte Carlo over simulated runs whose truth is the model: the later rows fall inside the band as often as
    the band's own probability says (>= 90%: the count lattice), within 3 standard errors; the SE from the spread
    of the per-run coverage (rows of one run share its fit's error)."""
    res = [_fit_and_score(seed) for seed in range(36)]
    cov = np.array([h / n for h, n, _, _ in res])
    nominal = sum(m for _, _, m, _ in res) / sum(n for _, n, _, _ in res)
    se = cov.std(ddof=1) / np.sqrt(len(cov))
    assert nominal >= 0.9 - 1e-9
    assert abs(cov.mean() - nominal) < 3 * se + 0.01, (cov.mean(), nominal, se)
    assert 0.9 - 3 * se - 0.01 < cov.mean() < 0.97 + 3 * se


def test_backtest_counts_are_the_rows_inside_and_cover_on_simulated_logs():
    held = scored = 0
    for seed in range(3):
        rec = simulate_shares(1.2, 1.8, 0.02, 8, 80, 64, seed=100 + seed)
        bt = backtest(step_shares(rec), n_draws=100)
        assert bt["available"]
        for c in bt["cuts"]:
            s = c["series"]
            inside = (s["observed"] >= s["lo"] - 1e-12) & (s["observed"] <= s["hi"] + 1e-12)
            assert c["held"] == int(inside.sum()) and c["scored"] == len(s["step"])
            assert np.all(s["step"] > c["fit_until_step"])
            assert c["median_abs_error"] == pytest.approx(np.median(np.abs(s["median"] - s["observed"])))
        held += bt["held"]
        scored += bt["scored"]
    # 3 binomial SEs of the pooled count, times 2.5 for the rows of one log sharing its fit's error (a design effect
    # of about 6 in variance: the later rows of a cut move together with the fitted drift)
    assert held == pytest.approx(0.9 * scored, abs=3 * np.sqrt(0.09 * scored) * 2.5)


def test_backtest_on_a_shipped_run_scores_its_own_later_rows():
    rec = read_record("runs/broad-g4-dr_grpo-lr0.0008-s1")
    d = step_shares(rec)
    bt = backtest(d, n_draws=60, cuts=(0.5,))
    c = bt["cuts"][0]
    rows = len(d.step)
    obs = observed_mixed(d)
    assert c["fit_until_step"] == int(d.step[rows // 2 - 1])
    assert c["scored"] == int(np.sum(np.isfinite(obs[rows // 2:])))
    assert np.allclose(c["series"]["observed"], obs[rows // 2:][np.isfinite(obs[rows // 2:])])
    assert 0 <= c["held"] <= c["scored"]


def _rec(cols, K=4, n=60, trainer="trl", raw=None):
    steps = np.arange(1, n + 1)
    return scalars_record("t", steps, cols, num_generations=K, source={**SRC, "trainer": trainer}, raw=raw)


def test_rewards_kind_from_what_was_logged():
    rng = np.random.default_rng(0)
    n, g, K = 60, 16, 4
    m = rng.uniform(0.2, 0.8, n)
    N = g * K
    std_bin = np.sqrt(m * (1 - m) * N / (N - 1))
    base = {"reward_mean": m, "groups_per_step": np.full(n, float(g))}
    steps = {"step": np.arange(n), **base, "scalar/reward_std": std_bin}
    assert classify_scalars(steps, K)["rewards"] == "binary"
    steps["scalar/reward_std"] = std_bin + 0.1
    r = classify_scalars(steps, K)
    assert r["rewards"] == "not binary" and "exceeds" in r["rewards_why"][0]
    steps = {"step": np.arange(n), **base, "scalar/rewards/a/mean": m, "scalar/rewards/b/mean": m}
    assert classify_scalars(steps, K)["rewards"] == "not binary"
    steps = {"step": np.arange(n), "reward_mean": m * 30 - 20, "groups_per_step": base["groups_per_step"]}
    r = classify_scalars(steps, K)
    assert r["rewards"] == "not binary" and "outside [0, 1]" in r["rewards_why"][0]
    assert classify_scalars({"step": np.arange(n), **base}, K)["rewards"] == "unknown"
    assert max_mixed_share(2) == 0.5 and max_mixed_share(4) == 0.875


def test_not_binary_k2_run_is_never_told_it_is_below_an_unreachable_threshold():
    """A K = 2 run with continuous rewards logging 88% mixed groups: the tie share is modelled, the expiry is not
    'already below', and the report says the pass-rate statements do not apply."""
    rng = np.random.default_rng(3)
    n = 80
    tie = rng.binomial(20, 0.12, n) / 20
    rec = _rec({"frac_reward_zero_std": tie, "reward_mean": rng.normal(0.0, 5.0, n),
                "groups_per_step": np.full(n, 20.0)}, K=2, n=n)
    d = diagnose(rec)
    assert d["run"]["rewards"] == "not binary"
    assert d["expiry"]["model"] == "tie share"
    assert "already below" not in d["when"]["expiry"]["said"]
    assert d["expiry"]["mixed_now"] == pytest.approx(0.88, abs=0.03)
    assert any("do not apply" in x for x in d["run"]["notes"])
    # a binary K = 2 run: the threshold 0.5 cannot be reached from above, so no expiry verdict
    v = check_expiry("already below the threshold at the last step (fit)", 0.5, None, 2, "binary")
    assert not v["holds"] and "at or above the most mixed groups" in v["said"]


def test_tie_trend_recovers_its_slope():
    """Monte Carlo: the logistic trend's slope over 40 runs, z-scores within 3 of the truth and spread near 1."""
    z = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        s = np.arange(100)
        t = s / 99
        pi = 1 / (1 + np.exp(-(-1.0 + 1.5 * t)))
        f = fit_tie_trend(s, np.full(100, 30.0), rng.binomial(30, pi) / 30)
        z.append((f["b"] - 1.5) / f["se_b"])
    z = np.array(z)
    assert abs(z.mean()) < 3 / np.sqrt(40) + 0.1 and 0.7 < z.std() < 1.35


def test_verdicts_are_checked_against_the_logged_rows():
    steps = np.arange(1, 21)
    mixed = np.full(20, 0.7)
    tail = logged_tail(steps, mixed, np.full(20, 200.0))
    assert tail["rows"] == 10 and tail["mixed"] == pytest.approx(0.7)
    v = check_expiry("already below the threshold at the last step (fit)", 0.5, tail, 8, "binary")
    assert not v["holds"] and "no verdict" in v["said"]
    assert check_expiry("stays above the threshold for 10 run lengths if the drift holds", 0.5, tail, 8,
                        "binary")["holds"]
    low = logged_tail(steps, np.full(20, 0.2), np.full(20, 200.0))
    assert not check_expiry("stays above the threshold for 10 run lengths", 0.5, low, 8, "binary")["holds"]
    rng = np.random.default_rng(0)
    ap = np.linspace(0.1, 0.5, 20) + rng.normal(0, 0.01, 20)
    af = np.linspace(0.3, 0.05, 20) + rng.normal(0, 0.01, 20)
    t2 = logged_tail(steps, 1 - ap - af, np.full(20, 200.0), ap, af)
    assert not check_cause("all-fail collapse", t2)["holds"]
    assert check_cause("all-pass saturation", t2)["holds"]
    flat = logged_tail(steps, 1 - ap - af, np.full(20, 200.0), np.full(20, 0.2) + rng.normal(0, 0.01, 20),
                       np.full(20, 0.3) + rng.normal(0, 0.01, 20))
    assert check_cause("all-pass saturation", flat)["holds"]  # behind, but no significant trend either way


def test_nan_and_inf_rows_are_counted_and_no_warning():
    rec = simulate_shares(1.5, 2.0, 0.02, 8, 40, 64, seed=5)
    rec.steps["frac_all_pass"][3] = np.nan
    rec.steps["frac_all_fail"][7] = np.inf
    d = diagnose(rec)
    note = [x for x in d["run"]["notes"] if "NaN or inf" in x]
    assert note and note[0].startswith("2 of 40 rows")


def test_parameters_at_their_bound_are_said_and_intervals_clipped():
    """Every group at pass rate 1/2 exactly (the all-pass and all-fail shares of a point mass, 300,000 groups): the
    concentration has no upper limit in the log, so the intervals of alpha and beta stop at the bound 1000, said
    in words in the fit and its text."""
    from grpo_lab.doctor_report.scalars import _fit_lines

    n = 30
    rec = scalars_record("pt", np.arange(1, n + 1), {"frac_all_pass": np.full(n, 0.0625), "frac_all_fail":
                         np.full(n, 0.0625), "groups_per_step": np.full(n, 10000.0)}, num_generations=4, source=SRC)
    f = fit_scalars(step_shares(rec), "logit")
    for k in ("alpha", "beta"):
        assert f["intervals"][k][1] == pytest.approx(1e3) and f["intervals"][k][0] >= 1e-2
    text = "\n".join(_fit_lines(f))
    assert "reaches its upper bound (1000) and is clipped there" in text


def _dapo_diagnosis():
    rec, stall = simulate_dapo(1.5, 2.0, 0.03, 8, 70, 96, 64, 3, seed=4)
    settings = {"trainer": "verl", "source": "test", "gen_batch": 96, "train_batch": 64, "cap": 3, "K": 8,
                "pool": None}
    return rec, settings, diagnose(rec, trainer_config=settings)


def test_text_html_json_and_watch_give_the_one_forecast(tmp_path):
    from grpo_lab.doctor_report import html_report, text_report
    from grpo_lab.doctor_report.when import stall_words, when_html, when_lines
    from grpo_lab.sims.doctor.scalars_watch import StallWatch
    from grpo_lab.sims.jsonable import jsonable

    rec, settings, d = _dapo_diagnosis()
    w = d["when"]
    fs = d["stall_forecast"]["risk"]["first_stall"]  # the shares' risk (the group path's shapes), not the map's hit
    assert w["stall"]["step"] == fs["median"] and w["stall"]["interval"] == fs["interval"] and w["stall"]["level"] == 0.9
    text = text_report(d)
    page = html_report(d)
    for line in when_lines(w):
        assert line in text
        assert line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;") \
            .replace("'", "&#x27;") in page
    js = json.loads(json.dumps(jsonable(d)))
    pr = js["expiry"]["projection"]["predictive"]
    assert pr["level"] == 0.9 and len(pr["lo"]) == len(pr["hi"]) == len(js["expiry"]["projection"]["step"])
    assert np.all(np.asarray(pr["lo"]) <= np.asarray(pr["hi"]))
    from grpo_lab.doctor_report import html_fragment

    assert "90% predictive band</text>" in page and 'fill-opacity="0.2"' in page  # the band drawn, with its legend
    lab = html_fragment(d, folded=True)  # what the lab's Replay > Diagnose shows
    assert when_html(d) in lab
    ev = StallWatch(settings, num_generations=8).update(rec)
    assert ev["forecast"]["step"] == w["stall"]["step"]
    assert stall_words(ev["forecast"]) == stall_words(w["stall"])


def test_group_record_when_is_the_risk_and_others_are_labelled():
    from grpo_lab.doctor_report import text_report

    d = diagnose(read_record("runs/broad-g4-dr_grpo-ds-lr0.0008-s1"))
    w = d["when"]
    fs = d["stall_forecast"]["risk"]["first_stall"]
    assert w["stall"]["step"] == fs["median"] and w["stall"]["interval"] == fs["interval"]
    text = text_report(d)
    assert "when: first stall (the stall risk" in text and "a point estimate, not P(stall by the step)" in text
    p = d["forecast"]["projection"]
    assert len(p["predictive"]["lo"]) == len(p["step"]) and p["predictive"]["level"] == 0.9


def test_cli_backtest_json_and_text(capsys):
    from grpo_lab.cli import main

    code = main(["diagnose", "runs/broad-g4-dr_grpo-lr0.0008-s1", "--backtest", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    js = json.loads(out)
    bt = js["backtest"]
    assert bt["available"] and [c["cut"] for c in bt["cuts"]] == [0.4, 0.5, 0.6, 0.7]
    assert bt["held"] == sum(c["held"] for c in bt["cuts"]) and bt["scored"] == sum(c["scored"] for c in bt["cuts"])
    assert bt["model"] == "drift shapes"  # the default: the one model
    assert bt["scalars"]["model"] == js["scalars_fit"]["expiry"]["model"] == "drift shapes"  # the model shown beside
    assert all(c["choice"] is None and c["model"] == "drift shapes" for c in bt["cuts"])
    for c in bt["cuts"]:  # each cut's count recomputed from its own series
        lo, hi, o = (np.asarray(c["series"][k]) for k in ("lo", "hi", "observed"))
        assert c["held"] == int(np.sum((o >= lo - 1e-12) & (o <= hi + 1e-12)))
    assert err == ""


def _trend_run(seed, P=150, steps=60, per_step=40, K=4, slope=2.0):
    """Groups from the trend model itself: prompt intercepts N(0, 1.5^2), one logit slope over the run, each step
    drawing ``per_step`` prompts uniformly."""
    from grpo_lab.sims.doctor.groups import RunGroups
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, 1.5, P)
    step = np.repeat(np.arange(steps), per_step)
    pid = rng.integers(0, P, step.size)
    S = rng.binomial(K, expit(a[pid] + slope * step / (steps - 1)))
    return RunGroups(K=K, successes=S.astype(np.int64), step=step.astype(np.int64), prompt_id=pid.astype(np.int64),
                     n_prompts=P)


def test_group_trend_band_covers_later_steps_on_runs_from_its_own_model():
    """The group trend's 90% predictive band (slope quantiles x the step's binomial noise), fitted on the first half of
    runs drawn from the trend model, holds the later steps' effective rates at about its level: per-run coverages
    averaged over 24 runs, within 3 SEs (and a lattice allowance) of the band's level."""
    from grpo_lab.sims.doctor.forecast import band_at, observed_rate

    cov = []
    for seed in range(24):
        g = _trend_run(seed)
        steps, obs = observed_rate(g)
        later = steps >= 30
        b = band_at(g, g.step < 30, steps[later])
        inside = (obs[later] >= b["lo"] - 1e-12) & (obs[later] <= b["hi"] + 1e-12)
        cov.append(inside.mean())
    cov = np.array(cov)
    se = cov.std(ddof=1) / np.sqrt(len(cov))
    assert 0.9 - 3 * se - 0.02 < cov.mean() < 0.97 + 3 * se, (cov.mean(), se)


def test_not_binary_stall_forecast_from_the_tie_trend_equals_the_binomial_closed_form():
    """With rewards that are not binary the stall forecast runs on the tie trend's mixed share u(s) = 1 - pi(s): a
    step of cap rounds of B fresh prompts stalls iff fewer than T of the cap x B groups are mixed, so
    P(stall) = Binomial(cap B, u).cdf(T - 1) (scipy, independent of the rounds' code); the cause is not identified."""
    from scipy.special import expit

    rng = np.random.default_rng(0)
    n = 80
    steps = np.arange(1, n + 1)
    tie = rng.binomial(96, 0.12 + 0.006 * steps) / 96
    rec = _rec({"frac_reward_zero_std": tie, "reward_mean": rng.normal(5, 1, n), "groups_per_step": np.full(n, 96.0)},
               K=8, n=n)
    settings = {"trainer": "verl", "source": "test", "gen_batch": 96, "train_batch": 64, "cap": 3, "K": 8,
                "pool": None}
    d = diagnose(rec, trainer_config=settings)
    sf, tf = d["stall_forecast"], d["tie_fit"]
    assert sf["available"] and sf["cause"].startswith("not identified (rewards not binary")
    g = np.asarray(sf["series"]["step"], float)
    u = 1 - expit(tf["a"] + tf["b"] * (g - tf["steps"][0]) / (tf["steps"][1] - tf["steps"][0]))
    assert np.allclose(sf["series"]["p_stall"], stats.binom.cdf(63, 3 * 96, u), atol=1e-6)
    assert d["when"]["stall"]["step"] == sf["first_cap_hit"]["median"] is not None


def test_a_dispersion_above_the_groups_leaves_one_effective_group():
    """phi = 300 over rows of 100 groups: the band is the Bernoulli mixture's (one effective group), not NaN."""
    P = np.array([[0.02, 0.5], [0.03, 0.6]])
    b = band(P, 100, 0.9, 300.0)
    # one Bernoulli draw: P(0) = 1 - mean p is 0.975 in the first column (both quantiles 0), 0.45 in the second
    assert list(b["lo"]) == [0.0, 0.0] and list(b["hi"]) == [0.0, 1.0]
