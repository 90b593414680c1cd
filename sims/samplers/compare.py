r"""Samplers side by side on one population at an equal rollout budget, and when each expires.

:func:`compare` evaluates every sampler of :data:`SAMPLERS` on per-prompt pass rates p_x (the
population at training progress t under :mod:`grpo_lab.sims.decay`: p_x(t) = p0_x ** (1 / (1 + g t)))
with the budget R = E N K (:mod:`.closed`, :mod:`.simulate`). Per sampler:

``useful_per_1000``       useful groups trained on per 1,000 rollouts generated
``rollouts_per_useful``   1000 / useful_per_1000; inf where **no useful group is expected** within the budget
                          (the row's useful groups expected from all its rollouts, useful_per_1000 x rollouts / 1000,
                          below one: a rate of an event not expected once in the budget, e.g. DAPO on a saturated
                          population, where every capped step stalls; ``no_useful`` then says so in words); NaN
                          where the sampler generates nothing (a band no prompt falls in)
``never_trained``         share of the N prompts with no trained-on useful group within the budget
``rate``                  useful groups per K rollouts, K useful_per_1000 / 1000: for plain GRPO the
                          effective group rate 1 - D_real, the quantity the doctor's forecast watches
``expiry_t``              the first progress t in [0, :data:`HORIZON`] at which ``rate`` falls below the
                          threshold (default the doctor's 0.5), by a bracketing search (:func:`expiry`) to :data:`EXPIRY_TOL` on
                          the population's quantile sketch (:func:`sketch`); None when it stays above
                          up to the horizon, 0 when it is already below at t = 0. Past t = 1 the decay
                          model is continued as written, p0 ** (1 / (1 + g t)) (= decay.pass_rate_at
                          (p0, 1, g t)), as the doctor's forecast looks several run lengths ahead. None for
                          every sampler where the threshold is one K cannot reach: no sampler's rate exceeds
                          1 - 2^(1 - K) (each group is mixed with at most that chance, at p = 1/2), so at K = 2 a
                          threshold of 0.5 would read "already below" for all; ``settings["expiry_unreachable"]``
                          then says why in words
``mc_se``                 {figure: Monte Carlo standard error} of the figures that are simulated (retirement's and
                          GRESO's useful_per_1000 and never_trained, DAPO's never_trained: the spread of ``reps``
                          runs over sqrt(reps); NaN with one run); empty for closed forms
``expiry_shift``          expiry_t minus plain GRPO's (progress units; > 0: expires later), and
                          ``expiry_shift_steps`` = shift x ``steps`` when a run length is given

Closed forms for plain, band, PODS, Knapsack and DAPO's rates (its never-trained share is simulated);
a simulation (mean of ``reps`` runs, common random
numbers so that the bisection sees a deterministic function of t) for retirement and GRESO.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .. import decay
from .._checks import as_group_size, as_prob, band as check_band, positive
from ..errors import InputError
from ..outcomes import max_useful
from . import closed, simulate

__all__ = ["SAMPLERS", "DEFAULTS", "compare", "sketch", "beta_pass_rates", "at_progress", "expiry", "expiries", "unreachable", "HORIZON", "EXPIRY_TOL", "SKETCH_POINTS",
           "Z95", "mc_interval", "ORACLES"]

EXPIRY_TOL = 0.002  #: the expiry search stops when its bracket in t is this narrow
HORIZON = 10.0  #: the expiry is searched up to this progress (t = 1: the lab's end of training)
Z95 = 1.959963984540054  #: the normal 97.5% quantile: a simulated figure's 95% interval is value +/- Z95 x mc_se
SKETCH_POINTS = 600  #: order statistics of the population that the expiry search runs on
MAX_PROMPTS = 100_000  #: the most prompts a comparison takes

#: key -> (label, what trainers call it)
SAMPLERS = {
    "plain": ("plain GRPO", "TRL GRPOTrainer; verl algorithm.adv_estimator=grpo"),
    "dapo": ("DAPO dynamic sampling", "verl algorithm.filter_groups.enable=True, .max_num_gen_batches, "
                                      "data.gen_batch_size"),
    "band": ("pass-rate band", "a difficulty filter on the pass rate (oracle)"),
    "retire": ("retire after N all-pass", "ScaleRL no-positive-resampling; the doctor's retire list"),
    "greso": ("GRESO skipping", "GRESO pre-rollout filter, fixed exploration probability"),
    "knapsack": ("Knapsack allocation", "Knapsack RL budget allocation of K per prompt"),
    "pods": ("PODS down-sampling", "PODS: generate n, train on the K of max variance"),
}

#: every parameter's default, declared once (the command line, the doctor and the lab read these)
DEFAULTS = {"epochs": 4.0, "threshold": 0.5, "batch": 32, "gen_batch": 32, "max_num_gen_batches": 10,
            "scheme": "rounds", "inflight": 1,
            "band": (0.2, 0.8), "n_retire": 3, "p_easy": 0.5, "p_hard": 0.5, "pods_factor": 2, "k_max_factor": 2,
            "reps": 0, "seed": 0}  # reps 0: auto_reps(N)

#: samplers that read what no trainer knows (the band reads each prompt's true pass rate): their figures are a bound
ORACLES = frozenset({"band"})

SIM_VISITS = 8000  #: the simulated samplers average enough runs for about this many prompts (auto_reps) ...
MAX_REPS = 4  #: ... and never more runs than this


def auto_reps(n_prompts: int) -> int:
    """Simulated runs averaged for N prompts: round(SIM_VISITS / N), between 1 and MAX_REPS (a run of 20,000
    prompts already pins the shares to about 0.001)."""
    return int(min(MAX_REPS, max(1, round(SIM_VISITS / n_prompts))))


def mc_interval(value, se) -> tuple[float, float] | None:
    """The 95% Monte Carlo interval of a simulated figure, ``value`` +/- :data:`Z95` x ``se`` (its ``mc_se``);
    None where either is missing or not finite."""
    if se is None or value is None or not np.isfinite(value) or not np.isfinite(se):
        return None
    return float(value - Z95 * se), float(value + Z95 * se)


def beta_pass_rates(population, n: int) -> np.ndarray:
    """n mid-quantile pass rates of a Beta ``(alpha, beta)`` or a mixture ``[(w, alpha, beta), ...]``
    (each component gets round(w n) points, at least one): a deterministic stand-in for a fitted population."""
    comps = [(1.0, *population)] if len(population) == 2 and np.isscalar(population[0]) else population
    total = sum(float(w) for w, _, _ in comps)
    parts = []
    for w, a, b in comps:
        m = max(1, int(round(n * float(w) / total)))
        parts.append(stats.beta.ppf((np.arange(m) + 0.5) / m, float(a), float(b)))
    return np.clip(np.concatenate(parts), 0.0, 1.0)


def sketch(p: np.ndarray, points: int = SKETCH_POINTS) -> np.ndarray:
    """The population's mid-quantile order statistics (all of it when it has no more than ``points``)."""
    if p.size <= points:
        return p
    q = np.sort(p)
    return q[((np.arange(points) + 0.5) * p.size / points).astype(int)]


def _one(name: str, p: np.ndarray, K: int, o: dict, reps: int) -> dict:
    """One sampler on pass rates p (``reps`` simulated runs where it is simulated)."""
    lo, hi = o["band"]
    if name == "plain":
        return closed.plain(p, K, o["epochs"])
    if name == "dapo":
        return closed.dapo(p, K, o["epochs"], o["batch"], o["gen_batch"], o["max_num_gen_batches"], o["scheme"],
                           o["inflight"])
    if name == "band":
        return closed.band(p, K, o["epochs"], lo, hi)
    if name == "retire":
        return simulate.retirement(p, K, o["epochs"], o["n_retire"], reps, o["seed"])
    if name == "greso":
        return simulate.greso(p, K, o["epochs"], o["p_easy"], o["p_hard"], reps, o["seed"])
    if name == "knapsack":
        return closed.knapsack(p, K, o["epochs"], o["k_max_factor"] * K)
    return closed.pods(p, K, o["epochs"], o["pods_factor"] * K)


def _evaluate(p: np.ndarray, K: int, o: dict) -> dict:
    res = {name: _one(name, p, K, o, o["reps"]) for name in SAMPLERS}
    res["dapo"]["never_trained"], res["dapo"]["never_trained_se"] = simulate.dapo_never_trained(
        p, K, o["epochs"], o["batch"], o["gen_batch"], o["max_num_gen_batches"], o["reps"], o["seed"])
    return res


def _rate(res: dict, K: int) -> float:
    v = res["useful_per_1000"] * K / closed.PER_ROLLOUTS
    return v if np.isfinite(v) else 0.0


def at_progress(p0: np.ndarray, t: float, gain: float) -> np.ndarray:
    """p0 ** (1 / (1 + g t)) for any t >= 0: :func:`grpo_lab.sims.decay.pass_rate_at` at t = 1 with gain g t."""
    return decay.pass_rate_at(p0, 1.0, gain * t) if t > 1 else decay.pass_rate_at(p0, t, gain)


def expiry(name: str, p0: np.ndarray, K: int, o: dict, gain: float) -> float | None:
    """First t in [0, HORIZON] with the sampler's rate below o["threshold"] (see the module docstring):
    the Illinois variant of regula falsi on the bracket, stopped when the bracket is narrower than EXPIRY_TOL
    or two successive steps lie within EXPIRY_TOL / 2 of each other (the rate is smooth in t; a bracketing method, so it
    converges for the simulated samplers too, whose rate is a fixed function of t under common random numbers)."""
    thr = o["threshold"]
    g = lambda t: _rate(_one(name, at_progress(p0, t, gain), K, o, 1), K) - thr  # noqa: E731
    lo, hi = 0.0, HORIZON
    glo, ghi = g(lo), g(hi)
    if glo < 0:
        return 0.0
    if ghi >= 0:
        return None
    side, last = 0, None
    while hi - lo > EXPIRY_TOL:
        t = hi - ghi * (hi - lo) / (ghi - glo) if glo != ghi else (lo + hi) / 2
        t = min(max(t, lo + EXPIRY_TOL / 4), hi - EXPIRY_TOL / 4)
        gt = g(t)
        if last is not None and abs(t - last) < EXPIRY_TOL / 2:
            return t
        last = t
        if gt >= 0:
            lo, glo = t, gt
            if side == 1:
                ghi /= 2
            side = 1
        else:
            hi, ghi = t, gt
            if side == -1:
                glo /= 2
            side = -1
    return (lo + hi) / 2


def unreachable(K: int, threshold: float) -> bool:
    """Whether no sampler's rate can ever be above ``threshold`` at K: each group is mixed with chance at most
    :func:`~grpo_lab.sims.outcomes.max_useful` (K), whichever prompts a sampler draws or skips."""
    return float(threshold) >= max_useful(K)


def expiries(p0, K: int, gain: float = decay.DEFAULT_GAIN, **options) -> dict:
    """{sampler: expiry_t} on the quantile sketch of the pass rates ``p0`` at progress 0 (does not depend on
    the progress a table is shown at: a caller may keep it while only t moves); None for every sampler, with no
    search, where the threshold is one K cannot reach (:func:`unreachable`)."""
    p0, K, o = _inputs(p0, K, options)
    if unreachable(K, o["threshold"]):
        return {name: None for name in SAMPLERS}
    sk = sketch(p0)
    return {name: expiry(name, sk, K, o, gain) for name in SAMPLERS}


def _options(K, **kw) -> dict:
    o = {**DEFAULTS, **{k: v for k, v in kw.items() if v is not None}}
    o["epochs"] = positive(o["epochs"], "epochs")
    if not 0.0 < float(o["threshold"]) < 1.0:
        raise InputError(f"threshold must lie strictly between 0 and 1, got {o['threshold']!r}")
    for key in ("batch", "gen_batch", "n_retire", "pods_factor", "k_max_factor"):
        o[key] = int(as_group_size(o[key], key.replace("_", " ")))
    if o["pods_factor"] < 2 or o["k_max_factor"] < 1:
        raise InputError("pods factor must be at least 2 (generate n = factor x K), k_max factor at least 1")
    if not isinstance(o["max_num_gen_batches"], (int, np.integer)) or o["max_num_gen_batches"] < 0:
        raise InputError(f"max_num_gen_batches must be an integer >= 0 (0: no cap), got {o['max_num_gen_batches']!r}")
    if o["scheme"] not in ("rounds", "replace", "verl-v1"):
        raise InputError(f"DAPO scheme must be rounds, replace or verl-v1, got {o['scheme']!r}")
    o["inflight"] = int(as_group_size(o["inflight"], "max_inflight_gen_batches"))
    if not isinstance(o["reps"], (int, np.integer)) or o["reps"] < 0:
        raise InputError(f"reps must be an integer >= 0 (0: auto), got {o['reps']!r}")
    o["band"] = check_band(*o["band"])
    for key in ("p_easy", "p_hard"):
        o[key] = float(as_prob(o[key], key.replace("_", " ")))
    return o


def _inputs(p0, K, options):
    p0 = np.atleast_1d(as_prob(p0, "pass rates")).astype(float)
    if p0.ndim != 1 or not 1 <= p0.size <= MAX_PROMPTS:
        raise InputError(f"pass rates must be a 1-D array of 1 to {MAX_PROMPTS:,} prompts")
    K = int(as_group_size(K))
    if K < 2:
        raise InputError("K must be at least 2 (a group of one rollout is never useful)")
    o = _options(K, **options)
    o["reps"] = o["reps"] or auto_reps(p0.size)
    return p0, K, o


def compare(p0, K: int, t: float = 0.0, gain: float = decay.DEFAULT_GAIN, steps: int | None = None,
            expiry_t: dict | None = None, **options) -> dict:
    """All samplers on the pass rates ``p0`` (at progress 0) evaluated at progress ``t``.

    ``options`` override :data:`DEFAULTS` (epochs, threshold, batch, gen_batch, max_num_gen_batches, scheme and
    inflight (DAPO's loop: :func:`.closed.dapo`), band,
    n_retire, p_easy, p_hard, pods_factor, k_max_factor, reps (0: :func:`auto_reps`), seed). ``expiry_t``: :func:`expiries`' result
    for the same p0, K, gain and options, when the caller has it. Returns ``{"settings": ..., "rows": [...]}``,
    one row per :data:`SAMPLERS` entry in order. Raises InputError for bad input.
    """
    p0, K, o = _inputs(p0, K, options)
    p = decay.pass_rate_at(p0, t, gain)
    res = _evaluate(p, K, o)
    ex = expiry_t if expiry_t is not None else expiries(p0, K, gain, **options)
    base = ex.get("plain")
    rows = []
    for name, (label, flags) in SAMPLERS.items():
        r = res[name]
        per = r["useful_per_1000"]
        e = ex.get(name)
        shift = e - base if e is not None and base is not None else None
        expected = per * r["rollouts"] / closed.PER_ROLLOUTS  # useful groups expected from all the row's rollouts
        none = bool(np.isfinite(expected) and expected < 1.0)
        rows.append({"sampler": name, "label": label, "flags": flags,
                     "method": "simulation" if name in ("retire", "greso") else "closed form",
                     "useful_per_1000": per,
                     "rollouts_per_useful": float("inf") if none else closed.PER_ROLLOUTS / per if per > 0
                     else float("nan"),
                     "no_useful": (f"no useful group expected: {expected:.2g} from its {r['rollouts']:,.0f} rollouts "
                                   "(fewer than one in the budget)") if none else None,
                     "never_trained": r["never_trained"], "rate": _rate(r, K),
                     "expiry_t": e, "expiry_shift": shift,
                     "expiry_shift_steps": shift * steps if shift is not None and steps else None,
                     "mc_se": {k: r[f"{k}_se"] for k in ("useful_per_1000", "never_trained") if f"{k}_se" in r},
                     "details": {k: v for k, v in r.items() if k not in ("useful_per_1000", "never_trained")}})
    settings = {"K": K, "prompts": int(p0.size), "progress": float(t), "gain": float(gain), "steps": steps,
                **{k: (list(v) if isinstance(v, tuple) else v) for k, v in o.items()},
                "budget_rollouts": float(o["epochs"] * p0.size * K),
                "expiry_unreachable": (f"groups of K = {K} give at most {max_useful(K):.3g} useful groups per K rollouts "
                                       f"(every prompt at p = 1/2), so no sampler's rate is ever above a threshold of "
                                       f"{float(o['threshold']):g}: no expiry; give a lower threshold")
                if unreachable(K, o["threshold"]) else None}
    return {"settings": settings, "rows": rows}
