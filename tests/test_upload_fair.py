"""Uploads on a shared server (issue 25): each read in a process that ends, the record kept compact, small files
in a lane of their own, per-visitor quotas, and messages in words a web visitor can act on."""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path

import numpy as np
import psutil
import pytest

from grpo_lab.replay.compact import held_bytes, pack, unpack
from grpo_lab.replay.upload import (UPLOAD_LIMITS, UploadLimits, load_upload, read_packed, read_size, start_upload,
                                    upload_failed)
from grpo_lab.replay.upload_pool import ReadLanes
from grpo_lab.replay.upload_quota import UploadQuota
from grpo_lab.replay.upload_words import WEB_FLAGS, for_web
from grpo_lab.sims.ingest import ingest_upload
from grpo_lab.sims.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def jsonl(n_lines: int, G: int = 8) -> bytes:
    line = '{"step": %d, "prompt_id": "p%04d", "rewards": [%s]}\n'
    return "".join(line % (i // 500, i % 500, ", ".join(str((i + j) % 2) for j in range(G)))
                   for i in range(n_lines)).encode()


def zipped(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/groups.jsonl", data)
    return buf.getvalue()


def test_a_read_runs_in_a_process_that_is_gone_after_it_and_sends_back_the_compact_record():
    data = jsonl(2000)
    read = start_upload("run.jsonl", data, "jsonl", 0.0)
    packed, error = read.future.result(timeout=120)
    assert error == "" and upload_failed(read.future, "run.jsonl") is None
    assert read.pid is not None
    # the process exits once it has sent the result, and the pool reaps it (a guard of 60 s, not a timing); the
    # test only watches: waiting on the child itself (psutil's wait) would reap it under the pool's feet
    deadline = time.monotonic() + 60
    while psutil.pid_exists(read.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(read.pid)
    rec = unpack(packed)
    full = ingest_upload("run.jsonl", data, "jsonl")  # the record as ingested, independently
    for key, column in full.groups.items():
        np.testing.assert_array_equal(np.asarray(rec.groups[key]), column)  # every value the same (NaN == NaN)
    # plain JSONL has no advantages or lengths: one value each, held as a view of that value, not n x G copies
    assert rec.groups["advantages"].strides == (0, 0) and rec.groups["lengths"].strides == (0, 0)
    assert rec.groups["step"].dtype == np.int32 and rec.groups["rewards"].dtype == np.float64
    naive = sum(a.nbytes for a in full.groups.values())
    assert held_bytes(rec) < 0.4 * naive


def test_load_upload_in_the_server_process_keeps_the_compact_form_too():
    rec, error = load_upload("run.jsonl", jsonl(100), "jsonl", 0.0)
    assert error == "" and rec.groups["advantages"].strides == (0, 0)
    assert np.isnan(rec.groups["advantages"]).all() and (rec.groups["lengths"] == -1).all()


def test_pack_keeps_columns_that_vary_and_wide_integers():
    from grpo_lab.sims.record import RunRecord
    big = np.array([0, 2**40])
    rec = RunRecord(meta={"n_prompts": 1}, groups={"step": big, "prompt_id": np.array([3, 4]),
                                                   "rewards": np.array([[0.5, np.nan], [1.0, 2.0]])})
    out = unpack(pack(rec))
    assert out.groups["step"].dtype == np.int64 and out.groups["step"][1] == 2**40
    assert out.groups["prompt_id"].dtype == np.int32
    np.testing.assert_array_equal(out.groups["rewards"], rec.groups["rewards"])
    rec.groups["kept"] = np.ones(1000, bool)  # one value: a view of it, one byte
    assert held_bytes(unpack(pack(rec))) == 16 + 8 + 32 + 1


def test_a_small_upload_is_read_while_large_ones_hold_every_large_slot():
    lanes = ReadLanes(large_slots=1, small_slots=1, small_bytes=UPLOAD_LIMITS.small_file_bytes)
    large_data = zipped(jsonl(300_000))  # seconds of reading; a small zip, but what it holds is large
    assert len(large_data) < UPLOAD_LIMITS.small_file_bytes < read_size(large_data)
    small_data = jsonl(200)
    assert read_size(small_data) == len(small_data)
    large = [lanes.submit(read_size(large_data), read_packed, "big.zip", large_data, "jsonl", 0.0) for _ in range(2)]
    large[0].started.wait(60)
    small = lanes.submit(read_size(small_data), read_packed, "small.jsonl", small_data, "jsonl", 0.0)
    packed, error = small.future.result(timeout=120)
    assert error == "" and packed is not None
    assert not large[0].future.done()  # the first large read still going: the small one did not queue behind it
    assert not large[1].started.is_set()  # the second still waits for the large lane
    for r in large:
        r.cancel()
    with pytest.raises(Exception):
        large[0].future.result(timeout=60)  # terminated: its process ended without a result
    assert large[1].future.cancelled()


QUOTA_LIMITS = UploadLimits(visitor_reads=2, address_reads=3, visitor_held_bytes=100, address_held_bytes=150)


def test_a_third_concurrent_upload_of_one_visitor_is_refused_with_what_to_do():
    quota = UploadQuota(QUOTA_LIMITS)
    me = (("cookie", "a"), ("address", "10.0.0.1"))
    assert quota.begin_read(me) is None and quota.begin_read(me) is None
    message = quota.begin_read(me)
    assert message == "You already have 2 uploads being read; wait for one to finish, then upload again."
    assert quota.reads(("cookie", "a")) == 2
    # a classmate behind the same address is let in, up to the address's limit
    mate = (("cookie", "b"), ("address", "10.0.0.1"))
    assert quota.begin_read(mate) is None
    assert "from your network" in quota.begin_read(mate)
    quota.end_read(me)
    assert quota.begin_read(me) is None


def test_bytes_held_by_a_visitors_tabs_are_capped_and_given_back_when_a_tab_closes():
    quota = UploadQuota(QUOTA_LIMITS)
    me = (("cookie", "a"), ("address", "10.0.0.1"))
    tab1, tab2 = object(), object()
    assert quota.hold(me, tab1, 60) is None
    assert quota.hold(me, tab1, 90) is None  # a tab's newer upload replaces its older one
    message = quota.hold(me, tab2, 20)
    assert message.startswith("Your open tabs already hold 0 MB") and "Close a tab that holds an upload" in message
    assert quota.held(("cookie", "a")) == 90
    assert quota.begin_read(me, token=tab2) is None  # 90 < 100: a read may start
    quota.end_read(me)
    assert quota.hold(me, tab2, 10) is None
    assert quota.begin_read(me, token=object()) is not None  # 100 held: no more reads for a third tab
    quota.drop(tab1)
    assert quota.held(("cookie", "a")) == 10 and quota.begin_read(me) is None


def test_the_zip_bomb_message_speaks_to_a_web_visitor_and_the_command_line_keeps_its_flag():
    data = zipped(b"\n" * (3 << 20))
    limits = UploadLimits(decompressed_bytes=2 << 20)
    rec, web = load_upload("bomb.zip", data, "jsonl", 0.0, limits)
    assert rec is None and web.endswith("expands past this server's 2 MB limit; upload fewer or smaller files")
    with pytest.raises(InputError) as cli:
        from grpo_lab.sims.ingest.common import Bundle
        Bundle.from_bytes("bomb.zip", data, 2 << 20).read(next(iter(Bundle.from_bytes("bomb.zip", data, 2 << 20).entries)))
    assert "--max-mb" in str(cli.value) or "size cap" in str(cli.value)


FLAG = re.compile(r"--[a-z][a-z-]+")


def test_every_flag_an_ingest_message_can_name_has_web_words():
    named = set()
    for path in (ROOT / "sims" / "ingest").glob("*.py"):
        for literal in re.findall(r'f?"[^"\n]*"', path.read_text()):
            named |= set(FLAG.findall(literal))
    assert named <= set(WEB_FLAGS), named - set(WEB_FLAGS)
    messages = ["x.zip:run/a.jsonl: reading it would pass the size cap of 5 bytes (9 bytes in all; raise --max-mb "
                "if you trust the files)", "/p: 9 bytes is over the size cap of 5 bytes (--max-mb)",
                "line 1: it looks like a verl rollout dump: use --format verl", "--tolerance must be a number, got 'a'",
                "x: cannot infer the group size (lengths [1, 3]); pass --num-generations",
                "the rollout dump has no 'score' key; pass --reward-key",
                "--reward-weights names 'z', which is not a reward column", "reward columns given (--reward-columns)"]
    for message in messages:
        web = for_web(message)
        assert "--max-mb" not in web and "--format" not in web and "--tolerance" not in web
        assert all(web[:m.start()].endswith("grpo-lab ingest ") for m in FLAG.finditer(web)), web
    assert for_web(messages[2]).endswith('choose "verl" as the format of the upload')
    assert "expands past this server's 64 MB limit; upload fewer or smaller files" in for_web(messages[0])


def test_a_reader_reaped_elsewhere_at_the_same_moment_is_still_closed():
    """multiprocessing's own cleanup (run when the next reader starts, in another thread) may reap a finished reader
    while ``_reap`` waits for it: ``_reap``'s waitpid then fails and the process object reads "running" until the
    other thread stores the exit code. Simulated here: the child's status taken by a direct waitpid, its exit code
    stored on the object 50 ms later. ``_reap`` must neither raise (CI once saw it raise in its thread) nor leave the
    object open."""
    import multiprocessing
    import os
    import threading
    import time

    from grpo_lab.replay.upload_pool import _reap

    process = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
    process.start()
    _, status = os.waitpid(process.pid, 0)  # the other reaper has the status; this object still thinks it runs
    code = os.waitstatus_to_exitcode(status)
    threading.Timer(0.05, lambda: setattr(process._popen, "returncode", code)).start()  # ... and stores it later
    _reap(process)
    with pytest.raises(ValueError, match="closed"):
        process.is_alive()
