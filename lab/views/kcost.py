"""The K-cost table: share of groups with a gradient for K = 4 to 64 against p, with the cost per prompt."""

from __future__ import annotations

import numpy as np
import panel as pn

from grpo_lab.sims.formatting import percent
from grpo_lab.sims.outcomes import outcome_probabilities
from grpo_lab.sims.population import degeneracy_real

from .frame import Frame

__all__ = ["KCostTable", "K_ROWS", "P_COLUMNS"]

K_ROWS = (4, 8, 16, 32, 64)
P_COLUMNS = (0.90, 0.95, 0.99)


class KCostTable:
    """Rows K; columns P(useful) at fixed p, the current population's expected share, and K rollouts per prompt."""

    def __init__(self):
        self.panel = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["kcost"])

    def update(self, frame: Frame) -> None:
        s, v = frame.scenario, frame.view
        rows = sorted(set(K_ROWS) | {s.K})
        live = v.pass_rate[v.kept]
        head = "".join(f"<th>p = {p:.2f}</th>" for p in P_COLUMNS)
        body = []
        for K in rows:
            fixed = outcome_probabilities(np.array(P_COLUMNS), K, s.rho)["p_useful"]
            now = 1.0 - degeneracy_real(live, K, s.rho) if live.size else float("nan")
            cells = "".join(f"<td>{percent(x)}</td>" for x in fixed)
            style = ' style="background:#e8f4ef;font-weight:600"' if K == s.K else ""
            body.append(f"<tr{style}><td>{K}</td>{cells}<td>{percent(now)}</td><td>{K}\u00d7</td></tr>")
        self.panel.object = (
            "<table style='border-collapse:collapse;font-size:13px;width:100%;text-align:right'>"
            f"<tr><th style='text-align:left'>K</th>{head}<th>this population now</th><th>cost per prompt</th></tr>"
            + "".join(body) + "</table><p style='font-size:12px'>Share of groups with a gradient, "
            "1 \u2212 p<sup>K</sup> \u2212 (1 \u2212 p)<sup>K</sup>"
            + (f" (rho = {s.rho:g})" if s.rho else "") + "; the current K is highlighted.</p>")
