"""Arguments shared by subcommands: a lab view (``population``, ``export``); the runs folders (every command
that takes a run)."""

from __future__ import annotations

from grpo_lab.sims.population import DEFAULT_SEED


def add_view_arguments(p, *, start: bool = False, max_prompts: str = "") -> None:
    """--n-prompts, --a, --b, --seed, --progress, --K with the lab's defaults (``start``: they set a starting view)."""
    first = "first " if start else ""
    starting = "starting " if start else ""
    p.add_argument("--n-prompts", type=int, default=600, help=f"number of prompts (default 600{max_prompts})")
    p.add_argument("--a", type=float, default=2.0, help="Beta a (default 2)")
    p.add_argument("--b", type=float, default=3.0, help="Beta b (default 3)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"{first}population seed (default {DEFAULT_SEED})")
    p.add_argument("--progress", type=float, default=0.0, help=f"{starting}training progress t in [0, 1] (default 0)")
    p.add_argument("--K", type=int, default=8, help=f"{starting}group size (default 8)")


def add_runs_argument(p) -> None:
    """--runs DIR (repeatable): a folder of run records added to the catalogue (grpo_lab.replay.catalog)."""
    p.add_argument("--runs", action="append", default=[], metavar="DIR",
                   help="another folder of run records whose labels are accepted (repeatable; adds to the shipped "
                        "runs, the user's runs folder and $GRPO_LAB_RUNS)")


def run_path(text: str, args) -> "Path":
    """The record directory a command's run argument names (a path or a label: catalog.resolve_run)."""
    from grpo_lab.replay.catalog import resolve_run

    return resolve_run(text, extra=getattr(args, "runs", None) or ())
