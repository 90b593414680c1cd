"""The hover's browser arithmetic (lab/static/kernel.js: rollouts, usefulProbability), run in Chromium, equals the core.

The hover draws a cell's K rollouts as dots and marks its P(useful) on the curve; both come from the kernel,
which must realise exactly the rollouts ``sims.scenario.realise`` does (rollout i passes iff u[x, i] < q, q the
shared rate) and the probability ``sims.outcomes.outcome_probabilities`` gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.kernel import kernel_arrays, kernel_source
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.scenario import Scenario, evaluate

pytestmark = pytest.mark.browser

ROLLOUTS_JS = """([p0, u, stride, gain, rates, K]) => {
  const data = {p0: Float64Array.from(p0), u: Float32Array.from(u), stride, gain};
  const out = [];
  let buf = null;
  for (let x = 0; x < rates.length; x++) { buf = grpoKernel.rollouts(data, x, rates[x], K, buf); out.push(Array.from(buf.slice(0, K))); }
  return out;
}"""


@pytest.mark.parametrize("kw", [dict(progress=0.3, K=8), dict(progress=1.0, K=64), dict(progress=0.6, K=5, rho=0.4),
                                dict(progress=0.0, K=1)], ids=str)
def test_rollouts_are_the_cores(page, kw):
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    s = Scenario(n_prompts=300, seed=5, **kw)
    pop = s.population()
    view = evaluate(s, pop)
    arr = kernel_arrays(pop, s.gain)
    got = np.array(page.evaluate(ROLLOUTS_JS, [arr["p0"].tolist(), arr["u"].tolist(), arr["stride"], arr["gain"],
                                              view.shared_rate.tolist(), s.K]))
    want = pop.uniforms(s.K) < view.shared_rate[:, None]  # the core's rule, rollout by rollout
    assert got.shape == (300, s.K)
    assert (got == want).all()
    assert (got.sum(axis=1) == view.successes).all()  # the dots add up to the cell's k


def test_useful_probability_is_the_cores(page):
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    ps = [0.0, 1.0, 0.5, 1e-9, 1 - 1e-9, 0.123, 0.9, 0.37]
    Ks = [1, 2, 4, 8, 16, 64]
    got = page.evaluate("([ps, Ks]) => Ks.map(K => ps.map(p => grpoKernel.usefulProbability(p, K)))", [ps, Ks])
    want = [outcome_probabilities(np.array(ps), K, 0.0)["p_useful"].tolist() for K in Ks]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)  # the tolerance of test_kernel_parity's shares
    shown = page.evaluate("([ps, K]) => ps.map(p => grpoKernel.percent(grpoKernel.usefulProbability(p, K)))", [ps, 8])
    assert shown == [percent(v) for v in want[Ks.index(8)]]  # the tip's text, identical
