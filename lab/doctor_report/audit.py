r"""The audit of the logged metrics (:func:`grpo_lab.sims.doctor.audit.audit`) as report lines and HTML."""

from __future__ import annotations

import math

from grpo_lab.sims.doctor.audit import LIST_MAX

from .markup import table

__all__ = ["audit_text", "audit_html"]


def _pct(x) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{100 * x:.1f}%"


def audit_text(a: dict) -> list[str]:
    """The audit as report lines (empty when the record has neither trainer scalars nor a correctness score)."""
    lines = []
    for c in a["checks"]:
        bad = c["disagreements"]
        lines.append(f"logged {c['trainer']} {c['metric']}: {c['agree']} of {c['compared_steps']} steps reproduced "
                     f"from the groups ({c['definition']})" + (f"; {len(bad)} disagree:" if bad else ""))
        for x in bad[:LIST_MAX]:
            lines.append(f"  step {x['step']}: logged {x['logged']:.4g}, recomputed {x['recomputed']:.4g} -- {x['cause']}")
        if len(bad) > LIST_MAX:
            lines.append(f"  ... {len(bad) - LIST_MAX} more (--json lists them all)")
    sp = a["split"]
    if sp.get("available") and sp["differ"]:
        t, c = sp["training"], sp["correctness"]
        lines.append(f"zero-advantage share: {_pct(t['zero_advantage'])} in the {t['name']} (all-pass "
                     f"{_pct(t['all_pass'])}, all-fail {_pct(t['all_fail'])}) vs unanimous {_pct(c['zero_advantage'])} "
                     f"in the correctness score {c['name']} (all-pass {_pct(c['all_pass'])}, all-fail "
                     f"{_pct(c['all_fail'])}): both are true; the first is what GRPO trained on")
        ph = sp.get("phantom")
        if ph and ph["count"]:
            lines.append(f"phantom-gradient groups: {ph['count']:,} ({_pct(ph['share'])}; {ph['all_fail']:,} all-fail, "
                         f"{ph['all_pass']:,} all-pass in correctness) are unanimous in correctness but not in the "
                         f"training reward: their gradient comes from the shaping alone (verl-recipe #125, NeMo-RL "
                         f"#2431); filter groups on correctness (verl: filter_groups.metric=acc)")
            for g in ph["groups"][:5]:
                lines.append(f"  step {g['step']} prompt {g['prompt_id']}"
                             + (f" {g['text'][:40]!r}" if g.get("text") else "")
                             + f": correctness {g['correctness']}, training rewards "
                             + ", ".join(f"{x:g}" for x in g["training_rewards"]))
        elif sp.get("note"):
            lines.append(f"  ({sp['note']})")
    return lines


def audit_html(a: dict) -> str:
    """The audit as HTML tables: ``doctor-audit-checks`` (one row per trainer scalar), ``doctor-audit-disagreements``,
    ``doctor-audit-split`` (training reward vs correctness) and ``doctor-audit-phantom`` (the groups listed)."""
    parts = ["<h2>Audit of the logged metrics</h2>"]
    if not a["checks"] and not a["split"].get("available"):
        return parts[0] + "<p>The record carries no trainer scalar and no correctness score.</p>"
    if a["checks"]:
        parts.append(table([[c["trainer"], c["metric"], c["definition"], c["compared_steps"], c["agree"],
                              len(c["disagreements"])] for c in a["checks"]],
                           ["trainer", "metric", "definition", "compared steps", "reproduced", "disagree"],
                           "doctor-audit-checks"))
        bad = [(c, x) for c in a["checks"] for x in c["disagreements"][:LIST_MAX]]
        if bad:
            parts.append(table([[c["metric"], x["step"], f"{x['logged']:.6g}", f"{x['recomputed']:.6g}", x["cause"]]
                                for c, x in bad], ["metric", "step", "logged", "recomputed", "likely cause"],
                               "doctor-audit-disagreements"))
    sp = a["split"]
    if sp.get("available"):
        parts.append(table([[x["name"], _pct(x["zero_advantage"]), _pct(x["all_pass"]), _pct(x["all_fail"])]
                            for x in (sp["training"], sp["correctness"])],
                           ["score", "zero-advantage", "all-pass", "all-fail"], "doctor-audit-split"))
        ph = sp.get("phantom")
        if ph and ph["count"]:
            parts.append(f"<p>{ph['count']:,} phantom-gradient groups ({_pct(ph['share'])}): unanimous in "
                         "correctness, not in the training reward.</p>")
            parts.append(table([[g["step"], g["prompt_id"], g.get("text") or "", g["correctness"],
                                 ", ".join(f"{x:g}" for x in g["training_rewards"])] for g in ph["groups"]],
                               ["step", "prompt id", "text", "correctness", "training rewards"], "doctor-audit-phantom"))
    return "\n".join(parts)
