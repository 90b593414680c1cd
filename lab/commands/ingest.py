"""``grpo-lab ingest``: convert a TRL, verl or plain-JSONL run into a run record (see docs/ingest.md)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from grpo_lab.sims.errors import InputError

from ._io import print_json


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
    p = sub.add_parser("ingest", help="convert a TRL, verl or plain-JSONL run into a run record",
                       description="Read a real run's logs (an output folder, a file, or a .zip of a folder) and "
                                   "write a grpo-lab run record that `inspect` and the lab's replay tab read.")
    p.add_argument("path", help="TRL output_dir, verl rollout_data_dir, a JSONL file, or a .zip of a folder")
    p.add_argument("--format", required=True, choices=("trl", "verl", "jsonl"), dest="fmt", help="source format")
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


def cmd_ingest(args: argparse.Namespace) -> int:
    from grpo_lab.sims.ingest import ingest
    from grpo_lab.sims.record import summarise, write_record

    if args.workers < 1:
        raise InputError(f"--workers must be a positive integer, got {args.workers}")
    if not math.isfinite(args.max_mb) or args.max_mb <= 0:
        raise InputError(f"--max-mb must be a positive number, got {args.max_mb:g}")
    out = Path(args.out) if args.out else default_out(args.path, args.name)
    if (out / "run.json").exists() and not args.force:
        raise InputError(f"{out} already holds a run record; pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory")
    rec = ingest(args.path, args.fmt, tolerance=args.tolerance, max_bytes=int(args.max_mb * 1024 * 1024),
                 name=args.name or out.name, num_generations=args.num_generations,
                 reward_columns=args.reward_columns, reward_weights=args.reward_weights,
                 reward_key=args.reward_key, scalars=args.scalars,
                 progress=None if args.no_progress or args.json else "tqdm",
                 workers=args.workers, max_group=args.max_group)
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
