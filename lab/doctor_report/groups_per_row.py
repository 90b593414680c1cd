r"""Groups per logged row in words: the figure used, the trainer's arithmetic and the lattice of the logged shares
side by side, and their disagreement named (the record's ``meta.source.groups_per_row``, from
:func:`grpo_lab.sims.ingest.trackers.groups_per_row`). Printed by ``grpo-lab ingest`` and by the doctor's text
and HTML reports of a scalars record (the same lines; escaped in HTML)."""

from __future__ import annotations

import html

__all__ = ["groups_per_row_lines", "groups_per_row_html"]


_FROM = {"config": "the trainer's arithmetic", "lattice": "the lattice of the logged shares",
         "logged": "the trainer, logged at each row; median shown"}


_PREFIX = "groups per logged row = "  #: how the TRL arithmetic's note begins (said once, by the first line)


def _g(x) -> str:
    return "-" if x is None else f"{x:g}"


def groups_per_row_lines(gpr: dict | None) -> list[str]:
    """Three lines: the figure used and where from; the trainer's arithmetic (with how it was worked out)
    and the share lattice (the smallest g with every logged share k/g, and whether it can say much), and the
    verdict: they agree, they DISAGREE (with the record's note saying which was used and what to check), or
    cannot be compared. Empty for a record that holds no such figure (a group-level record counts its groups)."""
    if not gpr:
        return []
    lat = gpr.get("lattice") or {}
    frm = gpr.get("from")
    used = (f"{_g(gpr['value'])} (from {_FROM.get(frm, 'nothing')})" if gpr.get("value") is not None
            else "unknown")
    how = gpr.get("config_how")
    how = how[len(_PREFIX):] if how and how.startswith(_PREFIX) else how
    arith = (f"{_g(gpr['config'])}" + (f" ({how})" if how else "") if gpr.get("config") is not None
             else f"- (logged per row: {how})" if frm == "logged" and how else "- (no config gave it)")
    why = ("the log's rounding, not a count of groups" if lat.get("rounded") else
           f"{lat.get('distinct', 0)} distinct share(s) in (0, 1)"
           + ("" if lat.get("informative") else ", too few to say much"))
    latw = f"{_g(lat.get('g'))} ({why})" if lat.get("g") is not None else (
        "- (no lattice k/g holds every logged share)" if lat.get("distinct") else "- (no share to read)")
    agree = gpr.get("agree")
    if agree is None:
        verdict = ("not compared: " + ("the shares are rounded" if lat.get("rounded") else
                                       "no logged share lies inside (0, 1)" if not lat.get("distinct") else
                                       "a figure is missing"))
    elif agree:
        verdict = "they agree"
    elif frm == "lattice":
        verdict = (f"they DISAGREE: a logged share is not a multiple of 1/{_g(gpr['config'])}, so the lattice's "
                   f"{_g(gpr['value'])} is used (check the gradient accumulation, processes and logging_steps given)")
    else:
        verdict = f"they DISAGREE: {gpr.get('note') or 'the logged shares are not multiples of one over the figure'}"
    return [f"groups per logged row: {used}", f"  trainer's arithmetic: {arith}",
            f"  share lattice: {latw}; {verdict}"]


def groups_per_row_html(gpr: dict | None) -> str:
    """The same lines as a paragraph (``doctor-groups-per-row``), every text escaped; empty without a figure."""
    lines = groups_per_row_lines(gpr)
    if not lines:
        return ""
    return ('<p class="doctor-groups-per-row">' + "<br>".join(html.escape(x.strip()) for x in lines) + "</p>")
