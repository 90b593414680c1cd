"""The fleet (sims/doctor/fleet.py, lab/fleet.py, ``grpo-lab fleet``): its trend, expiry and stall against independent
computations, its ranking of a folder of runs (records with groups, scalars-only records, metrics.jsonl logs) against
the same forecasts computed from the runs as written, and its refreshes reading only what the runs appended."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.special import expit

from grpo_lab.fleet import Fleet, sparkline
from grpo_lab.sims.doctor.fleet import fit_trend, rank_key, run_forecast, stall_table
from grpo_lab.sims.doctor.stall import rounds_distribution
from grpo_lab.testing.fleet_runs import GROUPS, grow, make_fleet


def _nll_fit(step, mixed, groups):
    """The weighted binomial maximum likelihood of logit m = a + b t, by a general-purpose optimiser."""
    t = (step - step.min()) / (step.max() - step.min())

    def nll(x):
        mu = np.clip(expit(x[0] + x[1] * t), 1e-12, 1 - 1e-12)
        return -np.sum(groups * (mixed * np.log(mu) + (1 - mixed) * np.log(1 - mu)))

    return optimize.minimize(nll, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                                            "maxiter": 20000}).x


def test_the_trend_is_the_binomial_maximum_likelihood_and_its_dispersion():
    rng = np.random.default_rng(3)
    step = np.arange(1, 81)
    n = np.full(80, 64.0)
    true = expit(1.2 - 2.0 * (step - 1) / 79)
    mixed = rng.binomial(64, true) / 64
    fit = fit_trend(step, mixed, n)
    a, b = _nll_fit(step, mixed, n)
    assert fit["a"] == pytest.approx(a, abs=1e-5) and fit["b"] == pytest.approx(b, abs=1e-5)
    t = (step - 1) / 79
    mu = expit(a + b * t)
    phi = max(1.0, np.sum(n * (mixed - mu) ** 2 / (mu * (1 - mu))) / 78)
    assert fit["phi"] == pytest.approx(phi, rel=1e-6)
    X = np.column_stack([np.ones(80), t])
    cov = np.linalg.inv(X.T @ (X * (n * mu * (1 - mu))[:, None])) * phi
    np.testing.assert_allclose(fit["cov"], cov, rtol=1e-5)


def test_expiry_is_the_crossing_of_the_fitted_curve_and_its_band_covers_it():
    rng = np.random.default_rng(4)
    step = np.arange(10, 110)
    n = np.full(100, 128.0)
    mixed = rng.binomial(128, expit(1.5 - 1.0 * (step - 10) / 99)) / 128
    f = run_forecast(step, mixed, n)
    fit = fit_trend(step, mixed, n)
    grid = np.linspace(109, 109 + 10 * 99, 200001)  # brute force over the horizon, 0.005 of a step apart
    below = expit(fit["a"] + fit["b"] * (grid - 10) / 99) < 0.5
    assert f["expiry"]["step"] == pytest.approx(grid[np.argmax(below)], abs=0.01)
    lo, hi = f["expiry"]["interval"]
    assert lo < f["expiry"]["step"] < hi and f["left"] == pytest.approx(f["expiry"]["step"] - 109)
    assert f["forecast"] == "expiry" and f["stall"] is None


def test_the_stall_table_is_the_cores_rounds_distribution():
    settings = {"gen_batch": 96, "train_batch": 64, "cap": 3}
    xs, ps = stall_table(settings)
    m = np.random.default_rng(0).uniform(0, 1, 300)
    direct = np.asarray(rounds_distribution(m[:, None], 96, 64, 3)["p_stall"])
    assert np.max(np.abs(np.interp(m, xs, ps) - direct)) < 1e-4
    # and the closed form it stands for: P(Binomial(cap * gen_batch, m) < train_batch)
    np.testing.assert_allclose(direct, stats.binom.cdf(63, 3 * 96, m), atol=1e-12)


def test_the_stall_step_is_the_median_first_stall_of_the_fitted_trend():
    rng = np.random.default_rng(5)
    step = np.arange(1, 101)
    n = np.full(100, 96.0)
    mixed = rng.binomial(96, expit(1.0 - 1.5 * (step - 1) / 99)) / 96
    settings = {"gen_batch": 96, "train_batch": 64, "cap": 2}
    f = run_forecast(step, mixed, n, settings)
    fit = fit_trend(step, mixed, n)
    s = np.arange(100, 100 + 10 * 99 + 1)  # every future step, one by one
    m = expit(fit["a"] + fit["b"] * (s - 1) / 99)
    p = stats.binom.cdf(63, 2 * 96, m)
    first = 1 - np.cumprod(1 - p)
    median = s[np.argmax(first >= 0.5)]
    assert f["forecast"] == "stall" and abs(f["stall"]["step"] - median) <= 99 * 10 / 63 + 1  # one grid cell
    assert f["stall"]["interval"][0] <= f["stall"]["step"] <= f["stall"]["interval"][1]


def _independent(run):
    s, mixed, ap, af = (np.array(c) for c in zip(*run.shares))
    return s, mixed


def test_the_fleet_ranks_a_folder_as_the_runs_written_say(tmp_path):
    runs = make_fleet(tmp_path, n=12, steps=40, seed=1)
    rows = Fleet(str(tmp_path)).refresh()
    assert len(rows) == 12
    assert {r["kind"] for r in rows} == {"groups", "scalars", "tracker log (jsonl)"}
    expected = []
    for run in runs:  # from the shares as the writer drew them, fitted by the optimiser above
        s, mixed = _independent(run)
        a, b = _nll_fit(s.astype(float), mixed, np.full(len(s), float(GROUPS)))
        if a + b < 0:  # logit 0.5 = 0: below at the last step
            left = 0.0
        elif b >= 0:
            left = np.inf
        else:
            left = -a / b * (s[-1] - s[0]) + s[0] - s[-1]
        expected.append((run.name, left if left <= 10 * (s[-1] - s[0]) else np.inf, expit(a + b)))
    by_row = {r["run"].split("/")[0]: r for r in rows}
    for name, left, now in expected:
        got = by_row[name]["left"]
        assert (np.isinf(got) and np.isinf(left)) or got == pytest.approx(left, abs=0.05), name
        assert by_row[name]["fit_now"] == pytest.approx(now, abs=1e-4)
    order = [name for name, _, _ in sorted(expected, key=lambda e: rank_key({"left": e[1], "fit_now": e[2]}))]
    assert [r["run"].split("/")[0] for r in rows] == order
    for r in rows:
        assert sparkline(r["spark"]) and len(r["spark"]) == 40 and all(0 <= v <= 1 for v in r["spark"])


def test_a_refresh_reads_only_what_the_runs_appended(tmp_path):
    runs = make_fleet(tmp_path, n=9, steps=30, seed=2)
    fleet = Fleet(str(tmp_path))
    fleet.refresh()
    assert fleet.stats["read"] == 9
    fleet.refresh()
    assert fleet.stats["read"] == 0 and fleet.stats["bytes_read"] == 0  # nothing changed: nothing read
    jsonl = [r for r in runs if r.kind == "jsonl"]
    before = {r.name: (r.path / "metrics.jsonl").stat().st_size for r in jsonl}
    grow(jsonl[:2], 5)
    appended = sum((r.path / "metrics.jsonl").stat().st_size - before[r.name] for r in jsonl[:2])
    rows = fleet.refresh()
    assert fleet.stats["read"] == 2 and fleet.stats["bytes_read"] == appended  # the logs' new lines, no more
    fresh = Fleet(str(tmp_path)).refresh()  # equal to a fleet reading everything anew
    assert [(r["run"], r["steps"], r["left"]) for r in rows] == [(r["run"], r["steps"], r["left"]) for r in fresh]
    groups = [r for r in runs if r.kind == "groups"]
    grow(groups[:1], 3)
    fleet.refresh()
    meta = json.loads((groups[0].path / "run.json").read_text())
    sealed = {e["name"] for t in ("steps", "groups") for e in meta["files"][t]}
    on_disk = (groups[0].path / "run.json").stat().st_size + sum((groups[0].path / n).stat().st_size for n in sealed)
    assert fleet.stats["read"] == 1 and 0 < fleet.stats["bytes_read"] <= on_disk
    assert fleet.runs[groups[0].name].reader.chunks_read <= 2  # the rewritten open chunks, not the sealed ones


def test_cli_fleet_lists_ranks_and_refuses_bad_input(tmp_path):
    make_fleet(tmp_path, n=6, steps=20, seed=3)
    env = {**os.environ, "GRPO_LAB_CACHE": str(tmp_path.parent / f"{tmp_path.name}-cache")}  # not in ~/.cache
    proc = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "fleet", str(tmp_path), "--json", "--quick"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["runs"]) == 6 and out["read"]["runs"] == 6
    assert [r["run"] for r in out["runs"]] == [r["run"] for r in Fleet(str(tmp_path)).refresh()]
    text = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "fleet", str(tmp_path)], capture_output=True,
                          text=True, env=env)
    assert text.returncode == 0 and "6 runs in" in text.stdout and "expiry" in text.stdout
    bad = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "fleet", str(tmp_path / "nope")], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "is not a folder" in bad.stderr


def test_an_uncertain_expiry_reads_uncertain_in_the_fleet_as_in_the_doctor(tmp_path):
    """tinker-rewardhack-inoculated: the doctor's expiry is "uncertain" (its one- and two-sided tie trends disagree
    and the log cannot tell them apart); the fleet's line says the same word, not "no verdict"."""
    from pathlib import Path

    from grpo_lab.testing.cli import run_cli

    src = Path(__file__).parent / "fixtures" / "real" / "tinker-rewardhack-inoculated-gs8-gpb16"
    folder = tmp_path / "runs"
    got = run_cli("ingest", src / "metrics.jsonl", "--trainer-config", src / "config.json", "--out",
                  folder / "inoculated", "--no-progress")
    assert got.returncode == 0, got.stderr
    said = run_cli("diagnose", folder / "inoculated", "--json")
    assert json.loads(said.stdout)["when"]["expiry"]["said"].startswith("uncertain: ")
    line = [x for x in run_cli("fleet", folder).stdout.splitlines() if "inoculated" in x]
    assert len(line) == 1 and "expiry uncertain (grpo-lab diagnose says why)" in line[0], line
