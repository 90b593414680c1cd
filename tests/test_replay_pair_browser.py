"""The Replay tab's side-by-side preset in real Chromium: the whole lab page served, opened at
``?replay=sign-vs-dr_grpo``, shows the two shipped runs of the pair side by side on one time axis, and
every readout of both is the record's value, recomputed here from the raw groups and evaluations with
plain numpy (no call into ``sims.replay``) and formatted with ``sims.formatting``.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_lab.testing.lab_server import TEXTS_OF_CLASS as READ_CLASS
from grpo_lab.testing.lab_server import open_local, serve_local
from grpo_lab.replay.catalog import PAIRS, list_runs
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.record import read_record

PAIR = "sign-vs-dr_grpo"


def expected(rec, step: int, prefix: str) -> dict[str, str]:
    """The readouts of a plain run (every group trained, binary rewards) at ``step``, from its arrays."""
    g, r = rec.groups, rec.groups["rewards"]
    at = np.asarray(g["step"]) == step
    upto = np.asarray(g["step"]) <= step
    all_pass, all_fail = r.min(1) == 1, r.max(1) == 0
    mixed = ~(all_pass | all_fail)
    ev_steps = np.asarray(rec.evals["step"])
    ev = rec.evals["pass_rate"][np.flatnonzero(ev_steps <= step)[-1]]  # the latest evaluation at or before it
    return {
        f"{prefix}step": str(step),
        f"{prefix}effective-rate": percent(float(mixed[at].mean())),
        f"{prefix}all-pass": percent(float(all_pass[at].mean())),
        f"{prefix}all-fail": percent(float(all_fail[at].mean())),
        f"{prefix}reward": fixed(float(r[at].mean()), 3),
        f"{prefix}eval-pass": percent(float(ev.mean())),
        f"{prefix}generated": fixed(float(r[upto].size), 0),
        f"{prefix}useful": fixed(float(r[upto & mixed].size), 0),
    }


@pytest.fixture(scope="module")
def pair():
    title, run, other = PAIRS[PAIR]
    shipped = list_runs()
    return title, run, other, read_record(shipped[run]), read_record(shipped[other])


@pytest.fixture(scope="module")
def server():
    from grpo_lab.app import build_app

    srv, url = serve_local(build_app)  # the whole page, as `grpo-lab serve` builds it from the URL's query
    yield url
    srv.stop()


@pytest.fixture
def lab(page, server):
    outside = open_local(page, f"{server}?replay={PAIR}", f"({READ_CLASS})('replay-b-step').length > 0 && "
                                                           f"({READ_CLASS})('replay-b-step')[0] !== ''", timeout=120_000)
    yield page
    assert outside == [], "requests left localhost"
    assert page.console_errors == []


def texts(page, cls):
    return page.evaluate(READ_CLASS, cls)


def readouts(page, want):
    return {cls: texts(page, cls)[0] for cls in want}


def test_the_url_opens_the_pair_side_by_side_with_the_records_readouts(lab, pair):
    title, run, other, rec_a, rec_b = pair
    # both runs are the pair's, chosen in the tab's own menus, and the preset is named with its link
    assert lab.locator(".replay-run select").input_value() == run
    assert lab.locator(".replay-compare select").input_value() == other
    assert lab.locator(".replay-pair select").input_value() == title  # Bokeh's options carry the titles
    assert lab.locator(f'.replay-pair-link a[href="?replay={PAIR}"]').count() == 1
    captions = texts(lab, "gx-caption")
    assert captions[0].startswith(f"Run: {run}.") and f": {other}." in captions[1]
    # one time axis: both plain runs train at every step 0..199, so the axis is their common steps
    steps_a, steps_b = np.unique(rec_a.groups["step"]), np.unique(rec_b.groups["step"])
    np.testing.assert_array_equal(steps_a, steps_b)
    assert lab.locator("#gx-step").get_attribute("max") == str(len(steps_a) - 1)
    # one start: the same step-0 evaluation, so both eval readouts agree at step 0
    np.testing.assert_array_equal(rec_a.evals["pass_rate"][0], rec_b.evals["pass_rate"][0])
    handle = lab.locator("#gx-step")
    handle.focus()
    for pos, keys in ((0, ["Home"]), (37, ["ArrowRight"] * 37), (len(steps_a) - 1, ["End"])):
        for key in keys:
            handle.press(key)
        step = int(steps_a[pos])
        lab.wait_for_function(f"() => ({READ_CLASS})('replay-step')[0] === '{step}' && "
                              f"({READ_CLASS})('replay-b-step')[0] === '{step}'")
        want = {**expected(rec_a, step, "replay-"), **expected(rec_b, step, "replay-b-")}
        assert readouts(lab, want) == want, step
    # the runs differ where the estimators do: the pair is not one run shown twice
    assert want["replay-eval-pass"] != want["replay-b-eval-pass"]
