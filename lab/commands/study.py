"""``study``: the controlled estimator study (:mod:`grpo_lab.sims.trainer.study`) in one command.

Each run of the study is trained in ``OUT/runs/.partial/NAME`` and moved to ``OUT/runs/NAME`` when
it is finished (one ``os.replace``), so a finished cell is always a complete record and an
interrupted study, run again with the same command, skips the finished cells and resumes the
unfinished ones from their last save. The tables (Markdown) are rewritten atomically to
``OUT/tables.md`` after every finished run and printed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from grpo_lab.sims.errors import InputError

DEFAULT_OUT = "runs-local/study-{preset}"
PARTIAL = ".partial"  #: folder of the runs in progress, inside OUT/runs


def register(sub) -> None:
    from grpo_lab.sims.trainer.study import PRESETS

    p = sub.add_parser("study", help="the controlled estimator study: many seeded runs, tables with intervals (needs torch)",
                       description="Train the study's runs (resumable: finished runs are kept and skipped), then "
                                   "write its tables to OUT/tables.md. Presets: " +
                                   "; ".join(f"{k}: {v.about}" for k, v in PRESETS.items()))
    p.add_argument("--preset", default="reduced", help=f"one of {', '.join(PRESETS)} (default reduced)")
    p.add_argument("--out", default=None, help=f"study folder (default {DEFAULT_OUT.format(preset='PRESET')})")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (default cpu)")
    p.add_argument("--jobs", type=int, default=2, help="runs trained at once, one process each (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    p.add_argument("--tables-only", action="store_true", help="train nothing; write the tables of the finished runs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_study)


def _preset(name: str):
    from grpo_lab.sims.trainer.study import PRESETS

    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


def _positive(name: str, v: int) -> int:
    if v < 1:
        raise InputError(f"--{name} must be an integer >= 1, got {v}")
    return v


def train_cell(cell, preset_name: str, root: str, device: str, threads: int) -> str:
    """Train one cell to completion in ``.partial/NAME`` (resuming it if a save is there), then move it."""
    import contextlib
    import io

    from grpo_lab.sims.trainer.loop import CHECKPOINT, train
    from grpo_lab.sims.trainer.study import PRESETS

    runs = Path(root) / "runs"
    final, partial = runs / cell.name, runs / PARTIAL / cell.name
    if (final / "run.json").is_file():
        return cell.name
    resume = (partial / "run.json").is_file() and (partial / CHECKPOINT).is_file()
    if partial.exists() and not resume:
        shutil.rmtree(partial)
    cfg = cell.config(PRESETS[preset_name])
    with contextlib.redirect_stderr(io.StringIO()):
        train(None if resume else cfg, partial, resume=resume, device=device, threads=threads,
              command=f"grpo-lab study --preset {preset_name} ({cell.name})")
    (partial / CHECKPOINT).unlink(missing_ok=True)
    os.replace(partial, final)
    try:
        partial.parent.rmdir()  # only when no other run is in progress
    except OSError:
        pass
    return cell.name


class Study:
    """One study folder: which runs are finished, their figures, the tables."""

    def __init__(self, preset, root: Path):
        self.preset, self.root = preset, root
        self.figures: dict[str, dict] = {}

    def finished(self, cell) -> bool:
        return (self.root / "runs" / cell.name / "run.json").is_file()

    def load(self, cells) -> None:
        from grpo_lab.sims.record import read_record
        from grpo_lab.sims.trainer.study import run_figures

        for c in cells:
            if c.name not in self.figures and self.finished(c):
                self.figures[c.name] = run_figures(read_record(self.root / "runs" / c.name))

    def plan(self):
        """(sweep cells, main cells, rates chosen so far): a main cell whose sweep is unfinished has lr NaN."""
        from grpo_lab.sims.trainer.study import choose_lrs, main_cells, sweep_cells

        sweep = sweep_cells(self.preset)
        self.load(sweep)
        lrs = choose_lrs(self.preset, {k: v["final"] for k, v in self.figures.items()}, partial=True) if sweep else {}
        main = main_cells(self.preset, lrs)
        self.load(main)
        return sweep, main, lrs

    def write_tables(self) -> str:
        from grpo_lab.sims.record import atomic_write_bytes
        from grpo_lab.sims.trainer.study import tables

        sweep, main, lrs = self.plan()
        sweep_finals = {c.name: self.figures[c.name]["final"] for c in sweep if c.name in self.figures} if sweep else None
        text = tables(self.preset, main, self.figures, lrs, sweep_finals)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.root / "tables.md", text.encode())
        return text


def _run(study: Study, cells, args, bar) -> list[str]:
    """Train the unfinished ``cells``, ``args.jobs`` at a time; returns one line per failed run."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    todo = [c for c in cells if not study.finished(c)]
    failures = []
    if not todo:
        return failures
    ctx = multiprocessing.get_context("spawn")  # torch is not fork-safe once its threads have started
    with ProcessPoolExecutor(max_workers=min(args.jobs, len(todo)), mp_context=ctx) as pool:
        futures = {pool.submit(train_cell, c, study.preset.name, str(study.root), args.device, args.threads): c
                   for c in todo}
        try:
            for fut in as_completed(futures):
                c = futures[fut]
                try:
                    fut.result()
                except Exception as exc:  # one failed run must not stop the others
                    failures.append(f"{c.name}: {type(exc).__name__}: {exc}")
                    continue
                study.load([c])
                study.write_tables()
                if bar is not None:
                    bar.set_postfix_str(c.name)
                    bar.update(1)
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)  # the runs in flight save and stop (SIGINT reaches them)
            raise
    return failures


def cmd_study(args: argparse.Namespace) -> int:
    preset = _preset(args.preset)
    _positive("jobs", args.jobs)
    _positive("threads", args.threads)
    root = Path(args.out or DEFAULT_OUT.format(preset=preset.name))
    study = Study(preset, root)
    if args.tables_only:
        print(study.write_tables(), end="")
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError("the study needs PyTorch; install it with: pip install 'grpo-lab[train]'") from None
    from grpo_lab.sims.trainer.loop import resolve_device
    from grpo_lab.sims.trainer.study import blocks, main_cells, sweep_cells

    resolve_device(args.device)  # refuse an unusable device before anything starts
    try:
        (root / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create study folder {str(root)!r}: {exc.strerror}") from None
    total = len(sweep_cells(preset)) + len(main_cells(preset))
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        sweep, main, _ = study.plan()
        done = sum(study.finished(c) for c in sweep + main)
        bar = tqdm(total=total, initial=done, desc=f"study {preset.name}", unit="run", file=sys.stderr,
                   dynamic_ncols=True)
    failures, i = [], 0
    try:
        while True:  # block by block; a block's rates are known once the blocks before it are done
            _, _, lrs = study.plan()
            todo = blocks(preset, lrs)
            if i >= len(todo):
                break
            unready = [c.name for c in todo[i] if c.lr != c.lr]
            if unready:
                failures.append(f"{unready[0]}: its learning-rate sweep did not finish")
                break
            failures += _run(study, todo[i], args, bar)
            i += 1
    finally:
        if bar is not None:
            bar.close()
    print(study.write_tables(), end="")
    for line in failures:
        print(f"grpo-lab study: run failed: {line}", file=sys.stderr)
    return 1 if failures else 0
