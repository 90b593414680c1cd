"""``grpo-lab watch``: follow a tracker log still being written and warn before the run's dynamic sampling stalls.

Every ``--interval`` seconds it reads what was appended to the log since the last poll
(:class:`grpo_lab.sims.ingest.trackers.follow.LogFollower`: a TensorBoard dir, a W&B offline folder or history
export, a metrics.jsonl, an MLflow file store, a trackio store, a trainer_state.json; a cut last record is left for
the next poll), so a poll costs what the trainer wrote since, not the whole log, and the record equals a full
re-read of the log as it stands. For each new step it prints the forecast stall step with its 95% interval
(:class:`grpo_lab.sims.doctor.scalars_watch.StallWatch`); a WARNING line when the forecast stall is at most
``--warn-steps`` steps ahead. It stops after ``--max-polls`` polls (0: until interrupted), exit status 0; bad input
is one line, exit 2. The log may not exist yet: it waits for the trainer's first event. Each rule of
:mod:`grpo_lab.sims.doctor.rules` that fires is printed once.

What the log does is said in words, as the Replay says it: a log truncated or replaced while followed (a restarted
run) keeps the last forecast printed, and the new log is forecast from its start as it grows; a log that has not
grown for :data:`~grpo_lab.sims.ingest.trackers.follow.STALE_S` seconds is said to have stopped (once, until it grows
again).

``--emit`` writes each new step's forecast back into the run's own tracker (:mod:`grpo_lab.tracker_emit`): the
``grpo_lab/...`` scalars of :mod:`grpo_lab.sims.doctor.tracker_values`, computed by the doctor's diagnosis of the
record so far (so they equal ``grpo-lab diagnose --json``'s ``tracker`` on the same record; the line printed is that
diagnosis's forecast too: one fit a poll), and one alert through the tracker's alert API ``--alert-before`` steps
before the forecast stall. Those ``grpo_lab/...`` scalars land in
the followed run itself; the readers leave them out (:data:`grpo_lab.sims.ingest.trackers.common.OWN_PREFIX`) and the
follower does not count them as growth, so watch never reads its own output as the trainer's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from grpo_lab.sims.errors import InputError

from ._args import add_trainer_config_arguments, trainer_settings

__all__ = ["register", "watch", "read_tracker"]

DEFAULT_INTERVAL = 10.0  #: seconds between two polls


def register(sub) -> None:
    from grpo_lab.sims.doctor.scalars_watch import DEFAULT_WARN_STEPS

    p = sub.add_parser("watch", help="follow a tracker log while the run trains and warn before its stall",
                       description="Follow a tracker log that is still being written (TensorBoard dir, W&B offline "
                                   "folder or history export, metrics.jsonl, MLflow file store, trackio store, "
                                   "trainer_state.json, an HF Trainer's console log, re-read whole), reading only what "
                                   "was appended at each poll, and print, as "
                                   "each step lands, the forecast step at which "
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
    p.add_argument("--emit", action="store_true",
                   help="write the forecast back into the run's own tracker (TensorBoard, W&B resumed offline, MLflow, "
                        "trackio) as grpo_lab/... scalars at each new step, and alert through the tracker's alert API")
    p.add_argument("--alert-before", type=int, default=None,
                   help="with --emit: alert this many steps before the forecast stall (default: --warn-steps)")
    p.add_argument("--wandb-online", action="store_true", help="with --emit to W&B: resume the run online, not offline")
    p.set_defaults(func=cmd_watch)


def read_tracker(path, *, fmt: str = "auto", run=None, num_generations=None, config=None):
    """The run's scalars-only record (:func:`grpo_lab.sims.ingest.trackers.read_scalars`), tolerating a file still
    being written; ``config`` the --trainer-config file's keys (K, batch sizes, TRL's accumulation) for the reader."""
    from grpo_lab.sims.ingest.trackers import read_scalars

    return read_scalars(path, fmt=fmt, run=run, num_generations=num_generations, partial_ok=True, config=config)


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
          sleep=time.sleep, emit: bool = False, alert_before: int | None = None, wandb_online: bool = False,
          writer=None, config: dict | None = None) -> list[dict]:
    """Poll ``path`` and write one line per new step (see the module docstring); returns the events.

    ``path`` may not exist yet (the trainer has not written its first event): the watch says so once and waits.
    ``emit``: each new step's forecast is also written into the run's tracker (:mod:`grpo_lab.tracker_emit`; the
    event's ``tracker`` values and ``rules``), with one alert ``alert_before`` steps (default ``warn_steps``) before
    the forecast stall; ``writer``: a writer to use instead of the tracker's own (tests); ``config``: the
    --trainer-config file's keys for the reader (:func:`read_tracker`)."""
    from grpo_lab.sims.doctor.scalars_watch import StallWatch
    from grpo_lab.sims.ingest.trackers.follow import LogFollower

    if interval < 0 or max_polls < 0:
        raise InputError("--interval and --max-polls must be >= 0")

    def stall_watch():
        return StallWatch(settings, warn_steps=warn_steps, num_generations=num_generations,
                          groups_per_step=groups_per_step)

    w = stall_watch()
    emitter = _Emitter(settings, num_generations, groups_per_step, warn_steps if alert_before is None else alert_before,
                       wandb_online, writer) if emit else None
    follower, events, polls, said = None, [], 0, set()
    try:
        while True:
            if not Path(path).exists():
                if "missing" not in said:
                    said.add("missing")
                    write(f"waiting for {str(path)!r}: the trainer has not written its first event yet")
            else:
                if follower is None:
                    follower = LogFollower(str(path), fmt, run=run, num_generations=num_generations, config=config)
                record = _read(follower, events, write, said)
                if record is None:
                    pass  # not read this time (said in _read)
                elif follower.change in ("truncated", "replaced"):
                    _changed(follower, events, write)
                    w = stall_watch()  # the new log is forecast from its start as it grows
                elif follower.change == "unchanged":
                    _stopped(follower, record, write, said)
                else:
                    said.discard("stopped")
                    ev = w.update(record, None if emitter is None else emitter.diagnose)  # one fit a poll
                    if ev is not None:
                        events.append(ev)
                        write(_line(ev))
                        if ev["warn"]:
                            fc = ev["forecast"]
                            write(f"WARNING: at step {ev['step']} the run is forecast to exceed its cap of "
                                  f"{w.settings['cap']} rounds at step {fc['step']:.0f} (within {warn_steps} steps): "
                                  f"{fc['cause']}")
                        _rules(ev, record, emitter, path, follower.fmt, run, write, said)
                        if emitter is not None and emitter.follow is not None:
                            path = follower.path = str(emitter.follow)  # the trainer's own W&B run, not ours
            polls += 1
            if max_polls and polls >= max_polls:
                return events
            sleep(interval)
    finally:
        if emitter is not None:
            emitter.close()


def _read(follower, events, write, said):
    """The record with what was appended since the last poll, or None: before the first event a folder with no file
    yet is waited for (said once); files that do not read then are bad input (raised)."""
    try:
        return follower.refresh()
    except InputError as exc:
        if not events and _any_file(follower.path):  # files that do not read before any event: bad input
            raise
        if events:
            write(f"(skipped a read: {exc})")
        elif "empty" not in said:  # a folder with no file yet: the trainer has not started writing
            said.add("empty")
            write(f"waiting for the trainer's first event in {str(follower.path)!r}")
        return None


def _any_file(path) -> bool:
    p = Path(path)
    return p.is_file() or any(f.is_file() for f in p.rglob("*"))


def _changed(follower, events, write) -> None:
    """A log truncated or replaced while followed: said, the last forecast printed kept."""
    last = next((e for e in reversed(events) if e.get("forecast") is not None), None)
    step = None if last is None else last["forecast"]["step"]
    kept = ("no forecast was printed yet" if last is None else
            f"the last forecast (at step {last['step']}: stall "
            f"{'not within the horizon' if step is None else f'{step:.0f}'}) stands")
    write(f"the log changed while followed: {follower.status.split(';')[0]}. {kept}; the new log is forecast from "
          "its start as it grows")


def _stopped(follower, record, write, said) -> None:
    """A log that has not grown for STALE_S seconds: said once (until it grows again)."""
    from grpo_lab.sims.ingest.trackers import follow

    if "stopped" in said or follower.idle_s < follow.STALE_S:
        return
    said.add("stopped")
    steps = record.steps.get("step", ())
    at = f" (last step {int(steps[-1])})" if len(steps) else ""
    write(f"the log has not grown for {follower.idle_s / 60:.0f} min{at}: the trainer may have stopped or be "
          "stalled; the last forecast printed is from the last step read")


def _rules(ev: dict, record, emitter, path, fmt, run, write, said) -> None:
    """The rules that fire at this step (each said once) and, with ``emitter``, the forecast into the tracker."""
    from grpo_lab.sims.doctor.rules import fire_rules, rule_line

    if emitter is not None:
        emitter.update(ev, record, path, fmt, run, write)
    rules = ev.get("rules") if emitter is not None else fire_rules(record)
    for r in rules or []:
        if r["rule"] not in said:
            said.add(r["rule"])
            write(rule_line(r))


class _Emitter:
    """The forecast of each new step written into the run's tracker (``watch --emit``)."""

    def __init__(self, settings, num_generations, groups_per_step, alert_before, wandb_online, writer):
        if alert_before < 0:
            raise InputError(f"--alert-before must be >= 0, got {alert_before!r}")
        self.settings, self.K, self.gps = settings, num_generations, groups_per_step
        self.alert_before, self.online, self.writer = alert_before, wandb_online, writer
        self.alerted, self.follow = False, None
        self.diagnosed = None  #: (record, diagnosis or the InputError) of the step being forecast

    def diagnose(self, record) -> dict | None:
        """The record's diagnosis (``only="tracker"``: the tracker's figures and the rules), kept for :meth:`update`;
        None where it is refused (the error kept, said by :meth:`update`). The watch's forecast is this diagnosis's
        (:meth:`.StallWatch.update`), so a poll fits once."""
        from grpo_lab.sims.doctor import diagnose

        try:
            result = diagnose(record, trainer_config=self.settings, num_generations=self.K, groups_per_step=self.gps,
                              only="tracker")
        except InputError as exc:
            result = exc
        self.diagnosed = (record, result)
        return None if isinstance(result, InputError) else result

    def update(self, ev: dict, record, path, fmt, run, write) -> None:
        from grpo_lab.sims.doctor.tracker_values import alert_due, alert_text
        from grpo_lab.sims.ingest.trackers import detect_format

        if ev["steps"] < 5:
            return
        if self.diagnosed is None or self.diagnosed[0] is not record:  # not asked by the forecast: diagnosed here
            self.diagnose(record)
        result, self.diagnosed = self.diagnosed[1], None
        if isinstance(result, InputError):
            write(f"(no forecast to emit at step {ev['step']}: {result})")
            return
        ev["tracker"], ev["rules"] = result["tracker"], result["rules"]
        if self.writer is None:
            from grpo_lab.tracker_emit import WandbWriter, _wandb_run_file, open_writer

            kind = detect_format(Path(path)) if fmt == "auto" else fmt
            if kind == "wandb" and Path(path).is_dir():
                self.follow = _wandb_run_file(Path(path))  # the trainer's own run: the resumed one is a sibling
            self.writer = open_writer(path, kind, run, wandb_online=self.online)
            write(f"writing the forecast into the run's {kind} log" +
                  (f" (run {self.writer.run_id} resumed in {self.writer.folder})" if isinstance(self.writer, WandbWriter)
                   else ""))
        self.writer.write(ev["step"], ev["tracker"])
        if not self.alerted and alert_due(ev["tracker"], ev["step"], self.alert_before):
            self.alerted = ev["alert"] = True
            from grpo_lab.sims.doctor.trainer_config import resolve_settings

            cap = (resolve_settings(record.meta, self.settings) or {}).get("cap", 0)  # flags over the kept sizes
            title, text = alert_text(ev["tracker"], ev["step"], cap)
            self.writer.alert(ev["step"], title, text)
            write(f"ALERT sent to the tracker: {text}")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def cmd_watch(args: argparse.Namespace) -> int:
    settings = trainer_settings(args)
    config = None
    if args.trainer_config:  # the same file informs the reader: K, batch sizes, TRL's groups per logged row
        from grpo_lab.sims.ingest.trackers.common import load_config

        config = load_config(args.trainer_config)

    def write(line):
        print(line, flush=True)

    watch(args.path, settings, fmt=args.format, run=args.run, num_generations=args.num_generations,
          groups_per_step=args.groups_per_step, warn_steps=args.warn_steps, interval=args.interval,
          max_polls=args.max_polls, write=write, emit=args.emit, alert_before=args.alert_before,
          wandb_online=args.wandb_online, config=config)
    sys.stdout.flush()
    return 0
