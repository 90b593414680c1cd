"""grpo_lab.server without a browser: the headers it adds, its health route, and quiet closed sockets."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from tornado.httputil import HTTPHeaders
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from grpo_lab.commands.serve import serve_command
from grpo_lab.server import (HEALTH_PATH, ROUTES, SECURITY_HEADERS, HealthHandler, SecurityHeaders, content_security_policy,
                             quiet_closed_sockets)


class FakeLoop:
    def __init__(self):
        self.default_calls = []

    def default_exception_handler(self, context):
        self.default_calls.append(context)


def test_a_send_to_a_closed_page_is_one_info_line_not_a_traceback(caplog):
    loop = FakeLoop()
    with caplog.at_level(logging.INFO, logger="grpo_lab.server"):
        for exc in (WebSocketClosedError(), StreamClosedError()):
            quiet_closed_sockets(loop, {"message": "Task exception was never retrieved", "exception": exc})
    assert loop.default_calls == []
    assert [r.levelno for r in caplog.records] == [logging.INFO, logging.INFO]


def test_other_loop_errors_are_logged_as_before():
    loop = FakeLoop()
    context = {"message": "boom", "exception": ValueError("x")}
    quiet_closed_sockets(loop, context)
    assert loop.default_calls == [context]


def test_the_transform_adds_the_headers_and_installs_the_handler():
    async def run():
        request = SimpleNamespace(host="lab.example:5006")
        status, headers, chunk = SecurityHeaders(request).transform_first_chunk(200, HTTPHeaders(), b"x", True)
        return status, dict(headers), chunk, asyncio.get_running_loop().get_exception_handler()

    with ThreadPoolExecutor(1) as pool:  # a fresh thread: the browser tests' driver may hold this one's loop
        status, headers, chunk, handler = pool.submit(asyncio.run, run()).result()
    assert (status, chunk, handler) == (200, b"x", quiet_closed_sockets)
    assert all(headers[k] == v for k, v in SECURITY_HEADERS.items())
    policy = headers["Content-Security-Policy"]
    assert policy == content_security_policy("lab.example:5006") and "script-src-attr 'none'" in policy
    assert "connect-src 'self' blob: ws://lab.example:5006 wss://lab.example:5006;" in policy


def test_a_forged_host_cannot_add_sources_to_the_policy():
    policy = content_security_policy("evil.example; script-src * 'unsafe-inline'")
    assert policy.count("script-src ") == 1 and "*" not in policy and "evil.examplescript-src" in policy


def test_grpo_lab_serve_runs_the_hardened_server_with_the_health_route():
    assert serve_command(port=5006)[1:3] == ["-m", "grpo_lab.server"]
    assert (HEALTH_PATH, HealthHandler) in ROUTES


def test_the_warm_up_knows_the_lab_app_and_its_copy(tmp_path):
    """The Dockerfile serves a copy of app.py in its working folder: that copy is warmed up like the package's own."""
    from grpo_lab.commands.serve import APP_PATH
    from grpo_lab.server import _is_lab_app, warm

    copy = tmp_path / "app.py"
    copy.write_bytes(APP_PATH.read_bytes())
    other = tmp_path / "other.py"
    other.write_text("print('another app')\n")
    assert _is_lab_app(str(APP_PATH), APP_PATH) and _is_lab_app(str(copy), APP_PATH)
    assert not _is_lab_app(str(other), APP_PATH) and not _is_lab_app(str(tmp_path / "missing.py"), APP_PATH)
    assert warm([str(other)]) is False  # any other app is served as it is


def test_the_warm_up_does_a_first_upload_s_lasting_work_before_the_fork():
    """Warmed up (in a fresh interpreter, as ``grpo-lab serve`` does before forking its workers): the modules a
    first upload and the first Replay/Samplers tab import are imported, and multiprocessing's resource tracker, which
    the first upload reader's ``spawn`` would otherwise start in each worker, is already this process's child."""
    import subprocess
    import sys

    probe = ("import sys, psutil\n"
             "from grpo_lab.commands.serve import APP_PATH\n"
             "from grpo_lab.server import FIRST_USE_MODULES, warm\n"
             "before = [m for m in FIRST_USE_MODULES if m in sys.modules]\n"
             "assert warm([str(APP_PATH)]) is True\n"
             "after = [m for m in FIRST_USE_MODULES if m in sys.modules]\n"
             "kids = [' '.join(c.cmdline()) for c in psutil.Process().children()]\n"
             "print(before, after == list(FIRST_USE_MODULES), sum('resource_tracker' in k for k in kids))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "True", "1"]
