"""``grpo-lab study``: cells, learning-rate choice, intervals computed independently, tables with missing
cells marked, and a study that resumes from its finished runs without training them again."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from grpo_lab.cli import main
from grpo_lab.sims.errors import InputError
from grpo_lab.train import study
from grpo_lab.train.study import (PRESETS, Cell, choose_lrs, main_cells, sweep_cells, sweep_rates, t_interval,
                                         tables)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_STUDY = ROOT / "runs" / "study-full-v1"  #: the first full study's tables and figures.json, shipped
#: the first reduced design (one warm start, 2 RL seeds, plain vs DAPO)
REDUCED_V1 = PRESETS["reduced-v1"]


def test_t_interval_matches_the_textbook_formula():
    v = [0.61, 0.64, 0.58, 0.70, 0.66]
    m, h = t_interval(v)
    # t_{0.975, 4} = 2.7764451052 (tables); sample sd with n - 1
    sd = math.sqrt(sum((x - np.mean(v)) ** 2 for x in v) / 4)
    assert m == pytest.approx(np.mean(v)) and h == pytest.approx(2.7764451052 * sd / math.sqrt(5), rel=1e-9)
    assert t_interval([0.5])[0] == 0.5 and math.isnan(t_interval([0.5])[1])


def test_cells_are_paired_and_share_one_start():
    p = PRESETS["full-v1"]
    cells = main_cells(p, {(reg, est): 1e-4 for reg in p.regimes for est in p.estimators})
    assert all(c.lr != c.lr for c in main_cells(p))  # the full preset's rates come from its sweep
    assert len(cells) == len(p.seeds) * (len(p.group_sizes) * len(p.estimators) * len(p.regimes) + len(p.regimes)) + (
        len(p.curriculum) * len(p.curriculum_seeds) * len(p.curriculum_regimes))
    assert len({c.name for c in cells}) == len(cells)
    cfgs = [c.config(p) for c in cells[:3]]
    assert {c.sft_seed for c in cfgs} == {study.SFT_SEED} and all(c.max_grad_norm == 0 for c in cfgs)
    assert study.SWEEP_SEED not in p.seeds and all(c.seed == study.SWEEP_SEED for c in sweep_cells(p))
    assert [c.G for c in cells][0] == 4  # G = 4 first: the most informative cells are trained first
    ds = [c for c in cells if c.ds and not c.tag]
    assert {(c.estimator, c.G) for c in ds} == {(study.DS_ESTIMATOR, study.DS_G)} and len(ds) == 2 * len(p.seeds)
    assert REDUCED_V1.sweep_lrs == () and len(main_cells(REDUCED_V1)) == 12


def test_learning_rate_choice_is_the_best_on_the_held_out_seed():
    p = PRESETS["full-v1"]
    r = sorted(p.sweep_lrs)
    best = {"sign": {r[1]}, "dr_grpo": {r[1], r[2]}}  # interior winners; dr_grpo's tie goes to the lower rate
    finals = {c.name: (0.5 if c.lr in best.get(c.estimator, {r[2]}) else 0.4) for c in sweep_cells(p)}
    lrs = choose_lrs(p, finals)
    assert lrs[("weak", "sign")] == r[1] and lrs[("weak", "dr_grpo")] == r[1] and lrs[("broad", "tasa")] == r[2]
    finals.pop(next(iter(finals)))
    with pytest.raises(InputError, match="sweep lacks"):
        choose_lrs(p, finals)


def test_a_sweep_is_widened_past_an_end_rate_that_wins_up_to_its_cap():
    p = PRESETS["full-v1"]
    name = lambda lr: Cell("sweep", "weak", 4, "sign", study.SWEEP_SEED, lr).name  # noqa: E731
    rising = {name(lr): lr for lr in p.sweep_lrs}  # the highest rate wins every time
    assert sweep_rates(p, "weak", "sign") == tuple(sorted(p.sweep_lrs))
    assert sweep_rates(p, "weak", "sign", {}) == tuple(sorted(p.sweep_lrs))  # nothing finished: nothing added
    top = max(p.sweep_lrs)
    assert sweep_rates(p, "weak", "sign", rising)[-1] == top * study.SWEEP_FACTOR
    assert name(top * study.SWEEP_FACTOR) == name(float(f"{top * study.SWEEP_FACTOR:g}"))  # same name written out
    assert ("weak", "sign") not in choose_lrs(p, rising, partial=True)  # widened, the new rate not run yet
    lrs = [top * study.SWEEP_FACTOR ** k for k in range(1, p.sweep_widen + 2)]
    rising.update({name(lr): lr for lr in lrs})
    assert len(sweep_rates(p, "weak", "sign", rising)) == len(p.sweep_lrs) + p.sweep_widen  # the cap
    assert choose_lrs(p, rising, partial=True)[("weak", "sign")] == lrs[p.sweep_widen - 1]
    peaked = {name(lr): -abs(lr - sorted(p.sweep_lrs)[1]) for lr in p.sweep_lrs}  # an interior rate wins
    assert sweep_rates(p, "weak", "sign", peaked) == tuple(sorted(p.sweep_lrs))
    falling = {name(lr): -lr for lr in p.sweep_lrs}  # the lowest wins: widened downwards
    assert sweep_rates(p, "weak", "sign", falling)[0] == min(p.sweep_lrs) / study.SWEEP_FACTOR
    assert {c.name for c in sweep_cells(p, rising) if c.estimator == "sign" and c.regime == "weak"} == {
        name(lr) for lr in (*p.sweep_lrs, *lrs[:p.sweep_widen])}


def _disk_finals(root, p):
    """Final pass rates of a finished study's sweep runs, its widened rates included."""
    finals = {}
    while True:
        new = {c.name: json.loads((root / "runs" / c.name / "run.json").read_text())["summary"]["final_eval_pass_rate"]
               for c in sweep_cells(p, finals) if c.name not in finals}
        if not new:
            return finals
        finals.update(new)


def _figs(final, pass0=0.3):
    nan = float("nan")
    return {"pass0": pass0, "final": final, "never0": 0.5, "never": 0.4, "all_pass": 0.1, "all_fail": 0.5,
            "per_useful": 8.0, "steps": 200, "ended": None, "drawn_per_step": nan, "effective_group_rate": nan,
            "amplification": nan, "dropped_all_pass": nan, "dropped_all_fail": nan}


def test_tables_pair_by_seed_and_mark_missing_cells():
    p = REDUCED_V1
    cells = main_cells(p)
    figs = {}
    for c in cells:
        if c.regime == "broad" and not c.ds:
            figs[c.name] = _figs(0.6 + 0.01 * c.seed + (0.05 if c.estimator == "sign" else 0.0))
    sign1 = Cell("main", "weak", 4, "sign", 1, cells[0].lr)
    figs[sign1.name] = _figs(0.5)
    text = tables(p, cells, figs, None)
    rows = {line.split("|")[1].strip() + "/" + line.split("|")[3].strip(): line for line in text.splitlines()
            if line.startswith("| broad") or line.startswith("| weak")}
    broad_sign = rows["broad/sign"].split("|")
    assert broad_sign[8].strip() == "0.050 ± 0.000 (n=2)"  # paired: the seed effect cancels exactly
    assert "1/2 **incomplete**" in rows["weak/sign"] and "missing" in rows["weak/sign"]  # no dr_grpo to pair with
    assert "0/2 **incomplete**" in rows["weak/dr_grpo"]
    assert f"{len(figs)} of {len(cells)} runs finished" in text


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    import os

    root = tmp_path_factory.mktemp("study")
    old = os.environ.get("GRPO_LAB_CACHE")
    os.environ["GRPO_LAB_CACHE"] = str(tmp_path_factory.mktemp("cache"))  # the workers inherit it
    try:
        code = main(["study", "--preset", "smoke", "--out", str(root), "--jobs", "2", "--no-progress"])
        yield root, code
    finally:
        if old is None:
            os.environ.pop("GRPO_LAB_CACHE", None)
        else:
            os.environ["GRPO_LAB_CACHE"] = old


def test_smoke_study_trains_every_cell_and_writes_tables(smoke):
    root, code = smoke
    p = PRESETS["smoke"]
    assert code == 0
    finals = _disk_finals(root, p)
    lrs = choose_lrs(p, finals)
    sweep = sweep_cells(p, finals)
    names = {c.name for c in sweep} | {c.name for c in main_cells(p, lrs)}
    on_disk = {d.name for d in (root / "runs").iterdir()}
    assert on_disk == names  # every run finished, no .partial left, no checkpoint kept
    assert not list((root / "runs").glob("*/checkpoint.pt"))
    for (reg, est), lr in lrs.items():  # each chosen rate is interior, or its sweep was widened to the cap
        rates = sweep_rates(p, reg, est, finals)
        assert rates[0] < lr < rates[-1] or len(rates) == len(p.sweep_lrs) + p.sweep_widen
    text = (root / "tables.md").read_text()
    assert f"{len(names) - len(sweep)} of {len(names) - len(sweep)} runs finished" in text
    assert "Learning-rate sweep" in text and "**incomplete**" not in text


def test_a_finished_study_trains_nothing_again_and_an_interrupted_run_resumes(smoke, capsys):
    root, _ = smoke
    import shutil

    from grpo_lab.sims.record import read_record
    from grpo_lab.train.loop import train

    p = PRESETS["smoke"]
    cell = next(c for c in main_cells(p, choose_lrs(p, _disk_finals(root, p))) if not c.ds)
    victim = root / "runs" / cell.name
    before = read_record(victim)
    shutil.rmtree(victim)
    partial = root / "runs" / ".partial" / cell.name

    def stop(run_, metrics):
        if run_.step == 1:
            raise KeyboardInterrupt  # as Ctrl-C after the first step: record and checkpoint saved

    with pytest.raises(KeyboardInterrupt):
        train(cell.config(p), partial, device="cpu", threads=1, on_step=stop)
    assert read_record(partial).meta["steps_completed"] == 1
    others = {d.name: (d / "run.json").stat().st_mtime_ns for d in (root / "runs").iterdir() if d != partial.parent}
    assert main(["study", "--preset", "smoke", "--out", str(root), "--no-progress"]) == 0
    assert {d.name: (d / "run.json").stat().st_mtime_ns for d in (root / "runs").iterdir() if d.name in others} == others
    after = read_record(victim)  # resumed from its save, and equal to the uninterrupted run
    assert not partial.parent.exists() and after.meta["complete"] and after.meta["name"] == cell.name
    for k in ("prompt_id", "rewards", "advantages"):
        np.testing.assert_array_equal(after.groups[k], before.groups[k], err_msg=k)
    np.testing.assert_array_equal(after.evals["pass_rate"], before.evals["pass_rate"])
    capsys.readouterr()
    assert main(["study", "--preset", "smoke", "--out", str(root), "--tables-only"]) == 0
    assert "Preset `smoke`" in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--preset", "huge"], "unknown preset 'huge'"),
    (["--jobs", "0"], "--jobs must be"),
    (["--device", "tpu"], "unknown device"),
])
def test_bad_study_options_one_line_exit_2(tmp_path, capsys, argv, needle):
    code = main(["study", "--out", str(tmp_path / "s"), "--no-progress", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err


def test_blocks_train_every_cell_once_the_first_pair_first():
    p = PRESETS["full-v1"]
    lrs = {(reg, est): 2e-4 for reg in p.regimes for est in p.estimators}
    bl = study.blocks(p, lrs)
    flat = [c for b in bl for c in b]
    assert len(flat) == len(set(flat)) and set(flat) == set(sweep_cells(p)) | set(main_cells(p, lrs))
    first = p.estimators[:2]
    assert all(c.kind == "sweep" and c.regime == p.regimes[0] and c.estimator in first for c in bl[0])
    assert all(c.kind == "main" and c.regime == p.regimes[0] and c.G == 4 and c.estimator in first for c in bl[1])
    # a main cell never comes before the sweep of its (regime, estimator)
    seen = set()
    for c in flat:
        if c.kind == "sweep":
            seen.add((c.regime, c.estimator))
        elif not c.ds:
            assert (c.regime, c.estimator) in seen
    unknown = study.blocks(p, {})
    assert all(c.lr != c.lr for c in unknown[1]) and [c.lr for c in unknown[0]] == [c.lr for c in bl[0]]


_ENDLESS = """
import dataclasses, signal, sys
# started as from a terminal: the suite itself may run with SIGINT ignored (a background job, some CI runners),
# and an ignored signal stays ignored in a child
signal.signal(signal.SIGINT, signal.default_int_handler)
from grpo_lab.cli import main
from grpo_lab.train import study
p = study.PRESETS["smoke"]
study.PRESETS["endless"] = dataclasses.replace(p, name="endless", sweep_lrs=(), sweep_widen=0, regimes=("broad",),
                                               estimators=("dr_grpo",), options=p.options + (("steps", 10 ** 6),))
sys.exit(main(["study", "--preset", "endless", "--out", sys.argv[1], "--jobs", "2", "--no-progress"]))
"""


@pytest.mark.parametrize("how", ["ctrl-c", "kill"])
def test_one_sigint_stops_the_workers_and_leaves_resumable_runs(tmp_path, how):
    """One Ctrl-C (SIGINT to the study's process group, as a terminal sends it) or ``kill PID``
    (SIGTERM to the study alone): the study passes one SIGINT to each worker, whose run saves its
    step in progress and stops; nothing is left running, nothing counts as finished, and each run
    resumes from its save."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    from grpo_lab.sims.record import read_record
    from grpo_lab.train.config import GRPOConfig
    from grpo_lab.train.loop import CHECKPOINT, train

    root = tmp_path / "study"
    env = {**os.environ, "GRPO_LAB_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-c", _ENDLESS, str(root)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    partial = root / "runs" / ".partial"
    give_up = time.monotonic() + 900  # a guard against a hang, not a speed check
    try:
        while len(list(partial.glob("*/run.json"))) < 2:  # both runs in flight have saved once
            assert proc.poll() is None and time.monotonic() < give_up
            time.sleep(0.2)
        workers = [c for c in psutil.Process(proc.pid).children() if "spawn_main" in " ".join(c.cmdline())]
        before = {d.name: read_record(d).meta["steps_completed"] for d in partial.iterdir()}
        signalled = time.time() - 0.005  # less one tick of the file system's coarse clock
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        err = proc.communicate(timeout=900)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "grpo-lab study: interrupted", err
    assert len(workers) == 2 and not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    assert [d.name for d in (root / "runs").iterdir()] == [".partial"]  # no run counted as finished
    for name, k0 in before.items():
        rec = read_record(partial / name)
        k1 = rec.meta["steps_completed"]
        # one SIGINT: the step in progress finished and was saved after the signal (two would abort it unsaved).
        # k1 == k0 where the signal came within the step whose periodic save the test had just read (heavy load)
        assert (partial / name / "run.json").stat().st_mtime >= signalled
        assert k0 <= k1 < 10 ** 6 and not rec.meta["complete"] and (partial / name / CHECKPOINT).is_file()
    name = next(iter(before))
    k1 = read_record(partial / name).meta["steps_completed"]
    # resume takes the run's own config; only its number of steps is given here
    resumed = train(GRPOConfig(steps=k1 + 2), partial / name, resume=True, device="cpu", threads=1)
    assert resumed.meta["steps_completed"] == k1 + 2 and resumed.meta["complete"]


def test_curriculum_cells_carry_their_option_and_pair_with_dynamic_sampling_alone():
    p = PRESETS["full-v1"]
    lrs = {(reg, est): 2e-4 for reg in p.regimes for est in p.estimators}
    cur = [c for c in main_cells(p, lrs) if c.tag]
    assert len(cur) == len(p.curriculum) * len(p.curriculum_seeds) and all(c.ds for c in cur)
    for c in cur:
        cfg, opts = c.config(p), dict(c.extra)
        assert cfg.dynamic_sampling and all(getattr(cfg, k) == v for k, v in opts.items())
        assert c.name.startswith(f"{c.regime}-g{study.DS_G}-{study.DS_ESTIMATOR}-ds-{c.tag}-lr")
        assert cfg.retire_after in (0, 2) and (cfg.retire_after == 2) == ("retire_after" in opts)
    # trained after the first pair's cells, before the second pair's sweep
    flat = [c for b in study.blocks(p, lrs) for c in b]
    first_cur = flat.index(cur[0])
    assert all(c.estimator in p.estimators[:2] for c in flat[:first_cur])
    assert all(c.tag for c in flat[first_cur:first_cur + len(cur)])
    # the table pairs each variant with dynamic sampling alone, seed by seed
    figs = {c.name: _figs(0.5 + 0.01 * c.seed) for c in main_cells(p, lrs) if c.ds and not c.tag}
    figs.update({c.name: _figs(0.5 + 0.01 * c.seed - (0.03 if c.tag == p.curriculum[0][0] else 0.0)) for c in cur})
    text = tables(p, main_cells(p, lrs), figs, lrs)
    row = next(line for line in text.splitlines() if line.startswith(f"| weak | {p.curriculum[0][0]} |"))
    assert "-0.030 ± 0.000 (n=3)" in row and "3/3" in row


def test_retired_share_counts_n_consecutive_all_pass_groups():
    from grpo_lab.train.study import _retired_share

    ones, mixed = [1, 1, 1, 1], [1, 0, 1, 1]
    # prompt 0: pass, pass -> retired at N = 2; prompt 1: pass, mixed, pass -> never 2 in a row; prompt 2: pass x3
    g = {"prompt_id": np.array([0, 1, 2, 0, 1, 2, 1, 2]),
         "rewards": np.array([ones, ones, ones, ones, mixed, ones, ones, ones], float)}
    assert _retired_share(g, 2, 10) == 2 / 10  # prompts 0 and 2
    assert _retired_share(g, 3, 10) == 1 / 10  # prompt 2 only


def _same_figures(got: dict, want: dict) -> None:
    """Equal figure by figure, NaN equal to NaN (a figure a run does not have)."""
    assert set(got) == set(want)
    for k, v in want.items():
        assert got[k] == v or (isinstance(v, float) and v != v and got[k] != got[k]), (k, got[k], v)


def _check_figures_against_record(path: Path, run: dict) -> None:
    """A figures.json line against the record it came from: its array hashes, its config, its figures
    (as the study computes them, and the main ones again with plain numpy)."""
    from grpo_lab.sims.record import array_hashes
    from grpo_lab.sims.record import read_record
    from grpo_lab.train.study import run_figures

    rec = read_record(path)
    meta = json.loads((path / "run.json").read_text())
    assert run["sha256"] == {k: v["sha256"] for k, v in meta["files"].items()} == array_hashes(path)
    assert run["config"] == meta["config"]
    _same_figures(run["figures"], run_figures(rec))
    ev, r, kept = rec.evals["pass_rate"], rec.groups["rewards"], rec.groups["kept"]

    def mean(x):  # NaN for no value (a smoke run may train on no group), without numpy's empty-slice warning
        return float(np.mean(x)) if np.size(x) else float("nan")

    assert run["figures"]["pass0"] == pytest.approx(mean(ev[0]), abs=1e-12, nan_ok=True)
    assert run["figures"]["final"] == pytest.approx(mean(ev[-1]), abs=1e-12, nan_ok=True)
    assert run["figures"]["never"] == pytest.approx(mean(ev[-1] == 0), abs=1e-12, nan_ok=True)
    trained = r[kept]
    assert run["figures"]["all_fail"] == pytest.approx(mean(trained.max(1) == 0), abs=1e-12, nan_ok=True)
    assert run["figures"]["all_pass"] == pytest.approx(mean(trained.min(1) == 1), abs=1e-12, nan_ok=True)


def test_tables_from_the_figures_file_alone_are_the_tables_of_the_records(smoke, tmp_path, capsys):
    from grpo_lab.commands.study import FIGURES, read_figures

    root, _ = smoke
    capsys.readouterr()
    assert main(["study", "--preset", "smoke", "--out", str(root), "--tables-only"]) == 0
    from_records = capsys.readouterr().out
    alone = tmp_path / "figures-only"
    alone.mkdir()
    shutil.copy(root / FIGURES, alone / FIGURES)
    assert main(["study", "--preset", "smoke", "--out", str(alone), "--tables-only"]) == 0
    assert capsys.readouterr().out == from_records == (alone / "tables.md").read_text() == (root / "tables.md").read_text()
    assert (alone / FIGURES).read_bytes() == (root / FIGURES).read_bytes()  # written again, unchanged
    stored = read_figures(root / FIGURES, "smoke")
    assert set(stored) == {d.name for d in (root / "runs").iterdir()}  # every finished run, sweep included
    for name, run in stored.items():
        _check_figures_against_record(root / "runs" / name, run)


@pytest.mark.parametrize("content, needle", [
    ("{", "cannot read"),
    ('{"format": "grpo-lab-run", "runs": {}}', "is not a study's figures.json"),
    ('{"format": "grpo-lab-study-figures", "preset": "smoke", "runs": {}}', "holds preset 'smoke', not 'full-v1'"),
])
def test_a_bad_figures_file_is_one_line_exit_2(tmp_path, capsys, content, needle):
    (tmp_path / "figures.json").write_text(content)
    code = main(["study", "--preset", "full-v1", "--out", str(tmp_path), "--tables-only"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err


@pytest.mark.parametrize("preset", ["full-v1", "reduced-v1", "reduced"])
def test_the_shipped_tables_are_what_the_command_writes_from_the_shipped_figures(tmp_path, capsys, preset):
    shipped_dir = ROOT / "runs" / f"study-{preset}"
    copy = tmp_path / shipped_dir.name
    shutil.copytree(shipped_dir, copy)
    assert main(["study", "--preset", preset, "--out", str(copy), "--tables-only"]) == 0
    shipped = (shipped_dir / "tables.md").read_text()
    assert capsys.readouterr().out == shipped == (copy / "tables.md").read_text()
    assert (copy / "figures.json").read_bytes() == (shipped_dir / "figures.json").read_bytes()
    assert "**incomplete**" not in shipped and "missing" not in shipped  # every cell of the preset finished


def test_the_shipped_records_are_study_runs_whose_figures_the_tables_use():
    from grpo_lab.commands.study import read_figures
    from grpo_lab.replay.catalog import FEATURED, PAIRS, list_runs

    stored = read_figures(SHIPPED_STUDY / "figures.json", "full-v1")
    shipped = {label: path for label, path in list_runs(ROOT / "runs").items() if label in stored}
    assert {FEATURED} | {run for _, a, b in PAIRS.values() for run in (a, b)} <= set(shipped)
    for label, path in shipped.items():
        meta = json.loads((path / "run.json").read_text())
        if (meta.get("start") or {}).get("warmstart") == "shipped":
            # remade from the shipped warm start (docs/trainer.md, "Reproducing a cell"): the same cell, the same
            # config; its figures are its own (the full-v1 tables keep the figures of the run they were made from)
            from grpo_lab.sims.record import array_hashes, read_record
            from grpo_lab.train.study import run_figures

            assert meta["config"] == stored[label]["config"]
            own = {"config": meta["config"], "sha256": array_hashes(path), "figures": run_figures(read_record(path))}
            _check_figures_against_record(path, own)
        else:
            _check_figures_against_record(path, stored[label])


def test_runs_outside_the_cells_are_tabled_apart_and_paired_by_seed():
    from grpo_lab.train.study import parse_cell

    p = REDUCED_V1
    cells = main_cells(p)
    lr = cells[0].lr
    figs = {c.name: _figs(0.6 + 0.01 * c.seed + (0.02 if c.estimator == "sign" else 0.0)) for c in cells
            if c.regime == "broad" and not c.ds}
    # dr_grpo at twice the preset's rate, seeds 1 and 2: 0.1 below the preset's dr_grpo, 0.12 below its sign
    extra = [Cell("extra", "broad", 4, "dr_grpo", s, 2 * lr) for s in (1, 2)]
    figs.update({c.name: _figs(0.5 + 0.01 * c.seed) for c in extra})
    assert [parse_cell(c.name) for c in extra] == extra and parse_cell("broad-g4-x-lr2e-4-s1") is None
    text = tables(p, cells, figs, None, extras=extra)
    row = next(line for line in text.splitlines() if line.startswith("| broad-g4-dr_grpo |")).split("|")
    assert row[2].strip() == f"{2 * lr:g}" and row[3].strip() == "2" and row[4].strip() == "0.515 ± 0.064"
    assert row[5].strip() == f"-0.100 ± 0.000 (n=2) (preset lr {lr:g})" and row[6].strip() == "—"
    # the preset's own rows do not count the extras
    assert f"{len(figs) - len(extra)} of {len(cells)} runs finished" in text


@pytest.mark.parametrize("preset", ["full-v1", "reduced-v1", "reduced"])
def test_the_trainer_docs_show_the_shipped_tables_line_for_line(preset):
    doc = (ROOT / "docs" / "trainer.md").read_text().splitlines()
    lines = [line for line in (ROOT / "runs" / f"study-{preset}" / "tables.md").read_text().splitlines() if line.strip()]
    missing = [line for line in lines if line not in doc]
    assert not missing, missing[:3]
