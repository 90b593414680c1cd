"""The Replay tab lists and opens tracker records (scalars only, zero groups) in real Chromium, and says as
text what each one's trainer metrics lacked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.record import write_record
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS, block_outside, serve_local

FIX = Path(__file__).parent / "fixtures" / "trackers"
TEXT_OF = f"(cls) => ({TEXTS_OF_CLASS})(cls).join('\\n')"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    truth = json.loads((FIX / "truth.json").read_text())
    root = tmp_path_factory.mktemp("runs")
    records = {}
    for label, key in (("tb-trl", "tensorboard/trl"), ("trackio-miles", "trackio")):
        t = truth[key]
        records[label] = read_scalars(FIX / t["path"], fmt=t["format"], run=t["run"])
        write_record(root / label, records[label])
    return root, records


@pytest.fixture(scope="module")
def server(runs):
    srv, url = serve_local(lambda: ReplayView(runs_root=runs[0]))
    yield url
    srv.stop()


def test_the_tab_opens_tracker_records_and_names_what_they_lack(page, server, runs):
    _, records = runs
    origin = server.rstrip("/")
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws")))
    page.goto(server)
    for label, rec in records.items():
        src = rec.meta["source"]
        page.locator(".replay-run select").select_option(label)
        want = f"{label}: not in the {src['trainer']} metrics read: {', '.join(src['missing'])}"
        page.wait_for_function(f"(want) => ({TEXT_OF})('replay-missing').includes(want)", arg=want)
        shown = page.evaluate(TEXT_OF, "replay-missing")
        assert f"{label}: per-group rewards (scalars only)" in shown
    assert outside == [] and page.console_errors == []
