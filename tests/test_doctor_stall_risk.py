"""The stall risk (sims/doctor/stall_risk.py), the drift it measures (sims/doctor/drift.py) and the loop it is
checked against (sims/doctor/loop_sim.py).

The simulated loop against the closed-form round distribution, the survivors' truncated likelihood against
scipy's beta-binomial, the population fitted from survivors only against the truth (and the untruncated fit's
bias), the shapes' weights on paths of a known shape, the hazard's finite-set variance against a Monte Carlo,
and the report's lines for a run that never stalls.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from grpo_lab.doctor_report.stall import stall_lines
from grpo_lab.sims.doctor.drift import (H_GRID, fit_population, fit_shape, population_nll, population_table,
                                       predict, shape_weights, step_loglik)
from grpo_lab.sims.doctor.groups import run_groups
from grpo_lab.sims.doctor.loop_sim import simulate_loop, to_record
from grpo_lab.sims.doctor.stall import rounds_calibration, rounds_distribution, stall_forecast
from grpo_lab.sims.doctor.forecast import fit_trend
from grpo_lab.sims.doctor.stall_risk import risk_for_groups, step_hazard
from grpo_lab.sims.outcomes import p_useful

K = 8
I0 = int(np.argmin(np.abs(H_GRID)))


def test_loop_rounds_match_the_closed_form():
    """A static population: the simulated loop's rounds per step against P(R <= r) = P(Bin(rB, u) >= T) of the
    prompt set's mean P(mixed), within 4 standard errors; every trained step holds T mixed groups; the stall
    is the first step whose cap rounds held fewer than T."""
    p0 = np.random.default_rng(0).beta(0.5, 1.2, 500)
    B, T, cap = 32, 20, 6
    sim = simulate_loop(p0, K, B, T, cap, "static", {}, 400, seed=1)
    d = rounds_distribution(p_useful(p0, K), B, T, cap)
    r = sim["rounds"]
    for x in range(1, 4):
        emp = np.mean(r <= x)
        want = d["cdf"][x - 1] / d["cdf"][-1]  # the completed steps: R <= cap
        assert abs(emp - want) < 4 * np.sqrt(want * (1 - want) / len(r)) + 1e-3
    tr = sim["trained"]
    per_step = np.bincount(sim["step"][tr], minlength=len(r) + 1)[1:len(r) + 1]
    assert np.all(per_step == T)
    k = sim["successes"][tr]
    assert np.all((k > 0) & (k < K))
    if sim["stall_step"] is not None:
        last = sim["step"] == sim["stall_step"]
        k = sim["successes"][last]
        assert np.sum((k > 0) & (k < K)) < T and sim["round"][last].max() == cap
        assert not sim["trained"][last].any()


def test_survivors_record_holds_trained_groups_and_rounds():
    p0 = np.random.default_rng(1).beta(1.5, 1.5, 300)
    sim = simulate_loop(p0, K, 32, 24, 4, "logit", {"beta": 0.01}, 30, seed=2)
    rec = to_record(sim, "trained+rounds", 20)
    assert rec.groups["rewards"].shape == (20 * 24, K)
    assert np.array_equal(rec.steps["scalar/train/num_gen_batches"], sim["rounds"][:20])
    all_rec = to_record(sim, "all", 20)
    assert len(all_rec.groups["step"]) == int(np.sum(sim["rounds"][:20])) * 32


def test_population_table_is_the_beta_binomial():
    """At h = 0 the quadrature's group pmf is the beta-binomial's within 2e-3 (48 quantile nodes), in both links."""
    for link in ("logit", "loglog"):
        tab = population_table(1.3, 2.1, K, link)
        assert tab["pmf"][I0] == pytest.approx(stats.betabinom.pmf(np.arange(K + 1), K, 1.3, 2.1), abs=2e-3)


def test_truncated_likelihood_and_the_survivors_population():
    """Survivors of a static Beta(0.6, 1.4) population (only 0 < k < K recorded): the truncated log-likelihood
    equals sum n_k log(pmf_k / (1 - pmf_0 - pmf_K)); the population fitted with the truncation lies within 3 of
    its standard errors of the truth in log a and log b, while the fit that ignores the selection is far off."""
    rng = np.random.default_rng(4)
    a, b, steps, per = 0.6, 1.4, 40, 200
    counts = np.zeros((steps, K + 1))
    for s in range(steps):
        k = rng.binomial(K, rng.beta(a, b, per))
        counts[s] = np.bincount(k, minlength=K + 1)
    surv = counts.copy()
    surv[:, [0, K]] = 0
    tab = population_table(a, b, K, "logit")
    LL = step_loglik(tab, surv, True)
    pmf = tab["pmf"][I0]
    assert LL[:, I0] == pytest.approx(surv[:, 1:K] @ np.log(pmf[1:K] / (1 - pmf[0] - pmf[K])), rel=1e-10)
    pop = fit_population(surv, K, "logit", True)
    se = np.sqrt(np.diag(pop["cov"]))
    assert np.all(np.abs(pop["x"] - np.log([a, b])) < 3 * se)
    naive = fit_population(surv, K, "logit", False)
    assert np.any(np.abs(naive["x"] - np.log([a, b])) > 10 * se)  # the survivors look like an easy, tight set


def test_population_fit_moves_the_nuisance_shift_from_zero():
    """Every group of a logit-linear drift (Beta(1.5, 1.5), slope 0.02, 60 steps of 64 groups): the joint fit of the
    population and the nuisance shift reaches the optimum of a careful reference (scipy's L-BFGS-B from nine
    starts, the slope among them from -0.03 to +0.03) within 0.05 nats (its own tolerance is 0.01), and its slope is
    within 3 standard errors (the Beta reference's inverse Hessian) of the truth; the masses' fit too from a Beta fit
    whose shift stayed at 0. Nelder-Mead's default first simplex moves a coordinate at 0 by 0.00025 only: from
    the start's zero shift the Beta's fit stopped at a slope of 0.0002, 90 nats short."""
    rng = np.random.default_rng(1)
    steps, per, slope = 60, 64, 0.02
    p = rng.beta(1.5, 1.5, (steps, per))
    k = rng.binomial(K, 1 / (1 + np.exp(-(np.log(p / (1 - p)) + slope * np.arange(steps)[:, None]))))
    counts = np.stack([np.bincount(row, minlength=K + 1) for row in k]).astype(float)
    tau = np.arange(steps, dtype=float)
    se = None
    for masses in (False, True):
        npar = 4 if masses else 2

        def nll(x):
            return population_nll(x[:npar], x[-1], counts, K, "logit", False, tau=tau, masses=masses)

        ref = min((optimize.minimize(nll, np.r_[la, la, [-6.0] * (npar - 2), b0], method="L-BFGS-B")
                   for la in (-0.5, 0.5, 1.5) for b0 in (-0.03, 0.0, 0.03)), key=lambda r: r.fun)
        if se is None:  # the slope's standard error: the Beta reference's Hessian by central differences
            E = np.diag(h := 1e-4 * np.maximum(1.0, np.abs(ref.x)))
            H = [[(nll(ref.x + E[i] + E[j]) - nll(ref.x + E[i] - E[j]) - nll(ref.x - E[i] + E[j])
                   + nll(ref.x - E[i] - E[j])) / (4 * h[i] * h[j]) for j in range(3)] for i in range(3)]
            se = np.sqrt(np.linalg.inv(H)[-1, -1])
        start = {"x": ref.x[:2], "beta": 0.0} if masses else None
        pop = fit_population(counts, K, "logit", False, tau=tau, masses=masses, start=start)
        assert pop["nll"] <= ref.fun + 0.05
        assert abs(pop["beta"] - slope) < 3 * se


def test_shape_weights_pick_the_true_shape():
    """Per-step shifts on a known path plus their noise: on a logit-linear path, which every shape holds (the
    power and plateau as their rate goes to 0, the jump with J = 0), at least 90% of the weight is on shapes
    whose forecast 90 steps past the record holds the true line within 2 predictive sds; a path that levels off
    gives the plateau most of it; fitted parameters recover."""
    rng = np.random.default_rng(5)
    tau = np.arange(60.0)
    se = np.full(60, 0.05)
    LLs = {}
    for name, path in (("linear", 0.03 * tau), ("plateau", 2.0 * (1 - np.exp(-tau / 15)))):
        h = path + rng.normal(0, 0.05, 60)
        LL = -0.5 * ((H_GRID[None, :] - h[:, None]) / se[:, None]) ** 2  # a Gaussian likelihood around h
        LLs[name] = shape_weights(tau, {"logit": (LL, h, se), "loglog": (LL, h, se)})["weights"]
        f = fit_shape(name, tau, h, se)
        if name == "linear":
            assert f["theta"][1] == pytest.approx(0.03, abs=0.003)
            on_line = [s for s in LLs[name] if abs(predict(fit_shape(s, tau, h, se), [150.0])[0][0] - 4.5)
                       < 2 * np.sqrt(predict(fit_shape(s, tau, h, se), [150.0])[1][0])]
        else:
            r = np.exp(f["theta"][2])  # the plateau is c + s (1 - exp(-r tau)) / r: height s / r, time scale 1 / r
            assert 1 / r == pytest.approx(15, rel=0.2) and f["theta"][1] / r == pytest.approx(2, rel=0.1)
    assert sum(LLs["linear"][s] for s in on_line) > 0.9
    assert LLs["plateau"]["plateau"] > 0.5


def test_jump_shape_recovers_a_known_jump_and_wins_the_weights():
    """A level shift of 0.8 at tau = 30 on a drift of 0.012 (the study's step regime), per-step noise 0.1: the
    jump shape's change point is tau = 30 with most of its weight, its J and beta are within 3 of their standard
    errors of the truth, its forecast 150 steps on holds the true level within 2 predictive sds where the linear
    fit (which reads the jump into its slope) is off by more than 5 of its own; the rolling-origin weights give it
    most of the weight. On a path without a jump the fitted J is within 3 SE of 0."""
    rng = np.random.default_rng(11)
    tau = np.arange(60.0)
    se = np.full(60, 0.1)
    h = 0.012 * tau + 0.8 * (tau >= 30) + rng.normal(0, 0.1, 60)
    f = fit_shape("jump", tau, h, se)
    assert f["tau_jump"] == 30.0 and f["p"].max() > 0.5
    sd = np.sqrt(np.diag(f["cov"]))
    assert abs(f["theta"][2] - 0.8) < 3 * sd[2] and abs(f["theta"][1] - 0.012) < 3 * sd[1]
    truth = 0.012 * 210 + 0.8
    m, v = predict(f, [210.0])
    assert abs(m[0] - truth) < 2 * np.sqrt(v[0])
    m_lin, v_lin = predict(fit_shape("linear", tau, h, se), [210.0])
    assert m_lin[0] - truth > 5 * np.sqrt(v_lin[0])
    LL = -0.5 * ((H_GRID[None, :] - h[:, None]) / se[:, None]) ** 2
    w = shape_weights(tau, {"logit": (LL, h, se), "loglog": (LL, h, se)})["weights"]
    assert w["jump"] > 0.5, w
    flat = 0.012 * tau + rng.normal(0, 0.1, 60)
    f0 = fit_shape("jump", tau, flat, se)
    assert abs(f0["theta"][2]) < 3 * np.sqrt(f0["cov"][2, 2])


def test_hazard_against_a_monte_carlo_of_a_finite_set():
    """q = P(fewer than T mixed among n prompts drawn without replacement from N): the normal approximation with
    the finite-set variance against a Monte Carlo, within 4 SE plus 0.01 (the approximation's own error)."""
    rng = np.random.default_rng(6)
    u_x = p_useful(rng.beta(0.2, 2.0, 500), K)
    settings = {"gen_batch": 64, "train_batch": 40, "cap_effective": 3, "pool": None}
    q = step_hazard(u_x.mean(), np.mean(u_x**2), settings, 500)
    reps = 20000
    ids = np.argsort(rng.random((reps, 500)), axis=1)[:, :192]
    mc = np.mean((rng.random((reps, 192)) < u_x[ids]).sum(axis=1) < 40)
    assert abs(q - mc) < 4 * np.sqrt(mc * (1 - mc) / reps) + 0.01
    q_inf = step_hazard(u_x.mean(), np.mean(u_x**2), settings, None)
    assert q_inf > q  # a draw from an unbounded set varies more


def test_rounds_calibration_refused_when_every_round_is_one():
    p0 = np.random.default_rng(7).beta(2, 2, 300)
    sim = simulate_loop(p0, K, 32, 8, 4, "static", {}, 20, seed=3)
    assert np.all(sim["rounds"] == 1)
    groups = run_groups(to_record(sim, "all", 20))
    settings = {"gen_batch": 32, "train_batch": 8, "cap": 4, "pool": None, "K": K}
    cr = rounds_calibration(groups, fit_trend(groups), settings, (np.arange(1, 21), sim["rounds"].astype(float)))
    assert not cr["available"] and not cr["identifiable"] and "every logged round" in cr["reason"]


def test_never_stall_run_names_no_cause():
    """A run far from its cap (easy set, no drift): the risk forecasts no stall within the horizon, the cause is
    None and the report says so, not "all-fail collapse"."""
    p0 = np.random.default_rng(8).beta(1.5, 1.5, 500)
    sim = simulate_loop(p0, K, 64, 32, 3, "static", {}, 40, seed=4)
    groups = run_groups(to_record(sim, "all", 40))
    settings = {"trainer": "verl", "gen_batch": 64, "train_batch": 32, "cap": 3, "pool": None, "K": K,
                "enable": True, "source": "test"}
    sf = stall_forecast(groups, settings)
    rk = sf["risk"]
    assert rk["available"] and rk["first_stall"]["median"] is None and rk["first_stall"]["p_by_horizon"] < 0.05
    assert sf["cause"] is None and rk["cause"] is None
    text = "\n".join(stall_lines({"stall_forecast": sf}))
    assert "cause: none" in text and "collapse" not in text and "P(stall by step n)" in text


def test_survivors_detected_from_the_rounds():
    p0 = np.random.default_rng(9).beta(1.0, 1.0, 400)
    sim = simulate_loop(p0, K, 32, 24, 5, "static", {}, 30, seed=5)
    rec = to_record(sim, "trained+rounds", 30)
    groups = run_groups(rec)
    settings = {"gen_batch": 32, "train_batch": 24, "cap": 5, "cap_effective": 5, "pool": None, "enable": True}
    rk = risk_for_groups(groups, settings, (rec.steps["step"], rec.steps["scalar/train/num_gen_batches"]), 120,
                         draws=100)
    assert rk["survivors"] and rk["rounds_used"] and "holds only the trained groups" in rk["survivors_reason"]


def test_kept_draws_give_what_fresh_draws_give(monkeypatch):
    """drift_futures keeps its draws by content (sims/doctor/stall_risk.py): the risk under a changed cap, K ahead
    or difficulty (the cap rule's changes) from the draws kept for the record equals the risk drawn afresh, every
    array exactly, for a whole record and a survivors-only one (whose likelihood reads the cap: drawn again); the
    generator is left where fresh draws leave it; the draws are made once for the changes that keep the likelihood."""
    import grpo_lab.sims.doctor.stall_risk as sr
    from grpo_lab.sims.doctor.drift import measure_drift
    from grpo_lab.sims.doctor.stall_risk import drift_futures, forget_drawn, step_counts

    drawn, draw = [], sr._draw

    def counted(*args):
        drawn.append(1)
        yield from draw(*args)

    monkeypatch.setattr(sr, "_draw", counted)
    p0 = np.random.default_rng(3).beta(1.0, 1.5, 300)
    sim = simulate_loop(p0, K, 32, 24, 4, "static", {}, 25, seed=2)
    settings = {"gen_batch": 32, "train_batch": 24, "cap": 4, "cap_effective": 4, "pool": None, "enable": True}
    for mode, survivors in (("all", False), ("trained", True)):
        groups = run_groups(to_record(sim, mode, 25))
        forget_drawn()
        drawn.clear()
        risk_for_groups(groups, settings, None, 100, draws=48, survivors=survivors)
        for change in ({"K": 2 * K}, {"logit_shift": -0.5}, {"cap": 8, "cap_effective": 8}):
            kept = risk_for_groups(groups, {**settings, **change}, None, 100, draws=48, survivors=survivors)
            forget_drawn()
            fresh = risk_for_groups(groups, {**settings, **change}, None, 100, draws=48, survivors=survivors)
            assert kept.keys() == fresh.keys()
            for key, value in kept.items():
                if isinstance(value, np.ndarray):
                    assert np.array_equal(value, fresh[key]), key
                else:
                    assert value == fresh[key], key
        # the record's draws, one afresh after each change; and for the survivors the cap change's own
        assert len(drawn) == 1 + 3 + survivors
    steps, counts = step_counts(groups)
    d = measure_drift(counts, steps, K, True, None, settings)
    states = []
    for _ in range(2):  # the second from the kept draws
        rng = np.random.default_rng(7)
        paths = [p for _, _, p in drift_futures(d, counts, settings, np.arange(1.0, 30.0), 48, rng)]
        states.append((rng.bit_generator.state, rng.random(), np.concatenate(paths)))
    assert states[0][:2] == states[1][:2] and np.array_equal(states[0][2], states[1][2])


def test_draws_are_allotted_to_the_pairs_by_largest_remainders():
    """The draws asked are the draws made: shares of 96 draws by random pair weights sum to 96 (each pair rounded on
    its own gave 97 in CI), each pair's count within 1 of its exact share, and where rounding each pair on its own
    gives the right total the counts are those (the largest remainders are the ones rounded up)."""
    from grpo_lab.sims.doctor.stall_risk import allot

    rng = np.random.default_rng(5)
    missed = 0
    for _ in range(500):
        k = int(rng.integers(2, 25))
        pairs = [f"v/s{i}" for i in range(k)]
        w = rng.dirichlet(np.full(k, rng.uniform(0.1, 2.0)))
        got = allot(dict(zip(pairs, w)), pairs + ["v/none"], 96)
        assert sum(got.values()) == 96 and got["v/none"] == 0
        assert all(abs(got[p] - 96 * x) < 1 for p, x in zip(pairs, w))
        each = {p: int(round(96 * x)) for p, x in zip(pairs, w)}
        if sum(each.values()) == 96:
            assert all(got[p] == each[p] for p in pairs)
        else:
            missed += 1
    assert missed > 0  # the case the method is for occurs
