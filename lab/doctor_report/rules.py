"""The rules that fire (:mod:`grpo_lab.sims.doctor.rules`) as report lines and an escaped HTML section."""

from __future__ import annotations

import html

__all__ = ["rules_text", "rules_html"]


def rules_text(d: dict) -> list[str]:
    """One line per rule that fires (none: nothing; a diagnosis without ``rules``: nothing)."""
    from grpo_lab.sims.doctor.rules import rule_line

    rules = d.get("rules") or []
    return ["rules from the field's threads that fire:", *(f"  {rule_line(r)}" for r in rules)] if rules else []


def rules_html(d: dict) -> str:
    """The section "Rules that fire": each rule's title, evidence and advice, escaped ("" when none fires)."""
    rules = d.get("rules") or []
    if not rules:
        return ""
    items = "".join(f"<li class=\"doctor-rule\" data-rule=\"{html.escape(r['rule'], quote=True)}\"><b>"
                    f"{html.escape(r['title'])}</b>: {html.escape(r['evidence'])} <i>Advice:</i> "
                    f"{html.escape(r['advice'])}</li>" for r in rules)
    return f"<h2>Rules that fire</h2><ul class=\"doctor-rules\">{items}</ul>"
