r"""The audit of the logged metrics (:func:`grpo_lab.sims.doctor.audit.audit`) as report lines and HTML."""

from __future__ import annotations

import math

from grpo_lab.sims.doctor.audit import LIST_MAX

__all__ = ["audit_text"]


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
