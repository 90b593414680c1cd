"""The server-wide budget for heavy work (lab.views.play_budget.HeavyWork): a visitor's tabs share one budget, all
visitors together get at most HEAVY_SHARE of the process, the heavy visitor is held back and told, a light one
never waits. Simulated on one fake event loop (a fake clock: a frame's work advances it; callbacks run in order)."""

from __future__ import annotations

import heapq
import itertools

import pytest

from grpo_lab.views.play_budget import HEAVY_SHARE, PLAY_SHARE, FrameBudget, HeavyWork


class Loop:
    """One event loop on a fake clock: callbacks run one at a time in time order, each as late as the work before it."""

    def __init__(self):
        self.t = 0.0
        self._events, self._seq = [], itertools.count()

    def __call__(self) -> float:
        return self.t

    def at(self, t: float, fn) -> None:
        heapq.heappush(self._events, (t, next(self._seq), fn))

    def add_timeout_callback(self, fn, ms):  # the Bokeh document call FrameBudget.request uses
        self.at(self.t + ms / 1000, fn)

    def run(self, until: float) -> None:
        while self._events and self._events[0][0] <= until:
            t, _, fn = heapq.heappop(self._events)
            self.t = max(self.t, t)
            fn()


def play(loop, frames: FrameBudget, work: float, log: list, until: float, every: float = 0.25) -> None:
    """A tab playing: the browser pushes the progress every ``every`` s; each redraw costs ``work`` s."""
    def redraw():
        log.append((loop.t, work))
        loop.t += work

    for k in range(int(until / every)):
        loop.at(k * every, lambda: frames.request(redraw, loop))


def used(log, since: float = 0.0) -> float:
    return sum(w for t, w in log if t >= since)


def test_eight_tabs_of_one_visitor_share_one_budget():
    loop, T = Loop(), 200.0
    shared = HeavyWork(clock=loop)
    busy = [[] for _ in range(8)]
    tabs = [FrameBudget(clock=loop, visitor="cookie:a", work=shared, on_busy=busy[i].append) for i in range(8)]
    log = []
    for tab in tabs:
        play(loop, tab, 0.8, log, T)
    loop.run(T)
    assert used(log) <= PLAY_SHARE * T + 0.8  # one visitor's share in all, whatever its number of tabs
    assert used(log) >= 0.9 * PLAY_SHARE * T  # and it gets it
    assert any(True in b for b in busy)  # held back by its other tabs: told the server is busy
    # the same eight tabs with a budget each (what a per-tab budget gave): eight times the share, the whole loop
    loop2 = Loop()
    log2 = []
    for i in range(8):
        play(loop2, FrameBudget(clock=loop2, visitor=f"cookie:{i}", work=HeavyWork(clock=loop2)), 0.8, log2, T)
    loop2.run(T)
    assert used(log2) > 3 * PLAY_SHARE * T


def test_a_single_tab_is_spaced_by_its_own_budget_and_not_told_the_server_is_busy():
    loop, T = Loop(), 100.0
    busy, log = [], []
    frames = FrameBudget(clock=loop, visitor="cookie:a", work=HeavyWork(clock=loop), on_busy=busy.append)
    play(loop, frames, 0.5, log, T)
    loop.run(T)
    assert abs(used(log) - PLAY_SHARE * T) <= 0.5 and busy == []


def test_heavy_visitors_together_get_at_most_the_total_and_a_light_visitor_never_waits():
    loop, T = Loop(), 300.0
    shared = HeavyWork(clock=loop)
    heavy = []
    for v in range(4):  # four heavy visitors, each would take PLAY_SHARE: 1.0 of the process in all
        play(loop, FrameBudget(clock=loop, visitor=f"cookie:h{v}", work=shared), 0.6, heavy, T)
    light, asked = [], []

    def press():  # a light visitor's server-painted redraw: 20 ms, once a second
        # the shared budget holds it back no longer than its own spacing (its last 20 ms / PLAY_SHARE)
        asked.append(shared.due("cookie:light") <= max(loop.t, light_frames._next) + 1e-9)
        light_frames.request(lambda: (light.append((loop.t, 0.02)), setattr(loop, "t", loop.t + 0.02)), loop)

    light_frames = FrameBudget(clock=loop, visitor="cookie:light", work=shared)
    for k in range(int(T)):
        loop.at(k + 0.1, press)
    loop.run(T)
    assert used(heavy, since=50) <= HEAVY_SHARE * (T - 50) + 4 * 0.6
    assert all(asked)  # the heavy visitors never hold the light one back (only its own 20 ms / PLAY_SHARE spacing)
    assert len(light) >= 0.9 * len(asked)  # its presses drawn (two handled together, behind a heavy frame, are one)
    assert shared.due("cookie:h0") > loop.t or shared.due("cookie:h1") > loop.t  # while the heavy ones wait


def test_a_visitor_using_less_than_half_an_equal_part_is_not_held_by_the_total():
    clock = Loop()
    work = HeavyWork(visitor_share=0.25, total_share=0.5, clock=clock)
    for k in range(40):  # two heavy visitors alternate 1 s frames: the total is spent
        work.spent(f"cookie:h{k % 2}", clock.t, 1.0)
        clock.t += 1.0
    work.spent("cookie:light", clock.t, 0.01)
    assert work.due("cookie:light") <= clock.t + 0.01 / 0.25
    assert work.due("cookie:h0") > clock.t


def test_shares_must_be_fractions():
    with pytest.raises(ValueError):
        HeavyWork(total_share=0)
    with pytest.raises(ValueError):
        FrameBudget(share=1.5)
