"""``grpo-lab serve``'s command line: a port in use, the address said once the server listens, the help text."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from grpo_lab.testing.lab_server import free_port

#: the lab's session flags (grpo_lab.server.ADMISSION_FLAGS), named here so that the help test reads without them
FLAGS = ["--max-sessions-per-address", "--max-sessions-per-visitor", "--new-sessions-per-second",
         "--new-sessions-burst", "--idle-minutes"]


def serve_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grpo_lab.cli", "serve", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve_cli("--port", str(port), timeout=60)  # no server is started: it answers at once
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"port {port} is in use; choose another with --port" in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_help_names_the_operators_knobs_not_a_source_path():
    text = serve_cli("--help").stdout
    assert "panel serve lab/app.py" not in text and "lab/app.py" not in text
    for flag in FLAGS:
        assert flag in text
    assert "GRPO_LAB_RUNS" in text and "folders of run records to list in the Replay tab" in text
    assert "GRPO_LAB_ORIGINS" in text and "per server process" in text
    from grpo_lab.admission import DEFAULT_LIMITS
    from grpo_lab.server import ADMISSION_FLAGS

    assert [f for f, _, _ in ADMISSION_FLAGS] == FLAGS
    assert f"default {DEFAULT_LIMITS.per_address}" in text and f"default {DEFAULT_LIMITS.burst}" in text


def test_limits_travel_to_the_server_and_bad_ones_are_refused():
    from grpo_lab.admission import DEFAULT_LIMITS
    from grpo_lab.server import parse_limits

    cmd = serve_cli("--dry-run", "--idle-minutes", "5", "--max-sessions-per-visitor", "4").stdout.split()
    limits, rest = parse_limits(cmd[cmd.index("-m") + 2:])
    assert limits.idle_minutes == 5.0 and limits.per_visitor == 4 and limits.per_address == DEFAULT_LIMITS.per_address
    assert "--idle-minutes" not in rest and "--port" in rest  # panel serve never sees the lab's own flags
    for flag, bad in (("--max-sessions-per-address", "0"), ("--new-sessions-per-second", "0"),
                      ("--idle-minutes", "-1")):
        proc = serve_cli("--dry-run", flag, bad)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and flag in proc.stderr


@pytest.mark.slow
def test_the_address_is_said_once_the_server_listens():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "grpo_lab.cli", "serve", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        said = []
        for line in proc.stderr:
            if "serving the lab at" in line:
                said.append(line.strip())
                with socket.create_connection(("127.0.0.1", port), timeout=5):  # it listens already
                    pass
                break
        assert said == [f"grpo-lab: serving the lab at http://127.0.0.1:{port}/app (Ctrl-C to stop)"]
        os.killpg(proc.pid, signal.SIGTERM)
        rest = proc.stderr.read()
        assert "serving the lab at" not in rest  # said once, not once per process
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()  # the pipe is ours to close (left to the garbage collector it is a ResourceWarning)


def test_grpo_lab_serve_takes_every_option_of_the_server_and_passes_it_on():
    """``python -m grpo_lab.server`` takes panel serve's options (``Serve.args``) and the lab's; ``grpo-lab serve``
    declares each from the same declarations (``--args``, the served app's own argv, excepted: it serves the lab) and
    passes those given on as they were given, where the server parses them."""
    import argparse

    from panel.command.serve import Serve

    from grpo_lab.cli import build_parser
    from grpo_lab.server import ADMISSION_FLAGS, CLASS_FLAGS, _serve_command, parse_class, parse_limits

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["serve"]
    ours = set(sub._option_string_actions)
    theirs = {n for names, _ in Serve.args for n in ((names,) if isinstance(names, str) else names) if n[:2] == "--"}
    assert theirs - {"--args"} <= ours, sorted(theirs - ours)
    assert {f for f, *_ in ADMISSION_FLAGS + CLASS_FLAGS} <= ours

    cmd = serve_cli("--dry-run", "--use-xheaders", "--class", "150", "--class-hours", "2", "--keep-alive", "500",
                    "--log-level", "warning", "--exclude-headers", "a", "b").stdout.split()
    argv = cmd[cmd.index("-m") + 2:]
    limits, rest = parse_limits(argv)
    room, rest = parse_class(rest)
    assert room == {"size": 150, "hours": 2.0}
    parser = argparse.ArgumentParser()
    _serve_command()(parser=parser)
    args = parser.parse_args(rest)
    assert args.use_xheaders and args.keep_alive == 500 and args.log_level == "warning"
    assert args.exclude_headers == ["a", "b"] and args.port == 5006
    for bad in (("--keep-alive", "soon"), ("--class", "3000"), ("--class-hours", "-1")):
        proc = serve_cli("--dry-run", *bad)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (bad, proc.stderr)
