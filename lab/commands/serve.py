"""``grpo-lab serve``: run the browser lab with sensible flags.

The server is ``python -m grpo_lab.server`` serving the installed package's ``app.py``: ``panel serve`` plus the
lab's security headers (Content-Security-Policy), a cheap ``/health`` endpoint, and admission control
(:mod:`grpo_lab.admission`: limits on open sessions and new pages per address, idle pages released), see
:mod:`grpo_lab.server`. The port is checked first: one in use is one line and exit status 2, and the server
says its address only once it listens.
"""

from __future__ import annotations

import argparse
import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

from grpo_lab.sims.errors import InputError

__all__ = ["register", "serve_command", "serve_env", "APP_PATH"]

APP_PATH = Path(__file__).resolve().parents[1] / "app.py"  #: lab/app.py, found through the installed package
DEFAULT_PROCS = 2  #: server processes by default: a room of visitors arriving together is served on two cores
MAX_PROCS = 64


def register(sub) -> None:
    from grpo_lab.admission import DEFAULT_LIMITS as L

    p = sub.add_parser("serve", help="serve the browser lab (with security headers and per-visitor limits)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Serve the interactive lab to the browsers that can reach this machine.",
                       epilog="Environment:\n"
                              "  GRPO_LAB_ORIGINS  comma-separated host[:port]: more hosts that may open the lab's "
                              "websocket\n"
                              "                    (as --allow-websocket-origin)\n"
                              "  GRPO_LAB_RUNS     folders of run records to list in the Replay tab, added to the "
                              "shipped runs\n"
                              "  GRPO_LAB_CLASS_SECRET  any text: class links (--class) signed with it stay valid "
                              "across restarts\n\n"
                              "The session limits count per server process (with --num-procs 2, an address may "
                              "get up to\ntwice as much); a class link's room (--class) counts once for all of "
                              "them.\nThe defaults fit a classroom of 30 on 2 cores behind one "
                              "school address.\nA refused page gets HTTP 429 and a short page saying what to do.")
    p.add_argument("--port", type=int, default=5006, help="port (default 5006)")
    p.add_argument("--address", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--show", action="store_true", help="open the lab in a web browser")
    p.add_argument("--allow-websocket-origin", action="append", default=[], metavar="HOST[:PORT]",
                   help="another origin allowed to open the websocket (repeatable)")
    p.add_argument("--num-procs", type=int, default=DEFAULT_PROCS, metavar="N",
                   help=f"server processes (default {DEFAULT_PROCS}; each visit is served whole by one; "
                        "more for a bigger room, up to one per core)")
    p.add_argument("--max-sessions-per-address", type=int, default=L.per_address, metavar="N",
                   help=f"open sessions (tabs) from one address (default {L.per_address}: a class behind one NAT)")
    p.add_argument("--max-sessions-per-visitor", type=int, default=L.per_visitor, metavar="N",
                   help=f"open sessions (tabs) from one browser (default {L.per_visitor})")
    p.add_argument("--new-sessions-per-second", type=float, default=L.new_per_second, metavar="R",
                   help=f"new pages per second from one address, sustained (default {L.new_per_second:g})")
    p.add_argument("--new-sessions-burst", type=int, default=L.burst, metavar="N",
                   help=f"new pages at once from one address (default {L.burst}: a class arriving together)")
    p.add_argument("--idle-minutes", type=float, default=L.idle_minutes, metavar="M",
                   help=f"release a page that sent nothing for M minutes; it shows a notice to reload "
                        f"(default {L.idle_minutes:g}; 0: never)")
    from grpo_lab.server import CLASS_FLAGS

    for flag, dest, kind, default, text in CLASS_FLAGS:
        p.add_argument(flag, dest=f"class_{dest}", type=kind, default=default, metavar="N" if kind is int else "H",
                       help=text)
    p.add_argument("--runs", action="append", default=[], metavar="DIR",
                   help="a folder of run records and tracker logs to list in the Replay tab (repeatable; added to "
                        "GRPO_LAB_RUNS for the server)")
    p.add_argument("--dry-run", action="store_true", help="print the server's command line and exit")
    _add_server_options(p)
    p.set_defaults(func=cmd_serve, server_options=[])


#: panel serve's options that ``grpo-lab serve`` declares itself (with the lab's defaults), or cannot pass on
OWN_OPTIONS = {"--port", "--address", "--show", "--allow-websocket-origin", "--num-procs", "--args"}


class _Forward(argparse.Action):
    """Keeps the option and its values as given, in ``namespace.server_options``, for the server's command line."""

    def __call__(self, parser, namespace, values, option_string=None):
        values = [] if values is None else values if isinstance(values, list) else [values]
        namespace.server_options = [*getattr(namespace, "server_options", []), option_string, *map(str, values)]


def _add_server_options(parser) -> None:
    """Every option of ``python -m grpo_lab.server`` that ``grpo-lab serve`` does not declare itself: ``panel serve``'s
    own (``panel.command.serve.Serve.args``, the declaration the server parses them with), passed on as given."""
    from panel.command.serve import Serve

    group = parser.add_argument_group("panel serve's options, passed on to the server as given")
    for names, arg in Serve.args:
        names = (names,) if isinstance(names, str) else tuple(names)
        if not names[0].startswith("--") or set(names) & OWN_OPTIONS:
            continue
        action, nargs = getattr(arg, "action", None), getattr(arg, "nargs", None)
        takes = 0 if action in ("store_true", "store_false", "store_const", "count") else (
            nargs if isinstance(nargs, (int, str)) and nargs != "..." else None)
        metavar = getattr(arg, "metavar", None)
        given = {name: value for name in ("type", "choices")  # checked here: a bad value is one line, exit 2
                 if callable(value := getattr(arg, name, None)) or isinstance(value, (tuple, list))}
        help_text = str(getattr(arg, "help", "") or "").replace("%", "%%")
        group.add_argument(*names, dest=f"_server_{names[0][2:]}", action=_Forward, nargs=takes, **given,
                           metavar=None if takes == 0 else metavar if isinstance(metavar, str) else
                           names[0][2:].upper(), default=argparse.SUPPRESS, help=help_text)


def serve_command(port: int = 5006, address: str = "127.0.0.1", show: bool = False,
                  origins: list[str] | None = None, num_procs: int = DEFAULT_PROCS,
                  limits: dict | None = None, room: dict | None = None, options: list[str] = ()) -> list[str]:
    """The command line serving the lab (``panel serve``'s options, run by :mod:`grpo_lab.server`).

    With ``num_procs`` > 1 the server forks that many processes sharing the port, and sessions are
    reused for the page request (``--reuse-sessions``): the page is rendered from a cached session and
    a visitor's own session is built once, in whichever process its websocket reaches (without it, a
    websocket landing in another process than the page request would build the session twice).
    ``limits`` maps :data:`grpo_lab.server.ADMISSION_FLAGS`' options (``"--idle-minutes"``, ...) to values, ``room``
    :data:`grpo_lab.server.CLASS_FLAGS`' (``"--class"``, ``"--class-hours"``); ``options`` are more of the server's
    (``panel serve``'s, such as ``--use-xheaders``), appended as given.
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
    from grpo_lab.server import ADMISSION_FLAGS

    for flag, field, kind in ADMISSION_FLAGS:
        if flag in (limits or {}):
            value = (limits or {})[flag]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                    kind is int and value < 1) or (field == "new_per_second" and value <= 0):
                raise InputError(f"{flag} must be a positive number, got {value}")
            cmd += [flag, str(value)]
    from grpo_lab.classroom import MAX_CLASS

    size, hours = (room or {}).get("--class"), (room or {}).get("--class-hours")
    if size:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_CLASS:
            raise InputError(f"--class must be a number of students in 1..{MAX_CLASS}, got {size}")
        cmd += ["--class", str(size)]
    if hours is not None:
        if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= 24 * 366:
            raise InputError(f"--class-hours must be a number of hours in (0, {24 * 366}], got {hours}")
        cmd += ["--class-hours", str(hours)]
    return [*cmd, *options]


def serve_env(runs=(), environ=None) -> dict:
    """The server's environment: ``environ`` (default ``os.environ``) with the ``--runs`` folders, made absolute,
    after those of its ``GRPO_LAB_RUNS`` (the catalogue's order, :mod:`grpo_lab.replay.catalog`). A folder that is
    not a directory raises InputError."""
    env = dict(os.environ if environ is None else environ)
    folders = []
    for d in runs:
        path = Path(d).expanduser()
        if not path.is_dir():
            raise InputError(f"--runs {d}: not a folder")
        folders.append(str(path.resolve()))
    if folders:
        env["GRPO_LAB_RUNS"] = os.pathsep.join([*filter(None, [env.get("GRPO_LAB_RUNS", "")]), *folders])
    return env


def port_in_use(address: str, port: int) -> bool:
    """Whether ``address:port`` is taken by another listener (bound as Tornado binds: ``SO_REUSEADDR``)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return True
            raise InputError(f"cannot listen on {address}:{port}: {e.strerror}") from None
    return False


def cmd_serve(args: argparse.Namespace) -> int:
    from grpo_lab.server import ADMISSION_FLAGS

    limits = {flag: getattr(args, flag[2:].replace("-", "_")) for flag, _, _ in ADMISSION_FLAGS}
    room = {"--class": args.class_size, "--class-hours": args.class_hours}
    cmd = serve_command(args.port, args.address, args.show, args.allow_websocket_origin, args.num_procs, limits,
                        room, args.server_options)
    env = serve_env(args.runs)
    if args.dry_run:
        runs = f"GRPO_LAB_RUNS={env['GRPO_LAB_RUNS']} " if args.runs else ""
        print(runs + " ".join(cmd))
        return 0
    if port_in_use(args.address, args.port):
        raise InputError(f"port {args.port} is in use; choose another with --port")
    if os.name == "posix":  # the server takes this process's place: `kill PID` stops it (and its workers)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(cmd[0], cmd, env)
    return subprocess.call(cmd, env=env)
