r"""The doctor's "Samplers" section (:func:`grpo_lab.sims.doctor.samplers.samplers_section`) as text rows and HTML.

The command line's report, the doctor's page and the lab's Samplers tab all format the table here.
"""

from __future__ import annotations

import html

from grpo_lab.sims.formatting import percent, signed

from .markup import table
from .samplers_chart import expiry_words

__all__ = ["HEAD", "table_rows", "samplers_text", "samplers_html", "settings_line", "settings_text"]


def _cell(x, spec) -> str:
    return "-" if x is None or x != x else format(x, spec)


def table_rows(section: dict) -> list[list[str]]:
    """[sampler, useful per 1,000 rollouts, rollouts per useful group, never trained, expires, shift] as text, one
    row per sampler: the expiry in words (:func:`.samplers_chart.expiry_words`: in steps where the section has a run
    length, else a progress t within the run, or "beyond the run"); the shift against plain GRPO in steps, else in
    run lengths."""
    steps = section["settings"].get("steps")

    def shift(x):
        return "-" if x is None else f"{round(x * steps):+,d} steps" if steps else f"{signed(x, 2)} runs"

    return [[r["label"], _cell(r["useful_per_1000"], ".1f"), _cell(r["rollouts_per_useful"], ".1f"),
             percent(r["never_trained"]), expiry_words(r["expiry_t"], steps), shift(r["expiry_shift"])]
            for r in section["rows"]]


HEAD = ["sampler", "useful / 1,000 rollouts", "rollouts / useful group", "never trained", "expires",
        "later than plain GRPO"]


def settings_line(section: dict) -> str:
    s = section["settings"]
    return (f"{s['prompts']:,} prompts, K = {s['K']}, budget {s['epochs']:g} epochs ({s['budget_rollouts']:,.0f} "
            f"rollouts); DAPO batch {s['batch']} (gen {s['gen_batch']}, max_num_gen_batches "
            f"{s['max_num_gen_batches']}); band [{s['band'][0]:g}, {s['band'][1]:g}]; retire after "
            f"{s['n_retire']} all-pass; GRESO p_e {s['p_easy']:g}/{s['p_hard']:g}; PODS n = "
            f"{s['pods_factor']}K; expiry: rate below {s['threshold']:g}")


def settings_text(section: dict) -> str:
    """The section's first line: what was compared, at which budget and settings."""
    return "samplers at an equal rollout budget: " + settings_line(section)


def samplers_text(section: dict) -> list[str]:
    """The section as text lines (the command line's report)."""
    rows = table_rows(section)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return [settings_text(section), fmt(HEAD), *map(fmt, rows)]


def samplers_html(section: dict) -> str:
    """The section as HTML: its settings and its table (class ``doctor-samplers``)."""
    return ("<h2>Samplers side by side</h2><p>" + html.escape(settings_line(section)) + ".</p>"
            + table(table_rows(section), HEAD, "doctor-samplers"))
