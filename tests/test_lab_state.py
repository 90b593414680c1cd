"""The lab's state objects and URL sanitising, without a browser."""

from __future__ import annotations

import random

import numpy as np
import pytest

from grpo_lab.grid.pin import pin_text
from grpo_lab.state import LAB_MAX_PROMPTS, LOOP, URL_PARAMS, AdvantageState, LabState, query_values, sanitize
from grpo_lab.sims import advantages as adv
from grpo_lab.sims.scenario import Scenario


def test_default_state_is_exactly_the_default_scenario():
    assert LabState().scenario() == Scenario()


def test_filter_band_enters_the_scenario_only_when_on():
    s = LabState(filter=True, band_lo=0.7, band_hi=0.1)
    assert s.scenario().band == (0.1, 0.7)
    assert LabState(band_lo=0.3).scenario().band is None


@pytest.mark.parametrize("query, values, n_notices", [
    ({"K": "-3"}, {"K": 1}, 1),
    ({"K": "99"}, {"K": 64}, 1),
    ({"K": "8.6"}, {"K": 9}, 1),
    ({"progress": "abc"}, {"progress": 0.0}, 1),
    ({"progress": "nan"}, {"progress": 0.0}, 1),
    ({"progress": "1.5"}, {"progress": 1.0}, 1),
    ({"n_prompts": "10^9"}, {"n_prompts": 600}, 1),
    ({"n_prompts": "1e9"}, {"n_prompts": LAB_MAX_PROMPTS}, 1),
    ({"filter": "true"}, {"filter": True}, 0),
    ({"filter": "maybe"}, {"filter": False}, 1),
    ({"rho": "1"}, {"rho": LabState.param.rho.bounds[1]}, 1),
    ({"a": "-1"}, {"a": LabState.param.a.bounds[0]}, 1),
    ({"seed": "x"}, {"seed": 1302}, 1),
    ({"band_lo": "0.9", "band_hi": "0.1"}, {"band_lo": 0.1, "band_hi": 0.9}, 1),
    ({"K": [b"16"], "unknown": "1"}, {"K": 16}, 0),
])
def test_sanitize_clamps_or_replaces_with_a_notice(query, values, n_notices):
    clean, notices = sanitize(query)
    assert clean == values
    assert len(notices) == n_notices
    LabState(**clean)  # every cleaned value is accepted by the state


def test_sanitized_values_round_trip_through_the_query_string():
    rng = np.random.default_rng(0)
    for _ in range(50):
        s = LabState(progress=float(rng.random()), K=int(rng.integers(1, 65)), filter=bool(rng.integers(2)),
                     band_lo=0.25, band_hi=0.75, rho=float(rng.random() * 0.9), n_prompts=int(rng.integers(1, 5000)),
                     a=float(rng.uniform(0.1, 9)), b=float(rng.uniform(0.1, 9)), seed=int(rng.integers(0, 2**31)))
        if rng.integers(2):  # a pinned view (grpo_lab.grid.pin); the URL carries pin only while one is pinned
            s.pin = pin_text({"progress": float(rng.random()), "K": int(rng.integers(1, 65)), "filter": True,
                              "band_lo": 0.1, "band_hi": 0.6, "rho": 0.0})
        if rng.integers(2):  # a trainer loop on the decay curve; the URL carries it only while one is chosen
            s.param.update(loop=str(rng.choice(["DAPO", "GRPO"])), gen_batch=int(rng.integers(1, 2000)),
                           train_batch=int(rng.integers(1, 2000)), cap=int(rng.integers(1, 50)))
        left_out = ({"pin"} if not s.pin else set()) | (set(LOOP) if s.loop == "none" else set())
        clean, notices = sanitize(query_values(s))
        assert notices == [] and clean == {k: v for k, v in s.values().items() if k not in left_out}
        assert set(clean) == set(URL_PARAMS) - left_out


def test_reset_new_draw_and_step():
    s = LabState(progress=0.5, K=3, seed=5, notice="x")
    s.reset()
    assert s.scenario() == Scenario() and s.notice == ""
    old = s.seed
    assert s.new_draw(random.Random(1)) != old and s.seed != old
    s.progress = 0.98
    assert s.step(0.05) == 1.0


def test_states_are_independent():
    a, b = LabState(), LabState()
    a.K = 32
    assert b.K == 8


def test_advantage_state_matches_the_core():
    s = AdvantageState(G=4, correct=1)
    t = s.table()
    np.testing.assert_array_equal(t["rewards"], [1, 0, 0, 0])
    for name in adv.ESTIMATORS:
        np.testing.assert_allclose(t["advantages"][name], adv.advantages([1.0, 0, 0, 0], name))
    s.rewards_text = "1, 0.5, 0"
    np.testing.assert_array_equal(s.table()["rewards"], [1, 0.5, 0]) and s.error == ""
    s.rewards_text = "1, x"
    assert s.table()["rewards"].size == 4 and s.error.startswith("Rewards not used")


def test_the_stall_overlays_loop_travels_in_the_url_only_while_one_is_chosen():
    """A view is a pure function of its URL: a chosen trainer loop and its sizes are in the query and come back
    from it; with no loop the query carries none of them; a loop the lab does not know is replaced with a notice."""
    lab = LabState()
    assert not {"loop", "gen_batch", "train_batch", "cap"} & set(query_values(lab))
    lab.param.update(loop="DAPO", gen_batch=64, train_batch=32, cap=3)
    q = query_values(lab)
    assert (q["loop"], q["gen_batch"], q["train_batch"], q["cap"]) == ("DAPO", "64", "32", "3")
    values, notices = sanitize(q)
    assert notices == [] and {k: values[k] for k in ("loop", "gen_batch", "train_batch", "cap")} == \
        {"loop": "DAPO", "gen_batch": 64, "train_batch": 32, "cap": 3}
    values, notices = sanitize({"loop": "<b>PPO</b>", "cap": "0"})
    assert values["loop"] == "none" and values["cap"] == 1
    assert any("loop=" in n and "not one of" in n for n in notices) and any("cap=" in n for n in notices)
    lab.reset()
    assert lab.loop == "none" and lab.cap == LabState.param.cap.default
