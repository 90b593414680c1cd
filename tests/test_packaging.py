"""The wheel installs one import name, grpo_lab, and the installed package works from it: from an empty
folder, every README command that names a run (a shipped one by its label, one of the user's from their runs
folder) exits 0."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRL_RUN = ROOT / "tests" / "fixtures" / "ingest" / "trl_run"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh environment's folder, its python): the wheel built from a copy of the sources and installed
    alone into a new virtual environment."""
    tmp_path = tmp_path_factory.mktemp("wheel")
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
    # the dependencies (numpy, panel, tqdm ...) are the test environment's: its site-packages folders are named
    # in a .pth file, so they come after the fresh environment's own site-packages, which holds the wheel and is
    # all the probe lists (a folder named in a .pth is only put on sys.path: the editable install's own .pth
    # hook in it is not run, so the checkout's grpo_lab stays out)
    venv.create(env_dir, system_site_packages=False, with_pip=True)
    (site,) = (env_dir / "lib").glob("python3*/site-packages")
    (site / "test-environment.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, timeout=300)
    return env_dir, py


@pytest.mark.slow
def test_wheel_installs_only_grpo_lab(installed, tmp_path):
    env_dir, py = installed
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


def readme_run_commands(text: str, labels) -> list[list[str]]:
    """The ``grpo-lab`` command lines of the README's code blocks that read a run: an argument under ``runs/``
    that is not the value of ``--out``, or one of ``labels`` (the shipped runs'); split as a shell would,
    optional ``[...]`` parts dropped."""
    found, fence = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None  # an opening fence (its language) or a closing one
            continue
        line = re.sub(r"\s+#.*$", "", line.strip())
        if fence in ("bash", "sh", "console", "") and line.startswith("grpo-lab "):
            argv = shlex.split(re.sub(r"\[[^\]]*\]", "", line))[1:]
            if any((a.startswith("runs/") or a in labels) and argv[i - 1] != "--out" for i, a in enumerate(argv)):
                found.append(argv)
    return found


def test_readme_run_commands_are_found():
    """The parser sees the README's commands that read a run (so the test below cannot pass by finding none)."""
    from grpo_lab.replay.catalog import list_runs

    commands = readme_run_commands((ROOT / "README.md").read_text(), list_runs(ROOT / "runs"))
    assert {argv[0] for argv in commands} >= {"compare", "diagnose", "inspect"}
    assert readme_run_commands("```bash\ngrpo-lab compare a runs/b  # x\ngrpo-lab train --out runs/c\n```\n"
                               "```python\ngrpo-lab inspect a\n```\ngrpo-lab inspect a\n", {"a"}) == \
        [["compare", "a", "runs/b"]]


@pytest.mark.slow
def test_every_readme_command_naming_a_run_works_from_an_empty_folder(installed, tmp_path):
    """Each README command that reads a run, with the label form of its ``runs/...`` arguments, run by the installed
    ``grpo-lab`` in an empty folder: a shipped run by its label; a run the README makes first (``runs/mine``,
    ``runs/my-trl-run``) stands in as a record ingested into the user's runs folder under that name."""
    env_dir, py = installed
    cli = env_dir / "bin" / "grpo-lab"
    env = {k: v for k, v in os.environ.items() if k != "GRPO_LAB_RUNS"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    listed = json.loads(subprocess.run([str(cli), "runs", "--json"], capture_output=True, text=True, timeout=120,
                                       cwd=tmp_path, env=env, check=True).stdout)
    shipped = {r["label"] for r in listed["runs"]}
    assert all(Path(r["path"]).is_relative_to(env_dir) for r in listed["runs"])  # the package's own copies
    commands = readme_run_commands((ROOT / "README.md").read_text(), shipped)
    labels = {a.removeprefix("runs/") for argv in commands for a in argv if a.startswith("runs/") or a in shipped}
    for label in sorted(labels - shipped):  # the README's own runs: made as the user would, in their folder
        made = subprocess.run([str(cli), "ingest", str(TRL_RUN), "--format", "trl", "--reward-columns", "correct",
                               "--name", label], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
        assert made.returncode == 0, made.stderr
    assert sorted(labels - shipped) == sorted(p.name for p in (tmp_path / "data" / "grpo-lab" / "runs").iterdir())
    for argv in commands:
        work = tmp_path / ("work-" + argv[0] + "-" + str(commands.index(argv)))
        work.mkdir()
        argv = [a.removeprefix("runs/") for a in argv]
        res = subprocess.run([str(cli), *argv], capture_output=True, text=True, timeout=300, cwd=work, env=env)
        assert res.returncode == 0, (argv, res.stderr)
        assert res.stdout.strip(), argv
        if "--html" in argv:  # what the command was asked to write is there, in the folder it ran in
            assert (work / argv[argv.index("--html") + 1]).is_file()
            assert any((work / argv[argv.index("--lists") + 1]).iterdir())
