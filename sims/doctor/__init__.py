"""The run doctor: a real run's difficulty fitted, checked, extrapolated and turned into advice.

One module per stage (see docs/doctor.md):

- :mod:`.groups`      the record reduced to success counts per group, and its input checks
- :mod:`.fit`         ML beta-binomial and two-component mixture fits, SEs, goodness of fit
- :mod:`.windows`     the fit checked window by window against observed unanimous shares
- :mod:`.pooled`      prompt-pooled Beta and mixture fits (identifiable where one group is too small)
- :mod:`.correlation` within-prompt correlation where prompts repeat
- :mod:`.whatif`      K, DAPO, band and estimator what-ifs via the core's closed forms
- :mod:`.forecast`    per-prompt trend, the step the effective rate crosses a threshold, backtest
- :mod:`.skip`        temporal consistency, skip-rule backtest, budgeted allocation
- :mod:`.prompts`     retire / hard / live prompt lists as JSONL
- :mod:`.transitions` per-prompt moves between all-fail, mixed and all-pass from one visit to the next
- :mod:`.stall`       when a dynamic-sampling run stalls: generation rounds per step, forecast from its trend
- :mod:`.drift`       the level's path measured: a population, per-step shifts, four shapes weighted out of sample
- :mod:`.stall_risk`  P(first stall by step n) from a parametric bootstrap; the survivors-only dump's likelihood
- :mod:`.loop_sim`    verl's DAPO loop simulated on a drifting prompt set (the stall risk's validation)
- :mod:`.trainer_config` the trainer config's keys that decide a dynamic-sampling step, as one settings dict
                      (one reader per trainer in :mod:`.configs`: verl and its V1, SkyRL, OpenRLHF, prime-rl, NeMo-RL)
- :mod:`.cost`        prompts and rollouts per trained step under each trainer's loop, and how they rise
- :mod:`.audit`       the trainer's logged scalars recomputed from the record's groups
- :mod:`.honesty`     refusing a population the record cannot identify; intervals that hold when prompts repeat
- :mod:`.samplers`    the samplers' comparison on the run's fitted population at the trainer's sizes
- :mod:`.sampler_intervals` the comparison re-run on the cluster bootstrap's populations: an interval per figure
- :mod:`.diagnose`    all of it in one dict of numbers; its text and HTML are :mod:`grpo_lab.doctor_report`'s
- :mod:`.scalars_fit` a run known from per-step tracker shares only: Beta population and drift by ML, intervals
- :mod:`.scalars_forecast` expiry, stall and first step over the cap from that fit
- :mod:`.scalars_diagnose` the doctor on a scalars-only record; the scalars fit beside a group record's fit
- :mod:`.scalars_watch` the stall forecast refitted as each step of a training run lands (``grpo-lab watch``)
- :mod:`.scalars_sim` simulated scalars runs and a direct DAPO loop, for the scalars fit's validation
"""

from .diagnose import diagnose
from .groups import MIN_GROUPS, run_groups

__all__ = ["diagnose", "run_groups", "MIN_GROUPS"]
