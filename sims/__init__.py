"""The numerical core of grpo-lab: GRPO zero-variance group arithmetic.

Pure numpy/scipy; nothing here imports the UI. Where to find each formula:

- :mod:`sims.outcomes`         P(all pass), P(all fail), P(useful) for iid and correlated rollouts
- :mod:`sims.population`       Beta difficulty populations, D_real vs D_iid (Jensen gap)
- :mod:`sims.decay`            the environment-decay model p_t = p_0 ** (1 / (1 + g t))
- :mod:`sims.scenario`         one lab view: realised groups with common random numbers, filter, summary
- :mod:`sims.advantages`       grpo, dr_grpo, sign, tasa; expected gradient coefficient and coverage
- :mod:`sims.dynamic_sampling` DAPO rollout amplification and batch-fill probability
- :mod:`sims.montecarlo`       Monte Carlo validation with standard-error tolerances
"""

__version__ = "0.1.0"
