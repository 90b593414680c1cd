"""A shipped cell reruns from its shipped warm start and reproduces its record: the step-0 evaluation and
the first steps' outcomes exactly, the update's float figures to rtol 1e-4 (grpo_lab.train.reproduce);
a changed seed, a changed warm start or an altered warm-start file does not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record
from grpo_lab.train import warmstart
from grpo_lab.train.reproduce import RTOL, compare, reproduce

ROOT = Path(__file__).resolve().parents[1]
CELL = ROOT / "runs" / "weak-g4-dr_grpo-lr0.0004-s1"  #: a shipped cell of the study (full-v1's weak dr_grpo, seed 1)
STEPS = 2


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    out = tmp_path_factory.mktemp("rerun") / "run"
    cmp = reproduce(CELL, STEPS, out=out)
    return cmp, read_record(out)


def test_the_shipped_cell_starts_from_the_shipped_warm_start():
    meta = json.loads((CELL / "run.json").read_text())
    entry = warmstart.read_manifest()[warmstart.file_name("weak", 0)]
    assert meta["start"]["warmstart"] == "shipped" and meta["start"]["warmstart_sha256"] == entry["sha256"]
    assert warmstart.sha256(warmstart.folder() / "weak-sft0.npz") == entry["sha256"]


def test_a_rerun_reproduces_its_record(rerun):
    cmp, rec = rerun
    assert cmp.ok, cmp.mismatches
    shipped = read_record(CELL)
    # independently of the comparison: the step-0 evaluation, the groups of the first steps, the loss
    assert np.array_equal(rec.evals["pass_rate"][0], shipped.evals["pass_rate"][0])
    n = int(np.sum(shipped.groups["step"] < STEPS))
    assert n == STEPS * json.loads((CELL / "run.json").read_text())["config"]["prompts_per_step"]
    assert np.array_equal(rec.groups["rewards"][:n], shipped.groups["rewards"][:n])
    assert np.array_equal(rec.groups["prompt_id"][:n], shipped.groups["prompt_id"][:n])
    assert rec.steps["loss"][:STEPS] == pytest.approx(shipped.steps["loss"][:STEPS], rel=RTOL)
    assert cmp.checked["step-0 evaluation (pass rate per prompt)"] == 600


def test_the_comparison_fails_when_a_figure_moves(rerun):
    _, rec = rerun
    shipped = read_record(CELL)
    rec.steps["grad_norm"] = np.array(rec.steps["grad_norm"], float) * (1 + 3 * RTOL)
    rec.groups["rewards"] = np.array(rec.groups["rewards"])
    rec.groups["rewards"][0, 0] = 1 - rec.groups["rewards"][0, 0]
    lines = compare(shipped, rec, STEPS).mismatches
    assert any(line.startswith("step figure grad_norm") for line in lines)
    assert any(line.startswith("groups: rewards: 1 of") for line in lines)


@pytest.mark.parametrize("change, first", [({"seed": 2}, "groups: prompt_id"),
                                           ({"sft_seed": 1}, "step-0 evaluation")])
def test_a_rerun_with_another_seed_or_warm_start_does_not_reproduce(change, first):
    cmp = reproduce(CELL, 1, overrides=change)
    assert not cmp.ok and cmp.mismatches[0].startswith(first), cmp.mismatches
    if "seed" in change:  # the evaluation's draws do not depend on the seed: the same start evaluates the same
        assert not any(m.startswith("step-0") for m in cmp.mismatches)


def test_an_altered_warm_start_is_one_clear_error(tmp_path, monkeypatch):
    where = tmp_path / "warmstarts"
    shutil.copytree(warmstart.folder(), where)
    data = bytearray((where / "weak-sft0.npz").read_bytes())
    data[-100] ^= 1
    (where / "weak-sft0.npz").write_bytes(bytes(data))
    monkeypatch.setattr(warmstart, "folder", lambda: where)
    with pytest.raises(InputError, match="does not match its manifest: SHA-256"):
        reproduce(CELL, 1)


def test_only_a_start_with_every_setting_equal_comes_from_the_shipped_files():
    from grpo_lab.train.config import GRPOConfig

    cfg = GRPOConfig.for_start("weak", sft_seed=0, seed=5).validate()
    assert warmstart.shipped(cfg).name == "weak-sft0.npz"  # the RL seed does not matter
    for change in ({"sft_seed": 9}, {"sft_steps": 499}, {"n_embd": 32, "n_head": 4}, {"sft_learning_rate": 1e-3}):
        assert warmstart.shipped(GRPOConfig.for_start("weak", **{"sft_seed": 0, **change}).validate()) is None, change
    assert warmstart.shipped(GRPOConfig.for_start("broad", sft_seed=0).validate()).name == "broad-sft0.npz"


def test_a_warm_start_file_is_the_same_bytes_for_the_same_weights_and_loads_back_tied():
    import torch

    from grpo_lab.train.model import TinyGPT
    from grpo_lab.train.task import BLOCK_SIZE, VOCAB

    torch.manual_seed(3)
    model = TinyGPT(len(VOCAB), BLOCK_SIZE, 1, 2, 16)
    state = warmstart.state_arrays(model)
    assert warmstart.TIED not in state and warmstart.npz_bytes(state) == warmstart.npz_bytes(dict(state))
    with np.load(warmstart.folder() / "weak-sft1.npz") as z:
        assert all(z[k].dtype == np.float32 for k in z.files)
    big = TinyGPT(len(VOCAB), BLOCK_SIZE)
    digest = warmstart.load(big, warmstart.folder() / "weak-sft1.npz")
    assert digest == warmstart.read_manifest()["weak-sft1.npz"]["sha256"]
    assert big.head.weight is big.tok.weight  # still tied after loading
    with np.load(warmstart.folder() / "weak-sft1.npz") as z:
        assert np.array_equal(big.tok.weight.detach().numpy(), z["tok.weight"])


@pytest.mark.parametrize("argv, needle", [(["no-such-run"], "is not a run record"),
                                          (["lm/cpu-g4-sign"], "only runs of grpo-lab train can be rerun"),
                                          ([CELL.name, "--steps", "0"], "steps must be an integer >= 1"),
                                          ([CELL.name, "--steps", "999"], "recorded 200 steps; cannot compare 999")])
def test_bad_input_to_the_rerun_command_is_one_line_exit_2(capsys, argv, needle):
    from grpo_lab.train.reproduce import main

    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and needle in err, err
