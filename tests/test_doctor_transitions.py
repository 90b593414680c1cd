"""Per-prompt transitions (sims/doctor/transitions.py): a known Markov chain recovered within its standard
error, the prompt-level SE against a bootstrap over prompts on a heterogeneous population, interval coverage
over replicates, the rule and recovery figures against a plain loop, a record
without repeats, and a shipped run cross-checked with the skip module's independent count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.doctor_report import text_report
from grpo_lab.sims.doctor.skip import temporal_consistency
from grpo_lab.sims.doctor.transitions import simulate_chain, transitions, visit_states
from grpo_lab.sims.record import RunRecord, read_record

RUNS = Path(__file__).parent.parent / "runs"
P_TRUE = np.array([[0.80, 0.17, 0.03],
                   [0.10, 0.60, 0.30],
                   [0.02, 0.28, 0.70]])
K = 4


def chain_record(states: np.ndarray, seed: int = 0) -> RunRecord:
    """A record whose prompt x at visit v has the state states[x, v]: all-fail 0000, all-pass 1111, and a
    mixed group with 1 to 3 passes; prompt x's visit v is at step v (prompts in shuffled order per step)."""
    rng = np.random.default_rng(seed)
    n, V = states.shape
    pid = np.concatenate([rng.permutation(n) for _ in range(V)])
    step = np.repeat(np.arange(V), n)
    st = states[pid, step]
    passes = np.where(st == 0, 0, np.where(st == 2, K, rng.integers(1, K, len(st))))
    rewards = (np.arange(K)[None, :] < passes[:, None]).astype(float)
    rewards = rng.permuted(rewards, axis=1)
    return RunRecord(meta={"name": "chain", "n_prompts": n, "num_generations": K},
                     groups={"step": step.astype(np.int64), "prompt_id": pid.astype(np.int64), "rewards": rewards,
                             "advantages": np.full_like(rewards, np.nan), "lengths": np.full(rewards.shape, -1, np.int64),
                             "kept": np.ones(len(st), bool)})


def test_known_chain_is_recovered_within_its_standard_error():
    t = transitions(run_groups(chain_record(simulate_chain(P_TRUE, 400, 12, seed=1))))
    assert t["available"] and t["transitions"] == 400 * 11
    z = (np.asarray(t["matrix"]) - P_TRUE) / np.asarray(t["se"])
    assert np.all(np.abs(z) < 3.5), z
    assert np.all(np.abs(z) > 0)  # an estimate, not the truth copied
    assert np.asarray(t["counts"]).sum() == 400 * 11
    # the prompt-level SE is the binomial SE of the row share when visits are a Markov chain (independent moves)
    n_row = np.asarray(t["counts"]).sum(axis=1, keepdims=True)
    se_binom = np.sqrt(P_TRUE * (1 - P_TRUE) / n_row)
    assert np.asarray(t["se"]) == pytest.approx(se_binom, rel=0.3)


def test_interval_coverage_over_replicates():
    hits = []
    for rep in range(100):
        t = transitions(run_groups(chain_record(simulate_chain(P_TRUE, 150, 6, seed=100 + rep), seed=rep)))
        hits.append((np.asarray(t["interval_lo"]) <= P_TRUE) & (P_TRUE <= np.asarray(t["interval_hi"])))
    cover = np.mean(hits)
    assert abs(cover - 0.95) < 0.03, cover  # 900 intervals (the percentile bootstrap gave 0.91)


def _rules_by_loop(seqs, n, target):
    marked = later = lost = nxt = 0
    for seq in seqs:
        run = 0
        for i, x in enumerate(seq):
            run = run + 1 if x == target else 0
            if run == n:
                marked += 1
                if i + 1 < len(seq):
                    later += 1
                    lost += 1 in seq[i + 1:]
                    nxt += seq[i + 1] == 1
                break
    return marked, later, lost, nxt


def test_rules_and_recovery_against_a_plain_loop():
    states = simulate_chain(P_TRUE, 300, 9, seed=4)
    t = transitions(run_groups(chain_record(states, seed=4)))
    seqs = [list(row) for row in states]
    for row in t["rules"]:
        for name, target in (("skip_after_all_fail", 0), ("retire_after_all_pass", 2)):
            marked, later, lost, nxt = _rules_by_loop(seqs, row["n"], target)
            x = row[name]
            assert (x["marked_prompts"], x["visited_after"], x["lost"]["k"], x["lost_next_visit"]["k"]) == \
                (marked, later, lost, nxt)
            assert x["censored"] == marked - later
    ever = [s for s in seqs if 0 in s]
    rec = sum(any(x != 0 for x in s[s.index(0) + 1:]) for s in ever)
    assert (t["recovery"]["ever"]["k"], t["recovery"]["ever"]["n"]) == (rec, len(ever))
    c = np.asarray(t["counts"])
    assert t["recovery"]["next_visit"]["share"] == pytest.approx((c[0, 1] + c[0, 2]) / c[0].sum())


def test_no_repeats_is_not_available():
    states = simulate_chain(P_TRUE, 200, 1, seed=2)
    t = transitions(run_groups(chain_record(states)))
    assert not t["available"] and t["reason"].startswith("not available: needs prompts visited at least twice")
    d = diagnose(chain_record(states))
    assert "transitions: not available: needs prompts visited" in text_report(d)


def test_shipped_run_agrees_with_the_skip_modules_count():
    groups = run_groups(read_record(RUNS / "weak-g4-dr_grpo-ds-lr0.0004-s1"))
    t = transitions(groups)
    c = np.asarray(t["counts"])
    assert c.sum() == groups.n - len(np.unique(groups.prompt_id))  # every visit but each prompt's first
    tc = temporal_consistency(groups)
    af = tc["all_fail_given_all_fail"] if "all_fail_given_all_fail" in tc else None
    if af is not None:  # the skip module counts the same pairs its own way
        assert af["n"] == c[0].sum() and af["share"] == pytest.approx(c[0, 0] / c[0].sum())
    uu = tc["unanimous_given_unanimous"]
    assert uu["n"] == c[0].sum() + c[2].sum()
    assert uu["share"] == pytest.approx((c[0, 0] + c[0, 2] + c[2, 0] + c[2, 2]) / (c[0].sum() + c[2].sum()))
    assert np.asarray(t["matrix"]).sum(axis=1) == pytest.approx(np.ones(3))
    lo, hi = np.asarray(t["interval_lo"]), np.asarray(t["interval_hi"])
    assert np.all(lo <= np.asarray(t["matrix"])) and np.all(np.asarray(t["matrix"]) <= hi)
    assert np.array_equal(visit_states(groups)[:5], np.where(groups.successes[:5] == 0, 0,
                                                            np.where(groups.successes[:5] == K, 2, 1)))


def test_prompt_level_se_matches_a_bootstrap_over_prompts():
    """Prompts with their own chains (correlated visits): the sandwich SE equals a direct prompt bootstrap's."""
    rng = np.random.default_rng(7)
    blocks = []
    for stay in (0.9, 0.5):  # two kinds of prompt: sticky and loose
        P = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
        blocks.append(simulate_chain(P, 150, 10, seed=int(rng.integers(1 << 30))))
    states = np.vstack(blocks)
    t = transitions(run_groups(chain_record(states, seed=3)))
    per = np.zeros((len(states), 3, 3))
    for x, seq in enumerate(states):
        np.add.at(per[x], (seq[:-1], seq[1:]), 1)
    boot = []
    for _ in range(600):
        c = per[rng.integers(0, len(per), len(per))].sum(axis=0)
        boot.append(c / c.sum(axis=1, keepdims=True))
    assert np.asarray(t["se"]) == pytest.approx(np.std(boot, axis=0), rel=0.15)
    naive = np.sqrt(np.asarray(t["matrix"]) * (1 - np.asarray(t["matrix"])) / np.asarray(t["counts"]).sum(axis=1,
                                                                                                          keepdims=True))
    assert np.asarray(t["se"])[0, 0] > 1.2 * naive[0, 0]  # the clustering widens the interval on the sticky state
