"""The doctor's samplers section at the trainer's sizes, with intervals from the fit's bootstrap (#32 item 5).

The sizes: the samplers and the stall forecast read one dict (``trainer_config.step_settings``), checked by
replacing that function; the DAPO row's figure against an independent binomial computation at the config's
sizes. The intervals: on records simulated from a known Beta population the true row value (the same
comparison on the true population) lies inside the 95% interval in most seeds; the mixture refits against
:func:`fit_mixture`'s own full fits of the same resamples.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from grpo_lab.cli import main
from grpo_lab.doctor_report import html_report, text_report
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.fit import fit_beta, fit_mixture
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.honesty import bootstrap_resamples
from grpo_lab.sims.doctor.sampler_intervals import interval, mixture_refits
from grpo_lab.sims.doctor.samplers import samplers_section
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.record import RunRecord, read_record
from grpo_lab.testing.beta_record import beta_record

PLAIN = Path(__file__).parent.parent / "runs" / "broad-g4-dr_grpo-lr0.0008-s1"


def _dapo_row(d):
    return next(r for r in d["samplers"]["rows"] if r["sampler"] == "dapo")


def _dapo_per_1000(u_bar, B, G, M, K):
    """1000 B (1 - P(stall)) / (E[rounds] G K), E[rounds] = sum_{r=1}^{M} P(Bin((r-1) G, u) < B): scipy.stats.binom."""
    needed = [1.0] + [stats.binom.cdf(B - 1, r * G, u_bar) for r in range(1, M)]
    p_stall = stats.binom.cdf(B - 1, M * G, u_bar)
    return 1000 * B * (1 - p_stall) / (sum(needed) * G * K)


def test_samplers_and_stall_use_the_config_sizes(tmp_path):
    f = tmp_path / "verl.json"
    f.write_text(json.dumps({"data": {"train_batch_size": 64, "gen_batch_size": 96},
                             "algorithm": {"filter_groups": {"enable": True, "max_num_gen_batches": 3}}}))
    rec = read_record(PLAIN)
    d = diagnose(rec, trainer_config=read_trainer_config(f))
    s, sf = d["samplers"]["settings"], d["stall_forecast"]["settings"]
    assert (s["batch"], s["gen_batch"], s["max_num_gen_batches"], s["K"]) == (64, 96, 3, 4)
    assert (sf["train_batch"], sf["gen_batch"], sf["cap"], sf["K"]) == (64, 96, 3, 4)
    assert "verl config" in s["sizes_from"]
    # the DAPO row at those sizes, against the binomial sums computed here on the section's own population
    from grpo_lab.sims.outcomes import p_useful
    from grpo_lab.sims.samplers import beta_pass_rates
    pop = d["samplers"]["population"]
    p = beta_pass_rates([tuple(c) for c in pop] if len(pop) > 1 else tuple(pop[0][1:]), s["prompts"])
    u_bar = float(np.mean(p_useful(p, 4)))
    assert _dapo_row(d)["useful_per_1000"] == pytest.approx(_dapo_per_1000(u_bar, 64, 96, 3, 4), rel=1e-9)
    # without a config: the run's groups per step and the default cap (the old behaviour, said so)
    plain = diagnose(rec)["samplers"]["settings"]
    assert plain["batch"] == plain["gen_batch"] == d["run"]["batch_groups"] and plain["max_num_gen_batches"] == 10
    assert "no trainer config" in plain["sizes_from"]


def test_one_function_gives_both_sections_their_sizes(monkeypatch):
    """diagnose computes the settings once (step_settings) and both sections read that dict: replacing the
    function changes both, identically."""
    seen = []

    def fake(meta, settings, K):
        seen.append(K)
        return {"trainer": "flags", "train_batch": 24, "gen_batch": 40, "cap": 5, "pool": None, "K": 6,
                "enable": True, "source": "test"}

    monkeypatch.setattr(sys.modules["grpo_lab.sims.doctor.diagnose"], "step_settings", fake)
    d = diagnose(read_record(PLAIN))
    s, sf = d["samplers"]["settings"], d["stall_forecast"]["settings"]
    assert seen == [4]
    assert (s["batch"], s["gen_batch"], s["max_num_gen_batches"], s["K"]) == (24, 40, 5, 6)
    assert (sf["train_batch"], sf["gen_batch"], sf["cap"], sf["K"]) == (24, 40, 5, 6)


SETTINGS = {"trainer": "flags", "train_batch": 32, "gen_batch": 48, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "test"}


def test_intervals_cover_the_true_population():
    """8 records from Beta(0.6, 1.2) (150 prompts drawn 4 times, K = 8): the true row value (the comparison on
    the true population at the same settings) lies inside each row's 95% interval. Per figure over the 8 seeds,
    at most 2 misses (P(X <= 5 | 8, 0.95) = 0.006); over all 8 x 7 useful-group rates, at least 48 covered
    (P(X < 48 | 56, 0.95) = 0.008)."""
    a0, b0, K = 0.6, 1.2, 8
    covered = {"useful_per_1000": [], "never_trained": []}
    widths = []
    for seed in range(8):
        g = run_groups(beta_record(a0, b0, 150, 4, K, seed))
        f = fit_beta(g.counts(), K)
        sec = samplers_section((f["alpha"], f["beta"]), K, g.n_prompts, 4, 150, 0.5, SETTINGS,
                               bootstrap_resamples(g))
        truth = samplers_section((a0, b0), K, g.n_prompts, 4, 150, 0.5, SETTINGS)
        assert sec["settings"]["intervals"]["populations"] == 40
        for key in covered:
            for row, true in zip(sec["rows"], truth["rows"]):
                lo, hi = row["interval"][key]
                covered[key].append(lo <= true[key] <= hi)
        widths.append(sec["rows"][0]["interval"]["useful_per_1000"])
    for key, hits in covered.items():
        per_row = np.array(hits).reshape(8, 7).sum(axis=0)
        assert per_row.min() >= 6, (key, per_row)
    assert sum(covered["useful_per_1000"]) >= 48
    assert all(hi - lo > 1.0 for lo, hi in widths)  # not degenerate: the fit's uncertainty is there


def test_mixture_refits_match_full_fits():
    rng = np.random.default_rng(2)
    p = np.where(rng.random(400) < 0.5, rng.beta(1.0, 4.0, 400), rng.beta(5.0, 1.0, 400))
    pid = np.tile(np.arange(400), 3)
    rewards = (rng.random((pid.size, 8)) < p[pid, None]).astype(float)
    rec = RunRecord(meta={"name": "mix", "n_prompts": 400, "num_generations": 8},
                    groups={"step": np.repeat(np.arange(3), 400).astype(np.int64), "prompt_id": pid,
                            "rewards": rewards, "advantages": np.full_like(rewards, np.nan),
                            "lengths": np.full(rewards.shape, -1, np.int64), "kept": np.ones(pid.size, bool)})
    g = run_groups(rec)
    full = fit_mixture(g.counts(), 8)
    c1, c2 = full["components"]
    res = bootstrap_resamples(g, n_boot=3, seed=4)
    rows, ok = mixture_refits(res["cells"], 8, full["w"], (c1["alpha"], c1["beta"]), (c2["alpha"], c2["beta"]))
    assert ok.all()
    for i in range(2):
        m = fit_mixture(res["cells"][i], 8)
        ref = [m["w"], m["components"][0]["alpha"], m["components"][0]["beta"], m["components"][1]["alpha"],
               m["components"][1]["beta"]]
        assert rows[i] == pytest.approx(ref, rel=2e-3)


def test_interval_edge_cases():
    assert interval(None, [1.0, 2.0], 10) is None
    assert interval(1.0, [np.nan] * 5 + [1.0] * 5, 10) is None  # undefined on half the populations
    lo, hi = interval(0.5, [np.inf] * 3 + [0.4, 0.5, 0.6] * 10, 10, (0.0, 10.0))
    assert hi is None and 0.0 <= lo < 0.5  # beyond the horizon on 9% of them
    v = np.random.default_rng(0).normal(0.98, 0.05, 40)
    lo, hi = interval(0.98, v, 101, (0.0, 1.0))
    normal = 0.98 - stats.norm.ppf(0.975) * np.std(v, ddof=1) * np.sqrt(101 / 100)
    assert hi == 1.0 and lo == pytest.approx(min(normal, np.quantile(v, 0.025)))  # clipped above
    # a figure that jumps (0 on a few populations): the percentile part reaches down to it
    jump = np.r_[np.zeros(3), np.random.default_rng(1).normal(0.8, 0.05, 37)]
    lo, hi = interval(0.8, jump, 150, (0.0, 10.0))
    assert lo == 0.0 and hi > 0.8
    # the point's Monte Carlo SE widens the normal part
    w0 = np.diff(interval(5.0, v + 4.02, 101))[0]
    assert np.diff(interval(5.0, v + 4.02, 101, mc_se=0.1))[0] > w0


def test_report_shows_intervals_and_mc_se(capsys, tmp_path):
    d = diagnose(read_record(PLAIN), trainer_config=read_trainer_config(train_batch_size=16, gen_batch_size=24,
                                                                         max_num_gen_batches=2))
    text = text_report(d)
    plain = next(r for r in d["samplers"]["rows"] if r["sampler"] == "plain")
    lo, hi = plain["interval"]["useful_per_1000"]
    assert f"{plain['useful_per_1000']:.1f} [{lo:.1f}, {hi:.1f}]" in text
    retire = next(r for r in d["samplers"]["rows"] if r["sampler"] == "retire")
    assert retire["mc_se"]["useful_per_1000"] > 0 and f"\u00b1 {retire['mc_se']['useful_per_1000']:.1f}" in text
    assert ("rounds of 24 prompts until 16 groups with a gradient fill the step, at most 2 rounds "
            "(max_num_gen_batches) (sizes: flags)") in " ".join(text.split())
    page = html_report(d)
    assert f"{plain['useful_per_1000']:.1f} [{lo:.1f}, {hi:.1f}]" in page and "95% intervals" in page
    code = main(["diagnose", str(PLAIN), "--train-batch-size", "16", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["samplers"]["settings"]["batch"] == out["stall_forecast"]["settings"]["train_batch"] == 16


def test_uncapped_dapo_is_the_capped_sum_in_the_limit():
    """max_num_gen_batches 0 (no cap, as TRL / slime / verl V1 configs give): the figure equals the binomial sums
    with a cap so large that the last terms vanish (was 0: an uncapped step counted as a stall)."""
    from grpo_lab.sims.outcomes import p_useful
    from grpo_lab.sims.samplers import closed

    p = np.random.default_rng(1).beta(0.5, 0.7, 300)
    u_bar = float(np.mean(p_useful(p, 4)))
    r = closed.dapo(p, 4, 4.0, 16, 24, 0)
    assert r["p_stall"] == 0.0
    assert r["useful_per_1000"] == pytest.approx(_dapo_per_1000(u_bar, 16, 24, 60, 4), rel=1e-9)
