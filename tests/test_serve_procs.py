"""`grpo-lab serve`'s defaults (several processes, sessions reused for the page request) in real Chromium.

With more than one process a page request and its websocket may reach different processes, and the page
is rendered from a reused session: each visitor must still get its own session, built from its own URL.
Several visitors open different views at once; each sees exactly the core's numbers for its URL, its
plots arrive after the first render, and moving a control in one leaves the others alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from grpo_lab.testing.lab_server import READ_CLASS, free_port, serve, show_plots, wait_http, wait_readout
from grpo_lab.commands.serve import DEFAULT_PROCS
from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import Scenario, evaluate


VIEWS = [("K=4&progress=0.3", dict(K=4, progress=0.3)), ("K=32&progress=0.9", dict(K=32, progress=0.9)),
         ("K=8&filter=true&progress=1", dict(K=8, progress=1.0, band=(0.2, 0.8))), ("", {})]


def useful(**kw) -> str:
    return percent(evaluate(Scenario(**kw)).summary["useful_share_realised"])


def serve_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grpo_lab.cli", "serve", *args], capture_output=True, text=True,
                          timeout=120)


def test_num_procs_option_and_its_default():
    default = serve_cli("--dry-run").stdout.split()
    assert default[default.index("--num-procs") + 1] == str(DEFAULT_PROCS) and "--reuse-sessions" in default
    one = serve_cli("--num-procs", "1", "--dry-run").stdout.split()
    assert one[one.index("--num-procs") + 1] == "1" and "--reuse-sessions" not in one
    for bad in ("0", "65", "two"):
        proc = serve_cli("--num-procs", bad, "--dry-run")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "--num-procs" in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.browser
@pytest.mark.slow
def test_default_serve_gives_each_visitor_its_own_view(browser):
    assert DEFAULT_PROCS > 1  # the configuration under test is the default one
    port = free_port()
    cmd = [sys.executable, "-m", "grpo_lab.cli", "serve", "--port", str(port)]
    with serve(cmd=cmd, port=port) as url:
        pages = [browser.new_page() for _ in VIEWS]
        try:
            for page, (query, _) in zip(pages, VIEWS):
                page.goto(f"{url}?{query}" if query else url, wait_until="commit")
            for page, (_, scenario) in zip(pages, VIEWS):
                wait_readout(page)
                page.wait_for_function(f"({READ_CLASS})('readout-useful') === {useful(**scenario)!r}", timeout=60_000)
                show_plots(page)  # built when scrolled to
            first = pages[0]
            k = first.locator("#gx-K")
            k.focus()
            k.press("End")
            first.wait_for_function(f"({READ_CLASS})('readout-useful') === {useful(K=64, progress=0.3)!r}")
            first.wait_for_timeout(1000)
            for page, (_, scenario) in zip(pages[1:], VIEWS[1:]):
                assert page.evaluate(READ_CLASS, "readout-useful") == useful(**scenario)
        finally:
            for page in pages:
                page.close()


@pytest.mark.slow
def test_kill_pid_of_grpo_lab_serve_stops_its_workers_too():
    """`kill PID` (SIGTERM) of `grpo-lab serve` with two processes: the server took the command's place (same PID),
    and both forked workers end with it instead of serving on."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "grpo_lab.cli", "serve", "--port", str(port), "--num-procs", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    workers = []
    try:
        wait_http(f"http://127.0.0.1:{port}/health", timeout=120)
        server = psutil.Process(proc.pid)
        assert "grpo_lab.server" in " ".join(server.cmdline())  # the command became the server
        deadline = time.time() + 60
        while len(workers) < 2 and time.time() < deadline:
            workers = [c for c in server.children() if "resource_tracker" not in " ".join(c.cmdline())]
            time.sleep(0.2)
        assert len(workers) == 2, workers
        workers += [c for c in server.children() if c not in workers]  # multiprocessing's resource tracker
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        gone, alive = psutil.wait_procs(workers, timeout=30)
        assert alive == [], alive
    finally:
        for p in workers:
            if p.is_running():
                p.kill()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
