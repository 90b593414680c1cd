"""The advantage explorer's reward source: typed rewards are used only while the source says so."""

from __future__ import annotations

import numpy as np

from grpo_lab.sims import advantages as adv
from grpo_lab.state import REWARD_SOURCES, AdvantageState


def test_typing_switches_the_source_and_the_sliders_come_back_when_chosen():
    s = AdvantageState(G=4, correct=1)
    assert s.source == "binary" and set(REWARD_SOURCES) == {"binary", "typed"}
    s.rewards_text = "1, 0.5, 0"
    assert s.source == "typed"
    np.testing.assert_array_equal(s.table()["rewards"], [1, 0.5, 0])
    s.source = "binary"  # chosen on the page: the sliders' group, though the text is still there
    t = s.table()
    np.testing.assert_array_equal(t["rewards"], [1, 0, 0, 0])
    np.testing.assert_allclose(t["advantages"]["grpo"], adv.advantages([1.0, 0, 0, 0], "grpo"))
    s.rewards_text = ""
    assert s.source == "binary" and s.error == ""


def test_unparsable_typed_rewards_fall_back_to_the_sliders_and_say_why():
    s = AdvantageState(G=3, correct=2)
    s.rewards_text = "1, x"
    assert s.source == "typed"
    np.testing.assert_array_equal(s.table()["rewards"], [1, 1, 0])
    assert s.error.startswith("Rewards not used")
