"""Ingest speed and memory at the size real runs reach, each beside a plain reading of the same files.

Generates, in a temporary folder (never committed):

- a verl rollout dump of ``--verl-groups`` groups (default 1,000,000; G = 8; responses of
  ``--chars`` characters, default 2,000; 1,024 groups per step file, rows shuffled as
  ``balance_batch`` does) and a file-logger ``metrics.jsonl``;
- a TRL output folder of ``--trl-groups`` groups (default 100,000; G = 8; 64 groups per
  ``completions_*.parquet``, completions of ``--chars`` characters, two reward columns,
  advantages) and its ``trainer_state.json``;
- a plain group JSONL of ``--plain-groups`` groups (default 100,000; G = 4).

Then, for each: (a) the baseline, a plain reading of every file (``json.loads`` of every
line for JSONL; ``pyarrow.parquet.read_table`` of every column plus ``json.loads`` of the
state for TRL), (b) ``grpo-lab``'s ingest in a child process (wall time and its peak
resident memory), (c) writing the record, and for the verl record (d) reading it back and
building the Replay tab's model of it (``lab.replay.model.RunView``, the server side of
opening the record in the Replay tab). Prints one row per format.

Run: ``nice -n 10 python benchmarks/bench_ingest.py [--verl-groups N] [--trl-groups N] [--keep DIR]``.
The figures depend on the machine and its load: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

GROUPS_PER_STEP_VERL = 1024
GROUPS_PER_FILE_TRL = 64
_CHILD = r"""
import json, resource, sys, time
from grpo_lab.sims.ingest import ingest
from grpo_lab.sims.record import write_record
path, fmt, out = sys.argv[1:4]
t = time.perf_counter()
rec = ingest(path, fmt, max_bytes=1 << 40, workers=int(sys.argv[4]))
ti = time.perf_counter() - t
t = time.perf_counter()
write_record(out, rec)
tw = time.perf_counter() - t
print(json.dumps({"ingest_s": ti, "write_s": tw, "groups": int(len(rec.groups["step"])),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
_OPEN = r"""
import json, resource, sys, time
t = time.perf_counter()
from grpo_lab.sims.record import read_record
from grpo_lab.replay.model import RunView
t0 = time.perf_counter()
rec = read_record(sys.argv[1])
t1 = time.perf_counter()
view = RunView("bench", rec)
t2 = time.perf_counter()
print(json.dumps({"read_s": t1 - t0, "view_s": t2 - t1, "import_s": t0 - t,
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


def make_plain(path: Path, groups: int, G: int, rng) -> list[Path]:
    steps = np.arange(groups) // 500
    pids = rng.integers(0, 5000, groups)
    rewards = (rng.random((groups, G)) < rng.random((groups, 1))).astype(int)
    with open(path, "w") as fh:
        for s, p, r in zip(steps.tolist(), pids.tolist(), rewards.tolist()):
            fh.write(json.dumps({"step": s, "prompt_id": f"p{p}", "rewards": r}) + "\n")
    return [path]


def baseline(files: list[Path]) -> float:
    """A plain reading of the same files: json.loads of every JSON line, pyarrow read_table of every parquet."""
    import pyarrow.parquet as pq

    t = time.perf_counter()
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
    return time.perf_counter() - t


def _child(code: str, *args: str) -> dict:
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verl-groups", type=int, default=1_000_000)
    ap.add_argument("--trl-groups", type=int, default=100_000)
    ap.add_argument("--plain-groups", type=int, default=100_000)
    ap.add_argument("--G", type=int, default=8)
    ap.add_argument("--chars", type=int, default=2000, help="characters per response")
    ap.add_argument("--prompts", type=int, default=17_398,
                    help="verl: size of the prompt set the steps draw from (default: that of DAPO-Math-17k)")
    ap.add_argument("--workers", type=int, default=1, help="as grpo-lab ingest --workers")
    ap.add_argument("--keep", help="generate into this folder and keep it (default: a temporary folder)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        cases = []
        if args.verl_groups:
            t = time.perf_counter()
            files = make_verl(root / "verl", args.verl_groups, args.G, args.chars, args.prompts, rng)
            print(f"generated verl: {args.verl_groups} groups in {time.perf_counter() - t:.0f} s", flush=True)
            cases.append(("verl", root / "verl" / "rollouts", files, args.verl_groups))
        if args.trl_groups:
            files = make_trl(root / "trl", args.trl_groups, args.G, args.chars, rng)
            cases.append(("trl", root / "trl", files, args.trl_groups))
        if args.plain_groups:
            files = make_plain(root / "groups.jsonl", args.plain_groups, 4, rng)
            cases.append(("jsonl", root / "groups.jsonl", files, args.plain_groups))
        print(f"{'format':>6}  {'groups':>9}  {'MB':>8}  {'baseline s':>10}  {'ingest s':>9}  {'groups/s':>9}  "
              f"{'baseline groups/s':>17}  {'ingest peak MB':>14}  {'write s':>7}", flush=True)
        for fmt, path, files, groups in cases:
            mb = sum(f.stat().st_size for f in files) / 1e6
            tb = baseline(files)
            r = _child(_CHILD, str(path), fmt, str(root / f"rec-{fmt}"), str(args.workers))
            assert r["groups"] == groups, (r["groups"], groups)
            print(f"{fmt:>6}  {groups:9d}  {mb:8.0f}  {tb:10.1f}  {r['ingest_s']:9.1f}  {groups / r['ingest_s']:9.0f}  "
                  f"{groups / tb:17.0f}  {r['peak_rss_mb']:14.0f}  {r['write_s']:7.1f}", flush=True)
        if args.verl_groups:
            o = _child(_OPEN, str(root / "rec-verl"))
            print(f"replay open of the {args.verl_groups}-group record: read_record {o['read_s']:.2f} s, "
                  f"RunView {o['view_s']:.2f} s (imports {o['import_s']:.1f} s, peak {o['peak_rss_mb']:.0f} MB)")


if __name__ == "__main__":
    main()
