"""The Replay tab's grid: :class:`ReplayGrid`, the browser grid view in frames mode, and its data.

One component draws both runs (the chosen one and the compared one) on one step axis, with one
step slider and Play, hover (prompt, group, pass rate at the nearest evaluation, k of K rollouts
passed) and the readouts, all in the browser (``grpoGridView.frames`` in ``lab/static/gridview.js``,
the same view, painter and kernel formatters as the live lab and the export). Python sends the
frames once per choice of runs (:func:`frames_data`: every number computed by
:mod:`grpo_lab.sims.replay` through :class:`~grpo_lab.replay.model.RunView`) and hears the step
position once the slider pauses (``value``), to move the plots' step markers and histograms.
"""

from __future__ import annotations

import numpy as np
import param
from bokeh.palettes import Cividis256
from panel.custom import JSComponent

from grpo_lab.sims.replay import grid_successes

from ..grid.cells import cell_pixels, cell_tiles, colour_tiles
from ..grid.markup import GRID_WIDTH, STATIC, STYLE_PATH, frames_html
from ..grid.readouts import STATE_WORDS
from ..kernel import b64, kernel_source
from ..palette import FILTERED_COLOR
from .model import NOT_SAMPLED_CODE, RunView, rows_for
from .plots import NAN_RATE_CODE, NOT_SAMPLED_LABEL, RATE_COLOURS, READOUTS, rate_codes, readout_template

__all__ = ["ReplayGrid", "frames_data", "sparse_cells", "PLAY_MS", "caption"]

PLAY_MS = 150  #: Play's time per step position, in milliseconds
#: indexed by cell code (MIXED, ALL_PASS, ALL_FAIL, not sampled): the hover's words
WORDS = [*(STATE_WORDS[c] for c in sorted(STATE_WORDS)), NOT_SAMPLED_LABEL]
_RATE_KEY = (f'<div class="grpo-legend" style="font:13px/1.6 system-ui,sans-serif">Pass rate at the nearest '
             f'evaluation: 0%<span class="gx-rate-bar" style="background:linear-gradient(to right,'
             f'{",".join(Cividis256[i] for i in range(0, 256, 51))},{Cividis256[255]})"></span>100%; '
             f'<span style="display:inline-block;width:14px;height:14px;vertical-align:-2px;border:1px solid #999;'
             f'background:{FILTERED_COLOR}"></span> no evaluation</div>')


def caption(view: RunView, which: str) -> str:
    """A run's caption in words (plain text: the browser sets it as text), e.g. "Run: r. 64 prompts, ..."."""
    n_steps = len(view.steps)
    K = view.group_size
    first, last = (int(view.steps[0]), int(view.steps[-1])) if n_steps else (0, 0)
    head = "Run" if which == "a" else "Compared with (dash-dot lines in the plots)"
    groups = f", groups of {K} rollouts" if K else ", scalars only (no groups)"
    return (f"{head}: {view.label}. {view.n_prompts} prompts, {n_steps} recorded steps ({first} to {last})"
            f"{groups}, {'with' if view.has_evals else 'without'} evaluations.")


def sparse_cells(codes: np.ndarray, k: np.ndarray, K: np.ndarray, not_sampled: int = NOT_SAMPLED_CODE) -> dict:
    """The grid's (steps, prompts) tables ``codes``, ``k``, ``K`` kept only where a cell says something.

    A cell (s, x) is kept when ``codes[s, x] != not_sampled`` or ``k[s, x] != 0`` or ``K[s, x] != 0``; every
    other cell is "not sampled" with k = K = 0, so the dense tables are exactly: fill with (not_sampled, 0, 0),
    then for each step s write the kept cells ``offsets[s] <= j < offsets[s + 1]`` at column ``prompt[j]``.

    Returns ``offsets`` (steps + 1,) int64, ``prompt`` (cells,) int64 ascending within a step, and ``code``,
    ``k``, ``K`` (cells,) in the input dtypes. No steps: ``offsets == [0]``; no kept cell: empty arrays.
    """
    keep = (codes != not_sampled) | (k != 0) | (K != 0)
    offsets = np.zeros(len(codes) + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=offsets[1:])
    _, prompt = np.nonzero(keep)  # row-major: grouped by step, prompts ascending
    return {"offsets": offsets, "prompt": prompt, "code": codes[keep], "k": k[keep], "K": K[keep]}


def _run_data(view: RunView, which: str, steps: np.ndarray) -> dict:
    n = view.n_prompts
    cols, rows = int(view.x.max(initial=0)) + 1, int(view.y.max(initial=0)) + 1
    P = cell_pixels(GRID_WIDTH, cols)
    if view.scalars_only:
        k = K = np.zeros((len(view.steps), n), np.int16)
    else:
        k, K = grid_successes(view.record, view.facts)
    counts = "<u1" if int(K.max(initial=0)) <= 255 else "<i2"  # a byte per count for any usual group size
    index = "<u2" if n <= 1 << 16 else "<i4"  # a prompt's column
    cells = sparse_cells(view.codes, k, K)
    prefix = "replay-" if which == "a" else f"replay-{which}-"
    return {"caption": caption(view, which), "prompts": view.prompt_labels, "words": WORDS,
            "canvas_label": f"{n} prompts of {view.label}, one cell each, coloured by its group at this step",
            "geometry": {"cols": cols, "rows": rows, "P": P}, "x": b64(view.x, "<i4"), "y": b64(view.y, "<i4"),
            "tiles": b64(cell_tiles(P), "<u4"), "rate_tiles": b64(colour_tiles(P, [(c, 1.0) for c in RATE_COLOURS]), "<u4"),
            "offsets": b64(cells["offsets"], "<i4"), "prompt": b64(cells["prompt"], index), "index": index[1:],
            "codes": b64(cells["code"], "<i1"), "k": b64(cells["k"], counts), "K": b64(cells["K"], counts),
            "counts": counts[1:],
            "rates": b64(view.eval_rates, "<f4"), "rate_codes": b64(rate_codes(view.eval_rates), "<i2"),
            "ev_row": b64(view.ev_row, "<i4"), "rows": b64(rows_for(view, steps), "<i4"),
            "series": {key: b64(view.series[key], "<f8") for _, key, _, _ in READOUTS},
            "template": readout_template(prefix), "not_sampled": NOT_SAMPLED_CODE, "nan_rate_code": NAN_RATE_CODE}


def frames_data(views, steps: np.ndarray) -> dict:
    """The runs shown (``views``: run A and run B, either may be None) on the shared axis ``steps``, packed for
    ``grpoGridView.frames(...).setFrames``: base64 little-endian arrays, JSON-ready.

    Each run's grid is sparse (:func:`sparse_cells`): ``offsets`` (steps + 1, i4) and per kept cell its
    ``prompt`` (``index``: u2 up to 65,536 prompts, else i4), ``codes`` (i1), ``k`` and ``K`` (``counts``);
    most cells of a big run are "not sampled" at any step, and the browser paints a step by resetting
    to "not sampled" and writing that step's cells."""
    return {"steps": [int(s) for s in steps],
            "runs": [_run_data(v, w, steps) if v is not None else None for v, w in zip(views, ("a", "b"))]}


def _module_source() -> str:
    parts = [kernel_source()] + [(STATIC / name).read_text(encoding="utf-8")
                                 for name in ("cells.js", "gridview.js", "replay_grid.js")]
    return "\n".join(parts)


class ReplayGrid(JSComponent):
    """Step slider, Play, and each run's caption, readouts and grid (see the module docstring)."""

    value = param.Integer(0, bounds=(0, None), doc=(
        "The position on the shared step axis shown (the browser sends it once the slider pauses, and during play)."))
    frames = param.Dict(default={"steps": [], "runs": [None, None]}, doc="The runs shown, packed by frames_data.")
    rates = param.Boolean(False, doc="Colour cells by pass rate at the nearest evaluation instead of the outcome.")
    play_ms = param.Integer(PLAY_MS, bounds=(20, None), doc="Play's time per step position (ms).")
    markup = param.String(default=frames_html(NOT_SAMPLED_LABEL, _RATE_KEY), doc="The view's HTML.")

    _esm = _module_source()
    _stylesheets = [STYLE_PATH.read_text(encoding="utf-8")]
