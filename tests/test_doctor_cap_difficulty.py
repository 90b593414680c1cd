"""The cap rule's forecast under a change of the data's difficulty (issue #40 item 2): every pass rate's logit moved
by DIFFICULTY_LOGIT toward the mixed prompts from the next step on (rules.py, a stated modelling assumption).

Checked against computations written here: the drift table's shifted pass rates against expit(link^-1(...) +
shift) node by node; the scalars forecast under the change against a quadrature of the shifted Beta population
(scipy.integrate) fed to the Binomial law of a capped step; and on a record with groups, the direction (harder
prompts delay an all-pass saturation's stall)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logit

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.doctor.drift import H_GRID, NODES, population_table
from grpo_lab.sims.doctor.rules import DIFFICULTY_LOGIT, fire_rules
from grpo_lab.sims.doctor.scalars_fit import best_fit, fit_models, step_shares
from grpo_lab.sims.doctor.scalars_forecast import future_grid
from grpo_lab.sims.doctor.scalars_sim import simulate_shares

SETTINGS = {"trainer": "verl", "gen_batch": 96, "train_batch": 64, "cap": 3, "pool": None, "K": 8, "enable": True,
            "source": "test"}


@pytest.mark.parametrize("link", ["logit", "loglog"])
@pytest.mark.parametrize("shift", [-1.0, 0.7])
def test_the_tables_pass_rates_move_by_the_shift_on_the_logit_scale(link, shift):
    a, b, K = 0.8, 1.7, 6
    got = population_table(a, b, K, link, w0=0.1, w1=0.05, logit_shift=shift)
    p = stats.beta.ppf((np.arange(NODES) + 0.5) / NODES, a, b)
    for j in (90, 120, 150):  # shifts h of the grid -3, 0, 3 (away from the clip at 1e-12)
        h = H_GRID[j]
        q = expit(logit(p) + h) if link == "logit" else np.exp(-np.exp(np.log(-np.log(p)) - h))
        q = expit(logit(np.clip(q, 1e-12, 1 - 1e-12)) + shift)
        u = 1 - q**K - (1 - q) ** K
        assert got["u"][j] == pytest.approx(0.85 * u.mean(), rel=1e-6, abs=1e-12)
        assert got["fail"][j] == pytest.approx(0.1 + 0.85 * np.mean((1 - q) ** K), rel=1e-6, abs=1e-12)
    assert np.allclose(population_table(a, b, K, link)["u"], population_table(a, b, K, link, logit_shift=0.0)["u"])


def _mixed_by_quadrature(a: float, b: float, c: float, K: int) -> float:
    """E[1 - q^K - (1 - q)^K], q = expit(logit p + c), p ~ Beta(a, b), integrated over z = logit p."""
    f = lambda z: (1 - expit(z + c) ** K - expit(-(z + c)) ** K) * stats.beta.pdf(expit(z), a, b) * expit(z) * expit(-z)  # noqa: E731
    return integrate.quad(f, -60, 60, limit=400, points=[-c])[0]


def test_the_scalars_forecast_under_harder_prompts_against_quadrature():
    rec = simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2)  # a logit drift towards all-pass
    d = diagnose(rec, trainer_config=SETTINGS)
    fit = best_fit(fit_models(step_shares(rec)))  # the drift maps (the rule's fallback past the risk's horizon)
    assert d["stall_forecast"]["cause"] == "all-pass saturation" and fit["model"] in ("logit", "logit_stuck")
    (rule,) = [r for r in d["rules"] if r["rule"] == "cap_hit"]
    change = rule["changes"][-1]
    assert change["settings"]["logit_shift"] == -DIFFICULTY_LOGIT and change["change"].startswith("harder prompts")
    assert change["change"] in rule["advice"]
    # independently: the shifted population's mixed share on the forecast's grid, the capped step's Binomial law,
    # P(over the cap by step s) with each grid step standing for the steps since the previous one
    a, b = np.exp(fit["theta"][:2])
    g = float(fit["theta"][2])
    s0, s1 = fit["steps"]
    grid = future_grid(fit)
    w0 = float(expit(fit["theta"][3])) if fit["model"] == "logit_stuck" else 0.0
    u = np.array([(1 - w0) * _mixed_by_quadrature(a, b, g * (s - s0) / (s1 - s0) - DIFFICULTY_LOGIT, 8)
                  for s in grid])
    p_stall = stats.binom.cdf(SETTINGS["train_batch"] - 1, SETTINGS["cap"] * SETTINGS["gen_batch"], u)
    width = np.diff(np.concatenate([[s1], grid]))
    hit = 1 - np.exp(np.cumsum(width * np.log1p(-np.clip(p_stall, 0, 1 - 1e-15))))
    i = int(np.searchsorted(hit, 0.5))
    want = float(grid[i]) if i < len(grid) else None
    from grpo_lab.sims.doctor.scalars_forecast import stall_forecast

    shifted = stall_forecast({**fit, "logit_shift": -DIFFICULTY_LOGIT}, SETTINGS, n_draws=60)
    assert want is not None and shifted["first_cap_hit"]["median"] == want  # the drift map under the change
    # the rule's row is the risk the diagnosis says (the shares' drift shapes), redrawn under the change
    assert d["stall_forecast"]["risk"]["available"] and d["when"]["stall"]["step"] is not None
    assert change["first_stall"] > d["when"]["stall"]["step"]  # harder prompts: the saturation comes later


def test_not_forecast_where_no_pass_rate_sits_on_a_logit_scale():
    """The scalars power map, rewards that are not binary (the tie-share trend), a cause not identified: the change
    is named with why it has no figure."""
    from grpo_lab.sims.doctor.rules import difficulty_change
    from grpo_lab.testing.real_logs import read_real

    rec = simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2, model="power")
    power = {"scalars_only": True, "fit": best_fit(fit_models(step_shares(rec)))}  # the drift maps' fit
    assert power["fit"]["model"] == "power"
    assert "not on the logit scale" in difficulty_change(power, "all-pass saturation")[2]
    shapes = diagnose(rec, trainer_config=SETTINGS)  # the diagnosis's fit, the measured drift: its table takes the shift
    assert shapes["fit"]["source"] == "drift shapes"
    assert difficulty_change(shapes, "all-pass saturation")[1] == -DIFFICULTY_LOGIT
    ties = diagnose(read_real("trl-chaos-economy-unified"))
    assert ties.get("tie_fit") and "not binary" in difficulty_change(ties, "all-pass saturation")[2]
    logit_fit = diagnose(simulate_shares(1.5, 2.0, 0.03, 8, 60, 96, seed=2), trainer_config=SETTINGS)
    assert difficulty_change(logit_fit, "all-fail collapse")[1] == DIFFICULTY_LOGIT  # easier prompts
    assert difficulty_change(logit_fit, None)[1] is None
    assert "not identified" in difficulty_change(logit_fit, "not identified (only the zero-std share)")[2]


def test_a_record_with_groups_forecasts_the_change_in_the_direction_of_the_cause():
    """A synthetic record of groups drifting towards all-pass (its own trainer's loop is not needed: the
    diagnosis's settings say the cap); harder prompts move the first stall later, easier ones are not offered."""
    from grpo_lab.testing.synthetic_record import synthetic_record

    rec = synthetic_record(steps=40)
    d = diagnose(rec, trainer_config={**SETTINGS, "K": rec.groups["rewards"].shape[1], "gen_batch": 8,
                                      "train_batch": 6, "cap": 2})
    rules = [r for r in d["rules"] if r["rule"] == "cap_hit"]
    assert rules, "the synthetic record should be forecast to hit the cap"
    base = d["stall_forecast"]["risk"]["first_stall"]["median"]
    change = rules[0]["changes"][-1]
    cause = d["stall_forecast"]["cause"]
    assert change["settings"]["logit_shift"] == (-DIFFICULTY_LOGIT if cause.startswith("all-pass")
                                                 else DIFFICULTY_LOGIT)
    assert change["first_stall"] is None or change["first_stall"] > base
    assert math.isfinite(base)
