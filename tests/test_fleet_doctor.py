"""The fleet shows the doctor's forecast (lab/fleet.py, lab/fleet_doctor.py): each run's expiry and stall equal to
``grpo-lab diagnose RUN --json``'s ``when`` (run apart, in its own process), kept in the user's cache folder and
diagnosed again only for the runs that grew; the trend where the doctor's figure is not in yet, labelled so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from grpo_lab.fleet import PENDING, QUICK, Fleet
from grpo_lab.fleet_doctor import DoctorCache
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR
from grpo_lab.sims.doctor.fleet import doctor_forecast
from grpo_lab.testing.fleet_runs import grow, make_fleet

#: shipped runs: a dynamic-sampling run with a cap (a stall forecast), one the doctor says is already below the
#: threshold, and one whose model the log contradicts (no verdict)
SHIPPED = ("weak-g4-dr_grpo-ds-retire2-lr0.0004-s1", "lm/cpu-g4-dr_grpo", "lm/cpu-g8-dr_grpo-ds-p20")


def _cli(*args, env):
    proc = subprocess.run([sys.executable, "-m", "grpo_lab.cli", *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_fleet_says_what_diagnose_says_for_shipped_runs(tmp_path):
    runs = tmp_path / "runs"
    for label in SHIPPED:
        shutil.copytree(DEFAULT_RUNS_DIR / label, runs / label)
    env = {**os.environ, "GRPO_LAB_CACHE": str(tmp_path / "cache")}
    listing = _cli("fleet", str(runs), "--json", env=env)
    assert listing["read"]["diagnosed"] == len(SHIPPED)
    rows = {r["run"]: r for r in listing["runs"]}
    stalls = 0
    for label in SHIPPED:
        want = _cli("diagnose", str(runs / label), "--json", env=env)["when"]  # the doctor, in its own process
        row = rows[label]
        assert row["forecast_source"] == "doctor" and row["when"] == want
        assert row["expiry"]["step"] == want["expiry"]["step"]
        assert row["expiry"]["interval"] == want["expiry"]["interval"]
        if want["stall"]["available"]:
            stalls += 1
            assert row["forecast"] == "stall" and row["stall"]["step"] == want["stall"]["step"]
            assert row["stall"]["interval"] == want["stall"]["interval"]
            assert row["left"] == pytest.approx(want["stall"]["step"] - row["last_step"])
        else:
            assert row["forecast"] == "expiry" and row["stall"] is None
    assert stalls == 1
    # a second listing reads the doctor's figures back from the cache: none diagnosed, the same rows
    again = _cli("fleet", str(runs), "--json", env=env)
    assert again["read"]["diagnosed"] == 0 and again["runs"] == listing["runs"]
    cached = list((tmp_path / "cache" / "fleet-doctor").glob("*.json"))
    assert len(cached) == len(SHIPPED)
    assert not [p for p in runs.rglob("*") if p.is_file() and "fleet" in p.name]  # nothing in the runs' folder
    quick = _cli("fleet", str(runs), "--json", "--quick", env=env)
    assert {r["forecast_source"] for r in quick["runs"]} == {QUICK}


def test_doctor_forecast_reads_each_verdict():
    below = {"expiry": {"step": None, "interval": [None, None], "level": 0.95,
                        "status": "already below the threshold at the last step (model)"}, "stall": {}}
    assert doctor_forecast(below, 40)["left"] == 0.0
    above = {"expiry": {"step": None, "interval": [None, None], "level": 0.95,
                        "status": "stays above the threshold for 10 run lengths if the trend holds"},
             "stall": {"available": True, "step": 70.0, "interval": [60, 90], "level": 0.9, "source": "the risk"}}
    f = doctor_forecast(above, 40)
    assert f["expiry"]["left"] == float("inf") and f["forecast"] == "stall" and f["left"] == 30.0
    refused = {"expiry": {"step": 55.0, "interval": [50.0, 60.0], "level": 0.95, "status": "crosses near 55",
                          "said": "no verdict: the model misfits the last rows"}, "stall": {"available": False}}
    got = doctor_forecast({**refused, "expiry": {**refused["expiry"], "step": None}}, 40)
    assert got["left"] is None and got["stall"] is None


def test_only_the_runs_that_grew_are_diagnosed_again(tmp_path):
    runs = make_fleet(tmp_path / "runs", n=6, steps=40, seed=7)
    cache = DoctorCache(tmp_path / "cache")
    fleet = Fleet(str(tmp_path / "runs"), doctor="now", cache=cache, jobs=2)  # two processes
    rows = fleet.refresh()
    assert fleet.stats["diagnosed"] == 6
    assert Fleet(str(tmp_path / "runs"), doctor="now").refresh() == rows  # one at a time, here: the same
    fleet.refresh()
    assert fleet.stats["diagnosed"] == 0
    grown = [r for r in runs if r.kind in ("groups", "jsonl")][:2]
    grow(grown, 5)
    rows = fleet.refresh()
    assert fleet.stats["diagnosed"] == 2
    by = {r["run"].split("/")[0]: r for r in rows}
    assert all(by[r.name]["last_step"] == 45 for r in grown)
    # a new fleet (a new process) finds all six in the cache on disk
    fresh = Fleet(str(tmp_path / "runs"), doctor="now", cache=DoctorCache(tmp_path / "cache"))
    assert fresh.refresh() == rows and fresh.stats["diagnosed"] == 0
    for r in rows:  # each the doctor's, or the trend with the doctor's reason
        assert r["forecast_source"] == "doctor" or r["forecast_source"].startswith("trend; the doctor: ")


def test_in_the_background_the_trend_is_labelled_until_the_doctor_lands(tmp_path):
    make_fleet(tmp_path / "runs", n=3, steps=40, seed=8)
    fleet = Fleet(str(tmp_path / "runs"), doctor="background")
    rows = fleet.refresh()
    assert {r["forecast_source"] for r in rows} <= {PENDING, "doctor"}
    assert any(r["forecast_source"] == PENDING and r["left"] == r["trend"]["left"] for r in rows)
    deadline = time.monotonic() + 300
    while fleet.doctor_version < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    now = Fleet(str(tmp_path / "runs"), doctor="now").refresh()
    assert fleet.rows() == now


def test_the_cache_is_bounded_and_a_bad_or_other_version_file_is_a_miss(tmp_path):
    folder = tmp_path / "cache"
    cache = DoctorCache(folder)
    for i in range(7):
        cache.put(f"k{i}", [["run.json", i, 1]], {"error": f"run {i}"})
        os.utime(folder / f"k{i}.json", ns=(10**18 + i, 10**18 + i))  # written in this order
    assert sorted(p.name for p in folder.iterdir()) == [f"k{i}.json" for i in range(7)]  # no temporary file left
    assert cache.prune(keep=4) == 3
    assert sorted(p.name for p in folder.iterdir()) == [f"k{i}.json" for i in range(3, 7)]  # the newest kept
    fresh = DoctorCache(folder)  # from disk alone
    assert fresh.get("k5", (("run.json", 5, 1),)) == {"error": "run 5"}
    assert fresh.get("k5", (("run.json", 6, 1),)) is None  # the run grew: another version
    (folder / "k6.json").write_text("{not json")
    assert fresh.get("k6", (("run.json", 6, 1),)) is None
    shutil.rmtree(folder)  # deleting the folder costs only time
    assert DoctorCache(folder).get("k4", (("run.json", 4, 1),)) is None
