"""Live replay: the Replay tab follows a record still being written, pinned to the latest step while the
slider sits there, and stops polling once the record is complete."""

from __future__ import annotations

import threading
import time

import pytest

from grpo_lab.testing.growing_record import append_step, growing_record
from grpo_lab.testing.lab_server import serve_local
from grpo_lab.replay.follow import RecordFollower
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.record import read_record

def test_follower_reads_changes_and_stops_when_complete(tmp_path):
    app, rng = growing_record(tmp_path / "live", 2)
    f = RecordFollower(str(tmp_path / "live"), read_record(tmp_path / "live"))
    assert f.active and f.poll() is None  # nothing new yet
    append_step(app, 3, rng)
    app.flush(steps_completed=3)
    assert list(f.poll().steps["step"]) == [1, 2, 3] and f.poll() is None
    app.flush(complete=True)
    assert f.poll().meta["complete"] and not f.active
    assert not RecordFollower(read_record(tmp_path / "live")).active  # an uploaded record never changes


def test_view_follows_and_pins_to_the_latest_step(tmp_path):
    app, rng = growing_record(tmp_path / "live", 3)
    view = ReplayView(runs_root=tmp_path)
    assert list(view.axis.data["step"]) == [1, 2, 3] and view.slider.value == 2  # opens at the latest step
    append_step(app, 4, rng)
    app.flush(steps_completed=4)
    view.poll()
    assert list(view.axis.data["step"]) == [1, 2, 3, 4] and view.slider.value == 3  # pinned
    view.slider.value = 1  # scrubbing back unpins
    append_step(app, 5, rng)
    app.flush(steps_completed=5)
    view.poll()
    assert len(view.axis.data["step"]) == 5 and view.slider.value == 1
    app.flush(complete=True)
    view.poll()
    assert not any(f.active for f in view._followers if f is not None)


def test_a_step_flushed_while_the_view_redraws_is_not_lost(tmp_path, monkeypatch):
    app, rng = growing_record(tmp_path / "live", 2)
    view = ReplayView(runs_root=tmp_path)

    def read_then_more_lands(path):  # the trainer flushes its next step while the view reads the last one
        rec = read_record(path)
        if len(rec.steps["step"]) == 3:
            append_step(app, 4, rng)
            app.flush(steps_completed=4)
        return rec

    monkeypatch.setattr("grpo_lab.replay.follow.read_record", read_then_more_lands)
    append_step(app, 3, rng)
    app.flush(steps_completed=3)
    view.poll()
    assert len(view.axis.data["step"]) == 3
    view.poll()  # the step flushed during the redraw
    assert list(view.axis.data["step"]) == [1, 2, 3, 4]


@pytest.mark.browser
def test_browser_shows_new_steps_without_reloading(tmp_path, page):
    steps = 12
    app, rng = growing_record(tmp_path / "live", 2)
    made = []
    srv, url = serve_local(lambda: made.append(ReplayView(runs_root=tmp_path)) or made[-1])
    try:
        page.goto(url, timeout=300_000)  # generous: the shared test machine can be very loaded
        read = "() => { const f = (r) => { const e = r.querySelector('.replay-step'); if (e) return e.textContent;" \
               " for (const n of r.querySelectorAll('*')) if (n.shadowRoot) { const t = f(n.shadowRoot);" \
               " if (t !== null) return t; } return null; }; return f(document); }"
        page.wait_for_function(f"() => ({read})() === '{fixed(2.0, 0)}'", timeout=120_000)

        def write_more():
            for s in range(3, steps + 1):
                time.sleep(0.3)
                append_step(app, s, rng)
                app.flush(steps_completed=s)
            app.flush(complete=True)

        t = threading.Thread(target=write_more)
        t.start()
        t.join()
        # the page, never reloaded, reaches the last step written (pinned to the latest)
        page.wait_for_function(f"() => ({read})() === '{fixed(float(steps), 0)}'", timeout=120_000)
        view = made[-1]
        assert len(view.axis.data["step"]) == steps
        deadline = time.monotonic() + 60  # a bound on waiting, not a speed assertion
        while view._poller is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert view._poller is None  # the finished run is no longer polled
        assert page.console_errors == []
    finally:
        srv.stop()
