"""Arguments shared by subcommands that describe a lab view (``population``, ``export``)."""

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
