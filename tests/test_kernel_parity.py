"""The browser kernel (lab/static/kernel.js), run in Chromium, equals the Python core."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grpo_lab.kernel import kernel_arrays, kernel_source
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.population import draw_population
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = pytest.mark.browser

SETTINGS = [
    dict(),
    dict(progress=1.0),
    dict(progress=1.0, band=(0.2, 0.8)),
    dict(progress=0.37, K=4),
    dict(progress=0.8, K=64, band=(0.05, 0.95)),
    dict(progress=0.5, K=1),
    dict(progress=0.25, K=16, band=(0.9, 1.0)),
    dict(n_prompts=2000, a=0.5, b=0.5, seed=7, progress=0.6, K=8),
    dict(n_prompts=50, seed=3, progress=0.1, K=8, band=(0.99, 1.0)),  # nothing kept
]

SHARES = ["mean_pass_rate", "useful_share_expected", "useful_share_realised", "all_pass_share",
          "all_fail_share", "all_pass_share_expected", "all_fail_share_expected", "kept_share"]


def _run_kernel(page, scenario: Scenario):
    pop = draw_population(scenario.n_prompts, scenario.a, scenario.b, scenario.seed)
    arr = kernel_arrays(pop, scenario.gain)
    band = scenario.band or (0.0, 1.0)
    return page.evaluate(
        """([p0, u, stride, gain, params]) => {
            const data = {p0: Float64Array.from(p0), u: Float32Array.from(u), stride, gain};
            const out = grpoKernel.evaluate(data, params);
            const pct = {};
            for (const [k, v] of Object.entries(out.summary)) pct[k] = grpoKernel.percent(v);
            const clean = {};
            for (const [k, v] of Object.entries(out.summary)) clean[k] = Number.isFinite(v) ? v : null;
            return {summary: clean, pct, outcome: Array.from(out.outcome), successes: Array.from(out.successes),
                    kept: Array.from(out.kept)};
        }""",
        [arr["p0"].tolist(), arr["u"].tolist(), arr["stride"], arr["gain"],
         {"progress": scenario.progress, "K": scenario.K, "filter": scenario.band is not None,
          "band_lo": band[0], "band_hi": band[1]}],
    )


@pytest.mark.parametrize("kw", SETTINGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default")
def test_kernel_equals_core(page, kw):
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    scenario = Scenario(**kw)
    view = evaluate(scenario)
    js = _run_kernel(page, scenario)
    # per-prompt realised groups are identical
    assert js["successes"] == view.successes.tolist()
    assert js["outcome"] == view.outcome.tolist()
    assert js["kept"] == view.kept.astype(int).tolist()
    for key in SHARES:
        py = view.summary[key]
        if math.isnan(py):
            assert js["summary"][key] is None, key
            assert js["pct"][key] == percent(py)
        else:
            assert js["summary"][key] == pytest.approx(py, rel=1e-12, abs=1e-14), key
            assert js["pct"][key] == percent(py), key  # identical as displayed
    assert js["summary"]["n_kept"] == view.summary["n_kept"]


def test_percent_formatting_matches_tofixed(page):
    """sims.formatting.percent rounds like JavaScript's toFixed, including exact binary ties."""
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    rng = np.random.default_rng(0)
    values = [0.0, 1.0, 0.585, 0.895, 0.1225, 0.0125, 0.00125, 0.99995, 1 / 3, 2 / 3, 0.5 + 2**-40]
    values += [k / 600 for k in range(601)] + [k / 400 for k in range(401)] + list(rng.random(300))
    js = page.evaluate("vs => vs.map(v => grpoKernel.percent(v))", values)
    assert js == [percent(v) for v in values]
