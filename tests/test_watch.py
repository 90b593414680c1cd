"""``grpo-lab watch`` (lab/commands/watch.py, sims/doctor/scalars_watch.py): a simulated DAPO run is written step by
step into a metrics.jsonl by a background thread while watch follows the file; watch must warn before the step at
which the simulated trainer loop first exceeds its cap."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.commands.watch import watch
from grpo_lab.sims.doctor.scalars_sim import simulate_dapo
from grpo_lab.sims.errors import InputError

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "test"}
PER_POLL = 6  #: steps the writer appends between two polls


def _lines(record) -> list[str]:
    """The run's steps as tinker-cookbook metrics.jsonl lines (by-group shares)."""
    st = record.steps
    return [json.dumps({"step": int(s), "env/all/by_group/frac_all_good": float(a),
                        "env/all/by_group/frac_all_bad": float(b)}) + "\n"
            for s, a, b in zip(st["step"], st["frac_all_pass"], st["frac_all_fail"])]


def test_watch_warns_before_the_simulated_stall(tmp_path):
    rec, stall = simulate_dapo(1.5, 2.0, 0.06, 8, 300, 96, 64, 3, seed=4)
    assert stall is not None and stall > 40
    lines = _lines(rec)
    path = tmp_path / "metrics.jsonl"
    path.write_text("")
    go, written, done = threading.Semaphore(0), threading.Semaphore(0), threading.Event()

    def writer():  # one batch of steps per poll; the last 20 characters wait for the next batch (a cut line)
        i, tail = 0, ""
        while i <= len(lines) and not done.is_set():
            if not go.acquire(timeout=60):
                return
            chunk = tail + "".join(lines[i:i + PER_POLL])
            tail = chunk[-20:] if i + PER_POLL < len(lines) else ""
            with open(path, "a") as fh:
                fh.write(chunk[:len(chunk) - len(tail)])
            i += PER_POLL
            written.release()

    def sleep(_):  # the poll's pause: let the writer append its next steps, and wait until it has
        go.release()
        written.acquire(timeout=60)

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    out = []
    try:
        events = watch(tmp_path, SETTINGS, num_generations=8, warn_steps=12, interval=0,
                       max_polls=len(lines) // PER_POLL + 1, write=out.append, sleep=sleep)
    finally:
        done.set()
        go.release()
        th.join(timeout=60)
    warned = [e for e in events if e["warn"]]
    assert len(warned) == 1, out
    w = warned[0]
    assert w["step"] < stall  # warned while the run was still going
    assert stall - w["step"] <= 12 + 3 * PER_POLL  # and not absurdly early
    assert any(line.startswith("WARNING") for line in out)
    # every event after MIN_STEPS carries a forecast; the steps increase
    steps = [e["step"] for e in events]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    late = [e for e in events if e["step"] >= 30]
    assert all(e["forecast"] is not None for e in late)
    assert abs(late[-1]["forecast"]["step"] - stall) <= 10


def test_watch_refuses_bad_input(tmp_path, capsys):
    # no settings given: those the record keeps (a verl log read with its config) are used; a log that keeps none is
    # refused, naming the flags, at the first update that forecasts (before it, an empty folder is waited for)
    assert watch(tmp_path, None, max_polls=1, write=lambda s: None) == []
    rec, _ = simulate_dapo(1.5, 2.0, 0.02, 8, 12, 96, 64, 0, seed=1)
    (tmp_path / "metrics.jsonl").write_text("".join(_lines(rec)))
    with pytest.raises(InputError, match="trainer's config"):
        watch(tmp_path, None, num_generations=8, groups_per_step=96, max_polls=1, write=lambda s: None)
    (tmp_path / "metrics.jsonl").unlink()
    # a log not written yet is waited for (the trainer's first event), here for one poll
    assert main(["watch", str(tmp_path / "missing"), "--train-batch-size", "8", "--max-polls", "1"]) == 0
    assert "waiting for" in capsys.readouterr().out
    (tmp_path / "metrics.jsonl").write_text("not json\n")
    assert main(["watch", str(tmp_path), "--train-batch-size", "8", "--num-generations", "4", "--max-polls", "1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_watch_without_a_cap_reports_no_stall(tmp_path):
    rec, _ = simulate_dapo(1.5, 2.0, 0.02, 8, 12, 96, 64, 0, seed=1)
    (tmp_path / "metrics.jsonl").write_text("".join(_lines(rec)))
    events = watch(tmp_path, {**SETTINGS, "cap": 0}, num_generations=8, interval=0, max_polls=1, write=lambda s: None)
    assert len(events) == 1 and events[0]["forecast"] is None and "no cap" in events[0]["reason"]
    assert np.isfinite(events[0]["stall"]["now"]["expected"])


def test_watch_forecasts_the_doctors_first_stall_on_a_horizon_past_20000_steps():
    """A sided log of 70 rows logged every 40 steps: its forecast horizon (10 run lengths, 27,600 future steps) passes
    the 20,000 steps the risk was once drawn to (it is drawn over the whole horizon since, :mod:`.risk_blocks`), so the
    first stall is the risk's median and 90% interval on the shares' measured drift. The watch, fitting on its own (no
    ``--emit``), says that one, equal to ``diagnose``'s ``when`` on the same rows (before issue 39 item 8 it was the
    drift map's first step over the cap, checked different here)."""
    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.doctor.drift import forget_measured
    from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, step_shares
    from grpo_lab.sims.doctor.scalars_forecast import stall_forecast
    from grpo_lab.sims.doctor.scalars_watch import StallWatch
    from grpo_lab.sims.record import RunRecord

    rec, _ = simulate_dapo(1.5, 2.0, 0.03, 8, 70, 96, 64, 3, seed=4)
    rec = RunRecord(meta=rec.meta, groups=rec.groups, steps={**rec.steps, "step": rec.steps["step"] * 40})
    d = diagnose(rec, trainer_config=SETTINGS, num_generations=8)
    w, risk = d["when"]["stall"], d["stall_forecast"]["risk"]
    assert d["stall_forecast"]["source"] == "drift shapes" and risk["available"]
    assert risk["first_stall"]["horizon_step"] - rec.steps["step"][-1] > 20_000
    assert (w["step"], w["interval"], w["level"]) == (risk["first_stall"]["median"], risk["first_stall"]["interval"],
                                                      0.9)
    forget_measured()  # the watch measures the drift afresh
    ev = StallWatch(SETTINGS, num_generations=8).update(rec)
    assert (ev["forecast"]["step"], ev["forecast"]["interval"]) == (w["step"], w["interval"])
    assert ev["forecast"]["source"] == w["source"] and ev["fit"]["model"] == d["model"]
    sh = step_shares(rec, num_generations=8, settings=SETTINGS)
    maps = stall_forecast(best_fit(fit_models(sh)), SETTINGS)["first_cap_hit"]
    assert (maps["median"], maps["predictive"]) != (w["step"], w["interval"])  # what the watch said before
