"""Real training logs from public repositories (tests/fixtures/real/, provenance in each SOURCE.md and in
index.json): each reads as given, its groups per logged row equal its config's arithmetic (or the
disagreement is named; a tinker row's own count, total_episodes / K, where the rows differ), and the lattice of
its logged shares is what the shares say."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.ingest.trackers.common import load_config
from grpo_lab.sims.ingest.trackers.lattice import share_lattice
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.real_logs import read_real, real_logs

REAL = Path(__file__).parent / "fixtures" / "real"
INDEX = json.loads((REAL / "index.json").read_text())
NAMES = sorted(INDEX)


def test_the_collection_spans_eight_runs_with_provenance():
    assert len(NAMES) >= 8 and [e["name"] for e in real_logs()] == NAMES
    assert {e["rewards"] for e in real_logs()} <= {"binary", "not binary", "unknown"}
    for name in NAMES:
        f = INDEX[name]
        src = (REAL / name / "SOURCE.md").read_text()
        for field in ("Repository", "Commit", "Licence", "K (num_generations)", "Batch sizes, where read"):
            assert field in src, (name, field)
        assert f["commit"] in src and str(f["K"]) in src
        assert (REAL / name / f["file"]).stat().st_size < 1 << 20


@pytest.mark.parametrize("name", NAMES)
def test_each_real_log_reads_as_given(name, tmp_path):
    """`grpo-lab ingest FILE` with no --format: the file is told by its content (a trainer state saved as
    training_logs.json included); every logged row becomes a step."""
    f = INDEX[name]
    out = tmp_path / "rec"
    proc = run_cli("ingest", REAL / name / f["file"], "--out", out, "--json", "--num-generations", f["K"])
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["trainer"] == f["trainer"] and got["steps"] == f["rows"]
    assert got["num_generations"] == f["K"]
    assert "frac_reward_zero_std" in got["dialect"]
    assert "groups_per_row" in got and got["groups_per_row"]["lattice"]["rows"] > 0


def _arithmetic(cfg: dict, K: int) -> float:
    """The trainer's groups per logged row, written out here independently of the reader: TRL's
    per_device x processes x GA x logging_steps / K (defaults: steps_per_generation = GA, one iteration);
    tinker's groups_per_batch (batch_size in older recipes; one row per iteration); verl's data.train_batch_size
    prompts (one row per training step, no dynamic sampling)."""
    for key in ("dataset_builder.groups_per_batch", "dataset_builder.batch_size"):  # tinker's names, newer and older
        if key in cfg:
            return float(cfg[key])
    if "data.train_batch_size" in cfg:
        return float(cfg["data.train_batch_size"])
    return (cfg["per_device_train_batch_size"] * cfg.get("num_processes", 1) * cfg.get("gradient_accumulation_steps", 1)
            * cfg["logging_steps"] / K)


@pytest.mark.parametrize("name", NAMES)
def test_groups_per_row_equal_the_configs_arithmetic(name):
    f = INDEX[name]
    cfg = load_config(REAL / name / f["config"])
    rec = read_real(name)
    gpr = rec.meta["source"]["groups_per_row"]
    expected = _arithmetic(cfg, f["K"])
    assert expected == f["groups_per_row"]
    shares = rec.steps["frac_reward_zero_std"]
    shares = shares[np.isfinite(shares)]
    on_lattice = np.allclose(shares * expected, np.round(shares * expected), atol=1e-6 * expected)
    episodes = np.array([np.nan])
    if f["file"].endswith(".jsonl"):
        raw = [json.loads(line) for line in (REAL / name / f["file"]).read_text().splitlines() if line.strip()]
        episodes = np.array([r.get("env/all/total_episodes", np.nan) for r in raw], float)
    if np.isfinite(episodes).all() and np.ptp(episodes) > 0:
        # tinker logs each row's trajectories: the row's own groups are total_episodes / K, the config's figure
        # those of a full iteration (an epoch's last batch, or a row some groups dropped out of, holds fewer)
        assert gpr["from"] == "logged" and gpr["agree"] is True
        np.testing.assert_array_equal(rec.steps["groups_per_step"], episodes / f["K"])
        assert (episodes / f["K"]).max() == expected
        return
    assert gpr["config"] == pytest.approx(expected)
    if on_lattice:  # the config holds: used, and agreeing wherever a share lies inside (0, 1)
        assert gpr["from"] == "config" and gpr["value"] == pytest.approx(expected)
        assert gpr["agree"] in (True, None)
        np.testing.assert_array_equal(rec.steps["groups_per_step"], expected)
    else:  # refuted by a logged share: the lattice's figure is used and the disagreement named
        assert gpr["agree"] is False and gpr["from"] == "lattice"
        assert gpr["value"] == f["lattice"]
        assert any("disagree" in n or "not all multiples" in n for n in rec.meta["source"]["notes"])


def test_the_chaos_economy_config_is_refuted_by_its_own_log():
    """The one real run whose script's arithmetic (2.5 groups a row) the logged shares (0, 0.2, 0.4) refute."""
    gpr = read_real("trl-chaos-economy-unified").meta["source"]["groups_per_row"]
    assert (gpr["config"], gpr["lattice"]["g"], gpr["agree"], gpr["value"]) == (2.5, 5, False, 5.0)


def test_k_alone_on_a_trainer_state_takes_one_process_and_no_accumulation_and_says_so():
    """tau-bench's state with K only: per_device 2 x logging 10 / 8 = 2.5 with GA = 1 assumed (said); its one
    share, 9/20, refutes that and the lattice's 20 is used: the config's 20 once --trainer-config gives GA 8."""
    rec = read_scalars(REAL / "trl-tau-bench" / "trainer_state.json", num_generations=8)
    src = rec.meta["source"]
    assert src["groups_per_row"]["config"] == 2.5 and src["groups_per_row"]["value"] == 20
    assert any("gradient_accumulation_steps 1" in n and "--trainer-config" in n for n in src["notes"])


@pytest.mark.parametrize("name", [n for n in NAMES if INDEX[n]["lattice"] is not None])
def test_the_lattice_of_each_real_log_is_the_one_its_shares_lie_on(name):
    f = INDEX[name]
    rec = read_scalars(REAL / name / f["file"], num_generations=f["K"])
    shares = rec.steps["frac_reward_zero_std"]
    lat = share_lattice(shares)
    assert lat["g"] == f["lattice"]
    # independently: every share is k / g, and for no smaller g
    fin = shares[np.isfinite(shares)]
    assert np.allclose(fin * lat["g"], np.round(fin * lat["g"]), atol=1e-6)
    assert all(not np.allclose(fin * g, np.round(fin * g), atol=1e-6 * g) for g in range(1, lat["g"]))


def test_tinker_runs_take_k_from_their_config_json_and_each_row_s_groups_from_its_episodes():
    """K from config.json beside the log (no flag); each row's groups = env/all/total_episodes / K, the config's
    groups_per_batch on every full row."""
    for name in NAMES:
        if INDEX[name]["trainer"] != "tinker-cookbook":
            continue
        rec = read_scalars(REAL / name / "metrics.jsonl")
        K = INDEX[name]["K"]
        assert rec.meta["num_generations"] == K
        raw = [json.loads(line) for line in (REAL / name / "metrics.jsonl").read_text().splitlines() if line.strip()]
        per_row = np.array([r["env/all/total_episodes"] for r in raw], float) / K
        np.testing.assert_array_equal(rec.steps["groups_per_step"], per_row)
        assert per_row.max() == INDEX[name]["groups_per_row"]


def test_tinker_arithmetic_run_counts_every_group_and_its_reward_is_correctness_plus_a_format_penalty():
    """arvindcr4/tinker-rl-lab's arithmetic run, read against the log's own columns: every row holds
    K x groups_per_batch episodes (4 x 100), the zero-std share the reader gives is 1 - frac_mixed (tinker's
    all-same test), and the reward is correct + 0.1 (format - 1), so it is binary only where format is 1
    (steps 6-99), as its SOURCE.md says."""
    name = "tinker-arithmetic-gs4-gpb100"
    raw = [json.loads(line) for line in (REAL / name / "metrics.jsonl").read_text().splitlines() if line.strip()]
    cfg = load_config(REAL / name / "config.json")
    assert {r["env/all/total_episodes"] for r in raw} == {cfg["dataset_builder.group_size"] * cfg["dataset_builder.groups_per_batch"]}
    rec = read_real(name)
    mixed = np.array([r["env/all/by_group/frac_mixed"] for r in raw])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], 1.0 - mixed, atol=1e-12)
    total = np.array([r["env/all/reward/total"] for r in raw])
    correct = np.array([r["env/all/correct"] for r in raw])
    fmt = np.array([r["env/all/format"] for r in raw])
    np.testing.assert_allclose(total, correct + 0.1 * (fmt - 1.0), atol=1e-12)
    assert [r["step"] for r, f in zip(raw, fmt) if f < 1.0] == [0, 1, 2, 3, 4, 5]


REWARD_HACKING = {  # name: (steps with a truncated format failure (-0.3), steps with every group all-good)
    "tinker-rewardhack-okay-gs8-gpb16": ([1], [18, 23]),
    "tinker-rewardhack-inoculated-gs8-gpb16": ([13, 14, 16], []),
}


@pytest.mark.parametrize("name", sorted(REWARD_HACKING))
def test_tinker_reward_hacking_runs_count_each_row_s_groups_and_their_format_failures_are_penalties(name):
    """daniel-dwu's reward-hacking runs, read against the log's own columns: a row's groups are total_episodes / K
    (16, and 13 on each epoch's last iteration: 93 problems an epoch), the zero-std share the reader gives is
    1 - frac_mixed (tinker's all-same test), and the reward is test_pass (0 or
    1) with -0.1 for a format failure and -0.3 for a truncated one, so it is 0/1 only where format is 1, as their
    SOURCE.md say. With "hacking is okay" at sampling every group ends all-good; under the neutral prompt none."""
    truncated_at, all_good_at = REWARD_HACKING[name]
    raw = [json.loads(line) for line in (REAL / name / "metrics.jsonl").read_text().splitlines()]
    cfg = load_config(REAL / name / "config.json")
    K, batch = cfg["dataset_builder.group_size"], cfg["dataset_builder.batch_size"]
    episodes = np.array([r["env/all/total_episodes"] for r in raw])
    assert [r["step"] for r, n in zip(raw, episodes) if n != K * batch] == [5, 11, 17, 23]
    assert set(episodes[[5, 11, 17, 23]]) == {13 * K}
    rec = read_real(name)
    np.testing.assert_array_equal(rec.steps["groups_per_step"], episodes / K)
    mixed = np.array([r["env/all/by_group/frac_mixed"] for r in raw])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], 1.0 - mixed, atol=1e-12)
    test_pass = np.array([r["env/all/test_pass"] for r in raw])
    fails = np.round((1.0 - np.array([r["env/all/format"] for r in raw])) * episodes)
    total = np.array([r["env/all/reward/total"] for r in raw])
    truncated = np.round((test_pass - 0.1 * fails / episodes - total) * episodes / 0.2, 9)
    assert [r["step"] for r, t in zip(raw, truncated) if t] == truncated_at and set(truncated) == {0, 1}
    assert all(0 <= t <= f for t, f in zip(truncated, fails))
    assert [r["env/all/hack"] for r in raw] == test_pass.tolist()
    assert [r["step"] for r in raw if r["env/all/by_group/frac_all_good"] == 1.0] == all_good_at


def test_verl_mixed_cuts_run_logs_its_own_group_count_and_its_rewards_are_binary():
    """The verl run, read against the log's own columns: every row's diagnostics are over data.train_batch_size
    groups of K (mixed_cuts/n_groups, group_size_mean, rollouts per step), the zero-std share the reader takes is
    the sum of the all-correct and all-wrong shares, and the rewards are 0/1: reward/var = mean (1 - mean) on
    every row, which rewards in [0, 1] reach only when each is 0 or 1."""
    name = "verl-mixedcuts-math-grpo-k16"
    raw = [json.loads(line) for line in (REAL / name / "metrics.jsonl").read_text().splitlines()]
    cfg = load_config(REAL / name / "config.yaml")
    K, batch = cfg["actor_rollout_ref.rollout.n"], cfg["data.train_batch_size"]
    assert {(r["mixed_cuts/n_groups"], r["mixed_cuts/group_size_mean"], r["mixed_cuts/rollouts_generated_per_step"])
            for r in raw} == {(batch, K, batch * K)}
    rec = read_real(name)
    assert rec.meta["source"]["trainer"] == "verl-mixed-cuts"
    zero = np.array([r["mixed_cuts/advantage_collapse_rate"] for r in raw])
    both = np.array([r["mixed_cuts/all_correct_frac"] + r["mixed_cuts/all_wrong_frac"] for r in raw])
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], zero, atol=1e-12)
    np.testing.assert_allclose(zero, both, atol=1e-12)
    mean = np.array([r["critic/score/mean"] for r in raw])
    np.testing.assert_allclose([r["reward/var"] for r in raw], mean * (1 - mean), atol=1e-12)
    assert {(r["critic/score/min"], r["critic/score/max"]) for r in raw} == {(0.0, 1.0)}


def test_the_doctor_names_each_real_run_s_rewards_as_its_source_does():
    """run.rewards from what each log holds equals the kind its SOURCE.md records from the run's code (the one-row
    log excepted: the doctor refuses it)."""
    from grpo_lab.sims.doctor.diagnose import diagnose

    for name in NAMES:
        rec = read_real(name)
        if len(rec.steps["step"]) < 3:
            continue
        assert diagnose(rec)["run"]["rewards"] == INDEX[name]["rewards"], name


def test_a_logged_variance_above_m_1_m_says_the_rewards_are_not_binary():
    """The verl run's reward/var raised by 0.05 (rewards in [0, 1] that are not all 0 or 1 have a variance below
    m (1 - m), and a variance above it takes rewards outside [0, 1]): not binary; as logged: binary."""
    from grpo_lab.sims.doctor.rewards import classify_scalars

    rec = read_real("verl-mixedcuts-math-grpo-k16")
    K = INDEX["verl-mixedcuts-math-grpo-k16"]["K"]
    assert classify_scalars(rec.steps, K, rec.meta.get("source"))["rewards"] == "binary"
    raised = {**rec.steps, "scalar/reward/var": np.asarray(rec.steps["scalar/reward/var"]) + 0.05}
    got = classify_scalars(raised, K, rec.meta.get("source"))
    assert got["rewards"] == "not binary" and "reward/var" in got["rewards_why"][0]


BINARY = [n for n in NAMES if INDEX[n]["rewards"] == "binary"]


@pytest.mark.parametrize("name", BINARY)
def test_the_doctors_90_band_holds_at_least_80_percent_of_later_rows_on_each_binary_run(name):
    """Issue #39: back-test coverage of the 90% band on the binary real runs (`grpo-lab diagnose --backtest`):
    the forecast refitted on the first 40/50/60/70% of the rows, scored on the rest."""
    from grpo_lab.sims.doctor.diagnose import diagnose

    bt = diagnose(read_real(name), backtest=True)["backtest"]
    assert bt["available"] and bt["level"] == 0.9
    assert bt["scored"] > 0 and bt["held"] / bt["scored"] >= 0.8, (bt["held"], bt["scored"])


TIED = [n for n in NAMES if INDEX[n]["rewards"] == "not binary" and INDEX[n]["rows"] >= 20]


@pytest.mark.parametrize("name", TIED)
def test_the_tie_share_trend_s_90_band_holds_at_least_80_percent_of_later_rows_on_each_run_with_other_rewards(name):
    """The same back-test on the real runs whose rewards are not binary (at least 20 rows), where the doctor
    forecasts the share of groups whose K rewards tie with its own trend: refitted on the first 40/50/60/70% of the
    rows, scored on the rest."""
    from grpo_lab.sims.doctor.diagnose import diagnose

    d = diagnose(read_real(name), backtest=True)
    bt = d["backtest"]
    assert d["run"]["rewards"] == "not binary" and bt["available"] and bt["level"] == 0.9
    assert bt["model"] == "tie-share trend"
    assert bt["scored"] > 0 and bt["held"] / bt["scored"] >= 0.8, (bt["held"], bt["scored"])



def test_the_tie_trend_s_next_row_band_holds_what_the_log_s_last_rows_logged():
    """A forecast never contradicts the log it came from: tinker-arithmetic's mixed share fell from 81% to 4% in four
    steps and stayed near 1% (0-3 of 100 groups a row) for 95 more; the whole log's logit line carried it on to 0
    (its band for the next row [0.0%, 0.0%], which 18 of the last 30 rows would hold). The recent window's band
    holds at least 80% of them, and its back-test is scored with a band narrow enough to miss."""
    from grpo_lab.sims.doctor.diagnose import diagnose

    d = diagnose(read_real("tinker-arithmetic-gs4-gpb100"), backtest=True)
    band = d["expiry"]["projection"]["predictive"]
    lo, hi = band["lo"][0], band["hi"][0]
    last = 1 - np.asarray(d["tie_fit"]["series"]["observed_tie"][-30:], float)  # the mixed share the rows logged
    assert d["tie_fit"]["window"]["kept"] == "recent"
    assert np.mean((last >= lo - 1e-12) & (last <= hi + 1e-12)) >= 0.8, (lo, hi, last)
    bt = d["backtest"]
    widths = np.concatenate([np.subtract(c["series"]["hi"], c["series"]["lo"]) for c in bt["cuts"] if "held" in c])
    assert bt["median_width"] == float(np.median(widths)) < 0.1
    assert bt["held"] / bt["scored"] >= 0.8


def test_a_back_test_whose_band_spans_every_share_says_so_and_a_tie_share_never_off_zero_has_no_slope():
    """tinker-rlvr-gs32-gpb16: no row logs a tied group (K = 32 rubric rewards): the trend's slope is not identified
    (no interval of a million logits) and its back-test's band spans 0-100%, which the line says. The report gives
    the forecast before the pass-rate fit it keeps for reference only."""
    from grpo_lab.doctor_report import text_report
    from grpo_lab.sims.doctor.diagnose import diagnose
    from grpo_lab.sims.jsonable import jsonable

    out = text_report(jsonable(diagnose(read_real("tinker-rlvr-gs32-gpb16"), backtest=True)))
    assert "slope not identified (at the bound: every row ties or none does)" in out and "1165" not in out
    assert "the band spanning 0-100% at most rows (it cannot miss there)" in out
    # the forecast (the tie trend's expiry, band and stall forecast) stands before the reference-only pass-rate fit
    head = out.index("the pass-rate fit below does not apply to these rewards (kept for reference only):")
    assert out.index("\nexpiry: ") < head < out.index("\nscalars fit (")
    assert out.index("mixed share a row of") < head and out.index("\nstall forecast") < head
    from grpo_lab.doctor_report import html_report

    page = html_report(jsonable(diagnose(read_real("tinker-rlvr-gs32-gpb16"))))
    assert "<h2>Fit from the per-step shares (the pass-rate fit: for reference only, the rewards are not binary)</h2>" \
        in page


def test_a_trl_config_that_trl_itself_would_refuse_names_what_to_add(tmp_path):
    """Chaos-Economy's script config (per_device_train_batch_size 2, num_generations 4, no processes or accumulation):
    a generation batch of 2 completions, which TRL refuses for K = 4, so the run had settings the config lacks.
    ``diagnose --trainer-config`` refuses in one line that names the missing keys and the flags that replace it."""
    entry, folder = INDEX["trl-chaos-economy-unified"], REAL / "trl-chaos-economy-unified"
    rec = tmp_path / "rec"
    got = run_cli("ingest", folder / entry["file"], "--trainer-config", folder / entry["config"], "--out", rec,
                  "--no-progress")
    assert got.returncode == 0, got.stderr
    got = run_cli("diagnose", rec, "--trainer-config", folder / entry["config"])
    lines = got.stderr.strip().splitlines()
    assert got.returncode == 2 and len(lines) == 1 and lines[0].startswith("grpo-lab diagnose: error: "), got.stderr
    for words in ("the generation batch (2 completions) is not a multiple of num_generations (4)", "num_processes",
                  "gradient_accumulation_steps", "--gen-batch-size and --train-batch-size"):
        assert words in lines[0], (words, lines[0])
    assert run_cli("diagnose", rec, "--gen-batch-size", "1", "--train-batch-size", "1").returncode == 0
