r"""The doctor's "Samplers" section (:func:`grpo_lab.sims.doctor.samplers.samplers_section`) as text rows and HTML.

The command line's report, the doctor's page and the lab's Samplers tab all format the table here.
"""

from __future__ import annotations

import html

from grpo_lab.sims.formatting import percent
from grpo_lab.sims.samplers.compare import HORIZON

from .markup import table

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
    """[sampler, useful per 1,000 rollouts, rollouts per useful group, never trained, expiry t, shift, shift in
    steps] as text, one row per sampler (an expiry past the search's horizon reads "> HORIZON"). A simulated
    figure carries its Monte Carlo SE (" \u00b1 se", ``mc_se``) and, in the doctor's table, every figure its interval
    (" [lo, hi]", ``interval``; shares in percent)."""
    def when(t):
        return "already below" if t == 0 else f"> {HORIZON:g}" if t is None else f"{t:.3f}"

    def share(row):
        se = row.get("mc_se", {}).get("never_trained")
        iv = row.get("interval", {}).get("never_trained")
        text = percent(row["never_trained"])
        if se is not None and se == se and text != "-":
            text += f" \u00b1 {100 * se:.1f}%"
        return text + (f" [{percent(iv[0])}, {percent(iv[1])}]" if iv and text != "-" else "")

    return [[r["label"], _figure(r, "useful_per_1000", _cell(r["useful_per_1000"], ".1f"), ".1f"),
             _figure(r, "rollouts_per_useful", _cell(r["rollouts_per_useful"], ".1f"), ".1f"),
             share(r), _figure(r, "expiry_t", when(r["expiry_t"]), ".3f", f"> {HORIZON:g}"),
             _figure(r, "expiry_shift", _cell(r["expiry_shift"], "+.3f"), "+.3f", "beyond"),
             _figure(r, "expiry_shift_steps", _cell(r["expiry_shift_steps"], "+.0f"), "+.0f", "beyond")]
            for r in section["rows"]]


HEAD = ["sampler", "useful / 1,000 rollouts", "rollouts / useful group", "never trained", "expires at t",
        "shift (t)", "shift (steps)"]


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
