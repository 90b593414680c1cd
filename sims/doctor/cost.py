r"""What a trained step costs under each trainer's dynamic sampling, and how that cost rises as a run saturates.

Common setting (:mod:`.stall`): a step needs T mixed (useful) groups of K rollouts; prompts come from a dataset
much larger than a step, each one mixed with probability u (the population's mean P(useful) at that step), and
the labels are independent of how long a rollout takes. F, the unanimous (filtered) groups completed before the
T-th mixed one, is then negative binomial: P(F = f) = C(f + T - 1, f) u^T (1 - u)^f, E[F] = T (1 - u) / u.
Per trained step, the prompts generated D (rollouts K D) are, by scheme (``settings['scheme']``):

``rounds``   rounds of B = ``gen_batch`` prompts until >= T are mixed, at most ``cap`` rounds (0: none; verl's
             DAPO recipe ``max_num_gen_batches``, SkyRL ``max_sample_batches``, NeMo-RL, slime, this project):
             E[D] = B E[R ^ cap], E[R ^ cap] = sum_{r=1}^{cap} P(Bin((r - 1) B, u) < T)
             (:func:`grpo_lab.sims.samplers.closed.dapo_rounds`); a step past the cap raises and trains nothing.
``replace``  each filtered prompt is replaced by one new prompt and the batch is complete when T are kept
             (OpenRLHF ``_generate_vllm`` with ``--algo.dynamic_filtering_enable``; prime-rl's admission gates,
             which "sample again to fill the batch"): D = T + F, E[D] = T / u, nothing wasted, no cap.
``verl-v1``  verl's V1 trainer in sync mode (``verl/trainer/ppo/v1/replay_buffer.py`` ``ReplayBuffer.sample``,
             PR #7082): the step dispatches T prompts; each evicted (unanimous) group adds 2 refill credits;
             prompts are dispatched while credits and in-flight slots last (at most M T in flight, M =
             ``algorithm.filter_groups.max_inflight_gen_batches``); once T groups are sampleable it stops
             dispatching, drains every request in flight (generated, then discarded as surplus) and trains T.
             Credits issued T + 2F and completed T + F leave F to dispatch or in flight; every freed slot takes
             a waiting credit, except the one the T-th mixed group frees (the stop), so min(F, M T - 1) are in
             flight at the stop: D = T + F + min(F, M T - 1), E[D] = T / u + sum_{f=0}^{M T - 2} P(F > f)
             (against an event-driven simulation of the loop with random completion times: the tests). No cap:
             ``max_num_gen_batches`` is ignored (verl logs a warning), so a saturating run slows down instead
             of raising. Deviation: the buffer polls (every ``poll_interval`` s) rather than reacting to each
             completion; completions between two polls may overfill the step a little (not modelled).

:func:`prompts_per_step` gives E[D] for one u (or an array of u); :func:`cost_forecast` turns the stall
forecast's per-step effective rate (``series.effective_rate``, the mean P(useful) the trend predicts) into the
rising cost: prompts and rollouts per trained step, and the ratio to the last logged step. u = 0 costs infinity.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["SCHEMES", "prompts_per_step", "cost_forecast"]

SCHEMES = ("rounds", "replace", "verl-v1")


def _v1(u: float, T: int, inflight: int) -> float:
    if u <= 0.0:
        return float("inf")
    f = np.arange(int(inflight) * int(T) - 1)
    waste = float(np.sum(stats.nbinom.sf(f, T, u))) if f.size else 0.0
    return T / u + waste


def prompts_per_step(u, settings: dict) -> np.ndarray | float:
    """E[prompts generated per trained step] at mean P(useful) ``u`` (scalar or array) under ``settings``
    (``scheme``, ``train_batch`` T, ``gen_batch`` B, ``cap``, ``inflight`` M; module docstring)."""
    from ..samplers.closed import dapo_rounds  # here: grpo_lab.sims.samplers imports this package

    scheme = settings.get("scheme", "rounds")
    T, B = int(settings["train_batch"]), int(settings["gen_batch"])
    arr = np.atleast_1d(np.asarray(u, float))
    out = np.empty(arr.size)
    for i, x in enumerate(arr):
        if scheme == "replace":
            out[i] = T / x if x > 0 else np.inf
        elif scheme == "verl-v1":
            out[i] = _v1(float(x), T, int(settings.get("inflight", 1)))
        else:
            r = dapo_rounds(float(x), T, B, int(settings["cap"]))
            out[i] = r["rounds_expected"] * B if x > 0 else np.inf
    return out if np.ndim(u) else float(out[0])


def cost_forecast(stall: dict, settings: dict | None) -> dict:
    """The cost per trained step over the stall forecast's future steps (``stall``: :func:`.stall.stall_forecast`'s
    result; ``settings``: :func:`.trainer_config.step_settings`' dict). Returns ``{available, scheme, steps,
    effective_rate, prompts, rollouts, ratio, now}`` (``ratio``: prompts over those at the last logged step), or
    ``{available: False, reason}`` (the stall forecast's own: it is unavailable without ``settings`` too)."""
    if settings is None or not stall.get("available"):
        return {"available": False, "reason": stall.get("reason", "not available: no stall forecast")}
    K = int(stall["settings"]["K"])
    now_u = float(stall["now"]["effective_rate"])
    ser = stall["series"]
    u = np.asarray(ser["effective_rate"], float)
    prompts = prompts_per_step(u, settings)
    base = prompts_per_step(now_u, settings)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = prompts / base if np.isfinite(base) and base > 0 else np.full(u.size, np.nan)
    return {"available": True, "scheme": settings.get("scheme", "rounds"), "K": K,
            "train_batch": int(settings["train_batch"]), "inflight": settings.get("inflight"),
            "now": {"step": int(stall["now"]["step"]), "effective_rate": now_u, "prompts": base, "rollouts": base * K},
            "steps": [int(s) for s in ser["step"]], "effective_rate": [float(x) for x in u],
            "prompts": [float(x) for x in prompts], "rollouts": [float(x) * K for x in prompts],
            "ratio": [float(x) for x in ratio]}
