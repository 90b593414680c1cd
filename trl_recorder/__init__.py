"""grpo-lab inside TRL's GRPOTrainer: a live run record and log figures, and the core's advantage estimators.

- :mod:`grpo_lab.trl_recorder.recorder`   :class:`GroupRecorder` -- ``GroupRecorder(dir).attach(trainer)``
- :mod:`grpo_lab.trl_recorder.metrics`    the figures added to TRL's logs (pure numpy)
- :mod:`grpo_lab.trl_recorder.advantages` :func:`fixed_reference_trainer` -- sign / tasa / grpo / dr_grpo in TRL
- :mod:`grpo_lab.trl_recorder.dynamic_sampling` :func:`dynamic_sampling_trainer` -- DAPO dynamic sampling (TRL has none)
- :mod:`grpo_lab.trl_recorder.stall_forecast` :class:`StallForecast` -- the doctor's stall forecast written into
  the trainer's trackers as it trains, an alert before the stall, a clean stop when every group is dead
- :mod:`grpo_lab.trl_recorder._compat`    the supported TRL range and its one-line check

Importing this package does not import TRL; the classes check the installed version when used.
"""

from ._compat import SUPPORTED_TRL, check_trl
from .advantages import fixed_reference_trainer, group_advantages
from .dynamic_sampling import BatchNotFilled, dynamic_sampling_trainer
from .recorder import GroupRecorder
from .stall_forecast import StallForecast

__all__ = ["GroupRecorder", "StallForecast", "fixed_reference_trainer", "group_advantages", "dynamic_sampling_trainer", "BatchNotFilled",
           "check_trl", "SUPPORTED_TRL"]
