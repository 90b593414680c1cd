"""Rerun a recorded cell for its first steps and compare the rerun with its record.

    python -m grpo_lab.train.reproduce RUN [--steps N]      (RUN: a record folder, or a shipped run's label)

The rerun takes the record's own config (``steps`` cut to N), its torch thread count, the CPU, and
no warm-start cache, so its start is the shipped warm start of its (regime, sft_seed)
(:mod:`grpo_lab.train.warmstart`, hash checked) or, for a start that is not shipped, computed afresh.
Compared, step by step for the first N steps:

- **exactly**: the step-0 evaluation (every prompt's pass rate: counts of correct completions), every
  group drawn (prompt ids, rewards, kept, completion lengths) and every step figure that is a count
  or a ratio of counts (``frac_*``, ``reward_mean``, ``rollouts_*``, ``ds/groups_*``, the learning rate,
  ...): the same start and the same seeded draws must give the same outcomes;
- **to a relative tolerance of 1e-4** (:data:`RTOL`; with an absolute floor :data:`ATOL` = 1e-7 for
  figures that are zero up to rounding, such as the KL at step 0): the float figures of the update
  (:data:`FLOAT_FIGURES`: loss, KL, gradient norm, clip fraction) and the advantages, which a
  different summation order may change in the last bits without changing any outcome;
- not at all: the timings (``time_*``, ``wall_time_s``).

The choice: outcomes are discrete, so an exact match is the test that the start and the draws are the
same; float figures of the update carry rounding that depends on the BLAS kernel, and 1e-4 relative is
far below any difference between estimators or rates and far above float32 rounding over a few steps.
A changed warm start or seed changes the step-0 evaluation or the first groups, which the exact part
catches (``tests/test_study_rerun.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grpo_lab.sims.errors import InputError

RTOL = 1e-4  #: relative tolerance of the float figures of the update
ATOL = 1e-7  #: absolute floor of that comparison (figures that are zero up to rounding)
FLOAT_FIGURES = ("kl", "loss", "grad_norm", "clip_frac")  #: step figures compared to RTOL, not exactly
DEFAULT_STEPS = 3  #: steps rerun by default


@dataclass
class Comparison:
    """What a rerun matched: ``mismatches`` (one line each; empty: reproduced) and ``checked`` (counts)."""

    steps: int
    mismatches: list = field(default_factory=list)
    checked: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _match(cmp: Comparison, what: str, a, b, close: bool = False) -> None:
    """Record a mismatch of ``b`` (the rerun) against ``a`` (the record): values equal, or with ``close`` within
    :data:`RTOL` (floor :data:`ATOL`, NaN equal to NaN)."""
    a, b = (np.asarray(a, float), np.asarray(b, float)) if close else (np.asarray(a), np.asarray(b))
    cmp.checked[what] = int(a.size)
    if a.shape != b.shape:
        cmp.mismatches.append(f"{what}: shape {b.shape} in the rerun, {a.shape} in the record")
        return
    bad = ~np.isclose(b, a, rtol=RTOL, atol=ATOL, equal_nan=True) if close else a != b
    if bad.any():
        i = np.flatnonzero(np.reshape(bad, -1))
        how = f"beyond rtol {RTOL:g}" if close else "differ"
        cmp.mismatches.append(f"{what}: {len(i)} of {a.size} values {how} (first at {int(i[0])}: record "
                              f"{a.reshape(-1)[i[0]].item()!r}, rerun {b.reshape(-1)[i[0]].item()!r})")


def compare(record, rerun, steps: int) -> Comparison:
    """Compare the first ``steps`` steps and the step-0 evaluation of two records (:class:`RunRecord`)."""
    cmp = Comparison(steps)
    ev_a, ev_b = record.evals, rerun.evals
    if not len(ev_a["step"]) or int(ev_a["step"][0]) != 0 or not len(ev_b["step"]) or int(ev_b["step"][0]) != 0:
        cmp.mismatches.append("step-0 evaluation: missing")
    else:
        _match(cmp, "step-0 evaluation (pass rate per prompt)", ev_a["pass_rate"][0], ev_b["pass_rate"][0])
    ga, gb = record.groups, rerun.groups
    sa, sb = np.asarray(ga["step"]) < steps, np.asarray(gb["step"]) < steps
    for k in ("step", "prompt_id", "rewards", "kept", "lengths"):
        _match(cmp, f"groups: {k}", np.asarray(ga[k])[sa], np.asarray(gb[k])[sb])
    _match(cmp, "groups: advantages", np.asarray(ga["advantages"])[sa], np.asarray(gb["advantages"])[sb], close=True)
    ta, tb = record.steps, rerun.steps
    ra, rb = np.asarray(ta["step"]) < steps, np.asarray(tb["step"]) < steps
    for k in ta:
        if k.startswith("time_") or k == "wall_time_s":
            continue
        if k not in tb:
            cmp.mismatches.append(f"step figure {k}: not in the rerun")
            continue
        _match(cmp, f"step figure {k}", np.asarray(ta[k])[ra], np.asarray(tb[k])[rb], close=k in FLOAT_FIGURES)
    return cmp


def reproduce(path, steps: int = DEFAULT_STEPS, overrides: dict | None = None, out: Path | None = None) -> Comparison:
    """Rerun the record in ``path`` for ``steps`` steps (its config, ``overrides`` applied: tests change the seed
    or the warm start to see the comparison fail) into ``out`` (default a temporary folder) and compare."""
    from grpo_lab.sims.record import read_record
    from .config import GRPOConfig

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError(f"steps must be an integer >= 1, got {steps!r}")
    record = read_record(Path(path))
    saved = record.meta.get("config")
    if not isinstance(saved, dict) or (record.meta.get("source") or {}).get("kind") != "grpo-lab-train":
        raise InputError(f"{str(path)!r} holds no trainer config: only runs of grpo-lab train can be rerun")
    done = int(record.meta.get("steps_completed", 0))
    if steps > done:
        raise InputError(f"{str(path)!r} recorded {done} steps; cannot compare {steps}")
    cfg = GRPOConfig.from_dict({k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()})
    for k, v in {**(overrides or {}), "steps": steps}.items():
        setattr(cfg, k, v)
    cfg = cfg.validate()
    threads = int(record.meta.get("torch_threads") or 1)
    try:  # torch is needed from here on only: the record's checks above speak first
        from .loop import train
    except ImportError as exc:  # ModuleNotFoundError where torch is not installed; ImportError where it is broken
        if (exc.name or "").split(".")[0] != "torch" and "torch" not in str(exc):
            raise
        raise InputError("rerunning a run needs PyTorch, which is not installed: pip install 'grpo-lab[train]'") \
            from None
    with tempfile.TemporaryDirectory(prefix="grpo-lab-rerun-") as tmp:
        rerun = train(cfg, Path(out) if out else Path(tmp) / "rerun", device="cpu", threads=threads, sft_cache=None,
                      command="grpo_lab.train.reproduce")
    return compare(record, rerun, steps)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grpo_lab.train.reproduce", description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a run record folder, or a shipped run's label")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help=f"steps to rerun (default {DEFAULT_STEPS})")
    args = ap.parse_args(argv)
    path = Path(args.run)
    if not path.is_dir():
        from grpo_lab.replay.catalog import DEFAULT_RUNS_DIR

        path = DEFAULT_RUNS_DIR / args.run
    try:
        cmp = reproduce(path, args.steps)
    except InputError as exc:
        print(f"reproduce: error: {exc}", file=sys.stderr)
        return 2
    checked = sum(cmp.checked.values())
    if cmp.ok:
        print(f"{path.name}: step-0 evaluation and the first {cmp.steps} steps reproduced ({checked} values compared; "
              f"counts exactly, float figures to rtol {RTOL:g})")
        return 0
    for line in cmp.mismatches:
        print(f"{path.name}: {line}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
