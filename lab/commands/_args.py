"""Arguments shared by subcommands: a lab view (``population``, ``export``); the runs folders (every command
that takes a run)."""

from __future__ import annotations

import param


def add_view_arguments(p, *, start: bool = False, max_prompts: str = "") -> None:
    """--n-prompts, --a, --b, --seed, --progress, --K: each option's name, type, default and help (label, bounds)
    read from its parameter on :class:`grpo_lab.state.LabState` (``start``: they set a starting view). The prompt
    count's upper bound is the command's own (``max_prompts``, its help text); the commands check the values."""
    from grpo_lab.grid.spec import VIEW_OPTIONS, cli_flag
    from grpo_lab.state import LabState

    for name in VIEW_OPTIONS:
        par = LabState.param[name]
        kind = int if isinstance(par, param.Integer) else float
        lo, hi = (f"{v}" if kind is int else f"{v:g}" for v in par.bounds)
        span = f"at least {lo}{max_prompts}" if name == "n_prompts" else f"in [{lo}, {hi}]"
        p.add_argument(cli_flag(name), dest=name, type=kind, default=par.default,
                       help=f"{'starting view: ' if start else ''}{par.label} (default {par.default:g}; {span})")


def add_runs_argument(p) -> None:
    """--runs DIR (repeatable): a folder of run records added to the catalogue (grpo_lab.replay.catalog)."""
    p.add_argument("--runs", action="append", default=[], metavar="DIR",
                   help="another folder of run records whose labels are accepted (repeatable; adds to the shipped "
                        "runs, the user's runs folder and $GRPO_LAB_RUNS)")


def run_path(text: str, args) -> "Path":
    """The record directory a command's run argument names (a path or a label: catalog.resolve_run)."""
    from grpo_lab.replay.catalog import resolve_run

    return resolve_run(text, extra=getattr(args, "runs", None) or ())


def add_trainer_config_arguments(p) -> None:
    """--trainer-config FILE and the batch flags that override it (the stall forecast's settings:
    grpo_lab.sims.doctor.trainer_config.read_trainer_config)."""
    p.add_argument("--trainer-config", metavar="FILE", default=None,
                   help="the trainer's config (verl incl. V1, SkyRL, NeMo-RL, TRL, slime, grpo-lab: .json, .yaml, "
                        ".yml; prime-rl: .toml; OpenRLHF: its launch arguments in .sh or .args) for the stall "
                        "forecast, the cost per step and the samplers' sizes")
    for flag, what in (("--gen-batch-size", "prompts per generation round (verl data.gen_batch_size)"),
                       ("--train-batch-size", "mixed groups a step needs (verl data.train_batch_size)"),
                       ("--max-num-gen-batches", "most rounds per step, 0 = no cap (verl's name)")):
        p.add_argument(flag, type=int, default=None, help=what + "; overrides --trainer-config")


def trainer_settings(args):
    """The settings dict of :func:`add_trainer_config_arguments`' flags (None when none is given)."""
    from grpo_lab.sims.doctor.trainer_config import read_trainer_config

    return read_trainer_config(args.trainer_config, gen_batch_size=args.gen_batch_size,
                               train_batch_size=args.train_batch_size, max_num_gen_batches=args.max_num_gen_batches)
