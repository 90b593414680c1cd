"""sims.sweep.useful_share_curve against a loop of sims.scenario.evaluate, one call per t."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.scenario import Scenario, evaluate
from grpo_lab.sims.sweep import useful_share_curve


@pytest.mark.parametrize("n, K, rho, band", [
    (600, 8, 0.0, None), (600, 8, 0.0, (0.2, 0.8)), (300, 1, 0.0, None), (400, 64, 0.0, (0.9, 1.0)),
    (200, 16, 0.3, None), (200, 4, 0.6, (0.1, 0.5)), (50, 8, 0.0, (0.999, 1.0)),
])
def test_curve_equals_evaluate_at_every_t(n, K, rho, band):
    pop = draw_population(n, 2.0, 3.0, seed=11)
    ts = np.linspace(0.0, 1.0, 21)
    got = useful_share_curve(pop, ts, K, rho, band)
    loop = [evaluate(Scenario(n_prompts=n, seed=11, progress=float(t), K=K, rho=rho, band=band), pop).summary
            for t in ts]
    np.testing.assert_array_equal(got["t"], ts)
    np.testing.assert_allclose(got["expected"], [s["useful_share_expected"] for s in loop], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got["realised"], [s["useful_share_realised"] for s in loop])


def test_no_prompt_kept_is_nan_and_bad_input_raises():
    pop = draw_population(20, 2.0, 3.0, seed=1)
    out = useful_share_curve(pop, [0.0], 8, band=(1.0, 1.0))
    assert np.isnan(out["expected"][0]) and np.isnan(out["realised"][0])
    with pytest.raises(InputError):
        useful_share_curve(pop, [1.5], 8)
    with pytest.raises(InputError):
        useful_share_curve(pop, [0.5], 8, band=(0.8, 0.2))
