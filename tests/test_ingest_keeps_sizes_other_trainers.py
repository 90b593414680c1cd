"""Ingest keeps the batch sizes of tinker-cookbook and TRL runs too (``meta['trainer_settings']``, sims/doctor/
trainer_config.py ``settings_at_ingest``), where the files read give them: tinker's ``config.json`` beside its
metrics.jsonl (sims/doctor/configs/tinker.py), a TRL run's config given at ingest. An HF trainer state alone does not
give TRL's generation batch (no num_generations, no gradient accumulation in it): nothing is kept, ingest says so,
and diagnose refuses the stall forecast naming the flags. Read against the real runs of tests/fixtures/real."""

from __future__ import annotations

import json

import pytest

from grpo_lab.sims.doctor.trainer_config import read_trainer_config, settings_at_ingest
from grpo_lab.sims.ingest.trackers.common import load_config
from grpo_lab.sims.record import read_record
from grpo_lab.testing.cli import run_cli
from grpo_lab.testing.real_logs import REAL

TINKER = REAL / "tinker-rewardhack-inoculated-gs8-gpb16"
TAU = REAL / "trl-tau-bench"


def _run(argv) -> tuple[int, str, str]:
    proc = run_cli(*argv)
    return proc.returncode, proc.stdout, proc.stderr


def _sizes(s: dict) -> tuple:
    return s["train_batch"], s["gen_batch"], s["cap"], s["K"]


@pytest.mark.parametrize("name", ["tinker-rewardhack-inoculated-gs8-gpb16", "tinker-rlvr-gs32-gpb16",
                                  "tinker-arithmetic-gs4-gpb100"])
def test_a_tinker_run_keeps_its_config_json_sizes_at_ingest(name, tmp_path):
    """Independently of the reader: the config.json's dataset_builder (groups_per_batch, or batch_size in the older
    recipe) and group_size, as the file holds them."""
    raw = json.loads((REAL / name / "config.json").read_text())["dataset_builder"]
    groups = raw.get("groups_per_batch", raw.get("batch_size"))
    out = tmp_path / "rec"
    assert _run(["ingest", REAL / name / "metrics.jsonl", "--out", out])[0] == 0
    kept = read_record(out).meta["trainer_settings"]
    assert _sizes(kept) == (groups, groups, 0, raw["group_size"]) and kept["trainer"] == "tinker-cookbook"
    assert kept["keys"]["dataset_builder.group_size"] == raw["group_size"]
    # the same file given as --trainer-config reads to the same sizes
    assert _sizes(read_trainer_config(REAL / name / "config.json")) == _sizes(kept)


def test_diagnose_a_tinker_record_needs_no_flags(tmp_path):
    out = tmp_path / "rec"
    assert _run(["ingest", TINKER / "metrics.jsonl", "--out", out])[0] == 0
    rc, said, err = _run(["diagnose", out, "--json"])
    assert rc == 0, err
    d = json.loads(said)
    assert d["stall_forecast"]["available"] and d["stall_forecast"]["settings"]["train_batch"] == 16
    assert "needs the trainer's config" not in json.dumps(d["when"]["stall"])
    rc, said, _ = _run(["diagnose", out, "--max-num-gen-batches", "3", "--json"])  # one value over the kept sizes
    assert rc == 0 and json.loads(said)["stall_forecast"]["settings"]["cap"] == 3


def test_a_trl_trainer_state_alone_keeps_nothing_and_diagnose_names_the_flags(tmp_path):
    out = tmp_path / "rec"  # chaos-economy's state saved as training_logs.json: 50 rows, K 2 given
    rc, said, _ = _run(["ingest", REAL / "trl-chaos-economy-named" / "training_logs.json", "--num-generations", "2",
                        "--out", out])
    assert rc == 0 and "batch sizes not kept" in said and "gradient_accumulation_steps" in said
    assert "trainer_settings" not in read_record(out).meta
    rc, said, err = _run(["diagnose", out, "--json"])
    assert rc == 0, err
    assert "--trainer-config" in json.loads(said)["when"]["stall"]["reason"]


def test_a_trl_run_ingested_with_its_config_keeps_the_configs_arithmetic(tmp_path):
    """tau-bench's GRPOConfig (per_device 2, gradient accumulation 8, K 8): 2 x 8 / 8 = 2 prompts a generation
    batch, written out here from the file; its groups per logged row (x logging_steps 10 = 20) agree with the
    shares' lattice."""
    cfg = json.loads((TAU / "grpo_config.json").read_text())
    prompts = cfg["per_device_train_batch_size"] * cfg["gradient_accumulation_steps"] // cfg["num_generations"]
    out = tmp_path / "rec"
    assert _run(["ingest", TAU / "trainer_state.json", "--trainer-config", TAU / "grpo_config.json",
                 "--out", out])[0] == 0
    rec = read_record(out)
    assert _sizes(rec.meta["trainer_settings"]) == (prompts, prompts, 0, cfg["num_generations"])
    assert rec.meta["source"]["groups_per_row"]["agree"] is True


def test_a_config_the_logged_shares_refute_is_not_kept():
    """chaos-economy's script config states no gradient accumulation (not kept: the batch would rest on a default);
    stated as 1, its arithmetic (per_device 2, K 4: half a group a generation batch) is refused by the TRL reading
    itself; a refuted groups-per-row figure keeps nothing either."""
    cfg = load_config(REAL / "trl-chaos-economy-unified" / "grpo_config.json")
    kept, note = settings_at_ingest(cfg)
    assert kept is None and "gradient_accumulation_steps" in note
    kept, note = settings_at_ingest({**cfg, "gradient_accumulation_steps": 1})
    assert kept is None and "not a multiple of num_generations" in note
    ok = {**cfg, "gradient_accumulation_steps": 2}
    assert settings_at_ingest(ok)[0] is not None
    kept, note = settings_at_ingest(ok, groups_per_row={"agree": False, "config": 5.0, "value": 10.0})
    assert kept is None and "refute" in note and "--trainer-config" in note
