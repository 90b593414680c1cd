"""``grpo-lab serve``: run the browser lab (``panel serve lab/app.py``) with sensible flags.

The server is ``python -m grpo_lab.server``: ``panel serve`` plus the lab's security headers
(Content-Security-Policy) and a cheap ``/health`` endpoint (see :mod:`grpo_lab.server`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["register", "serve_command", "APP_PATH"]

APP_PATH = Path(__file__).resolve().parents[1] / "app.py"  #: lab/app.py, found through the installed package
DEFAULT_PROCS = 2  #: server processes by default: a room of visitors arriving together is served on two cores
MAX_PROCS = 64


def register(sub) -> None:
    p = sub.add_parser("serve", help="open the browser lab (panel serve lab/app.py, with security headers)",
                       description="Serve the interactive lab. Extra hosts that may open its websocket come from "
                                   "--allow-websocket-origin or the environment variable GRPO_LAB_ORIGINS "
                                   "(comma-separated host[:port]).")
    p.add_argument("--port", type=int, default=5006, help="port (default 5006)")
    p.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--show", action="store_true", help="open the lab in a web browser")
    p.add_argument("--allow-websocket-origin", action="append", default=[], metavar="HOST[:PORT]",
                   help="another origin allowed to open the websocket (repeatable)")
    p.add_argument("--num-procs", type=int, default=DEFAULT_PROCS, metavar="N",
                   help=f"server processes (default {DEFAULT_PROCS}; each visit is served whole by one; "
                        "more for a bigger room, up to one per core)")
    p.add_argument("--dry-run", action="store_true", help="print the server's command line and exit")
    p.set_defaults(func=cmd_serve)


def serve_command(port: int = 5006, address: str = "127.0.0.1", show: bool = False,
                  origins: list[str] | None = None, num_procs: int = DEFAULT_PROCS) -> list[str]:
    """The command line serving the lab (``panel serve``'s options, run by :mod:`grpo_lab.server`).

    With ``num_procs`` > 1 the server forks that many processes sharing the port, and sessions are
    reused for the page request (``--reuse-sessions``): the page is rendered from a cached session and
    a visitor's own session is built once, in whichever process its websocket reaches (without it, a
    websocket landing in another process than the page request would build the session twice).
    """
    if not 0 < port < 65536:
        raise InputError(f"--port must be in 1..65535, got {port}")
    if isinstance(num_procs, bool) or not isinstance(num_procs, int) or not 1 <= num_procs <= MAX_PROCS:
        raise InputError(f"--num-procs must be in 1..{MAX_PROCS}, got {num_procs}")
    allowed = [f"localhost:{port}", f"127.0.0.1:{port}", *(origins or [])]
    env_origins = [o.strip() for o in os.environ.get("GRPO_LAB_ORIGINS", "").split(",") if o.strip()]
    cmd = [sys.executable, "-m", "grpo_lab.server", str(APP_PATH), "--port", str(port), "--address", address,
           "--num-procs", str(num_procs), "--index", "app"]
    if num_procs > 1:
        cmd.append("--reuse-sessions")
    for origin in dict.fromkeys(allowed + env_origins):
        cmd += ["--allow-websocket-origin", origin]
    if show:
        cmd.append("--show")
    return cmd


def cmd_serve(args: argparse.Namespace) -> int:
    cmd = serve_command(args.port, args.address, args.show, args.allow_websocket_origin, args.num_procs)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    print(f"grpo-lab: serving the lab at http://{args.address}:{args.port}/app (Ctrl-C to stop)", file=sys.stderr)
    if os.name == "posix":  # the server takes this process's place: `kill PID` stops it (and its workers)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(cmd[0], cmd)
    return subprocess.call(cmd)
