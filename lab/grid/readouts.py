"""The grid's readouts: the table templates (rows from :data:`grpo_lab.grid.spec.READOUTS`) and Python's filling.

``TEMPLATES`` ("full": every row; "main": the three stable rows, for embeds) are tables whose value
spans carry the stable CSS classes ``readout-useful`` (share of groups with a gradient, realised),
``readout-mean-pass``, ``readout-kept``, and ``readout-<stem>`` / ``readout-<stem>-expected`` for the
other rows. ``readout_html(summary, template)`` is Python's rendering, identical to the browser's
(``grpoKernel.fill``): every number is printed by the twins of ``sims.formatting``.
"""

from __future__ import annotations

import re

from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.scenario import ALL_FAIL, ALL_PASS, MIXED

from .spec import READOUTS

__all__ = ["TEMPLATES", "readout_html", "STATE_WORDS"]

STATE_WORDS = {MIXED: "mixed (has a gradient)", ALL_PASS: "all pass (no gradient)", ALL_FAIL: "all fail (no gradient)"}
_MAIN = ("mean-pass", "useful", "kept")

_PLACEHOLDER = re.compile(r"\{\{(\w+):(\w+)\}\}")
_CSS = """
<style>
.grpo-readouts table{border-collapse:collapse;font:13px/1.35 system-ui,sans-serif;width:100%}
.grpo-readouts th,.grpo-readouts td{padding:2px 6px;text-align:right;border-bottom:1px solid #eee}
.grpo-readouts th:first-child,.grpo-readouts td:first-child{text-align:left}
.grpo-readouts .gx-sr{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.grpo-readouts .main td{font-size:15px}
.grpo-readouts span[class^=readout-]{font-variant-numeric:tabular-nums;font-weight:600}
.grpo-readouts .set-kept,.gx-view:has(#gx-filter:checked) .grpo-readouts .set-all{display:none}
.gx-view:has(#gx-filter:checked) .grpo-readouts .set-kept{display:inline}
</style>"""
#: the prompts a share counts, said beside the mean pass rate (CSS shows one: kept prompts while the filter is on)
_SET = ', <span class="set-all">all prompts</span><span class="set-kept">kept prompts</span>'


def _readout_template(which: str) -> str:
    rows = [r for r in READOUTS if which == "full" or r[4] in _MAIN]
    body = []
    for label, exp, real, fmt, stem in rows:
        # every value sits alone in a span marked data-v, so the browser can rewrite just its text
        e = f'<span class="readout-{stem}-expected" data-v>{{{{{exp}:{fmt}}}}}</span>' if exp else ""
        r = f'<span class="readout-{stem}" data-v>{{{{{real}:{fmt}}}}}</span>'
        extra = (' <small>(<span data-v>{{n_kept:int}}</span> of <span data-v>{{n_prompts:int}}</span>)</small>'
                 if stem == "kept" else "")
        cls = ' class="main"' if stem in _MAIN else ""
        label += _SET if stem == "mean-pass" else ""
        body.append(f"<tr{cls}><td>{label}</td><td>{e}</td><td>{r}{extra}</td></tr>")
    head = '<tr><th><span class="gx-sr">readout</span></th><th>expected</th><th>realised</th></tr>'
    return f'{_CSS}<div class="grpo-readouts"><table>{head}{"".join(body)}</table></div>'


#: readout templates: "full" (every readout) and "main" (the three stable hooks, for embeds)
TEMPLATES = {"full": _readout_template("full"), "main": _readout_template("main")}


def _format(value, fmt: str) -> str:
    if fmt == "pct":
        return percent(value)
    if fmt == "int":
        return str(int(value))
    return fixed(value, int(fmt[3:]))


def readout_html(summary: dict, template: str) -> str:
    """Fill a readout template from a summary (the same text the browser writes)."""
    return _PLACEHOLDER.sub(lambda m: _format(summary[m.group(1)], m.group(2)), template)
