"""The grid's controls and readout rows, declared once.

Every host of the grid view (the served lab's :class:`grpo_lab.grid.component.LiveGrid`, the lab's
:class:`grpo_lab.state.LabState`, the exported page) reads its controls from here:

``GridControls``
    One ``param.Parameterized`` holding the controls the grid view shows (training progress, K, the
    difficulty filter and its band) and rho, which only the server can paint. Bounds and defaults come
    from the core: K's maximum is :data:`grpo_lab.sims.population.UNIFORM_BLOCK` (the kernel's block of
    rollout uniforms), the other defaults are ``sims.scenario.Scenario()``'s. ``LabState`` extends it;
    ``LiveGrid`` is built from it; :func:`link` keeps two of them in step.
``ordered_band(lo, hi)``
    The one place the band's ends are put in order (the scenario, the grid and the URL all call it).
``control_spec(progress_step)``
    The controls as the browser reads them (names in order, and each one's kind, min, max, step and
    default): the markup writes its inputs' attributes from it and ``gridview.js`` reads it, so no
    bound is typed in JavaScript or HTML.
``READOUTS``
    The readout rows of the grid: (label, expected summary key or None, realised key or None, format,
    CSS class stem).

Changing a label, a bound or a default is one edit here (plus the kernel, for K beyond its block): each
parameter's ``label`` is the control's name on the page (its accessible name too) wherever it is shown.
"""

from __future__ import annotations

import math

import param

from grpo_lab.sims.population import UNIFORM_BLOCK
from grpo_lab.sims.scenario import DEFAULT_BAND, Scenario

__all__ = ["K_MAX", "RHO_MAX", "DEFAULT_BAND", "PROGRESS_STEP", "EXPORT_PROGRESS_STEP", "BAND_STEP", "RHO_STEP",
           "PLAY_SECONDS", "PLAY_SYNC_MS", "cli_flag", "VIEW_OPTIONS",
           "GridControls", "VIEW_CONTROLS", "LINKED", "ordered_band", "control_spec", "step_digits", "link",
           "scenario_values", "READOUTS"]

K_MAX = UNIFORM_BLOCK  #: the largest group size: one block of the core's rollout uniforms, all the kernel has
RHO_MAX = 0.95  #: the largest rollout correlation offered (Beta quantiles beyond it are numerically harsh)
PROGRESS_STEP = 0.01  #: the served lab's progress slider step
EXPORT_PROGRESS_STEP = 0.001  #: the exported page's progress slider step (its play moves smoothly)
BAND_STEP = 0.01  #: the band sliders' step
RHO_STEP = 0.05  #: the rho slider's step
PLAY_SECONDS = 8.0  #: Play's whole sweep of training progress, minimum to maximum (the browser's play loop)
PLAY_SYNC_MS = 250  #: while the lab plays, the browser sends Python the progress this often (the plots follow)

_DEFAULT = Scenario()

#: the controls the grid view shows, in order (its inputs gx-<name>)
VIEW_CONTROLS = ("progress", "K", "filter", "band_lo", "band_hi")
#: the values a grid component and its state share (the view's controls and rho)
LINKED = VIEW_CONTROLS + ("rho",)


#: the lab's controls a view command (``population``, ``export``) takes as options, in their order
VIEW_OPTIONS = ("n_prompts", "a", "b", "seed", "progress", "K")


def cli_flag(name: str) -> str:
    """The command line's option for the control ``name`` (its parameter's name, dashed): ``--n-prompts``, ``--K``.
    The CLI's parser (grpo_lab.commands._args), the export's command line and the exported page's read it here."""
    return "--" + name.replace("_", "-")


def ordered_band(lo: float, hi: float) -> tuple[float, float]:
    """The band ``(lo, hi)`` with its ends in order: the smaller first. Equal ends are a band of one value."""
    return (lo, hi) if lo <= hi else (hi, lo)


class GridControls(param.Parameterized):
    """The grid's controls (see the module docstring). ``band()`` is the band in order."""

    progress = param.Number(_DEFAULT.progress, bounds=(0.0, 1.0), step=PROGRESS_STEP, label="Training progress t", doc=(
        "Training progress t: 0 is the start of the run, 1 the end. Every prompt's pass rate rises "
        "as p_t = p_0^(1/(1 + g t))."))
    K = param.Integer(_DEFAULT.K, bounds=(1, K_MAX), step=1, label="Group size K", doc=(
        "Group size K: rollouts sampled per prompt. A group with no disagreement carries no gradient."))
    filter = param.Boolean(False, label="Difficulty filter: keep prompts whose pass rate lies in the band", doc=(
        "Difficulty filter: keep only prompts whose current pass rate lies in the band; shares are then "
        "over the kept prompts."))
    band_lo = param.Number(DEFAULT_BAND[0], bounds=(0.0, 1.0), step=BAND_STEP, label="Filter band, low end",
                           doc="Lowest pass rate the filter keeps.")
    band_hi = param.Number(DEFAULT_BAND[1], bounds=(0.0, 1.0), step=BAND_STEP, label="Filter band, high end",
                           doc="Highest pass rate the filter keeps.")
    rho = param.Number(_DEFAULT.rho, bounds=(0.0, RHO_MAX), step=RHO_STEP, label="Rollout correlation rho", doc=(
        "Rollout correlation rho within a group (0 = independent). Rollouts that share a prompt tend to "
        "agree, which makes unanimous groups more likely. With rho > 0 the server repaints the grid."))

    def band(self) -> tuple[float, float]:
        """The filter's band, in order (whether or not the filter is on)."""
        return ordered_band(self.band_lo, self.band_hi)

    def linked_values(self) -> dict:
        """The :data:`LINKED` values, the band in order: what a grid component shows."""
        lo, hi = self.band()
        return {"progress": self.progress, "K": self.K, "filter": self.filter, "band_lo": lo, "band_hi": hi,
                "rho": self.rho}


def scenario_values(scenario) -> dict:
    """The :data:`LINKED` control values that show a :class:`grpo_lab.sims.scenario.Scenario`: its progress, K
    and rho, ``filter`` on when it has a band, and the band in order (the default band when it has none)."""
    lo, hi = ordered_band(*scenario.band) if scenario.band is not None else DEFAULT_BAND
    return {"progress": scenario.progress, "K": scenario.K, "filter": scenario.band is not None, "band_lo": lo,
            "band_hi": hi, "rho": scenario.rho}


def step_digits(step: float) -> int:
    """Decimals a value on a slider of this step needs: 0.01 -> 2, 0.001 -> 3, 1 -> 0."""
    return max(0, -math.floor(math.log10(step) + 1e-9))


def control_spec(progress_step: float = PROGRESS_STEP, controls: type[GridControls] = GridControls) -> dict:
    """The view's controls for the browser and the markup (JSON-ready).

    ``{"names": VIEW_CONTROLS, "controls": {name: {"kind", "min", "max", "step", "digits", "default",
    "label", "doc"}}}``; kind is "number", "integer" or "boolean" (a boolean has no bounds or step).
    ``progress_step`` is the host's progress step (the served lab's or the exported page's).
    """
    out = {}
    for name in VIEW_CONTROLS:
        p = controls.param[name]
        entry = {"default": p.default, "label": p.label, "doc": p.doc}
        if isinstance(p, param.Boolean):
            entry["kind"] = "boolean"
        else:
            step = progress_step if name == "progress" else p.step
            entry.update(kind="integer" if isinstance(p, param.Integer) else "number", min=p.bounds[0],
                         max=p.bounds[1], step=step, digits=step_digits(step))
        out[name] = entry
    return {"names": list(VIEW_CONTROLS), "controls": out}


def link(state: GridControls, grid: GridControls) -> None:
    """Keep ``grid`` (a component) and ``state`` in step: the view's moves go to the state, and every
    change of the state (URL, play, step, reset, rho) to the grid, with the band in order."""
    grid.param.watch(lambda *events: state.param.update(**{e.name: e.new for e in events}), list(VIEW_CONTROLS))
    state.param.watch(lambda *_events: grid.param.update(**state.linked_values()), list(LINKED))


#: readout rows: (label, expected summary key or None, realised key or None, format, CSS class stem)
READOUTS = (
    ("Mean pass rate", None, "mean_pass_rate", "pct", "mean-pass"),
    ("Groups with a gradient", "useful_share_expected", "useful_share_realised", "pct", "useful"),
    ("All-pass groups", "all_pass_share_expected", "all_pass_share", "pct", "all-pass"),
    ("All-fail groups", "all_fail_share_expected", "all_fail_share", "pct", "all-fail"),
    ("Prompts kept by the filter", None, "kept_share", "pct", "kept"),
    ("Rollouts per useful group", "rollouts_per_useful_expected", "rollouts_per_useful_realised", "fix1",
     "rollouts-per-useful"),
    ("Useful rollouts per 1,000", "useful_per_1000_expected", "useful_per_1000_realised", "fix0",
     "useful-per-1000"),
)
