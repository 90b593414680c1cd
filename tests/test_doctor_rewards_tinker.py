"""tinker-cookbook's rewards classified from what its log holds (issue #39 item 3): ``env/all/correct``,
``env/all/format`` and ``env/all/total_episodes`` are kept at ingest; ProblemEnv's reward is
``correct + format_coef (format - 1)`` (rl/problem_env.py) and ``reward/total`` a mean over ``total_episodes``
trajectories (rl/metric_util.py), so the doctor can tell binary rewards from a format penalty or a rubric's pass
rate. And the note on the zero-std share says why it is all-pass + all-fail, by trainer.

Logs are written here the way tinker-cookbook computes them (each rollout's correct, format and reward, the
by-group split of ``_compute_by_group_metrics``, ``np.mean`` over trajectories), and the real logs of
tests/fixtures/real are checked against their SOURCE.md (index.json's ``rewards``) and against their raw lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.rewards import classify_scalars
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.testing.real_logs import read_real, real_logs

TINKER_REAL = [e for e in real_logs() if e["trainer"] == "tinker-cookbook"]
K, G = 8, 16


def _by_group(rewards: np.ndarray) -> dict:
    """tinker-cookbook's _compute_by_group_metrics (good_thresh 0.5), rewritten here."""
    same = np.all(rewards == rewards[:, :1], axis=1)
    good = same & (rewards[:, 0] >= 0.5)
    return {"env/all/by_group/frac_mixed": float(np.mean(~same)), "env/all/by_group/frac_all_good": float(np.mean(good)),
            "env/all/by_group/frac_all_bad": float(np.mean(same & ~good))}


def _write_log(tmp_path: Path, rows: int, *, bad_format_until: int = -1, rubric: bool = False, coef: float = 0.1,
               seed: int = 0) -> tuple[Path, list[np.ndarray]]:
    """A metrics.jsonl and config.json as tinker-cookbook's train.py writes them; per row, each of G groups of K
    rollouts: correct ~ Bernoulli(p_prompt), format 1 (0 with chance 0.3 at rows <= bad_format_until), reward
    correct + coef (format - 1); with ``rubric`` the reward is a pass rate of 7 rubric items instead."""
    rng = np.random.default_rng(seed)
    lines, all_rewards = [], []
    for step in range(rows):
        p = rng.beta(0.6, 0.6, size=G)[:, None]
        if rubric:
            passed = rng.binomial(7, np.broadcast_to(p, (G, K)))
            reward = passed / 7.0
            line = {"env/all/pass_rate": float(np.mean(reward)), "env/all/num_rubrics": 7.0,
                    "env/all/num_passed": float(np.mean(passed))}
        else:
            correct = (rng.random((G, K)) < p).astype(float)
            fmt = np.ones((G, K)) if step > bad_format_until else (rng.random((G, K)) > 0.3).astype(float)
            reward = correct + coef * (fmt - 1)
            line = {"env/all/correct": float(np.mean(correct)), "env/all/format": float(np.mean(fmt))}
        line.update({"step": step, "env/all/reward/total": np.mean(reward.ravel()).item(),
                     "env/all/total_episodes": G * K, **_by_group(reward),
                     "test/env/all/correct": 0.25})  # an evaluation's metric under another prefix: not read
        lines.append(json.dumps(line))
        all_rewards.append(reward)
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "config.json").write_text(json.dumps({"dataset_builder": {"group_size": K, "groups_per_batch": G}}))
    return tmp_path / "metrics.jsonl", all_rewards


def _classify(path: Path) -> dict:
    rec = read_scalars(path.parent)
    return classify_scalars(rec.steps, rec.meta["num_generations"], rec.meta["source"]), rec


def test_binary_problem_env_rewards_read_as_binary(tmp_path):
    path, _ = _write_log(tmp_path, 30)
    c, rec = _classify(path)
    assert rec.steps["scalar/env/all/correct"][0] == json.loads(path.read_text().splitlines()[0])["env/all/correct"]
    assert c["rewards"] == "binary", c
    assert "equals env/all/correct" in c["rewards_why"][0] and "no format penalty" in c["rewards_why"][0]
    d = diagnose(rec)
    assert d["run"]["rewards"] == "binary" and "tie_fit" not in d  # the pass-rate model applies


def test_a_format_penalty_is_not_binary_and_the_rows_are_named(tmp_path):
    path, _ = _write_log(tmp_path, 30, bad_format_until=4)
    c, _ = _classify(path)
    assert c["rewards"] == "not binary"
    words = " ".join(c["rewards_why"])
    assert "correct + 0.1 (format - 1)" in words and "steps 0-4" in words and "from step 5" in words


def test_a_rubric_pass_rate_is_not_binary_by_the_lattice(tmp_path):
    path, rewards = _write_log(tmp_path, 20, rubric=True)
    c, rec = _classify(path)
    assert c["rewards"] == "not binary"
    # the rows a mean of 0/1 rewards could not give, counted here from the rewards themselves
    off = sum(abs(r.sum() - round(r.sum())) > 1e-6 for r in rewards)
    assert f"at {off} of 20 rows" in c["rewards_why"][0]
    # tinker's tie share is exact whatever the rewards: the record's zero-std share is the share of tied groups
    tied = [float(np.mean(np.all(r == r[:, :1], axis=1))) for r in rewards]
    np.testing.assert_allclose(rec.steps["frac_reward_zero_std"], tied, atol=1e-12)
    assert any("exact whatever the rewards" in n and "all_same" in n for n in rec.meta["source"]["notes"])


def test_the_sum_note_says_binary_only_for_trainers_that_split_on_values(tmp_path):
    """ROLL's all-correct / all-incorrect count scores == 1 / == 0: a group tied at 0.5 is in neither."""
    f = tmp_path / "roll.jsonl"
    f.write_text("\n".join(json.dumps({"step": s, "critic/all_correct_groups_ratio": 0.25,
                                       "critic/all_incorrect_groups_ratio": 0.5, "critic/group/correct_ratio/mean": 0.4})
                           for s in range(5)) + "\n")
    rec = read_scalars(f, trainer="roll", num_generations=4)
    notes = rec.meta["source"]["notes"]
    assert any("binary rewards: a group tied at another value is in neither" in n for n in notes)
    assert not any("exact whatever the rewards" in n for n in notes)


@pytest.mark.parametrize("entry", TINKER_REAL, ids=[e["name"] for e in TINKER_REAL])
def test_real_tinker_logs_are_classified_as_their_source_says(entry):
    rec = read_real(entry["name"])
    c = classify_scalars(rec.steps, rec.meta["num_generations"], rec.meta["source"])
    assert c["rewards"] == entry["rewards"] != "unknown"
    rows = [json.loads(x) for x in entry["path"].read_text().splitlines() if x.strip()]
    if "env/all/correct" in rows[0]:  # the arithmetic run: a format penalty at the rows where format < 1
        bad = [r["step"] for r in rows if r["env/all/format"] < 1]
        assert bad == list(range(bad[0], bad[-1] + 1))
        assert f"steps {bad[0]}-{bad[-1]}" in " ".join(c["rewards_why"])
        assert f"from step {bad[-1] + 1}" in " ".join(c["rewards_why"])
    else:  # the rubric runs and the reward-hacking run: mean reward x total_episodes, worked out from the raw lines
        off = [r for r in rows if abs(r["env/all/reward/total"] * r["env/all/total_episodes"]
                                      - round(r["env/all/reward/total"] * r["env/all/total_episodes"]))
               > 1e-6 * r["env/all/total_episodes"]]
        assert f"at {len(off)} of {len(rows)} rows" in " ".join(c["rewards_why"]) and len(off) > 0
