r"""The cost forecast (:func:`grpo_lab.sims.doctor.cost.cost_forecast`): prompts and rollouts per trained step as
the run goes on, as report text and HTML. A forecast that is not available prints its one "not available" line;
a record without a trainer config prints nothing (the stall section already asks for one)."""

from __future__ import annotations

import html

import numpy as np

from grpo_lab.sims.formatting import percent

from .markup import table

__all__ = ["cost_lines", "cost_html", "cost_rows", "HEAD", "SHOWN"]

SHOWN = 4  #: future steps the report shows besides the last logged one (evenly along the forecast's grid)
HEAD = ["step", "mean P(useful)", "prompts / trained step", "rollouts / trained step", "x now"]
_SCHEME = {"rounds": "rounds of the generation batch until the batch is full",
           "replace": "each filtered prompt replaced by one new prompt",
           "verl-v1": "verl V1: 2 refills per filtered group, in-flight surplus drained and discarded"}


def _num(x, spec) -> str:
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def cost_rows(cf: dict) -> list[list[str]]:
    """[step, mean P(useful), prompts, rollouts, ratio to now]: the last logged step, then :data:`SHOWN` future ones."""
    idx = np.unique(np.round(np.linspace(0, len(cf["steps"]) - 1, SHOWN)).astype(int)) if cf["steps"] else []
    now = cf["now"]
    rows = [[f"{now['step']} (now)", percent(now["effective_rate"]), _num(now["prompts"], ",.0f"),
             _num(now["rollouts"], ",.0f"), "1.00"]]
    for i in idx:
        rows.append([str(cf["steps"][i]), percent(cf["effective_rate"][i]), _num(cf["prompts"][i], ",.0f"),
                     _num(cf["rollouts"][i], ",.0f"), _num(cf["ratio"][i], ".2f")])
    return rows


def _title(cf: dict) -> str:
    extra = f", at most {cf['inflight']} x {cf['train_batch']} prompts in flight" if cf["scheme"] == "verl-v1" else ""
    return (f"cost per trained step ({_SCHEME.get(cf['scheme'], cf['scheme'])}{extra}; {cf['train_batch']} groups "
            f"of K = {cf['K']} trained)")


def cost_lines(d: dict) -> list[str]:
    """Text lines of ``d['cost_forecast']``."""
    cf = d.get("cost_forecast")
    if not cf or (not cf["available"] and "trainer's config" in cf["reason"]):
        return []
    if not cf["available"]:
        return [f"cost forecast: {cf['reason']}"]
    rows = cost_rows(cf)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return [_title(cf), fmt(HEAD), *map(fmt, rows)]


def cost_html(d: dict) -> str:
    """The section as HTML (class ``doctor-cost``); empty without a trainer config."""
    cf = d.get("cost_forecast")
    if not cf or (not cf["available"] and "trainer's config" in cf["reason"]):
        return ""
    if not cf["available"]:
        return f"<h2>Cost per trained step</h2><p>{html.escape(cf['reason'])}</p>"
    return (f"<h2>Cost per trained step</h2><p>{html.escape(_title(cf))}.</p>"
            + table(cost_rows(cf), HEAD, "doctor-cost"))
