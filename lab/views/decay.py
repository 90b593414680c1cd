"""The decay curve's columns where the browser kernel cannot compute them (rho > 0): share of groups with a
gradient against training progress t, over all prompts and over the filter's band.

The live lab draws the curve in the browser (``lab/static/live_plots.js``, from ``grpoKernel.shareCurve`` at
rho = 0); with rho > 0 Python sends these columns in ``LiveGrid.curves`` (:func:`plot_curves`).
"""

from __future__ import annotations

import numpy as np

from grpo_lab.memo import Memo, array_key
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.loop_stall import STALL_LEVEL, loop_stall_curve
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.sweep import useful_share_curve

from .frame import Frame

__all__ = ["decay_columns", "stall_columns", "plot_curves", "USEFUL_POINTS", "DECAY_POINTS"]

DECAY_POINTS = 41  #: the curve's progresses, linspace(0, 1, DECAY_POINTS) (the browser's too)
USEFUL_POINTS = 401  #: the P(useful) curve's pass rates, linspace(0, 1, USEFUL_POINTS) (the browser's too)
_CURVES = Memo(32)  #: (population, K, rho, band, gain) -> the columns; the same for every session
_STALLS = Memo(32)  #: (population, K, rho, band, gain, loop) -> the stall overlay's columns


def _nulls(a) -> list:
    """A float array as a JSON list (NaN -> None)."""
    return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, float)]


def decay_columns(frame: Frame) -> dict:
    """``{t, exp, real, exp_f, real_f}``: expected and realised useful share at each t, over all prompts and over
    the band (whether or not the filter is on), as JSON lists."""
    s, pop = frame.scenario, frame.population

    def build() -> dict:
        ts = np.linspace(0.0, 1.0, DECAY_POINTS)
        free = useful_share_curve(pop, ts, s.K, s.rho, None, s.gain)
        kept = useful_share_curve(pop, ts, s.K, s.rho, frame.band, s.gain)
        return {"t": _nulls(ts), "exp": _nulls(free["expected"]), "real": _nulls(free["realised"]),
                "exp_f": _nulls(kept["expected"]), "real_f": _nulls(kept["realised"])}

    return _CURVES.get((array_key(pop.pass_rates), pop.seed, s.K, s.rho, frame.band, s.gain), build)


def useful_curve(K: int, rho: float) -> list:
    """P(useful) of one group at ``USEFUL_POINTS`` pass rates (``sims.outcomes.outcome_probabilities``)."""
    return _nulls(outcome_probabilities(np.linspace(0.0, 1.0, USEFUL_POINTS), K, rho)["p_useful"])


def stall_columns(frame: Frame) -> dict:
    """``{t, p, first_t, loop, label}``: the chosen loop's P(stall) at each of the decay curve's progresses
    (:func:`grpo_lab.sims.loop_stall.loop_stall_curve` over the prompts the loop draws: the band's when the filter is
    on), and the words of its key."""
    s, pop = frame.scenario, frame.population
    loop, gen, train, cap = frame.loop

    def build() -> dict:
        r = loop_stall_curve(pop, np.linspace(0.0, 1.0, DECAY_POINTS), s.K, s.rho, s.band, s.gain, loop, gen, train,
                             cap)
        what = f"DAPO {gen}/{train}, cap {cap}" if loop == "DAPO" else f"GRPO, {train} groups"
        when = (f"stalls from t = {fixed(r['first_t'], 2)}" if r["first_t"] is not None else
                f"P(stall) < {STALL_LEVEL:g} up to t = 1")
        return {"t": _nulls(r["t"]), "p": _nulls(r["p_stall"]), "first_t": r["first_t"], "loop": loop,
                "label": f"{what}: {when}"}

    return _STALLS.get((array_key(pop.pass_rates), pop.seed, s.K, s.rho, s.band, s.gain, frame.loop), build)


def plot_curves(frame: Frame, pin: dict | None) -> dict | None:
    """What the browser's plots need from Python: with rho > 0 the decay columns and the P(useful) curve, with a
    pinned view of rho > 0 its curve (``pin``: its control values), and with a trainer loop chosen its stall curve
    (``stall``: :func:`stall_columns`, drawn over the decay curve); None when the kernel covers all."""
    s = frame.scenario
    out = {}
    if s.rho > 0:
        out = {"decay": decay_columns(frame), "useful": useful_curve(s.K, s.rho)}
    if pin and pin.get("rho", 0) > 0:
        out["pinned"] = useful_curve(int(pin["K"]), float(pin["rho"]))
    if frame.loop is not None:
        out["stall"] = stall_columns(frame)
    return out or None
