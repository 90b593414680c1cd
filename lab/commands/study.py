"""``study``: the controlled estimator study (:mod:`grpo_lab.train.study`) in one command.

Each run of the study is trained in ``OUT/runs/.partial/NAME`` and moved to ``OUT/runs/NAME`` when
it is finished (one ``os.replace``), so a finished cell is always a complete record and an
interrupted study, run again with the same command, skips the finished cells and resumes the
unfinished ones from their last save. The tables (Markdown) are rewritten atomically to
``OUT/tables.md`` after every finished run and printed at the end, together with ``OUT/figures.json``:
every finished run's figures (:func:`~grpo_lab.train.study.run_figures`), its config and the
SHA-256 of its array files, the tables' whole input in a few hundred KB. ``--tables-only`` on a folder
holding ``figures.json`` and no records (the repository's ``runs/study-full-v1``) rewrites the same tables
from it alone; a record in ``OUT/runs`` takes precedence over its line in the file. ``--tables-only`` on a
folder with neither says so in one line (exit 2) and creates nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

from grpo_lab.sims.errors import InputError

DEFAULT_OUT = "runs-local/study-{preset}"
PARTIAL = ".partial"  #: folder of the runs in progress, inside OUT/runs
FIGURES = "figures.json"  #: every finished run's figures, config and array hashes, beside tables.md
FIGURES_FORMAT = "grpo-lab-study-figures"


def register(sub) -> None:
    from grpo_lab.train.study import PRESETS

    p = sub.add_parser("study", help="the controlled estimator study: many seeded runs, tables with intervals (needs torch)",
                       description="Train the study's runs (resumable: finished runs are kept and skipped), then "
                                   "write its tables to OUT/tables.md. Presets: " +
                                   "; ".join(f"{k}: {v.about}" for k, v in PRESETS.items()))
    p.add_argument("--preset", default="reduced", help=f"one of {', '.join(PRESETS)} (default reduced)")
    p.add_argument("--out", default=None, help=f"study folder (default {DEFAULT_OUT.format(preset='PRESET')})")
    p.add_argument("--device", default="cpu", help="auto, cpu or cuda (default cpu)")
    p.add_argument("--jobs", type=int, default=2, help="runs trained at once, one process each (default 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run (default 1)")
    p.add_argument("--tables-only", action="store_true",
                   help=f"train nothing; write the tables of the finished runs (records in OUT/runs, "
                        f"else OUT/{FIGURES})")
    p.add_argument("--cells", nargs="+", default=None, metavar="NAME",
                   help=f"train only these cells of the preset (run names), their rates taken from OUT/{FIGURES} "
                        "where the sweep's records are not in OUT/runs (how the shipped records are remade)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_study)


def _preset(name: str):
    from grpo_lab.train.study import PRESETS

    if name not in PRESETS:
        raise InputError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
    return PRESETS[name]


def _positive(name: str, v: int) -> int:
    if v < 1:
        raise InputError(f"--{name} must be an integer >= 1, got {v}")
    return v


def train_cell(cell, cfg, root: str, device: str, threads: int, command: str) -> str:
    """Train one cell (config ``cfg``) to completion in ``.partial/NAME`` (resuming it if a save is
    there), then move it to ``runs/NAME``. A SIGINT stops it after its step in progress, saved."""
    import contextlib
    import io

    from grpo_lab.train.loop import CHECKPOINT, train

    runs = Path(root) / "runs"
    final, partial = runs / cell.name, runs / PARTIAL / cell.name
    if (final / "run.json").is_file():
        return cell.name
    resume = (partial / "run.json").is_file() and (partial / CHECKPOINT).is_file()
    if partial.exists() and not resume:
        shutil.rmtree(partial)
    with contextlib.redirect_stderr(io.StringIO()):
        train(None if resume else cfg, partial, resume=resume, device=device, threads=threads, command=command)
    (partial / CHECKPOINT).unlink(missing_ok=True)
    os.replace(partial, final)
    try:
        partial.parent.rmdir()  # only when no other run is in progress
    except OSError:
        pass
    return cell.name


def _worker_init() -> None:
    """Each worker in a process group of its own, so a terminal's Ctrl-C reaches only the study,
    which passes exactly one SIGINT on to each worker (two would abort a step unsaved); SIGINT
    raises KeyboardInterrupt there even where the study was started with it ignored."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def read_figures(path: Path, preset_name: str) -> dict[str, dict]:
    """``{run name: {"figures", "config", "sha256"}}`` from a study's ``figures.json`` (JSON null read back
    as NaN, except ``ended``); ``{}`` when the file is absent. A file of another format or preset raises
    InputError."""
    import json

    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FIGURES_FORMAT or not isinstance(data.get("runs"), dict):
        raise InputError(f"{str(path)!r} is not a study's {FIGURES} (format {FIGURES_FORMAT!r})")
    if data.get("preset") != preset_name:
        raise InputError(f"{str(path)!r} holds preset {data.get('preset')!r}, not {preset_name!r}")
    nan = float("nan")
    return {name: {**run, "figures": {k: (nan if v is None and k != "ended" else v) for k, v in run["figures"].items()}}
            for name, run in data["runs"].items()}


class Study:
    """One study folder: which runs are finished, their figures, the tables.

    ``stored``: runs read from a ``figures.json`` (:func:`read_figures`), counted as finished where
    ``OUT/runs`` has no record of them (``--tables-only``); training passes none, so only records count."""

    def __init__(self, preset, root: Path, stored: dict | None = None, only: set | None = None):
        self.preset, self.root = preset, root
        self.stored = stored or {}
        self.only = only  #: names of the only cells to train (``--cells``): then only records count as finished
        self.figures: dict[str, dict] = {}
        self.provenance: dict[str, dict] = {}  # name -> {"config", "sha256"} of the record the figures came from

    def has_record(self, cell) -> bool:
        return (self.root / "runs" / cell.name / "run.json").is_file()

    def finished(self, cell) -> bool:
        return self.has_record(cell) or (self.only is None and cell.name in self.stored)

    def load(self, cells) -> None:
        from grpo_lab.sims.record import array_hashes, read_record
        from grpo_lab.train.study import run_figures

        for c in cells:
            if c.name in self.figures:
                continue
            if self.has_record(c):
                rec = read_record(self.root / "runs" / c.name)
                self.figures[c.name] = run_figures(rec)
                self.provenance[c.name] = {"config": rec.meta.get("config"),
                                           "sha256": array_hashes(self.root / "runs" / c.name)}
            elif c.name in self.stored:
                run = self.stored[c.name]
                self.figures[c.name] = run["figures"]
                self.provenance[c.name] = {"config": run.get("config"), "sha256": run.get("sha256")}

    def plan(self):
        """(sweep cells, main cells, rates chosen so far): a main cell whose sweep is unfinished has lr NaN."""
        from grpo_lab.train.study import choose_lrs, main_cells, sweep_cells

        sweep = sweep_cells(self.preset)
        while True:  # a widened sweep's new rates are known once the rates before them are finished
            self.load(sweep)
            wider = sweep_cells(self.preset, self.finals())
            if wider == sweep:
                break
            sweep = wider
        lrs = choose_lrs(self.preset, self.finals(), partial=True) if sweep else {}
        main = main_cells(self.preset, lrs)
        self.load(main)
        if self.preset.equal_groups:  # the equal-groups controls stop where their curriculum run stopped
            main = main_cells(self.preset, lrs, self.ends(main))
            self.load(main)
        return sweep, main, lrs

    def ends(self, cells) -> dict:
        """Steps trained by each finished curriculum run among ``cells``, by name."""
        return {c.name: int(self.figures[c.name]["steps"]) for c in cells if c.tag and c.name in self.figures}

    def finals(self) -> dict:
        """Final pass rate of every finished run loaded so far, by name."""
        return {k: v["final"] for k, v in self.figures.items()}

    def write_tables(self) -> str:
        from grpo_lab.sims.record import atomic_write_bytes
        from grpo_lab.train.study import tables

        sweep, main, lrs = self.plan()
        sweep_finals = {c.name: self.figures[c.name]["final"] for c in sweep if c.name in self.figures} if sweep else None
        extras = self.extras(sweep + main)
        text = tables(self.preset, main, self.figures, lrs, sweep_finals, extras)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(self.root / FIGURES, self.figures_json(sweep + main + extras).encode())
        atomic_write_bytes(self.root / "tables.md", text.encode())
        return text

    def extras(self, cells) -> list:
        """The finished runs of the folder (records, else lines of ``stored``) that are no cell of ``cells`` and
        whose names spell a cell (:func:`~grpo_lab.train.study.parse_cell`), loaded, sorted by name."""
        from grpo_lab.train.study import parse_cell

        planned = {c.name for c in cells}
        runs = self.root / "runs"
        names = {d.name for d in runs.iterdir() if (d / "run.json").is_file()} if runs.is_dir() else set()
        out = [c for c in (parse_cell(n) for n in sorted((names | set(self.stored)) - planned)) if c is not None]
        self.load(out)
        return out

    def figures_json(self, cells) -> str:
        """The ``figures.json`` of the finished runs among ``cells`` (sorted by name; NaN as null)."""
        import json

        from grpo_lab.sims.jsonable import jsonable

        runs = {c.name: {"figures": self.figures[c.name], **self.provenance[c.name]}
                for c in sorted(cells, key=lambda c: c.name) if c.name in self.figures}
        return json.dumps(jsonable({"format": FIGURES_FORMAT, "preset": self.preset.name, "runs": runs}),
                          indent=1, sort_keys=True) + "\n"


def _ready(study: Study, failed: set, running: set) -> tuple[list, list]:
    """(cells to train now in training order, names of cells waiting): the unfinished cells of
    :func:`~grpo_lab.train.study.blocks`, planned afresh, that are ready (a cell's rate is known once its
    sweep, widened, is finished; an equal-groups control's step count once its curriculum run is), less the
    failed and running."""
    from grpo_lab.train.study import blocks

    _, main, lrs = study.plan()
    order = [c for b in blocks(study.preset, lrs, study.finals(), study.ends(main)) for c in b
             if not study.finished(c) and c.name not in failed and c.name not in running
             and (study.only is None or c.name in study.only)]
    return [c for c in order if c.ready], [c.name for c in order if not c.ready]


def _run(study: Study, args, bar) -> list[str]:
    """Train the study, ``args.jobs`` runs at a time in one pool: whenever a worker is free it takes
    the first cell (training order) whose rate is known, so a sweep's runs fill the gaps while
    other cells wait for a rate. Never more runs submitted than workers, so nothing queued starts
    after an interrupt. Returns one line per failed run (and per cell left without a rate).

    Interrupt (KeyboardInterrupt in this process: Ctrl-C, or SIGTERM via :func:`cmd_study`): one
    SIGINT to each worker, whose run saves after its step in progress and stops; the workers are
    waited for, then the interrupt goes on. The runs stay in ``.partial`` and resume next time."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    failures, failed, running = [], set(), {}
    ready, waiting = _ready(study, failed, set())
    if not ready:
        return [f"{name}: {_waits(name)}" for name in waiting[:1]]
    ctx = multiprocessing.get_context("spawn")  # torch is not fork-safe once its threads have started
    pool = ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx, initializer=_worker_init)
    try:
        while ready or running:
            for c in ready[:args.jobs - len(running)]:
                running[pool.submit(train_cell, c, c.config(study.preset), str(study.root), args.device,
                                    args.threads, f"grpo-lab study --preset {study.preset.name} ({c.name})")] = c
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                c = running.pop(fut)
                try:
                    fut.result()
                except Exception as exc:  # one failed run must not stop the others
                    failures.append(f"{c.name}: {type(exc).__name__}: {exc}")
                    failed.add(c.name)
                    continue
                study.load([c])
                study.write_tables()
                if bar is not None:
                    bar.set_postfix_str(c.name)
                    bar.update(1)
            ready, waiting = _ready(study, failed, {c.name for c in running.values()})
            if bar is not None and study.only is None:
                sweep, main, _ = study.plan()
                bar.total = len(sweep) + len(main)
                bar.refresh()
    except KeyboardInterrupt:
        for proc in ctx.active_children():
            try:
                os.kill(proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return failures + [f"{name}: {_waits(name)}" for name in waiting[:1]]


def _waits(name: str) -> str:
    """Why a cell left waiting could not start."""
    return ("its curriculum run did not finish (the step it stops at is unknown)" if "-at?" in name
            else "its learning-rate sweep did not finish")


def nothing_to_tabulate(root: Path, preset_name: str) -> str:
    """The one line of a ``--tables-only`` on a folder with neither finished records nor a ``figures.json``,
    pointing at the shipped tables of the preset (or of its first design, ``PRESET-v1``) when the package has them."""
    from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR

    line = f"nothing to tabulate in {str(root)!r}: no finished runs in its runs/ and no {FIGURES}"
    shipped = DEFAULT_RUNS_DIR / f"study-{preset_name}" / "tables.md"
    if shipped.is_file():
        return line + f"; the shipped tables are {shipped}"
    first = DEFAULT_RUNS_DIR / f"study-{preset_name}-v1" / "tables.md"  # a preset not run, its first design shipped
    return line + (f"; the shipped tables of its first design (preset {preset_name}-v1) are {first}"
                   if first.is_file() else "")


def cmd_study(args: argparse.Namespace) -> int:
    preset = _preset(args.preset)
    _positive("jobs", args.jobs)
    _positive("threads", args.threads)
    root = Path(args.out or DEFAULT_OUT.format(preset=preset.name))
    if args.tables_only:
        study = Study(preset, root, stored=read_figures(root / FIGURES, preset.name))
        if not study.stored and not any((root / "runs").glob("*/run.json")):
            raise InputError(nothing_to_tabulate(root, preset.name))
        print(study.write_tables(), end="")
        return 0
    if not args.cells:
        study = Study(preset, root)
    else:
        study = Study(preset, root, stored=read_figures(root / FIGURES, preset.name), only=set(args.cells))
        sweep, main, _ = study.plan()
        known = {c.name for c in sweep + main}
        unknown = [n for n in args.cells if n not in known]
        if unknown:
            raise InputError(f"{unknown[0]!r} is no cell of preset {preset.name!r} whose rate is known in {str(root)!r}")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError("the study needs PyTorch; install it with: pip install 'grpo-lab[train]'") from None
    from grpo_lab.train.loop import resolve_device

    resolve_device(args.device)  # refuse an unusable device before anything starts
    try:
        (root / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create study folder {str(root)!r}: {exc.strerror}") from None
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        sweep, main, _ = study.plan()
        mine = [c for c in sweep + main if study.only is None or c.name in study.only]
        done = sum(study.finished(c) for c in mine)
        bar = tqdm(total=len(mine), initial=done, desc=f"study {preset.name}", unit="run", file=sys.stderr,
                   dynamic_ncols=True)
    def _term(signum, frame):
        raise KeyboardInterrupt

    main_thread = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _term) if main_thread else None  # `kill PID` stops it as Ctrl-C does
    try:
        failures = _run(study, args, bar)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, old_term)
        if bar is not None:
            bar.close()
    print(study.write_tables(), end="")
    for line in failures:
        print(f"grpo-lab study: run failed: {line}", file=sys.stderr)
    return 1 if failures else 0
