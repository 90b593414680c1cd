"""The live lab's plot data computed in the browser (kernel.js: usefulCurve, shareCurve, histogram), run in
Chromium, equals the Python core (sims.outcomes, sims.sweep.useful_share_curve, sims.scenario.outcome_histogram)."""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.kernel import kernel_arrays, kernel_source
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.scenario import Scenario, evaluate, outcome_histogram
from grpo_lab.sims.sweep import useful_share_curve

pytestmark = pytest.mark.browser

SETTINGS = [
    dict(),
    dict(progress=1.0, band=(0.2, 0.8)),
    dict(progress=0.37, K=4, band=(0.1, 0.5)),
    dict(progress=0.8, K=64, band=(0.05, 0.95)),
    dict(progress=0.5, K=1),
    dict(n_prompts=2000, a=0.5, b=0.5, seed=7, progress=0.6, K=8),
    dict(n_prompts=50, seed=3, progress=0.1, K=8, band=(0.99, 1.0)),  # nothing kept in the band
]
TS = np.linspace(0.0, 1.0, 41)


def _js_plots(page, scenario: Scenario):
    pop = draw_population(scenario.n_prompts, scenario.a, scenario.b, scenario.seed)
    arr = kernel_arrays(pop, scenario.gain)
    band = scenario.band or (0.2, 0.8)
    return pop, page.evaluate(
        """([p0, u, stride, gain, params, ts]) => {
            const data = {p0: Float64Array.from(p0), u: Float32Array.from(u), stride, gain};
            const nul = (a) => Array.from(a, (v) => Number.isFinite(v) ? v : null);
            const c = grpoKernel.shareCurve(data, params, ts);
            const view = grpoKernel.evaluate(data, params);
            return {useful: Array.from(grpoKernel.usefulCurve(params.K, 401)), exp: nul(c.exp), real: nul(c.real),
                    exp_f: nul(c.exp_f), real_f: nul(c.real_f), hist: Array.from(grpoKernel.histogram(view, 25))};
        }""",
        [arr["p0"].tolist(), arr["u"].tolist(), arr["stride"], arr["gain"],
         {"progress": scenario.progress, "K": scenario.K, "filter": scenario.band is not None,
          "band_lo": band[0], "band_hi": band[1]}, TS.tolist()],
    ), band


def _same(js, py):
    py = np.asarray(py, float)
    assert [v is None for v in js] == np.isnan(py).tolist()
    got = np.array([np.nan if v is None else v for v in js])
    np.testing.assert_allclose(got[~np.isnan(py)], py[~np.isnan(py)], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_plot_data_in_the_browser_equals_the_core(page, kw):
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    scenario = Scenario(**kw)
    pop, js, band = _js_plots(page, scenario)
    _same(js["useful"], outcome_probabilities(np.linspace(0.0, 1.0, 401), scenario.K)["p_useful"])
    every = useful_share_curve(pop, TS, scenario.K, 0.0, None, scenario.gain)
    kept = useful_share_curve(pop, TS, scenario.K, 0.0, band, scenario.gain)
    for key, col in (("exp", every["expected"]), ("real", every["realised"]), ("exp_f", kept["expected"]),
                     ("real_f", kept["realised"])):
        _same(js[key], col)
    view = evaluate(scenario)
    category = np.where(view.kept, view.outcome, 3)
    assert js["hist"] == outcome_histogram(view.pass_rate, category, 25, 4).ravel().tolist()
