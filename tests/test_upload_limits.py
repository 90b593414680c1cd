"""An upload's limits: file size, decompressed bytes, rows and seconds, checked while reading; the transport fits.

No browser here (tests/test_upload_browser.py drives the page). The row and time budgets are the
hook of ``grpo_lab.sims.ingest.budget``: the checks must stop a read part-way, not after it.
"""

from __future__ import annotations

import numpy as np

import io
import json
import zipfile

from bokeh.server.tornado import DEFAULT_WEBSOCKET_MAX_MESSAGE_SIZE_BYTES

from grpo_lab.replay.upload import UPLOAD_LIMITS, UploadLimits, load_upload, new_budget
from grpo_lab.sims.ingest import ingest_upload
from grpo_lab.sims.ingest.budget import CHECK_EVERY_LINES, Budget, use_budget


def jsonl(n_lines: int) -> bytes:
    return "".join(json.dumps({"step": i // 4, "prompt_id": f"p{i % 4}", "rewards": [1, 0, i % 2]}) + "\n"
                   for i in range(n_lines)).encode()


def zipped(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
    return buf.getvalue()


class FakeClock(Budget):
    """A budget whose clock moves one second per look, so the time limit trips on a known check."""

    def elapsed(self) -> float:
        self.looks = getattr(self, "looks", 0) + 1
        return float(self.looks)


def test_the_websocket_carries_the_largest_file_the_browser_sends():
    base64_bytes = -(-UPLOAD_LIMITS.file_bytes // 3) * 4
    assert base64_bytes + 64 * 1024 <= DEFAULT_WEBSOCKET_MAX_MESSAGE_SIZE_BYTES  # + the message's JSON around it


def test_a_file_over_the_size_limit_is_refused_by_the_server_too():
    rec, error = load_upload("big.jsonl", jsonl(200), "jsonl", 0.0, UploadLimits(file_bytes=1000))
    assert rec is None and "over this server's upload limit" in error and "big.jsonl" in error


def test_rows_over_the_budget_are_refused_before_parsing():
    data = jsonl(50)
    rec, error = load_upload("rows.jsonl", data, "jsonl", 0.0, UploadLimits(rows=49))
    assert rec is None and "more than 49 rows" in error
    rec, error = load_upload("rows.jsonl", data, "jsonl", 0.0, UploadLimits(rows=50))
    assert error == "" and len(rec.groups["step"]) == 50


def test_rows_are_counted_across_a_zips_files():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/a.jsonl", jsonl(30))
        zf.writestr("run/b.jsonl", jsonl(30))
    rec, error = load_upload("run.zip", buf.getvalue(), "jsonl", 0.0, UploadLimits(rows=59))
    assert rec is None and "more than 59 rows" in error and "b.jsonl" in error


def test_the_clock_is_checked_while_parsing_not_after():
    """The clock trips on its third look: at a file read, then at lines CHECK_EVERY_LINES and 2x that."""
    data = jsonl(4 * CHECK_EVERY_LINES)
    budget = FakeClock(max_seconds=2.5)
    rec, error = load_upload("slow.jsonl", data, "jsonl", 0.0, budget=budget)
    assert rec is None and "more than 2.5 s" in error
    assert f"line {2 * CHECK_EVERY_LINES}" in error  # stopped half-way through the file


def test_the_clock_is_checked_while_a_zip_member_expands():
    # 5 MiB of digits and newlines, decompressed in 1 MiB chunks (random enough not to read as a zip bomb, which
    # the archive check refuses before any member is read)
    data = zipped("run/big.jsonl", np.random.default_rng(0).choice(np.frombuffer(b"0123\n", np.uint8), 5 << 20)
                  .tobytes())
    rec, error = load_upload("bomb.zip", data, "jsonl", 0.0, budget=FakeClock(max_seconds=2.5))
    assert rec is None and "more than 2.5 s" in error and "big.jsonl" in error


def test_decompressed_bytes_over_the_budget_are_refused():
    data = zipped("run/big.jsonl", b"\n" * (3 << 20))
    assert len(data) < 100_000
    rec, error = load_upload("bomb.zip", data, "jsonl", 0.0, UploadLimits(decompressed_bytes=2 << 20))
    # declared size, or (forged) as it expands; in words for a web visitor, no operator flag
    assert rec is None and "expands past this server's 2 MB limit; upload fewer or smaller files" in error
    assert "--" not in error


def test_a_cancelled_read_stops_at_the_next_check():
    budget = new_budget()
    budget.cancel()
    rec, error = load_upload("x.jsonl", jsonl(10), "jsonl", 0.0, budget=budget)
    assert rec is None and "cancelled" in error


def test_without_a_budget_the_readers_are_unlimited():
    """The CLI's ingest (no budget in force) reads what the byte cap allows, whatever the rows or time."""
    rec = ingest_upload("many.jsonl", jsonl(3 * CHECK_EVERY_LINES), "jsonl")
    assert len(rec.groups["step"]) == 3 * CHECK_EVERY_LINES
    with use_budget(None):
        assert len(ingest_upload("many.jsonl", jsonl(10), "jsonl").groups["step"]) == 10
