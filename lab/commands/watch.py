"""``grpo-lab watch``: follow a tracker log still being written and warn before the run's dynamic sampling stalls.

Every ``--interval`` seconds it re-reads the log (a TensorBoard dir, a W&B offline folder, a metrics.jsonl;
a cut last record is left for the next poll) when its files changed, and for each new step prints the
forecast stall step with its 95% interval (:class:`grpo_lab.sims.doctor.scalars_watch.StallWatch`); a
WARNING line when the forecast stall is at most ``--warn-steps`` steps ahead. It stops after ``--max-polls``
polls (0: until interrupted), exit status 0; bad input is one line, exit 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from grpo_lab.sims.errors import InputError

from ._args import add_trainer_config_arguments, trainer_settings

__all__ = ["register", "watch", "read_tracker", "signature"]

DEFAULT_INTERVAL = 10.0  #: seconds between two polls


def register(sub) -> None:
    from grpo_lab.sims.doctor.scalars_watch import DEFAULT_WARN_STEPS

    p = sub.add_parser("watch", help="follow a tracker log while the run trains and warn before its stall",
                       description="Follow a tracker log that is still being written (TensorBoard dir, W&B offline "
                                   "folder, metrics.jsonl) and print, as each step lands, the forecast step at which "
                                   "dynamic sampling first exceeds its cap, with its 95% interval, and a warning a "
                                   "chosen number of steps before it.")
    p.add_argument("path", help="the tracker's log folder or file")
    add_trainer_config_arguments(p)
    p.add_argument("--format", default="auto", help="tracker format (default auto: detected from the files)")
    p.add_argument("--run", default=None, help="the run to follow where the folder holds several")
    p.add_argument("--num-generations", type=int, default=None, help="K where neither the log nor the config says it")
    p.add_argument("--groups-per-step", type=int, default=None,
                   help="groups each step's shares are over (default: the log's, else the config's generation batch)")
    p.add_argument("--warn-steps", type=int, default=DEFAULT_WARN_STEPS,
                   help=f"warn this many steps before the forecast stall (default {DEFAULT_WARN_STEPS})")
    p.add_argument("--interval", type=float, default=DEFAULT_INTERVAL,
                   help=f"seconds between polls (default {DEFAULT_INTERVAL:g})")
    p.add_argument("--max-polls", type=int, default=0, help="stop after this many polls (default 0: never)")
    p.set_defaults(func=cmd_watch)


def read_tracker(path, *, fmt: str = "auto", run=None, num_generations=None):
    """The run's scalars-only record (:func:`grpo_lab.sims.ingest.trackers.read_scalars`), tolerating a file still
    being written."""
    from grpo_lab.sims.ingest.trackers import read_scalars

    return read_scalars(path, fmt=fmt, run=run, num_generations=num_generations, partial_ok=True)


def signature(path) -> tuple:
    """(name, size, mtime) of every file under ``path`` (or of the file): a poll re-reads when it changes."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file())
    out = []
    for f in files[:10_000]:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _line(ev: dict) -> str:
    head = f"step {ev['step']}:"
    fc = ev.get("forecast")
    if fc is None:
        return f"{head} {ev.get('reason', 'no forecast')}"
    from grpo_lab.doctor_report.when import stall_words

    return (f"{head} forecast stall (first step over the cap) {stall_words(fc)}; cause {fc['cause']}; mixed share now "
            f"{100 * ev['fit']['mixed_now']:.1f}% (fit); P(stall) next step {100 * fc['p_stall_next']:.1f}%")


def watch(path, settings: dict, *, fmt: str = "auto", run=None, num_generations=None, groups_per_step=None,
          warn_steps: int = 20, interval: float = DEFAULT_INTERVAL, max_polls: int = 0, write=print,
          sleep=time.sleep) -> list[dict]:
    """Poll ``path`` and write one line per new step (see the module docstring); returns the events."""
    from grpo_lab.sims.doctor.scalars_watch import StallWatch

    if not Path(path).exists():
        raise InputError(f"{str(path)!r} does not exist")
    if interval < 0 or max_polls < 0:
        raise InputError("--interval and --max-polls must be >= 0")
    w = StallWatch(settings, warn_steps=warn_steps, num_generations=num_generations, groups_per_step=groups_per_step)
    seen, events, polls = None, [], 0
    while True:
        sig = signature(path)
        if sig != seen:
            seen = sig
            try:
                record = read_tracker(path, fmt=fmt, run=run, num_generations=num_generations)
            except InputError as exc:
                if not events:
                    raise
                record = None
                write(f"(skipped a read: {exc})")
            ev = w.update(record) if record is not None else None
            if ev is not None:
                events.append(ev)
                write(_line(ev))
                if ev["warn"]:
                    fc = ev["forecast"]
                    write(f"WARNING: at step {ev['step']} the run is forecast to exceed its cap of "
                          f"{w.settings['cap']} rounds at step {fc['step']:.0f} (within {warn_steps} steps): "
                          f"{fc['cause']}")
        polls += 1
        if max_polls and polls >= max_polls:
            return events
        sleep(interval)


def cmd_watch(args: argparse.Namespace) -> int:
    settings = trainer_settings(args)

    def write(line):
        print(line, flush=True)

    watch(args.path, settings, fmt=args.format, run=args.run, num_generations=args.num_generations,
          groups_per_step=args.groups_per_step, warn_steps=args.warn_steps, interval=args.interval,
          max_polls=args.max_polls, write=write)
    sys.stdout.flush()
    return 0
