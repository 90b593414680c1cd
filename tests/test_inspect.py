"""``grpo-lab inspect`` / ``compare``: figures recomputed independently from a record's raw arrays.

Also checks the shipped runs under runs/ and that neither command needs torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.record import RunRecord, read_record, write_record
from grpo_lab.testing.inspect_figures import check_inspect, expected_figures

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p for p in (ROOT / "runs").iterdir() if (p / "run.json").is_file())


def synthetic(tmp_path, name="ingested", G=4, n_prompts=20, seed=0) -> Path:
    """An ingested-style record (no trainer config) with binary rewards."""
    rng = np.random.default_rng(seed)
    n = 60
    rewards = (rng.random((n, G)) < rng.random((n, 1))).astype(float)
    groups = {"step": np.repeat(np.arange(15), 4).astype(np.int64), "prompt_id": rng.integers(0, n_prompts, n),
              "rewards": rewards, "advantages": rewards - rewards.mean(1, keepdims=True),
              "lengths": np.full((n, G), -1, np.int64), "kept": np.ones(n, bool)}
    steps = {"step": np.arange(15, dtype=np.int64)}
    evals = {"step": np.array([0, 14]), "pass_rate": rng.random((2, n_prompts)), "samples": np.array([8, 8])}
    meta = {"name": name, "n_prompts": n_prompts, "num_generations": G, "source": {"kind": "jsonl"}}
    return write_record(tmp_path / name, RunRecord(meta, groups, steps, evals))


def test_inspect_of_any_record_matches_raw_arrays(tmp_path, capsys):
    path = synthetic(tmp_path)
    got = check_inspect(path, capsys)
    assert got["source"] == "jsonl" and got["estimator"] is None
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert "frac_reward_zero_std" in text and "d_real" in text


def test_compare_lists_each_run(tmp_path, capsys):
    a, b = synthetic(tmp_path, "a", seed=1), synthetic(tmp_path, "b", seed=2)
    assert main(["compare", str(a), str(b), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in rows] == ["a", "b"]
    for row, path in zip(rows, (a, b)):
        want = expected_figures(read_record(path))
        assert row["zero_std"] == pytest.approx(want["frac_reward_zero_std"])
        assert row["D_real"] == pytest.approx(want["evals"][-1]["d_real"])
    assert main(["compare", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[1].split()[0] == "a"


def test_inspect_and_compare_run_without_torch(tmp_path):
    path = synthetic(tmp_path)
    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'torch' or name.startswith('torch.'):\n"
            "            raise ImportError('torch blocked')\n"
            "sys.meta_path.insert(0, Block())\n"
            "from grpo_lab.cli import main\n"
            f"assert main(['inspect', {str(path)!r}, '--json']) == 0\n"
            f"assert main(['compare', {str(path)!r}]) == 0\n"
            "assert 'torch' not in sys.modules\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("bad", ["missing", "tampered", "version"])
def test_inspect_bad_record_is_one_line_exit_2(tmp_path, capsys, bad):
    path = synthetic(tmp_path)
    if bad == "missing":
        path = tmp_path / "nope"
    elif bad == "tampered":
        f = next(path.glob("groups-*.npz"))
        data = bytearray(f.read_bytes())
        data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    else:
        meta = json.loads((path / "run.json").read_text())
        meta["format_version"] = 99
        (path / "run.json").write_text(json.dumps(meta))
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error" in err


def test_shipped_runs_exist():
    from grpo_lab.replay.catalog import FEATURED, PAIRS

    names = {p.name for p in SHIPPED}
    want = {FEATURED} | {run for _, a, b in PAIRS.values() for run in (a, b)}
    assert want <= names, sorted(want - names)
    for reg in ("broad", "weak"):  # dr_grpo, sign and dr_grpo with dynamic sampling from each start
        assert {e for e in ("dr_grpo", "sign", "dr_grpo-ds") if any(n.startswith(f"{reg}-g4-{e}-lr") for n in names)} \
            == {"dr_grpo", "sign", "dr_grpo-ds"}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_run_loads_and_matches_its_arrays(path, capsys):
    got = check_inspect(path, capsys)
    rec = read_record(path)
    cfg = rec.meta["config"]
    assert rec.meta["complete"] and cfg["steps"] == 200 and got["steps"] == rec.meta["steps_completed"]
    assert rec.meta["steps_completed"] == 200 or rec.meta["end_reason"]  # a dynamic-sampling run may end early
    assert cfg["num_generations"] == 4 and rec.meta["source"]["kind"] == "grpo-lab-train"
    assert not (path / "checkpoint.pt").exists()
    kept = rec.groups["kept"]
    if cfg["dynamic_sampling"]:
        r = rec.groups["rewards"]
        assert np.all(r[kept].max(1) > r[kept].min(1))  # only mixed groups enter the loss
    else:
        assert kept.all()


def test_replay_opens_on_a_healthy_run_whose_environment_expires():
    from grpo_lab.replay.catalog import FEATURED, PAIRS, list_runs

    runs = list_runs(ROOT / "runs")
    assert next(iter(runs)) == FEATURED
    rec = read_record(runs[FEATURED])
    rates = rec.evals["pass_rate"].mean(axis=1)
    assert rates[-1] > rates[0] + 0.05  # it learns
    ap = rec.steps["frac_all_pass"]
    assert ap[-20:].mean() > ap[:20].mean() + 0.05  # and its easy end expires: more all-pass groups
    same_start = read_record(runs[PAIRS["sign-vs-dr_grpo"][2]])  # the side-by-side pair
    np.testing.assert_array_equal(same_start.evals["pass_rate"][0], rec.evals["pass_rate"][0])


def test_shipped_weak_runs_start_as_the_weak_regime_says():
    from grpo_lab.train.config import REGIMES

    weak = [p for p in SHIPPED if p.name.startswith("weak-")]
    assert weak
    for path in weak:
        rec = read_record(path)
        cfg = rec.meta["config"]
        assert cfg["start"] == "weak" and cfg["sft_steps"] == REGIMES["weak"]["sft_steps"]
        assert tuple(cfg["sft_digit_weights"]) == REGIMES["weak"]["sft_digit_weights"]
        p0 = rec.evals["pass_rate"][0]
        assert 0.2 <= p0.mean() <= 0.4 and np.mean(p0 == 0) >= 0.4 and np.mean(p0 > 0.9) > 0  # most near 0, some near 1
        # G = 4 groups from these pass rates: all-fail and all-pass shares near seed 003's 54.75% / 14.50%
        assert abs(np.mean((1 - p0) ** 4) - 0.5475) < 0.05 and abs(np.mean(p0 ** 4) - 0.145) < 0.05


def test_compare_shows_a_run_known_from_its_trackers_scalars(tmp_path, capsys):
    """A tinker-cookbook metrics.jsonl ingested: its row holds the shares its lines logged (means over the steps),
    the groups its steps logged, and where it came from, beside a run with groups (was: dashes)."""
    log = Path(__file__).parent / "fixtures" / "trackers" / "jsonl"
    assert main(["ingest", str(log / "metrics.jsonl"), "--out", str(tmp_path / "scal"), "--force"]) == 0
    capsys.readouterr()
    lines = [json.loads(line) for line in (log / "metrics.jsonl").read_text().splitlines()]
    config = json.loads((log / "config.json").read_text())
    a = synthetic(tmp_path, "a", seed=1)
    assert main(["compare", str(tmp_path / "scal"), str(a), "--json"]) == 0
    scal, groups = json.loads(capsys.readouterr().out)
    good = [x["env/all/by_group/frac_all_good"] for x in lines]
    bad = [x["env/all/by_group/frac_all_bad"] for x in lines]
    assert scal["from"] == "tinker-cookbook via jsonl" and groups["from"] == "groups"
    assert scal["all_pass"] == pytest.approx(sum(good) / len(good))
    assert scal["all_fail"] == pytest.approx(sum(bad) / len(bad))
    assert scal["zero_std"] == pytest.approx(sum(g + b for g, b in zip(good, bad)) / len(lines))
    assert scal["groups"] == len(lines) * config["groups_per_batch"] and scal["steps"] == len(lines)
    assert main(["compare", str(tmp_path / "scal"), str(a)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:4] == ["scal", "tinker-cookbook", "via", "jsonl"] and f"{scal['zero_std']:.3f}" in row
