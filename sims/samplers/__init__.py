"""Samplers side by side on one population at an equal rollout budget (issue 26, item 2).

- :mod:`.closed`    plain GRPO, DAPO dynamic sampling's rates, a pass-rate band, Knapsack-style allocation,
                    PODS down-sampling: closed forms
- :mod:`.simulate`  retirement after N all-pass groups, GRESO skipping, DAPO's never-trained share: fast
                    vectorised simulations
- :mod:`.compare`   all of them in one table, with each one's expiry under :mod:`grpo_lab.sims.decay`
                    against plain GRPO's
"""

from .compare import DEFAULTS, SAMPLERS, beta_pass_rates, compare

__all__ = ["DEFAULTS", "SAMPLERS", "beta_pass_rates", "compare"]
