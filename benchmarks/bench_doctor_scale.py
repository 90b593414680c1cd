"""The doctor at scale: a 10,000-step and a 1,000,000-step tracker log, read and diagnosed, beside a baseline.

Writes (once per size, in a temporary folder) a tinker-cookbook ``metrics.jsonl`` (``env/all/by_group/frac_all_good``,
``frac_all_bad``, ``frac_mixed`` and ``env/all/reward/total`` per step, K = 8, 64 groups a step, with its
``config.json``), the shares drawn as binomial counts from a Beta(2, 3) population under a logit drift (so the
fit has something to find). Then, for this checkout and for the baseline (``--baseline REF``, default ``main``:
its ``lab/`` and ``sims/`` exported with ``git archive`` into a temporary package, the repository untouched), each
in a fresh child process: ``read_scalars`` (ingest), ``diagnose`` (the doctor's whole answer), and the size of
``--json``'s output (``jsonable`` then ``json.dumps``), with wall and CPU seconds.

Targets (issue 39): 10,000 steps under 10 s, 1,000,000 steps under 60 s with a JSON under 5 MB, on 2 cores. The
baseline is given ``--baseline-timeout`` seconds (default 180) per size and printed as "over N s" beyond.

Run: ``python benchmarks/bench_doctor_scale.py [--sizes 10000 1000000] [--baseline main] [--cap] [--not-binary]``;
``--not-binary`` writes a shaped reward (the mean leaves [0, 1]), so the doctor forecasts the tie share; ``--cap``
diagnoses with a dynamic-sampling trainer config (:data:`CAPPED`), so the stall forecast and its risk are computed
(and the first stall said, the risk's where it is available, is printed). The load average is
printed beside the figures (the development machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from grpo_lab.sims.ingest.trackers import read_scalars
from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.jsonable import jsonable
rec = read_scalars(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
d = diagnose(rec, trainer_config=json.loads(sys.argv[2]) if len(sys.argv) > 2 else None)
t2, c2 = time.perf_counter(), time.process_time()
size = len(json.dumps(jsonable(d)))
t3 = time.perf_counter()
risk = (d.get("stall_forecast") or {}).get("risk") or {}
print(json.dumps({"steps": len(rec.steps["step"]), "ingest_s": t1 - t0, "diagnose_s": t2 - t1, "json_s": t3 - t2,
                  "cpu_s": time.process_time() - c0, "json_bytes": size,
                  "stall_s": (d.get("timings") or {}).get("stall"),
                  "risk": risk.get("first_stall") if risk.get("available") else risk.get("reason"),
                  "when_stall": {k: d["when"]["stall"].get(k) for k in ("step", "interval", "level")}}))
"""


#: ``--cap``'s trainer config: 3 rounds of 64 prompts for 40 mixed groups (the log's 64 groups a step)
CAPPED = {"trainer": "verl", "gen_batch": 64, "train_batch": 40, "cap": 3, "pool": None, "K": 8, "enable": True}


def write_log(folder: Path, steps: int, seed: int = 0, not_binary: bool = False) -> Path:
    import numpy as np
    from scipy.special import expit, logit

    rng = np.random.default_rng(seed)
    K, G = 8, 64
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_name": "m", "group_size": K, "groups_per_batch": G}))
    # a Beta(2, 3) population under a logit drift of 2 over the run; the step's shares drawn from its exact
    # all-pass / all-fail probabilities (Monte Carlo over 4,000 prompts at 256 times, interpolated)
    p0 = rng.beta(2.0, 3.0, 4000)
    at = np.linspace(0.0, 1.0, 256)
    q = expit(logit(p0)[None, :] + 2.0 * at[:, None])
    ap_t, af_t = np.mean(q**K, 1), np.mean((1 - q) ** K, 1)
    t = np.arange(steps) / max(steps - 1, 1)
    ap, af = np.interp(t, at, ap_t), np.interp(t, at, af_t)
    counts = rng.multinomial(G, np.stack([ap, af, 1 - ap - af], 1)) / G
    mean = np.interp(t, at, q.mean(1))
    # --not-binary: a shaped reward, 1.5 x pass + 0.2, whose mean leaves [0, 1] once the pass rate passes 0.53: the
    # doctor reads the rewards as not binary and forecasts the tie share with its own trend (sims/doctor/tie_trend.py)
    reward = 1.5 * mean + 0.2 if not_binary else mean
    with open(folder / "metrics.jsonl", "w") as f:
        for i in range(steps):
            f.write(json.dumps({"step": i + 1, "env/all/by_group/frac_all_good": counts[i, 0],
                                "env/all/by_group/frac_all_bad": counts[i, 1],
                                "env/all/by_group/frac_mixed": counts[i, 2],
                                "env/all/reward/total": round(float(reward[i]), 6)}) + "\n")
    return folder


def baseline_package(ref: str, into: Path) -> Path:
    """``ref``'s lab/ and sims/ as an importable ``grpo_lab`` package under ``into`` (git archive; nothing checked out)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "lab", "sims"], capture_output=True, check=True).stdout
    src = into / "src"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(src, filter="data")
    pkg = into / "pkg"
    (pkg).mkdir()
    os.rename(src / "lab", pkg / "grpo_lab")
    os.rename(src / "sims", pkg / "grpo_lab" / "sims")
    return pkg


def run_child(log: Path, pythonpath: str | None, timeout: float, settings: dict | None = None) -> dict | str:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(log), *([json.dumps(settings)] if settings else [])],
                             capture_output=True, text=True,
                             timeout=timeout, env=env, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return f"over {timeout:.0f} s"
    if out.returncode:
        return "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(r) -> str:
    if isinstance(r, str):
        return r
    out = (f"ingest {r['ingest_s']:.2f} s + diagnose {r['diagnose_s']:.2f} s = "
           f"{r['ingest_s'] + r['diagnose_s']:.2f} s wall ({r['cpu_s']:.2f} s CPU); JSON {r['json_bytes'] / 1e6:.2f} MB "
           f"(dumped in {r['json_s']:.2f} s)")
    if r.get("when_stall", {}).get("level") is not None:  # with --cap: the first stall said and the risk
        out += (f"; stall section {r['stall_s']:.2f} s; first stall said {r['when_stall']['step']} "
                f"{r['when_stall']['interval']} ({r['when_stall']['level']:g}); risk: {r['risk']}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--baseline", default="main", help="git ref of the baseline (default main)")
    ap.add_argument("--baseline-timeout", type=float, default=180.0)
    ap.add_argument("--cap", action="store_true", help="diagnose with a dynamic-sampling trainer config (verl, "
                    f"{CAPPED}): the stall forecast and its risk")
    ap.add_argument("--not-binary", action="store_true", help="a shaped reward (1.5 x pass + 0.2): the doctor reads "
                    "the rewards as not binary and forecasts the tie share with its own trend")
    args = ap.parse_args()
    settings = CAPPED if args.cap else None
    print(f"cores visible: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine)")
    targets = {10_000: (10.0, None), 1_000_000: (60.0, 5e6)}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = baseline_package(args.baseline, tmp / "baseline") if args.baseline else None
        for n in args.sizes:
            log = write_log(tmp / f"log{n}", n, not_binary=args.not_binary)
            mine = run_child(log, None, 600.0, settings)
            t, mb = targets.get(n, (None, None))
            verdict = ""
            if isinstance(mine, dict) and t is not None:
                wall = mine["ingest_s"] + mine["diagnose_s"]
                verdict = f"  [target {t:g} s: {'met' if wall < t else 'missed'}" + (
                    f"; JSON under {mb / 1e6:g} MB: {'met' if mine['json_bytes'] < mb else 'missed'}]" if mb else "]")
            print(f"{n:,} steps, this checkout: {fmt(mine)}{verdict}; load {os.getloadavg()[0]:.2f}")
            if base is not None:
                print(f"{n:,} steps, baseline {args.baseline}: {fmt(run_child(log, str(base), args.baseline_timeout, settings))}; "
                      f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
