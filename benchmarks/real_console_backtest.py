"""Back-test the doctor on a folder of TRL console logs that cannot be shipped (no licence): one line a run.

Reproduces docs/doctor.md's figures on Sunshine535/nips-grpo-dynamics @ 2cd2efc (GSM8K, Qwen2.5-7B-Instruct, one 0/1
reward function, K = 2, ``per_device_train_batch_size`` 2, ``gradient_accumulation_steps`` 2): fetch the repository,
copy its ``results/logs/exp1a/*.log`` and ``results/logs/exp2/*.log`` into a folder, then::

    python benchmarks/real_console_backtest.py FOLDER --num-generations 2 --set per_device_train_batch_size=2 \\
        --set gradient_accumulation_steps=2

Each log is read as ``grpo-lab ingest`` reads it (:mod:`grpo_lab.sims.ingest.trackers.console`) and diagnosed with
``--backtest``; the pooled line sums the rows held and scored.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from grpo_lab.sims.doctor.scalars_diagnose import diagnose_scalars
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.ingest.trackers import list_runs, read_scalars


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder")
    p.add_argument("--num-generations", type=int, required=True)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a config key (int)")
    args = p.parse_args(argv)
    config = {k: int(v) for k, v in (s.split("=", 1) for s in args.set)}
    held = scored = 0
    for f in sorted(Path(args.folder).rglob("*.log")):
        for run in list_runs(f, "console")[1]:
            t0 = time.process_time()
            try:
                rec = read_scalars(f, fmt="console", run=run, num_generations=args.num_generations, config=config)
                bt = diagnose_scalars(rec, backtest=True).get("backtest") or {}
            except InputError as exc:
                print(f"{run}: {exc}")
                continue
            if bt.get("available"):
                held, scored = held + bt["held"], scored + bt["scored"]
            print(f"{run}: {rec.meta['source']['groups_per_row']['value']} groups a row, {len(rec.steps['step'])} rows, "
                  f"held {bt.get('held')} of {bt.get('scored')} ({bt.get('model')}), {time.process_time() - t0:.1f} s CPU",
                  flush=True)
    print(f"pooled: {held} of {scored} ({held / max(scored, 1):.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
