"""The doctor's "Samplers" section: :func:`grpo_lab.sims.samplers.compare` on the run's fitted population.

The population is the preferred fit (single Beta or two-component mixture, as the what-ifs use) as
mid-quantile pass rates, one per prompt the run drew (at most :data:`MAX_PROMPTS`), at the run's K; the
DAPO batch and generation batch are the run's groups per step; the expiry threshold is the forecast's.
The decay model's t = 1 is taken as the run's last step, so ``expiry_shift_steps`` = shift x steps
(a convention of the comparison, not a fit of the run's own drift: the forecast section has that).
Numbers only: :mod:`grpo_lab.doctor_report.samplers` formats the section.
"""

from __future__ import annotations

__all__ = ["samplers_section", "MAX_PROMPTS"]

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
