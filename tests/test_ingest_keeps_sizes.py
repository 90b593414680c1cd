"""Ingest keeps a verl run's batch sizes in the record (``meta['trainer_settings']``,
sims/doctor/trainer_config.py ``settings_at_ingest``), so ``diagnose``, ``watch`` and ``fleet`` on a rounds-only verl
DAPO log need no ``--trainer-config`` again (#39).

The logs: verl's file logger (``tests/fixtures/ingest/verl_dapo_rounds``: ``{"step", "data": {...}}`` lines with its
hydra ``.hydra/config.yaml`` beside, in the layout of verl's ``recipe/dapo`` configs) and the same rows as verl's
TensorBoard logger writes them (``SummaryWriter.add_scalar(key, value, step)``: ``simple_value`` summaries through
tensorboard's ``EventFileWriter``, which torch's ``SummaryWriter`` wraps; no config beside it, so ingest is given the
hydra config with ``--trainer-config``)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from grpo_lab.cli import main
from grpo_lab.sims.doctor.trainer_config import read_trainer_config, settings_from_record
from grpo_lab.sims.record import read_record

FIX = Path(__file__).parent / "fixtures" / "ingest" / "verl_dapo_rounds"
HYDRA = FIX / ".hydra" / "config.yaml"


def _run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


def _sizes(settings: dict) -> dict:
    return {k: settings[k] for k in ("train_batch", "gen_batch", "cap", "K", "enable", "scheme")}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    out = tmp_path_factory.mktemp("sizes") / "rec"
    assert _run(["ingest", FIX / "metrics.jsonl", "--out", out])[0] == 0
    return out


def test_the_record_keeps_the_hydra_configs_sizes(ingested):
    kept = read_record(ingested).meta["trainer_settings"]
    assert _sizes(kept) == _sizes(read_trainer_config(HYDRA))
    assert kept["keys"] == {"data.train_batch_size": 16, "data.gen_batch_size": 32, "actor_rollout_ref.rollout.n": 8,
                            "algorithm.filter_groups.enable": True, "algorithm.filter_groups.max_num_gen_batches": 4}
    assert settings_from_record(read_record(ingested).meta)["source"].startswith("the record")


def test_diagnose_without_flags_gives_the_same_when_as_with_them(ingested):
    rc, bare, _ = _run(["diagnose", ingested, "--json"])
    assert rc == 0
    rc, flagged, _ = _run(["diagnose", ingested, "--trainer-config", HYDRA, "--json"])
    assert rc == 0
    bare, flagged = json.loads(bare), json.loads(flagged)
    assert bare["when"] == flagged["when"]
    assert bare["when"]["stall"]["available"] and bare["fit"]["used"]["kinds"] == {"rounds": 166}
    assert bare["stall_forecast"]["settings"]["cap"] == 4


def test_watch_on_the_log_needs_no_flags(tmp_path):
    """``grpo-lab watch`` on the file logger's log with its hydra config beside: a stall forecast, no flag."""
    rc, out, err = _run(["watch", FIX / "metrics.jsonl", "--max-polls", "1", "--interval", "0"])
    assert rc == 0, err
    assert "forecast stall (first step over the cap)" in out and "cap of 4 rounds" in out


def _tensorboard_log(folder: Path) -> None:
    """The file logger's rows as verl's TensorBoard logger writes them (``add_scalar`` per key and step)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(folder))
    for line in (FIX / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key, value in row["data"].items():
            s = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=key, simple_value=float(value))])
            w.add_event(event_pb2.Event(summary=s, step=row["step"], wall_time=1.7e9 + row["step"]))
    w.close()


def test_a_tensorboard_log_ingested_with_the_hydra_config_keeps_the_same_sizes(tmp_path, ingested):
    tb = tmp_path / "tensorboard_log" / "dapo" / "run"
    tb.mkdir(parents=True)
    _tensorboard_log(tb)
    out = tmp_path / "rec"
    assert _run(["ingest", tb, "--trainer-config", HYDRA, "--out", out])[0] == 0
    rec, ref = read_record(out), read_record(ingested)
    assert _sizes(rec.meta["trainer_settings"]) == _sizes(ref.meta["trainer_settings"])
    assert list(rec.steps["rounds"]) == list(ref.steps["rounds"])
    # without the config at ingest nothing is kept, and diagnose names the flags to give, in one line, exit 2
    bare = tmp_path / "bare"
    assert _run(["ingest", tb, "--num-generations", "8", "--out", bare])[0] == 0
    assert "trainer_settings" not in read_record(bare).meta
    rc, _, err = _run(["diagnose", bare])
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "--trainer-config" in err and "--gen-batch-size and --train-batch-size" in err


def test_a_config_without_the_train_batch_is_said_at_ingest_and_diagnose_names_the_flags(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIX, run)
    cfg = run / ".hydra" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("  train_batch_size: 16\n", ""))
    out = tmp_path / "rec"
    rc, said, _ = _run(["ingest", run / "metrics.jsonl", "--out", out])
    assert rc == 0 and "data.train_batch_size is missing" in said and "--train-batch-size" in said
    assert "trainer_settings" not in read_record(out).meta
    rc, _, err = _run(["diagnose", out])
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "--train-batch-size" in err


# A lone flag overrides one value of the sizes the record keeps (flag > --trainer-config > stored), in each command
# that takes the flags: diagnose, watch, fleet.


def test_diagnose_a_lone_flag_overrides_one_stored_value(ingested):
    rc, out, err = _run(["diagnose", ingested, "--max-num-gen-batches", "2", "--json"])
    assert rc == 0, err
    s = json.loads(out)["stall_forecast"]["settings"]
    assert (s["cap"], s["gen_batch"], s["train_batch"]) == (2, 32, 16)  # the cap from the flag, the rest kept


def test_resolve_settings_layers_flag_over_file_over_stored(ingested):
    """What every command resolves its settings with (diagnose, watch's forecasts and alert, fleet's rows)."""
    from grpo_lab.sims.doctor.trainer_config import resolve_settings

    meta = read_record(ingested).meta
    got = resolve_settings(meta, read_trainer_config(gen_batch_size=48))
    assert (got["gen_batch"], got["train_batch"], got["cap"]) == (48, 16, 4)
    assert got["source"] == "the record (its config read at ingest) + flags"
    cfg = resolve_settings(meta, read_trainer_config(HYDRA, train_batch_size=8))
    assert cfg["source"].endswith("config.yaml + flags") and cfg["train_batch"] == 8
    assert resolve_settings(meta, None)["cap"] == 4
    # a cap or generation-batch flag asks for the flags' own loop: dynamic sampling on over a record that had it off
    off = {"trainer_settings": {**meta["trainer_settings"], "enable": False}}
    assert resolve_settings(off, read_trainer_config(max_num_gen_batches=2))["enable"] is True
    assert resolve_settings(off, read_trainer_config(train_batch_size=8))["enable"] is False
    # flags that give the train batch stand alone on a record that keeps no sizes; a lone other flag is refused
    assert resolve_settings({}, read_trainer_config(train_batch_size=8))["gen_batch"] == 8
    with pytest.raises(Exception, match="--max-num-gen-batches overrides one value"):
        resolve_settings({}, read_trainer_config(max_num_gen_batches=2))


def test_watch_a_lone_flag_overrides_the_stored_cap():
    rc, out, err = _run(["watch", FIX / "metrics.jsonl", "--max-polls", "1", "--interval", "0",
                         "--max-num-gen-batches", "2"])
    assert rc == 0, err
    assert "cap of 2 rounds" in out and "cap of 4 rounds" not in out


def test_fleet_a_lone_flag_overrides_the_stored_cap_and_is_refused_per_run_where_none_is_kept(ingested, tmp_path):
    folder = tmp_path / "fleet"
    folder.mkdir()
    shutil.copytree(ingested, folder / "rec")
    shutil.copytree(Path(__file__).parents[1] / "runs" / "broad-g4-dr_grpo-lr0.0008-s1", folder / "plain")  # no sizes
    rows = {}
    for flags in ([], ["--max-num-gen-batches", "2"]):
        rc, out, err = _run(["fleet", folder, "--quick", "--json", *flags])
        assert rc == 0, err
        rows[bool(flags)] = {r["run"]: r for r in json.loads(out)["runs"]}
    assert rows[False]["rec"]["settings"] == "the record's own config"
    assert rows[True]["rec"]["settings"] == "the record (its config read at ingest) + flags"
    assert "--max-num-gen-batches overrides one value" in rows[True]["plain"]["reason"]
