"""lab.debounce: one call per pause, on a stand-in for a Bokeh document's timeout callbacks."""

from __future__ import annotations

from grpo_lab.debounce import Debounce


class FakeDoc:
    def __init__(self):
        self.timers, self.next_id = {}, 0

    def add_timeout_callback(self, fn, ms):
        self.next_id += 1
        self.timers[self.next_id] = fn
        return self.next_id

    def remove_timeout_callback(self, handle):
        if handle not in self.timers:
            raise ValueError(handle)
        del self.timers[handle]

    def fire(self):
        timers, self.timers = self.timers, {}
        for fn in timers.values():
            fn()


def test_triggers_in_a_row_call_once_after_the_last():
    calls, doc = [], FakeDoc()
    d = Debounce(lambda: calls.append(1), 300)
    for _ in range(5):
        d.trigger(doc)
    assert calls == [] and len(doc.timers) == 1
    doc.fire()
    assert calls == [1]
    d.cancel()  # nothing pending: harmless
    d.trigger(doc)
    d.cancel()
    doc.fire()
    assert calls == [1]


def test_without_a_document_it_calls_at_once():
    calls = []
    Debounce(lambda: calls.append(1), 300).trigger(None)
    assert calls == [1]


def test_max_wait_runs_a_stream_of_triggers_at_a_bounded_rate():
    """Play's ticks never pause: with max_wait_ms the call still comes about once per max_wait_ms."""
    calls, doc, now = [], FakeDoc(), [0.0]
    d = Debounce(lambda: calls.append(now[0]), 300, clock=lambda: now[0])
    for _ in range(25):  # a tick every 80 ms for 2 s
        d.trigger(doc, max_wait_ms=400)
        now[0] += 0.08
    assert len(calls) >= 4 and 0.4 - 1e-9 <= calls[0] <= 0.48 + 1e-9
    assert all(0.4 - 1e-9 <= b - a <= 0.48 + 1e-9 for a, b in zip(calls, calls[1:]))  # max_wait_ms, + a tick
    assert len(doc.timers) == 1  # and once more after the last tick
    n = len(calls)
    doc.fire()
    assert len(calls) == n + 1
    now[0] += 1.0
    for _ in range(25):  # the same stream without max_wait_ms: only after the last
        d.trigger(doc)
        now[0] += 0.08
    assert len(calls) == n + 1
