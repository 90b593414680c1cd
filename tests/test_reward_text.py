"""One parser of a typed reward vector (sims/reward_text.py) for the lab's advantage explorer and
``grpo-lab advantages --rewards``: the same text gives the same rewards in both, and each words a refusal its own
way (the page in its sentences, the command line naming the flag, one line and exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.commands.core import parse_rewards as cli_parse
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.reward_text import RewardTextError, parse_rewards
from grpo_lab.state import MAX_TYPED_REWARDS, AdvantageState
from grpo_lab.state import parse_rewards as page_parse

TEXTS = {  # text -> the rewards written out here
    "1,0,0,1": [1, 0, 0, 1],
    "1, 0, 0.5": [1, 0, 0.5],
    "1 0 1": [1, 0, 1],
    "1;0; 2.5": [1, 0, 2.5],
    " 1,,0 ,\t-2e-3\n": [1, 0, -0.002],
    "+3 , -1": [3, -1],
}


@pytest.mark.parametrize("text", sorted(TEXTS))
def test_the_page_and_the_command_line_read_a_text_alike(text, capsys):
    want = np.array(TEXTS[text], float)
    for parse in (parse_rewards, page_parse, cli_parse):
        np.testing.assert_array_equal(parse(text), want)
    assert main(["advantages", "--rewards", text, "--estimator", "dr_grpo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["dr_grpo"]
    np.testing.assert_allclose(got, want - want.mean())  # the command line used the same vector
    s = AdvantageState()
    s.rewards_text = text  # typing switches the explorer to the typed rewards
    np.testing.assert_array_equal(s.rewards(), want)  # and the page
    assert s.error == ""


@pytest.mark.parametrize("text,kind,page,cli", [
    (",, ;", "empty", "no number typed", "--rewards is empty"),
    ("1, 0, abc", "not_a_number", "\u201cabc\u201d is not a number", "--rewards must be numbers separated by commas"),
    ("1, nan", "not_finite", "finite number", "--rewards must be finite numbers (no NaN or inf); got 'nan'"),
    ("1 inf", "not_finite", "finite number", "got 'inf'"),
])
def test_each_refusal_has_one_reason_and_each_caller_its_words(text, kind, page, cli, capsys):
    with pytest.raises(RewardTextError) as exc:
        parse_rewards(text)
    assert exc.value.kind == kind and isinstance(exc.value, InputError)
    with pytest.raises(InputError) as p:
        page_parse(text)
    assert page in str(p.value) and "--" not in str(p.value)
    with pytest.raises(InputError) as c:
        cli_parse(text)
    assert cli in str(c.value)
    try:
        code = main(["advantages", "--rewards", text])
    except SystemExit as e:
        code = e.code
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--rewards" in err and "Traceback" not in err


def test_the_pages_cap_is_the_pages():
    text = ", ".join(["1"] * (MAX_TYPED_REWARDS + 1))
    with pytest.raises(InputError, match="at most 1,024"):
        page_parse(text)
    with pytest.raises(RewardTextError) as exc:
        parse_rewards(text, MAX_TYPED_REWARDS)
    assert exc.value.kind == "too_many" and exc.value.count == MAX_TYPED_REWARDS + 1
    assert cli_parse(text).size == MAX_TYPED_REWARDS + 1  # the command line sets no cap
