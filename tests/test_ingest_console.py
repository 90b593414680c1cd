"""An HF Trainer's console log (tests/fixtures/ingest/trl_console: TRL's GRPOTrainer writing its stdout and stderr to
train.log, tests/fixtures/ingest/make_trl_console.py) read back: every printed row equals the same run's
``trainer_state.json`` ``log_history`` row (the truth written by the trainer at the same time) to the 4 significant
digits transformers 5 prints; the steps are the state's where the progress bar printed them, the rows' order (said)
where it did not; the groups per row from TRL's arithmetic agree with the lattice; bad consoles are one line."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import detect_format, read_run_scalars, read_scalars
from grpo_lab.sims.ingest.trackers.console import MAX_LINE, parse_console
from grpo_lab.sims.ingest.trackers.follow import LogFollower
from grpo_lab.testing.cli import run_cli

FIX = Path(__file__).parent / "fixtures" / "ingest" / "trl_console"


def _history(run: str) -> list[dict]:
    return json.loads((FIX / run / "trainer_state.json").read_text())["log_history"]


def _printed(x: float) -> float:
    """What transformers 5's ProgressCallback / PrinterCallback print of a float (``f"{v:.4g}"``), read back."""
    return float(f"{x:.4g}")


@pytest.mark.parametrize("run", ["bar", "printer"])
def test_every_printed_row_equals_the_trainer_state_row(run):
    rs = read_run_scalars(FIX / run / "train.log")
    hist = [h for h in _history(run)]
    assert rs.fmt == "console"
    order = sorted({h["step"] for h in hist})
    for name, (steps, values) in rs.series.items():
        truth = [(h["step"], h[name]) for h in hist if name in h]
        assert len(truth) == len(steps), name
        if run == "bar":  # the bar's counter is the state's step
            assert steps.tolist() == [s for s, _ in truth], name
        else:  # no bar: the rows' order, 1, 2, ...
            assert steps.tolist() == [order.index(s) + 1 for s, _ in truth], name
        assert values.tolist() == pytest.approx([_printed(v) for _, v in truth], rel=0, abs=0), name
    logged = {k for h in hist for k in h} - {"step", "epoch", "total_flos"}
    assert set(rs.series) == logged


def test_the_bar_gives_logging_steps_and_the_rows_order_is_said():
    bar = read_run_scalars(FIX / "bar" / "train.log")
    settings = json.loads((FIX / "bar" / "settings.json").read_text())
    assert bar.config == {"logging_steps": settings["logging_steps"]}
    printer = read_run_scalars(FIX / "printer" / "train.log")
    assert printer.config == {}
    assert any("steps are the logged rows' order" in n for n in printer.notes)


def test_auto_detection_file_and_folder():
    assert detect_format(FIX / "bar" / "train.log") == "console"
    assert detect_format(FIX / "bar") == "jsonl"  # the folder also holds the state: the trainer's own log first
    assert detect_format(FIX / "bar" / "trainer_state.json") == "jsonl"


def test_folder_of_consoles(tmp_path):
    shutil.copy(FIX / "bar" / "train.log", tmp_path / "slurm-17.out")
    (tmp_path / "notes.txt").write_text("nothing printed by a trainer {'a': 1}\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    shutil.copy(FIX / "bar" / "train.log", outside / "other.log")
    (tmp_path / "linked").symlink_to(outside, target_is_directory=True)  # a link out of the folder: not followed
    (tmp_path / "linked.log").symlink_to(outside / "other.log")
    assert detect_format(tmp_path) == "console"
    rec = read_scalars(tmp_path, num_generations=4)
    assert rec.meta["source"]["run"] == tmp_path.name
    assert rec.meta["source"]["format"] == "console"


def test_groups_per_row_from_trl_arithmetic_agree_with_the_lattice(tmp_path):
    s = json.loads((FIX / "bar" / "settings.json").read_text())
    cfg = tmp_path / "grpo_config.json"
    cfg.write_text(json.dumps({k: s[k] for k in ("per_device_train_batch_size", "gradient_accumulation_steps",
                                                 "num_generations")}))
    r = run_cli("ingest", FIX / "bar" / "train.log", "--trainer-config", cfg, "--out", tmp_path / "rec", "--json")
    assert r.returncode == 0, r.stderr
    gpr = json.loads(r.stdout)["groups_per_row"]
    expected = s["per_device_train_batch_size"] * s["gradient_accumulation_steps"] * s["logging_steps"] \
        / s["num_generations"]
    assert gpr["config"] == expected and gpr["value"] == expected
    assert gpr["lattice"]["g"] == expected and gpr["agree"] is True
    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.record import read_record

    when = diagnose(read_record(tmp_path / "rec"), only="when")
    assert when["run"]["K"] == s["num_generations"] and when["run"]["steps"] == settings_rows(s)


def settings_rows(s: dict) -> int:
    """The training rows a run of ``max_steps`` logged every ``logging_steps`` prints."""
    return s["max_steps"] // s["logging_steps"]


def test_a_console_followed_as_it_grows_equals_a_whole_read(tmp_path):
    text = (FIX / "bar" / "train.log").read_bytes()
    log = tmp_path / "train.log"
    cut = text.index(b"{'loss'", len(text) // 2) + 40  # mid-row: the cut row is not read until it is whole
    log.write_bytes(text[:cut])
    f = LogFollower(str(log), "console", num_generations=4)
    first = f.refresh()
    before = len(first.steps["step"])
    log.write_bytes(text)
    whole = read_scalars(log, num_generations=4)
    again = f.refresh()
    assert f.change == "grew" and len(again.steps["step"]) > before
    for col in whole.steps:
        a, b = again.steps[col], whole.steps[col]
        assert len(a) == len(b) and all((x == y) or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b)), col


def test_old_transformers_floats_and_bare_nan_are_read():
    text = ("  5%|#  | 2/40 [00:01<00:20]\r{'loss': 0.125, 'grad_norm': nan, 'reward': 0.5, "
            "'frac_reward_zero_std': 0.25, 'epoch': 0.05}\n")
    (bar, row, _), = parse_console(text)[0]
    assert bar == (2, 40)
    assert row["loss"] == 0.125 and math.isnan(row["grad_norm"]) and row["frac_reward_zero_std"] == 0.25


def test_nothing_is_evaluated_and_bad_lines_are_counted(tmp_path):
    marker = tmp_path / "evaluated"
    evil = f"{{'loss': __import__('pathlib').Path({str(marker)!r}).touch(), 'reward': 1}}"
    text = (FIX / "bar" / "train.log").read_text()
    log = tmp_path / "train.log"
    log.write_text(evil + "\n" + "{'loss': '" + "9" * MAX_LINE + "'}\n" + text)
    rs = read_run_scalars(log)
    assert not marker.exists()
    assert any("2 lines that look like metrics could not be read" in n for n in rs.notes)
    assert len(rs.series["loss"][0]) == len(read_run_scalars(FIX / "bar" / "train.log").series["loss"][0])


def test_a_file_with_no_printed_metrics_is_one_line_exit_2(tmp_path):
    f = tmp_path / "train.log"
    f.write_text("Loading checkpoint shards: 100%|##########| 2/2\nTraceback (most recent call last):\n")
    with pytest.raises(InputError, match="not a tracker file"):
        detect_format(f)
    with pytest.raises(InputError, match="no metrics printed by an HF Trainer"):
        read_run_scalars(f, fmt="console")
    r = run_cli("ingest", f, "--format", "console", "--out", tmp_path / "rec")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_an_uploaded_console_reads_as_ingest_reads():
    from grpo_lab.sims.ingest import ingest_upload

    data = (FIX / "bar" / "train.log").read_bytes()
    rec = ingest_upload("train.log", data, "jsonl", num_generations=4)
    whole = read_scalars(FIX / "bar" / "train.log", num_generations=4)
    assert rec.meta["source"]["format"] == "console"
    assert rec.steps["step"].tolist() == whole.steps["step"].tolist()
    assert rec.steps["frac_reward_zero_std"].tolist() == whole.steps["frac_reward_zero_std"].tolist()


def _buffered(text: str, burst: int = 4) -> str:
    """The bar console as ``> log 2>&1`` leaves it when stdout is block-buffered: the bar's redraws (stderr,
    unbuffered) in place, the printed rows (stdout) held back and written ``burst`` at a time, after the bar has
    moved on past them (what the public consoles of docs/ingest.md show)."""
    out, held = [], []
    for line in text.split("\n"):
        cut = line.find("{'")
        bar, row = (line, None) if cut < 0 else (line[:cut], line[cut:])
        out.append(bar)
        if row is not None:
            held.append(row)
        if len(held) == burst or (row is not None and "train_runtime" in row):
            out.extend(held)
            held = []
    return "\n".join(out + held) + "\n"


def test_rows_buffered_apart_from_the_bar_are_placed_from_the_bar_total(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(_buffered((FIX / "bar" / "train.log").read_text()))
    rs = read_run_scalars(log)
    truth = [h["step"] for h in _history("bar") if "frac_reward_zero_std" in h]
    assert rs.series["frac_reward_zero_std"][0].tolist() == truth
    assert rs.config == {"logging_steps": 2}
    assert any("buffered apart" in n and "multiples of 2" in n for n in rs.notes)
    # cut short (no summary row): the rows' order, said, never a guess
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(l for l in log.read_text().split("\n") if "train_runtime" not in l))
    rs = read_run_scalars(cut)
    assert rs.series["frac_reward_zero_std"][0].tolist() == list(range(1, len(truth) + 1))
    assert any("rows' order" in n for n in rs.notes)


def test_a_console_of_several_runs_is_one_run_each(tmp_path):
    text = (FIX / "bar" / "train.log").read_text()
    log = tmp_path / "all_runs.log"
    log.write_text(text + text[: text.index("{'loss'", len(text) // 2)])  # the second run still going
    with pytest.raises(InputError, match="holds 2 console runs; pick one with --run NAME: all_runs:1, all_runs:2"):
        read_scalars(log)
    first = read_run_scalars(log, run="all_runs:1")
    whole = read_run_scalars(FIX / "bar" / "train.log")
    assert first.series["frac_reward_zero_std"][0].tolist() == whole.series["frac_reward_zero_std"][0].tolist()
    second = read_run_scalars(log, run="all_runs:2")
    n = len(second.series["frac_reward_zero_std"][0])
    assert 0 < n < len(whole.series["frac_reward_zero_std"][0])
    assert second.series["frac_reward_zero_std"][1].tolist() == whole.series["frac_reward_zero_std"][1][:n].tolist()


def test_a_folder_of_consoles_is_listed_by_the_replay_and_ranked_by_the_fleet(tmp_path):
    from grpo_lab.fleet import Fleet
    from grpo_lab.replay.trackers import tracker_logs

    text = (FIX / "bar" / "train.log").read_text()
    (tmp_path / "slurm-1.out").write_text(text)
    (tmp_path / "sweep.log").write_text(text + text)  # two runs, one after the other
    (tmp_path / "notes.txt").write_text("no metrics here\n")
    found = tracker_logs(tmp_path)
    assert sorted(found) == ["live tracker log: slurm-1.out (console)", "live tracker log: sweep.log: sweep:1 (console)",
                             "live tracker log: sweep.log: sweep:2 (console)"]
    rows = Fleet(str(tmp_path), doctor="off").refresh()
    assert len(rows) == 3 and all(r["kind"] == "tracker log (console)" and not r["reason"] for r in rows), rows
    assert sorted(r["steps"] for r in rows) == [12, 12, 12] and all(r["expiry"] for r in rows)
