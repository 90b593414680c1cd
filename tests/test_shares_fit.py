"""The scalars-only diagnosis's fit section is the shares' measured drift (sims/doctor/shares_fit.py): the chosen
(variant, shape) pair's population, shape parameters and weights, its fitted shares recomputed by quadrature over the
population, and its stall forecast's P(stall) recomputed from the binomial law of the rounds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logit

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.drift import SHAPES, forget_measured
from grpo_lab.sims.doctor.drift_shares import shares_drift
from grpo_lab.sims.doctor.scalars_fit import step_shares
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "test"}
NODE_TOL = 0.01  #: the drift's population is 48 quantile nodes of the Beta (drift.NODES): a share within 1 point


@pytest.fixture(scope="module")
def run():
    rec = simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2)
    forget_measured()
    d = diagnose(rec, trainer_config=SETTINGS)
    forget_measured()  # measured again here, on its own
    ev, dr = shares_drift(step_shares(rec))
    return rec, d, ev, dr


def _link(p, link):
    return logit(p) if link == "logit" else -np.log(-np.log(p))


def _inv(z, link):
    return expit(z) if link == "logit" else np.exp(-np.exp(-z))


def _moment(f, a, b, h, link):
    """E[f(p shifted by h)] over Beta(a, b), by adaptive quadrature."""
    g = lambda p: f(_inv(_link(p, link) + h, link)) * stats.beta.pdf(p, a, b)  # noqa: E731
    return integrate.quad(g, 0, 1, limit=200, points=[1e-6, 1e-3, 0.5, 1 - 1e-3])[0]


def test_the_fit_is_the_chosen_pair_of_the_measured_drift(run):
    rec, d, ev, dr = run
    f = d["fit"]
    pairs = dr["weights"]["pairs"]
    best = max(pairs, key=pairs.get)
    variant, shape = best.split("/")
    link = SHAPES[shape]
    assert f["source"] == "drift shapes" and d["model"] == f["model"] == best and f["link"] == link
    assert d["fits"][best]["weight"] == pytest.approx(pairs[best]) and sum(x["weight"] for x in d["fits"].values()) == \
        pytest.approx(1.0)
    pop = dr["variants"][variant][link]["population"]
    assert f["population"]["a"] == pytest.approx(pop["a"]) and f["population"]["b"] == pytest.approx(pop["b"])
    assert (f["alpha"], f["beta"]) == (f["population"]["a"], f["population"]["b"])
    # a's interval: quantiles of exp(x0), x0 ~ N(log a, cov00): exp(log a -/+ 1.96 sd) up to the draws' noise
    sd = float(np.sqrt(pop["cov"][0, 0]))
    want = np.exp(np.log(pop["a"]) + np.array([-1.96, 1.96]) * sd)
    assert np.allclose(f["population"]["intervals"]["a"], want, atol=0.1 * (want[1] - want[0]))
    sf = dr["variant_fits"][variant][shape]
    s0, s1 = float(dr["steps"][0]), float(rec.steps["step"][-1])
    assert shape == "linear"  # this run's choice (a logit-linear drift simulated): checked by its closed form
    c, slope = sf["theta"]
    se = np.sqrt(np.diag(sf["cov"]))
    assert f["shape_fit"]["params"] == pytest.approx({"c": c, "slope": slope})
    assert f["drift"] == pytest.approx(slope * (s1 - s0))
    assert f["intervals"]["drift"] == pytest.approx([(slope - 1.96 * se[1]) * (s1 - s0),
                                                     (slope + 1.96 * se[1]) * (s1 - s0)], rel=1e-3)
    # the fitted shares at the last step, by quadrature over the population (the masses do not move)
    h = c + slope * (s1 - s0)
    w0, w1 = pop["w0"], pop["w1"]
    rest = 1 - w0 - w1
    K = 8
    ap = w1 + rest * _moment(lambda q: q ** K, pop["a"], pop["b"], h, link)
    af = w0 + rest * _moment(lambda q: (1 - q) ** K, pop["a"], pop["b"], h, link)
    last = f["last"]
    assert last["all_pass"] == pytest.approx(ap, abs=NODE_TOL) and last["all_fail"] == pytest.approx(af, abs=NODE_TOL)
    assert last["mixed"] == pytest.approx(1 - ap - af, abs=NODE_TOL)
    assert last["all_pass_interval"][0] <= last["all_pass"] <= last["all_pass_interval"][1]
    # the samplers' population: the Beta with the mean and second moment of p at the last step
    m = w1 + rest * _moment(lambda q: q, pop["a"], pop["b"], h, link)
    m2 = w1 + rest * _moment(lambda q: q * q, pop["a"], pop["b"], h, link)
    tot = m * (1 - m) / (m2 - m * m) - 1
    assert d["samplers_population"] == pytest.approx([m * tot, (1 - m) * tot], rel=0.05)
    # the series: the logged shares as logged, at every step (60 rows: none pooled)
    s = f["series"]
    assert len(s["step"]) == 60
    assert np.allclose(s["observed_all_pass"], rec.steps["frac_all_pass"])
    assert np.allclose(s["observed_all_fail"], rec.steps["frac_all_fail"])


def test_the_stall_forecast_reads_the_drift_and_no_map_is_fitted(run, monkeypatch):
    rec, d, _, _ = run
    sf = d["stall_forecast"]
    assert sf["source"] == "drift shapes" and sf["risk"]["available"]
    # P(stall) per future step = P(R > cap) = P(Binomial(cap * gen_batch, u) < train_batch) at the projected mixed share
    u = np.asarray(d["expiry"]["projection"]["mixed"])
    want = stats.binom.cdf(SETTINGS["train_batch"] - 1, SETTINGS["cap"] * SETTINGS["gen_batch"], u)
    assert np.allclose(sf["series"]["p_stall"], want, atol=1e-9)
    assert np.array_equal(sf["series"]["step"], d["expiry"]["projection"]["step"])

    import grpo_lab.sims.doctor.scalars_diagnose as sd

    def refuse(*a, **k):
        raise AssertionError("the drift maps were fitted")

    monkeypatch.setattr(sd, "fit_models", refuse)
    monkeypatch.setattr(sd, "expiry_forecast", refuse)
    monkeypatch.setattr(sd, "stall_forecast", refuse)
    forget_measured()
    again = diagnose(rec, trainer_config=SETTINGS, only="when")
    assert again["fit"]["model"] == d["fit"]["model"] and again["when"]["stall"] == d["when"]["stall"]


def test_past_the_risks_horizon_the_cap_rule_reads_the_same_drift(run, monkeypatch):
    """With the risk not drawn (its horizon lowered under this run's), the first stall said is the first step over
    the cap on the drift's drawn mixed share, and the cap rule's changes are drawn from the same drift, no map fitted:
    each change that eases the loop (a doubled cap, harder prompts for an all-pass saturation) comes later."""
    import grpo_lab.sims.doctor.drift_shares as ds
    import grpo_lab.sims.doctor.scalars_diagnose as sd
    import grpo_lab.sims.doctor.scalars_forecast as sfc

    rec = run[0]

    def refuse(*a, **k):
        raise AssertionError("the drift maps were fitted")

    monkeypatch.setattr(ds, "RISK_MAX_STEPS", 50)
    monkeypatch.setattr(sd, "fit_models", refuse)
    monkeypatch.setattr(sfc, "stall_forecast", refuse)  # the maps' stall forecast (the rules import it from here)
    d = diagnose(rec, trainer_config=SETTINGS)
    sf = d["stall_forecast"]
    assert not sf["risk"]["available"] and sf["source"] == "drift shapes"
    assert d["when"]["stall"]["step"] == sf["first_cap_hit"]["median"] is not None
    (rule,) = [r for r in d["rules"] if r["rule"] == "cap_hit"]
    got = {r["change"].split(" (")[0]: r["first_stall"] for r in rule["changes"]}
    assert got["cap doubled"] > sf["first_cap_hit"]["median"] and got["harder prompts"] > sf["first_cap_hit"]["median"]
