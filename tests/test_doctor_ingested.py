r"""Every part of the doctor on a record written by a real tool: TRL 1.16's own GRPOTrainer.

``tests/fixtures/ingest/trl_matrix/doctor``: 60 steps of TRL's GRPOTrainer on CPU with the tiny local model of
``make_trl_fixture.py`` (16 prompts, G = 4, reward_funcs [correct, short]); ``truth.json`` is the ground truth
recorded inside the reward functions during the run, ``trainer_config.json`` the GRPOConfig values TRL resolved.
Every figure below is recomputed from the truth, never from the ingested record.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.ingest import ingest
from grpo_lab.testing.ingested_truth import check_fit, mixed_per_1000, state, transition_counts

TRL = Path(__file__).parent / "fixtures" / "ingest" / "trl_matrix" / "doctor"
G = 4


@pytest.fixture(scope="module")
def trl():
    rec = ingest(TRL / "run", "trl")
    truth = json.loads((TRL / "truth.json").read_text())
    cfg = read_trainer_config(TRL / "trainer_config.json")
    return rec, truth, diagnose(rec, tolerance=0.0, trainer_config=cfg)  # a pass: correct + short > 0.5


def _truth_groups(truth):
    """Per group in generation order: (logged step, prompt text, correct[G], correct + short[G])."""
    out = []
    for gen in truth["generations"]:
        c = np.asarray(gen["rewards"]["correct"], float).reshape(-1, G)
        s = np.asarray(gen["rewards"]["short"], float).reshape(-1, G)
        for i in range(c.shape[0]):
            out.append((gen["global_step"] + 1, gen["prompts"][i * G], c[i], c[i] + s[i]))
    return out


def test_fit_is_the_maximum_likelihood_of_the_truths_counts(trl):
    """The Beta-binomial fit equals an independent ML fit (scipy) of the successes recomputed from the truth."""
    _, truth, d = trl
    S = np.array([int(np.sum(t > 0.5)) for *_, t in _truth_groups(truth)])
    assert d["run"]["groups"] == len(S) == 240 and d["run"]["K"] == G
    check_fit(d, S, G)


def test_stall_forecast_reads_the_trainers_config(trl):
    """--trainer-config with TRL's keys: K and the batch are TRL's; no cap (TRL has no dynamic sampling), and the
    calibration's observed mixed share is the truth's over the same steps."""
    _, truth, d = trl
    sf = d["stall_forecast"]
    cfg = json.loads((TRL / "trainer_config.json").read_text())
    assert sf["available"] and sf["settings"]["trainer"] == "trl" and sf["settings"]["K"] == cfg["num_generations"]
    assert sf["settings"]["train_batch"] == cfg["generation_batch_size"] // cfg["num_generations"]
    assert not sf["settings"]["cap_effective"]
    lo, hi = sf["calibrated"]["steps"]
    mixed = [state(t) == 1 for step, _, _, t in _truth_groups(truth) if lo <= step <= hi]
    assert sf["calibrated"]["observed"] == pytest.approx(np.mean(mixed))
    assert np.isfinite(sf["now"]["expected"]) and sf["now"]["expected"] >= 1


def test_plain_sampler_against_the_runs_own_mixed_share(trl):
    """Plain GRPO's useful groups per 1,000 rollouts on the fitted population, against the run's observed mixed
    share (1000 / K per group): within 3 standard errors of the observed share."""
    _, truth, d = trl
    (plain,) = [r for r in d["samplers"]["rows"] if r["sampler"] == "plain"]
    want, se = mixed_per_1000([t for *_, t in _truth_groups(truth)], G)
    assert abs(plain["useful_per_1000"] - want) < 3 * se


def test_transitions_count_the_truths_visits(trl):
    """Per prompt, the states of consecutive visits (in generation order) counted from the truth."""
    _, truth, d = trl
    want = transition_counts((prompt, t) for _, prompt, _, t in _truth_groups(truth))
    tr = d["transitions"]
    assert tr["available"] and np.array_equal(np.asarray(tr["counts"]), want) and want.sum() == 240 - 16


def test_audit_and_phantom_groups_against_the_truth(trl):
    """TRL's logged frac_reward_zero_std is reproduced at every step; the phantom-gradient groups (unanimous in
    'correct', not in correct + short) are exactly the truth's."""
    _, truth, d = trl
    a = d["audit"]
    (check,) = [c for c in a["checks"] if c["metric"] == "frac_reward_zero_std"]
    assert check["agree"] == check["compared_steps"] == 60 and not check["disagreements"]
    groups = _truth_groups(truth)
    phantom = [(step, len(set(c)) == 1 and len(set(t)) > 1) for step, _, c, t in groups]
    sp = a["split"]
    assert sp["phantom"]["count"] == sum(p for _, p in phantom) > 0
    assert sp["phantom"]["share"] == pytest.approx(np.mean([p for _, p in phantom]))
    assert [g["step"] for g in sp["phantom"]["groups"]] == [s for s, p in phantom if p][:len(sp["phantom"]["groups"])]
    assert sp["correctness"]["all_fail"] == pytest.approx(np.mean([np.all(c == 0) for _, _, c, _ in groups]))
