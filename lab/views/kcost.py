"""The K-cost table: for the prompts counted now, what each group size K buys per rollout spent.

Rows K = 4 to 64 (and the current K); columns the share of groups with a gradient, useful groups
per 1,000 rollouts, rollouts per useful group and that cost against K = ``BASELINE_K``
(``sims.kcost.k_cost``). A headline says it for the current K in words; a line says which prompts
are counted (all, or those the filter keeps, in prompts and in rollouts).
"""

from __future__ import annotations

import panel as pn

from grpo_lab.grid.spec import K_MAX
from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.kcost import BASELINE_K, k_cost

from .formulas import share_formula_html
from .frame import Frame

__all__ = ["KCostTable", "K_ROWS", "counted_text", "rollouts_and_groups_text"]

K_ROWS = (4, 8, 16, 32, K_MAX)  #: the table's rows: doublings from 4 up to the largest group size
_STYLE = ("<style>.kcost-table{border-collapse:collapse;width:100%;text-align:right;font-size:14px}"
          ".kcost-table th,.kcost-table td{padding:3px 8px;border-bottom:1px solid #ddd}"
          ".kcost-table th{font-weight:600;vertical-align:bottom}"
          ".kcost-table th:first-child,.kcost-table td:first-child{text-align:left}"
          ".kcost-table tr.now{background:#e3f2ec;font-weight:600}"
          ".kcost p{margin:0 0 6px;font-size:14px;line-height:1.45}</style>")


def counted_text(n_kept: int, n_prompts: int, K: int, filter_on: bool) -> str:
    """Which prompts the numbers count, in prompts and in rollouts per step at group size K."""
    if not filter_on:
        return (f"Counting all {n_prompts:,} prompts ({n_prompts * K:,} rollouts per step at K = {K}); "
                "the filter is off.")
    return (f"The filter keeps {n_kept:,} of {n_prompts:,} prompts ({percent(n_kept / n_prompts)}): "
            f"{n_kept * K:,} of {n_prompts * K:,} rollouts per step at K = {K} train; the numbers here "
            "count the kept prompts.")


def rollouts_and_groups_text(useful_rollouts: float, useful_groups: float, K: int) -> str:
    """One sentence that ties the grid's "useful rollouts per 1,000" (1000 U) to the table's "useful groups per 1,000
    rollouts" (1000 U / K) at group size K: more rollouts sit in useful groups as K grows, but K make one group."""
    return (f"<span class='kcost-tie'>Of every 1,000 rollouts at K = {K}, <b class='kcost-useful-rollouts'>"
            f"{fixed(useful_rollouts, 0)}</b> sit in groups with a gradient (the readout \u201cuseful rollouts per "
            f"1,000\u201d), but each group takes {K} of them, so they make {fixed(useful_rollouts, 0)} / {K} = "
            f"<b class='kcost-useful-groups'>{fixed(useful_groups, 1)}</b> useful groups: a bigger K puts more of the "
            "rollouts in useful groups, and buys fewer useful groups per rollout.</span>")


class KCostTable:
    """Rows K; columns useful share, useful groups per 1,000 rollouts, rollouts per useful group, cost vs K = 4."""

    def __init__(self):
        self.panel = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["kcost"])

    def update(self, frame: Frame) -> None:
        s, v = frame.scenario, frame.view
        rows = sorted(set(K_ROWS) | {s.K})
        c = k_cost(v.pass_rate[v.kept], rows, rho=s.rho, baseline_K=BASELINE_K)
        sm = v.summary
        counted = counted_text(int(sm["n_kept"]), int(sm["n_prompts"]), s.K, s.band is not None)
        i = rows.index(s.K)
        if sm["n_kept"]:
            headline = (f"At K = {s.K}, {percent(c['useful_share'][i])} of groups carry a gradient: "
                        f"<b>{fixed(c['useful_per_1000_rollouts'][i], 1)} useful groups per 1,000 rollouts</b>, "
                        f"or {fixed(c['rollouts_per_useful'][i], 1)} rollouts per useful group, "
                        f"<b>{fixed(c['cost_vs_baseline'][i], 2)}\u00d7 the cost at K = {BASELINE_K}</b>. "
                        + rollouts_and_groups_text(c['useful_rollouts_per_1000'][i], c['useful_per_1000_rollouts'][i],
                                                   s.K))
        else:
            headline = "No prompt is counted: the filter keeps none."
        body = []
        for j, K in enumerate(rows):
            now = " class='now'" if K == s.K else ""
            body.append(f"<tr{now}><td>{K}{' (now)' if K == s.K else ''}</td>"
                        f"<td>{percent(c['useful_share'][j])}</td>"
                        f"<td>{fixed(c['useful_per_1000_rollouts'][j], 1)}</td>"
                        f"<td>{fixed(c['rollouts_per_useful'][j], 1)}</td>"
                        f"<td>{fixed(c['cost_vs_baseline'][j], 2)}\u00d7</td></tr>")
        self.panel.object = (
            f"{_STYLE}<p class='kcost-headline'>{headline}</p><p class='kcost-counted'>{counted}</p>"
            "<div style='overflow-x:auto'><table class='kcost-table'><caption class='sr-only' style='position:absolute;left:-9999px'>"
            "Cost of group size K for the prompts counted now</caption>"
            "<tr><th scope='col'>K</th><th scope='col'>groups with a gradient</th>"
            "<th scope='col'>useful groups per 1,000 rollouts</th><th scope='col'>rollouts per useful group</th>"
            f"<th scope='col'>cost per useful group vs K = {BASELINE_K}</th></tr>" + "".join(body) + "</table></div>"
            f"<p class='kcost-formula' style='font-size:13px;margin-top:6px'>Expected values: {share_formula_html(s.rho)}"
            "; a step spends K rollouts per prompt, so a bigger K buys a larger share at a higher price.</p>")
