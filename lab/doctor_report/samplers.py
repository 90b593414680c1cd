r"""The doctor's "Samplers" section (:func:`grpo_lab.sims.doctor.samplers.samplers_section`) as text rows and HTML.

The command line's report, the doctor's page and the lab's Samplers tab all format the table here.
"""

from __future__ import annotations

import html

from grpo_lab.sims.formatting import fixed, percent, signed

from .markup import table
from .samplers_chart import expiry_words

__all__ = ["HEAD", "table_rows", "samplers_text", "samplers_html", "settings_line", "settings_text"]


def _cell(x, spec) -> str:
    return "-" if x is None or x != x else format(x, spec)


def _between(iv, spec, above: str) -> str:
    """" [lo, hi]" of an interval; hi None reads ``above`` (beyond the expiry search's horizon)."""
    if iv is None:
        return ""
    return f" [{format(iv[0], spec)}, {above if iv[1] is None else format(iv[1], spec)}]"


def _figure(row: dict, key: str, text: str, spec: str, above: str = "-") -> str:
    """``text`` with the row's Monte Carlo SE (simulated figures: " +- se") and interval (" [lo, hi]") if any."""
    se = row.get("mc_se", {}).get(key)
    out = text + (f" \u00b1 {format(se, spec)}" if se is not None and se == se else "")
    return out + _between(row.get("interval", {}).get(key), spec, above) if text != "-" else out


def table_rows(section: dict) -> list[list[str]]:
    """[sampler, useful per 1,000 rollouts, rollouts per useful group, never trained, expires, shift] as text, one
    row per sampler: the expiry in words (:func:`.samplers_chart.expiry_words`: in steps where the section has a run
    length, else a progress t within the run, or "beyond the run"); the shift against plain GRPO in steps, else in
    run lengths. A simulated figure carries its Monte Carlo SE (" \u00b1 se", ``mc_se``) and, in the doctor's
    table, every figure its interval (" [lo, hi]", ``interval``; shares in percent; the expiry's and the shift's in
    the column's unit, an upper end past the search's horizon "beyond")."""
    steps = section["settings"].get("steps")

    def share(row):
        se = row.get("mc_se", {}).get("never_trained")
        iv = row.get("interval", {}).get("never_trained")
        text = percent(row["never_trained"])
        if se is not None and se == se and text != "-":
            text += f" \u00b1 {100 * se:.1f}%"
        return text + (f" [{percent(iv[0])}, {percent(iv[1])}]" if iv and text != "-" else "")

    def unit(x, sign: bool = False) -> str:
        """A t (or a shift of t) in the table's unit: steps where a run length is given, else t."""
        if steps:
            return f"{round(x * steps):{'+' if sign else ''},d}"
        return signed(x, 2) if sign else fixed(x, 2)

    def between(iv, sign: bool = False) -> str:  # nothing for an interval of one point (all already below)
        if iv is None or (iv[1] is not None and unit(iv[0], sign) == unit(iv[1], sign)):
            return ""
        return f" [{unit(iv[0], sign)}, {'beyond' if iv[1] is None else unit(iv[1], sign)}]"

    def expires(row):
        return expiry_words(row["expiry_t"], steps) + between(row.get("interval", {}).get("expiry_t"))

    def shift(row):
        x = row["expiry_shift"]
        if x is None:
            return "-"
        return f"{unit(x, True)} {'steps' if steps else 'runs'}" + between(row.get("interval", {}).get("expiry_shift"),
                                                                          True)

    return [[r["label"], _figure(r, "useful_per_1000", _cell(r["useful_per_1000"], ".1f"), ".1f"),
             _figure(r, "rollouts_per_useful", _cell(r["rollouts_per_useful"], ".1f"), ".1f"),
             share(r), expires(r), shift(r)]
            for r in section["rows"]]


HEAD = ["sampler", "useful / 1,000 rollouts", "rollouts / useful group", "never trained", "expires",
        "later than plain GRPO"]


def settings_line(section: dict) -> str:
    s = section["settings"]
    line = (f"{s['prompts']:,} prompts, K = {s['K']}, budget {s['epochs']:g} epochs ({s['budget_rollouts']:,.0f} "
            f"rollouts); DAPO batch {s['batch']} (gen {s['gen_batch']}, max_num_gen_batches "
            f"{s['max_num_gen_batches']}{', no cap' if s['max_num_gen_batches'] == 0 else ''}"
            f"{'; sizes: ' + s['sizes_from'] if s.get('sizes_from') else ''}); band [{s['band'][0]:g}, "
            f"{s['band'][1]:g}]; retire after {s['n_retire']} all-pass; GRESO p_e {s['p_easy']:g}/{s['p_hard']:g}; "
            f"PODS n = {s['pods_factor']}K; expiry: rate below {s['threshold']:g}")
    iv = s.get("intervals")
    if iv:
        line += (f"; [{iv['level']:.0%} intervals]: {iv['method']} ({iv['prompts_each']:,} prompts each); "
                 f"\u00b1: Monte Carlo SE of a simulated figure")
    return line


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
