"""``train`` (a small, real GRPO run), ``inspect`` and ``compare`` (any run record, no torch needed)."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys

from grpo_lab.sims.errors import InputError

from ._args import add_runs_argument, run_path
from ._io import print_json, print_table

# option name -> (type, help); defaults come from GRPOConfig so a resumed run can tell what was given
_TRAIN_OPTIONS = {
    "estimator": (str, "advantage estimator: grpo, dr_grpo, sign, tasa"),
    "num_generations": (int, "G, completions per prompt"),
    "steps": (int, "optimizer steps (with --resume: the new total)"),
    "seed": (int, "seed of sampling and prompt draws (and of the warm start unless --sft-seed is given)"),
    "sft_seed": (int, "seed of the warm start: runs sharing it start from the same policy"),
    "prompts_per_step": (int, "groups per optimizer step"),
    "loss_type": (str, "grpo, dr_grpo or dapo"),
    "beta": (float, "weight of the k3 KL to the starting policy"),
    "epsilon": (float, "lower clip range"),
    "epsilon_high": (float, "upper clip range"),
    "num_iterations": (int, "optimizer passes per batch"),
    "temperature": (float, "sampling temperature"),
    "max_completion_length": (int, "tokens a completion may use (the model has room for 6)"),
    "learning_rate": (float, "Adam learning rate"),
    "max_grad_norm": (float, "clip the gradient norm to this before each Adam step (0: no clipping)"),
    "warmup_steps": (int, "linear learning-rate warm-up over this many steps (0: none)"),
    "adam_beta1": (float, "Adam beta1"),
    "adam_beta2": (float, "Adam beta2"),
    "adam_epsilon": (float, "Adam eps"),
    "max_num_gen_batches": (int, "dynamic sampling: most sampling rounds per step (0: no cap, verl's default)"),
    "retire_after": (int, "dynamic sampling curriculum: retire a prompt after N >= 2 consecutive all-pass groups (0: off)"),
    "hard_buffer_frac": (float, "dynamic sampling curriculum: share of a round drawn from the all-fail buffer (0: off)"),
    "n_prompts": (int, "prompts used (at most 600)"),
    "eval_every": (int, "evaluate every prompt every so many steps"),
    "eval_samples": (int, "completions per prompt in an evaluation"),
    "sft_steps": (int, "steps of the supervised warm start"),
    "n_layer": (int, "transformer blocks"),
    "n_head": (int, "attention heads"),
    "n_embd": (int, "embedding width"),
}


def register(sub) -> None:
    p = sub.add_parser("train", help="train a tiny policy with GRPO and record every group (needs torch)",
                       description="A small, real GRPO run on multi-digit addition. Writes a run record to --out "
                                   "every --save-every steps, at the end and when stopped (Ctrl-C, SIGTERM); "
                                   "--resume continues an interrupted run.")
    p.add_argument("--out", required=True, help="run directory to create (or continue with --resume)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default auto)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--dynamic-sampling", action="store_true", default=None, help="DAPO dynamic sampling")
    p.add_argument("--start", default=None, help="warm-start regime: broad (default; both tails) or weak (mean pass "
                                                 "rate about 0.3, most prompts near 0); sets the warm start's options")
    p.add_argument("--no-cache", action="store_true", help="recompute the warm start instead of reusing a cached one")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--save-every", type=int, default=10,
                   help="write the record and checkpoint every N steps (and at the end, and on Ctrl-C/SIGTERM); default 10")
    for name, (typ, text) in _TRAIN_OPTIONS.items():
        p.add_argument("--" + name.replace("_", "-"), type=typ, default=None, help=text)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("inspect", help="summarise a run record (any source)",
                       description="Figures recomputed from a run record's raw arrays.")
    p.add_argument("run", help="run directory (or its run.json), or a run's label (grpo-lab runs lists them)")
    add_runs_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("compare", help="side-by-side table of run records",
                       description="One row per run: degeneracy and both tails of the groups trained on (a dynamic-sampling "
                                   "run trains on mixed groups only; its drawn groups: grpo-lab inspect), D_real vs D_iid, "
                                   "final pass rate. A run known from its tracker's scalars shows the shares its trainer "
                                   "logged (means over the steps that logged them).")
    p.add_argument("run", nargs="+", help="run directories or runs' labels (grpo-lab runs lists them)")
    add_runs_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_compare)


def _config_from_args(args):
    from grpo_lab.train.config import GRPOConfig

    from grpo_lab.train.config import DEFAULT_START

    given = {k: getattr(args, k) for k in _TRAIN_OPTIONS if getattr(args, k) is not None}
    if args.dynamic_sampling:
        given["dynamic_sampling"] = True
    if args.start is not None:
        given["start"] = args.start
    if args.resume:
        extra = sorted(set(given) - {"steps"})
        if extra:
            raise InputError(f"--resume continues the recorded config; only --steps may change (got --{extra[0].replace('_', '-')})")
        return GRPOConfig(steps=given["steps"]) if "steps" in given else None
    return GRPOConfig.for_start(given.pop("start", DEFAULT_START), **given).validate()


def cmd_train(args: argparse.Namespace) -> int:
    cfg = _config_from_args(args)  # validates before torch is imported
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError("training needs PyTorch; install it with: pip install 'grpo-lab[train]'") from None
    from grpo_lab.train.loop import train

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    command = "grpo-lab " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["train"] else None
    rec = train(cfg, args.out, resume=args.resume, device=args.device, threads=args.threads,
                progress=not args.no_progress, sft_cache=None if args.no_cache else "default", command=command,
                save_every=args.save_every)
    s = rec.meta["summary"]
    print(f"{args.out}: {s['steps']} steps, {s['groups']} groups, frac_reward_zero_std "
          f"{_fmt(s['frac_reward_zero_std'])}, final eval pass rate {_fmt(s['final_eval_pass_rate'])}, "
          f"{rec.meta['wall_time_s']:.0f} s")
    if rec.meta.get("end_reason"):
        print(f"grpo-lab train: run ended early: {rec.meta['end_reason']}", file=sys.stderr)
        return 1
    return 0


def _fmt(v) -> str:
    """A figure to 3 decimals, or '-' where there is none (None, NaN: e.g. a run of 0 steps has no groups)."""
    return "-" if v is None or v != v else f"{v:.3f}"


def _summary(path):
    from grpo_lab.sims.record import read_record, summarise
    from grpo_lab.sims.scalars_record import is_scalars_only, summarise_scalars

    rec = read_record(path)
    s = summarise(rec)
    cfg = rec.meta.get("config") if isinstance(rec.meta.get("config"), dict) else {}
    s["estimator"] = cfg.get("estimator")
    s["dynamic_sampling"] = cfg.get("dynamic_sampling")
    s["seed"] = rec.meta.get("seed")
    s["path"] = str(path)
    s["trained"] = _trained_shares(rec)
    if is_scalars_only(rec):  # a tracker's scalars, no group (sims/scalars_record.py)
        s["scalars"] = summarise_scalars(rec)
    return s


def _trained_shares(rec) -> dict:
    """Unanimous shares of the groups that entered the loss (all groups of a plain run; with dynamic
    sampling only mixed ones, so 0), so that no table sets a drawn-groups share beside a trained one."""
    from grpo_lab.sims.record import group_outcomes

    kept = rec.groups["kept"]
    degenerate, all_pass, all_fail = group_outcomes(rec.groups["rewards"][kept], rec.reward_tolerance)
    share = (lambda m: float(m.mean()) if len(m) else float("nan"))
    return {"zero_std": share(degenerate), "all_pass": share(all_pass), "all_fail": share(all_fail)}


def cmd_inspect(args: argparse.Namespace) -> int:
    s = _summary(run_path(args.run, args))
    if args.json:
        print_json(s)
        return 0
    for key in ("name", "source", "estimator", "seed", "steps", "groups", "num_generations", "frac_reward_zero_std",
                "frac_all_pass", "frac_all_fail", "groups_kept", "rollouts_generated", "rollouts_per_kept_group",
                "reward_mean", "final_eval_pass_rate"):
        v = s.get(key)
        print(f"{key:>24}  {v:.4f}" if isinstance(v, float) else f"{key:>24}  {'-' if v is None else v}")
    if s.get("scalars"):
        sc = s["scalars"]
        print(f"scalars only: {sc['trainer']} metrics from {sc['format']} run {sc['run']!r} (means over the steps "
              "that logged each)")
        for col in ("frac_all_pass", "frac_all_fail", "frac_reward_zero_std", "reward_mean", "groups_per_step"):
            v = sc[col]
            print(f"{col:>24}  " + ("-" if v is None else f"{v:.4f} over {sc[col + '_steps']} steps"))
        print(f"{'missing':>24}  {', '.join(sc['missing'] or []) or 'nothing'}")
    for kind in ("warnings", "notes"):  # ingested runs: what the source could not tell (sims.ingest)
        for text in s.get(kind) or []:
            print(f"{kind[:-1]}: {text}")
    if s["evals"]:
        print()
        print_table(s["evals"], ["step", "mean_pass_rate", "d_real", "d_iid"],
                    {"mean_pass_rate": ".3f", "d_real": ".3f", "d_iid": ".3f"})
    return 0


def _scalars_row(sc: dict) -> dict:
    """A scalars-only record's columns of ``compare``: the trainer and tracker it came from, the groups its steps
    logged (the sum of ``groups_per_step``; None where not logged), and the means over the logged steps of the shares
    the trainer logged (its metric's groups: all those generated for TRL, the ones its filter saw for DAPO), as
    ``grpo-lab inspect`` shows them; no evaluation, so no D or pass rate."""
    gps, n = sc.get("groups_per_step"), sc.get("groups_per_step_steps", 0)
    return {"from": f"{sc.get('trainer') or '?'} via {sc.get('format') or '?'}",
            "groups": int(round(gps * n)) if gps is not None else None, "zero_std": sc.get("frac_reward_zero_std"),
            "all_pass": sc.get("frac_all_pass"), "all_fail": sc.get("frac_all_fail")}


def cmd_compare(args: argparse.Namespace) -> int:
    rows = []
    for path in args.run:
        s = _summary(run_path(path, args))
        last = s["evals"][-1] if s["evals"] else {}
        row = {
            "run": s["name"] or path, "from": "groups", "estimator": s["estimator"] or "-",
            "DS": "yes" if s["dynamic_sampling"] else "-", "steps": s["steps"], "groups": s["groups"], **s["trained"],
            "D_real": last.get("d_real"), "D_iid": last.get("d_iid"),
            "pass_0": s["evals"][0]["mean_pass_rate"] if s["evals"] else None,
            "pass_end": s["final_eval_pass_rate"], "rollouts/kept": s["rollouts_per_kept_group"],
        }
        if s.get("scalars"):  # a run known from its tracker's scalars: the shares its trainer logged
            row.update(_scalars_row(s["scalars"]))
        rows.append(row)
    if args.json:
        print_json(rows)
        return 0
    cols = list(rows[0])
    print_table(rows, cols, {c: ".3f" for c in ("zero_std", "all_pass", "all_fail", "D_real", "D_iid", "pass_0", "pass_end")}
                | {"rollouts/kept": ".2f"})
    return 0
