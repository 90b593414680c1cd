r"""Early warning while a run trains: the stall forecast refitted as each step lands (``grpo-lab watch``).

:class:`StallWatch` takes the run's scalars-only record as it grows (followed by the caller) and, when it holds
a step it has not seen, forecasts the run by the doctor's own stages: :func:`.scalars_diagnose.diagnose_scalars`
with ``only="when"`` (the one dispatch point of the scalars doctor: on a binary log whose rows give a side, the
shares' measured drift gives the fit, the expiry, the stall forecast on the expiry's drawn futures and the risk,
:func:`.drift_shares.with_risk`; the drift maps where most rows give the mixed share only; the tie-share trend for
rewards that are not binary), so ``watch`` and ``diagnose`` give the same answer on the same rows. The forecast
stall step is the **first stall** the doctor's report says (:func:`.when.scalars_stall`): the median of the step at
which the run's rounds first exceed ``max_num_gen_batches`` (what stops verl's DAPO trainer), with its 90% interval
(every uncertainty drawn; the model's first cap hit and its predictive 95% interval where there is no risk). Where
the caller diagnoses the record anyway (``watch --emit``), the update takes that diagnosis's fit and stall forecast
instead of diagnosing again (:meth:`StallWatch.update`'s ``diagnose``).
A warning is raised once, at the first update whose forecast stall step is at most ``warn_steps`` steps after
the last step logged (or already passed). Until :data:`MIN_STEPS` steps have landed nothing is forecast.
Without a cap there is no stall to warn of: the update gives the expected rounds now and ``warn_steps`` ahead.

Cost (benchmarks/bench_watch_update.py): an update is one ``only="when"`` diagnosis of the whole log, refitted at
every new step (no warm start: the doctor's fit from its own starts, so the answer equals ``diagnose``'s); it costs
less than the drift maps' warm-started refit plus the risk it replaced (figures in docs/doctor.md), so no step is
skipped.

Changed (issue 39, "one doctor"): the update without a diagnosis refitted the drift maps (warm-started,
:func:`.scalars_fit.fit_models` and :func:`.scalars_fit.best_fit`) and took only the risk from the drift shapes, so
where the risk was not drawn (no cap reached within its horizon, :data:`.drift_shares.RISK_MAX_STEPS`) its stall was
the drift map's, not the doctor's.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..record import RunRecord
from .when import scalars_stall

__all__ = ["StallWatch", "MIN_STEPS", "DEFAULT_WARN_STEPS"]

MIN_STEPS = 5  #: steps logged before the first forecast
DEFAULT_WARN_STEPS = 20  #: warn this many steps before the forecast stall


def _fit_summary(diagnosis: dict) -> dict:
    """What an event says of the fit: ``model``, the population's ``alpha`` and ``beta`` and the ``drift`` over the
    log (None where the diagnosis has no fit: the tie-share trend of rewards that are not binary), and ``mixed_now``
    (the fit's mixed share at the last step, else the expiry's)."""
    fit = diagnosis.get("fit")
    if fit is None:
        return {"model": diagnosis["expiry"].get("model"), "alpha": None, "beta": None, "drift": None,
                "mixed_now": float(diagnosis["expiry"]["mixed_now"])}
    return {"model": fit["model"], "alpha": fit["alpha"], "beta": fit["beta"], "drift": fit["drift"],
            "mixed_now": fit["last"]["mixed"]}


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
        self.warned = False

    def update(self, record: RunRecord, diagnose=None) -> dict | None:
        """None when the record holds no new step; else ``{step, steps, forecast: None | {...}, warn, ...}``.

        ``diagnose``: a function of ``record`` giving its diagnosis (:func:`.diagnose.diagnose` with these settings,
        e.g. ``only="tracker"``, what ``watch --emit`` writes) or None, called once and only where a forecast is due.
        A scalars-only diagnosis gives the forecast (its fit and its stall forecast: the same stages with the same
        draws): a poll diagnoses once. Otherwise the watch diagnoses the record itself,
        :func:`.scalars_diagnose.diagnose_scalars` with ``only="when"`` (the stages the first stall reads)."""
        from .scalars_diagnose import diagnose_scalars

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
        diagnosis = diagnose(record) if diagnose is not None else None
        if diagnosis is None or not diagnosis.get("scalars_only"):  # groups per step: the column, else the flag,
            diagnosis = diagnose_scalars(record, trainer_config=self.settings,  # else the trainer's gen batch
                                         num_generations=self.K, groups_per_step=self.groups, only="when")
        sf = diagnosis["stall_forecast"]  # the diagnosis's stall forecast, its risk the first stall
        event.update(fit=_fit_summary(diagnosis), stall=sf)
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
