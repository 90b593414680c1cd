"""grpo-lab train-lm: the task's checker, bad input, and (marked slow) a 2-step run of the real model."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from grpo_lab.sims.record import read_record
from grpo_lab.sims.trl.arithmetic import TIERS, check_answer, extract_answer, make_prompts, reward_exact


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
def test_bad_input_is_one_line(tmp_path, argv, msg):
    proc = subprocess.run([sys.executable, "-m", "grpo_lab.cli", "train-lm", "--out", str(tmp_path / "r"), *argv],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and msg in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


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
    from trl_tiny import make_trainer

    from grpo_lab.sims.trl.lm_run import _stop_callback

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
