"""``grpo-lab inspect``'s figures recomputed from a record's raw arrays with plain numpy, and the check that the
command prints them (used by the inspect and trainer tests)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.record import read_record


def expected_figures(rec) -> dict:
    """The inspect figures, from the arrays with plain numpy (no call into sims.record.summarise)."""
    r = rec.groups["rewards"]
    G = r.shape[1]
    spread = r.max(axis=1) - r.min(axis=1)
    same = spread == 0
    evals = []
    for step, rates in zip(rec.evals["step"], rec.evals["pass_rate"]):
        m = rates.mean()
        evals.append({"step": int(step), "mean_pass_rate": m, "d_real": np.mean(rates ** G + (1 - rates) ** G),
                      "d_iid": m ** G + (1 - m) ** G})
    return {
        "steps": len(np.unique(rec.steps["step"])),
        "groups": len(r),
        "frac_reward_zero_std": same.mean(),
        "frac_all_pass": (same & (r[:, 0] == 1)).mean(),
        "frac_all_fail": (same & (r[:, 0] == 0)).mean(),
        "rollouts_per_kept_group": r.size / rec.groups["kept"].sum(),
        "final_eval_pass_rate": evals[-1]["mean_pass_rate"],
        "evals": evals,
    }


def check_inspect(path, capsys) -> dict:
    """Run ``grpo-lab inspect PATH --json`` and compare every figure with :func:`expected_figures`."""
    rec = read_record(path)
    assert main(["inspect", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = expected_figures(rec)
    for key in ("steps", "groups"):
        assert got[key] == want[key], key
    for key in ("frac_reward_zero_std", "frac_all_pass", "frac_all_fail", "rollouts_per_kept_group", "final_eval_pass_rate"):
        assert got[key] == pytest.approx(want[key], abs=1e-12), key
    assert len(got["evals"]) == len(want["evals"])
    for g, w in zip(got["evals"], want["evals"]):
        assert g["step"] == w["step"]
        for key in ("mean_pass_rate", "d_real", "d_iid"):
            assert g[key] == pytest.approx(w[key], abs=1e-12)
    assert rec.groups["rewards"].shape == (want["groups"], rec.meta["num_generations"])
    return got
