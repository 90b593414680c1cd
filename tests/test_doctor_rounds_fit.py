"""The rounds' likelihood in the scalars fit (sims/doctor/scalars_fit.py, rows of kind ``rounds``): the law against the
stall forecast's own distribution, coverage over simulated DAPO runs that log only their rounds, and a verl DAPO
file-logger run in verl's names (tests/fixtures/ingest/verl_dapo_rounds, made by our loop simulator) diagnosed from
its rounds with the sizes from its hydra config, refused with the flags named without them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.drift import rounds_logp
from grpo_lab.sims.doctor.scalars_fit import fit_scalars, population_moments, step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.doctor.stall import rounds_distribution
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.scalars_record import scalars_record

FIX = Path(__file__).parent / "fixtures" / "ingest" / "verl_dapo_rounds"


@pytest.mark.parametrize("u,B,T", [(0.7, 32, 24), (0.2, 16, 8), (0.95, 8, 8)])
def test_rounds_law_is_the_stall_forecasts_distribution(u, B, T):
    """log P(R = r | u) of the fit = the log of the step pmf of stall.rounds_distribution (a cap of 12 rounds)."""
    dist = rounds_distribution(np.array([u]), B, T, cap=12)
    pmf = np.diff(dist["cdf"], prepend=0.0)
    r = np.arange(1, 13)
    ok = pmf > 1e-250
    np.testing.assert_allclose(rounds_logp(r, u, B, T)[ok], np.log(pmf[ok]), rtol=1e-9, atol=1e-9)


def _rounds_only(rec, stall):
    step = np.asarray(rec.steps["step"])
    keep = step < stall if stall is not None else np.ones(len(step), bool)
    return scalars_record("r", step[keep], {"rounds": np.asarray(rec.steps["scalar/gen_batches"])[keep]},
                          num_generations=rec.meta["num_generations"], source=rec.meta["source"])


@pytest.mark.parametrize("a,b,rate,T,cap", [(1.5, 1.5, 0.02, 24, 0), (2.0, 1.2, -0.02, 16, 6)])
def test_rounds_only_fit_covers_the_truth(a, b, rate, T, cap):
    """12 simulated DAPO runs each of benchmarks/rounds_coverage.py's two scenarios (K = 8, rounds of 32 prompts, 150
    steps; seeds 0-11), only the rounds kept: the 95% intervals of the mixed share at the last step and of the drift
    (its profile likelihood's; up to its sign, which the rounds do not identify) each hold the truth in at least 10
    (P(X <= 9) = 2% at 95%). On the second scenario's seeds the Wald interval it replaced held the drift in 9
    (docs/doctor.md)."""
    K, S, B = 8, 150, 32
    mixed = drift = 0
    for seed in range(12):
        rec, stall = simulate_dapo(a, b, rate, K, S, B, T, cap, seed=seed)
        d = step_shares(_rounds_only(rec, stall), settings={"gen_batch": B, "train_batch": T, "cap": cap})
        f = fit_scalars(d, "logit")
        assert f["used"]["kinds"] == {"rounds": len(d.step)} and not f["identified"]["split"]
        g = rate * (d.step[-1] - d.step[0])
        tru = population_moments(np.array([np.log(a), np.log(b), g]), [1.0], K)
        u = 1 - tru["all_pass"][0] - tru["all_fail"][0]
        lo, hi = f["last"]["mixed_interval"]
        mixed += lo <= u <= hi
        lo, hi = f["intervals"]["drift"]
        assert f["interval_method"] == {"drift": "profile likelihood"}
        drift += lo <= g <= hi or lo <= -g <= hi
    assert mixed >= 10 and drift >= 10, (mixed, drift)


def test_rounds_without_the_batch_sizes_are_refused_naming_the_flags(tmp_path):
    rec, _ = simulate_dapo(1.5, 1.5, 0.02, 8, 20, 32, 24, 0, seed=1)
    ro = _rounds_only(rec, None)
    with pytest.raises(InputError, match="--gen-batch-size and --train-batch-size"):
        step_shares(ro)
    ro.steps["rounds"][:] = np.nan
    with pytest.raises(InputError, match="logs none of"):
        step_shares(ro, settings={"gen_batch": 32, "train_batch": 24})


def test_the_generator_writes_the_fixture(tmp_path):
    """The fixture is what tests/fixtures/ingest/make_verl_dapo_rounds.py writes (byte for byte)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", FIX.parent / "make_verl_dapo_rounds.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    mk.write(tmp_path)
    for name in ("metrics.jsonl", "truth.json", ".hydra/config.yaml"):
        assert (tmp_path / name).read_bytes() == (FIX / name).read_bytes(), name


def test_verl_dapo_file_logger_with_rounds_only_is_diagnosed(tmp_path, capsys):
    """verl's file logger of a DAPO run (rounds per step, critic/score/* over the trained groups, no share): ingested
    with K and the generation batch from .hydra/config.yaml; diagnose refuses without the batch sizes (exit 2,
    naming --trainer-config), and with the config fits the rounds: the mixed share at the last logged step within its
    interval, and the first step over the cap (the run raised at the next step) within its predictive interval."""
    truth = json.loads((FIX / "truth.json").read_text())
    rec = read_scalars(FIX / "metrics.jsonl")
    assert rec.meta["source"]["trainer"] == "verl-dapo" and rec.meta["num_generations"] == truth["K"]
    np.testing.assert_array_equal(rec.steps["rounds"][:3], [json.loads(x)["data"]["train/num_gen_batches"] for x in
                                                            (FIX / "metrics.jsonl").read_text().splitlines()[:3]])
    from grpo_lab.sims.record import write_record

    assert rec.meta["trainer_settings"]["gen_batch"] == truth["gen_batch"]  # kept at ingest (test_ingest_keeps_sizes)
    bare = rec.meta.pop("trainer_settings")
    write_record(tmp_path / "run", rec)  # as a record that keeps no sizes: refused, naming the flags
    assert main(["diagnose", str(tmp_path / "run")]) == 2
    assert "--trainer-config" in capsys.readouterr().err
    assert main(["diagnose", str(tmp_path / "run"), "--gen-batch-size", str(truth["gen_batch"]), "--train-batch-size",
                 str(truth["train_batch"]), "--max-num-gen-batches", str(truth["cap"]), "--json"]) == 0
    flags = json.loads(capsys.readouterr().out)
    assert flags["fit"]["used"]["kinds"] == {"rounds": truth["steps_logged"]}
    out = diagnose(rec, trainer_config=read_trainer_config(FIX / ".hydra" / "config.yaml"))
    assert bare["train_batch"] == truth["train_batch"] and bare["cap"] == truth["cap"]
    f = out["fit"]
    assert f["used"]["kinds"] == {"rounds": truth["steps_logged"]}
    s0, s1 = f["steps"]
    tru = population_moments(np.array([np.log(truth["alpha"]), np.log(truth["beta"]), truth["rate"] * (s1 - s0)]),
                             [1.0], truth["K"])
    lo, hi = f["last"]["mixed_interval"]
    assert lo <= 1 - tru["all_pass"][0] - tru["all_fail"][0] <= hi
    hit = out["stall_forecast"]["first_cap_hit"]
    plo, phi = hit["predictive"]
    assert plo <= truth["stall_step"] and (phi is None or truth["stall_step"] <= phi)
    assert "rounds" in " ".join(f["notes"])
