"""Pin and compare: the pinned view beside the live one, compared at the same rollout budget.

The session's :class:`grpo_lab.state.LabState` holds the pin (``pin``, a URL value, see
:mod:`grpo_lab.grid.pin`). :class:`PinLink` keeps the grid component in step with it: the Pin button's
clicks set or clear it, and the component is sent the pinned view (its cells, painted as a ghost beside
the grid in the browser) whenever the pin or the population changes, and the comparison whenever the
plots redraw. Every number comes from the core: the views from :func:`grpo_lab.sims.scenario.evaluate`,
the budget figures from :func:`grpo_lab.sims.kcost.k_cost`; this module lays them out.

At a fixed rollout budget the useful groups bought are, per 1,000 rollouts, ``1000 U(K) / K`` for
each view (U: the expected share of groups with a gradient over the prompts it counts), so

    ratio = (1000 U_now / K_now) / (1000 U_pin / K_pin)

is how many times the pinned view's useful groups the live one buys with the same rollouts.
"""

from __future__ import annotations

import html
import math

from grpo_lab.grid.component import server_view
from grpo_lab.grid.pin import pin_label, pin_text, pin_values
from grpo_lab.grid.spec import scenario_values
from grpo_lab.memo import Memo, array_key
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.kcost import k_cost
from grpo_lab.sims.scenario import Scenario, evaluate

from .frame import Frame

__all__ = ["PinLink", "pinned_scenario", "budget_figures", "compare_html"]

_PINNED = Memo(16)  #: (population, pin) -> the pinned view's server_view; the same for every session


def pinned_scenario(scenario: Scenario, pin: str) -> Scenario:
    """The pinned view: ``scenario``'s population and gain, the pin's controls."""
    v = pin_values(pin)
    return Scenario(n_prompts=scenario.n_prompts, a=scenario.a, b=scenario.b, seed=scenario.seed,
                    progress=v["progress"], K=v["K"], rho=v["rho"],
                    band=(v["band_lo"], v["band_hi"]) if v["filter"] else None, gain=scenario.gain)


def budget_figures(frame: Frame) -> dict:
    """One view's figures at a fixed rollout budget, over the prompts it counts (``sims.kcost.k_cost``):
    ``useful_share`` (expected), ``per_1000`` (useful groups per 1,000 rollouts), ``per_useful``
    (rollouts per useful group); and from its summary ``realised`` (share of groups with a gradient),
    ``n_kept`` and ``n_prompts``. NaN where no prompt is counted."""
    s, v = frame.scenario, frame.view
    c = k_cost(v.pass_rate[v.kept], [s.K], rho=s.rho)
    return {"useful_share": float(c["useful_share"][0]), "per_1000": float(c["useful_per_1000_rollouts"][0]),
            "per_useful": float(c["rollouts_per_useful"][0]), "realised": float(v.summary["useful_share_realised"]),
            "n_kept": int(v.summary["n_kept"]), "n_prompts": int(v.summary["n_prompts"])}


def compare_html(pinned: Frame, now: Frame) -> str:
    """The comparison: a sentence at the same rollout budget and a table of both views' figures (HTML; every
    text is a number or a fixed label, escaped all the same)."""
    a, b = budget_figures(pinned), budget_figures(now)
    la, lb = pin_label(scenario_values(pinned.scenario)), pin_label(scenario_values(now.scenario))
    ratio = b["per_1000"] / a["per_1000"] if a["per_1000"] > 0 and math.isfinite(b["per_1000"]) else math.nan
    e = html.escape
    if math.isfinite(ratio):
        lead = (f"At the same rollout budget, now ({e(lb)}) buys <b class='gx-compare-ratio'>{fixed(ratio, 2)}\u00d7"
                f"</b> the useful groups the pinned view ({e(la)}) buys: {fixed(b['per_1000'], 1)} against "
                f"{fixed(a['per_1000'], 1)} per 1,000 rollouts.")
    else:
        lead = "No comparison: one of the two views counts no prompt (the filter keeps none)."
    rows = (("Groups with a gradient (realised)", "realised", percent),
            ("Groups with a gradient (expected)", "useful_share", percent),
            ("Useful groups per 1,000 rollouts", "per_1000", lambda x: fixed(x, 1)),
            ("Rollouts per useful group", "per_useful", lambda x: fixed(x, 1)))
    body = "".join(f"<tr><th scope='row'>{label}</th><td class='gx-pin-{key}'>{fmt(a[key])}</td>"
                   f"<td class='gx-now-{key}'>{fmt(b[key])}</td></tr>" for label, key, fmt in rows)
    body += (f"<tr><th scope='row'>Prompts counted</th><td>{a['n_kept']:,} of {a['n_prompts']:,}</td>"
             f"<td>{b['n_kept']:,} of {b['n_prompts']:,}</td></tr>")
    return (f"<p class='gx-compare-lead'>{lead}</p><table class='gx-compare-table'>"
            "<caption>The pinned view against the view now</caption>"
            f"<tr><th scope='col'></th><th scope='col' class='gx-pin-label'>Pinned: {e(la)}</th>"
            f"<th scope='col' class='gx-now-label'>Now: {e(lb)}</th></tr>{body}</table>")


class PinLink:
    """Keeps a :class:`grpo_lab.grid.component.LiveGrid` and the state's ``pin`` in step (see the module docstring).

    ``frame()`` is the live lab's current :class:`Frame` (``LiveLab.frame``); :meth:`update` is called with
    it whenever the plots redraw.
    """

    def __init__(self, lab, grid, frame):
        self.lab, self.grid, self._frame = lab, grid, frame
        grid.param.watch(lambda _e: self.toggle(), "pin_clicks")
        lab.param.watch(lambda _e: self.update(self._frame()), "pin")

    def toggle(self) -> None:
        """The Pin button: pin the view on screen, or clear the pin."""
        self.lab.pin = "" if self.lab.pin else pin_text(self.lab.linked_values())

    def update(self, frame: Frame) -> None:
        """Send the grid the pinned view (when it changed) and the comparison with ``frame``; nothing pinned: none."""
        pin = self.lab.pin
        if not pin:
            if self.grid.ghost is not None or self.grid.compare:
                self.grid.param.update(ghost=None, compare="")
            return
        pinned, ghost = _pinned(frame, pin)
        update = {"compare": compare_html(pinned, frame)}
        if self.grid.ghost is None or self.grid.ghost.get("key") != ghost["key"]:
            update["ghost"] = ghost
        self.grid.param.update(**update)


def _pinned(frame: Frame, pin: str) -> tuple[Frame, dict]:
    """The pinned view of ``frame``'s population, and the ghost the grid is sent (cached: no session owns it)."""
    pop = frame.population
    s = pinned_scenario(frame.scenario, pin)

    def compute():
        pinned, words = Frame(s, pop, evaluate(s, pop), *([s.band] if s.band else [])), pin_label(scenario_values(s))
        return pinned, {"key": f"{pop.seed}/{pop.n}/{pop.a!r}/{pop.b!r}/{s.gain!r}/{pin}",
                        "title": f"Pinned view: {words}", "label": f"The pinned view's prompts ({words})",
                        "view": server_view(pinned.view, s.K)}

    return _PINNED.get((pop.seed, pop.n, array_key(pop.pass_rates), s.gain, pin), compute)
