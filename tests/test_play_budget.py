"""Play's frame budget (lab.views.play_budget) and the live lab's Play in the browser, without a browser.

The effect on another visitor is measured by benchmarks/bench_fairness.py (figures in the README).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grpo_lab.state import LabState, PlayState
from grpo_lab.views.play_budget import PLAY_SHARE, FrameBudget, HeavyWork
from grpo_lab.testing.run_async import run_async


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


class TimeoutDoc:
    """Records add_timeout_callback calls (what FrameBudget.request schedules)."""

    def __init__(self):
        self.timeouts = []

    def add_timeout_callback(self, fn, ms):
        self.timeouts.append((fn, ms))
        return len(self.timeouts)


def live_lab(monkeypatch, clock, doc=None):
    """A LiveLab with its plots built (outside a server they are built at once), then ``doc`` as curdoc."""
    from grpo_lab.views import live

    periodic = []
    monkeypatch.setattr(live.pn.state, "add_periodic_callback",
                        lambda fn, period, **kw: periodic.append(fn) or SimpleNamespace(stop=lambda: None), raising=True)
    lab, play = LabState(n_prompts=50), PlayState()
    view = live.LiveLab(lab, play)
    assert view.plots  # built: redraws go through _changed's paths
    view._frames = FrameBudget(clock=clock)  # the session's budget, on the test's clock
    monkeypatch.setattr(type(live.pn.state), "curdoc", property(lambda self: doc), raising=False)
    return view, lab, play, periodic


def test_play_is_the_browsers_and_its_button_state_goes_both_ways(monkeypatch):
    """Pressing Play tells the grid (the browser plays); the server schedules no tick and moves nothing; the
    browser's stop (end of the sweep, slider grabbed) comes back as the button's state."""
    view, lab, play, periodic = live_lab(monkeypatch, Clock(), doc=TimeoutDoc())
    before = lab.progress
    play.playing = True
    assert view.grid.playing is True and periodic == [] and lab.progress == before
    view.grid.playing = False  # the browser stopped
    assert play.playing is False


def test_play_pushes_inside_the_budget_coalesce_into_one_redraw_of_the_latest(monkeypatch):
    """While playing, each progress push is drawn at once if the session's budget allows, else once when it
    does, showing the latest pushed progress (a heavy view follows the animation more slowly)."""
    clock, doc = Clock(), TimeoutDoc()
    view, lab, play, _ = live_lab(monkeypatch, clock, doc=doc)
    drawn = []

    def costly_refresh(repaint_grid, prepared=None):  # each redraw costs 1 s of work
        drawn.append(lab.progress)
        clock.t += 1.0

    monkeypatch.setattr(view, "refresh", costly_refresh)
    play.playing = True
    lab.progress = 0.1  # the browser's first push: drawn at once
    assert drawn == [0.1] and doc.timeouts == []
    for t in (0.2, 0.3, 0.4):  # pushes every 250 ms: inside the budget (4 s after the last began)
        clock.t += 0.25
        lab.progress = t
    assert drawn == [0.1] and len(doc.timeouts) == 1  # one redraw scheduled for all three
    (due, ms), = doc.timeouts
    assert ms == int(1000 * (100.0 + 1.0 / PLAY_SHARE - (101.0 + 0.25)))  # from the first push inside the budget
    clock.t = 104.0
    due()
    assert drawn == [0.1, 0.4]  # the latest


def test_without_play_a_cheap_change_waits_for_a_pause(monkeypatch):
    """Not playing, a cheap change (rho = 0, same population) waits for the pause (the Debounce), not the budget."""
    clock, doc = Clock(), TimeoutDoc()
    view, lab, play, _ = live_lab(monkeypatch, clock, doc=doc)
    drawn, waits = [], []
    monkeypatch.setattr(view, "refresh", lambda repaint_grid: drawn.append(lab.progress))
    monkeypatch.setattr(view._redraw, "trigger", lambda d, *a: waits.append(d))
    lab.progress = 0.3
    assert drawn == [] and waits == [doc]


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


def test_a_frame_is_computed_off_the_event_loop_and_a_push_meanwhile_gets_one_more_frame():
    """With a running loop, a frame's ``prepare`` runs in the heavy-work thread while the loop goes on serving
    (here: the loop must run for ``prepare`` to finish at all), then ``fn`` on the loop with its values; a push
    that comes while it is computed is drawn by one more frame, with the state as it is then (issue #35)."""
    import asyncio
    import threading

    async def main():
        loop = asyncio.get_running_loop()

        class Doc:
            def add_next_tick_callback(self, fn):
                loop.call_soon(fn)

            def add_timeout_callback(self, fn, ms):
                return loop.call_later(ms / 1000, fn)

        frames, doc = FrameBudget(share=1.0, work=HeavyWork(visitor_share=1.0, total_share=1.0)), Doc()
        served, state, drawn = threading.Event(), {"progress": 0.1}, []
        frames._last_cpu = 1.0  # its last frame was heavy: the next is computed in the heavy thread

        threads = []

        def prepare():
            threads.append(threading.current_thread() is threading.main_thread())
            if not threads[-1]:
                assert served.wait(10)  # set by the loop: only if the loop runs while this computes
            return state["progress"]

        frames.request(drawn.append, doc, prepare=prepare)
        state["progress"] = 0.2
        frames.request(drawn.append, doc, prepare=prepare)  # while the first is computed: coalesced, one more
        state["progress"] = 0.3
        frames.request(drawn.append, doc, prepare=prepare)
        assert drawn == []
        await asyncio.sleep(0.01)
        loop.call_soon(served.set)  # another visitor's message, served meanwhile
        for _ in range(500):
            if len(drawn) >= 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert len(drawn) == 2 and drawn[-1] == 0.3, drawn
        assert threads[0] is False  # the heavy one off the loop (the next, after a light frame, inline)

    run_async(main())


def test_a_light_session_s_frame_is_computed_inline_never_queued_behind_heavy_ones():
    """A session whose last frame was light (and a first frame) computes inline: a light visitor's redraw never
    waits in the heavy thread's queue behind a heavy visitor's frames (99 s once, at load 15)."""
    import asyncio
    import threading

    async def main():
        class Doc:
            def add_next_tick_callback(self, fn):
                raise AssertionError("a light frame is not handed back from the heavy thread")

            def add_timeout_callback(self, fn, ms):
                raise AssertionError("not delayed")

        frames, where = FrameBudget(share=1.0, work=HeavyWork(visitor_share=1.0, total_share=1.0)), []
        loop_thread = threading.current_thread()  # the loop's own (run_async gives the loop a thread of its own)
        frames.request(where.append, Doc(), prepare=lambda: threading.current_thread() is loop_thread)
        assert where == [True]  # computed and drawn at once, on the loop's thread

    run_async(main())
