"""The Replay tab shows, in real Chromium, what an ingest could not know, as plain text.

Records are ingested from the real trainer-output fixtures whose readers leave notes and warnings:
verl's own dump with the same prompt drawn twice in one step (ambiguous groups) and a validation-only
step (a step without groups), TRL with two generation batches per step (the parquet files hold only
the last batch: the logged reward disagrees with them) and TRL with ``logging_steps = 3`` (batches
between logging steps not written). In the verl copy the ambiguous prompt's text is markup
(``<i>e4</i>=``), which the note quotes: the tab must show those characters, never an element.
Beside them, two tracker records (scalars only, zero groups; sims/ingest/trackers) that the tab must list,
open, and say what their trainer metrics lacked.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grpo_lab.testing.lab_server import TEXTS_OF_CLASS, block_outside, serve_local
from grpo_lab.replay.view import ReplayView
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.record import write_record

FIX = Path(__file__).parent / "fixtures" / "ingest"
TRACKERS = Path(__file__).parent / "fixtures" / "trackers"
MARKUP = "<i>e4</i>="  #: the prompt text the verl copy uses for the prompt drawn twice in step 2

TEXT_OF = f"(cls) => ({TEXTS_OF_CLASS})(cls).join('\\n')"  # every element's text, one per line
ELEMENTS_IN = """([cls, tag]) => {  // elements named tag inside the notice (through shadow roots)
  let n = 0;
  const count = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.tagName === tag.toUpperCase()) n += 1;
    if (el.shadowRoot) count(el.shadowRoot);
  });
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.classList && el.classList.contains(cls)) count(el);
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return n;
}"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``{label in the tab: the record}`` of the three ingested runs, written under one runs folder."""
    root = tmp_path_factory.mktemp("runs")
    src = tmp_path_factory.mktemp("src") / "verl"
    shutil.copytree(FIX / "verl_matrix" / "naive" / "run", src)
    dump = src / "rollouts" / "2.jsonl"
    dump.write_text(dump.read_text().replace('"input": "e4="', '"input": "<i>e4</i>="'))
    records = {"verl-ambiguous": ingest(src, "verl"),
               "trl-two-batches": ingest(FIX / "trl_matrix" / "two_generations_per_step" / "run", "trl"),
               "trl-logging-steps": ingest(FIX / "trl_matrix" / "logging_steps" / "run", "trl")}
    for label, rec in records.items():
        write_record(root / label, rec)
    trackers = {"tb-trl": read_scalars(TRACKERS / "tensorboard", run="trl"),
                "trackio-miles": read_scalars(TRACKERS / "trackio")}
    for label, rec in trackers.items():
        write_record(root / label, rec)
    return root, records, trackers


@pytest.fixture(scope="module")
def server(runs):
    srv, url = serve_local(lambda: ReplayView(runs_root=runs[0]))
    yield url
    srv.stop()


def test_the_readers_notes_and_warnings_are_listed_as_text(page, server, runs):
    _, records, _ = runs
    verl = records["verl-ambiguous"]
    assert any(MARKUP in n for n in verl.meta["notes"]), "the ambiguous-groups note quotes the prompt"
    assert any("validation only" in n for n in verl.meta["notes"])
    assert any("differs from the mean of the logged completions" in w
               for w in records["trl-two-batches"].meta["warnings"])
    assert any("logging_steps = 3" in n for n in records["trl-logging-steps"].meta["notes"])
    origin = server.rstrip("/")
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws")))
    page.goto(server)
    for label, rec in records.items():
        page.locator(".replay-run select").select_option(label)
        said = rec.meta["warnings"] + rec.meta["notes"]
        assert said
        page.wait_for_function(f"(want) => ({TEXT_OF})('replay-missing').includes(want)",
                               arg=f"{label}: {said[0]}")
        shown = page.evaluate(TEXT_OF, "replay-missing")
        for text in said:  # every one, verbatim, after the run's name
            assert f"{label}: {text}" in shown
        assert shown.startswith("Not in this record, so not shown: ")
    page.locator(".replay-run select").select_option("verl-ambiguous")
    page.wait_for_function(f"(want) => ({TEXT_OF})('replay-missing').includes(want)", arg=MARKUP)
    assert page.evaluate(ELEMENTS_IN, ["replay-missing", "i"]) == 0  # the prompt's markup stayed characters
    assert outside == [] and page.console_errors == []


def test_tracker_records_open_and_name_what_their_trainer_metrics_lacked(page, server, runs):
    origin = server.rstrip("/")
    outside = block_outside(page, lambda u: u.startswith(origin) or u.startswith(origin.replace("http", "ws")))
    page.goto(server)
    for label, rec in runs[2].items():
        src = rec.meta["source"]
        page.locator(".replay-run select").select_option(label)
        want = f"{label}: not in the {src['trainer']} metrics read: {', '.join(src['missing'])}"
        page.wait_for_function(f"(want) => ({TEXT_OF})('replay-missing').includes(want)", arg=want)
        assert f"{label}: per-group rewards (scalars only)" in page.evaluate(TEXT_OF, "replay-missing")
    assert outside == [] and page.console_errors == []
