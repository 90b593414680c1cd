"""Play's frame budget and its stop when the page is gone (lab.views.play_budget), without a browser.

The effect on another visitor is measured by benchmarks/bench_fairness.py (figures in the README).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grpo_lab.state import LabState, PlayState
from grpo_lab.views import play_budget
from grpo_lab.views.play_budget import PLAY_SHARE, FrameBudget, session_connected


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_frame_of_work_w_delays_the_next_by_w_over_the_share():
    clock = Clock()
    frames = FrameBudget(share=0.25, clock=clock)
    assert frames.ready()
    with frames.frame():
        clock.t += 0.8  # a heavy frame: 0.8 s of work
    for wait, ready in ((0.0, False), (2.39, False), (2.4, True)):  # due 0.8 / 0.25 = 3.2 s after it began
        clock.t = 100.8 + wait
        assert frames.ready() is ready, wait


def test_a_cheap_frame_is_not_slowed():
    clock = Clock()
    frames = FrameBudget(clock=clock)
    with frames.frame():
        clock.t += 0.004
    clock.t += 0.08 - 0.004  # the next Play tick, 80 ms after the frame began
    assert frames.ready() and 0.004 / PLAY_SHARE < 0.08


def test_share_must_be_a_fraction():
    with pytest.raises(ValueError):
        FrameBudget(share=0)


class FakeDoc:
    """Only what session_connected reads (a class, so Panel can hold weak references to it)."""

    def __init__(self, connections: int):
        self.session_context = SimpleNamespace(_session=SimpleNamespace(connection_count=connections))


def fake_doc(connections):
    return FakeDoc(connections)


def test_session_connected_reads_the_connection_count():
    assert session_connected(fake_doc(1)) and not session_connected(fake_doc(0))
    assert session_connected(None)  # outside a server: nothing to lose
    assert session_connected(SimpleNamespace(session_context=None))


def live_lab(monkeypatch, clock, doc=None):
    from grpo_lab.views import live

    monkeypatch.setattr(play_budget.time, "monotonic", clock)
    monkeypatch.setattr(live.pn.state, "add_periodic_callback",
                        lambda fn, period: SimpleNamespace(stop=lambda: None), raising=True)
    monkeypatch.setattr(live.pn.state, "on_session_destroyed", lambda fn: None, raising=True)
    lab, play = LabState(n_prompts=50), PlayState()
    view = live.LiveLab(lab, play)
    monkeypatch.setattr(type(live.pn.state), "curdoc", property(lambda self: doc), raising=False)
    return view, lab, play


def test_ticks_inside_the_budget_are_skipped(monkeypatch):
    clock = Clock()
    view, lab, play = live_lab(monkeypatch, clock)
    play.playing = True
    view._frames = FrameBudget(share=0.25, clock=clock)
    original_tick = play.tick

    def costly_tick(lab_state):  # each frame costs 1 s of work
        clock.t += 1.0
        return original_tick(lab_state)

    monkeypatch.setattr(play, "tick", costly_tick)
    view._tick()
    first = lab.progress
    for _ in range(5):  # five ticks 80 ms apart: the budget (4 s after the frame began) is not earned back
        clock.t += 0.08
        view._tick()
    assert lab.progress == first
    clock.t = 100.0 + 4.0
    view._tick()
    assert lab.progress == pytest.approx(first + play.dt)


def test_play_stops_once_the_page_is_gone(monkeypatch):
    clock = Clock()
    view, lab, play = live_lab(monkeypatch, clock, doc=fake_doc(0))
    play.playing = True
    before = lab.progress
    view._tick()
    assert play.playing is False and lab.progress == before


class TimeoutDoc:
    """Records add_timeout_callback calls (what FrameBudget.request schedules)."""

    def __init__(self):
        self.timeouts = []

    def add_timeout_callback(self, fn, ms):
        self.timeouts.append((fn, ms))
        return len(self.timeouts)


def test_server_painted_redraws_wait_for_the_budget_and_coalesce():
    clock, doc, runs = Clock(), TimeoutDoc(), []
    frames = FrameBudget(share=0.25, clock=clock)

    def redraw():  # a heavy redraw: 0.5 s of work
        runs.append(clock.t)
        clock.t += 0.5

    frames.request(redraw, doc)
    assert runs == [100.0] and doc.timeouts == []  # the first runs at once
    asked = []
    for _ in range(3):  # a drag goes on: 3 more changes inside the budget
        clock.t += 0.05
        asked.append(clock.t)
        frames.request(redraw, doc)
    assert len(runs) == 1 and len(doc.timeouts) == 1  # one redraw scheduled for all three
    (due, ms), = doc.timeouts
    assert ms == int(1000 * (100.0 + 0.5 / 0.25 - asked[0]))  # when the budget is earned back
    clock.t = 102.0
    due()
    assert runs == [100.0, 102.0]
    frames.request(redraw, doc)  # later changes schedule anew
    assert len(doc.timeouts) == 2


def test_without_a_server_a_redraw_runs_at_once():
    clock, runs = Clock(), []
    frames = FrameBudget(clock=clock)
    for _ in range(3):
        frames.request(lambda: runs.append(1), None)
    assert runs == [1, 1, 1]
