r"""The per-step shares' likelihood on the group path's grid of shifts: a tracker log as evidence for :mod:`.drift`.

A tracker log (tinker's ``metrics.jsonl``, W&B, TensorBoard, TRL's ``trainer_state``) holds per step the shares
of all-pass / all-fail / mixed groups (or some of them), the mean reward and, for verl, the generation rounds;
not the groups. Under :mod:`.drift`'s model (prompts' pass rates at the first step p ~ [masses +] Beta(a, b),
every prompt's link moved by the same shift h(s)) a step's groups are independent draws from the group pmf
P(k | h) (:func:`.drift.population_table`), so the likelihood of a step's logged scalars at shift h is the one
:mod:`.scalars_fit` writes (its module docstring), with the class probabilities and a group's success moments
read off that pmf:

* **classes**: pi_pass(h) = P(K | h), pi_fail(h) = P(0 | h), the mixed share u(h) = 1 - pi_pass - pi_fail; the
  step's shares times its groups are counts n_c of a multinomial over the classes its shares resolve
  (all-pass / all-fail / mixed, unanimous / mixed, one share / the rest: the masks of scalars_fit's kinds),
  sum_c n_c log pi_c(h);
* **mean reward** (where it is a pass rate): the step's total successes Y given the counts ~
  Normal(sum_c n_c E[S | c], sum_c n_c Var(S | c) + Y_FLOOR), with E[S 1_pass] = K pi_pass,
  E[S^2 1_pass] = K^2 pi_pass, E[S 1_mixed] = sum_{0<k<K} k P(k | h), E[S^2 1_mixed] = sum_{0<k<K} k^2 P(k | h);
* **rounds** (a row that logs no share but verl's ``train/num_gen_batches``): w log P(R = r | u(h))
  (:func:`.drift.rounds_logp`, the one rounds likelihood; w the rows pooled into it).

That tabulated on :data:`.drift.H_GRID` is the per-step ``LL[s, h]`` of the group path, and everything after it is
the group path's, unchanged: the population (a, b) and the masses variant fitted jointly with a nuisance linear
shift (:func:`.drift.fit_population`), the per-step shifts, the five drift shapes (linear, power, plateau, walk,
jump), the leave-future-out chooser over (variant, shape) pairs (:func:`.drift.model_weights`) and the stall risk
(:func:`.stall_risk.stall_risk`: every uncertainty drawn, the first stall's 90% interval). :class:`ShareEvidence`
is what those functions take as ``counts``: its ``loglik(table)`` is the table above (:func:`.drift.step_loglik`
calls it), ``shape`` is (rows, K + 1) and ``sum(axis=0)`` pseudo group counts by successes (for the population's
starting point only: the all-fail and all-pass counts at k = 0 and K, the mixed spread evenly over 0 < k < K,
an unresolved unanimous count split in half).

Named deviations from :mod:`.scalars_fit`: the Beta is represented by :data:`.drift.NODES` quantile nodes, not
scalars_fit's cell integration (the group path's approximation; it moves a share by well under its sampling
noise at a few hundred groups a step); the drift is a shape of h, not a map of t; rows are pooled as
scalars_fit pools them, but to at most :data:`POOL_ROWS` (the mean reward's normal factor is then the pooled
rows' sum's, a little less information than the product of theirs), and then binned as the group path bins
steps (:func:`.drift.step_bins`). A log most of whose rows give the mixed share only (the zero-std share alone, the
rounds alone) identifies the mixed share only: the population's side and the drift's sign are then not identified
(the cause is said so), each row's likelihood in h has two mirror modes, and :mod:`.drift` measures each bin's
shift on one branch, bins of at least :data:`MIXED_BIN_GROUPS` groups (its "Mixed share only";
:data:`MIXED_ONLY_SHAPES`, or the ``mixed_only_shapes`` argument, False keeps such a log on the drift maps).
"""

from __future__ import annotations

import numpy as np

from .drift import MAX_POINTS, measure_drift, rounds_logpmf
from .scalars_fit import _EPS, Y_FLOOR, StepShares, _prepare, _resolve, class_moments

__all__ = ["POOL_ROWS", "RISK_MAX_STEPS", "PHI_ROWS", "ShareEvidence", "shares_evidence", "shares_drift", "sided",
           "observed_mixed", "logged_rows", "shares_expiry", "shares_risk", "with_risk", "changed_first_stall",
           "MIXED_ONLY", "MIXED_ONLY_SHAPES", "MIXED_BIN_GROUPS", "MIXED_MIN_POINTS", "on_shapes"]

#: rows beyond which consecutive rows are pooled: twice the group path's bins (:data:`.drift.MAX_POINTS`), within
#: which the shift is taken as constant anyway, so the class counts' multinomial is unchanged by the pooling
POOL_ROWS = 2 * MAX_POINTS
#: future steps the risk reaches at most: its grid costs the log of the horizon (:mod:`.risk_blocks`; was 20,000 when
#: every draw was a path over every future step), so this bounds only a step column gone astray (10 run lengths of a
#: 100,000,000-step log); a longer horizon keeps the stall forecast's first step over the cap (:func:`shares_risk`
#: says so; the same drift's on a sided log, :func:`.shares_fit.drift_stall_forecast`)
RISK_MAX_STEPS = 1_000_000_000
#: logged rows the predictive band's over-dispersion is measured on at most (evenly spread beyond)
PHI_ROWS = 4096
#: why a log most of whose rows give the mixed share only keeps the drift map, where it is kept on the maps
#: (:func:`on_shapes` False)
MIXED_ONLY = ("most rows give the mixed share only (the zero-std share or the rounds) and this diagnosis keeps such logs "
              "on the drift maps (mixed_only_shapes False): a shift h and its mirror give the same mixed share")


#: the groups a bin of a log of the mixed share only pools at least (:class:`ShareEvidence`'s ``points``): one row's
#: mixed share barely moves with h near its peak (its two mirror modes merge there), so a row of 64 groups measures
#: its shift poorly and the measurement cut at the peak is pushed off it; five of the stall study's rows (64 groups
#: each) a bin held the first stall in 9 of 9 zero-std-only loops, one or three rows a bin in fewer (docs/doctor.md)
MIXED_BIN_GROUPS = 320
MIXED_MIN_POINTS = 8  #: bins of a log of the mixed share only at least (fewer rows: one a bin)
#: a log most of whose rows give the mixed share only is measured on the drift shapes too, each step's shift on one
#: mirror branch (:func:`.drift.shift_estimates`' ``fold``); False: such a log keeps the drift maps (:data:`MIXED_ONLY`)
MIXED_ONLY_SHAPES = True


class ShareEvidence:
    """The per-step shares of a run (:func:`.scalars_fit._prepare`'s rows) as :mod:`.drift` evidence (module
    docstring). ``rows``: the prepared rows (``counts`` (rows, 3) over the kinds' classes, ``masks``, ``y`` /
    ``y_on`` the total successes where the mean reward is used, ``r`` / ``r_on`` / ``r_rows`` the rounds, ``B`` /
    ``T`` their batch sizes, ``step``, ``kind``)."""

    def __init__(self, rows: dict, K: int):
        self.P, self.K = rows, int(K)
        self.step = np.asarray(rows["step"])
        self.shape = (len(self.step), self.K + 1)
        #: most rows resolve the mixed share only: :func:`.drift.shift_estimates` measures each on one mirror branch
        self.mixed_only = not sided(self)
        #: the bins :func:`.drift.measure_drift` pools the rows into (:func:`.drift.step_bins`): the group path's
        #: :data:`.drift.MAX_POINTS`, or for a log of the mixed share only bins of at least :data:`MIXED_BIN_GROUPS`
        #: groups (no fewer than :data:`MIXED_MIN_POINTS`)
        groups = float(np.nansum(rows["n"]))
        self.points = MAX_POINTS if not self.mixed_only else int(np.clip(groups // MIXED_BIN_GROUPS, MIXED_MIN_POINTS,
                                                                         MAX_POINTS))

    def sum(self, axis: int = 0) -> np.ndarray:
        """Pseudo group counts by successes (K + 1,) over every row (module docstring; a starting point only)."""
        c = self.P["counts"]
        kind = self.P["kind"]
        out = np.zeros(self.K + 1)
        tri = kind == "trinomial"
        out[self.K] += c[tri, 0].sum() + c[kind == "all_pass", 0].sum() + 0.5 * c[kind == "unanimous", 0].sum()
        out[0] += c[tri, 1].sum() + c[kind == "all_fail", 0].sum() + 0.5 * c[kind == "unanimous", 0].sum()
        mixed = c[tri, 2].sum() + c[kind == "unanimous", 1].sum() + 0.5 * c[np.isin(kind, ["all_pass", "all_fail"]),
                                                                             1].sum()
        out[1:self.K] += mixed / max(self.K - 1, 1)
        if not out.sum():  # rounds (or a mean) alone: a flat start
            out[:] = 1.0
        return out

    def loglik(self, table: dict) -> np.ndarray:
        """``LL`` (rows, len(table's grid)) of every row at each shift of ``table`` (module docstring)."""
        P, K = self.P, self.K
        pmf = table["pmf"]  # (H, K + 1)
        atoms = np.stack([pmf[:, K], pmf[:, 0], np.clip(table["u"], 0.0, 1.0)], 1)  # (H, 3): pass, fail, mixed
        cls = np.einsum("sca,ha->sch", P["masks"], atoms)  # (rows, 3, H)
        n = P["counts"][:, :, None]
        LL = np.sum(np.where(n > 0, n * np.log(np.maximum(cls, _EPS)), 0.0), axis=1)
        y_on = P["y_on"]
        if y_on.any():
            k = np.arange(K + 1, dtype=float)
            mid = pmf[:, 1:K]
            m1 = np.stack([K * atoms[:, 0], np.zeros(len(pmf)), mid @ k[1:K]], 1)  # E[S 1_c] per atom, (H, 3)
            m2 = np.stack([K * K * atoms[:, 0], np.zeros(len(pmf)), mid @ (k[1:K] ** 2)], 1)  # E[S^2 1_c]
            M = P["masks"][y_on]
            mu, var = class_moments(np.einsum("sca,ha->sch", M, m1), np.einsum("sca,ha->sch", M, m2), cls[y_on])
            nc = n[y_on]
            mean = np.sum(nc * mu, axis=1)
            v = np.sum(nc * var, axis=1) + Y_FLOOR
            LL[y_on] += -0.5 * np.log(2 * np.pi * v) - 0.5 * (P["y"][y_on, None] - mean) ** 2 / v
        r_on = P["r_on"]
        if r_on.any():
            LL[r_on] += P["r_rows"][r_on, None] * rounds_logpmf(P["r"][r_on], atoms[:, 2], P["B"], P["T"])
        return LL


def shares_evidence(d: StepShares) -> ShareEvidence:
    """:class:`ShareEvidence` of a run's per-step shares: more than :data:`POOL_ROWS` usable rows are pooled as
    :mod:`.scalars_fit` pools them (:func:`.scalars_fit._pool`: consecutive rows of one kind, their counts and
    successes summed); raises its InputError where fewer than :data:`.scalars_fit.MIN_STEPS` rows are usable."""
    return ShareEvidence(_prepare(d, max_rows=POOL_ROWS), d.K)


def sided(ev: ShareEvidence) -> bool:
    """More than half the rows tell the all-pass side from the all-fail side (all three shares, one of the two
    sides, or the mean reward): each step's shift is measured whole; otherwise on one mirror branch
    (:attr:`ShareEvidence.mixed_only`, :mod:`.drift`'s "Mixed share only")."""
    s = np.isin(ev.P["kind"], ["trinomial", "all_pass", "all_fail", "mean_only"]) | ev.P["y_on"]
    return bool(np.mean(s) > 0.5)


def on_shapes(ev: ShareEvidence, mixed_only_shapes: bool | None = None) -> bool:
    """The log's drift is measured on the drift shapes: its rows mostly give a side (:func:`sided`), or they give the
    mixed share only and ``mixed_only_shapes`` (default :data:`MIXED_ONLY_SHAPES`) brings them over."""
    return sided(ev) or bool(MIXED_ONLY_SHAPES if mixed_only_shapes is None else mixed_only_shapes)


def observed_mixed(d: StepShares) -> np.ndarray:
    """The logged mixed share per row of ``d`` (NaN where the row does not resolve it)."""
    kind, counts, _, _, _ = _resolve(d)
    n = np.where(np.isfinite(d.n) & (d.n > 0), d.n, np.nan)
    return np.where(kind == "trinomial", counts[:, 2] / n, np.where(kind == "unanimous", counts[:, 1] / n, np.nan))


def logged_rows(d: StepShares, max_rows: int = PHI_ROWS) -> dict:
    """``{"step", "mixed", "groups"}`` of the rows of ``d`` that log the mixed share and their groups (at most
    ``max_rows``, evenly spread): what a predictive band's over-dispersion is measured on (:mod:`.drift_expiry`)."""
    obs = observed_mixed(d)
    i = np.flatnonzero(np.isfinite(obs) & np.isfinite(d.n) & (d.n > 0))
    i = i[np.unique(np.linspace(0, len(i) - 1, max_rows).astype(int))] if len(i) > max_rows else i
    return {"step": d.step[i].astype(float), "mixed": obs[i], "groups": d.n[i]}


def shares_expiry(d: StepShares, threshold: float, measured: tuple | None = None, predictive: bool = True,
                  seed: int = 0, draws: int | None = None, keep_draws: bool = False,
                  mixed_only_shapes: bool | None = None) -> dict | None:
    """The expiry of a scalars-only run and its predictive band from the shares' measured drift
    (:func:`.drift_expiry.drift_expiry`: the chooser's shapes drawn, the same futures the stall risk draws), on
    :func:`.scalars_forecast.future_grid` of the pooled rows' span, a future row of the median logged groups.
    ``measured``: a :func:`shares_drift` result to reuse. None where the log is not measured on the shapes
    (:func:`on_shapes` with ``mixed_only_shapes``: the caller keeps the drift map's expiry, saying
    :data:`MIXED_ONLY`). ``keep_draws``: the drawn mixed share too (:func:`.drift_expiry.drift_expiry`'s ``draws``)."""
    from .drift_expiry import drift_expiry
    from .scalars_forecast import future_grid
    from .stall_risk import DRAWS

    ev = measured[0] if measured is not None else shares_evidence(d)
    if not on_shapes(ev, mixed_only_shapes):
        return None
    ev, dr = measured if measured is not None else (ev, measure_drift(ev, ev.step, d.K, False))
    grid = future_grid({"steps": (int(ev.step[0]), int(ev.step[-1]))})
    n = d.n[np.isfinite(d.n) & (d.n > 0)]
    return drift_expiry(dr, ev, grid, threshold, logged_rows(d), float(np.median(n)), draws or DRAWS, seed,
                        predictive, keep_draws=keep_draws)


def shares_drift(d: StepShares, ev: ShareEvidence | None = None) -> tuple[ShareEvidence, dict]:
    """(evidence, :func:`.drift.measure_drift` of it): the population, per-step shifts, shapes and their weights
    of a scalars-only run, as the group path measures a record's groups (``ev``: its evidence, if built)."""
    ev = shares_evidence(d) if ev is None else ev
    return ev, measure_drift(ev, ev.step, d.K, False)


def shares_risk(d: StepShares, settings: dict, horizon_step: int, n_prompts: int | None = None, seed: int = 0,
                draws: int | None = None, measured: tuple | None = None, mixed_only_shapes: bool | None = None) -> dict:
    """The stall risk of a scalars-only run (:func:`.stall_risk.stall_risk` on the shares' drift): the first
    stall's median, its 90% interval and P(stall by ``horizon_step``), every uncertainty drawn. ``settings``: the
    trainer's (``gen_batch``, ``train_batch``, ``cap`` or ``cap_effective``, ``pool``); ``n_prompts``: the prompt
    set's size where known (its finite-population correction; None: fresh prompts). ``measured``: a
    :func:`shares_drift` result to reuse. ``{"available": False, "reason"}`` without a cap. Where the log
    resolves the mixed share only (the zero-std share, the rounds), ``cause`` is "not identified" (each bin's
    shift measured on one mirror branch, :mod:`.drift`'s "Mixed share only"). Not available, with the reason: a
    horizon more than :data:`RISK_MAX_STEPS` past the last row; a log most of whose rows give the mixed share only
    where ``mixed_only_shapes`` (default :data:`MIXED_ONLY_SHAPES`) keeps it on the drift maps. Measured before the
    branch: on verl's rounds-only fixture the shapes put the stall past step 613 for a run that raised at 167, on the
    study's loops logging the zero-std share alone no stall within 600 in 9 of 9 seeds for stalls at 98-200; on one
    branch, docs/doctor.md ("Mixed share only on the drift shapes")."""
    from .scalars_forecast import NO_SIDE
    from .stall_risk import DRAWS, stall_risk

    cap = settings.get("cap_effective") or settings.get("cap")
    if not cap:
        return {"available": False, "reason": "no cap: a step never raises (the run crawls instead)"}
    ahead = int(horizon_step) - int(measured[0].step[-1] if measured is not None else np.max(d.step))
    if ahead > RISK_MAX_STEPS:
        return {"available": False, "reason": f"the horizon spans {ahead:,} future steps, over the {RISK_MAX_STEPS:,} "
                "the risk reaches: the stall forecast's first step over the cap is the forecast (on a sided log the "
                "same drift's drawn mixed share)"}
    ev = measured[0] if measured is not None else shares_evidence(d)
    if not on_shapes(ev, mixed_only_shapes):
        return {"available": False, "reason": f"{MIXED_ONLY}; the drift map's first step over the cap is the forecast"}
    ev, dr = measured if measured is not None else (ev, measure_drift(ev, ev.step, d.K, False))
    st = {**settings, "cap_effective": int(cap)}
    out = stall_risk(dr, ev, st, n_prompts, int(horizon_step), False, None, draws or DRAWS, seed)
    split = bool(np.isin(ev.P["kind"], ["trinomial", "all_pass", "all_fail"]).any() or ev.P["y_on"].any())
    if not split and out.get("cause"):
        out["cause"] = NO_SIDE
        out["cause_share_all_fail"] = None
    out["evidence"] = "per-step shares"
    return out


def with_risk(sf: dict, d: StepShares, n_prompts: int | None = None, seed: int = 0,
              measured: tuple | None = None, mixed_only_shapes: bool | None = None) -> dict:
    """``sf`` (a :func:`.scalars_forecast.stall_forecast` of ``d``'s fit) with ``risk``: :func:`shares_risk` over the
    same horizon, where the forecast is available and the trainer has a cap (the first stall every surface says,
    :func:`.when.scalars_stall`); ``sf`` unchanged otherwise. The drift map's first cap hit stays beside it."""
    if not sf.get("available") or not sf["settings"].get("cap"):
        return sf
    return {**sf, "risk": shares_risk(d, sf["settings"], int(sf["horizon_step"]), n_prompts, seed,
                                      measured=measured, mixed_only_shapes=mixed_only_shapes)}


def changed_first_stall(record, result: dict, settings: dict, draws: int | None = None) -> float | None:
    """The median first stall of a scalars-only diagnosis ``result`` of ``record`` with the trainer's ``settings``
    changed (:func:`.rules.cap_changes`; ``logit_shift``: the data's difficulty moved), by the risk the diagnosis
    said (:func:`shares_risk`): the shares' drift measured once per record, the risk redrawn per change; a change of
    K draws the future's groups at the new K (:func:`.stall_risk.stall_risk`'s ``K_ahead``: the population is
    K-free, the likelihood keeps the logged K)."""
    from .scalars_fit import step_shares

    K = int(result["run"]["K"])
    d = step_shares(record, num_generations=K, groups_per_step=int(round(result["run"]["groups_per_step"])),
                    settings=result["stall_forecast"].get("settings"))
    ev, dr = shares_drift(d)  # measured once for all the changes (and the diagnosis's own risk, rows alike)
    r = shares_risk(None, settings, int(result["stall_forecast"]["horizon_step"]),
                    int(result["run"].get("prompts") or 0) or None, draws=draws, measured=(ev, dr))
    return r["first_stall"]["median"] if r.get("available") else None
