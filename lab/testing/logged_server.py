"""A lab server as ``grpo-lab serve`` runs it, its output kept in a file the test can read (tests/lab_server.py's
:func:`serve` discards it), and the process ids of its serving processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time

import psutil

from grpo_lab.testing.lab_server import free_port, wait_http
from grpo_lab.commands.serve import serve_command


@contextlib.contextmanager
def logged_server(*extra: str, num_procs: int = 1, open_files: int | None = None, env: dict | None = None):
    """Serve the lab (``serve_command`` plus ``extra`` flags); yields ``(url, log)`` where ``log()`` is the output
    so far and ``log.pids()`` the processes that serve (the workers with ``num_procs`` > 1). ``open_files``: the
    server's open-file limit, soft and hard (it cannot raise it); ``env``: variables added to its environment."""
    import resource

    port = free_port()
    cmd = [a for a in serve_command(port=port, num_procs=num_procs)]
    out = tempfile.NamedTemporaryFile(prefix="lab-server-", suffix=".log", delete=False)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    proc = subprocess.Popen([*cmd, *extra], stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=limit if open_files else None, env={**os.environ, **(env or {})})

    def log() -> str:
        with open(out.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def pids() -> list[int]:
        kids = psutil.Process(proc.pid).children()
        return [k.pid for k in kids] if num_procs > 1 else [proc.pid]

    log.pids = pids
    try:
        url = f"http://127.0.0.1:{port}/app"
        wait_http(f"http://127.0.0.1:{port}/health", timeout=120)
        deadline = time.time() + 30
        while num_procs > 1 and len(pids()) < num_procs and time.time() < deadline:
            time.sleep(0.2)
        yield url, log
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.close()
        os.unlink(out.name)
