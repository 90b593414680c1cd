"""Each link its flexible shape (``walk`` on the logit link, ``walk_loglog`` on the log-log link).

On per-step shifts of known path with a Gaussian likelihood, the log-log link favoured by the cross-section by a
known margin per step (what the ``prompts`` variant's identity likelihood did on broad-tasa): a path flat then
rising is not forced onto the power (concave, or linear as its rate goes to 0): the weight goes to the walk on the
log-log link, whose forecast is nearer the truth; the two walks are one model on
their own link's shifts (same fit, predictions and draws on the same data).
"""

from __future__ import annotations

import numpy as np

from grpo_lab.sims.doctor.drift import (H_GRID, SHAPES, WALKS, draw_paths, fit_shape, model_weights, predict,
                                         shape_weights, variant_shapes)


def test_the_loglog_walk_is_the_walk_on_its_links_shifts():
    rng = np.random.default_rng(3)
    tau = np.arange(40.0)
    se = np.full(40, 0.08)
    h = 0.02 * tau + np.cumsum(rng.normal(0, 0.03, 40)) + rng.normal(0, 0.08, 40)
    a, b = fit_shape("walk", tau, h, se), fit_shape("walk_loglog", tau, h, se)
    assert set(WALKS) == {"walk", "walk_loglog"} and SHAPES["walk_loglog"] == "loglog" and SHAPES["walk"] == "logit"
    assert b["shape"] == "walk_loglog" and b["sigma"] == a["sigma"]
    np.testing.assert_allclose(predict(b, [50.0, 80.0]), predict(a, [50.0, 80.0]))
    np.testing.assert_allclose(draw_paths(b, [45.0, 60.0], 5, np.random.default_rng(0)),
                               draw_paths(a, [45.0, 60.0], 5, np.random.default_rng(0)))


def test_a_favoured_link_does_not_force_its_rigid_shape():
    """h = 0 to tau = 45, then + 0.04 a step, per-step noise 0.05, 90 steps; the logit link's per-step likelihood
    10 nats below the log-log's at every step (its cross-section worse, the shifts the same): the ``prompts``
    variant's weight is on the log-log link's walk (above 0.9), not its power (the ``beta`` variant, not offered
    that walk, gives the power above 0.9), and the walk's forecast at tau = 120 (truth 3.0) is nearer the
    truth than the power's (measured 2.39 +- 0.26 against 1.94 +- 0.44; the walk's drift is one constant, so it
    too lags a slope that changed)."""
    rng = np.random.default_rng(7)
    tau = np.arange(90.0)
    se = np.full(90, 0.05)
    h = np.where(tau < 45, 0.0, 0.04 * (tau - 45)) + rng.normal(0, 0.05, 90)
    LL = -0.5 * ((H_GRID[None, :] - h[:, None]) / se[:, None]) ** 2
    per_link = {"logit": (LL - 10.0, h, se), "loglog": (LL, h, se)}
    w = model_weights(tau, {"prompts": per_link})["weights"]
    assert w["walk_loglog"] > 0.9 and w["power"] < 0.05, w
    # the marginal variants are not offered it (named deviation, drift.WALK_LOGLOG_FOR): there the power takes it
    assert "walk_loglog" not in variant_shapes("beta") and "walk_loglog" in variant_shapes("prompts")
    wb = shape_weights(tau, per_link)["weights"]
    assert wb["walk_loglog"] == 0.0 and wb["power"] > 0.9, wb
    walk, power = (predict(fit_shape(s, tau, h, se), [120.0])[0][0] for s in ("walk_loglog", "power"))
    assert abs(walk - 3.0) < abs(power - 3.0) - 0.2, (walk, power)
