r"""When a trainer's loop would stall as training progresses, for the lab's population: the Live lab's overlay.

For the population on screen the decay model gives, at training progress t, the expected share of groups with a
gradient u(t) (:func:`grpo_lab.sims.sweep.useful_share_curve`'s ``expected``: the mean of P(useful | p_t, K, rho)
over the prompts, or over the filter's band when it is on: the prompts the loop draws). A loop's step at t then:

(Named deviation: without the filter, a population of more than :data:`MAX_PROMPTS` prompts is thinned to that many,
evenly spaced in pass rate, for u(t): within 1e-3 of the whole population's mean, at a tenth of the cost.)

* **DAPO** (dynamic sampling: verl's ``recipe/dapo``, rounds of ``gen_batch`` prompts until ``train_batch`` mixed
  groups are kept, at most ``cap`` rounds): fails with P(stall | t) = P(R > cap), the core's
  :func:`grpo_lab.sims.doctor.stall.rounds_distribution` at u(t) (prompts drawn from a large dataset:
  ``P(Binomial(cap * gen_batch, u) < train_batch)``);
* **plain GRPO** (``train_batch`` groups a step, no filter): trains on nothing when every group of the step is
  unanimous, the zero loss of TRL #3857: P(dead step | t) = (1 - u(t)) ** train_batch (each group drawn
  independently from the population; with a band, from the band's prompts).

:func:`loop_stall_curve` returns that probability at each t, and ``first_t``, the first t at which it passes
:data:`STALL_LEVEL` (None when it does not within t <= 1). The x axis is the lab's training progress, not steps:
how many steps a unit of t is depends on the learning rate, which the lab does not model.
"""

from __future__ import annotations

import numpy as np

from .doctor.stall import rounds_distribution
from .errors import InputError
from .population import Population
from .sweep import useful_share_curve

__all__ = ["LOOPS", "STALL_LEVEL", "loop_stall_curve"]

LOOPS = ("DAPO", "GRPO")  #: the loops the overlay knows
STALL_LEVEL = 0.5  #: a step stalls more often than not from the first t where P(stall | t) passes this
MAX_PROMPTS = 2_000  #: u(t) of a larger population is taken over this many of its prompts (:func:`_thinned`)


def _thinned(population: Population) -> Population:
    """At most :data:`MAX_PROMPTS` of the population's prompts, evenly spaced in pass rate (the middle of each of
    M equal-count blocks): u(t) over all the prompts is a mean of a smooth function of the pass rate, which they give
    within 1e-3 (tests/test_loop_stall.py) at a tenth of the cost for the lab's 20,000. Not with the filter's band:
    the share of a few prompts in a band is not smooth in them (the whole population is used then)."""
    p = population.pass_rates
    if len(p) <= MAX_PROMPTS:
        return population
    pick = ((np.arange(MAX_PROMPTS) + 0.5) * len(p) // MAX_PROMPTS).astype(int)  # each block of n / M its middle
    return Population(np.sort(p)[pick], population.seed, population.a, population.b)


def loop_stall_curve(population: Population, ts, K: int, rho: float, band, gain: float, loop: str,
                     gen_batch: int, train_batch: int, cap: int) -> dict:
    """``{t, u, p_stall, first_t, loop}`` (see the module docstring). ``band``: the filter's (lo, hi) when it is on,
    else None. InputError for an unknown loop or batch sizes that are not positive integers (``cap`` >= 1 for
    DAPO)."""
    if loop not in LOOPS:
        raise InputError(f"unknown trainer loop {loop!r}; choose one of {', '.join(LOOPS)}")
    for name, v, least in (("gen_batch", gen_batch, 1), ("train_batch", train_batch, 1), ("cap", cap, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise InputError(f"{name} must be an integer >= {least}, got {v!r}")
    t = np.asarray(ts, float)
    u = np.asarray(useful_share_curve(population if band else _thinned(population), t, K, rho, band, gain,
                                      realised=False)["expected"], float)
    ok = np.isfinite(u)
    p = np.full(len(t), np.nan)
    if loop == "DAPO":
        if ok.any():
            p[ok] = np.asarray(rounds_distribution(u[ok][:, None], int(gen_batch), int(train_batch),
                                                   int(cap))["p_stall"], float)
    else:
        p[ok] = (1.0 - np.clip(u[ok], 0.0, 1.0)) ** int(train_batch)
    over = np.flatnonzero(ok & (p > STALL_LEVEL))
    return {"t": t, "u": u, "p_stall": p, "first_t": float(t[over[0]]) if len(over) else None, "loop": loop}
