"""The Replay tab's named side-by-side views (``lab.replay.catalog.PAIRS``): two shipped runs from one
start, picked by name or opened from the URL (``?replay=NAME``), without a browser."""

from __future__ import annotations

import numpy as np
import panel as pn
import pytest

from grpo_lab.app import TABS, build_app
from grpo_lab.replay.catalog import FEATURED, PAIRS, list_runs
from grpo_lab.replay.state import NONE
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.record import read_record


@pytest.mark.parametrize("name", list(PAIRS))
def test_each_pair_is_two_shipped_runs_from_one_start(name):
    _, run, other = PAIRS[name]
    shipped = list_runs()
    a, b = read_record(shipped[run]), read_record(shipped[other])
    ca, cb = a.meta["config"], b.meta["config"]
    # the same warm start and RL seed, so the same step-0 policy: its evaluation is the same, prompt by prompt
    assert (ca["start"], ca["sft_seed"], ca["seed"]) == (cb["start"], cb["sft_seed"], cb["seed"])
    assert a.evals["step"][0] == b.evals["step"][0] == 0
    np.testing.assert_array_equal(a.evals["pass_rate"][0], b.evals["pass_rate"][0])


def test_picking_a_pair_shows_both_runs_and_a_link_that_reopens_it():
    view = ReplayView()
    assert view.state.run == FEATURED and view.state.compare == NONE and view.pair_link.object == ""
    title, run, other = PAIRS["sign-vs-dr_grpo"]
    view.pair_select.value = "sign-vs-dr_grpo"
    assert (view.state.run, view.state.compare) == (run, other)
    assert (view.run_select.value, view.compare_select.value) == (run, other)
    captions = [r["caption"] for r in view.grid.frames["runs"]]  # what the grid draws, one block per run
    assert captions[0].startswith(f"Run: {run}.") and f": {other}." in captions[1]
    assert 'href="?replay=sign-vs-dr_grpo"' in view.pair_link.object
    assert view.pair_select.options[title] == "sign-vs-dr_grpo"
    # a run chosen by hand that is not the pair's: the named view is gone, the runs stay as chosen
    view.compare_select.value = PAIRS["dynamic-sampling"][2]
    assert view.state.pair == NONE and view.pair_select.value == NONE and view.pair_link.object == ""
    assert view.state.compare == PAIRS["dynamic-sampling"][2]


def test_the_url_opens_the_replay_tab_on_the_pair():
    page = build_app({"replay": "sign-vs-dr_grpo-weak"})
    tabs = next(o for o in page.objects if hasattr(o, "active"))
    index = [title for title, _ in TABS].index("Replay")
    assert tabs.active == index
    selects = {w.css_classes[0]: w.value for w in tabs.objects[index].select(pn.widgets.Select) if w.css_classes}
    assert (selects["replay-run"], selects["replay-compare"]) == PAIRS["sign-vs-dr_grpo-weak"][1:]
    assert selects["replay-pair"] == "sign-vs-dr_grpo-weak"
    plain = build_app({})
    assert next(o for o in plain.objects if hasattr(o, "active")).active == 0


def test_an_unknown_pair_from_the_url_is_a_notice_shown_as_text():
    view = ReplayView(pair="<b>nope</b>")
    assert view.state.run == FEATURED and view.state.compare == NONE  # the page goes on as without it
    assert "<b>nope</b>" not in view.error_pane.object and "&lt;b&gt;nope" in view.error_pane.object
    assert view.error_pane.visible and "sign-vs-dr_grpo" in view.state.error
