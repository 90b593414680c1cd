"""Run doctor, after the fit: forecast (recovers a known trend), skip backtest, temporal consistency,
allocation (against an exact knapsack) and prompt lists, each against an independent computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from grpo_lab.sims.doctor.forecast import forecast
from grpo_lab.sims.doctor.groups import MIN_GROUPS, RunGroups, run_groups
from grpo_lab.sims.doctor.prompts import CAUTION, prompt_lists, write_prompt_lists
from grpo_lab.sims.doctor.skip import allocation, skip_backtest, temporal_consistency
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import RunRecord


def trend_run(seed=4, P=1500, T=100, per=150, K=8, beta=1.5):
    rng = np.random.default_rng(seed)
    alpha = rng.normal(-1.0, 1.5, P)
    step = np.repeat(np.arange(T), per)
    pid = rng.integers(0, P, T * per)
    S = rng.binomial(K, expit(alpha[pid] + beta * step / (T - 1)))
    return RunGroups(K=K, successes=S, step=step, prompt_id=pid, n_prompts=P), alpha


def random_run(seed=0, P=40, T=30, per=12, K=4):
    rng = np.random.default_rng(seed)
    pid = rng.integers(0, P, T * per)
    p = rng.beta(0.5, 0.5, P)
    S = rng.binomial(K, p[pid])
    return RunGroups(K=K, successes=S, step=np.repeat(np.arange(T), per), prompt_id=pid, n_prompts=P,
                     labels=[f"prompt <{i}> \"q\"" for i in range(P)])


def test_forecast_recovers_a_known_trend():
    g, alpha = trend_run()
    f = forecast(g, model="trend")  # the trend's own crossing (the default chooses per run)
    assert abs(f["beta"] - 1.5) <= 3 * f["se_beta"]
    # the true crossing, computed directly from the true parameters
    t = np.linspace(1, 11, 2001)  # half a step apart
    p = expit(alpha[None, :] + 1.5 * t[:, None])
    true = t[np.flatnonzero((1 - p**8 - (1 - p) ** 8).mean(axis=1) < 0.5)[0]] * 99
    lo, hi = f["crossing_interval"]
    assert lo <= true <= hi and lo <= f["crossing_step"] <= hi
    # the backtest's per-step error is about the sampling noise of a step's rate (150 groups)
    bt = f["backtest"]
    noise = np.sqrt(0.25 / 150)  # the largest per-step standard error
    assert bt["available"] and bt["compared_steps"] == 50
    assert bt["mae"] < 1.5 * noise


def test_forecast_of_a_run_already_below():
    g, _ = trend_run(beta=6.0)
    f = forecast(g, model="trend")
    assert f["rate_now"] < 0.5 and f["crossing_step"] is None and "already below" in f["status"]


def _pairs(g):
    """Consecutive draws of each prompt by a plain loop."""
    out = []
    for x in range(g.n_prompts):
        rows = sorted(np.flatnonzero(g.prompt_id == x), key=lambda i: (g.step[i], i))
        out.extend(zip(rows[:-1], rows[1:]))
    return out


def test_temporal_consistency_against_a_loop():
    g = random_run()
    K, S = g.K, g.successes
    pairs = _pairs(g)
    tc = temporal_consistency(g)
    assert tc["pairs"] == len(pairs)
    un = lambda i: S[i] in (0, K)  # noqa: E731
    prev_un = [(a, b) for a, b in pairs if un(a)]
    assert tc["unanimous_given_unanimous"]["n"] == len(prev_un)
    assert tc["unanimous_given_unanimous"]["share"] == pytest.approx(np.mean([un(b) for _, b in prev_un]))
    ap = [(a, b) for a, b in pairs if S[a] == K]
    assert tc["all_pass_given_all_pass"]["share"] == pytest.approx(np.mean([S[b] == K for _, b in ap]))
    mixed = [(a, b) for a, b in pairs if not un(a)]
    assert tc["unanimous_given_mixed"]["share"] == pytest.approx(np.mean([un(b) for _, b in mixed]))


def test_skip_backtest_against_a_loop():
    g = random_run(seed=1)
    K, S = g.K, g.successes
    rows = skip_backtest(g, (1, 2, 3))
    for row in rows:
        n = row["after_unanimous_draws"]
        skipped = wrong = 0
        for x in range(g.n_prompts):
            hist = []
            for i in sorted(np.flatnonzero(g.prompt_id == x), key=lambda i: (g.step[i], i)):
                u = S[i] in (0, K)
                if len(hist) >= n and all(hist[-n:]):
                    skipped += 1
                    wrong += not u
                hist.append(u)
        assert row["skipped_groups"] == skipped and row["mixed_wrongly_skipped"] == wrong
        assert row["rollouts_saved"] == skipped * K


def _useful(p, k):
    return 0.0 if k < 2 else 1 - p**k - (1 - p) ** k


def test_allocation_matches_an_exact_knapsack():
    """Greedy allocation against the exact optimum over every K_x in {0, 2, ..., k_max} (6 prompts)."""
    p = np.array([0.03, 0.2, 0.5, 0.75, 0.97, 0.999])
    K, k_max = 4, 12
    a = allocation(p, K, k_max=k_max)
    choices = [0] + list(range(2, k_max + 1))
    # dynamic programme over prompts: best expected useful groups for each budget used
    dp = {0: 0.0}
    for px in p:
        nxt = {}
        for used, val in dp.items():
            for k in choices:
                if used + k <= len(p) * K:
                    v = val + _useful(px, k)
                    if v > nxt.get(used + k, -1):
                        nxt[used + k] = v
        dp = nxt
    best = max(dp.values())
    one_unit = max(_useful(px, k + 1) - _useful(px, k) for px in p for k in range(2, k_max))
    assert a["rollouts_used"] <= a["budget"] == len(p) * K
    assert best - one_unit <= a["allocated_useful_groups"] <= best + 1e-12
    assert a["uniform_useful_groups"] == pytest.approx(sum(_useful(px, K) for px in p))
    assert a["allocated_useful_groups"] >= a["uniform_useful_groups"]


def test_prompt_lists_against_a_loop(tmp_path):
    g = random_run(seed=2)
    K, S = g.K, g.successes
    lists = prompt_lists(g, retire_after=2)
    want = {"retire": [], "hard": [], "live": []}
    for x in range(g.n_prompts):
        rows = sorted(np.flatnonzero(g.prompt_id == x), key=lambda i: (g.step[i], i))
        if not rows:
            continue
        s = [S[i] for i in rows]
        if len(s) >= 2 and all(v == K for v in s[-2:]):
            want["retire"].append(x)
        elif sum(s) == 0:
            want["hard"].append(x)
        else:
            want["live"].append(x)
    for name in want:
        assert [r["prompt_id"] for r in lists[name]] == want[name]
    assert lists["caution"] == CAUTION
    paths = write_prompt_lists(lists, tmp_path / "lists")
    for name, path in paths.items():
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
        assert [r["prompt_id"] for r in rows] == want[name]
        assert all(r["text"] == g.labels[r["prompt_id"]] for r in rows)
    assert not list((tmp_path / "lists").glob("*.tmp"))


def _record(rewards, pid=None, step=None, n_prompts=None, **meta):
    rewards = np.asarray(rewards, float)
    n = len(rewards)
    pid = np.arange(n) % 7 if pid is None else pid
    return RunRecord(meta={"n_prompts": n_prompts or int(np.max(pid)) + 1, **meta}, groups={
        "step": np.arange(n, dtype=np.int64) if step is None else step, "prompt_id": np.asarray(pid, np.int64),
        "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
        "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(n, bool)})


def test_input_checks():
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="too few"):
        run_groups(_record(rng.integers(0, 2, (MIN_GROUPS - 1, 4))))
    mixed = rng.integers(0, 2, (40, 6)).astype(float)
    mixed[::3, 4:] = np.nan
    with pytest.raises(InputError, match="mixes group sizes"):
        run_groups(_record(mixed))
    cont = rng.random((40, 4))
    with pytest.raises(InputError, match="not binary"):
        run_groups(_record(cont))
    g = run_groups(_record(cont), tolerance=0.1)
    assert g.binarised and np.array_equal(g.successes, np.sum(cont > 0.5, axis=1))
    assert run_groups(_record(cont, reward_tolerance=0.05)).binarised  # a record's own tolerance counts
    with pytest.raises(InputError, match="tolerance"):
        run_groups(_record(cont), tolerance=-1)
    binary = rng.integers(0, 2, (40, 4)).astype(float)
    g = run_groups(_record(binary))
    assert g.K == 4 and not g.binarised and np.array_equal(g.successes, binary.sum(axis=1))
    # NaN-padded columns of one width are fine
    padded = np.concatenate([binary, np.full((40, 2), np.nan)], axis=1)
    assert np.array_equal(run_groups(_record(padded)).successes, g.successes)


def test_allocation_histogram_sums_to_prompts():
    rng = np.random.default_rng(1)
    p = rng.beta(0.5, 0.5, 500)
    a = allocation(p, 8)
    assert sum(a["k_histogram"].values()) == 500
    assert sum(k * c for k, c in a["k_histogram"].items()) == a["rollouts_used"] <= a["budget"]
    assert 1 not in a["k_histogram"]
    assert a["allocated_useful_per_1000"] > a["uniform_useful_per_1000"]


def test_pooled_mixture_recovers_a_bimodal_population_at_small_K():
    """K = 4 is too small for a mixture per group, but 6 draws per prompt pool to 24 rollouts: the pooled
    mixture recovers the population within 3 SEs, beats the Beta by BIC, and predicts a single group's
    unanimous shares inside their observed intervals (what the fit did not see)."""
    from grpo_lab.sims.doctor.pooled import pooled_fit

    rng = np.random.default_rng(13)
    P, R, K, w, c1, c2 = 3000, 6, 4, 0.3, (0.3, 3.0), (8.0, 2.0)
    p = np.where(rng.random(P) < w, rng.beta(*c1, P), rng.beta(*c2, P))
    pid = np.tile(np.arange(P), R)
    step = np.repeat(np.arange(R), P)
    g = RunGroups(K=K, successes=rng.binomial(K, p[pid]), step=step, prompt_id=pid, n_prompts=P)
    r = pooled_fit(g, share=1.0)
    assert r["available"] and r["median_trials"] == R * K and r["model"] == "mixture"
    m = r["mixture"]
    got = [m["w"], m["components"][0]["alpha"], m["components"][0]["beta"], m["components"][1]["alpha"],
           m["components"][1]["beta"]]
    for value, truth, key in zip(got, [w, *c1, *c2], ("w", "alpha1", "beta1", "alpha2", "beta2")):
        assert abs(value - truth) <= 3 * m["se"][key], (key, value, m["se"][key])
    assert r["check"]["all_pass"]["inside"] and r["check"]["all_fail"]["inside"]


def test_pooled_fit_needs_enough_prompts():
    from grpo_lab.sims.doctor.pooled import pooled_fit

    g = RunGroups(K=4, successes=np.zeros(40, np.int64), step=np.arange(40), prompt_id=np.arange(40) % 5,
                  n_prompts=5)
    r = pooled_fit(g)
    assert not r["available"] and "prompts" in r["reason"]


def test_windows_consecutive_rolling_and_per_step():
    """Window cells equal the groups counted directly; rolling windows overlap; window=1 is one per step."""
    from grpo_lab.sims.doctor.windows import window_fits

    g = random_run(seed=3, T=30, per=40)
    rows = window_fits(g, window=10)
    assert [(r["step_first"], r["step_last"]) for r in rows] == [(0, 9), (10, 19), (20, 29)]
    for r in rows:
        m = (g.step >= r["step_first"]) & (g.step <= r["step_last"])
        assert r["groups"] == m.sum()
        assert r["observed_all_pass"] == pytest.approx(np.mean(g.successes[m] == g.K))
    rolling = window_fits(g, window=10, stride=5)
    assert [(r["step_first"], r["step_last"]) for r in rolling] == [(0, 9), (5, 14), (10, 19), (15, 24), (20, 29)]
    assert len(window_fits(g, window=1)) == 30
    with pytest.raises(InputError):
        window_fits(g, window=10, stride=0)


@pytest.mark.parametrize("case", ["all_fail", "all_pass", "K2", "one_step"])
def test_degenerate_runs_diagnose_quietly(case):
    """Edge runs give strict JSON, a text and an HTML report, and no warning on stderr."""
    import warnings

    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.doctor_report import html_report, text_report
    from grpo_lab.sims.jsonable import jsonable

    rng = np.random.default_rng(0)
    rewards = {"all_fail": np.zeros((100, 4)), "all_pass": np.ones((100, 4)),
               "K2": rng.integers(0, 2, (100, 2)).astype(float),
               "one_step": rng.integers(0, 2, (40, 8)).astype(float)}[case]
    step = np.zeros(len(rewards), np.int64) if case == "one_step" else np.repeat(np.arange(len(rewards) // 10), 10)
    rec = _record(rewards, pid=rng.integers(0, 20, len(rewards)), step=step, n_prompts=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = diagnose(rec)
        json.dumps(jsonable(d), allow_nan=False)
        text_report(d), html_report(d)
    if case == "one_step":
        assert d["forecast"]["crossing_step"] is None and "no trend" in d["forecast"]["status"]
    if case == "all_fail":
        assert d["observed_unanimous"]["all_fail"] == 1.0 and d["prompts"]["counts"]["hard"] == 20
