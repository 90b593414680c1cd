"""No field of ``diagnose --json`` contradicts ``when`` or the log (issue #39 item 5): ``forecast.status`` (groups)
and ``expiry.status`` (scalars) are the checked answer, and where the log contradicts the model, its crossing step
is gone as ``when``'s is; the model's claim survives only in the verdict that checked it.

On the shipped runs (runs/, the LM runs and a weak-prompt run) and the real logs (tests/fixtures/real): each status
is ``when``'s, and against the logged mixed share of the last 10 rows (recomputed here from the record's groups or
shares, with its 95% Jeffreys interval) no status says "already below" over rows above the threshold, nor "stays
above" / "crosses" over rows below it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import read_record
from grpo_lab.testing.real_logs import read_real, real_logs

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "runs" / "lm").glob("*/run.json")) \
    + ["runs/weak-g4-sign-lr0.0004-s1"]
CONTRADICTED = "runs/lm/cpu-g8-dr_grpo-ds-p20"  #: its group trend crosses near step 9; its last rows are below 0.5
ROWS = 10


def _jeffreys(k: float, n: float) -> tuple[float, float]:
    return (stats.beta.ppf(0.025, k + 0.5, n - k + 0.5) if k > 0 else 0.0,
            stats.beta.ppf(0.975, k + 0.5, n - k + 0.5) if k < n else 1.0)


def _tail_of_groups(rec) -> tuple[float, float]:
    """The mixed share of the last ROWS steps' groups (0 < successes < K), pooled, and its interval."""
    r = np.asarray(rec.groups["rewards"], float)
    s, K = np.nansum(r, axis=1), np.sum(~np.isnan(r), axis=1)
    step = np.asarray(rec.groups["step"])
    last = np.isin(step, np.unique(step)[-ROWS:])
    return _jeffreys(float(np.sum(((s > 0) & (s < K))[last])), float(last.sum()))


def _tail_of_shares(rec) -> tuple[float, float]:
    """The same from a scalars record: 1 - the zero-std share, times the groups of each of the last ROWS rows."""
    st = rec.steps
    tie = np.asarray(st["frac_reward_zero_std"], float)
    n = np.asarray(st["groups_per_step"], float)
    ok = np.flatnonzero(np.isfinite(tie) & np.isfinite(n) & (n > 0))[-ROWS:]
    return _jeffreys(float(round(np.sum((1 - tie[ok]) * n[ok]))), float(round(np.sum(n[ok]))))


def _check(d: dict, lo: float, hi: float) -> None:
    w = d["when"]["expiry"]
    src, step = (d["expiry"], "step") if d.get("scalars_only") else (d["forecast"], "crossing_step")
    assert src["status"] == w["said"]
    assert src[step] == w["step"] and src["interval" if step == "step" else "crossing_interval"] == w["interval"]
    t = w["threshold"]
    said = "" if src["status"].startswith("no ") else src["status"]  # "no verdict: ...": nothing claimed
    assert not ("already below" in said and lo > t), (said, lo)
    assert not (("stays above" in said or "crosses" in said) and hi < t), (said, hi)
    assert "status" not in w  # one wording of the expiry in when: the checked one


@pytest.mark.parametrize("run", SHIPPED)
def test_no_status_of_a_shipped_run_contradicts_when_or_the_log(run):
    rec = read_record(ROOT / run)
    try:
        d = diagnose(rec)
    except InputError as exc:  # two LM runs hold too few groups: refused in one line, nothing to contradict
        assert "too few to fit" in str(exc)
        return
    _check(d, *_tail_of_groups(rec))


@pytest.mark.parametrize("entry", [e for e in real_logs() if e["rows"] >= 3], ids=lambda e: e["name"])
def test_no_status_of_a_real_log_contradicts_when_or_the_log(entry):
    rec = read_real(entry["name"])
    _check(diagnose(rec), *_tail_of_shares(rec))


def test_a_contradicted_crossing_is_gone_from_the_json_and_kept_as_the_checked_claim(monkeypatch):
    """The one model (the drift, :data:`.forecast.GROUP_EXPIRY`) says this run is already below, as its log does;
    the group trend (``forecast(model="trend")``, a named alternative) still crosses near step 9, after the rows
    that are below: diagnosed with it, the crossing is gone from the JSON and kept only as the checked claim."""
    import functools
    import importlib

    from grpo_lab.sims.doctor.forecast import forecast
    from grpo_lab.sims.jsonable import jsonable

    rec = read_record(ROOT / CONTRADICTED)
    lo, hi = _tail_of_groups(rec)
    assert hi < 0.5  # the log: the last rows are below the threshold
    assert diagnose(rec)["when"]["verdicts"][0]["holds"]  # the one model does not contradict it
    module = importlib.import_module("grpo_lab.sims.doctor.diagnose")
    monkeypatch.setattr(module, "run_forecast", functools.partial(forecast, model="trend"))
    d = json.loads(json.dumps(jsonable(diagnose(rec))))
    fc, v = d["forecast"], d["when"]["verdicts"][0]
    assert not v["holds"] and v["model"]["status"].startswith("crosses the threshold near step")
    assert v["model"]["step"] is not None  # the model's crossing, kept where it is named as the claim checked
    assert fc["status"] == d["when"]["expiry"]["said"] and fc["status"].startswith("no verdict")
    assert fc["crossing_step"] is None and fc["crossing_interval"] == [None, None]
    rows = [r for r in (d.get("scalars_fit") or {}).get("rows", []) if r["what"].startswith("expiry step")]
    assert all(r["groups"] is None for r in rows)  # the groups' figure beside the scalars fit: the same
