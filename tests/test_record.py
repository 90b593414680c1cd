"""sims.record: round trip, tamper and truncation detection, version check, atomic replacement."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_lab.sims import record as rmod
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import RunRecord, read_record, write_record


def make(seed=0, n=12, G=4, n_prompts=10):
    rng = np.random.default_rng(seed)
    r = (rng.random((n, G)) < 0.5).astype(float)
    groups = {"step": np.arange(n, dtype=np.int64) // 3, "prompt_id": rng.integers(0, n_prompts, n),
              "rewards": r, "advantages": r - r.mean(1, keepdims=True),
              "lengths": rng.integers(1, 7, (n, G)), "kept": rng.random(n) < 0.8}
    steps = {"step": np.arange(4, dtype=np.int64), "reward_mean": rng.random(4)}
    evals = {"step": np.array([0, 4]), "pass_rate": rng.random((2, n_prompts)), "samples": np.array([8, 8])}
    return RunRecord({"name": f"r{seed}", "n_prompts": n_prompts, "num_generations": G}, groups, steps, evals)


def test_round_trip_is_exact(tmp_path):
    rec = make()
    back = read_record(write_record(tmp_path / "run", rec))
    for table in ("groups", "steps", "evals"):
        a, b = getattr(rec, table), getattr(back, table)
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k]), b[k])
            assert b[k].dtype == np.asarray(a[k]).dtype
    assert back.meta["name"] == "r0" and back.meta["format_version"] == rmod.FORMAT_VERSION
    assert read_record(tmp_path / "run" / "run.json").meta["name"] == "r0"


def test_rewrite_removes_stale_arrays(tmp_path):
    write_record(tmp_path / "run", make(0))
    write_record(tmp_path / "run", make(1))
    assert len(list((tmp_path / "run").glob("*.npz"))) == 3
    assert read_record(tmp_path / "run").meta["name"] == "r1"


def test_a_save_during_a_read_gives_the_new_record(tmp_path, monkeypatch):
    """A writer saves the record again after the reader took run.json and before it took the
    array files (the old ones are then gone): the read starts over and returns the new record."""
    path = write_record(tmp_path / "run", make(0))
    real, saves = rmod._read_npz, []

    def read_npz_with_a_save_in_between(p, entry):
        if not saves:
            saves.append(write_record(path, make(1)))
        return real(p, entry)

    monkeypatch.setattr(rmod, "_read_npz", read_npz_with_a_save_in_between)
    back = read_record(path)
    assert saves and back.meta["name"] == "r1"
    np.testing.assert_array_equal(back.groups["rewards"], make(1).groups["rewards"])


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete"])
def test_damaged_array_file_is_detected(tmp_path, damage):
    path = write_record(tmp_path / "run", make())
    f = next(path.glob("steps-*.npz"))
    data = f.read_bytes()
    if damage == "flip":
        f.write_bytes(data[:40] + bytes([data[40] ^ 1]) + data[41:])
    elif damage == "truncate":
        f.write_bytes(data[: len(data) // 2])
    else:
        f.unlink()
    with pytest.raises(InputError, match="checksum|missing"):
        read_record(path)


def test_other_format_version_and_garbage_are_refused(tmp_path):
    path = write_record(tmp_path / "run", make())
    meta = json.loads((path / "run.json").read_text())
    meta["format_version"] = 2
    (path / "run.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="version 2"):
        read_record(path)
    (path / "run.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        read_record(path)
    with pytest.raises(InputError, match="no run.json"):
        read_record(tmp_path / "elsewhere")


def test_inconsistent_groups_are_refused(tmp_path):
    rec = make()
    rec.groups["kept"] = rec.groups["kept"][:-1]
    with pytest.raises(InputError, match="rows"):
        write_record(tmp_path / "run", rec)
    assert not (tmp_path / "run" / "run.json").exists()


def test_failed_write_leaves_previous_record(tmp_path, monkeypatch):
    path = write_record(tmp_path / "run", make(0))
    real = rmod.atomic_write_bytes

    def fail_on_meta(p, data):
        if p.name == "run.json":
            raise OSError("disk full")
        return real(p, data)

    monkeypatch.setattr(rmod, "atomic_write_bytes", fail_on_meta)
    with pytest.raises(OSError):
        write_record(path, make(1))
    back = read_record(path)  # still the first record, every hash intact
    assert back.meta["name"] == "r0"
    np.testing.assert_array_equal(back.groups["rewards"], make(0).groups["rewards"])
    assert not list(path.glob(".*.tmp"))


def test_group_outcomes_split_by_threshold():
    r = np.array([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0], [0.6, 0.6, 0.6, 0.6], [1, 1, np.nan, np.nan]])
    deg, ap, af = rmod.group_outcomes(r)
    assert deg.tolist() == [True, True, False, True, True]
    assert ap.tolist() == [True, False, False, True, True]
    assert af.tolist() == [False, True, False, False, False]
