"""One evaluated view of the live lab, shared by every panel that redraws on a change."""

from __future__ import annotations

from dataclasses import dataclass

from grpo_lab.grid.spec import DEFAULT_BAND
from grpo_lab.sims.population import Population
from grpo_lab.sims.scenario import Scenario, View

__all__ = ["Frame"]


@dataclass(frozen=True)
class Frame:
    """The scenario, its population and ``sims.scenario.evaluate``'s view of it."""

    scenario: Scenario
    population: Population
    view: View
    band: tuple[float, float] = DEFAULT_BAND  #: the filter's band, also when the filter is off
    pin: str = ""  #: the pinned view (``grpo_lab.grid.pin``; empty: none), which the plots show as a ghost
    loop: tuple | None = None  #: the stall overlay's (loop, gen_batch, train_batch, cap), or None
