r"""The controlled estimator study: which cells to train, and what their records say.

Question: when does a fixed reference (``sign``, ``tasa``) beat group-mean centring (``dr_grpo``,
``grpo``) on this task? Controls, declared once here:

- **replicates = (warm start, RL seed)**: a preset's ``warm_starts`` (``sft_seed``) crossed with its
  ``seeds``, at least 3 warm starts per regime in the reduced preset and 5 in the full, so the intervals
  cover the warm start's variation as well as the RL seed's. Every arm of a regime runs every replicate;
  runs are paired by replicate (same start, same first prompt draw, same evaluation draws). The starts
  the presets use are shipped as weights with their SHA-256 (:mod:`grpo_lab.train.warmstart`), so a
  cell reruns from the same start on any machine;
- **the same evaluation for all**: every prompt x ``eval_samples`` completions at the same steps,
  drawn from one random stream (:data:`grpo_lab.train.loop.EVAL_SEED`);
- **gradient-norm clipping off** (``max_grad_norm = 0``) in every cell, so it cannot bind more
  often for one estimator than another; the ratio clip cannot bind either: with
  ``num_iterations = 1`` every ratio is exactly 1;
- **a learning rate per arm** (full preset): each arm (regime, estimator, G: G = 8 gets its own rate,
  no rate is reused from another arm) runs every rate of :attr:`Preset.sweep_lrs` on two held-out
  (warm start, RL seed) pairs (:attr:`Preset.sweep_reps`, never replicates) and keeps the rate with the
  highest mean final pass rate over the two. While the best rate is at an end of its sweep, the sweep
  is widened past that end by a factor :data:`SWEEP_FACTOR`, at most :attr:`Preset.sweep_widen` times
  (:func:`sweep_rates`), so the chosen rate is interior unless the cap is reached (the tables say so).
  Dynamic sampling and its curriculum use the rate of their arm (regime, ``dr_grpo``, G = 4). The
  reduced preset has no sweep: every estimator uses the default rate (said wherever its tables are shown);
- **curriculum at an equal number of trained groups**: a curriculum run of dynamic sampling (retirement
  after N all-pass groups) can end early when the prompt set runs out (17-20 of 200 steps); it is
  compared with dynamic sampling alone stopped at the same step, ``-ds-at{K}`` (every step trains
  ``prompts_per_step`` groups, so K steps are the same number of trained groups), paired by replicate.

Cells: ``{regime}-g{G}-{estimator}[-ds][-at{K}][-TAG]-lr{lr}-w{warm start}-s{seed}``; ``-ds`` is DAPO dynamic
sampling, ``-TAG`` a curriculum option of dynamic sampling (:attr:`Preset.curriculum`). A cell's run is one
record directory; a study is finished cell by cell and resumes from the cells on disk (see
:mod:`grpo_lab.commands.study`).

The first design, preset ``full-v1`` (its tables and figures shipped in ``runs/study-full-v1``), had one
warm start per regime (:data:`SFT_SEED`, names without ``-w``), a rate per (regime, estimator) chosen on
one seed (:data:`SWEEP_SEED`) at G = 4 and reused at G = 8, and compared the curriculum with the 200-step
dynamic-sampling run; its fields are the defaults of :class:`Preset`.

Statistics (per cell, over its seeds): mean with a 95% Student-t interval,
mean +- t_{0.975, n-1} s / sqrt(n); the paired difference to ``dr_grpo`` of the same regime and G
is the same interval over the per-seed differences. With n = 1 no interval is given.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from grpo_lab.sims.errors import InputError
from .config import GRPOConfig

__all__ = ["SFT_SEED", "SWEEP_SEED", "SWEEP_FACTOR", "REFERENCE", "PRESETS", "Preset", "Cell", "sweep_rates",
           "sweep_cells", "main_cells", "choose_lrs", "parse_cell", "replicates", "arm", "run_figures", "t_interval",
           "tables"]

SFT_SEED = 0  #: v1: the warm start every run of the study shares (per regime)
SWEEP_SEED = 0  #: v1: the held-out RL seed of the learning-rate sweep (never among a preset's seeds)
SWEEP_FACTOR = 2.0  #: a widened sweep's next rate is its end rate times (or divided by) this
REFERENCE = "dr_grpo"  #: the estimator paired differences are taken against
DS_ESTIMATOR, DS_G = "dr_grpo", 4  #: the plain-vs-dynamic-sampling comparison
COMMON = {"max_grad_norm": 0.0, "steps": 200}  #: options every cell shares besides the defaults


@dataclass(frozen=True)
class Preset:
    name: str
    seeds: tuple
    group_sizes: tuple
    regimes: tuple
    estimators: tuple
    sweep_lrs: tuple = ()  #: empty: no sweep, every estimator at the default learning rate
    sweep_widen: int = 0  #: how many rates a sweep may add past its ends while the best rate is at one
    about: str = ""
    options: tuple = ()  #: (name, value) pairs of GRPOConfig options set in every cell (after COMMON)
    #: (tag, ((option, value), ...)) curriculum variants of dynamic sampling (DS_ESTIMATOR, DS_G) compared with
    #: dynamic sampling alone on ``curriculum_seeds`` in ``curriculum_regimes``
    curriculum: tuple = ()
    curriculum_seeds: tuple = ()
    curriculum_regimes: tuple = ()
    #: the warm starts (``sft_seed``) crossed with ``seeds`` into replicates (warm start, RL seed); empty: the
    #: v1 design, one shared start :data:`SFT_SEED` and run names without ``-w``
    warm_starts: tuple = ()
    #: (warm start, RL seed) pairs of the learning-rate sweep, held out (never replicates); empty: v1's
    #: (:data:`SFT_SEED`, :data:`SWEEP_SEED`)
    sweep_reps: tuple = ()
    lr_per_G: bool = False  #: a rate per (regime, estimator, G); False: v1, the G = 4 rate at every G
    ds_compare: bool = True  #: plain vs dynamic sampling (DS_ESTIMATOR, DS_G) over the whole run
    #: compare each curriculum run with dynamic sampling alone stopped at the step the curriculum run
    #: stopped at (cells ``-ds-at{K}``: the same number of trained groups); False: v1, with the 200-step run
    equal_groups: bool = False


PRESETS = {
    "reduced": Preset("reduced", seeds=(1,), warm_starts=(0, 1, 2), group_sizes=(4,), regimes=("broad", "weak"),
                      estimators=("dr_grpo", "sign"), ds_compare=False, equal_groups=True,
                      curriculum=(("retire2", (("retire_after", 2),)),), curriculum_seeds=(1,),
                      curriculum_regimes=("weak",),
                      about="3 warm starts x RL seed 1, G = 4, dr_grpo vs sign, default learning rate (no sweep); "
                            "retirement after 2 all-pass groups vs dynamic sampling alone at an equal number of "
                            "trained groups (weak start)"),
    "full": Preset("full", seeds=(1, 2), warm_starts=(0, 1, 2, 3, 4), group_sizes=(4, 8), regimes=("weak", "broad"),
                   estimators=("dr_grpo", "sign", "tasa", "grpo"), sweep_lrs=(1e-4, 2e-4, 4e-4, 8e-4), sweep_widen=2,
                   sweep_reps=((5, 0), (6, 0)), lr_per_G=True, equal_groups=True,
                   curriculum=(("retire2", (("retire_after", 2),)), ("hard0.25", (("hard_buffer_frac", 0.25),))),
                   curriculum_seeds=(1, 2), curriculum_regimes=("weak",),
                   about="5 warm starts x 2 RL seeds, G in {4, 8}, four estimators, a learning rate per (regime, "
                         "estimator, G) from a sweep on two held-out (warm start, seed) pairs, plain vs DAPO, DAPO's "
                         "curriculum options against DAPO alone at an equal number of trained groups (weak start)"),
    # the first designs (shipped tables runs/study-reduced-v1, runs/study-full-v1): one warm start, a rate per
    # estimator on one seed
    "reduced-v1": Preset("reduced-v1", seeds=(1, 2), group_sizes=(4,), regimes=("broad", "weak"),
                         estimators=("dr_grpo", "sign"),
                         about="2 seeds, G = 4, dr_grpo vs sign, default learning rate (no sweep), plain vs DAPO"),
    "full-v1": Preset("full-v1", seeds=(1, 2, 3, 4, 5), group_sizes=(4, 8), regimes=("weak", "broad"),
                   estimators=("dr_grpo", "sign", "tasa", "grpo"), sweep_lrs=(1e-4, 2e-4, 4e-4, 8e-4), sweep_widen=2,
                   about="5 seeds, G in {4, 8}, four estimators, learning rate per estimator from a sweep "
                         "on a held-out seed, plain vs DAPO, DAPO's curriculum options (3 seeds, weak start)",
                   curriculum=(("retire2", (("retire_after", 2),)), ("hard0.25", (("hard_buffer_frac", 0.25),))),
                   curriculum_seeds=(1, 2, 3), curriculum_regimes=("weak",)),
    # a check of the machinery (tests): a tiny model on 24 prompts, seconds per run
    "smoke": Preset("smoke", seeds=(1, 2), group_sizes=(4,), regimes=("broad", "weak"), estimators=("dr_grpo", "sign"),
                    sweep_lrs=(1e-3, 2e-3), sweep_widen=1, about="machinery check: tiny model, 24 prompts, 3 steps",
                    options=(("n_prompts", 24), ("prompts_per_step", 4), ("steps", 3), ("sft_steps", 30),
                             ("sft_batch_size", 32), ("eval_every", 2), ("eval_samples", 2), ("n_layer", 1),
                             ("n_head", 2), ("n_embd", 16))),
}


@dataclass(frozen=True)
class Cell:
    """One run of the study: its options and its name (also its directory)."""

    kind: str  # "sweep" or "main"
    regime: str
    G: int
    estimator: str
    seed: int
    lr: float
    ds: bool = False
    tag: str = ""  #: a curriculum variant's tag (its options in ``extra``), "" for none
    extra: tuple = ()  #: (option, value) pairs of GRPOConfig set after the preset's
    sft_seed: int | None = None  #: the warm start; None: :data:`SFT_SEED`, unnamed (the v1 design)
    at: int = 0  #: dynamic sampling alone stopped after ``at`` steps (an equal-groups control); -1: not known yet

    @property
    def group(self) -> str:
        return (f"{self.regime}-g{self.G}-{self.estimator}{'-ds' if self.ds else ''}{'-' + self.tag if self.tag else ''}"
                f"{'-at' if self.at else ''}")

    @property
    def name(self) -> str:
        at = ("?" if self.at < 0 else str(self.at)) if self.at else ""
        w = "" if self.sft_seed is None else f"-w{self.sft_seed}"
        return f"{self.group}{at}-lr{self.lr:g}{w}-s{self.seed}"

    @property
    def rep(self) -> tuple:
        """The replicate: (warm start, RL seed); runs are paired by it."""
        return (SFT_SEED if self.sft_seed is None else self.sft_seed, self.seed)

    @property
    def ready(self) -> bool:
        """Whether the cell can be trained: its rate chosen and (an equal-groups control) its step count known."""
        return self.lr == self.lr and self.at >= 0

    def config(self, preset: Preset) -> GRPOConfig:
        return GRPOConfig.for_start(self.regime, estimator=self.estimator, num_generations=self.G, seed=self.seed,
                                    sft_seed=self.rep[0], learning_rate=self.lr, dynamic_sampling=self.ds,
                                    **{**COMMON, **dict(preset.options), **dict(self.extra)}).validate()


_NAME = re.compile(r"^(?P<regime>[a-z]+)-g(?P<G>[0-9]+)-(?P<est>[a-z_]+?)(?P<ds>-ds)?(?:-at(?P<at>[0-9]+))?"
                   r"(?:-(?P<tag>[a-z0-9.]+))?-lr(?P<lr>[0-9.e+-]+)(?:-w(?P<w>[0-9]+))?-s(?P<seed>[0-9]+)$")


def parse_cell(name: str, kind: str = "extra") -> Cell | None:
    """The :class:`Cell` a run's name spells (``{regime}-g{G}-{estimator}[-ds][-at{K}][-TAG]-lr{lr}[-w{W}]-s{seed}``),
    its curriculum options unknown (``extra`` empty but an ``-at`` cell's steps); None for a name that is not one,
    or does not spell itself back."""
    m = _NAME.match(name)
    if m is None:
        return None
    try:
        at = int(m["at"]) if m["at"] else 0
        cell = Cell(kind, m["regime"], int(m["G"]), m["est"], int(m["seed"]), float(m["lr"]), ds=bool(m["ds"]),
                    tag=m["tag"] or "", sft_seed=int(m["w"]) if m["w"] else None, at=at,
                    extra=(("steps", at),) if at else ())
    except ValueError:
        return None
    return cell if cell.name == name and not (cell.at and not cell.ds) else None


def replicates(preset: Preset, seeds: tuple | None = None) -> list[tuple]:
    """(warm start or None, RL seed) of every replicate: ``warm_starts`` x ``seeds`` (default the preset's)."""
    seeds = preset.seeds if seeds is None else seeds
    return [(w, s) for w in preset.warm_starts for s in seeds] if preset.warm_starts else [(None, s) for s in seeds]


def _sweep_reps(preset: Preset) -> tuple:
    return preset.sweep_reps or ((None, SWEEP_SEED),)


def _sweep_Gs(preset: Preset) -> tuple:
    return preset.group_sizes if preset.lr_per_G else (DS_G,)


def arm(preset: Preset, regime: str, estimator: str, G: int) -> tuple:
    """The key of a cell's learning rate in ``lrs``: (regime, estimator[, G with ``lr_per_G``])."""
    return (regime, estimator, G) if preset.lr_per_G else (regime, estimator)


def _sweep_cell(regime: str, estimator: str, G: int, lr: float, rep: tuple) -> Cell:
    return Cell("sweep", regime, G, estimator, rep[1], lr, sft_seed=rep[0])


def _score(preset: Preset, regime: str, estimator: str, G: int, lr: float, finals: dict) -> float | None:
    """Mean final pass rate of one rate over the sweep's held-out pairs; None until every one is finished."""
    names = [_sweep_cell(regime, estimator, G, lr, rep).name for rep in _sweep_reps(preset)]
    return float(np.mean([finals[n] for n in names])) if all(n in finals for n in names) else None


def sweep_rates(preset: Preset, regime: str, estimator: str, finals: dict | None = None, G: int = DS_G) -> tuple:
    """The rates of one arm's sweep (``G`` matters with ``lr_per_G``), ascending: :attr:`Preset.sweep_lrs`, widened.

    Widening: once every rate so far has a final pass rate in ``finals[cell.name]`` on every held-out pair, if
    the best mean (ties: the lower rate) is the highest rate, ``highest * SWEEP_FACTOR`` is added; if it is
    the lowest, ``lowest / SWEEP_FACTOR``; at most ``preset.sweep_widen`` rates are added. Multiplying
    by a power of 2 is exact in floating point, so a rate reached by widening has the same name as
    the same rate written out. Without ``finals``: the preset's rates.
    """
    rates = sorted(preset.sweep_lrs)
    for _ in range(preset.sweep_widen if finals and rates else 0):
        scores = [_score(preset, regime, estimator, G, lr, finals) for lr in rates]
        if any(x is None for x in scores):
            break
        best = max(zip(rates, scores), key=lambda rs: (rs[1], -rs[0]))[0]
        if best == rates[-1]:
            rates.append(rates[-1] * SWEEP_FACTOR)
        elif best == rates[0]:
            rates.insert(0, rates[0] / SWEEP_FACTOR)
        else:
            break
    return tuple(rates)


def sweep_cells(preset: Preset, finals: dict | None = None) -> list[Cell]:
    """The learning-rate sweep: every arm (regime, estimator, and with ``lr_per_G`` G; else G = 4) x rate of
    :func:`sweep_rates` x held-out pair (:attr:`Preset.sweep_reps`; v1: :data:`SWEEP_SEED`)."""
    return [_sweep_cell(reg, est, G, lr, rep) for G in _sweep_Gs(preset) for est in preset.estimators
            for reg in preset.regimes for lr in sweep_rates(preset, reg, est, finals, G) for rep in _sweep_reps(preset)]


def main_cells(preset: Preset, lrs: dict | None = None, ends: dict | None = None) -> list[Cell]:
    """The study's cells (G = 4 before G = 8; estimators and regimes in preset order).

    ``lrs[arm(...)]`` is the chosen rate; without a sweep, GRPOConfig's learning rate;
    with a sweep not yet finished for an arm, NaN (the cell cannot start yet). With ``equal_groups``,
    ``ends[name]`` is the number of steps a finished curriculum run trained; its control (dynamic
    sampling alone stopped there, ``-ds-at{K}``) has ``at = -1`` until it is known.
    """
    default = GRPOConfig().learning_rate if not preset.sweep_lrs else float("nan")
    lr = (lambda reg, est, G: (lrs or {}).get(arm(preset, reg, est, G), default))
    reps = replicates(preset)
    cells = []
    for G in preset.group_sizes:
        for est in preset.estimators:
            for reg in preset.regimes:
                cells += [Cell("main", reg, G, est, s, lr(reg, est, G), sft_seed=w) for w, s in reps]
        if G == DS_G and preset.ds_compare:
            for reg in preset.regimes:
                cells += [Cell("main", reg, G, DS_ESTIMATOR, s, lr(reg, DS_ESTIMATOR, G), ds=True, sft_seed=w)
                          for w, s in reps]
    cur = [Cell("main", reg, DS_G, DS_ESTIMATOR, s, lr(reg, DS_ESTIMATOR, DS_G), ds=True, tag=tag, extra=extra,
                sft_seed=w)
           for tag, extra in preset.curriculum for reg in preset.curriculum_regimes
           for w, s in replicates(preset, preset.curriculum_seeds)]
    cells += cur
    if preset.equal_groups:
        for c in cur:
            k = (ends or {}).get(c.name, -1)
            ctl = Cell("main", c.regime, DS_G, DS_ESTIMATOR, c.seed, c.lr, ds=True, sft_seed=c.sft_seed, at=k,
                       extra=(("steps", k),) if k > 0 else ())
            if ctl not in cells:
                cells.append(ctl)
    return cells


def choose_lrs(preset: Preset, finals: dict, partial: bool = False) -> dict:
    """``{arm: rate}`` (:func:`arm`) with the highest mean final pass rate over the held-out pairs in
    ``finals[cell.name]`` among the sweep's rates, widened (:func:`sweep_rates`; ties: the lower rate). An arm
    whose sweep is unfinished raises InputError, or with ``partial`` is left out."""
    out = {}
    for G in _sweep_Gs(preset):
        for reg in preset.regimes:
            for est in preset.estimators:
                rates = sweep_rates(preset, reg, est, finals, G)
                missing = [c.name for lr in rates for c in (_sweep_cell(reg, est, G, lr, r) for r in _sweep_reps(preset))
                           if c.name not in finals]
                if missing and not partial:
                    raise InputError(f"the learning-rate sweep lacks {missing[0]}")
                if not missing:
                    out[arm(preset, reg, est, G)] = max(rates, key=lambda lr: (
                        _score(preset, reg, est, G, lr, finals), -lr))
    return out


def blocks(preset: Preset, lrs: dict, finals: dict | None = None, ends: dict | None = None) -> list[list[Cell]]:
    """The cells in the order they are trained, as blocks (a block starts when the one before has
    finished): per pair of estimators (the first two of the preset first), per G, per regime, the
    pair's sweep (at that G with ``lr_per_G``, else at the first G only) then its runs; plain vs dynamic
    sampling after the first pair at :data:`DS_G`, the curriculum variants and their equal-groups controls
    after the first pair's last G. So the first finished blocks already answer the question for the first pair.
    Cells of a pair whose rate is not chosen yet carry NaN (resolved when their block comes).
    ``finals`` (final pass rates by cell name) widens the sweeps (:func:`sweep_rates`); ``ends`` (steps of the
    finished curriculum runs) sets the controls' step counts."""
    sweep, main = sweep_cells(preset, finals), main_cells(preset, lrs, ends)
    out = []
    pairs = [preset.estimators[i:i + 2] for i in range(0, len(preset.estimators), 2)]
    for k, pair in enumerate(pairs):
        for G in preset.group_sizes:
            for reg in preset.regimes:
                if preset.lr_per_G or G == preset.group_sizes[0]:
                    out.append([c for c in sweep if c.regime == reg and c.estimator in pair
                                and (c.G == G or not preset.lr_per_G)])
                out.append([c for c in main if not c.ds and c.G == G and c.regime == reg and c.estimator in pair])
            if k == 0 and G == DS_G:
                out.append([c for c in main if c.ds and not c.tag and not c.at])
        if k == 0:
            out.append([c for c in main if c.tag or c.at])
    return [b for b in out if b]


# ---------------------------------------------------------------- figures of one run

def run_figures(rec) -> dict:
    """Figures of one finished run, from its record's arrays.

    ``pass0`` / ``final``: mean evaluated pass rate at step 0 / at the last evaluation;
    ``never0`` / ``never``: share of prompts never solved in that evaluation (pass rate 0);
    ``all_pass`` / ``all_fail``: shares of the *trained* groups that were unanimous;
    ``per_useful``: rollouts generated per trained group with any non-zero advantage;
    dynamic sampling only (else NaN): ``drawn_per_step``, ``effective_group_rate`` (share of drawn
    groups with reward spread), ``amplification`` (groups drawn per group trained), and the split of
    the groups dropped for no spread into ``dropped_all_pass`` / ``dropped_all_fail`` shares;
    ``retired``: share of the prompts retired by the run (``retire_after`` N > 0: N consecutive
    all-pass groups drawn, in step order), else NaN.
    """
    g, ev, st = rec.groups, rec.evals["pass_rate"], rec.steps
    kept = np.asarray(g["kept"], bool)
    r = g["rewards"][kept]
    unanimous = r.max(1) == r.min(1) if len(r) else np.zeros(0, bool)
    useful = np.any(g["advantages"][kept] != 0, axis=1)
    nan = float("nan")
    out = {
        "pass0": float(ev[0].mean()), "final": float(ev[-1].mean()),
        "never0": float(np.mean(ev[0] == 0)), "never": float(np.mean(ev[-1] == 0)),
        "all_pass": float(np.mean(unanimous & (r[:, 0] == 1))) if len(r) else nan,
        "all_fail": float(np.mean(unanimous & (r[:, 0] == 0))) if len(r) else nan,
        "per_useful": float(g["rewards"].size / useful.sum()) if useful.sum() else nan,
        "steps": int(rec.meta.get("steps_completed", len(st.get("step", [])))),
        "ended": rec.meta.get("end_reason"),
        "drawn_per_step": nan, "effective_group_rate": nan, "amplification": nan,
        "dropped_all_pass": nan, "dropped_all_fail": nan,
    }
    n_retire = int((rec.meta.get("config") or {}).get("retire_after") or 0)
    out["retired"] = _retired_share(g, n_retire, ev.shape[1]) if n_retire else nan
    if "ds/groups_drawn" in st and len(st["ds/groups_drawn"]):
        drawn, kept_n = float(np.sum(st["ds/groups_drawn"])), float(np.sum(st["ds/groups_kept"]))
        ap, af = float(np.sum(st["ds/dropped_all_pass"])), float(np.sum(st["ds/dropped_all_fail"]))
        out.update(drawn_per_step=drawn / len(st["ds/groups_drawn"]), effective_group_rate=1 - (ap + af) / drawn,
                   amplification=drawn / kept_n,
                   dropped_all_pass=ap / (ap + af) if ap + af else nan,
                   dropped_all_fail=af / (ap + af) if ap + af else nan)
    return out


def _retired_share(g, n: int, n_prompts: int) -> float:
    """Share of ``n_prompts`` with ``n`` consecutive all-pass groups among the groups drawn (``g``, in
    step order; a group that is not all-pass resets the count), i.e. the prompts retirement removed."""
    r = np.asarray(g["rewards"])
    all_pass = (r.min(1) == 1) if len(r) else np.zeros(0, bool)
    streak, retired = {}, set()
    for pid, ok in zip(np.asarray(g["prompt_id"]).tolist(), all_pass.tolist()):
        streak[pid] = streak.get(pid, 0) + 1 if ok else 0
        if streak[pid] >= n:
            retired.add(pid)
    return len(retired) / n_prompts


def t_interval(values) -> tuple[float, float]:
    """(mean, half-width of the 95% Student-t interval); half-width NaN for fewer than 2 values."""
    from scipy import stats

    v = np.asarray(values, float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) < 2:
        return float(v[0]), float("nan")
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


# ---------------------------------------------------------------- tables

def _paired(a: dict, b: dict) -> str:
    """Final pass rate of runs ``a`` minus runs ``b`` (replicate -> figures), paired over their common replicates, with
    its 95% interval and n; ``missing`` when they share no seed."""
    common = sorted(set(a) & set(b))
    return (_ci([a[s]["final"] - b[s]["final"] for s in common]) + f" (n={len(common)})") if common else "missing"


def _ci(values, digits: int = 3) -> str:
    m, h = t_interval(values)
    if m != m:
        return "missing"
    return f"{m:.{digits}f}" if h != h else f"{m:.{digits}f} ± {h:.{digits}f}"


def _lr(lr: float) -> str:
    return "not chosen yet" if lr != lr else f"{lr:g}"


def _mean(values, fmt: str = ".3f") -> str:
    v = [x for x in values if x == x]
    return format(float(np.mean(v)), fmt) if v else "-"


@dataclass
class _Group:
    cells: list
    figs: dict = field(default_factory=dict)  # replicate (warm start, RL seed) -> figures of the finished runs


def tables(preset: Preset, cells: list[Cell], figures: dict, lrs: dict | None, sweep: dict | None = None,
           extras: list[Cell] = ()) -> str:
    """The study's Markdown tables from ``figures[cell.name]`` (finished runs only); unfinished cells
    are counted and marked ``missing``. ``extras``: finished runs of the folder that are no cell of the
    preset (a cell trained at a rate its sweep chose before it was widened, a control run by hand),
    shown in a table of their own, paired by seed with the preset's runs (:func:`_extras_table`)."""
    groups: dict[str, _Group] = {}
    for c in cells:
        grp = groups.setdefault(c.group, _Group([]))
        grp.cells.append(c)
        if c.name in figures:
            grp.figs[c.rep] = figures[c.name]
    lines = []
    done = sum(len(g.figs) for g in groups.values())
    lines.append(f"Preset `{preset.name}` ({preset.about}): {done} of {len(cells)} runs finished"
                 + ("" if done == len(cells) else "; cells with fewer runs than seeds are marked below") + ".")
    lines.append("")
    # estimator table (plain runs)
    lines.append("| regime | G | estimator | lr | seeds done | pass rate, start | final pass rate (95% CI) "
                 f"| minus {REFERENCE}, paired (95% CI) | never solved, start -> end | all-pass / all-fail "
                 "(trained groups) | rollouts per useful group |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, grp in groups.items():
        c0 = grp.cells[0]
        if c0.ds:
            continue
        f = grp.figs
        ref = groups.get(f"{c0.regime}-g{c0.G}-{REFERENCE}")
        if c0.estimator == REFERENCE or ref is None:
            diff = "—"
        else:
            diff = _paired(f, ref.figs)
        seeds_done = f"{len(f)}/{len(grp.cells)}" + ("" if len(f) == len(grp.cells) else " **incomplete**")
        lines.append(
            f"| {c0.regime} | {c0.G} | {c0.estimator} | {_lr(c0.lr)} | {seeds_done} | "
            f"{_mean([x['pass0'] for x in f.values()])} | {_ci([x['final'] for x in f.values()])} | {diff} | "
            f"{_mean([x['never0'] for x in f.values()])} -> {_mean([x['never'] for x in f.values()])} | "
            f"{_mean([x['all_pass'] for x in f.values()])} / {_mean([x['all_fail'] for x in f.values()])} | "
            f"{_mean([x['per_useful'] for x in f.values()], '.2f')} |")
    # plain vs dynamic sampling
    if preset.ds_compare:
        lines += _ds_table(preset, groups)
    cur = [grp for grp in groups.values() if grp.cells[0].tag]
    if cur:
        lines += _curriculum_table(preset, groups, cur)
    if extras:
        lines += _extras_table(groups, extras, figures)
    if sweep is not None:
        lines += _sweep_table(preset, lrs, sweep)
    return "\n".join(lines) + "\n"


def _ds_table(preset: Preset, groups: dict) -> list[str]:
    lines = []
    lines.append("")
    lines.append("Plain vs DAPO dynamic sampling (`dr_grpo`, G = 4). Figures of the groups *drawn* by dynamic "
                 "sampling, kept apart from the trained-group shares above:")
    lines.append("")
    lines.append("| regime | run | seeds done | final pass rate (95% CI) | DS minus plain, paired (95% CI) "
                 "| groups drawn per step | effective group rate | rollout amplification | dropped: all-pass / "
                 "all-fail | rollouts per useful group | runs ended early |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for reg in preset.regimes:
        plain = groups.get(f"{reg}-g{DS_G}-{DS_ESTIMATOR}")
        ds = groups.get(f"{reg}-g{DS_G}-{DS_ESTIMATOR}-ds")
        if plain is None or ds is None:
            continue
        for label, grp in (("plain", plain), ("dynamic sampling", ds)):
            f = grp.figs
            if grp is ds:
                diff = _paired(f, plain.figs)
                extra = (f"{_mean([x['drawn_per_step'] for x in f.values()], '.1f')} | "
                         f"{_mean([x['effective_group_rate'] for x in f.values()])} | "
                         f"{_mean([x['amplification'] for x in f.values()], '.2f')} | "
                         f"{_mean([x['dropped_all_pass'] for x in f.values()], '.2f')} / "
                         f"{_mean([x['dropped_all_fail'] for x in f.values()], '.2f')}")
                ended = str(sum(1 for x in f.values() if x["ended"])) if f else "-"
            else:
                diff, extra, ended = "—", "— | — | — | —", "—"
            seeds_done = f"{len(f)}/{len(grp.cells)}" + ("" if len(f) == len(grp.cells) else " **incomplete**")
            lines.append(f"| {reg} | {label} | {seeds_done} | {_ci([x['final'] for x in f.values()])} | {diff} | "
                         f"{extra} | {_mean([x['per_useful'] for x in f.values()], '.2f')} | {ended} |")
    return lines


def _curriculum_table(preset: Preset, groups: dict, cur: list) -> list[str]:
    """The curriculum runs against dynamic sampling alone: the 200-step run (v1), or with ``equal_groups``
    the run stopped at the step the curriculum run stopped at (``-ds-at{K}``), paired by replicate."""
    if preset.equal_groups:
        against = "dynamic sampling alone stopped at the same step (an equal number of trained groups)"
        rows = cur + [g for g in groups.values() if g.cells[0].at]
    else:
        against = "dynamic sampling alone"
        rows = cur
    lines = ["", f"Curriculum options of dynamic sampling (`{DS_ESTIMATOR}`, G = {DS_G}, the same rate as "
                 f"dynamic sampling alone; paired by {'replicate' if preset.warm_starts else 'seed'} with {against}):",
             "",
             f"| regime | run | options | seeds done | final pass rate (95% CI) | minus {against}, "
             "paired (95% CI) | never solved, start -> end | prompts retired | groups drawn per step | "
             "rollout amplification | dropped: all-pass / all-fail | runs ended early |"
             + (" steps trained |" if preset.equal_groups else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if preset.equal_groups else "")]
    for grp in rows:
        c0, f = grp.cells[0], grp.figs
        if c0.at:
            diff, label, opts = "—", "alone, stopped", "steps = the curriculum run's"
        else:
            alone = groups.get(f"{c0.regime}-g{DS_G}-{DS_ESTIMATOR}-ds" + ("-at" if preset.equal_groups else ""))
            diff = _paired(f, alone.figs if alone else {})
            label, opts = c0.tag, ", ".join(f"{k} {v:g}" for k, v in c0.extra)
        seeds_done = f"{len(f)}/{len(grp.cells)}" + ("" if len(f) == len(grp.cells) else " **incomplete**")
        lines.append(
            f"| {c0.regime} | {label} | {opts} | {seeds_done} | {_ci([x['final'] for x in f.values()])} | {diff} | "
            f"{_mean([x['never0'] for x in f.values()])} -> {_mean([x['never'] for x in f.values()])} | "
            f"{_mean([x.get('retired', float('nan')) for x in f.values()])} | "
            f"{_mean([x['drawn_per_step'] for x in f.values()], '.1f')} | "
            f"{_mean([x['amplification'] for x in f.values()], '.2f')} | "
            f"{_mean([x['dropped_all_pass'] for x in f.values()], '.2f')} / "
            f"{_mean([x['dropped_all_fail'] for x in f.values()], '.2f')} | "
            f"{sum(1 for x in f.values() if x['ended']) if f else '-'} |"
            + (f" {', '.join(str(f[r]['steps']) for r in sorted(f)) or '-'} |" if preset.equal_groups else ""))
    return lines


def _sweep_table(preset: Preset, lrs: dict | None, sweep: dict) -> list[str]:
    """The learning-rate sweep: per arm, each rate's final pass rate (v1: on the held-out seed; else the
    mean over the held-out pairs), the chosen one in bold."""
    Gs = _sweep_Gs(preset)
    rates = {(reg, est, G): sweep_rates(preset, reg, est, sweep, G) for G in Gs for reg in preset.regimes
             for est in preset.estimators}
    columns = sorted(set().union(*rates.values()))
    on = (f"held-out seed {SWEEP_SEED}, G = 4" if not preset.sweep_reps else
          "mean over the held-out (warm start, seed) pairs " + ", ".join(f"({w}, {s})" for w, s in preset.sweep_reps)
          + ", a rate per G")
    lines = ["", f"Learning-rate sweep ({on}, final pass rate; **bold**: chosen; "
                 f"a sweep is widened by a factor {SWEEP_FACTOR:g} past an end rate that wins, at most "
                 f"{preset.sweep_widen} times; '—': not part of that sweep):", "",
             "| regime | " + ("G | " if preset.lr_per_G else "") + "estimator | "
             + " | ".join(f"lr {lr:g}" for lr in columns) + " | chosen |",
             "|---|---|" + ("---|" if preset.lr_per_G else "") + "---|" * (len(columns) + 1)]
    for G in Gs:
        for reg in preset.regimes:
            for est in preset.estimators:
                own = rates[(reg, est, G)]
                row, chosen = [], (lrs or {}).get(arm(preset, reg, est, G))
                for lr in columns:
                    v = _score(preset, reg, est, G, lr, sweep)
                    txt = "—" if lr not in own else "missing" if v is None else f"{v:.3f}"
                    row.append(f"**{txt}**" if chosen == lr and v is not None else txt)
                if chosen is None:
                    where = "not yet"
                elif chosen in (own[0], own[-1]):
                    where = f"{chosen:g} (an end of the sweep: widening cap reached)"
                else:
                    where = f"{chosen:g} (interior)"
                lines.append(f"| {reg} | " + (f"{G} | " if preset.lr_per_G else "") + f"{est} | " + " | ".join(row)
                             + f" | {where} |")
    return lines


def _extras_table(groups: dict, extras: list[Cell], figures: dict) -> list[str]:
    """Lines of the table of runs outside the preset's cells, one row per (group, rate): final pass rate,
    this minus the preset's runs of the same group at their rate, and every preset group of the same
    regime, G, dynamic sampling and rate (another estimator) minus this; all paired by seed."""
    rows: dict[tuple, dict] = {}
    for c in extras:
        rows.setdefault((c.group, c.lr), {})[c.rep] = figures[c.name]
    lines = ["", "Runs in the folder outside the preset's cells (their options are the preset's but for the rate or "
                 "the seeds: cells trained before their sweep was widened past their rate, or controls), paired by "
                 "seed with the preset's runs:", "",
             "| run | lr | seeds | final pass rate (95% CI) | minus the preset's run at its rate, paired (95% CI) "
             "| preset runs at the same rate minus this, paired (95% CI) |", "|---|---|---|---|---|---|"]

    for (group, lr), f in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        c0 = next(c for c in extras if c.group == group and c.lr == lr)
        own = groups.get(group)
        vs_own = (f"{_paired(f, own.figs)} (preset lr {_lr(own.cells[0].lr)})" if own and own.figs else "—")
        same = [g for g in groups.values() if g.cells[0].lr == lr and g.cells[0].group != group and not g.cells[0].tag
                and (g.cells[0].regime, g.cells[0].G, g.cells[0].ds) == (c0.regime, c0.G, c0.ds) and g.figs]
        vs_same = "; ".join(f"{g.cells[0].estimator}: {_paired(g.figs, f)}" for g in same) or "—"
        lines.append(f"| {group} | {_lr(lr)} | {len(f)} | {_ci([x['final'] for x in f.values()])} | {vs_own} | "
                     f"{vs_same} |")
    return lines
