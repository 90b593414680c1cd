"""``grpo-lab`` run in the test's own process: what a test of the command line needs without starting Python.

:func:`run_cli` calls :func:`grpo_lab.cli.main` with stdout and stderr captured and returns what
``subprocess.run(..., capture_output=True, text=True)`` would (``returncode``, ``stdout``, ``stderr``), an
argparse exit (``SystemExit``) included. A test that needs a process of its own (a signal, a server, the
installed entry point, a traceback that must not escape to the terminal) still starts one.
"""

from __future__ import annotations

import contextlib
import io
import subprocess


def run_cli(*args: object) -> subprocess.CompletedProcess:
    """``grpo-lab ARGS...`` in process; each argument is passed as ``str(arg)``."""
    from grpo_lab.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            if isinstance(exc.code, str):
                print(exc.code, file=err)
    return subprocess.CompletedProcess(["grpo-lab", *argv], int(code or 0), out.getvalue(), err.getvalue())
