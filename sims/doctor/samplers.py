"""The doctor's "Samplers" section: :func:`grpo_lab.sims.samplers.compare` on the run's fitted population.

The population is the preferred fit (single Beta or two-component mixture, as the what-ifs use) as
mid-quantile pass rates, one per prompt the run drew (at most :data:`MAX_PROMPTS`), at the run's K; the
DAPO batch and generation batch are the run's groups per step; the expiry threshold is the forecast's.
The decay model's t = 1 is taken as the run's last step, so ``expiry_shift_steps`` = shift x steps
(a convention of the comparison, not a fit of the run's own drift: the forecast section has that).
"""

from __future__ import annotations

import html

from ..formatting import percent

__all__ = ["samplers_section", "samplers_text", "samplers_html", "MAX_PROMPTS"]

MAX_PROMPTS = 20_000  #: the most prompts the comparison stands for a run's fitted population with


def samplers_section(population, K: int, prompts: int, steps: int, batch: int, threshold: float) -> dict:
    """``compare`` on the fitted population (see the module docstring); adds ``population``."""
    from ..samplers import beta_pass_rates, compare  # here: grpo_lab.sims.samplers imports .skip of this package

    n = max(1, min(int(prompts), MAX_PROMPTS))
    out = compare(beta_pass_rates(population, n), K, 0.0, steps=int(steps), threshold=threshold,
                  batch=int(batch), gen_batch=int(batch))
    out["population"] = [list(c) for c in population] if not (len(population) == 2 and
                                                              isinstance(population[0], (int, float))) \
        else [[1.0, float(population[0]), float(population[1])]]
    return out


def _cell(x, spec) -> str:
    return "-" if x is None or x != x else format(x, spec)


def table_rows(section: dict) -> list[list[str]]:
    """[sampler, useful per 1,000 rollouts, rollouts per useful group, never trained, expiry t, shift, shift in
    steps] as text, one row per sampler (an expiry past the search's horizon reads "> HORIZON")."""
    from ..samplers.compare import HORIZON

    def when(t):
        return "already below" if t == 0 else f"> {HORIZON:g}" if t is None else f"{t:.3f}"

    return [[r["label"], _cell(r["useful_per_1000"], ".1f"), _cell(r["rollouts_per_useful"], ".1f"),
             percent(r["never_trained"]), when(r["expiry_t"]), _cell(r["expiry_shift"], "+.3f"),
             _cell(r["expiry_shift_steps"], "+.0f")] for r in section["rows"]]


HEAD = ["sampler", "useful / 1,000 rollouts", "rollouts / useful group", "never trained", "expires at t",
        "shift (t)", "shift (steps)"]


def _settings_line(section: dict) -> str:
    s = section["settings"]
    return (f"{s['prompts']:,} prompts, K = {s['K']}, budget {s['epochs']:g} epochs ({s['budget_rollouts']:,.0f} "
            f"rollouts); DAPO batch {s['batch']} (gen {s['gen_batch']}, max_num_gen_batches "
            f"{s['max_num_gen_batches']}); band [{s['band'][0]:g}, {s['band'][1]:g}]; retire after "
            f"{s['n_retire']} all-pass; GRESO p_e {s['p_easy']:g}/{s['p_hard']:g}; PODS n = "
            f"{s['pods_factor']}K; expiry: rate below {s['threshold']:g}")


def samplers_text(section: dict) -> list[str]:
    """The section as text lines (the command line's report)."""
    rows = table_rows(section)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEAD)]
    fmt = lambda cells: "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return ["samplers at an equal rollout budget: " + _settings_line(section), fmt(HEAD), *map(fmt, rows)]


def samplers_html(section: dict, table) -> str:
    """The section as HTML, with the report's ``table(rows, head)`` function."""
    return ("<h2>Samplers side by side</h2><p>" + html.escape(_settings_line(section)) + ".</p>"
            + table(table_rows(section), HEAD))
