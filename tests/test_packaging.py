"""The wheel installs one import name, grpo_lab, and the installed package works from it."""
import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_installs_only_grpo_lab(tmp_path):
    # build from a copy of the sources: a stale build/ folder in the checkout would leak modules that
    # no longer exist into the wheel
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "runs-local", "tests", "docs", "notebooks", "benchmarks", "__pycache__",
        "test-artifacts"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(wheels), str(src)], check=True, timeout=300)
    (wheel,) = wheels.glob("grpo_lab-*.whl")
    env_dir = tmp_path / "venv"
    # system site packages: numpy, panel ... come from the test environment; the wheel itself goes into
    # the fresh environment's own site-packages, which is all this test lists.
    venv.create(env_dir, system_site_packages=True, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    probe = (
        "import json, sysconfig, pathlib, grpo_lab, grpo_lab.sims.outcomes as o, grpo_lab.cli\n"
        "site = pathlib.Path(sysconfig.get_paths()['purelib'])\n"
        "names = sorted(p.name for p in site.iterdir()\n"
        "               if not p.name.endswith(('.dist-info', '.pth')) and p.name not in ('pip', '_distutils_hack',\n"
        "               'setuptools', 'pkg_resources', '__pycache__'))\n"
        "from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, FEATURED, PAIRS, list_runs\n"
        "runs = list_runs()\n"
        "print(json.dumps({'names': names, 'file': grpo_lab.__file__, 'useful': float(o.p_useful(0.5, 2)),\n"
        "                  'static': (pathlib.Path(grpo_lab.__file__).parent / 'static' / 'kernel.js').is_file(),\n"
        "                  'runs_dir': str(DEFAULT_RUNS_DIR), 'featured': FEATURED in runs,\n"
        "                  'pairs': all(a in runs and b in runs for _, a, b in PAIRS.values())}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GRPO_LAB_RUNS"}  # the package's own runs
    out = json.loads(subprocess.run([str(py), "-c", probe], check=True, capture_output=True, text=True,
                                    timeout=120, cwd=tmp_path, env=env).stdout)
    assert out["names"] == ["grpo_lab"]
    assert Path(out["file"]).is_relative_to(env_dir)
    assert out["useful"] == 0.5
    assert out["static"]
    # the shipped runs travel in the package: the Replay tab opens on its featured run and every pair preset
    assert Path(out["runs_dir"]).is_relative_to(env_dir) and out["featured"] and out["pairs"]
    cli = env_dir / "bin" / "grpo-lab"
    res = subprocess.run([str(cli), "table", "--K", "2", "--p", "0.5", "--json"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
