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


#: JavaScript: the first element matching a selector, through shadow roots
FIND = """function find(root, sel) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) if (n.shadowRoot) { const f = find(n.shadowRoot, sel); if (f) return f; }
  return null; }"""
#: JavaScript: one input event per step (a control of the grid set and its event dispatched), and right after each,
#: before any frame or message, the grid's readout and the stall overlay drawn (its data, its marker, its words)
ONE_EVENT = """(steps) => { """ + FIND + """
  const view = find(document, '.gx-view'), plots = view.__grpoPlots;
  return steps.map(([name, value]) => {
    const input = find(document, '#gx-' + name);
    if (name === 'filter') { input.checked = value; input.dispatchEvent(new Event('change', {bubbles: true})); }
    else { input.value = String(value); input.dispatchEvent(new Event('input', {bubbles: true})); }
    const at = find(document, '#gx-decay .gx-stall-at'), s = plots.data.stall;
    return {useful: find(document, '.readout-useful').textContent, t: plots.data.t, K: plots.data.K,
            first_t: s.first_t, at: at ? Number(at.getAttribute('data-t')) : null,
            key: find(document, '#gx-decay .gx-stall-key').textContent,
            lines: view.querySelectorAll('#gx-decay .gx-stall').length,
            p: Array.from(s.p, (v) => Number.isFinite(v) ? v : null)};
  });
}"""


@pytest.mark.browser
@pytest.mark.slow
def test_the_overlay_is_the_cores_in_the_same_event_as_the_grid(page, lab_url):
    """DAPO chosen (from the URL); each of K, progress and the filter moved by one input event: read at once after it
    (no frame, no message to Python between), the grid's readout and the overlay's marker and words are the core's
    for the values now on screen (sims.scenario.evaluate, sims.loop_stall.loop_stall_curve), drawn once."""
    from grpo_lab.sims.formatting import percent
    from grpo_lab.sims.scenario import DEFAULT_BAND, evaluate

    page.goto(f"{lab_url}?K=4&loop=DAPO&gen_batch=512&train_batch=512&cap=2")
    wait_readout(page)
    page.wait_for_function(f"({READ_CLASS})('gx-stall-key') !== null", timeout=30_000)
    steps = [("K", 8), ("progress", 0.5), ("K", 2), ("progress", 0.9), ("filter", True), ("K", 4), ("filter", False)]
    got = page.evaluate(ONE_EVENT, steps)
    values = {"K": 4, "progress": Scenario().progress, "filter": False}
    firsts = set()
    for (name, value), shown in zip(steps, got):
        values[name] = value
        band = DEFAULT_BAND if values["filter"] else None
        scenario = Scenario(K=values["K"], progress=values["progress"], band=band)
        assert shown["useful"] == percent(evaluate(scenario).summary["useful_share_realised"]), (name, value)
        assert shown["t"] == values["progress"] and shown["K"] == values["K"]
        core = loop_stall_curve(scenario.population(), TS, values["K"], 0.0, band, scenario.gain, "DAPO", 512, 512, 2)
        assert shown["first_t"] == core["first_t"] and shown["at"] == core["first_t"], (name, value)
        when = f"stalls from t = {core['first_t']:.2f}" if core["first_t"] is not None else "P(stall) < 0.5 up to t = 1"
        assert shown["key"] == "DAPO 512/512, cap 2: " + when
        got_p = np.array([np.nan if v is None else v for v in shown["p"]])
        np.testing.assert_allclose(got_p, core["p_stall"], rtol=1e-9, atol=1e-13)
        assert shown["lines"] == 1  # one overlay: the kernel's, not Python's beside it
        firsts.add(core["first_t"])
    assert len(firsts) >= 3  # the steps moved the stall
    assert page.console_errors == []


@pytest.mark.browser
@pytest.mark.slow
def test_with_correlated_rollouts_the_overlay_is_pythons(page, lab_url):
    """rho > 0, which the kernel does not cover: the overlay drawn is Python's (the core's curve at that rho), once."""
    page.goto(f"{lab_url}?K=4&rho=0.3&loop=DAPO&gen_batch=512&train_batch=512&cap=2")
    wait_readout(page)
    page.wait_for_function(f"({READ_CLASS})('gx-stall-key') !== null", timeout=30_000)
    got = page.evaluate("""() => { """ + FIND + """
      const view = find(document, '.gx-view'), s = view.__grpoPlots.data.stall;
      return {p: s.p, first_t: s.first_t, lines: view.querySelectorAll('#gx-decay .gx-stall').length}; }""")
    s = Scenario(K=4, rho=0.3)
    core = loop_stall_curve(s.population(), TS, 4, 0.3, None, s.gain, "DAPO", 512, 512, 2)
    zero = loop_stall_curve(s.population(), TS, 4, 0.0, None, s.gain, "DAPO", 512, 512, 2)
    np.testing.assert_allclose(np.array(got["p"], float), core["p_stall"], atol=0)
    assert got["first_t"] == core["first_t"] and got["lines"] == 1
    assert np.max(np.abs(core["p_stall"] - zero["p_stall"])) > 0.01  # not the rho = 0 curve
    assert page.console_errors == []
