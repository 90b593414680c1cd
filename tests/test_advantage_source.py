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


def test_typed_rewards_set_k_for_the_sliders_and_give_it_back():
    s = AdvantageState(G=8, correct=2)
    s.rewards_text = "1, 0, 0, 1"
    assert s.G == 4 and s.table()["rewards"].size == 4  # the sliders (and the plots, which read G) say K = 4
    s.rewards_text = ", ".join(["1"] * 70)
    assert s.G == 64  # more than the largest group size: the plots stop there
    s.source = "binary"
    assert (s.G, s.correct) == (8, 2)  # the sliders' own group again
    s.source = "typed"
    s.rewards_text = "1, 0, abc"  # no longer parses: the sliders' group is used, and their K
    assert (s.G, s.correct) == (8, 2) and s.table()["rewards"].size == 8


def test_bad_typed_rewards_are_said_in_words():
    from grpo_lab.state import MAX_TYPED_REWARDS

    s = AdvantageState()
    for text, words in (("1, 0, abc", "\u201cabc\u201d is not a number"), (",, ;", "no number typed"),
                        ("1, nan", "finite number"), ("1, " * (MAX_TYPED_REWARDS + 1), "at most 1,024")):
        s.rewards_text = text
        s.table()
        assert s.error.startswith("Rewards not used: ") and words in s.error, (text, s.error)
        assert "could not convert" not in s.error and "shape" not in s.error
