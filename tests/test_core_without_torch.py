"""The core (``grpo_lab.sims``) without torch and without the app: every module of it imports, and its own tests
pass, in a Python where ``import torch`` fails; and no module of it imports the lab (the UI) or torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from grpo_lab.testing.no_torch import NO_TORCH as BLOCK

ROOT = Path(__file__).resolve().parents[1]

#: the core's own tests, run again with torch made unimportable
CORE_TESTS = ["test_outcomes.py", "test_population.py", "test_advantages.py", "test_kcost.py", "test_sweep.py",
              "test_record.py", "test_record_append.py", "test_montecarlo.py"]


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, cwd=ROOT, timeout=900)


def test_every_core_module_imports_without_torch_and_without_the_app():
    res = run("""
import importlib, pkgutil
import grpo_lab.sims as core
before = set(sys.modules)
names = [m.name for m in pkgutil.walk_packages(core.__path__, 'grpo_lab.sims.')]
for name in names:
    importlib.import_module(name)
loaded = set(sys.modules) - before
outside = sorted(m for m in loaded if m.startswith('grpo_lab.') and not m.startswith('grpo_lab.sims'))
assert not outside, outside
assert 'torch' not in sys.modules
assert not any(m.split('.')[0] in ('panel', 'bokeh', 'param') for m in loaded), sorted(
    m for m in loaded if m.split('.')[0] in ('panel', 'bokeh', 'param'))[:5]
print(len(names))
""")
    assert res.returncode == 0, res.stderr[-2000:]
    assert int(res.stdout.split()[-1]) >= 40  # every module was walked (sims/, ingest/, doctor/, samplers/)


def test_the_cores_tests_pass_without_torch():
    paths = [str(ROOT / "tests" / name) for name in CORE_TESTS]
    res = run(f"""
import pytest
# test_grpo_matches_torch_std compares with torch itself: the one core test that needs it
code = pytest.main(['-q', '-p', 'no:cacheprovider', '-o', 'addopts=', '-k', 'not torch', *{paths!r}])
assert 'torch' not in sys.modules
sys.exit(int(code))
""")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert " passed" in res.stdout and " failed" not in res.stdout
