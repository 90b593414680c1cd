r"""The doctor's "Samplers" section (:func:`grpo_lab.sims.doctor.samplers.samplers_section`) as text rows and HTML.

The command line's report, the doctor's page and the lab's Samplers tab all format the table here.
"""

from __future__ import annotations

import html
import math

from grpo_lab.sims.formatting import fixed, percent, signed

from .markup import table
from .samplers_chart import expiry_words

__all__ = ["HEAD", "table_rows", "samplers_text", "samplers_html", "settings_line", "settings_text", "row_notes"]


def _cell(x, spec) -> str:
    """"-" for None, NaN and inf (a rate of an event not expected in the budget: the row's ``no_useful``)."""
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


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
        if section["settings"].get("expiry_unreachable"):  # a threshold K cannot reach: said in the settings line
            return "-"
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
    cap = s["max_num_gen_batches"]
    line = (f"{s['prompts']:,} prompts, groups of K = {s['K']}, a budget of {s['epochs']:g} epochs of plain GRPO "
            f"({s['budget_rollouts']:,.0f} rollouts). DAPO: rounds of {s['gen_batch']} prompts until {s['batch']} "
            f"groups with a gradient fill the step, "
            f"{'no cap on the rounds' if cap == 0 else f'at most {cap} rounds (max_num_gen_batches)'}"
            f"{' (sizes: ' + s['sizes_from'] + ')' if s.get('sizes_from') else ''}. Pass-rate band: prompts whose "
            f"true pass rate lies in [{s['band'][0]:g}, {s['band'][1]:g}]. Retirement: a prompt is dropped after "
            f"{s['n_retire']} all-pass groups in a row. GRESO: a prompt whose last z groups were unanimous is "
            f"skipped with probability 1 - {s['p_easy']:g}^z after all-pass, 1 - {s['p_hard']:g}^z after all-fail. "
            f"PODS: {s['pods_factor']}K rollouts generated a prompt, the K of most varied reward trained on. "
            + (f"Expiry: none: {s['expiry_unreachable']}" if s.get("expiry_unreachable") else
               f"Expiry: useful groups per K rollouts below {s['threshold']:g}"))
    iv = s.get("intervals")
    if iv:
        line += (f"; [{iv['level']:.0%} intervals]: {iv['method']} ({iv['prompts_each']:,} prompts each); "
                 f"\u00b1: Monte Carlo SE of a simulated figure")
    return line


def settings_text(section: dict) -> str:
    """The section's first line: what was compared, at which budget and settings."""
    return "samplers at an equal rollout budget: " + settings_line(section)


def row_notes(section: dict) -> list[str]:
    """"<sampler>: no useful group expected: ..." for each row whose rollouts per useful group read "-" for that
    reason (``no_useful``)."""
    return [f"{r['label']}: {r['no_useful']}" for r in section["rows"] if r.get("no_useful")]


def samplers_text(section: dict) -> list[str]:
    """The section as text lines (the command line's report)."""
    rows = table_rows(section)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return [settings_text(section), fmt(HEAD), *map(fmt, rows), *(f"  {n}" for n in row_notes(section))]


def samplers_html(section: dict) -> str:
    """The section as HTML: its settings, its table (class ``doctor-samplers``) and the rows' notes
    (``doctor-samplers-note``)."""
    return ("<h2>Samplers side by side</h2><p>" + html.escape(settings_line(section)) + ".</p>"
            + table(table_rows(section), HEAD, "doctor-samplers")
            + "".join(f'<p class="doctor-samplers-note">{html.escape(n)}.</p>' for n in row_notes(section)))
