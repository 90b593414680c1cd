"""The ``grpo-lab`` command line: one entry point, one module per group of subcommands.

Every subcommand module in :mod:`grpo_lab.commands` exposes ``register(subparsers)``
and sets ``func`` on its parser. Bad input never produces a traceback: argparse
errors and the core's :class:`sims.errors.InputError` become one line on stderr
and exit status 2; so does a bare ``grpo-lab``, after printing its usage and commands.
"""

from __future__ import annotations

import argparse
import sys

from grpo_lab.sims import __version__
from grpo_lab.sims.errors import InputError

from .commands import COMMAND_MODULES
from .commands import diagnose as _diagnose  # the run doctor (docs/doctor.md)
from .commands import train_lm as _train_lm  # TRL + a real language model (docs/trl.md)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line and exit status 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser() -> Parser:
    parser = Parser(prog="grpo-lab", description="The arithmetic of GRPO's zero-variance groups.")
    parser.add_argument("--version", action="version", version=f"grpo-lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in [*COMMAND_MODULES, _diagnose, _train_lm]:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # bare `grpo-lab`: what it can do, not a one-line complaint
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"grpo-lab {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"grpo-lab {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
