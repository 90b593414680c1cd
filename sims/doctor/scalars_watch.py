r"""Early warning while a run trains: the stall forecast refitted as each step lands (``grpo-lab watch``).

:class:`StallWatch` takes the run's scalars-only record as it grows (followed by the caller) and, when it holds
a step it has not seen, refits every drift model of :func:`.scalars_fit.fit_scalars` (each warm-started from its previous
fit), keeps the one the diagnosis keeps (:func:`.scalars_fit.best_fit`: the leave-future-out weights), and
forecasts the stall with :func:`.scalars_forecast.stall_forecast` for the trainer's settings and its risk on the
shares' per-step likelihood (:func:`.drift_shares.with_risk`: the group path's drift shapes, chooser and stall risk).
The forecast stall step is the **first stall**: the median of the step at which the run's rounds first exceed
``max_num_gen_batches`` (what stops verl's DAPO trainer), with its 90% interval (every uncertainty drawn; the drift
map's first cap hit and its predictive 95% interval where there is no risk): the same answer as the doctor's report
(:func:`.when.scalars_stall`). Where the caller diagnoses the record anyway (``watch --emit``), the update takes that
diagnosis's fit and stall forecast instead of fitting again (:meth:`StallWatch.update`'s ``diagnose``).
A warning is raised once, at the first update whose forecast stall step is at most ``warn_steps`` steps after
the last step logged (or already passed). Until :data:`MIN_STEPS` steps have landed nothing is forecast.
Without a cap there is no stall to warn of: the update gives the expected rounds now and ``warn_steps`` ahead.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .scalars_fit import DRAWS, best_fit, fit_models, step_shares
from .drift_shares import with_risk
from .scalars_forecast import stall_forecast
from .when import scalars_stall

__all__ = ["StallWatch", "MIN_STEPS", "WATCH_DRAWS", "DEFAULT_WARN_STEPS"]

MIN_STEPS = 5  #: steps logged before the first forecast
WATCH_DRAWS = DRAWS  #: parameter draws per forecast: the doctor's, so that both give the same interval
DEFAULT_WARN_STEPS = 20  #: warn this many steps before the forecast stall


class StallWatch:
    """Stateful forecaster of one growing run (see the module docstring)."""

    def __init__(self, settings: dict | None, *, warn_steps: int = DEFAULT_WARN_STEPS,
                 num_generations: int | None = None, groups_per_step: int | None = None):
        """``settings``: the trainer's (:func:`.trainer_config.read_trainer_config`); None: those the record keeps
        (:func:`.trainer_config.settings_from_record`: a verl log read with its config), found at the first update
        that forecasts (InputError naming the flags where the record keeps none)."""
        if int(warn_steps) < 0:
            raise InputError(f"--warn-steps must be >= 0, got {warn_steps!r}")
        self.settings = settings
        self.warn_steps = int(warn_steps)
        self.K = num_generations or (settings or {}).get("K")
        self.groups = groups_per_step
        self.last_step = None
        self.theta = {}
        self.warned = False

    def update(self, record: RunRecord, diagnose=None) -> dict | None:
        """None when the record holds no new step; else ``{step, steps, forecast: None | {...}, warn, ...}``.

        ``diagnose``: a function of ``record`` giving its diagnosis (:func:`.diagnose.diagnose` with these settings,
        e.g. ``only="tracker"``, what ``watch --emit`` writes) or None, called once and only where a forecast is due.
        A scalars-only diagnosis with a drift-map fit gives the forecast (its fit and its stall forecast, the same
        stages with the same draws, from cold starts): a poll fits once. Otherwise the watch fits (warm-started)."""
        steps = np.asarray((record.steps or {}).get("step", []), np.int64)
        if not len(steps) or (self.last_step is not None and int(steps[-1]) <= self.last_step):
            return None
        self.last_step = int(steps[-1])
        event = {"step": self.last_step, "steps": int(len(steps)), "forecast": None, "warn": False}
        if len(steps) < MIN_STEPS:
            event["reason"] = f"waiting for {MIN_STEPS} steps ({len(steps)} so far)"
            return event
        if self.settings is None or self.settings.get("source") == "flags":
            from .trainer_config import resolve_settings

            self.settings = resolve_settings(record.meta, self.settings)  # flags over the sizes the record keeps
            if self.settings is None:
                raise InputError("watch needs the trainer's config (--trainer-config FILE, or --gen-batch-size and "
                                 "--train-batch-size) to forecast its stall: the log's record keeps no batch sizes")
        K = self.K or record.meta.get("num_generations") or self.settings.get("K")
        gps = self.groups
        col = np.asarray(record.steps.get("groups_per_step", []), float)
        if gps is None and not (len(col) and np.isfinite(col).any()):
            gps = int(self.settings["gen_batch"])
        diagnosis = diagnose(record) if diagnose is not None else None
        if diagnosis is not None and diagnosis.get("scalars_only") and diagnosis.get("fit"):
            fit, sf = diagnosis["fit"], diagnosis["stall_forecast"]  # the diagnosis's fit and first stall
        else:
            d = step_shares(record, num_generations=K, groups_per_step=gps, settings=self.settings)
            fits = fit_models(d, starts=self.theta)
            self.theta = {m: f["theta"] for m, f in fits.items()}
            fit = best_fit(fits)  # the diagnosis's choice
            sf = with_risk(stall_forecast(fit, self.settings, n_draws=WATCH_DRAWS), d,
                           int(record.meta.get("n_prompts") or 0) or None)  # the diagnosis's first stall
        event.update(fit={"alpha": fit["alpha"], "beta": fit["beta"], "drift": fit["drift"],
                          "mixed_now": fit["last"]["mixed"]}, stall=sf)
        if not sf.get("available"):
            event["reason"] = sf.get("reason")
            return event
        if not sf["settings"]["cap"]:
            event["reason"] = "no cap: a step never stops the run; it draws rounds until the batch is full"
            return event
        st = scalars_stall(sf)  # the doctor's one answer (sims/doctor/when.py)
        event["forecast"] = {"step": st["step"], "interval": st["interval"], "level": st["level"],
                             "source": st["source"], "cause": st["cause"],
                             "p_stall_next": float(sf["series"]["p_stall"][0])}
        if st["step"] is not None and not self.warned and st["step"] - self.last_step <= self.warn_steps:
            self.warned = True
            event["warn"] = True
        return event
