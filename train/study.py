r"""The controlled estimator study: which cells to train, and what their records say.

Question: when does a fixed reference (``sign``, ``tasa``) beat group-mean centring (``dr_grpo``,
``grpo``) on this task? Controls, declared once here:

- **paired starts**: every run of a regime warms up from the same policy (``sft_seed`` =
  :data:`SFT_SEED`), so all runs of a regime share their step-0 evaluation exactly; runs are
  paired by their RL ``seed`` (same start, same first prompt draw, same evaluation draws);
- **the same evaluation for all**: every prompt x ``eval_samples`` completions at the same steps,
  drawn from one random stream (:data:`grpo_lab.train.loop.EVAL_SEED`);
- **gradient-norm clipping off** (``max_grad_norm = 0``) in every cell, so it cannot bind more
  often for one estimator than another; the ratio clip cannot bind either: with
  ``num_iterations = 1`` every ratio is exactly 1;
- **a learning rate per estimator** (full preset): each (regime, estimator) runs every rate of
  :attr:`Preset.sweep_lrs` on the held-out seed :data:`SWEEP_SEED` at G = 4 and keeps the one with
  the highest final pass rate; the same rate is used at every G. While the best rate is at an end
  of its sweep, the sweep is widened past that end by a factor :data:`SWEEP_FACTOR`, at most
  :attr:`Preset.sweep_widen` times (:func:`sweep_rates`), so the chosen rate is interior unless the
  cap is reached (the tables say so). The reduced preset has no sweep: every estimator uses the
  default rate (said wherever its tables are shown).

Cells: ``{regime}-g{G}-{estimator}[-ds][-TAG]`` over seeds; ``-ds`` is DAPO dynamic sampling (plain vs
dynamic sampling is compared with ``dr_grpo`` at G = 4 in both regimes); ``-TAG`` a curriculum option
of dynamic sampling (:attr:`Preset.curriculum`: retirement after N all-pass groups, the hard buffer)
against dynamic sampling alone, same rate, paired by seed. A cell's run is one record
directory; a study is finished cell by cell and resumes from the cells on disk (see
:mod:`grpo_lab.commands.study`).

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
           "sweep_cells", "main_cells", "choose_lrs", "parse_cell", "run_figures", "t_interval", "tables"]

SFT_SEED = 0  #: the warm start every run of the study shares (per regime)
SWEEP_SEED = 0  #: the held-out RL seed of the learning-rate sweep (never among a preset's seeds)
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


PRESETS = {
    "reduced": Preset("reduced", seeds=(1, 2), group_sizes=(4,), regimes=("broad", "weak"),
                      estimators=("dr_grpo", "sign"),
                      about="2 seeds, G = 4, dr_grpo vs sign, default learning rate (no sweep), plain vs DAPO"),
    "full": Preset("full", seeds=(1, 2, 3, 4, 5), group_sizes=(4, 8), regimes=("weak", "broad"),
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

    @property
    def group(self) -> str:
        return f"{self.regime}-g{self.G}-{self.estimator}{'-ds' if self.ds else ''}{'-' + self.tag if self.tag else ''}"

    @property
    def name(self) -> str:
        return f"{self.group}-lr{self.lr:g}-s{self.seed}"

    def config(self, preset: Preset) -> GRPOConfig:
        return GRPOConfig.for_start(self.regime, estimator=self.estimator, num_generations=self.G, seed=self.seed,
                                    sft_seed=SFT_SEED, learning_rate=self.lr, dynamic_sampling=self.ds,
                                    **{**COMMON, **dict(preset.options), **dict(self.extra)}).validate()


_NAME = re.compile(r"^(?P<regime>[a-z]+)-g(?P<G>[0-9]+)-(?P<est>[a-z_]+?)(?P<ds>-ds)?(?:-(?P<tag>[a-z0-9.]+))?"
                   r"-lr(?P<lr>[0-9.e+-]+)-s(?P<seed>[0-9]+)$")


def parse_cell(name: str, kind: str = "extra") -> Cell | None:
    """The :class:`Cell` a run's name spells (``{regime}-g{G}-{estimator}[-ds][-TAG]-lr{lr}-s{seed}``), its
    curriculum options unknown (``extra`` empty); None for a name that is not one, or does not spell itself back."""
    m = _NAME.match(name)
    if m is None:
        return None
    try:
        cell = Cell(kind, m["regime"], int(m["G"]), m["est"], int(m["seed"]), float(m["lr"]), ds=bool(m["ds"]),
                    tag=m["tag"] or "")
    except ValueError:
        return None
    return cell if cell.name == name else None


def sweep_rates(preset: Preset, regime: str, estimator: str, finals: dict | None = None) -> tuple:
    """The rates of one (regime, estimator) sweep, ascending: :attr:`Preset.sweep_lrs`, widened.

    Widening: once every rate so far has a final pass rate in ``finals[cell.name]``, if the best
    (ties: the lower rate) is the highest rate, ``highest * SWEEP_FACTOR`` is added; if it is the
    lowest, ``lowest / SWEEP_FACTOR``; at most ``preset.sweep_widen`` rates are added. Multiplying
    by a power of 2 is exact in floating point, so a rate reached by widening has the same name as
    the same rate written out. Without ``finals``: the preset's rates.
    """
    rates = sorted(preset.sweep_lrs)
    for _ in range(preset.sweep_widen if finals and rates else 0):
        cells = [Cell("sweep", regime, 4, estimator, SWEEP_SEED, lr) for lr in rates]
        if any(c.name not in finals for c in cells):
            break
        best = max(cells, key=lambda c: (finals[c.name], -c.lr)).lr
        if best == rates[-1]:
            rates.append(rates[-1] * SWEEP_FACTOR)
        elif best == rates[0]:
            rates.insert(0, rates[0] / SWEEP_FACTOR)
        else:
            break
    return tuple(rates)


def sweep_cells(preset: Preset, finals: dict | None = None) -> list[Cell]:
    """The learning-rate sweep: every (regime, estimator, rate of :func:`sweep_rates`) at G = 4 on
    :data:`SWEEP_SEED`."""
    return [Cell("sweep", reg, 4, est, SWEEP_SEED, lr) for est in preset.estimators for reg in preset.regimes
            for lr in sweep_rates(preset, reg, est, finals)]


def main_cells(preset: Preset, lrs: dict | None = None) -> list[Cell]:
    """The study's cells (G = 4 before G = 8; estimators and regimes in preset order).

    ``lrs[(regime, estimator)]`` is the chosen rate; without a sweep, GRPOConfig's learning rate;
    with a sweep not yet finished for a pair, NaN (the cell cannot start yet).
    """
    default = GRPOConfig().learning_rate if not preset.sweep_lrs else float("nan")
    lr = (lambda reg, est: (lrs or {}).get((reg, est), default))
    cells = []
    for G in preset.group_sizes:
        for est in preset.estimators:
            for reg in preset.regimes:
                cells += [Cell("main", reg, G, est, s, lr(reg, est)) for s in preset.seeds]
        if G == DS_G:
            for reg in preset.regimes:
                cells += [Cell("main", reg, G, DS_ESTIMATOR, s, lr(reg, DS_ESTIMATOR), ds=True) for s in preset.seeds]
    for tag, extra in preset.curriculum:
        cells += [Cell("main", reg, DS_G, DS_ESTIMATOR, s, lr(reg, DS_ESTIMATOR), ds=True, tag=tag, extra=extra)
                  for reg in preset.curriculum_regimes for s in preset.curriculum_seeds]
    return cells


def choose_lrs(preset: Preset, finals: dict, partial: bool = False) -> dict:
    """``{(regime, estimator): rate}`` with the highest final pass rate in ``finals[cell.name]``
    among the sweep's rates, widened (:func:`sweep_rates`; ties: the lower rate). A pair whose
    sweep is unfinished raises InputError, or with ``partial`` is left out."""
    out = {}
    for reg in preset.regimes:
        for est in preset.estimators:
            runs = [c for c in sweep_cells(preset, finals) if c.regime == reg and c.estimator == est]
            missing = [c.name for c in runs if c.name not in finals]
            if missing and not partial:
                raise InputError(f"the learning-rate sweep lacks {missing[0]}")
            if not missing:
                out[(reg, est)] = max(runs, key=lambda c: (finals[c.name], -c.lr)).lr
    return out


def blocks(preset: Preset, lrs: dict, finals: dict | None = None) -> list[list[Cell]]:
    """The cells in the order they are trained, as blocks (a block starts when the one before has
    finished): per pair of estimators (the first two of the preset first), per G, per regime, the
    pair's sweep (first G only) then its runs; plain vs dynamic sampling after the first pair at
    :data:`DS_G`, the curriculum variants after the first pair's last G. So the first finished blocks
    already answer the question for the first pair.
    Cells of a pair whose rate is not chosen yet carry NaN (resolved when their block comes).
    ``finals`` (final pass rates by cell name) widens the sweeps (:func:`sweep_rates`)."""
    sweep, main = sweep_cells(preset, finals), main_cells(preset, lrs)
    out = []
    pairs = [preset.estimators[i:i + 2] for i in range(0, len(preset.estimators), 2)]
    for k, pair in enumerate(pairs):
        for G in preset.group_sizes:
            for reg in preset.regimes:
                if G == preset.group_sizes[0]:
                    out.append([c for c in sweep if c.regime == reg and c.estimator in pair])
                out.append([c for c in main if not c.ds and c.G == G and c.regime == reg and c.estimator in pair])
            if k == 0 and G == DS_G:
                out.append([c for c in main if c.ds and not c.tag])
        if k == 0:
            out.append([c for c in main if c.tag])
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
    """Final pass rate of runs ``a`` minus runs ``b`` (seed -> figures), paired over their common seeds, with
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
    figs: dict = field(default_factory=dict)  # seed -> figures of the finished runs


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
            grp.figs[c.seed] = figures[c.name]
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
    cur = [grp for grp in groups.values() if grp.cells[0].tag]
    if cur:
        lines.append("")
        lines.append(f"Curriculum options of dynamic sampling (`{DS_ESTIMATOR}`, G = {DS_G}, the same rate as "
                     "dynamic sampling alone; paired by seed with it):")
        lines.append("")
        lines.append("| regime | run | options | seeds done | final pass rate (95% CI) | minus dynamic sampling alone, "
                     "paired (95% CI) | never solved, start -> end | prompts retired | groups drawn per step | "
                     "rollout amplification | dropped: all-pass / all-fail | runs ended early |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for grp in cur:
            c0, f = grp.cells[0], grp.figs
            alone = groups.get(f"{c0.regime}-g{DS_G}-{DS_ESTIMATOR}-ds")
            diff = _paired(f, alone.figs if alone else {})
            seeds_done = f"{len(f)}/{len(grp.cells)}" + ("" if len(f) == len(grp.cells) else " **incomplete**")
            opts = ", ".join(f"{k} {v:g}" for k, v in c0.extra)
            lines.append(
                f"| {c0.regime} | {c0.tag} | {opts} | {seeds_done} | {_ci([x['final'] for x in f.values()])} | {diff} | "
                f"{_mean([x['never0'] for x in f.values()])} -> {_mean([x['never'] for x in f.values()])} | "
                f"{_mean([x.get('retired', float('nan')) for x in f.values()])} | "
                f"{_mean([x['drawn_per_step'] for x in f.values()], '.1f')} | "
                f"{_mean([x['amplification'] for x in f.values()], '.2f')} | "
                f"{_mean([x['dropped_all_pass'] for x in f.values()], '.2f')} / "
                f"{_mean([x['dropped_all_fail'] for x in f.values()], '.2f')} | "
                f"{sum(1 for x in f.values() if x['ended']) if f else '-'} |")
    if extras:
        lines += _extras_table(groups, extras, figures)
    if sweep is not None:
        rates = {(reg, est): sweep_rates(preset, reg, est, sweep) for reg in preset.regimes for est in preset.estimators}
        columns = sorted(set().union(*rates.values()))
        lines.append("")
        lines.append(f"Learning-rate sweep (held-out seed {SWEEP_SEED}, G = 4, final pass rate; **bold**: chosen; "
                     f"a sweep is widened by a factor {SWEEP_FACTOR:g} past an end rate that wins, at most "
                     f"{preset.sweep_widen} times; '—': not part of that sweep):")
        lines.append("")
        lines.append("| regime | estimator | " + " | ".join(f"lr {lr:g}" for lr in columns) + " | chosen |")
        lines.append("|---|---|" + "---|" * (len(columns) + 1))
        for reg in preset.regimes:
            for est in preset.estimators:
                row, chosen = [], (lrs or {}).get((reg, est))
                for lr in columns:
                    v = sweep.get(Cell("sweep", reg, 4, est, SWEEP_SEED, lr).name)
                    txt = "—" if lr not in rates[(reg, est)] else "missing" if v is None else f"{v:.3f}"
                    row.append(f"**{txt}**" if chosen == lr and v is not None else txt)
                if chosen is None:
                    where = "not yet"
                elif chosen in (rates[(reg, est)][0], rates[(reg, est)][-1]):
                    where = f"{chosen:g} (an end of the sweep: widening cap reached)"
                else:
                    where = f"{chosen:g} (interior)"
                lines.append(f"| {reg} | {est} | " + " | ".join(row) + f" | {where} |")
    return "\n".join(lines) + "\n"


def _extras_table(groups: dict, extras: list[Cell], figures: dict) -> list[str]:
    """Lines of the table of runs outside the preset's cells, one row per (group, rate): final pass rate,
    this minus the preset's runs of the same group at their rate, and every preset group of the same
    regime, G, dynamic sampling and rate (another estimator) minus this; all paired by seed."""
    rows: dict[tuple, dict] = {}
    for c in extras:
        rows.setdefault((c.group, c.lr), {})[c.seed] = figures[c.name]
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
