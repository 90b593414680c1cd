"""``grpo-lab ingest``: convert a TRL, verl or plain-JSONL run, or a tracker's per-step scalars (TensorBoard,
W&B, MLflow, trackio, metrics.jsonl), into a run record (see docs/ingest.md)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from grpo_lab.sims.errors import InputError

from ._io import print_json

from grpo_lab.sims.ingest import FORMATS  # group dumps: trl, verl, jsonl
from grpo_lab.sims.ingest.trackers import FORMATS as _TRACKER_FORMATS
from grpo_lab.sims.ingest.trackers.dialects import TRAINERS

TRACKERS = tuple(f for f in _TRACKER_FORMATS if f not in FORMATS)  # jsonl is either kind, told by its lines


def _weights(text: str):
    """``0.25,1`` (reward_funcs order) or ``short=0.25,correct=1`` (by reward function name)."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    try:
        if all("=" in p for p in parts):
            pairs = [p.split("=", 1) for p in parts]
            return {k.strip(): float(v) for k, v in pairs}
        return [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers in reward_funcs order, or name=number pairs, "
                                         f"got {text!r}") from None


def _csv(kind):
    def parse(text: str):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("expected a comma-separated list")
        if kind is float:
            try:
                return [float(p) for p in parts]
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
        return parts
    return parse


def register(sub) -> None:
    p = sub.add_parser("ingest", help="convert a TRL, verl or plain-JSONL run, or a tracker log, into a run record",
                       description="Read a real run's logs (an output folder, a file, or a .zip of a folder) and "
                                   "write a grpo-lab run record that `inspect` and the lab's replay tab read. "
                                   "Tracker logs (TensorBoard, W&B offline or history export, MLflow mlruns, "
                                   "trackio, metrics.jsonl, an HF Trainer's console log) give a scalars-only record: per-step shares of "
                                   "unanimous groups in the trainer's own metric names (docs/ingest.md).")
    p.add_argument("path", help="TRL output_dir, verl rollout_data_dir, a JSONL file, a .zip of a folder, or a "
                                "tracker's log folder or file")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS, *TRACKERS), dest="fmt",
                   help="source format (default auto: a tracker format detected from the files, or a JSONL of "
                        "groups or of per-step scalars; trl and verl dumps need --format); jsonl is a groups "
                        "JSONL or a metrics.jsonl of scalars, told apart by its lines")
    p.add_argument("--run", help="tracker logs: the run to read where the folder holds several")
    p.add_argument("--trainer", choices=TRAINERS,
                   help="tracker logs: the trainer whose metric names to read (default: detected from them)")
    p.add_argument("--out", help="record directory to write, e.g. runs/NAME (default: NAME in your runs folder, "
                                 "$XDG_DATA_HOME/grpo-lab/runs or ~/.local/share/grpo-lab/runs, NAME being --name "
                                 "or the source's name), where grpo-lab runs, inspect, diagnose and the lab find it")
    p.add_argument("--tolerance", type=float, default=0.0,
                   help="a group is degenerate when max-min of its rewards <= this (default 0: binary rewards)")
    p.add_argument("--max-mb", type=float, default=200.0, help="refuse to read more than this many MB (default 200)")
    p.add_argument("--num-generations", type=int, help="group size (TRL num_generations, verl rollout.n); "
                                                       "inferred when omitted")
    p.add_argument("--max-group", type=int, default=None, metavar="N",
                   help="refuse groups of more than N rollouts (default 4096: more than any trainer makes)")
    p.add_argument("--reward-columns", type=_csv(str), help="TRL: the parquet columns that are reward functions")
    p.add_argument("--reward-weights", type=_weights,
                   help="TRL: GRPOConfig.reward_weights in reward_funcs order (e.g. 0.25,1) or by name "
                        "(e.g. short=0.25,correct=1); default 1 each")
    p.add_argument("--reward-key", help="verl: the reward to classify: training (default: the reward that "
                                        "trained), or a per-row key of the dump such as score or acc")
    p.add_argument("--scalars", help="verl: the file logger's JSONL, when it is not inside PATH")
    p.add_argument("--metrics", metavar="LOG",
                   help="group dumps: the same run's tracker log (TensorBoard, W&B, MLflow, trackio, metrics.jsonl), "
                        "joined by step; gives a dump of trained groups only (verl DAPO) its generation rounds per "
                        "step (train/num_gen_batches) and the log's scalars")
    p.add_argument("--trainer-config", metavar="FILE",
                   help="tracker logs: the run's config (.json or .yaml: a GRPOConfig dump, verl's .hydra/config.yaml "
                        "or its overrides list of key=value) for K, batch sizes, gradient accumulation and processes "
                        "the log does not hold; laid over any config the tracker stored")
    p.add_argument("--name", help="run name stored in the record (default: the --out folder's name)")
    p.add_argument("--force", action="store_true", help="replace an existing record at --out")
    p.add_argument("--json", action="store_true",
                   help="print the record's summary and what was read, skipped and inferred as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on long ingests")
    p.add_argument("--workers", type=int, default=1,
                   help="processes that parse a large verl folder's files (default 1; on the shared 2-core "
                        "machine under load 2 were slower, see docs/ingest.md)")
    p.set_defaults(func=cmd_ingest)


def default_out(source: str, name: str | None) -> Path:
    """``--out``'s default: ``NAME`` in the user's runs folder (:func:`grpo_lab.replay.catalog.user_runs_dir`),
    ``NAME`` being ``--name`` or the source's name without its suffix (``groups.jsonl`` -> ``groups``)."""
    from grpo_lab.replay.catalog import user_runs_dir

    label = name or Path(source.rstrip("/\\")).stem
    if not label or label in (".", "..") or "/" in label or "\\" in label:
        raise InputError(f"cannot name a run after {label!r}; pass --out DIR or --name NAME")
    return user_runs_dir() / label


def _tracker_format(path: str, fmt: str) -> str | None:
    """The tracker format ``path`` is read as, or None for a group dump (trl, verl, a groups JSONL)."""
    from grpo_lab.sims.ingest.trackers import detect_format
    from grpo_lab.sims.ingest.trackers.jsonl import is_metrics_jsonl, output_folder_state, trainer_state_kind

    if fmt == "trl":  # a TRL output folder without completion logs, or its state alone: the state's scalars record
        p = Path(path)
        if p.is_dir() and not any(p.rglob("*.parquet")) and output_folder_state(p):
            return "jsonl"
        return "jsonl" if p.is_file() and p.suffix.lower() == ".json" and trainer_state_kind(p) else None
    if fmt == "verl":
        return None
    if fmt == "auto":
        p = Path(path)
        if p.is_file() and p.suffix.lower() == ".zip":
            raise InputError(f"{path}: a .zip is read as a TRL or verl dump or a groups JSONL: pass --format")
        try:
            fmt = detect_format(path)
        except InputError as exc:
            raise InputError(f"{exc}; for a TRL or verl dump pass --format trl or --format verl") from None
    if fmt == "jsonl":
        p = Path(path)
        return "jsonl" if (p.name == "trainer_state.json" or is_metrics_jsonl(p)
                           or (p.is_file() and trainer_state_kind(p))
                           or (p.is_dir() and not any(p.rglob("*.jsonl")) and output_folder_state(p))) else None
    return fmt


def _cmd_tracker(args: argparse.Namespace, fmt: str, out: Path) -> int:
    from grpo_lab.doctor_report.groups_per_row import groups_per_row_lines
    from grpo_lab.sims.ingest.trackers import read_scalars
    from grpo_lab.sims.record import write_record

    config = None
    if args.trainer_config:
        from grpo_lab.sims.ingest.trackers.common import load_config

        config = load_config(args.trainer_config)
    rec = read_scalars(args.path, fmt=fmt, run=args.run, trainer=args.trainer, num_generations=args.num_generations,
                       max_bytes=int(args.max_mb * 1024 * 1024), config=config)
    rec.meta["name"] = args.name or out.name
    write_record(out, rec)
    src = rec.meta["source"]
    steps = rec.steps["step"]
    if args.json:
        print_json({"out": str(out), "name": rec.meta["name"], "steps": int(len(steps)), "groups": 0,
                    "num_generations": rec.meta["num_generations"], **{k: src[k] for k in
                    ("format", "trainer", "run", "dialect", "missing", "notes", "groups_per_row")}})
        return 0
    print(f"wrote {out}: scalars only, {len(steps)} steps of {src['trainer']} metrics from {fmt} run {src['run']!r} "
          f"(K = {rec.meta['num_generations'] or 'unknown'})")
    for col, name in src["dialect"].items():
        print(f"  {col} <- {name}")
    for line in groups_per_row_lines(src.get("groups_per_row")):
        print(line)
    print(f"missing: {', '.join(src['missing']) or 'nothing'}")
    for n in src["notes"]:
        print(f"note: {n}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from grpo_lab.sims.ingest import ingest
    from grpo_lab.sims.record import summarise, write_record

    if args.workers < 1:
        raise InputError(f"--workers must be a positive integer, got {args.workers}")
    if not math.isfinite(args.max_mb) or args.max_mb <= 0:
        raise InputError(f"--max-mb must be a positive number, got {args.max_mb:g}")
    # a run picked from a tracker's folder of several is named after the run, not the folder
    label = args.name or (args.run.strip("/").replace("/", "-") if args.run else None)
    out = Path(args.out) if args.out else default_out(args.path, label)
    if (out / "run.json").exists() and not args.force:
        raise InputError(f"{out} already holds a run record; pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory")
    tracker = _tracker_format(args.path, args.fmt)
    if tracker is not None:
        if args.metrics:
            raise InputError("--metrics joins a tracker log to a group dump; PATH is itself a tracker log")
        return _cmd_tracker(args, tracker, out)
    if args.trainer or args.trainer_config or (args.run and not args.metrics):
        raise InputError("--run, --trainer and --trainer-config are for tracker logs (tensorboard, wandb, mlflow, trackio, "
                         "metrics.jsonl)")
    if args.fmt == "auto":
        args.fmt = "jsonl"  # auto reached a groups JSONL
    rec = ingest(args.path, args.fmt, tolerance=args.tolerance, max_bytes=int(args.max_mb * 1024 * 1024),
                 name=args.name or out.name, num_generations=args.num_generations,
                 reward_columns=args.reward_columns, reward_weights=args.reward_weights,
                 reward_key=args.reward_key, scalars=args.scalars,
                 progress=None if args.no_progress or args.json else "tqdm",
                 workers=args.workers, max_group=args.max_group)
    if args.metrics:
        from grpo_lab.sims.ingest.join import join_metrics

        join_metrics(rec, args.metrics, run=args.run, max_bytes=int(args.max_mb * 1024 * 1024))
    write_record(out, rec)
    summary = summarise(rec)
    if args.json:
        print_json({**summary, "out": str(out), "missing": rec.meta["missing"], "reward": rec.meta.get("reward"),
                    **rec.meta.get("ingest", {})})
        return 0
    zs = summary["frac_reward_zero_std"]
    print(f"wrote {out}: {summary['groups']} groups over {summary['steps']} steps from {args.fmt} "
          f"({rec.meta['n_prompts']} prompts, G = {rec.meta['num_generations'] or 'variable'})")
    reward = rec.meta.get("reward") or {}
    if summary["groups"]:
        print(f"classified by the {reward.get('classified') or 'reward'}"
              + (f": {reward['definition']}" if reward.get("definition") else ""))
        print(f"frac_reward_zero_std {zs:.4f} (all-pass {summary['frac_all_pass']:.4f}, "
              f"all-fail {summary['frac_all_fail']:.4f}) at reward tolerance {rec.reward_tolerance:g}")
        for label, alt in (reward.get("alternatives") or {}).items():
            print(f"  by {label}: frac_reward_zero_std {alt['frac_reward_zero_std']:.4f} "
                  f"(all-pass {alt['frac_all_pass']:.4f}, all-fail {alt['frac_all_fail']:.4f})")
    else:
        print("scalars only: no per-group rewards in the source")
    print(f"missing: {', '.join(rec.meta['missing']) or 'nothing'}")
    for w in rec.meta.get("warnings", []):
        print(f"warning: {w}")
    for n in rec.meta.get("notes", []):
        print(f"note: {n}")
    return 0
