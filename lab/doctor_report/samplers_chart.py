r"""The samplers comparison (:func:`grpo_lab.sims.samplers.compare`'s dict) as a picture and in words.

One code for the doctor's report (command line page and the lab's Replay tab) and the lab's Samplers tab:

- :func:`samplers_svg`   an inline SVG (no script): per sampler, a bar of its useful groups per 1,000 rollouts
  and one of the share of prompts it never trains on, with its 95% interval (:func:`interval`: the doctor's over
  the fit's bootstrap where the section has them, else a Monte Carlo interval where the number is simulated);
  plain GRPO's values drawn as a dashed reference line across each panel
- :func:`verdict`        one sentence in plain words for the population compared, every figure taken from
  the section (never typed)
- :func:`verdict_notes`  what the verdict's figures mean: why DAPO pays more rollouts per useful group (the rounds
  it discards) and what "never trained" counts (:data:`NEVER_TRAINED_WORDS`)
- :func:`expiry_words`   when a sampler's useful groups per K rollouts fall below the threshold: "already
  below", a progress t within the run (t <= 1), "after N steps" when a run length is given, or "beyond the run"
- :func:`about`, :func:`about_html`  each sampler's settings in words, with its source's link (:data:`PAPERS`)

Edge cases: a row whose value is NaN (no useful group at all) is drawn as an empty bar and written "-"; the
verdict says "no sampler gives more useful groups than plain GRPO" when none does, and "about as many"
when the best one's 95% interval reaches plain GRPO's value.
"""

from __future__ import annotations

import html
import math

from grpo_lab.sims.formatting import fixed, percent
from grpo_lab.sims.samplers.compare import ORACLES, Z95, mc_interval

__all__ = ["samplers_svg", "verdict", "verdict_notes", "NEVER_TRAINED_WORDS", "expiry_words", "interval", "about", "about_html", "PAPERS", "Z95"]


#: sampler key -> (the paper or source it follows, its address)
PAPERS = {
    "plain": ("GRPO, Shao et al. 2024 (DeepSeekMath)", "https://arxiv.org/abs/2402.03300"),
    "dapo": ("DAPO, Yu et al. 2025", "https://arxiv.org/abs/2503.14476"),
    "band": ("online difficulty filtering, Bae et al. 2025", "https://arxiv.org/abs/2504.03380"),
    "retire": ("ScaleRL, Khatri et al. 2025", "https://arxiv.org/abs/2510.13786"),
    "greso": ("GRESO, Zheng et al. 2025", "https://arxiv.org/abs/2506.02177"),
    "knapsack": ("Knapsack RL, Li et al. 2025", "https://arxiv.org/abs/2509.25849"),
    "pods": ("PODS, Xu et al. 2025", "https://arxiv.org/abs/2504.13818"),
}


def about(key: str, s: dict) -> str:
    """Sampler ``key``'s settings in words, from the section's ``settings`` ``s`` (plain text)."""
    K = s["K"]
    cap = (f"at most {s['max_num_gen_batches']} rounds a step, then the step trains nothing"
           if s["max_num_gen_batches"] else "no cap on rounds")
    return {
        "plain": f"every prompt once an epoch, a group of {K} rollouts each; every group trained on",
        "dapo": f"rounds of {s['gen_batch']} prompts until {s['batch']} groups with a gradient fill the step ({cap}); "
                "groups without a gradient and the surplus dropped",
        "band": f"only prompts whose true pass rate lies between {percent(s['band'][0], 0)} and "
                f"{percent(s['band'][1], 0)} are drawn (an oracle filter); the others never",
        "retire": f"a prompt whose last {s['n_retire']} groups all passed is never drawn again",
        "greso": f"a prompt whose last z groups were unanimous is skipped with probability 1 - {s['p_easy']:g}^z "
                 f"after all-pass, 1 - {s['p_hard']:g}^z after all-fail",
        "knapsack": f"each epoch's {K} rollouts a prompt re-split between prompts, 0 to {s['k_max_factor'] * K} each, "
                    "where they most raise the chance of a gradient",
        "pods": f"{s['pods_factor'] * K} rollouts generated a prompt, the {K} of most varied reward trained on",
    }[key]


def about_html(section: dict, links: bool = True) -> str:
    """Each sampler's settings in words with its paper: an HTML list (class ``samplers-about``), escaped. ``links``:
    the paper as a link (the lab); False: its name and arXiv number as text (the doctor's page, which links to
    nothing outside it)."""
    s = section["settings"]

    def paper(key):
        name, url = PAPERS[key]
        if links:
            return (f"<a href='{html.escape(url, quote=True)}' target='_blank' rel='noopener'>"
                    f"{html.escape(name)}</a>")
        return html.escape(f"{name}, arXiv {url.rsplit('/', 1)[-1]}")

    items = "".join(f"<li><b>{html.escape(r['label'])}</b>: {html.escape(about(r['sampler'], s))} "
                    f"({paper(r['sampler'])})</li>" for r in section["rows"])
    return f"<ul class='samplers-about'>{items}</ul>"


def interval(row: dict, key: str, monte_carlo: bool = False) -> tuple[float, float] | None:
    """The 95% interval of ``row[key]`` (``useful_per_1000`` or ``never_trained``): the doctor's interval over the
    fit's bootstrap populations (``row['interval'][key]``, :mod:`grpo_lab.sims.doctor.sampler_intervals`) where the
    row has one and ``monte_carlo`` is False, else, where the figure is simulated, its Monte Carlo interval
    (:func:`grpo_lab.sims.samplers.compare.mc_interval`) from its standard error (``row['mc_se'][key]``, or ``details[key + '_se']``); None for a closed form without either."""
    given = None if monte_carlo else (row.get("interval") or {}).get(key)
    if given is not None:
        return float(given[0]), float(given[1])
    return mc_interval(row[key], (row.get("mc_se") or {}).get(key, row.get("details", {}).get(f"{key}_se")))


def expiry_words(t, steps: int | None = None) -> str:
    """When a sampler expires, in words: ``t`` is :func:`~grpo_lab.sims.samplers.compare`'s ``expiry_t``
    (0: already below; None: not within its horizon), ``steps`` the run length that t = 1 stands for."""
    if t is None:
        return "beyond the run"
    if t == 0:
        return "already below"
    if steps:
        n = f"{t * steps:,.0f}"
        return f"after {n} steps" if t <= 1 else f"beyond the run ({n} steps)"
    return f"at t = {fixed(t, 2)}" if t <= 1 else "beyond the run"


def _rows(section: dict) -> dict:
    return {r["sampler"]: r for r in section["rows"]}


def verdict(section: dict) -> str:
    """One sentence: which sampler gives the most useful groups per 1,000 rollouts, by how much more than plain
    GRPO, and what share of prompts it never trains on (plain text; every figure from ``section``)."""
    rows = _rows(section)
    plain = rows["plain"]
    base = plain["useful_per_1000"]
    s = section["settings"]
    budget = f"At this budget ({s['epochs']:g} epochs of plain GRPO, {s['budget_rollouts']:,.0f} rollouts)"
    others = [r for k, r in rows.items() if k != "plain" and math.isfinite(r["useful_per_1000"])]
    best = max(others, key=lambda r: r["useful_per_1000"], default=None)
    if best is None or not math.isfinite(base) or base <= 0 or best["useful_per_1000"] <= base:
        return (f"{budget}, no sampler gives more useful groups per 1,000 rollouts than plain GRPO "
                f"({fixed(base, 1)}), which never trains on {percent(plain['never_trained'])} of prompts.")
    more = best["useful_per_1000"] / base - 1.0
    ci = interval(best, "useful_per_1000", monte_carlo=True)
    noise = ci is not None and ci[0] <= base
    gain = (f"about as many useful groups as plain GRPO ({fixed(best['useful_per_1000'], 1)} vs {fixed(base, 1)} "
            "per 1,000 rollouts, within its simulation's 95% interval)" if noise else
            f"{percent(more, 0)} more useful groups than plain GRPO ({fixed(best['useful_per_1000'], 1)} vs "
            f"{fixed(base, 1)} per 1,000 rollouts)")
    out = (f"{budget}, {best['label']} gives {gain}, at the cost of never training on "
           f"{percent(best['never_trained'])} of prompts (plain GRPO: {percent(plain['never_trained'])}).")
    if best["sampler"] in ORACLES:
        out += (f" {best['label'][:1].upper() + best['label'][1:]} is an oracle: it reads each prompt's true pass rate, which no trainer "
                "knows, so its figure is a bound no trainer can reach")
        real = max((r for r in others if r["sampler"] not in ORACLES), key=lambda r: r["useful_per_1000"], default=None)
        out += (f"; of the samplers a trainer can run, {real['label']} gives the most "
                f"({fixed(real['useful_per_1000'], 1)} per 1,000 rollouts)." if real is not None else ".")
    return out


#: what the table's "never trained" share counts, in words
NEVER_TRAINED_WORDS = (
    "\u201cNever trained\u201d counts the prompts from which a sampler trains on no group with a gradient within the "
    "whole budget: never drawn (filtered out, retired or skipped), or drawn only into groups whose rollouts all "
    "passed or all failed (or, for DAPO, only into rounds it discarded).")


def verdict_notes(section: dict) -> list[str]:
    """Sentences that explain the verdict's figures (plain text, every figure from ``section``): why DAPO's useful
    groups per 1,000 rollouts fall below plain GRPO's (it pays for every round it generates and discards the groups
    without a gradient and the useful ones past a full step), and what "never trained" counts."""
    rows = _rows(section)
    s = section["settings"]
    notes = []
    dapo, plain = rows.get("dapo"), rows.get("plain")
    if dapo is not None and plain is not None and math.isfinite(dapo["useful_per_1000"]):
        rounds = dapo.get("details", {}).get("rounds_expected")
        per_step = (f" (about {fixed(rounds, 1)} rounds of {s['gen_batch']} prompts for each step of {s['batch']} "
                    "groups)" if rounds is not None and math.isfinite(rounds) else "")
        notes.append(
            f"{dapo['label']} trains on {fixed(dapo['useful_per_1000'], 1)} useful groups per 1,000 rollouts against "
            f"plain GRPO's {fixed(plain['useful_per_1000'], 1)} because it pays for every round it generates{per_step} "
            f"and discards the groups without a gradient and the useful groups past the step's {s['batch']}: those "
            "rollouts are paid for and never trained on.")
    notes.append(NEVER_TRAINED_WORDS)
    return notes


_W, _ROW, _TOP, _LABEL, _GAP = 680, 24, 34, 190, 24  #: width, row height, header, label column, gap (px)


def _panel(x0: float, width: float, title: str, rows: list[dict], key: str, vmax: float, text, base: float,
           color: str) -> list[str]:
    """One panel: a bar per row (value ``row[key]``), its interval, plain GRPO's dashed line, the value written."""
    X = lambda v: x0 + width * max(0.0, min(v, vmax)) / vmax  # noqa: E731
    bottom = _TOP + _ROW * len(rows)
    out = [f'<text x="{x0:.1f}" y="{_TOP - 14}" font-size="12" font-weight="600">{html.escape(title)}</text>',
           f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{_TOP - 4}" y2="{bottom}" stroke="#999"/>']
    for i, r in enumerate(rows):
        v = r[key]
        y = _TOP + _ROW * i
        if v is not None and math.isfinite(v):
            fill = "#555" if r["sampler"] == "plain" else color
            out.append(f'<rect x="{x0:.1f}" y="{y + 4}" width="{X(v) - x0:.1f}" height="{_ROW - 8}" fill="{fill}">'
                       f'<title>{html.escape(r["label"])}: {html.escape(text(v))}</title></rect>')
        ci = interval(r, key)
        if ci is not None:
            a, b = X(ci[0]), X(ci[1])
            m = y + _ROW / 2
            out.append(f'<path d="M{a:.1f} {m - 5}v10M{a:.1f} {m}H{b:.1f}M{b:.1f} {m - 5}v10" stroke="#111" '
                       'stroke-width="1.3" fill="none" class="samplers-interval"/>')
        label = text(v) if v is not None and math.isfinite(v) else "-"
        end = max(X(v) if v is not None and math.isfinite(v) else x0, X(ci[1]) if ci else x0)
        out.append(f'<text x="{end + 4:.1f}" y="{y + _ROW / 2 + 4}" font-size="11">{html.escape(label)}</text>')
    if math.isfinite(base):
        out.append(f'<line x1="{X(base):.1f}" x2="{X(base):.1f}" y1="{_TOP - 4}" y2="{bottom}" stroke="#555" '
                   'stroke-dasharray="4 3"/>')
    return out


def samplers_svg(section: dict, title: str = "Samplers at an equal rollout budget") -> str:
    """The section as an inline SVG figure (class ``samplers-chart``); see the module docstring."""
    rows = section["rows"]
    pw = (_W - _LABEL - 2 * _GAP - 60) / 2  # two panels and room for the last value's label
    use = [r["useful_per_1000"] for r in rows
           if r["useful_per_1000"] is not None and math.isfinite(r["useful_per_1000"])]
    hi = [c[1] for c in (interval(r, "useful_per_1000") for r in rows) if c]
    vmax = max([*use, *hi, 1e-9]) * 1.05
    never_hi = [c[1] for c in (interval(r, "never_trained") for r in rows) if c]
    nmax = max([r["never_trained"] for r in rows if math.isfinite(r["never_trained"])] + never_hi + [0.05]) * 1.05
    nmax = min(nmax, 1.0)
    height = _TOP + _ROW * len(rows) + 8
    base = _rows(section)["plain"]
    out = [f'<figure class="samplers-chart"><figcaption>{html.escape(title)}</figcaption>'
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" viewBox="0 0 {_W} {height}" '
           f'role="img" aria-label="{html.escape(title)}" style="max-width:100%;height:auto">']
    for i, r in enumerate(rows):
        out.append(f'<text x="{_LABEL - 8}" y="{_TOP + _ROW * i + _ROW / 2 + 4}" text-anchor="end" font-size="12">'
                   f'{html.escape(r["label"])}</text>')
    out += _panel(_LABEL, pw, "useful groups per 1,000 rollouts", rows, "useful_per_1000", vmax,
                  lambda v: fixed(v, 1), base["useful_per_1000"], "#2a7ab0")
    out += _panel(_LABEL + pw + 2 * _GAP + 30, pw, "prompts never trained on", rows, "never_trained", nmax,
                  lambda v: percent(v, 1), base["never_trained"], "#c0392b")
    out.append("</svg>")
    if any(interval(r, k) for r in rows for k in ("useful_per_1000", "never_trained")):
        what = ("95% intervals over the fit's bootstrap populations" if any(r.get("interval") for r in rows) else
                "95% Monte Carlo intervals of the simulated samplers")
        out.append(f"<p class='samplers-chart-note' style='font-size:12px;margin:2px 0'>Whiskers: {what}; dashed "
                   "lines: plain GRPO.</p>")
    out.append("</figure>")
    return "".join(out)
