"""The study's second design: replicates (warm start, RL seed), a learning rate per arm chosen on two
held-out pairs, and the curriculum compared with dynamic sampling alone at an equal number of trained groups."""

from __future__ import annotations

import math

import pytest

from grpo_lab.train import study
from grpo_lab.train.study import PRESETS, Cell, choose_lrs, main_cells, parse_cell, sweep_cells, tables


def _figs(final, steps=200):
    nan = float("nan")
    return {"pass0": 0.3, "final": final, "never0": 0.5, "never": 0.4, "all_pass": 0.1, "all_fail": 0.5,
            "per_useful": 8.0, "steps": steps, "ended": None, "drawn_per_step": 300.0, "effective_group_rate": 0.4,
            "amplification": 2.5, "dropped_all_pass": 0.3, "dropped_all_fail": 0.7, "retired": nan}


def test_the_reduced_preset_has_three_warm_starts_per_regime_and_spells_its_cells_back():
    p = PRESETS["reduced"]
    cells = main_cells(p)
    plain = [c for c in cells if not c.ds]
    for reg in p.regimes:
        for est in p.estimators:
            reps = {c.rep for c in plain if (c.regime, c.estimator) == (reg, est)}
            assert len({w for w, _ in reps}) >= 3 and len(reps) == len(p.warm_starts) * len(p.seeds)
    for c in cells:
        if c.ready:
            cfg = c.config(p)
            assert cfg.sft_seed == c.sft_seed and cfg.seed == c.seed and f"-w{c.sft_seed}-s{c.seed}" in c.name
            assert parse_cell(c.name).name == c.name
    assert len(PRESETS["full"].warm_starts) > len(p.warm_starts)  # more warm starts in the full preset


def test_an_equal_groups_control_stops_where_its_curriculum_run_stopped():
    p = PRESETS["reduced"]
    cur = [c for c in main_cells(p) if c.tag]
    waiting = [c for c in main_cells(p) if c.at]
    assert len(waiting) == len(cur) and not any(c.ready for c in waiting)  # unknown until the run finishes
    ends = {c.name: 17 + i for i, c in enumerate(cur)}
    cells = main_cells(p, None, ends)
    ctl = {c.rep: c for c in cells if c.at}
    for i, c in enumerate(cur):
        k = ctl[c.rep]
        cfg = k.config(p)
        assert k.ready and k.at == 17 + i and cfg.steps == 17 + i and cfg.dynamic_sampling and cfg.retire_after == 0
        assert k.name == f"weak-g4-dr_grpo-ds-at{17 + i}-lr{c.lr:g}-w{c.sft_seed}-s{c.seed}"
        assert (cfg.learning_rate, cfg.sft_seed, cfg.seed) == (c.lr, c.sft_seed, c.seed)
    assert len(cells) == 18
    # the table pairs each retirement run with its control, replicate by replicate
    figs = {c.name: _figs(0.40 + 0.01 * c.sft_seed, steps=ends[c.name]) for c in cur}
    figs.update({k.name: _figs(0.42 + 0.01 * k.sft_seed, steps=k.at) for k in ctl.values()})
    text = tables(p, cells, figs, None)
    row = next(line for line in text.splitlines() if line.startswith("| weak | retire2 |")).split("|")
    assert row[6].strip() == "-0.020 ± 0.000 (n=3)" and row[13].strip() == "17, 18, 19"
    assert "equal number of trained groups" in text and "Plain vs DAPO" not in text


def test_the_full_preset_chooses_a_rate_per_arm_on_two_held_out_pairs():
    p = PRESETS["full"]
    held = set(p.sweep_reps)
    assert len(held) == 2 and not held & {c.rep for c in main_cells(p)}
    r = sorted(p.sweep_lrs)
    # sign at G = 4: pair 1 prefers r[1] by a little, pair 2 prefers r[2] by a lot -> the mean picks r[2];
    # at G = 8 both prefer r[1]; everything else peaks at r[1]
    first, second = p.sweep_reps

    def final(c):
        if (c.estimator, c.G) == ("sign", 4):
            return {r[1]: {first: 0.52, second: 0.40}, r[2]: {first: 0.50, second: 0.50}}.get(c.lr, {}).get(c.rep, 0.3)
        return 0.5 if c.lr == r[1] else 0.4

    finals = {c.name: final(c) for c in sweep_cells(p)}
    lrs = choose_lrs(p, finals)
    assert lrs[("weak", "sign", 4)] == r[2] and lrs[("weak", "sign", 8)] == r[1]
    assert lrs[("broad", "dr_grpo", 4)] == r[1] and set(lrs) == {(reg, est, G) for reg in p.regimes
                                                                  for est in p.estimators for G in p.group_sizes}
    cells = main_cells(p, lrs)
    assert {c.lr for c in cells if (c.regime, c.estimator, c.G) == ("weak", "sign", 8)} == {r[1]}
    assert {c.lr for c in cells if (c.regime, c.estimator, c.G) == ("weak", "sign", 4)} == {r[2]}
    text = tables(p, cells, {}, lrs, finals)
    sweep_part = text.split("Learning-rate sweep")[1]
    row = [x.strip() for x in next(line for line in sweep_part.splitlines() if line.startswith("| weak | 4 | sign |"))
           .split("|")]
    assert row[4:8] == ["0.300", "0.460", "**0.500**", "0.300"]  # r[1]: the mean of 0.52 and 0.40


def test_the_v1_design_stays_reachable():
    v1 = PRESETS["full-v1"]
    cells = main_cells(v1, {(reg, est): 1e-4 for reg in v1.regimes for est in v1.estimators})
    assert all(c.sft_seed is None and "-w" not in c.name and c.config(v1).sft_seed == study.SFT_SEED for c in cells)
    assert all(c.seed == study.SWEEP_SEED and c.G == 4 for c in sweep_cells(v1))
    assert parse_cell("weak-g4-dr_grpo-ds-retire2-lr0.0004-s1") == Cell(
        "extra", "weak", 4, "dr_grpo", 1, 4e-4, ds=True, tag="retire2")
    assert not math.isnan(cells[0].lr)


@pytest.mark.parametrize("name", ["weak-g4-sign-at17-lr0.0002-w0-s1", "weak-g4-dr_grpo-ds-at017-lr0.0002-s1"])
def test_names_that_do_not_spell_a_cell_back_are_refused(name):
    assert parse_cell(name) is None
