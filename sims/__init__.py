"""The numerical core of grpo-lab: GRPO zero-variance group arithmetic.

Pure numpy/scipy; nothing here imports the UI. Where to find each formula:

- :mod:`grpo_lab.sims.outcomes`         P(all pass), P(all fail), P(useful) for iid and correlated rollouts
- :mod:`grpo_lab.sims.population`       Beta difficulty populations, D_real vs D_iid (Jensen gap)
- :mod:`grpo_lab.sims.decay`            the environment-decay model p_t = p_0 ** (1 / (1 + g t))
- :mod:`grpo_lab.sims.scenario`         one lab view: realised groups with common random numbers, filter, summary
- :mod:`grpo_lab.sims.advantages`       grpo, dr_grpo, sign, tasa; expected gradient coefficient and coverage
- :mod:`grpo_lab.sims.dynamic_sampling` DAPO rollout amplification and batch-fill probability
- :mod:`grpo_lab.sims.montecarlo`       Monte Carlo validation with standard-error tolerances
"""

__version__ = "0.1.0"
