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
