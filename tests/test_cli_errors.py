"""Errors at the moment they happen, and files with the user's umask: `train-lm` without the trl extra, a
tables-only study with nothing to tabulate, a bare `grpo-lab`, `population --filter` saying what its mean is
over, and the atomic writer's permission bits (reports, lists, records, tables)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_lab.cli import main
from grpo_lab.sims.record import atomic_write_bytes, current_umask
from grpo_lab.sims.scenario import Scenario, evaluate

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
# makes `import trl` (and `import trl.anything`) fail as it does where the extra is not installed
BLOCKER = """
import sys
class _NoTrl:
    def find_spec(self, name, path=None, target=None):
        if name == "trl" or name.startswith("trl."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoTrl())
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_train_lm_without_the_trl_extra_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-c", "import sys; from grpo_lab.cli import main; "
                          "sys.exit(main(['train-lm', '--out', 'r', '--preset', 'smoke']))"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert res.returncode == 2, res.stderr
    assert res.stderr == "grpo-lab: train-lm needs the trl extra: pip install 'grpo-lab[trl]'\n"
    assert res.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["sitecustomize.py"]


def test_train_lm_names_the_extra_when_a_module_of_it_fails_to_import(capsys, monkeypatch):
    """A module found but not importable (a broken install) gives the same line, not a traceback."""
    import grpo_lab.commands.train_lm as train_lm

    def broken(args):
        raise ModuleNotFoundError("No module named 'peft.tuners'", name="peft.tuners")

    monkeypatch.setattr(train_lm, "_train", broken)
    monkeypatch.setattr(train_lm, "missing_extra", lambda: None)
    code, out, err = run(capsys, "train-lm", "--out", "r")
    assert (code, out, err) == (2, "", train_lm.MISSING_EXTRA + "\n")


def test_a_tables_only_study_with_nothing_to_tabulate_creates_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["--preset", "full"], ["--preset", "reduced", "--out", "somewhere/study"]):
        code, out, err = run(capsys, "study", *argv, "--tables-only")
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert err.startswith("grpo-lab study: error: nothing to tabulate in ")
        assert "tables.md" in err  # where the shipped tables are
        assert list(tmp_path.iterdir()) == []


def test_bare_grpo_lab_prints_its_usage_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: grpo-lab") and "runs" in err and "diagnose" in err


def test_population_says_what_its_mean_pass_rate_is_over(capsys):
    code, out, _ = run(capsys, "population", "--progress", "1", "--filter", "0.2", "0.8", "--json")
    got = json.loads(out)
    every = evaluate(Scenario(progress=1.0)).summary  # the lab's row without the filter: all prompts
    kept = evaluate(Scenario(progress=1.0, band=(0.2, 0.8))).summary
    assert code == 0 and got["over"] == "kept prompts"
    assert got["mean_pass_rate"] == kept["mean_pass_rate"]
    assert got["mean_pass_rate_all_prompts"] == pytest.approx(every["mean_pass_rate"], rel=1e-12)
    assert got["mean_pass_rate"] != pytest.approx(got["mean_pass_rate_all_prompts"], abs=0.05)
    code, out, _ = run(capsys, "population", "--progress", "1", "--filter", "0.2", "0.8")
    assert f"over the {kept['n_kept']} kept prompts (0.2 <= p_t <= 0.8)" in out
    assert "mean_pass_rate_all_prompts" in out
    code, out, _ = run(capsys, "population", "--json")
    assert json.loads(out)["over"] == "all prompts"


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_atomic_writer_uses_the_users_umask(tmp_path, umask):
    assert current_umask() == umask
    atomic_write_bytes(tmp_path / "f", b"x")
    assert mode(tmp_path / "f") == 0o666 & ~umask  # 022 -> 0644, 077 -> 0600, 002 -> 0664
    atomic_write_bytes(tmp_path / "f", b"y", mode=0o640)  # an explicit mode stays what it says
    assert mode(tmp_path / "f") == 0o640 and (tmp_path / "f").read_bytes() == b"y"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_reports_lists_and_records_the_user_asked_for_follow_the_umask(capsys, tmp_path, umask):
    want = 0o666 & ~umask
    code, _, err = run(capsys, "ingest", FIXTURES / "trl_run", "--format", "trl", "--out", tmp_path / "rec",
                         "--reward-columns", "correct")
    assert code == 0, err
    code, _, err = run(capsys, "diagnose", tmp_path / "rec", "--html", tmp_path / "report.html",
                       "--lists", tmp_path / "lists")
    assert code == 0, err
    files = [tmp_path / "report.html", *sorted((tmp_path / "lists").iterdir()), *sorted((tmp_path / "rec").iterdir())]
    assert len(files) >= 6
    assert {f.name: oct(mode(f)) for f in files} == {f.name: oct(want) for f in files}
