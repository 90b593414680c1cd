"""``grpo-lab diagnose``: the run doctor on a run record (see docs/doctor.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from grpo_lab.sims.errors import InputError

from ._args import add_runs_argument, add_trainer_config_arguments, run_path, trainer_settings
from ._io import print_json


def register(sub) -> None:
    from grpo_lab.sims.doctor.forecast import DEFAULT_THRESHOLD
    from grpo_lab.sims.doctor.prompts import DEFAULT_RETIRE_AFTER
    from grpo_lab.sims.doctor.whatif import DEFAULT_BAND

    p = sub.add_parser("diagnose", help="fit a run's difficulty, forecast its expiry, what-ifs and prompt lists",
                       description="The run doctor: fit the run's difficulty distribution from its groups and check "
                                   "the fit, forecast when the effective group rate crosses a threshold (with a "
                                   "backtest), what-ifs for K, DAPO and a difficulty band, what skipping would have "
                                   "saved, and prompt lists (retire / hard / live).")
    p.add_argument("run", help="a run record directory, or a run's label (grpo-lab runs lists them)")
    add_runs_argument(p)
    p.add_argument("--json", action="store_true", help="print the whole diagnosis as JSON")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (atomically)")
    p.add_argument("--lists", metavar="DIR", help="write retire.jsonl, hard.jsonl and live.jsonl into DIR")
    p.add_argument("--tolerance", type=float, default=None,
                   help="accept non-binary rewards, counting a reward above 0.5 as a pass")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help=f"effective group rate the forecast watches (default {DEFAULT_THRESHOLD:g})")
    p.add_argument("--window", type=int, default=None, help="steps per check window (default: about 20 windows)")
    p.add_argument("--stride", type=int, default=None,
                   help="steps between window starts (default: the window; smaller gives rolling windows)")
    p.add_argument("--batch", type=int, default=None,
                   help="DAPO batch size in groups of the what-ifs, and of the samplers' DAPO row when no trainer "
                        "config or batch flag is given (default: the run's groups per step)")
    p.add_argument("--band", type=float, nargs=2, metavar=("LO", "HI"), default=DEFAULT_BAND,
                   help=f"difficulty band of the what-if (default {DEFAULT_BAND[0]:g} {DEFAULT_BAND[1]:g})")
    p.add_argument("--retire-after", type=int, default=DEFAULT_RETIRE_AFTER,
                   help=f"all-pass draws in a row that make a retire candidate (default {DEFAULT_RETIRE_AFTER})")
    p.add_argument("--audit", action="store_true",
                   help="only the audit of the logged metrics (the trainer's scalars recomputed from the groups, the "
                        "correctness split, phantom-gradient groups): no fit, so any record with groups")
    p.add_argument("--backtest", action="store_true",
                   help="refit the forecast on the first 40/50/60/70%% of the logged rows and score the rest: how "
                        "often its 90%% predictive band held the later rows (JSON: backtest)")
    add_trainer_config_arguments(p)
    p.add_argument("--num-generations", type=int, default=None,
                   help="K, rollouts per prompt, for a record of tracker scalars that does not say it")
    p.add_argument("--groups-per-step", type=int, default=None,
                   help="groups each step's logged shares are over, for a record of tracker scalars that does not "
                        "say it (default: the trainer config's generation batch)")
    p.set_defaults(func=cmd_diagnose)


def cmd_diagnose(args: argparse.Namespace) -> int:
    from grpo_lab.sims._checks import band as check_band
    from grpo_lab.sims.doctor import diagnose
    from grpo_lab.sims.doctor.prompts import write_prompt_lists
    from grpo_lab.doctor_report import html_report, text_report
    from grpo_lab.sims.doctor.trainer_config import resolve_settings
    from grpo_lab.sims.record import atomic_write_bytes, read_record

    band = check_band(*args.band)
    settings = trainer_settings(args)
    record = read_record(run_path(args.run, args))
    if settings is not None:  # a flag over --trainer-config over the sizes the record keeps (one-line refusal)
        settings = resolve_settings(record.meta, settings)
    if args.audit:
        from grpo_lab.doctor_report.audit import audit_text
        from grpo_lab.sims.doctor.audit import audit

        result = audit(record)
        if args.json:
            print_json(result)
        else:
            print("\n".join(audit_text(result) or ["audit: the record carries no trainer scalar and no correctness score"]))
        return 0
    try:
        result = diagnose(record, tolerance=args.tolerance, threshold=args.threshold, window=args.window,
                          stride=args.stride, batch=args.batch, band=band, retire_after=args.retire_after,
                          trainer_config=settings, num_generations=args.num_generations,
                          groups_per_step=args.groups_per_step, backtest=args.backtest)
    except InputError as exc:  # a record the doctor cannot fit may still show what is wrong with the run
        return _rules_only(record, exc, args.json)
    written = {}
    if args.lists and result.get("scalars_only"):
        raise InputError("--lists needs each prompt's groups; the record holds per-step scalars only")
    if args.lists:
        written.update(write_prompt_lists(result["prompts"], args.lists))
    if args.html:
        out = Path(args.html)
        if out.is_dir():
            raise InputError(f"--html {out} is a directory")
        try:
            atomic_write_bytes(out, html_report(result).encode("utf-8"))
        except OSError as exc:
            raise InputError(f"cannot write {str(out)!r}: {exc.strerror}") from None
        written["html"] = str(out)
    if args.json:
        print_json({**result, "written": written})
        return 0
    print(text_report(result))
    for name, path in written.items():
        print(f"wrote {name}: {path}")
    return 0


def _rules_only(record, exc: InputError, as_json: bool) -> int:
    """The rules that fire on a record the doctor refused (``exc``): printed with the refusal, exit 2; none: the
    refusal alone (raised again: one line, exit 2)."""
    from grpo_lab.doctor_report.rules import rules_text
    from grpo_lab.sims.doctor.rules import fire_rules

    rules = fire_rules(record)
    if not rules:
        raise exc
    if as_json:
        print_json({"error": str(exc), "rules": rules})
    else:
        print(f"error: {exc}")
        print("\n".join(rules_text({"rules": rules})))
    return 2
