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
