"""The Live lab's stall overlay: when a trainer's loop would stall as training progresses, for the population on
screen (sims/loop_stall.py, lab/views/decay.py, lab/static/live_plots.js).

The core's curve is checked against its closed forms computed here from the population's pass rates (the decay
model p_t = p_0 ** (1 / (1 + g t)), P(mixed | p, K) = 1 - p**K - (1 - p)**K at rho = 0, the binomial tail of DAPO's
rounds, GRPO's all-unanimous batch); the page draws what Python sent, at the first t it names."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from grpo_lab.sims.errors import InputError
from grpo_lab.sims.loop_stall import MAX_PROMPTS, STALL_LEVEL, loop_stall_curve
from grpo_lab.sims.scenario import Scenario
from grpo_lab.state import LabState, PlayState
from grpo_lab.testing.lab_server import READ_CLASS, wait_readout
from grpo_lab.views.live import LiveLab

TS = np.linspace(0, 1, 41)


def _u(p0, K, gain, band=None):
    p = p0[None, :] ** (1.0 / (1.0 + gain * TS[:, None]))
    mixed = 1 - p ** K - (1 - p) ** K
    if band is None:
        return mixed.mean(axis=1)
    kept = (p >= band[0]) & (p <= band[1])
    return np.array([m[k].mean() for m, k in zip(mixed, kept)])


@pytest.mark.parametrize("K,band", [(4, None), (8, None), (4, (0.2, 0.8))])
def test_dapo_and_grpo_stall_curves_are_their_closed_forms(K, band):
    s = Scenario(K=K)
    pop = s.population()
    u = _u(pop.pass_rates, K, s.gain, band)
    dapo = loop_stall_curve(pop, TS, K, 0.0, band, s.gain, "DAPO", 512, 512, 2)
    np.testing.assert_allclose(dapo["u"], u, rtol=1e-12)
    want = stats.binom.cdf(511, 2 * 512, u)  # fewer than 512 mixed groups in 2 rounds of 512 prompts
    np.testing.assert_allclose(dapo["p_stall"], want, atol=1e-12)
    over = np.flatnonzero(want > STALL_LEVEL)
    assert dapo["first_t"] == (TS[over[0]] if len(over) else None)
    grpo = loop_stall_curve(pop, TS, K, 0.0, band, s.gain, "GRPO", 512, 16, 2)
    np.testing.assert_allclose(grpo["p_stall"], (1 - u) ** 16, rtol=1e-12)


def test_a_stall_appears_where_the_share_falls_below_what_the_loop_needs():
    s = Scenario(K=4)
    pop = s.population()
    r = loop_stall_curve(pop, TS, 4, 0.0, None, s.gain, "DAPO", 512, 512, 2)
    assert r["first_t"] is not None and 0 < r["first_t"] < 1
    i = int(np.searchsorted(TS, r["first_t"]))
    assert r["u"][i] < 0.5 <= r["u"][i - 1] + 0.01  # two rounds of 512 need half of them mixed
    with pytest.raises(InputError, match="unknown trainer loop"):
        loop_stall_curve(pop, TS, 4, 0.0, None, s.gain, "PPO", 512, 512, 2)
    with pytest.raises(InputError, match="cap must be an integer >= 1"):
        loop_stall_curve(pop, TS, 4, 0.0, None, s.gain, "DAPO", 512, 512, 0)


def test_the_live_lab_sends_the_loop_at_rho_0_and_the_overlay_in_its_frame_with_rho():
    """At rho = 0 the browser computes the overlay (kernel.js, tests/test_kernel_parity.py): Python sends the loop's
    settings and the core's constants, no curve; with rho > 0 it sends the core's curve in the frame's curves."""
    lab = LabState(K=4)
    live = LiveLab(lab, PlayState())
    assert live.prepare(False)["curves"] is None and live.grid.loop is None  # no loop: nothing sent
    lab.param.update(loop="DAPO", gen_batch=512, train_batch=512, cap=2)
    assert live.prepare(False)["curves"] is None  # rho = 0: the kernel draws it, nothing computed here
    assert live.grid.loop == {"loop": "DAPO", "gen_batch": 512, "train_batch": 512, "cap": 2, "level": STALL_LEVEL,
                              "max_prompts": MAX_PROMPTS, "stalls": "DAPO 512/512, cap 2: stalls from t = ",
                              "none": f"DAPO 512/512, cap 2: P(stall) < {STALL_LEVEL:g} up to t = 1"}
    lab.param.update(loop="GRPO", train_batch=16)
    assert live.grid.loop["stalls"] == "GRPO, 16 groups: stalls from t = "  # at once, no redraw waited for
    lab.param.update(loop="DAPO", train_batch=512, rho=0.3)
    curves = live.prepare(False)["curves"]
    core = loop_stall_curve(live.population, TS, 4, 0.3, None, Scenario().gain, "DAPO", 512, 512, 2)
    np.testing.assert_allclose(np.array(curves["stall"]["p"], float), core["p_stall"], atol=0)
    assert curves["stall"]["first_t"] == core["first_t"]
    assert curves["stall"]["label"] == f"DAPO 512/512, cap 2: stalls from t = {core['first_t']:.2f}"
    live.refresh(False)
    assert live.grid.curves == curves  # in the grid's model, for the browser to draw
    lab.reset()
    assert lab.loop == "none" and live.prepare(False)["curves"] is None and live.grid.loop is None


@pytest.mark.browser
@pytest.mark.slow
def test_the_decay_curve_shows_when_dapo_stalls(page, lab_url):
    page.goto(f"{lab_url}?K=4")
    wait_readout(page)
    page.locator("#sc-loop").select_option("DAPO")
    pop = Scenario(K=4).population()
    core = loop_stall_curve(pop, TS, 4, 0.0, None, Scenario().gain, "DAPO", 512, 512, 2)
    key = f"DAPO 512/512, cap 2: stalls from t = {core['first_t']:.2f}"
    page.wait_for_function(f"({READ_CLASS})('gx-stall-key') === {key!r}", timeout=30_000)
    at = page.evaluate("""() => {
      function find(root) {
        const el = root.querySelector('.gx-stall-at');
        if (el) return el;
        for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
        return null;
      }
      const e = find(document);
      return e && [Number(e.getAttribute('data-t')), !!e.ownerDocument];
    }""")
    assert at[0] == pytest.approx(core["first_t"])
    page.locator("#sc-loop").select_option("none")
    page.wait_for_function(f"({READ_CLASS})('gx-stall-key') === null", timeout=30_000)
    assert page.console_errors == []


@pytest.mark.parametrize("n,a,b", [(20_000, 2.0, 3.0), (20_000, 0.3, 0.3), (5_000, 5.0, 1.0), (20_000, 1.0, 8.0)])
def test_a_large_population_is_thinned_within_a_thousandth(n, a, b):
    from grpo_lab.sims.sweep import useful_share_curve

    for K in (2, 8, 64):
        for rho in (0.0, 0.5):
            s = Scenario(n_prompts=n, a=a, b=b, K=K)
            pop = s.population()
            whole = useful_share_curve(pop, TS, K, rho, None, s.gain, realised=False)["expected"]
            got = loop_stall_curve(pop, TS, K, rho, None, s.gain, "GRPO", 512, 64, 2)["u"]
            assert np.max(np.abs(got - whole)) < 1e-3
