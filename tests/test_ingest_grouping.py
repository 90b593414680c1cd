"""The vectorised verl grouping and the pyarrow row reader equal the line-by-line reading they replace."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.ingest import verl_rows
from grpo_lab.sims.ingest.grouping import group_rows

FIX = Path(__file__).parent / "fixtures" / "ingest"


def _reference(step, prompt, values, G):
    """The dict-of-lists reading: keys by (step, first appearance), rows in file order, blocks of G."""
    buckets, order = defaultdict(list), []
    for i, key in enumerate(zip(step.tolist(), prompt.tolist())):
        if key not in buckets:
            order.append(key)
        buckets[key].append(values[i])
    out = []
    for key in sorted(order, key=lambda k: k[0]):
        rows = buckets[key]
        out += [(key[0], key[1], rows[j:j + G]) for j in range(0, len(rows), G)]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_group_rows_equals_the_reference(seed):
    rng = np.random.default_rng(seed)
    G = int(rng.integers(2, 6))
    rows = []
    for s in rng.permutation(8):  # steps out of order across "files"
        prompts = rng.choice(30, size=6)  # with repeats: the same prompt drawn twice in one step
        for p in prompts:
            rows += [(int(s), int(p))] * G
    perm = rng.permutation(len(rows))  # balance_batch-like shuffle
    step = np.array([rows[i][0] for i in perm])
    prompt = np.array([rows[i][1] for i in perm])
    values = rng.random(len(rows))
    g = group_rows(step, prompt, G)
    got = list(zip(g.step.tolist(), g.prompt.tolist(), values[g.order].reshape(-1, G).tolist()))
    assert got == [(s, p, list(v)) for s, p, v in _reference(step, prompt, values, G)]
    # ambiguous keys: exactly the (step, prompt) pairs drawn more than once
    counts = defaultdict(int)
    for key in zip(step.tolist(), prompt.tolist()):
        counts[key] += 1
    assert int((g.rows_per_key > G).sum()) == sum(1 for c in counts.values() if c > G)


@pytest.mark.parametrize("run", ["verl_matrix/naive/run", "verl_matrix/dapo/run", "verl_run"])
def test_pyarrow_and_line_readers_give_the_same_record(run, monkeypatch):
    fast = ingest(FIX / run, "verl")
    monkeypatch.setattr(verl_rows, "_fast", lambda *a, **k: None)
    slow = ingest(FIX / run, "verl")
    for k in fast.groups:
        np.testing.assert_array_equal(fast.groups[k], slow.groups[k])
    assert fast.meta == slow.meta


@pytest.mark.parametrize("run", ["verl_matrix/naive/run", "verl_matrix/dapo_float/run"])
def test_worker_processes_give_the_same_record(run, monkeypatch):
    """The parallel reading (spawned workers, used for large folders) equals the in-process one."""
    from grpo_lab.sims.ingest import parallel

    one = ingest(FIX / run, "verl")
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    many = ingest(FIX / run, "verl", workers=2)
    for k in one.groups:
        np.testing.assert_array_equal(one.groups[k], many.groups[k])
    assert one.meta == many.meta


@pytest.mark.parametrize("workers", [2, 1])
def test_worker_errors_name_the_file_and_line(tmp_path, monkeypatch, workers):
    """A bad line names its file and line when parsed in a worker process (workers=2) or a thread (1)."""
    import shutil

    from grpo_lab.sims.errors import InputError
    from grpo_lab.sims.ingest import parallel

    run = tmp_path / "run"
    shutil.copytree(FIX / "verl_matrix" / "naive" / "run", run)
    with open(run / "rollouts" / "3.jsonl", "a") as fh:
        fh.write('{"input": "x", "step": 3\n')
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "THREADS_MIN_FILES", 1)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    with pytest.raises(InputError, match=r"3\.jsonl line 17: not valid JSON"):
        ingest(run, "verl", workers=workers)


@pytest.mark.parametrize("run", ["verl_matrix/naive/run", "verl_matrix/dapo/run"])
def test_parsing_threads_give_the_same_record(run, monkeypatch):
    """Files parsed on a pool of threads (the default on a machine with several cores) equal one thread."""
    from grpo_lab.sims.ingest import parallel

    monkeypatch.setattr(parallel, "workers", lambda: 1)
    one = ingest(FIX / run, "verl")
    monkeypatch.setattr(parallel, "workers", lambda: 3)
    monkeypatch.setattr(parallel, "THREADS_MIN_FILES", 1)
    calls = []
    real = parallel._threaded
    monkeypatch.setattr(parallel, "_threaded", lambda *a: calls.append(a[-1]) or real(*a))
    many = ingest(FIX / run, "verl")
    assert calls == [3]  # the threaded path was taken
    for k in one.groups:
        np.testing.assert_array_equal(one.groups[k], many.groups[k])
    assert one.meta == many.meta


def test_a_line_longer_than_a_json_block_is_read_by_pyarrow(tmp_path, monkeypatch):
    """A response longer than pyarrow's block: the file is read again in one block, not by the line reader."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(FIX / "verl_matrix" / "naive" / "run", run)
    expected = ingest(run, "verl")
    monkeypatch.setattr(verl_rows, "BLOCK_BYTES", 64)  # every fixture line is longer than this
    monkeypatch.setattr(verl_rows, "_slow", lambda *a, **k: pytest.fail("the line reader was used"))
    got = ingest(run, "verl")
    for k in expected.groups:
        np.testing.assert_array_equal(expected.groups[k], got.groups[k])
    assert got.meta == expected.meta


@pytest.mark.parametrize("arrow", [True, False])
def test_prompt_index_numbers_texts_by_first_appearance_across_batches(arrow, monkeypatch):
    """Run-wide codes equal a dict's first-appearance numbering, across batches of files, with empty files."""
    import pyarrow as pa

    from grpo_lab.sims.ingest import prompts
    from grpo_lab.sims.ingest.verl_rows import DumpRows

    monkeypatch.setattr(prompts, "BATCH_FILES", 3)
    rng = np.random.default_rng(7)
    index = prompts.PromptIndex()
    if not arrow:
        index._pa = None
    files, seen = [], {}
    for f in range(10):
        n = 0 if f == 4 else int(rng.integers(1, 12))
        rows_text = [f"prompt {int(x)} \u00e9" for x in rng.integers(0, 15, n)]
        distinct = list(dict.fromkeys(rows_text))
        local = np.array([distinct.index(t) for t in rows_text], np.int64)
        rows = DumpRows(np.zeros(n, np.int64), local, {})
        index.add(rows, pa.array(distinct, pa.string()) if arrow and f % 2 else distinct)
        files.append((rows, rows_text))
        for t in rows_text:
            seen.setdefault(t, len(seen))
    index.finish()
    assert len(index) == len(seen)
    for rows, rows_text in files:
        assert rows.prompt.tolist() == [seen[t] for t in rows_text]
    assert index.texts(list(range(len(seen)))) == list(seen)
