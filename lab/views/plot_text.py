"""Text alternatives for the live lab's plots: what each Bokeh canvas shows, in words, for screen readers.

A canvas says nothing to a screen reader. Each plot gets, just before it, an element with ``role="img"``
and an ``aria-label`` summarising what the plot shows now (:func:`outcome_text`, :func:`decay_text`,
:func:`jensen_text`); it is rewritten with the plot, so it always describes the view on screen. The
element takes no space on screen. The K-cost panel is an HTML table and needs none.

Every number is computed here from the evaluated view (``Frame``), independently of the plot's own
columns: the core's formulas (:func:`grpo_lab.sims.outcomes.outcome_probabilities`,
:func:`grpo_lab.sims.sweep.useful_share_curve`, :func:`grpo_lab.sims.population.degeneracy_real`).
"""

from __future__ import annotations

import html

import numpy as np
import panel as pn

from grpo_lab.grid.spec import K_MAX
from grpo_lab.sims.formatting import fixed, percent, points
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.population import degeneracy_iid, degeneracy_real
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED
from grpo_lab.sims.sweep import useful_share_curve

from .frame import Frame

__all__ = ["PlotText", "described", "outcome_text", "decay_text", "jensen_text", "ALT_CLASS"]

ALT_CLASS = "plot-alt"  #: the CSS class of a plot's text alternative (tests find them by it)
_P = np.linspace(0.0, 1.0, 401)
#: takes no space, stays in the accessibility tree (the usual "visually hidden" rules)
_HIDDEN = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);border:0"


def outcome_text(frame: Frame) -> str:
    """The P(useful) curve for the current K and the histogram of current pass rates, by realised outcome."""
    s, v = frame.scenario, frame.view
    u = outcome_probabilities(_P, s.K, s.rho)["p_useful"]
    i = int(np.argmax(u))
    half = _P[u >= 0.5]
    span = (f"above 50% for p from {fixed(half[0], 2)} to {fixed(half[-1], 2)}" if half.size
            else "below 50% everywhere")
    kept = v.kept
    count = {c: int(np.sum((v.outcome == c) & kept)) for c in (MIXED, ALL_PASS, ALL_FAIL)}
    removed = int(kept.size - kept.sum())
    lo, hi = np.quantile(v.pass_rate, [0.1, 0.9]) if v.pass_rate.size else (np.nan, np.nan)
    parts = [f"Chart: probability that a group of K = {s.K} rollouts has a gradient, against pass rate p: "
             f"0 at p = 0 and p = 1, highest ({percent(u[i])}) at p = {fixed(_P[i], 2)}, {span}. "
             + (f"A dashed line marks the mean pass rate, {percent(v.summary['mean_pass_rate'])}, where the curve reads "
             f"{percent(1.0 - v.summary['d_iid'])}; averaged over the prompts' own pass rates it gives "
             f"{percent(1.0 - v.summary['d_real'])} (the Jensen gap: {points(v.summary['d_real'] - v.summary['d_iid'])})."
             if v.summary["n_kept"] else
             f"A dashed line marks the mean pass rate, {percent(v.summary['mean_pass_rate'])}."),
             f"Below it, a histogram of the {kept.size:,} prompts by current pass rate: {count[MIXED]:,} mixed groups, "
             f"{count[ALL_PASS]:,} all pass, {count[ALL_FAIL]:,} all fail"
             + (f", {removed:,} removed by the filter" if s.band is not None else "")
             + f"; 80% of prompts have p between {fixed(lo, 2)} and {fixed(hi, 2)}."]
    return " ".join(parts)


def decay_text(frame: Frame) -> str:
    """The useful share against training progress t (all prompts, and within the filter's band)."""
    s, pop = frame.scenario, frame.population
    ts = np.array([0.0, float(s.progress), 1.0])
    curve = useful_share_curve(pop, ts, s.K, s.rho, None, s.gain)
    every, dots = curve["expected"], curve["realised"]
    band = useful_share_curve(pop, ts, s.K, s.rho, frame.band, s.gain)["expected"]
    lo, hi = frame.band
    return (f"Chart: expected share of groups with a gradient as training progress t goes from 0 to 1, at K = {s.K}. "
            f"All prompts: {percent(every[0])} at t = 0, {percent(every[2])} at t = 1 (dots, the groups on the grid: "
            f"{percent(dots[0])} and {percent(dots[2])}). "
            f"With the filter's band [{lo:g}, {hi:g}]: {percent(band[0])} at t = 0, {percent(band[2])} at t = 1. "
            f"A vertical line marks the current t = {s.progress:.2f}, where the shares are {percent(every[1])} "
            f"and {percent(band[1])}.")


def jensen_text(frame: Frame) -> str:
    """D_real and D_iid against K, for the kept prompts at the current t."""
    s, v = frame.scenario, frame.view
    p = v.pass_rate[v.kept]
    if p.size == 0:
        return "Chart: degenerate share against group size K; empty, because the filter keeps no prompt."
    ends = [(degeneracy_real(p, K, s.rho), degeneracy_iid(p, K, s.rho)) for K in (1, K_MAX)]
    return (f"Chart: share of groups with no gradient against group size K from 1 to {K_MAX}, for the kept prompts. "
            f"D_real (per-prompt pass rates) goes from {percent(ends[0][0])} to {percent(ends[1][0])}; D_iid "
            f"(the mean pass rate alone) from {percent(ends[0][1])} to {percent(ends[1][1])}. A vertical line marks "
            f"K = {s.K}: D_real = {percent(v.summary['d_real'])}, D_iid = {percent(v.summary['d_iid'])}.")


class PlotText:
    """A plot's text alternative: an empty ``role="img"`` element whose ``aria-label`` is ``describe(frame)``."""

    def __init__(self, describe):
        self._describe, self._text = describe, None
        self.panel = pn.pane.HTML("", sizing_mode="stretch_width", margin=0, css_classes=[ALT_CLASS])

    def update(self, frame: Frame) -> None:
        text = self._describe(frame)
        if text != self._text:  # one small message per change, none while the text stays
            self._text = text
            self.panel.object = (f'<div role="img" class="{ALT_CLASS}" aria-label="{html.escape(text, quote=True)}" '
                                 f'style="{_HIDDEN}"></div>')


class Described:
    """A plot with its text alternative before it: ``panel`` holds both, ``update`` redraws both; any other
    attribute is the plot's."""

    def __init__(self, plot, describe):
        self.plot, self.alt = plot, PlotText(describe)
        inner = plot.panel.objects if type(plot.panel) is pn.Column else [plot.panel]  # one Column, not two
        self.panel = pn.Column(self.alt.panel, *inner, sizing_mode="stretch_width")

    def update(self, frame: Frame) -> None:
        self.plot.update(frame)
        self.alt.update(frame)

    def __getattr__(self, name):
        if name in ("plot", "alt"):
            raise AttributeError(name)
        return getattr(self.plot, name)


#: the describer of each Bokeh plot class, by class name (the K-cost table is HTML: none; the decay curve and the
#: outcome plot are the grid's SVG, which carries outcome_text and decay_text as its aria-label: LiveGrid.plot_text)
_DESCRIBERS = {"JensenPlot": jensen_text}


def described(*plots) -> list:
    """The plots, each that draws on a canvas wrapped with its text alternative (:class:`Described`)."""
    return [Described(p, _DESCRIBERS[type(p).__name__]) if type(p).__name__ in _DESCRIBERS else p for p in plots]
