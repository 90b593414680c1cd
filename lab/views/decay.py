"""The decay curve's columns where the browser kernel cannot compute them (rho > 0): share of groups with a
gradient against training progress t, over all prompts and over the filter's band, and the stall overlay's.

The live lab draws the curve in the browser (``lab/static/live_plots.js``, from ``grpoKernel.shareCurve`` at
rho = 0); with rho > 0 Python sends these columns in ``LiveGrid.curves`` (:func:`plot_curves`). The stall overlay
likewise: at rho = 0 the browser computes it (``grpoKernel.loopStall``, in the grid's event) from the loop's
settings and the core's constants that :func:`loop_data` sends in ``LiveGrid.loop``; with rho > 0 Python sends
:func:`stall_columns`.
"""

from __future__ import annotations

import numpy as np

from grpo_lab.memo import Memo, array_key
from grpo_lab.sims.formatting import fixed
from grpo_lab.sims.loop_stall import MAX_PROMPTS, STALL_LEVEL, loop_stall_curve
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.sweep import useful_share_curve

from .frame import Frame

__all__ = ["decay_columns", "stall_columns", "loop_data", "plot_curves", "USEFUL_POINTS", "DECAY_POINTS"]

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


def loop_data(loop: tuple | None) -> dict | None:
    """What the browser's stall overlay needs (``grpoKernel.loopStall``), for ``loop`` = ``(loop, gen_batch,
    train_batch, cap)`` (None: no loop, None back): those, the core's :data:`~grpo_lab.sims.loop_stall.STALL_LEVEL`
    (``level``) and :data:`~grpo_lab.sims.loop_stall.MAX_PROMPTS` (``max_prompts``), and the key's words, ``stalls``
    (followed by the first t, two decimals) and ``none`` (no stall up to t = 1)."""
    if loop is None:
        return None
    name, gen, train, cap = loop
    what = f"DAPO {gen}/{train}, cap {cap}" if name == "DAPO" else f"GRPO, {train} groups"
    return {"loop": name, "gen_batch": int(gen), "train_batch": int(train), "cap": int(cap), "level": STALL_LEVEL,
            "max_prompts": MAX_PROMPTS, "stalls": f"{what}: stalls from t = ",
            "none": f"{what}: P(stall) < {STALL_LEVEL:g} up to t = 1"}


def stall_columns(frame: Frame) -> dict:
    """``{t, p, first_t, loop, label}``: the chosen loop's P(stall) at each of the decay curve's progresses
    (:func:`grpo_lab.sims.loop_stall.loop_stall_curve` over the prompts the loop draws: the band's when the filter is
    on), and the words of its key (:func:`loop_data`'s)."""
    s, pop = frame.scenario, frame.population
    loop, gen, train, cap = frame.loop

    def build() -> dict:
        r = loop_stall_curve(pop, np.linspace(0.0, 1.0, DECAY_POINTS), s.K, s.rho, s.band, s.gain, loop, gen, train,
                             cap)
        words = loop_data(frame.loop)
        label = words["stalls"] + fixed(r["first_t"], 2) if r["first_t"] is not None else words["none"]
        return {"t": _nulls(r["t"]), "p": _nulls(r["p_stall"]), "first_t": r["first_t"], "loop": loop, "label": label}

    return _STALLS.get((array_key(pop.pass_rates), pop.seed, s.K, s.rho, s.band, s.gain, frame.loop), build)


def plot_curves(frame: Frame, pin: dict | None) -> dict | None:
    """What the browser's plots need from Python: with rho > 0 the decay columns, the P(useful) curve and, with a
    trainer loop chosen, its stall curve (``stall``: :func:`stall_columns`, drawn over the decay curve; at rho = 0 the
    browser computes it in the grid's event, from :func:`loop_data`), with a pinned view of rho > 0 its curve
    (``pin``: its control values); None when the kernel covers all."""
    s = frame.scenario
    out = {}
    if s.rho > 0:
        out = {"decay": decay_columns(frame), "useful": useful_curve(s.K, s.rho)}
        if frame.loop is not None:
            out["stall"] = stall_columns(frame)
    if pin and pin.get("rho", 0) > 0:
        out["pinned"] = useful_curve(int(pin["K"]), float(pin["rho"]))
    return out or None
