"""Shipped runs and the user's, everywhere by label: the catalogue (grpo_lab.replay.catalog), `grpo-lab runs`,
`inspect` / `compare` / `diagnose` given a label, `ingest` into the user's runs folder, and the Replay tab
listing the user's runs beside the shipped ones (names shown as text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpo_lab.cli import main
from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR, FEATURED, catalogue, list_runs, resolve_run, user_runs_dir
from grpo_lab.sims.errors import InputError
from grpo_lab.sims.record import write_record
from grpo_lab.testing.synthetic_record import synthetic_record

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
EVIL = "<b>bold</b>&amp"  # a folder name a page would render as markup if it were not escaped


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A user's data directory of their own (XDG_DATA_HOME), no GRPO_LAB_RUNS, and an empty working folder."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("GRPO_LAB_RUNS", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


SHIPPED = list_runs(DEFAULT_RUNS_DIR)


def test_the_users_runs_folder_is_the_xdg_data_directory(home, monkeypatch):
    assert user_runs_dir() == home / "data" / "grpo-lab" / "runs"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert user_runs_dir() == Path.home() / ".local" / "share" / "grpo-lab" / "runs"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # the spec: a relative path is ignored
    assert user_runs_dir() == Path.home() / ".local" / "share" / "grpo-lab" / "runs"


def test_grpo_lab_runs_and_the_runs_option_add_to_the_shipped_runs(home, monkeypatch):
    write_record(user_runs_dir() / "mine", synthetic_record(steps=3, name="mine"))
    write_record(home / "env" / "theirs", synthetic_record(steps=3))
    write_record(home / "opt" / "deep" / "one", synthetic_record(steps=3))
    monkeypatch.setenv("GRPO_LAB_RUNS", str(home / "env"))
    cat = catalogue([home / "opt"])
    assert set(SHIPPED) < set(cat.runs)  # nothing shipped is replaced
    assert cat.runs["mine"] == (user_runs_dir() / "mine", "yours")
    assert cat.runs["theirs"] == (home / "env" / "theirs", "GRPO_LAB_RUNS")
    assert cat.runs["deep/one"] == (home / "opt" / "deep" / "one", "--runs")
    assert next(iter(cat.runs)) == FEATURED and cat.hidden == []
    assert [f.origin for f in cat.folders] == ["shipped", "yours", "GRPO_LAB_RUNS", "--runs"]


def test_a_shipped_label_keeps_meaning_the_shipped_run(home, monkeypatch):
    write_record(home / "env" / FEATURED, synthetic_record(steps=3))
    monkeypatch.setenv("GRPO_LAB_RUNS", f"{home / 'env'}:{DEFAULT_RUNS_DIR}")  # the shipped folder again: once
    cat = catalogue()
    assert cat.runs[FEATURED] == (SHIPPED[FEATURED], "shipped")
    assert cat.hidden == [(FEATURED, home / "env" / FEATURED, "GRPO_LAB_RUNS")]
    assert len(cat.folders) == 3
    assert resolve_run(str(home / "env" / FEATURED)) == home / "env" / FEATURED  # its path still reaches it


def test_resolve_run_takes_a_path_then_a_label_and_says_what_it_is_not(home):
    assert resolve_run(FEATURED) == SHIPPED[FEATURED]
    assert resolve_run("lm/cpu-g4-sign") == SHIPPED["lm/cpu-g4-sign"]
    write_record(Path("here"), synthetic_record(steps=3))
    assert resolve_run("here") == Path("here")
    with pytest.raises(InputError, match="neither a run record directory nor the label of a run"):
        resolve_run("runs/absent")


def test_runs_lists_shipped_and_yours_with_where_they_live(home, capsys):
    write_record(user_runs_dir() / "mine", synthetic_record(steps=3))
    code, out, err = run(capsys, "runs", "--json")
    assert code == 0, err
    got = json.loads(out)
    rows = {r["label"]: r for r in got["runs"]}
    assert set(rows) == set(SHIPPED) | {"mine"}
    assert rows["mine"] == {"label": "mine", "from": "yours", "path": str(user_runs_dir() / "mine")}
    assert all(rows[k]["from"] == "shipped" and rows[k]["path"] == str(p) for k, p in SHIPPED.items())
    assert got["folders"][:2] == [{"from": "shipped", "path": str(DEFAULT_RUNS_DIR), "exists": True},
                                  {"from": "yours", "path": str(user_runs_dir()), "exists": True}]
    code, out, _ = run(capsys, "runs")
    assert code == 0 and f"\nmine " in out and f" yours    {user_runs_dir() / 'mine'}\n" in out and str(user_runs_dir()) in out


def test_inspect_compare_and_diagnose_take_a_label_from_any_folder(home, capsys):
    other, small = "broad-g4-sign-lr0.0004-s1", "lm/cpu-g4-sign"  # the doctor on a small run (a few seconds)
    for cmd, labels in (("inspect", [FEATURED]), ("compare", [FEATURED, other]), ("diagnose", [small])):
        code, out, err = run(capsys, cmd, *labels, "--json")
        assert code == 0, err
        by_label = json.loads(out)
        code, out, err = run(capsys, cmd, *(SHIPPED[label] for label in labels), "--json")
        by_path = json.loads(out)
        for d in (by_label, by_path):
            if cmd == "inspect":
                assert d.pop("path")
            if cmd == "diagnose":
                assert d.pop("timings")
        assert by_label == by_path, cmd
    code, _, err = run(capsys, "compare", FEATURED, "runs/" + FEATURED)  # no such folder here
    assert code == 2 and err.count("\n") == 1 and "grpo-lab runs lists them" in err


def test_the_runs_option_reaches_a_label(home, capsys):
    write_record(home / "elsewhere" / "sweep" / "a", synthetic_record(steps=3, name="a"))
    code, _, err = run(capsys, "inspect", "sweep/a")
    assert code == 2 and "neither a run record directory" in err
    code, out, err = run(capsys, "inspect", "sweep/a", "--runs", home / "elsewhere", "--json")
    assert code == 0, err
    assert json.loads(out)["name"] == "a"


def test_ingest_without_out_writes_into_the_users_runs_folder(home, capsys):
    code, out, err = run(capsys, "ingest", FIXTURES / "plain.jsonl", "--format", "jsonl")
    assert code == 0, err
    where = user_runs_dir() / "plain"
    assert (where / "run.json").is_file() and f"wrote {where}:" in out
    assert list(Path.cwd().iterdir()) == []  # nothing in the working folder
    assert catalogue().runs["plain"] == (where, "yours")
    code, out, err = run(capsys, "inspect", "plain", "--json")
    assert code == 0 and json.loads(out)["path"] == str(where)
    code, _, err = run(capsys, "ingest", FIXTURES / "plain.jsonl", "--format", "jsonl")  # never overwrites
    assert code == 2 and "--force" in err
    code, _, err = run(capsys, "ingest", FIXTURES / "plain.jsonl", "--format", "jsonl", "--name", "../x")
    assert code == 2 and "--out" in err


def test_the_replay_tab_lists_the_users_runs_beside_the_shipped_ones(home):
    from grpo_lab.replay.view import ReplayView

    write_record(user_runs_dir() / EVIL, synthetic_record(steps=4, name=EVIL))
    view = ReplayView()
    assert set(SHIPPED) | {EVIL} == set(view.state.choices)
    assert list(view.state.choices)[0] == FEATURED and view.state.run == FEATURED
    assert view.pairs  # the named pairs of shipped runs are still offered
    view.state.run = EVIL
    view.tolerance_input.value = 0.25  # the tolerance pane names the run
    shown = view.tolerance_pane.object
    assert "&lt;b&gt;bold&lt;/b&gt;&amp;amp" in shown and "<b>bold</b>" not in shown
    assert EVIL in view.run_select.options  # a Select's options are text, never markup
    assert view.slots[0].view.label == EVIL and view.grid.frames["runs"][0]["caption"].startswith(f"Run: {EVIL}.")
