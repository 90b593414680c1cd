"""The doctor's audit of the logged metrics (:func:`grpo_lab.sims.doctor.audit.audit`) as report lines."""

from __future__ import annotations

import math

from grpo_lab.sims.doctor.audit import LIST_MAX

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


def audit_html(a: dict | None, table) -> str:
    """The audit as HTML tables, with the report's ``table(rows, head)``: one row per logged metric, the disagreements,
    the correctness split beside the training reward's, the phantom-gradient groups (every text escaped by ``table``)."""
    parts = ["<h2>Audit of the logged metrics</h2>"]
    if not a or (not a["checks"] and not (a["split"].get("available") and a["split"]["differ"])):
        return parts[0] + "<p>The record carries no trainer scalar and no correctness score to audit.</p>"
    if a["checks"]:
        parts.append(table([[c["trainer"], c["metric"], f"{c['agree']} of {c['compared_steps']}", len(c["disagreements"]),
                             c["definition"]] for c in a["checks"]],
                           ["trainer", "logged metric", "steps reproduced", "disagree", "recomputed as"]))
        bad = [(c, x) for c in a["checks"] for x in c["disagreements"]][:LIST_MAX]
        if bad:
            parts.append(table([[c["metric"], x["step"], f"{x['logged']:.4g}", f"{x['recomputed']:.4g}", x["cause"]]
                                for c, x in bad], ["metric", "step", "logged", "recomputed", "likely cause"]))
    sp = a["split"]
    if sp.get("available") and sp["differ"]:
        t, c = sp["training"], sp["correctness"]
        parts.append(table([[f"training reward ({t['name']})", _pct(t["zero_advantage"]), _pct(t["all_pass"]),
                             _pct(t["all_fail"])],
                            [f"correctness ({c['name']})", _pct(c["zero_advantage"]), _pct(c["all_pass"]),
                             _pct(c["all_fail"])]],
                           ["classified by", "zero advantage (unanimous)", "all-pass", "all-fail"]))
        ph = sp.get("phantom")
        if ph and ph["count"]:
            parts.append(f"<p>Phantom-gradient groups: {ph['count']:,} ({_pct(ph['share'])}): unanimous in correctness, "
                         "not in the training reward; their gradient comes from the shaping alone.</p>")
            parts.append(table([[g["step"], g["prompt_id"], g.get("text") or "", g["correctness"],
                                 ", ".join(f"{x:g}" for x in g["training_rewards"])] for g in ph["groups"][:LIST_MAX]],
                               ["step", "prompt id", "text", "correctness", "training rewards"]))
    return "\n".join(parts)
