r"""The forecast as a tracker's scalars: what ``grpo-lab watch --emit`` and the TRL callback write beside the
trainer's metrics, read from one diagnosis (:func:`grpo_lab.sims.doctor.diagnose`'s dict), so the curves in the
tracker equal ``grpo-lab diagnose --json`` (its ``tracker`` entry) on the same record at the same step.

Scalars, all under :data:`PREFIX` (a key is left out where its figure does not exist, e.g. no stall within the
horizon; a tracker draws a gap):

``expiry_step``          the step the effective (mixed) group rate falls below the threshold: the trend's crossing
                         (a record of groups, :mod:`.forecast`) or the scalars-only record's (:func:`.drift_shares.shares_expiry`,
                         the drift shapes on the per-step shares; the drift map where a log of the mixed share only keeps the maps)
``first_stall_median``   the first step whose generation rounds exceed the cap: the median of the first stall's
                         distribution (the risk's, :mod:`.stall_risk`, for a record of groups and, on the per-step
                         shares, :mod:`.drift_shares`, for scalars; else the first cap hit's,
                         :func:`.scalars_forecast.stall_forecast`)
``first_stall_lo``, ``first_stall_hi``  its band: the risk's :data:`.stall_risk.LEVEL` interval, or the scalars
                         forecast's predictive interval (both uncertainties: the fit's and the loop's own)
``first_stall_band_level`` that band's coverage (0.9 for the risk; the scalars forecast's own level)
``p_stall_next``         P(the first stall falls within the next :data:`NEXT_SHARE` of the run), the run being the
                         steps logged so far (at least one step ahead): 1 - prod over those steps of
                         (1 - P(stall at the step)) (:func:`.scalars_forecast._hit_cdf`), or the risk's P(first stall
                         by the step)
``mixed_now``            the effective group rate at the last step (the fit's)
``rules``                how many of :mod:`.rules` fire (left out of a diagnosis that did not fire them:
                         ``diagnose(..., only="when")``)

:func:`alert_due` says whether the forecast stall is within ``before`` steps of ``step`` (or already past).
"""

from __future__ import annotations

import math

import numpy as np

# every key written to a tracker starts with PREFIX; EVENT_SUFFIX ends the name of the TensorBoard event file they go
# to: declared where the readers leave them out (:mod:`grpo_lab.sims.ingest.trackers.common`)
from ..ingest.trackers.common import OWN_EVENT_SUFFIX as EVENT_SUFFIX, OWN_PREFIX as PREFIX

__all__ = ["PREFIX", "EVENT_SUFFIX", "NEXT_SHARE", "tracker_values", "alert_due", "alert_text", "next_steps"]

NEXT_SHARE = 0.1  #: P(stall) is over the next this share of the run


def next_steps(last_step: int) -> int:
    """Steps in "the next :data:`NEXT_SHARE` of the run" after ``last_step`` (the run so far): at least 1."""
    return max(1, int(math.ceil(NEXT_SHARE * max(int(last_step), 0))))


def _p_stall_next(sf: dict, scalars: bool) -> float | None:
    """P(the first stall within the next :func:`next_steps` steps) of a stall forecast, None where it has none."""
    last = int(sf["now"]["step"])
    if scalars and not (sf.get("risk") or {}).get("available"):  # the stall forecast's cap hit (no risk on the shares)
        if not sf.get("first_cap_hit"):
            return None
        from .scalars_forecast import _hit_cdf

        steps = np.arange(last + 1, last + next_steps(last) + 1, dtype=float)
        grid, p = np.asarray(sf["series"]["step"], float), np.asarray(sf["series"]["p_stall"], float)
        at = np.interp(steps, grid, p)  # the grid holds every step within the next run length where it is short
        return float(_hit_cdf(steps, at, last + 1)[-1])
    risk = sf.get("risk") or {}
    if not risk.get("available"):
        return None
    from .risk_blocks import cumulative_at

    return float(cumulative_at(last + next_steps(last), risk["cumulative"], risk["step"], last))


def tracker_values(result: dict) -> dict[str, float]:
    """``{PREFIX + name: value}`` of a diagnosis (see the module docstring); figures that do not exist are left out.

    The expiry and the first stall are the diagnosis's one answer to "when" (``result["when"]``,
    :func:`.when.when`), as the reports print them."""
    scalars = bool(result.get("scalars_only"))
    w = result["when"]
    out: dict = {"rules": len(result["rules"] or []) if "rules" in result else None, "expiry_step": w["expiry"]["step"],
                 "mixed_now": result["expiry"]["mixed_now"] if scalars else result["forecast"]["rate_now"]}
    sf = result.get("stall_forecast") or {}
    stall = w["stall"]
    if sf.get("available") and stall.get("available"):
        p_next = _p_stall_next(sf, scalars)
        if p_next is not None:
            out["first_stall_median"] = stall.get("step")
            if stall.get("step") is not None:
                lo, hi = stall.get("interval") or [None, None]
                out.update(first_stall_lo=lo, first_stall_hi=hi, first_stall_band_level=stall["level"])
            out["p_stall_next"] = p_next
    return {PREFIX + k: float(v) for k, v in out.items() if v is not None and np.isfinite(v)}


def alert_due(values: dict, step: int, before: int) -> bool:
    """True where the forecast first stall (its median) is at most ``before`` steps after ``step``."""
    median = values.get(PREFIX + "first_stall_median")
    return median is not None and median - step <= before


def alert_text(values: dict, step: int, cap) -> tuple[str, str]:
    """(title, text) of the alert a tracker shows (a title under 64 characters, W&B's limit)."""
    median = values[PREFIX + "first_stall_median"]
    lo, hi = values.get(PREFIX + "first_stall_lo"), values.get(PREFIX + "first_stall_hi")
    band = f" (band {lo:.0f}-{'beyond the horizon' if hi is None else f'{hi:.0f}'})" if lo is not None else ""
    p = values.get(PREFIX + "p_stall_next")
    return ("grpo-lab: dynamic sampling stall ahead",
            f"At step {step} the run is forecast to exceed its cap of {cap} generation rounds at step {median:.0f}"
            f"{band}, {median - step:.0f} steps ahead" + (f"; P(stall within the next {next_steps(step)} steps) "
                                                          f"{100 * p:.0f}%" if p is not None else "") + ".")
