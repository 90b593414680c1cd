"""A caption that says, in words, what the current view shows ("32% of groups are all-pass: 256 rollouts
bought nothing"). It follows the plots' redraw (after a pause in the controls, and during Play)."""

from __future__ import annotations

import numpy as np
import panel as pn

from grpo_lab.sims.formatting import percent
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from .frame import Frame

__all__ = ["StateCaption", "caption_text"]


def caption_text(frame: Frame) -> str:
    """The caption for an evaluated view: realised groups by outcome over the kept prompts, in shares and rollouts.

    Counts are the realised groups on the grid (``View.outcome`` over ``View.kept``); a group costs K
    rollouts. With the filter on, what it removes is said in prompts and rollouts too.
    """
    s, v = frame.scenario, frame.view
    K, kept = int(s.K), v.kept
    n_kept, n = int(kept.sum()), int(kept.size)
    if n_kept == 0:
        return "The filter keeps no prompt: no group is trained on."
    count = {c: int(np.sum((v.outcome == c) & kept)) for c in (MIXED, ALL_PASS, ALL_FAIL)}
    wasted = (count[ALL_PASS] + count[ALL_FAIL]) * K
    parts = [f"At t = {s.progress:.2f} with K = {K}, {percent(count[MIXED] / n_kept)} of groups carry a gradient."]
    if count[ALL_PASS]:
        parts.append(f"{percent(count[ALL_PASS] / n_kept)} are all-pass: {count[ALL_PASS] * K:,} rollouts bought nothing.")
    if count[ALL_FAIL]:
        parts.append(f"{percent(count[ALL_FAIL] / n_kept)} are all-fail: {count[ALL_FAIL] * K:,} more.")
    total = n_kept * K
    parts.append(f"Of {total:,} rollouts, {percent(wasted / total)} went to groups with no gradient.")
    if s.band is not None:
        parts.append(f"The filter removes {n - n_kept:,} of {n:,} prompts ({(n - n_kept) * K:,} rollouts).")
    return " ".join(parts)


class StateCaption:
    """The caption pane; ``update(frame)`` rewrites it (a polite live region: screen readers hear it)."""

    def __init__(self):
        self.panel = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["lab-caption"],
                                  styles={"font-size": "15px", "line-height": "1.45"})

    def update(self, frame: Frame) -> None:
        self.panel.object = (f"<p class='state-caption' aria-live='polite' style='margin:8px 0'>"
                             f"{caption_text(frame)}</p>")
