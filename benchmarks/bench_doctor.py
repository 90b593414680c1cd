"""Benchmark: `grpo-lab diagnose` on a 100,000-group record (target: under 5 s on 2 cores), and with everything on
on a 1,000,000-group record (``--groups 1000000``: target under 60 s on 2 cores, bounded memory).

Builds a synthetic run (default 100,000 groups: 500 steps x 200 groups, K = 8, 5,000 prompts
whose pass rates rise on the logit scale), writes it as a record in a temporary folder, then
times reading it and diagnosing it (wall clock, and this process's CPU time, which other jobs on a
shared machine inflate far less), with each stage's share (``fit`` = the beta-binomial fits,
windows included). For a baseline measured in the same run it also times one pass of
``grpo_lab.sims.record.summarise`` (what ``grpo-lab inspect`` does) on the same record. The
machine is shared: read the figures beside that baseline.

Issue 26 adds stages to the same ``diagnose`` call (the prompt-level bootstrap ``intervals``, the ``audit`` of
the logged metrics; the sampler comparison, stall forecast and transitions once merged): the benchmark calls
the full ``diagnose``, so it covers whatever stages it has, and splits its time into the stages ``diagnose``
had before issue 26 (fit, correlation, what_if, forecast, skip, prompts: today's diagnose, timed in the same
call) and the ones added since, each with its cost. The record carries TRL-style logged scalars
(``frac_reward_zero_std``, ``reward_std``, ``reward``) so that the audit has figures to check. Peak memory: the
process's peak resident set size (``getrusage``) after reading the record and after diagnosing it.

    python benchmarks/bench_doctor.py [--groups 100000] [--K 8] [--repeats 3] [--prompts 5000] [--per-step 200]
    python benchmarks/bench_doctor.py --groups 1000000 --per-step 2000 --repeats 1
    python benchmarks/bench_doctor.py --groups 200000 --repeats 1 --stall   # issue 32: with the stall risk (< 30 s)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import tempfile
import time

import numpy as np
from scipy.special import expit

from grpo_lab.sims.doctor import diagnose
from grpo_lab.sims.record import RunRecord, read_record, summarise, write_record

TARGET_S = 5.0
TARGET_1M_S = 60.0  #: issue 26: everything on a 1M-group record
TARGET_STALL_S = 30.0  #: issue 32: diagnose with the stall risk's bootstrap on a 200,000-group record
#: issue 32's --stall: verl's DAPO keys (128 trained groups from rounds of 200 prompts, cap 4)
STALL_CONFIG = {"trainer": "verl", "gen_batch": 200, "train_batch": 128, "cap": 4, "pool": None, "K": None,
                "enable": True, "source": "bench_doctor", "note": None}
BEFORE_26 = ("fit", "correlation", "what_if", "forecast", "skip", "prompts")  #: diagnose's stages before issue 26


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic_record(n_groups: int, K: int, n_prompts: int = 5000, per_step: int = 200, seed: int = 0) -> RunRecord:
    rng = np.random.default_rng(seed)
    steps = n_groups // per_step
    step = np.repeat(np.arange(steps), per_step)
    pid = rng.integers(0, n_prompts, n_groups)
    alpha = rng.normal(-0.5, 2.0, n_prompts)
    p = expit(alpha[pid] + 2.0 * step / max(steps - 1, 1))
    rewards = (rng.random((n_groups, K)) < p[:, None]).astype(float)
    groups = {"step": step.astype(np.int64), "prompt_id": pid.astype(np.int64), "rewards": rewards,
              "advantages": np.full_like(rewards, np.nan), "lengths": np.full(rewards.shape, -1, np.int64),
              "kept": np.ones(n_groups, bool)}
    meta = {"name": f"synthetic-{n_groups}", "n_prompts": n_prompts, "num_generations": K}
    # TRL-style logged scalars (what GRPOTrainer logs per step), for the audit to recompute
    st = np.arange(steps)
    zero = np.bincount(step, weights=(rewards.min(axis=1) == rewards.max(axis=1)), minlength=steps) / per_step
    mean = np.bincount(step, weights=rewards.mean(axis=1), minlength=steps) / per_step
    sd = np.sqrt(np.maximum(mean * (1 - mean) * per_step * K / (per_step * K - 1), 0))
    steps_tab = {"step": st.astype(np.int64), "scalar/frac_reward_zero_std": zero, "scalar/reward": mean,
                 "scalar/reward_std": sd}
    return RunRecord(meta=meta, groups=groups, steps=steps_tab)


def _write(path, n_groups, K, n_prompts, per_step) -> None:
    write_record(path, synthetic_record(n_groups, K, n_prompts, per_step))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100_000)
    ap.add_argument("--K", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=5000)
    ap.add_argument("--per-step", type=int, default=200)
    ap.add_argument("--stall", action="store_true", help="also diagnose with a verl config (the stall risk)")
    args = ap.parse_args()
    target = TARGET_1M_S if args.groups >= 1_000_000 else TARGET_S
    print(f"cores visible: {os.cpu_count()}; load average {os.getloadavg()[0]:.2f} (shared machine: figures under load)")
    with tempfile.TemporaryDirectory() as tmp:
        # written by a child process, so that this one's peak memory is reading and diagnosing only
        child = multiprocessing.get_context("spawn").Process(
            target=_write, args=(tmp, args.groups, args.K, args.prompts, args.per_step))
        child.start()
        child.join()
        print(f"record: {args.groups:,} groups, K = {args.K}, {args.prompts:,} prompts, {args.per_step} groups a step; "
              f"peak RSS before reading it {_peak_mb():.0f} MB")
        for i in range(args.repeats):
            c0, t0 = time.process_time(), time.perf_counter()
            rec = read_record(tmp)
            t1 = time.perf_counter()
            rss_read = _peak_mb()
            d = diagnose(rec)
            c2, t2 = time.process_time(), time.perf_counter()
            summarise(rec)
            t3 = time.perf_counter()
            total = t2 - t0
            tm = d["timings"]
            shares = ", ".join(f"{k} {v:.2f} s ({v / tm['total']:.0%})" for k, v in tm.items() if k != "total")
            before = sum(tm.get(k, 0.0) for k in BEFORE_26)
            added = {k: v for k, v in tm.items() if k not in BEFORE_26 and k != "total"}
            print(f"run {i + 1}: read {t1 - t0:.2f} s + diagnose {t2 - t1:.2f} s = {total:.2f} s wall, "
                  f"{c2 - c0:.2f} s CPU (target {target:g} s: {'met' if total < target else 'MISSED'} on the "
                  f"wall clock); baseline summarise {t3 - t2:.2f} s; load average {os.getloadavg()[0]:.1f}")
            print(f"  stages: {shares}; fitting's share {tm['fit'] / tm['total']:.0%}")
            print(f"  today's diagnose (the stages before issue 26, same call): {before:.2f} s; added by issue 26: "
                  + (", ".join(f"{k} {v:.2f} s" for k, v in added.items()) or "nothing yet"))
            print(f"  peak RSS: {rss_read:.0f} MB after reading, {_peak_mb():.0f} MB after diagnosing")
            if args.stall:  # issue 32: the same call with a verl config, so that the stall risk's bootstrap runs
                c3, t4 = time.process_time(), time.perf_counter()
                d2 = diagnose(rec, trainer_config=STALL_CONFIG)
                c4, t5 = time.process_time(), time.perf_counter()
                fs = d2["stall_forecast"]["risk"]["first_stall"]
                print(f"  with a verl config (stall risk, {d2['stall_forecast']['risk']['draws']} bootstrap draws): "
                      f"diagnose {t5 - t4:.2f} s wall, {c4 - c3:.2f} s CPU (target {TARGET_STALL_S:g} s: "
                      f"{'met' if t5 - t4 < TARGET_STALL_S else 'MISSED'}; without it, above: {t2 - t1:.2f} s); "
                      f"stall + transitions stages {d2['timings']['stall'] + d2['timings']['cost_transitions']:.2f} s; "
                      f"first stall {fs['median']} {fs['interval']}")
                del d2
            del rec, d


if __name__ == "__main__":
    main()
