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


# The stall overlay (kernel.js loopStall, binomBelow) against sims.loop_stall.loop_stall_curve. The core's DAPO value
# is 1 - P(Binomial >= T) (scipy's sf), exact to about 1e-16 absolute; the kernel sums P(Binomial < T) directly, so
# the two agree to STALL_RTOL relative where the value is above about 1e-7 and to STALL_ATOL absolute below.
STALL_RTOL, STALL_ATOL = 1e-9, 1e-13
#: (n_prompts, a, b, K, band, loop, gen_batch, train_batch, cap): the lab's default, a band, both loops, large
#: cap * gen_batch (30 x 512), u near 1 (Beta(100, 100) at K = 64: P(mixed) = 1 - 2^-63 at t = 0) and near 0
#: (pass rates near 1), populations over MAX_PROMPTS (thinned as the core thins them) and nothing kept in a band
STALLS = [
    (600, 2.0, 3.0, 4, None, "DAPO", 512, 512, 2),
    (600, 2.0, 3.0, 8, (0.2, 0.8), "DAPO", 512, 470, 1),
    (600, 2.0, 3.0, 16, None, "DAPO", 512, 12000, 30),
    (600, 2.0, 3.0, 2, (0.1, 0.9), "DAPO", 512, 4000, 30),
    (600, 100.0, 100.0, 64, None, "DAPO", 512, 15300, 30),
    (600, 100.0, 0.05, 8, None, "DAPO", 64, 8, 3),
    (600, 100.0, 0.05, 4, None, "GRPO", 512, 512, 2),
    (600, 100.0, 100.0, 64, (0.3, 0.7), "GRPO", 512, 4, 2),
    (600, 2.0, 3.0, 4, None, "GRPO", 512, 16, 2),
    (20_000, 2.0, 3.0, 4, None, "DAPO", 512, 512, 2),
    (20_000, 0.3, 0.3, 4, None, "GRPO", 512, 8, 2),
    (5_000, 5.0, 1.0, 16, (0.2, 0.8), "DAPO", 256, 1010, 4),
    (2_001, 2.0, 3.0, 8, None, "DAPO", 100, 100, 1),
    (50, 2.0, 3.0, 8, (0.99, 1.0), "DAPO", 512, 512, 2),
]


def _same_stall(js, core):
    p = np.asarray(core["p_stall"], float)
    assert [v is None for v in js["p"]] == np.isnan(p).tolist()
    got = np.array([np.nan if v is None else v for v in js["p"]])
    np.testing.assert_allclose(got[~np.isnan(p)], p[~np.isnan(p)], rtol=STALL_RTOL, atol=STALL_ATOL)
    u = np.asarray(core["u"], float)
    np.testing.assert_allclose(np.array([np.nan if v is None else v for v in js["u"]]), u, rtol=1e-12, atol=1e-15)
    assert js["first_t"] == core["first_t"]


@pytest.mark.parametrize("case", STALLS, ids=lambda c: "-".join(map(str, c)))
def test_stall_overlay_equals_the_core(page, case):
    from grpo_lab.sims.loop_stall import MAX_PROMPTS, STALL_LEVEL, loop_stall_curve

    n, a, b, K, band, loop, gen, train, cap = case
    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    pop = draw_population(n, a, b)
    gain = Scenario().gain
    ts = np.linspace(0.0, 1.0, 41)
    core = loop_stall_curve(pop, ts, K, 0.0, band, gain, loop, gen, train, cap)
    lo, hi = band or (0.2, 0.8)
    settings = {"loop": loop, "gen_batch": gen, "train_batch": train, "cap": cap, "level": STALL_LEVEL,
                "max_prompts": MAX_PROMPTS}
    # the uniforms only where shareCurve (the shares the live plots pass in) is run too: small populations
    arr = kernel_arrays(pop, gain) if n <= 600 else {"p0": pop.pass_rates, "u": np.zeros(0), "stride": 64}
    js = page.evaluate(
        """([p0, u, stride, gain, params, ts, loop]) => {
            const data = {p0: Float64Array.from(p0), u: Float32Array.from(u), stride, gain};
            const nul = (a) => Array.from(a, (v) => Number.isFinite(v) ? v : null);
            const run = (share) => { const c = grpoKernel.loopStall(data, params, ts, loop, share);
                                     return {p: nul(c.p), u: nul(c.u), first_t: c.first_t}; };
            return {alone: run(null), shared: u.length ? run(grpoKernel.shareCurve(data, params, ts)) : null};
        }""",
        [arr["p0"].tolist(), arr["u"].tolist(), arr["stride"], gain,
         {"progress": 0.0, "K": K, "filter": band is not None, "band_lo": lo, "band_hi": hi}, ts.tolist(), settings])
    _same_stall(js["alone"], core)
    if js["shared"] is not None:
        _same_stall(js["shared"], core)
    u = np.asarray(core["u"], float)
    if case[1:3] == (100.0, 100.0) and band is None:
        assert 1 - np.nanmax(u) < 1e-12  # u near 1 is reached
    if case[1:3] == (100.0, 0.05):
        assert np.nanmin(u) < 1e-3  # u near 0 is reached


def test_binomial_tail_equals_scipy(page):
    """binomBelow(n, u, T) = P(Binomial(n, u) < T), against scipy's cdf, over extreme u and large n (30 x 512 and
    beyond), to 1e-12 relative where the value is a normal number."""
    from scipy import stats

    page.set_content("<html><body></body></html>")
    page.add_script_tag(content=kernel_source())
    cases = [(n, u, T) for n, T in [(1024, 512), (15360, 512), (15360, 14000), (15360, 1), (100, 100), (5, 3),
                                    (10**6, 3000), (2, 1), (1, 1)]
             for u in [1e-300, 1e-9, 1e-4, 0.01, 0.2, 0.5, 0.5 + 1e-7, 0.9, 1 - 1e-9, 1 - 1e-15, T / n, (T - 1) / n]]
    cases += [(10, 0.0, 3), (10, 1.0, 3), (10, 1.0, 11), (10, 0.3, 11)]  # u = 0, u = 1, T > n
    js = np.array(page.evaluate("cs => cs.map(([n, u, T]) => grpoKernel.binomBelow(n, u, T))", cases))
    want = np.array([stats.binom.cdf(T - 1, n, u) for n, u, T in cases])
    normal = want > 1e-300
    np.testing.assert_allclose(js[normal], want[normal], rtol=1e-12)
    assert np.all(js[~normal] < 1e-290)
    assert js[-4:].tolist() == [1.0, 0.0, 1.0, 1.0]
