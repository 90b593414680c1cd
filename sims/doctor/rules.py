r"""Rules from the field's threads: what a run's record says is wrong, with its evidence and one line of advice.

:func:`fire_rules` returns the rules that fire on a record (and, where given, its diagnosis), each
``{"rule", "title", "evidence", "advice"}`` (plus ``"changes"`` for the cap rule). Every rule reads the record's
own numbers; none fires on a record that cannot show it (a rule that needs each group's rewards is silent on a
record of tracker scalars). The rules:

``all_zero_reward``
    Every reward exactly 0 over at least ``zero_steps`` (:data:`ZERO_STEPS`) consecutive logged steps (a record of
    groups: every scored rollout of each step; a record of scalars: the logged mean reward, and the all-fail share
    1 where it is logged). On a real task some prompt scores now and then; nothing scoring for that long is the
    harness or the verifier (answer extraction, format, a reward function never wired), not the data's difficulty.
``float_ties``
    Groups whose rewards differ only by float noise: spread in (0, :data:`TIE_REL` x max(1, max |r|)], above the
    record's tolerance, so an equality test (std == 0) counts them mixed and a std-normalised advantage turns
    the noise into a signal (OpenRLHF #1270: continuous rewards need a std tolerance, not equality).
``phantom_gradient``
    Dynamic sampling on (some groups dropped, or the record's config says so) and kept groups that are unanimous
    in the correctness score but not in the training reward: the filter looked at the shaped reward, so the step
    trains on the shaping alone (verl-recipe #125: a length-only gradient and a collapse within 40 steps). The
    correctness score is the record's ``correctness`` column, else the reward function whose name says correct /
    acc among several (:data:`CORRECTNESS_NAMES`; TRL's ``rewards_per_func`` as the recorder keeps them).
``loo_split``
    A leave-one-out baseline (RLOO: A_i = r_i - mean of the other rewards of the group) computed over parts of a
    group: the recorded advantages of most groups where it matters equal the leave-one-out over contiguous parts
    (a cut after rollout c, 2 <= c <= K - 2, or equal blocks of a divisor of K; at least :data:`LOO_MIN_GROUPS`
    groups and :data:`LOO_SHARE` of those where the two baselines differ; at most :data:`LOO_MAX_GROUPS` groups are
    checked, evenly spread over the run) and not over the whole group
    (a rollout or micro batch that is not a multiple of K, or a group spread over processes).
``cap_hit``
    The stall forecast says the run will exceed its cap of generation rounds (``max_num_gen_batches`` > 0; a
    finite prompt pool used up within a step is not a cap) within its horizon: the first stall's median (the risk's, else the first cap hit of a scalars fit). The advice
    lists what to change, each with the forecast under the change (:func:`cap_changes`): the cap doubled, twice
    the prompts per round, half the groups a step needs, twice K, and the data's difficulty moved toward the mixed
    prompts by :data:`DIFFICULTY_LOGIT` on the logit scale.

    **The data's difficulty: a modelling assumption.** From the step after the last logged one, the prompts the run
    draws are harder (the cause is all-pass saturation) or easier (all-fail collapse) by
    :data:`DIFFICULTY_LOGIT` = 1 on the logit scale: every prompt's pass rate p under the policy of that step
    becomes expit(logit p -+ 1), its odds of passing divided (multiplied) by e = 2.72, as when the prompt set is
    swapped for, or mixed into, one of that uniform difficulty; the fitted drift then goes on moving every logit as
    before, and prompts never solved or never failed (the masses) stay so. The record cannot show such a set, so
    the figure is the forecast under this assumption, not a measurement. It is forecast where the pass rates are
    modelled on a logit scale: the group path's risk and trend (any link: the shift is applied to the drifted pass
    rates), the scalars fit's logit maps (g t + shift = g (t + shift / g)); not for the scalars power map, nor for
    rewards that are not binary (no pass rates: the tie-share trend), nor where the cause is not identified.

Edge cases: NaN rewards (a function returned None) are left out of a group's spread; a group with fewer than two
scored rollouts has no spread and no advantage check.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..record import RunRecord
from ..scalars_record import is_scalars_only

__all__ = ["RULES", "ZERO_STEPS", "TIE_REL", "LOO_MIN_GROUPS", "CORRECTNESS_NAMES", "DIFFICULTY_LOGIT", "fire_rules",
           "cap_changes", "difficulty_change", "rule_line"]

ZERO_STEPS = 10  #: consecutive steps of nothing but 0 rewards that fire ``all_zero_reward``
TIE_REL = 1e-6  #: a spread at most this (times max(1, max |r|)) is float noise
LOO_MIN_GROUPS = 3  #: groups whose advantages must show the split before ``loo_split`` fires
LOO_MAX_GROUPS = 20_000  #: groups with a spread checked by ``loo_split`` at most (evenly spread over the run)
LOO_SHARE = 0.9  #: ... and this share of the groups where the split's baseline differs from the whole group's
CHANGE_DRAWS = 60  #: parameter draws of each changed forecast (kept cheap: one per change)
DIFFICULTY_LOGIT = 1.0  #: the data's difficulty change cap_hit forecasts: every pass rate's logit moved this much
CORRECTNESS_NAMES = ("correct", "acc", "accuracy", "is_correct")  #: a reward function read as the correctness score

#: rule -> its title (the order the rules are reported in)
RULES = {
    "all_zero_reward": "every reward 0 for many steps",
    "float_ties": "rewards that tie only up to float noise",
    "phantom_gradient": "dynamic sampling filtering on a shaped reward",
    "loo_split": "a leave-one-out baseline that splits groups",
    "cap_hit": "a cap that will be hit",
}


def _rule(rule: str, evidence: str, advice: str, **extra) -> dict:
    return {"rule": rule, "title": RULES[rule], "evidence": evidence, "advice": advice, **extra}


def rule_line(r: dict) -> str:
    """One rule as a line of text (the report's and ``watch``'s)."""
    return f"RULE {r['rule']} ({r['title']}): {r['evidence']} Advice: {r['advice']}"


def _longest_run(steps: np.ndarray, flag: np.ndarray) -> tuple[int, int, int]:
    """(length, first, last) of the longest run of consecutive logged steps with ``flag`` (0, -1, -1 if none)."""
    best, first, cur, start = 0, -1, 0, 0
    for i, f in enumerate(flag):
        cur = cur + 1 if f else 0
        start = i if cur == 1 else start
        if cur > best:
            best, first = cur, start
    return (best, int(steps[first]), int(steps[first + best - 1])) if best else (0, -1, -1)


def _all_zero(record: RunRecord, zero_steps: int) -> dict | None:
    advice = ("check the reward harness or verifier (answer extraction and format, timeouts, the reward function's "
              "wiring) on a few completions by hand before blaming the data's difficulty")
    if is_scalars_only(record):
        st = record.steps or {}
        steps = np.asarray(st.get("step", []), np.int64)
        mean = np.asarray(st.get("reward_mean", np.full(len(steps), np.nan)), float)
        fail = np.asarray(st.get("frac_all_fail", np.full(len(steps), np.nan)), float)
        if len(mean) != len(steps) or len(fail) != len(steps):
            return None
        flag = (mean == 0) & (np.isnan(fail) | (fail == 1))
        n, a, b = _longest_run(steps, flag)
        if n < zero_steps:
            return None
        return _rule("all_zero_reward", f"the logged mean reward is 0 at every one of {n} consecutive steps "
                                        f"({a}-{b}).", advice)
    g = record.groups
    r = np.asarray(g["rewards"], float)
    steps, inv = np.unique(np.asarray(g["step"], np.int64), return_inverse=True)
    scored = np.isfinite(r)
    nonzero = np.bincount(inv, weights=np.any(scored & (r != 0), axis=1), minlength=len(steps)) > 0
    has = np.bincount(inv, weights=scored.any(axis=1), minlength=len(steps)) > 0
    n, a, b = _longest_run(steps, has & ~nonzero)
    if n < zero_steps:
        return None
    m = (np.asarray(g["step"]) >= a) & (np.asarray(g["step"]) <= b)
    return _rule("all_zero_reward", f"every one of the {int(scored[m].sum()):,} scored rollouts ({int(m.sum()):,} "
                                    f"groups) of {n} consecutive steps ({a}-{b}) has reward exactly 0.", advice)


def _spread(r: np.ndarray) -> np.ndarray:
    """max - min per row over the finite entries (NaN for a row with none)."""
    if not np.isnan(r).any():  # the common case, without nan-aware reductions' cost
        return r.max(axis=1) - r.min(axis=1)
    with warnings.catch_warnings():  # all-NaN rows
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmax(r, axis=1) - np.nanmin(r, axis=1)


def _float_ties(record: RunRecord) -> dict | None:
    r = np.asarray(record.groups["rewards"], float)
    if not len(r):
        return None
    spread = _spread(r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        top = max(1.0, float(np.nanmax(np.abs(r))) if np.isfinite(r).any() else 1.0)
    small = np.isfinite(spread) & (spread > record.reward_tolerance) & (spread > 0) & (spread <= TIE_REL * top)
    if not small.any():  # no spread within the largest row's noise: no tie
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scale = np.ones(len(r))
        scale[small] = np.maximum(1.0, np.nanmax(np.abs(r[small]), axis=1))
    tie = small & (spread <= TIE_REL * scale)
    n = int(tie.sum())
    if not n:
        return None
    mixed = int(np.sum(np.isfinite(spread) & (spread > record.reward_tolerance)))
    return _rule("float_ties", f"{n:,} of the {mixed:,} groups counted mixed ({100 * n / max(mixed, 1):.1f}%) have "
                               f"rewards that differ by at most {float(spread[tie].max()):.2g}: float noise, so an "
                               f"equality test (std == 0) keeps them and a std-normalised advantage scales the noise up.",
                 "compare the group's std with a tolerance (e.g. std < 1e-6 counts as zero), not with 0 "
                 "(OpenRLHF #1270); for the doctor, --tolerance")


def _correctness(record: RunRecord) -> tuple[np.ndarray, str] | None:
    g = record.groups
    if g.get("correctness") is not None:
        c = np.asarray(g["correctness"], float)
        if c.shape == np.asarray(g["rewards"]).shape:
            return c, str((record.meta.get("reward") or {}).get("correctness") or "correctness")
    rpf, names = g.get("rewards_per_func"), record.meta.get("reward_funcs") or []
    if rpf is None or len(names) < 2 or np.ndim(rpf) != 3 or np.shape(rpf)[2] != len(names):
        return None
    for j, name in enumerate(names):
        if str(name).lower() in CORRECTNESS_NAMES or str(name).lower().startswith("correct"):
            return np.asarray(rpf, float)[:, :, j], str(name)
    return None


def _filtered(record: RunRecord) -> bool:
    kept = record.groups.get("kept")
    if kept is not None and len(kept) and not np.all(kept):
        return True
    return bool((record.meta.get("config") or {}).get("dynamic_sampling"))


def _phantom(record: RunRecord) -> dict | None:
    if not _filtered(record) or (cs := _correctness(record)) is None:
        return None
    c, name = cs
    r = np.asarray(record.groups["rewards"], float)
    kept = np.asarray(record.groups.get("kept", np.ones(len(r), bool)), bool)
    sc, sr = _spread(c), _spread(r)
    phantom = kept & np.isfinite(sc) & (sc == 0) & np.isfinite(sr) & (sr > record.reward_tolerance)
    n = int(phantom.sum())
    if not n:
        return None
    ap = int(np.sum(phantom & (np.nanmean(np.where(np.isfinite(c), c, np.nan), axis=1) > 0.5)))
    return _rule("phantom_gradient", f"{n:,} of the {int(kept.sum()):,} groups dynamic sampling kept "
                                     f"({100 * n / max(int(kept.sum()), 1):.1f}%) are unanimous in {name!r} "
                                     f"({ap} all-pass, {n - ap} all-fail) and pass the filter only through the "
                                     f"shaping of the training reward: their gradient is the shaping alone.",
                 f"filter on the correctness score ({name!r}; verl: algorithm.filter_groups.metric=acc), the reward "
                 "the loss's signal should come from (verl-recipe #125)")


def _loo(r: np.ndarray) -> np.ndarray:
    """Leave-one-out advantages r_i - mean of the others, per row (rows of >= 2 rewards)."""
    k = r.shape[1]
    return r - (r.sum(axis=1, keepdims=True) - r) / (k - 1)


def _parts(K: int) -> list[list[tuple[int, int]]]:
    """Contiguous partitions of 0..K-1 checked by ``loo_split``: one cut (parts of >= 2), equal blocks."""
    out = [[(0, c), (c, K)] for c in range(2, K - 1)]
    out += [[(i, i + m) for i in range(0, K, m)] for m in range(2, K) if K % m == 0 and m not in (K // 2,)]
    return out


def _loo_split(record: RunRecord) -> dict | None:
    g = record.groups
    r, A = np.asarray(g["rewards"], float), np.asarray(g.get("advantages"), float)
    if A.shape != r.shape or r.ndim != 2 or r.shape[1] < 4:
        return None
    ok = _spread(r) > record.reward_tolerance  # a row with no finite reward: NaN, compares False
    for x in (r, A):  # every rollout scored and its advantage known
        if np.isnan(x).any():
            ok &= ~np.isnan(x).any(axis=1)
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    if len(idx) > LOO_MAX_GROUPS:  # evenly spread over the run: the check's cost stays bounded
        idx = idx[np.linspace(0, len(idx) - 1, LOO_MAX_GROUPS).astype(np.int64)]
    r, A = r[idx], A[idx]
    K = r.shape[1]
    full = _loo(r)
    whole = np.all(np.isclose(A, full, rtol=1e-5, atol=1e-6), axis=1)
    best, best_parts, best_n = 0, None, 0
    for parts in _parts(K):
        split = np.concatenate([_loo(r[:, a:b]) for a, b in parts], axis=1)
        differ = ~np.all(np.isclose(split, full, rtol=1e-5, atol=1e-6), axis=1)
        hit = np.all(np.isclose(A, split, rtol=1e-5, atol=1e-6), axis=1) & differ
        if int(hit.sum()) >= LOO_MIN_GROUPS and hit.sum() >= LOO_SHARE * differ.sum() and int(hit.sum()) > best:
            best, best_parts, best_n = int(hit.sum()), parts, int(differ.sum())
    if not best:
        return None
    sizes = "+".join(str(b - a) for a, b in best_parts)
    return _rule("loo_split", f"the advantages of {best:,} of the {best_n:,} groups where it differs from the whole "
                              f"group's equal a leave-one-out baseline over parts of {sizes} rollouts, not over the "
                              f"whole group of {K} ({int(whole.sum())} of {len(r):,} groups with a spread match the "
                              "whole group).",
                 f"give each group's {K} rollouts one baseline: make the rollout and micro batches a multiple of K "
                 "and keep a group on one process")


def _stall_median(result: dict) -> tuple[float | None, dict | None]:
    sf = result.get("stall_forecast") or {}
    if not sf.get("available"):
        return None, None
    risk = sf.get("risk") or {}
    if risk.get("available"):
        return risk["first_stall"]["median"], sf
    hit = sf.get("first_cap_hit") or {}
    return hit.get("median"), sf


def difficulty_change(result: dict, cause: str | None) -> tuple[str, float | None, str | None]:
    """(what, logit shift, why not): the data's difficulty change of the module docstring for a stall of ``cause``;
    the shift None (with the reason) where it is not forecast."""
    what = "the data's difficulty moved toward the mixed prompts"
    if not cause or not cause.startswith(("all-pass", "all-fail")):
        return what, None, "not forecast: the stall's cause is not identified, so neither direction is known"
    harder = cause.startswith("all-pass")
    what = (f"harder prompts (every pass rate's logit {'-' if harder else '+'}{DIFFICULTY_LOGIT:g}, its odds "
            f"{'/' if harder else 'x'} {math.exp(DIFFICULTY_LOGIT):.2f}; an assumed set, see the rule's docs)"
            if harder else f"easier prompts (every pass rate's logit +{DIFFICULTY_LOGIT:g}, its odds x "
            f"{math.exp(DIFFICULTY_LOGIT):.2f}; an assumed set, see the rule's docs)")
    if result.get("scalars_only"):
        if result.get("tie_fit"):
            return what, None, "not forecast: the rewards are not binary (no pass rates to move)"
        f = result["fit"]  # the measured drift's shapes take the shift on either link (its table moves every logit)
        if f.get("source") != "drift shapes" and (f["model"] not in ("logit", "logit_stuck")
                                                  or not float(f["theta"][2])):
            return what, None, "not forecast: the fitted drift is not on the logit scale (the power map)"
    return what, -DIFFICULTY_LOGIT if harder else DIFFICULTY_LOGIT, None


def cap_changes(record: RunRecord, result: dict, tolerance: float | None = None) -> list[dict]:
    """The stall forecast under each change of :data:`RULES`' ``cap_hit`` (``{change, settings, first_stall}``;
    None = no stall within the horizon; ``note`` where a change is not forecast): the record's fit kept, the
    trainer's settings changed, or the data's difficulty (:func:`difficulty_change`, ``settings['logit_shift']``);
    ``tolerance`` as the diagnosis read the groups (:func:`.groups.run_groups`)."""
    sf = result["stall_forecast"]
    s = sf["settings"]
    changes = [("cap doubled", {"cap": 2 * s["cap"]}),
               ("twice the prompts per round (gen batch)", {"gen_batch": 2 * s["gen_batch"]}),
               ("half the groups a step needs (train batch)", {"train_batch": max(1, s["train_batch"] // 2)}),
               ("twice K (rollouts per prompt)", {"K": 2 * s["K"]})]
    what, shift, why = difficulty_change(result, sf.get("cause"))
    changes.append((what, {"logit_shift": shift}))
    out = []
    for what, delta in changes:
        new = {k: v for k, v in {**s, **delta}.items() if k not in ("cap_effective",)}
        row = {"change": what, "settings": {**{k: new[k] for k in ("gen_batch", "train_batch", "cap", "K")},
                                            "logit_shift": new.get("logit_shift") or 0.0}}
        if "logit_shift" in delta and shift is None:
            row.update(first_stall=None, note=why)
        else:
            row["first_stall"] = _changed_stall(record, result, new, tolerance)
        out.append(row)
    return out


def _changed_stall(record: RunRecord, result: dict, settings: dict, tolerance: float | None) -> float | None:
    if result.get("scalars_only"):
        from .scalars_forecast import stall_forecast

        if (result["stall_forecast"].get("risk") or {}).get("available"):  # the risk the diagnosis said (drawn at
            from .drift_shares import changed_first_stall  # the changed K: the population is K-free)

            return changed_first_stall(record, result, settings)
        fit = result.get("tie_fit") or result["fit"]  # the fit the diagnosis's own stall forecast used
        if fit.get("source") == "drift shapes":  # no risk over the horizon (past its steps): the same drift's futures
            from .shares_fit import changed_cap_hit

            return changed_cap_hit(record, result, settings, CHANGE_DRAWS)
        shift = settings.pop("logit_shift", None)
        if shift:
            fit = {**fit, "logit_shift": shift}
        sf = stall_forecast(fit, settings, n_draws=CHANGE_DRAWS)
        return (sf.get("first_cap_hit") or {}).get("median")
    from .groups import run_groups
    from .stall import stall_forecast as group_stall

    groups = run_groups(record, tolerance)
    sf = group_stall(groups, settings)
    if (sf.get("risk") or {}).get("available"):
        return sf["risk"]["first_stall"]["median"]
    return sf["stall"]["0.5"]["step"] if sf.get("available") else None


def _cap_hit(record: RunRecord, result: dict | None, tolerance: float | None = None) -> dict | None:
    if not result:
        return None
    median, sf = _stall_median(result)
    if median is None or not sf["settings"].get("cap"):  # a stall of a finite pool used up is not a cap's
        return None
    s = sf["settings"]
    last = sf["now"]["step"]
    changes = cap_changes(record, result, tolerance)
    said = "; ".join(f"{c['change']}: " + (c["note"] if c.get("note") else "no stall within the horizon"
                                            if c["first_stall"] is None else f"step {c['first_stall']:.0f}")
                     for c in changes)
    return _rule("cap_hit", f"the run is forecast to exceed its cap of {s['cap']} generation rounds near step "
                            f"{median:.0f} ({median - last:.0f} steps after the last logged, {last}; cause "
                            f"{sf.get('cause') or 'not identified'}).",
                 f"change before then what costs least: {said}", changes=changes)


def fire_rules(record: RunRecord, result: dict | None = None, *, zero_steps: int = ZERO_STEPS,
               tolerance: float | None = None) -> list[dict]:
    """The rules that fire on ``record`` (its diagnosis ``result`` for the cap rule; None: that rule is skipped),
    in :data:`RULES`' order (see the module docstring); ``tolerance``: the reward tolerance the diagnosis used."""
    out = [_all_zero(record, zero_steps)]
    if not is_scalars_only(record) and len(record.groups.get("rewards", [])):
        out += [_float_ties(record), _phantom(record), _loo_split(record)]
    out.append(_cap_hit(record, result, tolerance))
    return [r for r in out if r is not None]
