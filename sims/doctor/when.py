r"""One answer to "when": the run's expiry and its first stall, each checked against the log before it is said.

:func:`when` reads a diagnosis (group-level or scalars-only) and returns the one forecast every surface prints
(the text report, the HTML page, the lab's Diagnose section, ``grpo-lab watch``):

``expiry``  the first future step at which the mixed (effective) share falls below the threshold: for a record
            with groups its forecast's expiry model's (:data:`.forecast.GROUP_EXPIRY`: the group trend's crossing,
            or the drift shapes' on its groups, :func:`.forecast.group_expiry`, or the one chosen on the run's
            history, :func:`.expiry_choice.choose_expiry`, its rule said in ``source``); for a scalars-only
            record with binary rewards the drift shapes' on the per-step shares (:func:`.drift_shares.shares_expiry`,
            the drift the first stall reads; the scalars fit's drift map where a log of the mixed share only keeps the maps),
            for rewards that are not binary the tie-share trend's; its interval and level
``stall``   the first step whose rounds exceed the cap: the risk's median first stall and its 90% interval
            (:mod:`.stall_risk`, every uncertainty drawn) for a record with groups, and for scalars the same
            risk on the per-step shares' likelihood (:mod:`.drift_shares`; without it, rewards not binary, the
            first cap hit's median and its predictive 95% interval, :mod:`.scalars_forecast`)
``verdicts`` each verdict checked against the logged rows it speaks of (:func:`check_expiry`,
            :func:`check_cause`): ``holds`` False replaces the verdict by what the log says
``other``   the other step figures in the report, each named for what it is (they answer other questions)

:func:`when` also settles the diagnosis's own expiry fields on the checked answer, so no field of
``diagnose --json`` contradicts ``when`` or the log: ``forecast.status`` (groups) or ``expiry.status`` (scalars)
becomes the checked wording (``when.expiry.said``), and where the log contradicts the model, its step and interval
(``forecast.crossing_step`` / ``crossing_interval``, ``expiry.step`` / ``interval``, and the groups' column of the
scalars fit's expiry row beside them) become None, as ``when.expiry``'s do. The model's unchecked claim is kept
only in the verdict that checked it (``when.verdicts[0].model``: its ``status``, ``step`` and ``interval``).

**Checks.** "Already below the threshold at the last step" is said only if the logged mixed share of the last
:data:`LAST_ROWS` rows is not above the threshold beyond its 95% binomial interval; "stays above" only if that
interval lies above the threshold (below it: "no verdict"; reaching it: "uncertain", the log not saying the run is
above); "crosses near step s" only if the logged rows have not already crossed (their interval lies above). A claim
about the future ("stays above", "crosses") stands only where the model the log cannot rule out agrees with it
(``expiry["alternatives"]``: for the tie share, the one- or two-sided trend the chooser did not keep, where its
weight is at least :data:`.scalars_fit.PARSIMONY` times the kept one's, :func:`.tie_trend.alternative_expiry`);
where it says otherwise the verdict is "uncertain", naming both claims, their weights and the last rows' evidence
(mixed share, and the all-pass / all-fail shares with any trend beyond :data:`Z_TREND` standard errors). A threshold the run's K cannot reach with binary rewards (the mixed share is at most 1 - 2^(1 - K))
gives no expiry verdict. The cause (all-fail collapse / all-pass saturation) is said only if the logged
last rows do not contradict it: not said when the named side holds less of the last rows than the other and,
over the last :data:`TREND_SHARE` of the rows, its share falls while the other's grows (least-squares slopes, each
beyond :data:`Z_TREND` standard errors).
"""

from __future__ import annotations

import numpy as np

from .fit import share_interval
from .rewards import max_mixed_share

__all__ = ["LAST_ROWS", "when", "check_expiry", "check_cause", "logged_tail", "scalars_stall"]

LAST_ROWS = 10  #: logged rows the verdicts are checked against
TREND_SHARE = 0.2  #: the unanimous shares' trend is read over the last 20% of the rows (at least LAST_ROWS)
Z_TREND = 2.0  #: a trend counts when its least-squares slope is this many standard errors from 0


def logged_tail(steps, mixed, groups, all_pass=None, all_fail=None, rows: int = LAST_ROWS) -> dict | None:
    """The logged shares of the last ``rows`` rows with a finite mixed share, pooled by groups, with the mixed
    share's 95% interval (Jeffreys, :func:`.fit.share_interval`); None when there is no such row."""
    mixed, groups = np.asarray(mixed, float), np.asarray(groups, float)
    ok = np.flatnonzero(np.isfinite(mixed) & np.isfinite(groups) & (groups > 0))
    if not ok.size:
        return None
    i = ok[-rows:]
    n = float(groups[i].sum())
    k = float(np.sum(mixed[i] * groups[i]))
    lo, hi = share_interval(round(k), round(n))
    out = {"steps": [int(np.asarray(steps)[i[0]]), int(np.asarray(steps)[i[-1]])], "rows": int(len(i)),
           "groups": n, "mixed": k / n, "mixed_interval": [float(lo), float(hi)]}
    j = ok[-max(rows, int(np.ceil(TREND_SHARE * ok.size))):]  # the trend's rows: a longer stretch
    x = np.asarray(steps, float)[j]
    for key, arr in (("all_pass", all_pass), ("all_fail", all_fail)):
        if arr is not None:
            a = np.asarray(arr, float)
            if np.isfinite(a[i]).all():
                out[key] = float(np.sum(a[i] * groups[i]) / n)
            y = a[j]
            if len(j) >= 4 and np.isfinite(y).all() and np.ptp(x) > 0:
                slope, icpt = np.polyfit(x, y, 1)
                resid = y - (slope * x + icpt)
                se = np.sqrt(np.sum(resid**2) / (len(j) - 2) / np.sum((x - x.mean()) ** 2))
                out[f"{key}_trend"] = {"per_step": float(slope), "z": float(slope / se) if se > 0 else 0.0,
                                       "steps": [int(x[0]), int(x[-1])]}
    return out


def _kind(status: str) -> str | None:
    """What an expiry status claims: "below" (now), "above" (for the horizon), "crosses" (at a future step)."""
    return "below" if "already below" in status else "above" if "stays above" in status else \
        "crosses" if "crosses" in status else None


def _sides_said(tail: dict) -> str:
    """The last rows' all-pass / all-fail shares, with the direction of each that moves beyond :data:`Z_TREND`
    standard errors ("" where the tail holds no sides)."""
    parts = []
    for key in ("all_pass", "all_fail"):
        if key in tail:
            tr = tail.get(f"{key}_trend")
            moves = "" if tr is None or abs(tr["z"]) <= Z_TREND else \
                f" ({'rising' if tr['z'] > 0 else 'falling'} over steps {tr['steps'][0]}-{tr['steps'][1]}, " \
                f"{tr['z']:+.1f} standard errors)"
            parts.append(f"{key.replace('_', '-')} {100 * tail[key]:.1f}%{moves}")
    return f"; {', '.join(parts)}" if parts else ""


def check_expiry(status: str, threshold: float, tail: dict | None, K: int | None, rewards: str,
                 alternatives: list | tuple = ()) -> dict:
    """``{"claim", "holds", "said", "logged"}``: the expiry verdict ``status`` against the logged tail and the
    models the log cannot rule out (``alternatives``: ``{"model", "weight", "kept_model", "kept_weight",
    "status"}`` each, :func:`.tie_trend.alternative_expiry`); ``uncertain`` True where the verdict gave way to
    "uncertain" (the model is not contradicted, but the log does not settle its claim)."""
    out = {"claim": status, "holds": True, "said": status, "logged": None, "uncertain": False}
    if rewards == "binary" and K and threshold >= max_mixed_share(K):
        out.update(holds=False, said=f"no expiry verdict: the threshold {threshold:g} is at or above the most mixed "
                   f"groups binary rewards give at K = {K} ({100 * max_mixed_share(K):.1f}%); give a lower --threshold")
        return out
    if tail is None:
        return out
    lo, hi = tail["mixed_interval"]
    out["logged"] = (f"the last {tail['rows']} logged rows (steps {tail['steps'][0]}-{tail['steps'][1]}) average "
                     f"{100 * tail['mixed']:.1f}% mixed [{100 * lo:.1f}%, {100 * hi:.1f}%]")
    contradicts = (("already below" in status and lo > threshold)
                   or ("stays above" in status and hi < threshold)
                   or ("crosses" in status and hi < threshold))
    if contradicts:
        out.update(holds=False, said=f"no verdict: the model says \"{status}\", but {out['logged']}, "
                   f"{'above' if lo > threshold else 'below'} the threshold {threshold:g}: the model misfits the "
                   "last rows")
        return out
    evidence = out["logged"] + _sides_said(tail)
    if _kind(status) == "above" and lo <= threshold:
        out.update(holds=False, uncertain=True, said=f"uncertain: the model says \"{status}\", but {evidence}: "
                   f"the interval reaches the threshold {threshold:g}, so the log does not say the run is above it")
        return out
    for alt in alternatives:
        if _kind(status) in ("above", "crosses") and _kind(alt["status"]) != _kind(status):
            out.update(holds=False, uncertain=True, said=(
                f"uncertain: the {alt['kept_model']} says \"{status}\", the {alt['model']} \"{alt['status']}\", "
                f"and the log cannot tell them apart (leave-future-out weights {alt['kept_weight']:.2f} and "
                f"{alt['weight']:.2f} on its later rows); {evidence}"))
            return out
    return out


def check_cause(cause: str | None, tail: dict | None) -> dict:
    """The stall's cause against the logged all-pass / all-fail shares of the last rows."""
    out = {"claim": cause, "holds": True, "said": cause, "logged": None}
    if not cause or tail is None or "all_pass" not in tail or "all_fail" not in tail:
        return out
    side, other = ("all_fail", "all_pass") if cause.startswith("all-fail") else ("all_pass", "all_fail") \
        if cause.startswith("all-pass") else (None, None)
    if side is None:
        return out
    out["logged"] = (f"the last {tail['rows']} logged rows: all-pass {100 * tail['all_pass']:.1f}%, all-fail "
                     f"{100 * tail['all_fail']:.1f}%")
    behind = tail[side] < tail[other]
    ts, to = tail.get(f"{side}_trend"), tail.get(f"{other}_trend")
    falling = ts is not None and to is not None and ts["z"] < -Z_TREND and to["z"] > Z_TREND
    if behind and falling:
        out.update(holds=False, said=f"not said: the model names {cause}, but {out['logged']}, and over steps "
                   f"{ts['steps'][0]}-{ts['steps'][1]} the {side.replace('_', '-')} share falls while the "
                   f"{other.replace('_', '-')} share grows (both beyond {Z_TREND:g} standard errors)")
    return out


def _step(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _scalars_tail(d: dict) -> dict | None:
    if d.get("tie_fit"):
        s = d["tie_fit"]["series"]
        return logged_tail(s["step"], 1 - np.asarray(s["observed_tie"]), s["groups"], s.get("observed_high"),
                           s.get("observed_low"))
    s = d["fit"]["series"]
    return logged_tail(s["step"], s["observed_mixed"], s["groups"], s["observed_all_pass"], s["observed_all_fail"])


def _group_tail(d: dict) -> dict | None:
    s = d["forecast"]["series"]
    return logged_tail(s["step"], s["observed"], s["groups"], s.get("all_pass"), s.get("all_fail")) \
        if "groups" in s else None


SAMPLERS = ("samplers' expires", "a simulated fresh run of the prompt set on the fitted population, per sampler "
            "(not this run's forecast)")


def scalars_stall(sf: dict) -> dict:
    """The first stall of a scalars stall forecast (:func:`.scalars_forecast.stall_forecast`): the median first
    stall and its 90% interval of its ``risk`` where it has one (:func:`.drift_shares.with_risk`: the group path's
    shapes on the shares), else the first step over the cap's median and its predictive 95% interval on the drift
    map (what :func:`when` and ``grpo-lab watch`` both say)."""
    stall = {"available": bool(sf.get("available") and sf.get("first_cap_hit"))}
    rk = sf.get("risk") or {}
    if stall["available"] and rk.get("available"):
        fs = rk["first_stall"]
        stall.update(step=_step(fs["median"]), interval=fs["interval"], level=rk["level"],
                     cause=rk["cause"] if fs["median"] is not None else sf["cause"],
                     source="the stall risk on the per-step shares (median first stall; the drift shapes, population "
                            "and loop drawn, as for groups)")
    elif stall["available"]:
        h = sf["first_cap_hit"]
        stall.update(step=h["median"], interval=h["predictive"], level=0.95, cause=sf["cause"],
                     source="first step over the cap (median; predictive interval: the fit's and the loop's "
                            "randomness)")
    else:
        stall["reason"] = sf.get("reason") or "no cap: a step never raises (the run crawls instead)"
    return stall


def _settle(d: dict, ve: dict, expiry: dict) -> None:
    """The diagnosis's own expiry fields set to the checked answer (module docstring); the model's claim into
    ``ve["model"]``."""
    src, step, iv = (d["expiry"], "step", "interval") if d.get("scalars_only") else \
        (d["forecast"], "crossing_step", "crossing_interval")
    ve["model"] = {"status": src["status"], "step": src[step], "interval": src[iv]}
    src["status"] = ve["said"]
    src[step], src[iv] = expiry["step"], expiry["interval"]
    for row in (d.get("scalars_fit") or {}).get("rows", []):
        if row.get("step") and row["what"].startswith("expiry step"):
            row["groups"], row["groups_interval"] = expiry["step"], expiry["interval"]


def _chosen(choice: dict | None) -> str:
    """How the group expiry's model was chosen, where it was (:func:`.expiry_choice.choose_expiry`): "; chosen on
    the run's own history: <rule>"; empty for a fixed model."""
    return f"; chosen on the run's own history: {choice['rule']}" if choice and choice.get("scores") else ""


def when(d: dict) -> dict:
    """The one forecast of "when" of diagnosis ``d`` (see the module docstring)."""
    scal = bool(d.get("scalars_only"))
    rewards = d["run"].get("rewards", "unknown")
    K = d["run"].get("K")
    if scal:
        e = d["expiry"]
        expiry = {"step": _step(e["step"]), "interval": e["interval"], "level": 0.95, "status": e["status"],
                  "source": {"tie share": "the tie-share trend",
                             "drift shapes": "the drift shapes on the per-step shares (the median of the drawn mixed "
                                             "share; shapes, population and drift drawn, as for the first stall)"}.get(
                      e.get("model"), "the scalars fit's drift map"),
                  "threshold": e["threshold"]}
        tail = _scalars_tail(d)
        stall = scalars_stall(d["stall_forecast"])
        other = [("P(stall) > q first at step", "the first step whose own chance of stalling exceeds q (a per-step "
                  "chance at the fitted parameters, not the first stall)"), SAMPLERS]
    else:
        fc = d["forecast"]
        expiry = {"step": _step(fc["crossing_step"]), "interval": fc["crossing_interval"], "level": 0.95,
                  "status": fc["status"], "threshold": fc["threshold"],
                  "source": ("the group trend" if fc.get("expiry_model") != "drift" else "the drift shapes on the "
                             "groups (the median of the drawn mixed share; shapes, population and drift drawn, as for "
                             "the first stall)") + _chosen(fc.get("expiry_choice"))}
        tail = _group_tail(d)
        sf = d.get("stall_forecast") or {}
        rk = sf.get("risk") or {}
        stall = {"available": bool(sf.get("available") and sf["settings"].get("cap_effective"))}
        if stall["available"] and rk.get("available"):
            fs = rk["first_stall"]
            stall.update(step=_step(fs["median"]), interval=fs["interval"], level=rk["level"], cause=sf["cause"],
                         source="the stall risk (median first stall; every uncertainty drawn)")
        elif stall["available"]:
            st = sf["stall"]["0.5"]
            stall.update(step=st["step"], interval=st["interval"], level=0.95, cause=sf["cause"],
                         source="the trend fit's first step with P(stall) > 0.5 (the risk is not available)")
        else:
            stall["reason"] = sf.get("reason") or "no cap: a step never raises (the run crawls instead)"
        other = [("ahead: P(stall) at a step", "that step's own chance of stalling on the trend fit alone (a "
                  "point estimate, not P(stall by the step))"),
                 ("P(stall) > q first at step", "the trend fit's first step whose own chance exceeds q"),
                 ("calibrated ...", "the trend fit rescaled to the last rows (a check of the level, not the forecast)"),
                 ("scalars fit beside the groups", "the per-step shares fitted alone (a cross-check)"),
                 SAMPLERS]
    ve = check_expiry(expiry.pop("status"), expiry["threshold"], tail, K, rewards,
                      (d["expiry"].get("alternatives") or []) if scal else [])
    expiry["said"] = ve["said"]
    if not ve["holds"]:
        expiry.update(step=None, interval=[None, None])
    _settle(d, ve, expiry)
    verdicts = [ve]
    if stall.get("cause"):
        vc = check_cause(stall["cause"], tail)
        stall["cause_said"] = vc["said"]
        verdicts.append(vc)
    return {"expiry": expiry, "stall": stall, "verdicts": verdicts, "logged_tail": tail,
            "other": [{"figure": a, "is": b} for a, b in other]}
