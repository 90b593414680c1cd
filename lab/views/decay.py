"""The decay curve's columns where the browser kernel cannot compute them (rho > 0): share of groups with a
gradient against training progress t, over all prompts and over the filter's band.

The live lab draws the curve in the browser (``lab/static/live_plots.js``, from ``grpoKernel.shareCurve`` at
rho = 0); with rho > 0 Python sends these columns in ``LiveGrid.curves`` (:func:`plot_curves`).
"""

from __future__ import annotations

import numpy as np

from grpo_lab.memo import Memo, array_key
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.sweep import useful_share_curve

from .frame import Frame

__all__ = ["decay_columns", "plot_curves", "USEFUL_POINTS", "DECAY_POINTS"]

DECAY_POINTS = 41  #: the curve's progresses, linspace(0, 1, DECAY_POINTS) (the browser's too)
USEFUL_POINTS = 401  #: the P(useful) curve's pass rates, linspace(0, 1, USEFUL_POINTS) (the browser's too)
_CURVES = Memo(32)  #: (population, K, rho, band, gain) -> the columns; the same for every session


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


def plot_curves(frame: Frame, pin: dict | None) -> dict | None:
    """What the browser's plots need from Python: with rho > 0 the decay columns and the P(useful) curve, and
    with a pinned view of rho > 0 its curve (``pin``: its control values); None when the kernel covers all."""
    s = frame.scenario
    out = {}
    if s.rho > 0:
        out = {"decay": decay_columns(frame), "useful": useful_curve(s.K, s.rho)}
    if pin and pin.get("rho", 0) > 0:
        out["pinned"] = useful_curve(int(pin["K"]), float(pin["rho"]))
    return out or None
