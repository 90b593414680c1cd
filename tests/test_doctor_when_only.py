"""The doctor's "when" alone (``diagnose(..., only="when")``, what the fleet keeps: lab/fleet_doctor.py) equals the
whole diagnosis's: ``when`` and the tracker's figures (P(stall within the next 10% of the run) among them) compared
exactly, as ``diagnose --json`` prints them, on the shipped runs (records with groups, dynamic sampling with a cap
among them), the real tracker logs (scalars, read with their own config) and a fleet folder's runs (a groups record, a
scalars record, a tinker metrics.jsonl), with a capped loop's settings where the run's own config gives none; a record
the doctor refuses is refused with the same line; ``only="tracker"`` also fires the same rules. The partial diagnosis
leaves the other stages out (no samplers, no group-level fit)."""

from __future__ import annotations

import pytest

from grpo_lab.fleet import Fleet
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.drift import forget_measured
from grpo_lab.sims.doctor.trainer_config import read_trainer_config
from grpo_lab.sims.doctor.tracker_values import PREFIX
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.jsonable import jsonable
from grpo_lab.sims.record import read_record
from grpo_lab.testing.fleet_runs import make_fleet
from grpo_lab.testing.real_logs import read_real, real_logs

#: shipped runs: dynamic sampling with its own capped config (the stall risk), a run already below the threshold,
#: one whose model the log contradicts, one the doctor refuses (too few groups), and a larger run of 4 arms
SHIPPED = ("weak-g4-dr_grpo-ds-retire2-lr0.0004-s1", "lm/cpu-g4-dr_grpo", "lm/cpu-g8-dr_grpo-ds-p20",
           "lm/cpu-g8-dr_grpo-ds", "broad-g4-sign-lr0.0004-s1")
#: a capped DAPO loop for the runs that give no config of their own (a stall forecast, so P(stall) ahead exists)
CAPPED = dict(gen_batch_size=32, train_batch_size=16, max_num_gen_batches=3)


def _diagnosis(record, settings, only):
    forget_measured()  # each diagnosis measures its record's drift itself (none reuses the other's measurement)
    try:
        return jsonable(diagnose(record, trainer_config=settings, only=only))
    except InputError as exc:
        return {"error": str(exc)}


#: the whole diagnoses made so far, by (run, settings): a run diagnosed whole under the same settings by two tests
#: (the "when" and the "tracker" comparisons) is diagnosed once, each of its diagnoses measuring its own drift
_WHOLE: dict = {}


def _whole(run: str, record, settings) -> dict:
    key = (run, repr(settings))
    if key not in _WHOLE:
        _WHOLE[key] = _diagnosis(record, settings, None)
    return _WHOLE[key]


def _same_when(record, settings, run: str | None = None) -> dict:
    """The partial diagnosis checked against the whole one (kept by ``run``, where named); returns the partial one."""
    part = _diagnosis(record, settings, "when")  # first: nothing left behind by the whole diagnosis helps it
    whole = _diagnosis(record, settings, None) if run is None else _whole(run, record, settings)
    if "error" in whole:
        assert part == whole
        return part
    assert part["when"] == whole["when"]
    assert part["tracker"] == {k: v for k, v in whole["tracker"].items() if k != PREFIX + "rules"}
    assert part["only"] == "when" and "rules" not in part
    assert "samplers" not in part and ("scalars_only" in part or "mixture" not in part)
    return part


@pytest.mark.parametrize("run", SHIPPED)
def test_when_alone_equals_the_whole_diagnosis_on_shipped_runs(run):
    part = _same_when(read_record(DEFAULT_RUNS_DIR / run), None, run)
    if run.startswith("weak-g4-dr_grpo-ds"):  # its own capped config: the stall risk and P(stall) ahead
        assert part["when"]["stall"]["available"] and PREFIX + "p_stall_next" in part["tracker"]
    if run == "lm/cpu-g8-dr_grpo-ds":
        assert "too few to fit" in part["error"]


@pytest.mark.parametrize("entry", real_logs(), ids=lambda e: e["name"])
def test_when_alone_equals_the_whole_diagnosis_on_real_logs(entry):
    part = _same_when(read_real(entry["name"]), read_trainer_config(**CAPPED), "real:" + entry["name"])
    if entry["rows"] >= 3:
        assert PREFIX + "p_stall_next" in part["tracker"]


def test_when_alone_equals_the_whole_diagnosis_on_a_fleets_runs(tmp_path):
    make_fleet(tmp_path, n=3, steps=60)
    fleet = Fleet(str(tmp_path))
    fleet.refresh()
    kinds = {}
    for run in fleet.runs.values():
        record = read_record(run.source) if isinstance(run.source, str) else run.record
        part = _same_when(record, read_trainer_config(**CAPPED))
        kinds[run.kind] = bool(part.get("scalars_only"))
        assert PREFIX + "p_stall_next" in part["tracker"]
    assert kinds == {"groups": False, "scalars": True, "tracker log (jsonl)": True}


@pytest.mark.parametrize("run", ["weak-g4-dr_grpo-ds-retire2-lr0.0004-s1", "lm/cpu-g4-dr_grpo",
                                 "real:tinker-arithmetic-gs4-gpb100"])
def test_tracker_alone_fires_the_same_rules(run):
    """What ``grpo-lab watch --emit`` writes: the tracker's figures and the rules (the cap rule's forecasts under
    each change among them); the first run with its own config (a pool, no cap: no cap rule), the others under a
    capped loop (the cap rule fires); a real log's rewards are not binary (the tie-share trend, no pass-rate fit)."""
    real = run.startswith("real:")
    record = read_real(run[5:]) if real else read_record(DEFAULT_RUNS_DIR / run)
    settings = None if run.startswith("weak") else read_trainer_config(**CAPPED)
    part, whole = _diagnosis(record, settings, "tracker"), _whole(run, record, settings)
    assert part["rules"] == whole["rules"] and part["tracker"] == whole["tracker"]
    assert part["when"] == whole["when"]
    assert [r["rule"] for r in part["rules"]] == ([] if settings is None else ["cap_hit"])
    if real:
        assert "fit" not in part and "tie_fit" in part


def test_an_unknown_part_is_refused_in_one_line():
    record = read_record(DEFAULT_RUNS_DIR / "lm/cpu-g4-dr_grpo")
    with pytest.raises(InputError, match="only must be one of when, tracker"):
        diagnose(record, only="fit")


@pytest.mark.parametrize("theta, model", [([0.3, 1.1, 2.0], "logit"), ([1.1, 0.3, -2.5], "logit"),
                                          ([0.5, 0.2, 1.5, -1.0], "logit_stuck"), ([0.4, 0.9, 0.7], "power")])
def test_the_shares_only_tables_are_the_whole_tables_first_two(theta, model):
    """``population_moments(..., shares=True)`` (the shares' likelihood and the mixed-share draws) gives pi_pass and
    pi_fail equal, float for float, to the tables with E[p] and E[p^2], on few times and on many (interpolated)."""
    import numpy as np

    from grpo_lab.sims.doctor.scalars_fit import population_moments

    for t in (np.linspace(0.0, 1.0, 7), np.linspace(0.0, 3.0, 2000)):
        whole = population_moments(np.array(theta), t, 8, model)
        part = population_moments(np.array(theta), t, 8, model, shares=True)
        assert set(whole) == {"all_pass", "all_fail", "mean", "second"}
        for k in ("all_pass", "all_fail"):
            assert np.array_equal(part[k], whole[k])
        assert np.all(whole["all_pass"] + whole["all_fail"] < 1)
