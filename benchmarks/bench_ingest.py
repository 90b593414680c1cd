"""Ingest speed and memory at the size real runs reach, each beside a plain reading of the same files.

Generates, in a temporary folder removed at the end (or, with ``--cache DIR``, once in DIR, reused by
later runs with the same sizes and kept; never committed):

- a verl rollout dump of ``--verl-groups`` groups (default 100,000; ``--full``: 1,000,000, the size
  issue 15 sets, about 18 GB; G = 8; responses of
  ``--chars`` characters, default 2,000; 1,024 groups per step file, rows shuffled as
  ``balance_batch`` does) and a file-logger ``metrics.jsonl``;
- a TRL output folder of ``--trl-groups`` groups (default 100,000; G = 8; 64 groups per
  ``completions_*.parquet``, completions of ``--chars`` characters, two reward columns,
  advantages) and its ``trainer_state.json``;
- a plain group JSONL of ``--plain-groups`` groups (default 100,000; G = 4).

Then, for each: (a) the baseline, a plain reading of every file (``json.loads`` of every
line for JSONL; ``pyarrow.parquet.read_table`` of every column plus ``json.loads`` of the
state for TRL), (b) ``grpo-lab``'s ingest in a child process (wall time, CPU time of all its
threads, peak resident memory; module imports not timed), (c) writing the record. Prints one
row per format; the CPU columns depend less on the machine's load than the wall columns. Then
(d) opening each record in the Replay tab, server side, in a child process each: ``read_record``,
the replay model ``RunView`` and the frames sent to the browser (``frames_data``), beside a
1,000-group record opened the same way in the same run. With ``--browser``, (e) the same records
opened in the served Replay tab in headless Chromium: seconds from the page request to the grid's
first readout (the server's work, sending the frames, the browser decoding and painting them), and
the scrub latency of ``--presses`` slider steps measured in the page as
``benchmarks/bench_replay.py`` does (keydown to the readout rewritten, and to the end of the next
painted frame).

Run: ``python benchmarks/bench_ingest.py`` (a few minutes: 100,000 verl groups) or
``python benchmarks/bench_ingest.py --full --cache /tmp/grpo-lab-bench-ingest`` (1,000,000 verl
groups; about 18 GB of disk, written once into the cache folder and reused; minutes more). Other
sizes: ``--verl-groups N --trl-groups N --plain-groups N``. The figures depend on the machine and
its load: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from grpo_lab.testing.chromium import launch
from grpo_lab.testing.stats import percentile

GROUPS_PER_STEP_VERL = 1024
GROUPS_PER_FILE_TRL = 64
_CHILD = r"""
import json, resource, sys, time
import pandas, pyarrow.compute, pyarrow.json, pyarrow.parquet  # once per server (pyarrow's to_numpy imports pandas): not timed
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record
path, fmt, out = sys.argv[1:4]
t = time.perf_counter()
c = time.process_time()
rec = ingest(path, fmt, max_bytes=1 << 40, workers=int(sys.argv[4]))
ti, ci = time.perf_counter() - t, time.process_time() - c
t = time.perf_counter()
write_record(out, rec)
tw = time.perf_counter() - t
print(json.dumps({"ingest_s": ti, "ingest_cpu_s": ci, "write_s": tw, "groups": int(len(rec.groups["step"])),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
_OPEN = r"""
import json, resource, sys, time
t = time.perf_counter()
from grpo_lab.sims.record import read_record
from grpo_lab.replay.model import RunView
from grpo_lab.replay.grid import frames_data
t0, c0 = time.perf_counter(), time.process_time()
rec = read_record(sys.argv[1])
t1 = time.perf_counter()
view = RunView("bench", rec)
t2 = time.perf_counter()
frames = frames_data([view, None], view.steps)
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"read_s": t1 - t0, "view_s": t2 - t1, "frames_s": t3 - t2, "open_s": t3 - t0, "cpu_s": c3 - c0,
                  "import_s": t0 - t, "groups": int(len(rec.groups["step"])), "steps": int(len(view.steps)),
                  "prompts": int(rec.n_prompts), "frames_mb": len(json.dumps(frames)) / 1e6,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _pool(rng, n: int, chars: int) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz      0123456789+-=*."))
    return ["".join(rng.choice(letters, chars)) for _ in range(n)]


def make_verl(folder: Path, groups: int, G: int, chars: int, n_prompts: int, rng) -> list[Path]:
    """Rollout dump files ``{step}.jsonl`` in verl's shape (input, output, gts, score, step, acc) + metrics.jsonl."""
    (folder / "rollouts").mkdir(parents=True)
    outputs = _pool(rng, 64, chars)
    n_prompts = max(n_prompts, GROUPS_PER_STEP_VERL)
    files, metrics = [], []
    for step in range(1, -(-groups // GROUPS_PER_STEP_VERL) + 1):
        k = min(GROUPS_PER_STEP_VERL, groups - (step - 1) * GROUPS_PER_STEP_VERL)
        pids = rng.choice(n_prompts, k, replace=False)
        p = rng.random(k)
        acc = rng.random((k, G)) < p[:, None]
        out_idx = rng.integers(0, len(outputs), (k, G))
        lines = []
        for i, pid in enumerate(pids.tolist()):
            prompt = (f"<|im_start|>user\\nQuestion {pid}: a train leaves the station at {pid % 97} km/h; "
                      f"another follows. When does the second catch up? Reason step by step and put the final "
                      f"answer in a box.<|im_end|>\\n<|im_start|>assistant\\n")
            for j in range(G):
                a = bool(acc[i, j])
                lines.append(f'{{"input": "{prompt}", "output": "{outputs[out_idx[i, j]]}", "gts": "{pid * 7}", '
                             f'"score": {1.0 if a else 0.0}, "step": {step}, "acc": {"true" if a else "false"}}}')
        order = rng.permutation(len(lines))
        f = folder / "rollouts" / f"{step}.jsonl"
        f.write_text("\n".join(lines[o] for o in order) + "\n")
        files.append(f)
        metrics.append(json.dumps({"step": step, "data": {"critic/score/mean": float(acc.mean()),
                                                          "actor/kl_loss": 0.001}}))
    (folder / "rollouts" / "metrics.jsonl").write_text("\n".join(metrics) + "\n")
    return files + [folder / "rollouts" / "metrics.jsonl"]


def make_trl(folder: Path, groups: int, G: int, chars: int, rng) -> list[Path]:
    """``completions/completions_{step:05d}.parquet`` as TRL 1.16 writes them, and ``trainer_state.json``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "completions").mkdir(parents=True)
    outputs = np.array(_pool(rng, 64, chars), dtype=object)
    files, history = [], []
    for step in range(1, -(-groups // GROUPS_PER_FILE_TRL) + 1):
        k = min(GROUPS_PER_FILE_TRL, groups - (step - 1) * GROUPS_PER_FILE_TRL)
        pids = rng.integers(0, max(groups // 4, 1), k)
        prompts = np.repeat(np.array([f"Question {p}: what is {p} * 7? Think, then answer." for p in pids],
                                     dtype=object), G)
        correct = (rng.random((k, G)) < rng.random((k, 1))).astype(float).ravel()
        short = (rng.random(k * G) < 0.5).astype(float)
        total = (correct + short).reshape(k, G)
        std = total.std(axis=1, ddof=1, keepdims=True)
        adv = ((total - total.mean(axis=1, keepdims=True)) / (std + 1e-4)).ravel().astype(np.float32)
        table = pa.table({"step": np.full(k * G, step, np.int64), "prompt": prompts,
                          "completion": outputs[rng.integers(0, len(outputs), k * G)],
                          "correct": correct, "short": short, "advantage": adv.astype(float)})
        f = folder / "completions" / f"completions_{step:05d}.parquet"
        pq.write_table(table, f)
        files.append(f)
        history.append({"step": step, "loss": 0.1, "reward": float(total.mean()),
                        "frac_reward_zero_std": float(np.mean(std[:, 0] == 0)),
                        "rewards/correct/mean": float(correct.mean()), "rewards/short/mean": float(short.mean())})
    state = folder / "trainer_state.json"
    state.write_text(json.dumps({"global_step": len(history), "logging_steps": 1, "log_history": history}))
    return files + [state]


def make_plain(path: Path, groups: int, G: int, rng, per_step: int = 500) -> list[Path]:
    steps = np.arange(groups) // per_step
    pids = rng.integers(0, 5000, groups)
    rewards = (rng.random((groups, G)) < rng.random((groups, 1))).astype(int)
    with open(path, "w") as fh:
        for s, p, r in zip(steps.tolist(), pids.tolist(), rewards.tolist()):
            fh.write(json.dumps({"step": s, "prompt_id": f"p{p}", "rewards": r}) + "\n")
    return [path]


def baseline(files: list[Path]) -> tuple[float, float]:
    """(wall s, CPU s) of a plain reading of the same files: json.loads of every JSON line, pyarrow read_table of
    every parquet."""
    import pyarrow.parquet as pq

    t, c = time.perf_counter(), time.process_time()
    for f in files:
        if f.suffix == ".parquet":
            pq.read_table(f)
        elif f.suffix == ".json":
            json.loads(f.read_text())
        else:
            with open(f) as fh:
                for line in fh:
                    if line.strip():
                        json.loads(line)
    return time.perf_counter() - t, time.process_time() - c


def _child(code: str, *args: str) -> dict:
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cached(cache: Path | None, tmp: Path, key: str, make) -> tuple[Path, list[Path]]:
    """Inputs made by ``make(folder)`` (returns its files), in ``cache/key`` when a cache is given (made once: a
    ``.done`` file marks a complete folder; reused later), else in the temporary folder."""
    folder = (cache or tmp) / key
    done = folder / ".done"
    if cache is not None and done.exists():
        return folder, [folder / n for n in json.loads(done.read_text())]
    shutil.rmtree(folder, ignore_errors=True)
    t = time.perf_counter()
    files = make(folder)
    print(f"generated {key} in {time.perf_counter() - t:.0f} s", flush=True)
    if cache is not None:
        done.write_text(json.dumps([str(f.relative_to(folder)) for f in files]))
    return folder, files


def browser_open(records: list[tuple[str, Path]], presses: int) -> None:
    """(e): each record served alone in the Replay tab, opened and scrubbed in headless Chromium."""
    import importlib.util
    import statistics

    from playwright.sync_api import sync_playwright

    spec = importlib.util.spec_from_file_location("bench_replay", Path(__file__).with_name("bench_replay.py"))
    br = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(br)  # its page-side probe (INSTALL), server and percentiles
    print(f"Replay tab in Chromium: open = page request to the first readout; scrub = {presses} slider steps, "
          "ms p50 / p95 to the readout and to the next painted frame", flush=True)
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="bench-ingest-tab-") as tmp:
        browser = launch(pw)
        for i, (label, rec) in enumerate(records):
            root = Path(tmp) / str(i)
            shutil.copytree(rec, root / "run")
            srv, url = _serve(root)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                t, m0 = time.perf_counter(), _rss_mb()
                page.goto(url, timeout=300_000)
                page.wait_for_function(FIRST_READOUT, timeout=300_000, polling=50)
                opened, grew = time.perf_counter() - t, _rss_mb() - m0
                page.evaluate(br.INSTALL)
                handle = page.locator("#gx-step")
                handle.focus()
                page.evaluate("() => { __bench.js = []; __bench.frame = []; }")
                for _ in range(presses):
                    handle.press("ArrowRight")
                    page.wait_for_timeout(150)
                page.wait_for_timeout(500)
                r = page.evaluate("() => __bench")
                js, fr = r["js"], r["frame"]
                print(f"  {label:>22}: open {opened:6.2f} s (server memory +{grew:.0f} MB); scrub to readout {statistics.median(js):6.2f} / "
                      f"{percentile(js, 0.95):6.2f} ms, to frame {statistics.median(fr):6.2f} / {percentile(fr, 0.95):6.2f} ms "
                      f"(n = {len(js)})", flush=True)
            except Exception as exc:  # a loaded machine can stall the page: say so, go on
                print(f"  {label:>22}: did not complete: {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
            finally:
                page.close()
                srv.stop()
        browser.close()


def _rss_mb() -> float:
    """This process's resident memory (the served tab's sessions live in it), MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _serve(root: Path):
    """The Replay tab of the runs under ``root`` served on a free port, as bench_replay serves it (with its
    echo pane), but waited for with a bare TCP connect: an HTTP poll opens a session per try, and a try that
    times out while a big record's session is built leaves that session behind, then opens another."""
    import socket

    import panel as pn

    from grpo_lab.replay.view import ReplayView

    def app():
        view = ReplayView(runs_root=root)
        echo = pn.pane.HTML("", css_classes=["bench-echo"])
        view.slider.param.watch(lambda e: setattr(echo, "object", f"<span>{e.new}</span>"), "value")
        return pn.Column(view, echo)

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    srv = pn.serve(app, port=port, address="127.0.0.1", threaded=True, show=False,
                   websocket_origin=[f"127.0.0.1:{port}"])
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    return srv, f"http://127.0.0.1:{port}/"


#: true once the replay-step readout shows a step (the grid has its frames)
FIRST_READOUT = """() => {
  let found = false;
  const walk = (root) => root.querySelectorAll('*').forEach((el) => {
    if (el.classList && el.classList.contains('replay-step') && el.textContent.trim() !== '') found = true;
    if (el.shadowRoot) walk(el.shadowRoot);
  });
  walk(document);
  return found;
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the sizes of issue 15: 1,000,000 verl groups (about 18 GB)")
    ap.add_argument("--verl-groups", type=int, default=None, help="default 100,000 (1,000,000 with --full)")
    ap.add_argument("--trl-groups", type=int, default=100_000)
    ap.add_argument("--plain-groups", type=int, default=100_000)
    ap.add_argument("--G", type=int, default=8)
    ap.add_argument("--chars", type=int, default=2000, help="characters per response")
    ap.add_argument("--prompts", type=int, default=17_398,
                    help="verl: size of the prompt set the steps draw from (default: that of DAPO-Math-17k)")
    ap.add_argument("--workers", type=int, default=1, help="as grpo-lab ingest --workers (processes)")
    ap.add_argument("--browser", action="store_true", help="also open each record in the Replay tab in Chromium")
    ap.add_argument("--presses", type=int, default=30, help="--browser: slider steps scrubbed per record")
    ap.add_argument("--cache", help="keep the generated inputs in this folder and reuse them in later runs "
                                    "(default: a temporary folder, removed at the end)")
    args = ap.parse_args()
    verl_groups = args.verl_groups if args.verl_groups is not None else 1_000_000 if args.full else 100_000
    cache = Path(args.cache) if args.cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        tmp = Path(tmp)
        cases = []
        G, chars = args.G, args.chars
        if verl_groups:
            folder, files = _cached(cache, tmp, f"verl-{verl_groups}-G{G}-c{chars}-p{args.prompts}",
                                    lambda d: make_verl(d, verl_groups, G, chars, args.prompts,
                                                        np.random.default_rng(0)))
            cases.append(("verl", folder / "rollouts", files, verl_groups))
        if args.trl_groups:
            folder, files = _cached(cache, tmp, f"trl-{args.trl_groups}-G{G}-c{chars}",
                                    lambda d: make_trl(d, args.trl_groups, G, chars, np.random.default_rng(1)))
            cases.append(("trl", folder, files, args.trl_groups))
        if args.plain_groups:
            folder, files = _cached(cache, tmp, f"plain-{args.plain_groups}",
                                    lambda d: (d.mkdir(parents=True), make_plain(d / "groups.jsonl", args.plain_groups,
                                                                                 4, np.random.default_rng(2)))[1])
            cases.append(("jsonl", folder / "groups.jsonl", files, args.plain_groups))
        print(f"{'format':>6}  {'groups':>9}  {'MB':>7}  {'baseline s':>10}  {'ingest s':>8}  {'baseline CPU s':>14}  "
              f"{'ingest CPU s':>12}  {'groups/s':>9}  {'baseline groups/s':>17}  {'peak MB':>7}  {'write s':>7}",
              flush=True)
        records = {}
        for fmt, path, files, groups in cases:
            mb = sum(f.stat().st_size for f in files) / 1e6
            tb, cb = baseline(files)
            records[fmt] = tmp / f"rec-{fmt}"
            r = _child(_CHILD, str(path), fmt, str(records[fmt]), str(args.workers))
            assert r["groups"] == groups, (r["groups"], groups)
            print(f"{fmt:>6}  {groups:9d}  {mb:7.0f}  {tb:10.1f}  {r['ingest_s']:8.1f}  {cb:14.1f}  "
                  f"{r['ingest_cpu_s']:12.1f}  {groups / r['ingest_s']:9.0f}  {groups / tb:17.0f}  "
                  f"{r['peak_rss_mb']:7.0f}  {r['write_s']:7.1f}", flush=True)
        small = tmp / "small"
        make_plain(small.with_suffix(".jsonl"), 1000, 4, np.random.default_rng(3), per_step=10)  # 100 steps
        _child(_CHILD, str(small.with_suffix(".jsonl")), "jsonl", str(small), "1")
        print("Replay tab, server side: read_record + RunView + frames_data (s), CPU s, frames sent (MB), peak MB",
              flush=True)
        for label, rec in [("1,000 groups, 100 steps", small)] + [(f"{fmt} record", records[fmt]) for fmt in records]:
            o = _child(_OPEN, str(rec))
            print(f"  {label:>22}: {o['groups']:8d} groups, {o['steps']:5d} steps, {o['prompts']:6d} prompts: "
                  f"open {o['open_s']:.2f} s = {o['read_s']:.2f} + {o['view_s']:.2f} + {o['frames_s']:.2f}, "
                  f"CPU {o['cpu_s']:.2f} s, frames {o['frames_mb']:.1f} MB, peak {o['peak_rss_mb']:.0f} MB "
                  f"(imports {o['import_s']:.1f} s, once per server)", flush=True)
        if args.browser:
            browser_open([("1,000 groups, 100 steps", small)] + [(f"{fmt} record", records[fmt]) for fmt in records],
                         args.presses)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main()
