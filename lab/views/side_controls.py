"""The controls beside the grid that need the server, as one component: :class:`SideControls`.

Rollout correlation rho, the population (prompts, Beta a and b, the seed), New draw and Reset, with their help as
text. They were eleven Panel widgets and panes (with their wrappers, tooltips and Bokeh models), a fifth of the
server's work for a new visit; here they are native inputs in one component (``lab/static/side_controls.js``),
which a visit builds and sends as one model. Their bounds, steps, defaults and help are read from
:class:`grpo_lab.state.LabState`'s parameters (:data:`FIELDS`), so each is still declared once, there.

:func:`side_controls` builds one for a session's state and keeps the two in step (the browser's values go to the
state; the state's changes, from the URL, the tour, Reset or New draw, come back); a press of New draw or Reset
arrives as a count going up and is answered by the state's ``new_draw()`` or ``reset()``.
"""

from __future__ import annotations

from pathlib import Path

import param
from panel.custom import JSComponent

from grpo_lab.grid.spec import step_digits
from grpo_lab.state import LOOP, LabState, PlayState

__all__ = ["SideControls", "side_controls", "FIELDS", "TIPS", "side_spec"]

#: the state's parameters the component shows, in order: rho, then the population's, then the stall overlay's loop
FIELDS = ("rho", "n_prompts", "a", "b", "seed", *LOOP)
POPULATION = ("n_prompts", "a", "b", "seed")
#: each field's label (its accessible name) is its parameter's own ``label`` (LabState); the step its input moves by
#: (rho's is the state's own step):
_INPUT_STEP = {"n_prompts": 1, "a": 0.1, "b": 0.1, "seed": 1, "gen_batch": 1, "train_batch": 1, "cap": 1}

#: the buttons' and the hints' texts
TIPS = {
    "play": "Play / pause: animate training progress from its current value to 1.",
    "step": "Step: advance training progress by 0.05.",
    "reset": "Reset every control to the defaults (the view of `grpo-lab population`).",
    "new_draw": "New draw: the same difficulty distribution, a new random seed.",
    "population": ("Prompts: one cell each; their starting pass rates are drawn from Beta(a, b), and the seed "
                   "fixes the draw (New draw picks another)."),
    "loop": ("The decay curve shows, dashed, the chance that a step of this loop stalls at each progress, for the "
             "population above (with the filter on: its band's prompts)."),
}


def _like(p: param.Parameter) -> param.Parameter:
    """A parameter of ``p``'s kind with its default, bounds, step and help (declared once, on LabState)."""
    return type(p)(default=p.default, bounds=p.bounds, step=p.step, doc=p.doc)


def side_spec(state: type[LabState] = LabState) -> dict:
    """What the browser builds the controls from (JSON-ready): per field its label, kind ("number" or
    "integer"), min, max, step, digits shown (None: the value as it is) and help, and the texts around them."""
    controls = {}
    for name in FIELDS:
        p = state.param[name]
        if isinstance(p, param.Selector):
            controls[name] = {"label": p.label, "kind": "select", "options": list(p.objects), "doc": p.doc}
            continue
        step = p.step if name == "rho" else _INPUT_STEP[name]
        controls[name] = {"label": p.label, "kind": "integer" if isinstance(p, param.Integer) else "number",
                          "min": p.bounds[0], "max": p.bounds[1], "step": step,
                          "digits": step_digits(step) if name == "rho" else None, "doc": p.doc}
    return {"controls": controls, "population": list(POPULATION), "play_hint": TIPS["play"],
            "population_heading": "Population", "population_hint": TIPS["population"],
            "loop": list(LOOP), "loop_heading": "When would a trainer stall?", "loop_hint": TIPS["loop"],
            "buttons": {"new_draw": {"label": "New draw", "tip": TIPS["new_draw"]},
                        "reset": {"label": "Reset", "tip": TIPS["reset"]}}}


_SPEC = side_spec()  # the same for every session


class SideControls(JSComponent):
    """rho, the population's controls, New draw and Reset (see the module docstring)."""

    rho = _like(LabState.param.rho)
    n_prompts = _like(LabState.param.n_prompts)
    a = _like(LabState.param.a)
    b = _like(LabState.param.b)
    seed = _like(LabState.param.seed)
    loop = param.Selector(objects=list(LabState.param.loop.objects), default=LabState.param.loop.default,
                          doc=LabState.param.loop.doc)
    gen_batch = _like(LabState.param.gen_batch)
    train_batch = _like(LabState.param.train_batch)
    cap = _like(LabState.param.cap)
    new_draw_clicks = param.Integer(default=0, bounds=(0, None), doc="Presses of New draw (a new seed).")
    reset_clicks = param.Integer(default=0, bounds=(0, None), doc="Presses of Reset (every control to its default).")
    spec = param.Dict(default=_SPEC, doc="The controls' labels, bounds, steps and help (side_spec); set once.")

    _esm = (Path(__file__).resolve().parents[1] / "static" / "side_controls.js").read_text(encoding="utf-8")
    _stylesheets = ["""
.side-controls { font: 14px/1.4 system-ui, sans-serif; color: #222; padding: 0 2px; }
.sc-hint { margin: 0 0 6px; font-size: 13px; color: #333; }
.sc-heading { margin: 6px 0 2px; font-weight: bold; }
.sc-field { display: flex; flex-direction: column; margin: 0 0 4px; }
.sc-range .sc-label::after { content: ":"; }
.sc-range { flex-direction: row; flex-wrap: wrap; align-items: center; column-gap: .4em; }
.sc-range input { flex: 1 0 100%; margin: 4px 0; accent-color: #0072b2; }
.sc-population { display: flex; flex-wrap: wrap; gap: 4px 10px; margin: 0 0 4px; }
.sc-select select { font: inherit; padding: 3px 4px; }
.sc-number input { width: 80px; font: inherit; padding: 4px 6px; border: 1px solid #888; border-radius: 4px; }
.sc-buttons { display: flex; flex-wrap: wrap; gap: 8px; margin: 4px 0 6px; }
.sc-btn { font: inherit; font-size: 13px; padding: 6px 12px; min-height: 30px; border: 1px solid #888;
  border-radius: 4px; background: #f3f3f3; color: #222; cursor: pointer; }
.sc-btn:hover { background: #e6e6e6; }
"""]


def side_controls(lab: LabState, play: PlayState, **layout) -> SideControls:
    """A :class:`SideControls` for this session's state, kept in step with it (see the module docstring)."""
    c = SideControls(**{name: getattr(lab, name) for name in FIELDS}, **layout)
    c.param.watch(lambda *events: lab.param.update(**{e.name: e.new for e in events}), list(FIELDS))
    lab.param.watch(lambda *events: c.param.update(**{e.name: e.new for e in events}), list(FIELDS))
    c.param.watch(lambda _e: lab.new_draw(), "new_draw_clicks")
    c.param.watch(lambda _e: (setattr(play, "playing", False), lab.reset()), "reset_clicks")
    return c
