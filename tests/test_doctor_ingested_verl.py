r"""Every part of the doctor on a record written by verl-recipe's own DAPO dynamic-sampling loop.

``tests/fixtures/ingest/verl_matrix/dapo_filter``: ``RayDAPOTrainer.fit`` of verl-recipe (commit 48ea0a7) on
verl 0.9.1, run by ``make_verl_dapo.py`` with stand-ins only for the GPU / Ray / inference-engine calls (24
prompts, ``rollout.n`` 4, ``train_batch_size`` 4, ``gen_batch_size`` 8, ``filter_groups`` on ``seq_final_reward``
with ``max_num_gen_batches`` 4, DAPO's overlong penalty). verl trained 52 steps and stopped at step 53 with its
own ``ValueError`` at the cap. ``truth.json`` holds every generated group (kept or filtered out) with its uid,
training reward and the scorer's return, the uids of each dumped step in dump order, and the rounds per step
counted by the stand-in rollout. The record goes through the command line (``grpo-lab ingest --format verl``,
``grpo-lab diagnose --trainer-config ... --json``); every figure it is checked against is recomputed from the
truth, never from the ingested record.

What the dump holds is what verl writes: only the groups that survived the filter and were trained on (208 of
624 generated), and no ``acc`` / ``overlong_reward`` (the recipe passes the last generation batch's reward extras,
32 rows, to the dump of the 16 trained rows, and ``_write_generations`` drops lists of another length).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.doctor_report.stall import stall_html
from grpo_lab.sims.record import read_record
from grpo_lab.testing.ingested_truth import check_fit, mixed_per_1000, transition_counts

VERL = Path(__file__).parent / "fixtures" / "ingest" / "verl_matrix" / "dapo_filter"
G = 4


@pytest.fixture(scope="module")
def verl(tmp_path_factory):
    out = tmp_path_factory.mktemp("verl") / "record"
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["ingest", str(VERL / "run"), "--format", "verl", "--out", str(out)]) == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):  # a pass: training reward > 0.5
        assert main(["diagnose", str(out), "--tolerance", "0", "--trainer-config", str(VERL / "trainer_config.json"),
                     "--json"]) == 0
    truth = json.loads((VERL / "truth.json").read_text())
    return read_record(out), truth, json.loads(buf.getvalue()), said.getvalue()


def _dumped(truth):
    """Per dumped group, in dump order (step, then first row in the file): (step, prompt, training reward[G],
    acc[G]), rebuilt from the uids the truth recorded for each dumped row."""
    by_uid = {g["uid"]: g for g in truth["groups"]}
    out = []
    for step, uids in truth["dump_uids"].items():
        for uid in dict.fromkeys(uids):
            g = by_uid[uid]
            assert g["dumped"] and g["step"] == int(step)
            out.append((int(step), g["prompt"], np.asarray(g["training_reward"], float),
                        np.asarray([c[1] for c in g["scorer_returned"]], float)))
    return out


def test_the_record_is_the_trained_groups_and_verl_stopped_at_the_cap(verl):
    """The ingested groups are the truth's dumped groups (the same training rewards per step and prompt); the
    generated groups the filter dropped are not in the dump; verl stopped at step 53 after 4 rounds."""
    rec, truth, d, _ = verl
    groups = _dumped(truth)
    assert d["run"]["groups"] == len(groups) == 208 and d["run"]["K"] == G
    assert len(truth["groups"]) == 624 and sum(g["dumped"] for g in truth["groups"]) == 208
    mine = sorted((int(s), tuple(sorted(r))) for s, r in zip(rec.groups["step"], rec.groups["rewards"].tolist()))
    want = sorted((s, tuple(sorted(r.tolist()))) for s, _, r, _ in groups)
    assert mine == want
    assert truth["stopped"]["step"] == 53 and truth["rounds"]["53"] == 4 and truth["cap_hit"]["53"]
    assert "max_num_gen_batches=4" in truth["stopped"]["error"] and not any(
        v for s, v in truth["cap_hit"].items() if s != "53")


def test_fit_is_the_maximum_likelihood_of_the_truths_counts(verl):
    """The Beta-binomial fit equals an independent ML fit (scipy) of the successes (training reward > 0.5)
    recomputed from the truth's dumped groups."""
    _, truth, d, _ = verl
    S = np.array([int(np.sum(t > 0.5)) for _, _, t, _ in _dumped(truth)])
    check_fit(d, S, G)


def test_audit_reproduces_critic_score_mean_and_says_the_correctness_split_is_missing(verl):
    """verl's logged critic/score/mean is reproduced at all 52 steps, and equals the truth's mean training reward
    per step; the dump has no correctness column, so the split is reported unavailable, although the truth holds
    phantom-gradient groups (unanimous in acc, not in the training reward) among the trained ones."""
    _, truth, d, _ = verl
    a = d["audit"]
    (check,) = [c for c in a["checks"] if c["metric"] == "critic/score/mean"]
    assert check["agree"] == check["compared_steps"] == 52 and not check["disagreements"]
    logged = {json.loads(line)["step"]: json.loads(line)["data"]
              for line in (VERL / "run" / "metrics.jsonl").read_text().splitlines()}
    groups = _dumped(truth)
    for step in range(1, 53):
        mean = np.mean([t for s, _, t, _ in groups if s == step])
        assert logged[step]["critic/score/mean"] == pytest.approx(mean, abs=1e-6)
    assert not a["split"]["available"] and "correctness" in a["split"]["reason"]
    phantom = [len(set(c)) == 1 and len(set(t)) > 1 for _, _, t, c in groups]
    assert sum(phantom) > 0  # what a dump with acc would have shown (docs/doctor.md gives the count)


def test_transitions_count_the_truths_visits(verl):
    """Per prompt, the states of consecutive trained visits (dump order) counted from the truth."""
    _, truth, d, _ = verl
    want = transition_counts((prompt, t) for _, prompt, t, _ in _dumped(truth))
    tr = d["transitions"]
    assert tr["available"] and np.array_equal(np.asarray(tr["counts"]), want) and want.sum() == 208 - 24


def test_stall_forecast_reads_verls_config_and_its_logged_rounds(verl):
    """--trainer-config with verl's keys; the rounds the forecast is checked against are the rounds the truth
    counted per trained step (verl's train/num_gen_batches), and its predicted rounds are reported beside them."""
    _, truth, d, _ = verl
    sf = d["stall_forecast"]
    cfg = json.loads((VERL / "trainer_config.json").read_text())
    st = sf["settings"]
    assert sf["available"] and st["trainer"] == "verl" and st["K"] == cfg["actor_rollout_ref"]["rollout"]["n"]
    assert (st["gen_batch"], st["train_batch"], st["cap"]) == (8, 4, 4) and st["cap_effective"] == 4
    v = sf["validation"]
    assert v["available"] and list(v["steps"]) == list(range(1, 53))
    assert list(v["observed"]) == [truth["rounds"][str(s)] for s in range(1, 53)]
    pred = np.asarray(v["predicted"], float)
    assert v["mae"] == pytest.approx(np.mean(np.abs(pred - np.asarray(v["observed"]))))


def test_plain_sampler_against_the_records_own_mixed_share(verl):
    """Plain GRPO's useful groups per 1,000 rollouts on the fitted population, against the record's own mixed
    share (1000 / K per group): within 3 standard errors."""
    _, truth, d, _ = verl
    (plain,) = [r for r in d["samplers"]["rows"] if r["sampler"] == "plain"]
    want, se = mixed_per_1000([t for _, _, t, _ in _dumped(truth)], G)
    assert abs(plain["useful_per_1000"] - want) < 3 * se


def test_calibration_to_the_logged_rounds_sees_the_stall_the_survivors_hide(verl):
    """The record holds only the trained groups: over the last 10 logged steps 40 groups, where the truth
    generated 192 (the rounds x 8). The calibration to the record's mixed share (the survivors') puts the stall
    far after verl's stop at step 53; the calibration to the logged rounds (their mean equals the truth's) puts
    P(stall) > 0.05 within 3 steps of it."""
    _, truth, d, _ = verl
    sf = d["stall_forecast"]
    cr = sf["calibrated_rounds"]
    steps = range(cr["steps"][0], cr["steps"][1] + 1)
    assert list(steps) == list(range(43, 53)) and not cr["at_bound"]
    assert cr["observed"] == pytest.approx(np.mean([truth["rounds"][str(s)] for s in steps]))
    assert cr["drawn"] == sum(g["step"] in steps for g in truth["groups"]) == 192
    assert cr["recorded"] == sum(s in steps for s, *_ in _dumped(truth)) == 40
    stop = truth["stopped"]["step"]
    assert abs(cr["stall"]["0.05"] - stop) <= 3
    assert sf["calibrated"]["stall"]["0.05"] > stop + 20  # the survivors' mixed share: the biased calibration
    page = stall_html(d)  # the HTML report says the same
    assert (f"Calibrated to the logged rounds of steps 43-52 ({cr['observed']:.2f} logged" in page
            and f"above 0.05 first at step {cr['stall']['0.05']}" in page and "holds 40 groups" in page)


def test_ingest_says_the_dump_holds_the_survivors_and_no_extras(verl):
    """The ingest names the steps at which verl drew more than one round (the truth's) and says the dump holds
    only the trained groups and no reward extras (the truth: 624 generated, 208 dumped; no acc in the dump)."""
    _, truth, _, said = verl
    multi = [int(s) for s, r in truth["rounds"].items() if r > 1 and int(s) <= 52]
    assert multi == [22, 28, 30, 32, 33, 34, *range(41, 53)] and "train/num_gen_batches > 1 at steps 22, 28, 30, 32-34, 41-52" in said
    assert "the dump holds only the groups that trained" in said and "correctness split is not in this record" in said
    rows = [json.loads(line) for line in (VERL / "run" / "rollouts" / "1.jsonl").read_text().splitlines()]
    assert not {"acc", "overlong_reward"} & set(rows[0])


def test_risk_reads_the_dump_as_survivors_and_holds_verls_stop(verl):
    """The risk (issue 32): the dump is recognised as the survivors of the filter from the logged rounds (208
    groups recorded where the rounds drew 592 = sum of the truth's rounds x 8), the likelihood truncated and the
    rounds used; its 90% interval for the first stall holds the step at which verl raised (53), and the cause is
    saturation (the truth's prompts drift to all-pass: every group of the stalled step but 3 is all-pass)."""
    _, truth, d, _ = verl
    rk = d["stall_forecast"]["risk"]
    drawn = sum(truth["rounds"][str(s)] for s in range(1, 53)) * 8
    assert rk["available"] and rk["survivors"] and rk["rounds_used"] and rk["rounds_informative"]
    assert f"holds 208 groups where the logged rounds" in rk["survivors_reason"] and f"drew {drawn}" in rk["survivors_reason"]
    lo, hi = rk["first_stall"]["interval"]
    stop = truth["stopped"]["step"]
    assert lo <= stop <= hi
    assert rk["cause"] == "all-pass saturation"
    F = np.asarray(rk["cumulative"])
    assert np.all(np.diff(F) >= -1e-12) and F[-1] <= 1  # a distribution function
    i = int(np.searchsorted(rk["step"], rk["first_stall"]["median"]))
    assert F[i] >= 0.5 > (F[i - 1] if i else 0.0)  # the median is where the cumulative passes one half
    page = stall_html(d)  # the report: the risk's table, its band plot, the survivors said
    assert 'id="doctor-stall-risk"' in page or "doctor-stall-risk" in page
    assert "<polygon" in page and "Stall risk: cumulative and per step" in page
    assert "holds only the trained groups: fitted with the likelihood truncated to 0 &lt; k &lt; K" in page
