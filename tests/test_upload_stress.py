"""Uploads under stress: tabs closed at random moments leave no upload without a reader and no reader behind
(issue #35 item 4; the 20 rounds of four at-limit uploads are ``benchmarks/bench_fairness.py --only upload-stress``).

* the result of a read is always delivered: whatever fails between the reader's answer and the page (here:
  unpacking the record raises) reaches the page as the read's error; it used to be logged by
  ``concurrent.futures`` alone, and the page said "Reading ..." for ever with no reader left;
* in Chromium, against ``grpo-lab serve``'s server (one process), a round of four visitors uploading at once,
  about half of the tabs closed at random moments: every upload is read or closed (none stuck), once the lanes'
  spares have retired no reading process is left, and once the sessions are destroyed and released nothing an
  upload made (its job, its read and result, the record) is reachable in the server (``memory_probe``).
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future

import pytest

from grpo_lab.replay import upload_job
from grpo_lab.replay.upload_pool import SPARE_IDLE_S
from grpo_lab.testing.logged_server import logged_server
from grpo_lab.testing.memory_probe import probe
from grpo_lab.testing.upload import budget_sized_zip
from grpo_lab.testing.upload_stress import readers, stress_round


def test_a_result_that_cannot_be_unpacked_reaches_the_page_as_an_error(monkeypatch):
    delivered = []

    class Doc:
        def add_next_tick_callback(self, fn):
            delivered.append(fn)

    job = object.__new__(upload_job.UploadJob)
    job.doc, job.name, job.cancelled, job._keys, job._counted = Doc(), "big.zip", False, (), threading.Lock()

    def broken(_packed):
        raise ValueError("a record that does not unpack")

    monkeypatch.setattr(upload_job, "unpack", broken)
    future = Future()
    future.set_result(({"packed": True}, ""))
    job._finished(future)
    (fn,) = delivered
    assert fn.func == job._deliver and fn.args == (None, "big.zip: not read (ValueError)")


@pytest.mark.browser
@pytest.mark.slow
def test_tabs_closed_at_random_moments_leave_no_upload_without_a_reader(browser):
    data, _ = budget_sized_zip(2 << 20)  # a zip of 2 MB of JSONL: the large lane, read in about a second
    rng = random.Random(35)
    flags = ("--reuse-sessions", "--plugins", "grpo_lab.testing.memory_probe", "--unused-session-lifetime", "2000")
    with logged_server(*flags, num_procs=1) as (url, log):
        base = url.rsplit("/", 1)[0]
        assert probe(base)["uploads"] == 0
        outcomes = [stress_round(browser, url, data, 4, rng, stuck_s=120)]
        flat = [o for round_ in outcomes for o in round_]
        assert "stuck" not in flat, outcomes
        assert set(flat) <= {"read", "closed"}, outcomes
        assert flat.count("read") >= 1, outcomes  # the reads that were kept ended with a record
        deadline = time.monotonic() + SPARE_IDLE_S + 30  # the spares retire after SPARE_IDLE_S without a read
        left = readers(log.pids())
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = readers(log.pids())
        assert left == [], left
        deadline = time.monotonic() + 60  # sessions destroyed 2 s after they closed (looked for every 5 s), released
        after = probe(base)
        while (after["alive"] or not after["releases"]) and time.monotonic() < deadline:
            time.sleep(1)
            after = probe(base)
        assert (after["alive"], after["uploads"]) == (0, 0), after
        assert after["releases"] >= 1, after
        assert "Traceback" not in log()
