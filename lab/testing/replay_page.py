"""The Replay tab in Chromium, for its browser tests: the canvas's picture, the cells' layout, the readouts it must
show (recomputed from the record with the core), the step slider and the hover tip."""

from __future__ import annotations

import numpy as np

from grpo_lab.grid.cells import cell_pixels, cell_positions, grid_shape
from grpo_lab.grid.markup import GRID_WIDTH
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.replay import NOT_SAMPLED, grid_states
from grpo_lab.testing.lab_server import TEXTS_OF_CLASS as READ_CLASS


def picture(page, run: str = "a"):
    """The image run ``run``'s canvas holds: (rows * P, cols * P) uint32 RGBA, row 0 at the bottom."""
    h, w, flat = page.locator(f'.gx-run[data-run="{run}"] canvas').evaluate(
        "c => [c.height, c.width, Array.from(c.__grpoPixels)]")
    return np.array(flat, dtype=np.uint32).reshape(h, w)


def layout(record):
    """Cells as the tab lays them out (largest pass rate at the first evaluation top-left), and the tile size."""
    first = np.asarray(record.evals["pass_rate"][0], float)
    x, y = cell_positions(np.where(np.isfinite(first), first, -1.0))
    cols, rows = grid_shape(record.n_prompts)
    return x.astype(int), y.astype(int), cols, rows, cell_pixels(GRID_WIDTH, cols)


def texts(page, cls):
    return page.evaluate(READ_CLASS, cls)


def expected_readouts(series, i, prefix="replay-"):
    """What the readouts must say at row i, formatted with sims.formatting from step_series."""
    return {
        f"{prefix}step": fixed(float(series["step"][i]), 0),
        f"{prefix}effective-rate": percent(series["effective_group_rate"][i]),
        f"{prefix}effective-rolling": percent(series["effective_group_rate_rolling"][i]),
        f"{prefix}predicted-real": percent(1 - series["predicted_d_real"][i]),
        f"{prefix}predicted-iid": percent(1 - series["predicted_d_iid"][i]),
        f"{prefix}all-pass": percent(series["all_pass_share"][i]),
        f"{prefix}all-fail": percent(series["all_fail_share"][i]),
        f"{prefix}reward": fixed(series["reward_mean"][i], 3),
        f"{prefix}eval-pass": percent(series["eval_pass_rate"][i]),
        f"{prefix}generated": fixed(series["rollouts_generated_cum"][i], 0),
        f"{prefix}useful": fixed(series["rollouts_useful_cum"][i], 0),
    }


def expected_codes(record, i):
    _, states = grid_states(record)
    return [3 if s == NOT_SAMPLED else int(s) for s in states[i]]


def wait_step(page, cls, value):
    page.wait_for_function(f"() => ({READ_CLASS})('{cls}')[0] === '{value}'")


def scrub_to(page, pos):
    """The step slider by keyboard, as a reader moves it: Home, then ArrowRight pos times."""
    h = page.locator("#gx-step")
    h.focus()
    h.press("Home")
    for _ in range(pos):
        h.press("ArrowRight")


def hover_cell(page, run, x, y, cols, rows):
    """Point at cell (x, y) of run ``run``'s grid (row 0 at the bottom) and return the tip's text."""
    canvas = page.locator(f'.gx-run[data-run="{run}"] canvas')
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + (x + 0.5) * box["width"] / cols, box["y"] + (rows - 1 - y + 0.5) * box["height"] / rows)
    tip = page.locator(f'.gx-run[data-run="{run}"] .gx-tip')
    tip.wait_for(state="visible")
    return tip.text_content()
