"""``grpo-lab fleet DIR``: every run of a folder ranked by its forecast stall or expiry (see :mod:`grpo_lab.fleet`).

Prints one line a run (rank, run, kind, steps, mixed share at the last step, the forecast ranked on with its
interval and where it comes from, a sparkline of the mixed share), or ``--json``. The forecast is the doctor's (what
``grpo-lab diagnose RUN --json`` says under ``when``, with the same ``--trainer-config``, batch flags and
``--threshold``): each run is diagnosed once per version and the result kept in the user's cache folder
(:mod:`grpo_lab.fleet_doctor`), so a second listing diagnoses only the runs that changed. ``--quick`` skips the doctor
and ranks on the trend of the mixed share alone, each row labelled ``trend (quick)``. With ``--watch N`` it looks
again N times, every ``--interval`` seconds, reading only what each run appended, and prints the table each time
with what the look read.
"""

from __future__ import annotations

import argparse
import os
import time

from ._args import add_trainer_config_arguments, trainer_settings
from ._io import print_json

__all__ = ["register"]


def register(sub) -> None:
    from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD

    p = sub.add_parser("fleet", help="every run of a folder, ranked by when it will stop learning",
                       description="List every run in DIR (run records with groups or scalars, tracker logs: "
                                   "TensorBoard, W&B, metrics.jsonl, MLflow, trackio) ranked by the forecast step at "
                                   "which its dynamic sampling first stalls (given the loop's settings) or its mixed "
                                   "share crosses the threshold, each with its 95%% interval and a sparkline of the "
                                   "mixed share. The forecast is the doctor's (grpo-lab diagnose's "
                                   "\"when\"), kept in the user's cache folder between listings; --quick ranks on "
                                   "a quick trend of the mixed share instead, labelled as such.")
    p.add_argument("folder", help="the folder of runs")
    p.add_argument("--json", action="store_true", help="print the ranked runs as JSON")
    p.add_argument("--quick", action="store_true",
                   help="rank on a quick logistic trend of each run's mixed share, without the doctor (labelled "
                        "'trend (quick)'; a fraction of a second for fifty runs)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="runs diagnosed at once, each in a process of its own (default: the CPU cores)")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"mixed share the expiry forecast watches (default {DEFAULT_THRESHOLD:g})")
    p.add_argument("--watch", type=int, default=0, metavar="N",
                   help="look again N more times, reading only what the runs appended (default 0)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between looks with --watch (default 10)")
    add_trainer_config_arguments(p)
    p.set_defaults(func=cmd_fleet)


def cmd_fleet(args: argparse.Namespace) -> int:
    from grpo_lab.fleet import Fleet, row_text
    from grpo_lab.sims.errors import InputError

    if not 0.0 < args.threshold < 1.0:
        raise InputError(f"--threshold must lie strictly between 0 and 1, got {args.threshold!r}")
    if args.watch < 0 or args.interval < 0:
        raise InputError("--watch and --interval must be >= 0")
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {args.jobs}")
    from grpo_lab.fleet_doctor import DoctorCache

    cache = None if args.quick else DoctorCache.user()
    fleet = Fleet(args.folder, settings=trainer_settings(args), threshold=args.threshold,
                  doctor="off" if args.quick else "now", cache=cache, jobs=args.jobs or os.cpu_count() or 1)
    for look in range(args.watch + 1):
        if look:
            time.sleep(args.interval)
        rows = fleet.refresh()
        if cache is not None:
            cache.prune()
        if args.json:
            print_json({"folder": args.folder, "look": look, "runs": rows, "read": fleet.stats})
            continue
        s = fleet.stats
        print(f"{s['runs']} runs in {args.folder}; read {s['read']} ({s['bytes_read']:,} bytes), diagnosed "
              f"{s['diagnosed']} in {s['seconds']:.2f} s")
        print(f"{'#':>3}  {'run':<44} {'kind':<22} {'steps':>6}  {'mixed':>6}  {'forecast [interval] (from)':<56} "
              "mixed share")
        for i, row in enumerate(rows, 1):
            print(row_text(i, row))
    return 0
