"""Logs read as they are given, by content not by name: an HF trainer state under any name (written by
transformers' own TrainerState.save_to_json), a bare list of its log_history rows, a TRL output folder of
checkpoints, early TRL names, hydra's override lists; and the lattice of logged shares against a simulated
log whose groups per row are known."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import detect_format, read_scalars
from grpo_lab.sims.ingest.trackers.common import load_config, overrides_mapping
from grpo_lab.sims.ingest.trackers.dialects import trl_groups_per_log
from grpo_lab.sims.ingest.trackers.lattice import resolve, share_lattice
from grpo_lab.testing.cli import run_cli


def _shares(rng, g: int, rows: int, p_zero: float = 0.4, gens: int = 1) -> np.ndarray:
    """Simulated frac_reward_zero_std rows: each of ``gens`` generations of ``g // gens`` groups draws its
    zero-std count Binomial(n, p_zero); the row is the mean of the generations' shares (TRL's log())."""
    n = g // gens
    counts = rng.binomial(n, p_zero, size=(rows, gens))
    return (counts / n).astype(np.float32).astype(float).mean(axis=1)  # float32 as TRL logs it


def _history(rng, g: int, rows: int, *, early: bool = False) -> list[dict]:
    out = []
    for step, zs in enumerate(_shares(rng, g, rows), 1):
        row = {"step": step, "reward": 0.5, "reward_std": 0.4, "completion_length": 100.0, "loss": 0.0}
        if not early:
            row["frac_reward_zero_std"] = float(zs)
        out.append(row)
    return out


def _save_state(path, history, **kw):
    from transformers import TrainerState

    path.parent.mkdir(parents=True, exist_ok=True)
    TrainerState(log_history=history, **kw).save_to_json(str(path))
    return path


@pytest.mark.parametrize("g,gens", [(24, 1), (20, 4), (7, 1), (64, 2)])
def test_the_lattice_recovers_a_simulated_logs_groups_per_row(g, gens):
    rng = np.random.default_rng(g)
    zs = _shares(rng, g, 300, gens=gens)
    lat = share_lattice(zs)
    assert lat["g"] == g and lat["informative"]


def test_a_rounded_logs_lattice_is_its_rounding_and_is_not_used():
    zs = np.round(_shares(np.random.default_rng(1), 24, 200), 3)  # 1/24 = 0.041666..: rounded to 1/1000s
    lat = share_lattice(zs)
    assert lat["g"] == 1000 and lat["rounded"] and not lat["informative"]
    res = resolve(None, None, [zs])
    assert res["value"] is None and "rounding" in res["note"]
    kept = resolve(24.0, "config", [zs])  # nor does the rounding refute a config
    assert (kept["from"], kept["agree"]) == ("config", None)
    rng = np.random.default_rng(2)
    odd = np.clip(_shares(rng, 24, 200) + rng.uniform(1e-4, 1e-3, 200), 0, 1)  # shares that are no counts at all
    assert share_lattice(odd)["g"] is None
    assert "no lattice" in resolve(None, None, [odd])["note"]


def test_resolve_keeps_a_config_its_shares_agree_with_and_replaces_one_they_refute():
    zs = _shares(np.random.default_rng(3), 20, 100)
    kept = resolve(40.0, "config", [zs])  # 40 is a multiple of the true 20: every share is k/40 too
    assert (kept["from"], kept["value"], kept["agree"]) == ("config", 40.0, True)
    whole = resolve(2.5, "config", [np.zeros(5)])  # no share inside (0, 1), but 2.5 groups cannot be
    assert (whole["value"], whole["agree"]) == (None, False) and "whole number" in whole["note"]
    refuted = resolve(4.0, "config", [zs])  # the issue's 4 a row instead of 20
    assert (refuted["from"], refuted["value"], refuted["agree"]) == ("lattice", 20.0, False)
    assert "4" in refuted["note"] and "20" in refuted["note"]


def test_trl_arithmetic_matches_grpo_configs_own_generation_batch():
    """TRL's groups per logged row: generation_batch_size / K x logging_steps x GA / (steps_per_generation x
    num_iterations), with generation_batch_size and steps_per_generation as GRPOConfig.__post_init__ sets them."""
    cfg = {"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 3,
           "logging_steps": 5, "num_processes": 2}
    got, how = trl_groups_per_log(cfg, 4)
    assert got == 8 * 2 * 3 / 4 * 5  # one generation per optimizer step (spg = GA), five steps a row
    assert "assumed" not in how and "taken as" not in how
    cfg2 = {**cfg, "generation_batch_size": 96, "steps_per_generation": 6, "num_iterations": 2}
    got2, _ = trl_groups_per_log(cfg2, 4)
    assert got2 == 96 / 4 * max(1, 5 * 3 / (6 * 2))  # one generation every 12 micro-steps, 15 a row
    got3, how3 = trl_groups_per_log({"per_device_train_batch_size": 8}, 4)
    assert got3 == 2 and "gradient_accumulation_steps 1" in how3 and "logging_steps 1" in how3


def test_a_trainer_state_under_another_name_is_read_by_content(tmp_path):
    rng = np.random.default_rng(5)
    f = _save_state(tmp_path / "run_log.json", _history(rng, 16, 60), logging_steps=4, train_batch_size=16)
    assert detect_format(f) == "jsonl"
    rec = read_scalars(f, num_generations=4)
    src = rec.meta["source"]
    assert src["trainer"] == "trl" and len(rec.steps["step"]) == 60
    assert "saved as run_log.json" in " ".join(src["notes"])
    # the state's own logging_steps 4 and per-device batch 16 with K 4: 16 x 4 / 4 = 16, the lattice's figure
    gpr = src["groups_per_row"]
    assert gpr["config"] == 16 and gpr["lattice"]["g"] == 16 and gpr["agree"] is True


def test_a_bare_list_of_log_history_rows(tmp_path):
    rng = np.random.default_rng(6)
    f = tmp_path / "history.json"
    f.write_text(json.dumps(_history(rng, 12, 40)))
    assert detect_format(f) == "jsonl"
    rec = read_scalars(f, num_generations=4)
    assert "a bare list of log_history rows" in " ".join(rec.meta["source"]["notes"])
    gpr = rec.meta["source"]["groups_per_row"]
    assert gpr["from"] == "lattice" and gpr["value"] == 12  # no config: the lattice, said
    np.testing.assert_array_equal(rec.steps["groups_per_step"], 12)


def test_a_wandb_history_export_is_still_read_as_wandb(tmp_path):
    f = tmp_path / "export.json"
    f.write_text(json.dumps([{"_step": 1, "train/frac_reward_zero_std": 0.25}]))
    assert detect_format(f) == "wandb"


def test_a_trl_output_folder_reads_its_latest_checkpoint_and_says_so(tmp_path):
    rng = np.random.default_rng(7)
    hist = _history(rng, 8, 30)
    out = tmp_path / "grpo-out"
    _save_state(out / "checkpoint-10" / "trainer_state.json", hist[:10], logging_steps=1, train_batch_size=8)
    _save_state(out / "checkpoint-30" / "trainer_state.json", hist, logging_steps=1, train_batch_size=8)
    _save_state(out / "checkpoint-9" / "trainer_state.json", hist[:9], logging_steps=1, train_batch_size=8)
    assert detect_format(out) == "jsonl"
    rec = read_scalars(out, num_generations=4)
    assert len(rec.steps["step"]) == 30
    assert any("checkpoint-30/trainer_state.json" in n for n in rec.meta["source"]["notes"])
    proc = run_cli("ingest", out, "--format", "trl", "--out", tmp_path / "rec", "--json", "--num-generations", "4")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["steps"] == 30  # --format trl without completions: the state's scalars


def test_early_trl_names_are_trls_and_the_missing_share_is_said(tmp_path):
    f = _save_state(tmp_path / "trainer_state.json", _history(np.random.default_rng(8), 8, 20, early=True))
    rec = read_scalars(f, num_generations=4)
    src = rec.meta["source"]
    assert src["trainer"] == "trl" and "frac_reward_zero_std" in src["missing"]
    assert any("no frac_reward_zero_std" in n for n in src["notes"])


def test_hydra_overrides_are_read_as_the_mapping_they_set(tmp_path):
    items = ["data.train_batch_size=64", "data.gen_batch_size=96", "actor_rollout_ref.rollout.n=8",
             "algorithm.filter_groups.enable=True", "+algorithm.filter_groups.max_num_gen_batches=10",
             "trainer.use_v1=false", "~trainer.logger"]
    assert overrides_mapping(items, "x")["actor_rollout_ref.rollout.n"] == 8
    f = tmp_path / "overrides.yaml"
    f.write_text(yaml.safe_dump(items))
    s = read_trainer_config(f)
    assert (s["trainer"], s["train_batch"], s["gen_batch"], s["cap"], s["K"], s["enable"]) == (
        "verl", 64, 96, 10, 8, True)
    assert load_config(f)["data.gen_batch_size"] == 96
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(["data.train_batch_size"]))
    with pytest.raises(InputError, match="not a hydra override"):
        read_trainer_config(bad)


def test_verls_file_logger_takes_k_and_sizes_from_the_hydra_config_beside_it(tmp_path):
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(yaml.safe_dump(
        {"data": {"train_batch_size": 32, "gen_batch_size": 48}, "actor_rollout_ref": {"rollout": {"n": 16}}}))
    lines = [{"step": s, "data": {"train/num_gen_batches": 1 + s % 2, "critic/score/mean": 0.5}} for s in range(1, 9)]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    rec = read_scalars(run / "metrics.jsonl")
    src = rec.meta["source"]
    assert src["trainer"] == "verl-dapo" and rec.meta["num_generations"] == 16
    np.testing.assert_array_equal(rec.steps["groups_per_step"], [48 * (1 + s % 2) for s in range(1, 9)])
    np.testing.assert_array_equal(rec.steps["rounds"], [1 + s % 2 for s in range(1, 9)])  # the rounds, as logged
    assert any(".hydra/config.yaml" in n for n in src["notes"])
    # a verl run without the DAPO recipe's count: told by critic/score/mean, refused naming what it lacks
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}}) + "\n")
    with pytest.raises(InputError, match="train/num_gen_batches"):
        read_scalars(run / "metrics.jsonl")


def test_ingest_trainer_config_fills_what_the_log_lacks(tmp_path):
    rng = np.random.default_rng(9)
    f = _save_state(tmp_path / "trainer_state.json", _history(rng, 20, 50), logging_steps=10, train_batch_size=2)
    cfg = tmp_path / "grpo.json"
    cfg.write_text(json.dumps({"num_generations": 8, "gradient_accumulation_steps": 8}))
    proc = run_cli("ingest", f, "--out", tmp_path / "rec", "--json", "--trainer-config", cfg)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["num_generations"] == 8
    assert got["groups_per_row"]["config"] == 20 and got["groups_per_row"]["agree"] is True


def test_a_namespace_wandb_stored_as_its_repr_is_read_as_its_keys():
    """OpenRLHF 0.11 passes args.__dict__ with SimpleNamespace sections to wandb.init; W&B stores each as its repr
    (the wandb_orlhf fixture holds such a run, written by wandb): read from the syntax tree, never evaluated."""
    from grpo_lab.sims.ingest.trackers.common import flatten, parse_namespace
    from grpo_lab.sims.ingest.trackers.wandb import find_runs, read_run
    from pathlib import Path

    (name, f), = find_runs(Path(__file__).parent / "fixtures" / "trackers" / "wandb_orlhf").items()
    cfg = read_run(name, f, max_bytes=1 << 24).config
    assert cfg["rollout.n_samples_per_prompt"] == 8 and cfg["algo.advantage.estimator"] == "group_norm"
    assert cfg["algo.dynamic_filtering_range"] == [0.0, 1.0]
    assert parse_namespace("namespace(a=-1, b=[1, 'x'], c=None, d=namespace(e=True))") == {
        "a": -1, "b": [1, "x"], "c": None, "d": {"e": True}}
    for hostile in ("namespace(a=__import__('os').getcwd())", "namespace(a=1", "namespace(" * 10_000 + ")" * 10_000,
                    "namespace(*x)", "os.system('x')"):
        assert parse_namespace(hostile) is None
    assert flatten({"rollout": "namespace(a=__import__('os'))"}) == {"rollout": "namespace(a=__import__('os'))"}


def test_a_roll_config_is_read_as_rolls_not_as_slimes(tmp_path):
    """ROLL shares slime's rollout_batch_size; its own keys (num_return_sequences_in_group, per-domain
    query_filter_config, generate_opt_level) make it ROLL's, read with ROLL's loop (alibaba/ROLL 8eb27cc)."""
    roll = {"rollout_batch_size": 32, "num_return_sequences_in_group": 8, "generate_opt_level": 0,
            "rewards": {"math_rule": {"query_filter_config": {"type": "std_filter", "filter_args": {"std_threshold": 0}}},
                        "code": {"query_filter_config": {"type": "no_filter"}}}}
    f = tmp_path / "rlvr_config.yaml"
    f.write_text(yaml.safe_dump(roll))
    s = read_trainer_config(f)
    assert (s["trainer"], s["train_batch"], s["gen_batch"], s["K"], s["enable"], s["scheme"], s["cap"]) == (
        "roll", 32, 32, 8, True, "rounds", 0)
    f.write_text(yaml.safe_dump({**roll, "generate_opt_level": 1, "rewards": {"math": {}}}))
    s = read_trainer_config(f)
    assert (s["scheme"], s["enable"]) == ("replace", False) and "concurrency" in s["note"]
    f.write_text(yaml.safe_dump({**roll, "rewards": {"math": {"query_filter_config": {"type": "median"}}}}))
    with pytest.raises(InputError, match="query_filter_config.type"):
        read_trainer_config(f)
    slime = tmp_path / "slime.json"
    slime.write_text(json.dumps({"rollout_batch_size": 32, "n_samples_per_prompt": 8}))
    assert read_trainer_config(slime)["trainer"] == "slime"


def test_a_survivors_only_dump_gets_its_rounds_from_the_runs_tracker_log(tmp_path):
    """verl-recipe's DAPO loop (run for real by tests/fixtures/ingest/make_verl_dapo.py) dumps the trained groups
    only; --metrics joins its file logger's train/num_gen_batches as the record's rounds, equal to the rounds the
    stand-in rollout counted (truth.json)."""
    from pathlib import Path

    from grpo_lab.sims.record import read_record

    fix = Path(__file__).parent / "fixtures" / "ingest" / "verl_matrix" / "dapo_filter"
    truth = json.loads((fix / "truth.json").read_text())["rounds"]
    dump = tmp_path / "rollouts"
    dump.mkdir()
    for f in (fix / "run" / "rollouts").glob("*.jsonl"):  # the dump alone, as a user may have it
        (dump / f.name).write_bytes(f.read_bytes())
    alone = run_cli("ingest", dump, "--format", "verl", "--out", tmp_path / "a", "--json")
    assert alone.returncode == 0, alone.stderr
    assert "rounds" not in read_record(tmp_path / "a").steps
    proc = run_cli("ingest", dump, "--format", "verl", "--out", tmp_path / "b", "--json",
                   "--metrics", fix / "run" / "metrics.jsonl")
    assert proc.returncode == 0, proc.stderr
    rec = read_record(tmp_path / "b")
    steps = rec.steps["step"]
    want = np.array([truth.get(str(int(s)), np.nan) for s in steps], float)
    np.testing.assert_array_equal(rec.steps["rounds"], want)
    assert rec.meta["source"]["metrics"]["rounds"] == "train/num_gen_batches"
    assert np.nanmax(rec.steps["rounds"]) > 1
    other = tmp_path / "other.jsonl"  # a log of another run: no shared step, refused in one line
    other.write_text(json.dumps({"step": 10_000, "data": {"train/num_gen_batches": 1}}) + "\n")
    bad = run_cli("ingest", dump, "--format", "verl", "--out", tmp_path / "c", "--metrics", other)
    assert bad.returncode == 2 and "share none" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_format_trl_on_a_state_alone_writes_the_scalars_record_diagnose_reads(tmp_path):
    """`--format trl` on a trainer state (a file, or an output folder of checkpoints without completion logs) gives
    the scalars record with the shares, not a group record with none (the issue's "logs no share")."""
    from grpo_lab.sims.record import read_record

    f = _save_state(tmp_path / "s" / "trainer_state.json", _history(np.random.default_rng(10), 8, 30),
                    logging_steps=1, train_batch_size=8)
    proc = run_cli("ingest", f, "--format", "trl", "--out", tmp_path / "r", "--num-generations", "4")
    assert proc.returncode == 0, proc.stderr
    rec = read_record(tmp_path / "r")
    assert rec.meta["scalars_only"] and np.isfinite(rec.steps["frac_reward_zero_std"]).all()
    np.testing.assert_array_equal(rec.steps["groups_per_step"], 8)


def test_a_config_giving_part_of_a_group_per_row_is_not_kept(tmp_path):
    """A state whose shares are all 0 or 1 cannot check the config; 2 completions a row at K = 4 is half a group,
    so no groups_per_step is written and the note says why."""
    hist = [{"step": s, "reward": 1.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0} for s in range(1, 11)]
    f = _save_state(tmp_path / "trainer_state.json", hist, logging_steps=1, train_batch_size=2)
    rec = read_scalars(f, num_generations=4)
    src = rec.meta["source"]
    assert np.isnan(rec.steps["groups_per_step"]).all() and "groups_per_step" in src["missing"]
    assert src["groups_per_row"]["agree"] is False and any("whole number" in n for n in src["notes"])
