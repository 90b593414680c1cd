r"""Samplers with closed forms: plain GRPO, DAPO dynamic sampling, a pass-rate band, Knapsack-style
allocation, PODS down-sampling.

Common setting (:mod:`grpo_lab.sims.samplers`): N prompts with pass rates p_x, binary rewards, independent
rollouts; a *useful* group has rollouts that disagree, P(useful | p, k) = u(p, k) = 1 - p^k - (1 - p)^k and
D = 1 - u (:mod:`grpo_lab.sims.outcomes`). Every sampler gets the same rollout budget
R = E N K (E epochs of plain GRPO at group size K); prompts are drawn as a dataloader does, each once per
epoch in a fresh random order. Each function returns

``useful_per_1000``   1000 E[useful groups trained on] / E[rollouts generated]
``never_trained``     share of prompts that give no trained-on useful group within the budget
``rollouts``          E[rollouts spent] (R unless the sampler runs out of prompts)

**Plain GRPO** (TRL ``GRPOTrainer``, verl ``algorithm.adv_estimator=grpo``): every prompt gets K rollouts
each epoch. useful_per_1000 = 1000 mean_x u(p_x, K) / K; never_trained = mean_x D(p_x, K)^E.

**Pass-rate band** [lo, hi] (an oracle filter on the true current pass rate; a trainer estimates it from
past rollouts): only the N_in prompts with lo <= p_x <= hi are drawn, so the budget buys E' = E N / N_in
epochs of them; in the last, partial epoch a random share frac(E') of them gets one more visit.
useful_per_1000 = 1000 mean_{in} u / K; never_trained = 1 - N_in / N + (1/N) sum_{in}
[(1 - frac) D^floor(E') + frac D^(floor(E') + 1)].

**PODS down-sampling** (Xu et al. 2025, "Not All Rollouts are Useful"): generate n rollouts per prompt,
train on the m = K of maximum reward variance. For binary rewards with s passes the max-variance subset
takes j passes and m - j fails with j as close to m / 2 as s and n - s allow; it is useful iff 0 < s < n.
Equal budget: E' = E K / n epochs of n rollouts. useful_per_1000 = 1000 mean_x u(p_x, n) / n;
never_trained as the band's with D(p, n) and E'. ``balanced_split(s, n, m)`` gives the kept passes.

**Knapsack-style allocation** (Li et al. 2025, "Knapsack RL"): each epoch's budget N K is split into
K_x in {0, 2, 3, ..., k_max} rollouts per prompt to maximise sum_x u(p_x, K_x), greedy by the marginal
gain u(p, k) - u(p, k - 1) (:func:`grpo_lab.sims.doctor.skip.allocation`; Knapsack RL's value also
weighs the gradient's size, this one counts useful groups only), on the true pass rates.
useful_per_1000 = 1000 sum_x u(p_x, K_x) / sum_x K_x; never_trained = mean_x [K_x = 0 or D(p_x, K_x)^E].

**DAPO dynamic sampling** (Yu et al. 2025; verl ``algorithm.filter_groups.enable`` with
``max_num_gen_batches`` M, ``data.gen_batch_size`` G, ``data.train_batch_size`` B; TRL has no built-in
equivalent): a step draws rounds of G fresh prompts, keeps the useful groups, and stops once it holds
>= B (then trains on the first B, the surplus is dropped) or after M rounds (verl raises "num_gen_batches
>= max_num_gen_batches": the step trains nothing; M = 0 means no cap). With u_bar = mean_x u(p_x, K)
(prompts drawn independently and uniformly: a dataset much larger than a step's draws), after r rounds
the kept count is Binomial(r G, u_bar), so

    P(round r is needed) = P(Bin((r - 1) G, u_bar) < B),   E[rounds] = sum_{r=1}^{M} P(Bin((r-1) G, u_bar) < B)
    P(stall) = P(Bin(M G, u_bar) < B)
    useful_per_1000 = 1000 B (1 - P(stall)) / (E[rounds] G K),   1 - P(stall) = P(Bin(M G, u_bar) >= B) (``p_fill``)

A small dataset read in epochs (without replacement) has less spread between rounds: 50 prompts, G = B = 6,
M = 3, K = 4 from Beta(0.4, 3) give 2.902 +- 0.003 rounds a step by Monte Carlo against 2.888 here.
DAPO's never_trained has no closed form (which useful groups fall in a step's surplus decides it): it
is simulated (:func:`.simulate.dapo_never_trained`) by :func:`grpo_lab.sims.samplers.compare.compare`;
:func:`dapo` returns the rates alone.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..doctor.skip import allocate
from ..outcomes import p_useful

__all__ = ["plain", "band", "pods", "balanced_split", "knapsack", "dapo", "PER_ROLLOUTS"]

PER_ROLLOUTS = 1000  #: useful groups are counted per this many rollouts


def _result(useful, rollouts, never, **extra) -> dict:
    per = PER_ROLLOUTS * useful / rollouts if rollouts > 0 else float("nan")
    return {"useful_per_1000": float(per), "never_trained": float(never), "rollouts": float(rollouts), **extra}


def _epochs_never(d: np.ndarray, epochs: float) -> np.ndarray:
    """P(no useful group in a fractional number of epochs): (1 - frac) d^floor + frac d^(floor + 1)."""
    whole = np.floor(epochs)
    frac = epochs - whole
    return (1.0 - frac) * d**whole + frac * d ** (whole + 1)


def plain(p: np.ndarray, K: int, epochs: float) -> dict:
    """Plain GRPO (see the module docstring)."""
    u = p_useful(p, K)
    return _result(u.sum() * epochs, p.size * K * epochs, np.mean((1.0 - u) ** epochs))


def band(p: np.ndarray, K: int, epochs: float, lo: float, hi: float) -> dict:
    """Only prompts with lo <= p <= hi, the whole budget spent on them (see the module docstring)."""
    inside = (p >= lo) & (p <= hi)
    n_in = int(inside.sum())
    if n_in == 0:
        return _result(0.0, 0.0, 1.0, kept_share=0.0)
    u = p_useful(p[inside], K)
    e_in = epochs * p.size / n_in
    never = (p.size - n_in + _epochs_never(1.0 - u, e_in).sum()) / p.size
    return _result(u.sum() * e_in, n_in * K * e_in, never, kept_share=n_in / p.size)


def balanced_split(s, n: int, m: int) -> np.ndarray:
    """Passes kept by PODS's max-variance down-sampling of n binary rollouts with s passes to m:
    j = clip(round-half-down(m / 2), m - (n - s), s), the j closest to m / 2 that the fails allow."""
    s = np.asarray(s)
    return np.clip(m // 2, np.maximum(m - (n - s), 0), np.minimum(s, m))


def pods(p: np.ndarray, K: int, epochs: float, n: int) -> dict:
    """Generate n, train on the K of maximum variance (see the module docstring)."""
    u = p_useful(p, n)
    e_n = epochs * K / n
    return _result(u.sum() * e_n, p.size * n * e_n, np.mean(_epochs_never(1.0 - u, e_n)), generate=int(n))


def knapsack(p: np.ndarray, K: int, epochs: float, k_max: int | None = None) -> dict:
    """Budgeted allocation of K_x per prompt, the same every epoch (see the module docstring)."""
    kx, useful, k_max = allocate(p, K, k_max)
    u = np.where(kx > 0, useful[np.arange(p.size), np.maximum(kx, 1) - 1], 0.0)
    never = np.mean(np.where(kx > 0, (1.0 - u) ** epochs, 1.0))
    return _result(u.sum() * epochs, kx.sum() * epochs, never, prompts_given_none=float(np.mean(kx == 0)),
                   k_max=k_max)


def dapo_rounds(u_bar: float, batch: int, gen: int, max_rounds: int) -> dict:
    """E[rounds], P(stall) and the 95th percentile of the rounds for one DAPO step (module docstring).

    ``max_rounds`` 0 means no cap (verl's max_num_gen_batches <= 0); the sum then runs until its terms are
    below 1e-12 (or 100,000 rounds, beyond which it is reported as a stall)."""
    cap = int(max_rounds) if max_rounds > 0 else 100_000
    if u_bar <= 0.0:
        return {"rounds_expected": float(cap), "rounds_p95": None, "p_stall": 1.0, "p_fill": 0.0}
    need = batch / (gen * u_bar)  # without a cap the terms vanish long before 100,000 rounds: sum up to a bound ...
    bound = cap if max_rounds > 0 else int(min(cap, 3 * need + 20 * np.sqrt(need) + 50))
    needed = special.bdtr(batch - 1, np.arange(bound) * gen, u_bar)  # P(round r + 1 is needed): the Binomial cdf ...
    if needed[-1] >= 1e-12 and bound < cap:  # ... or over the whole range where they have not vanished by then
        needed = special.bdtr(batch - 1, np.arange(cap) * gen, u_bar)
    needed[0] = 1.0  # ... and the first round always (bdtr is NaN for n = 0)
    filled = True  # without a cap: whether the sum's terms fell below 1e-12 within MAX_ROUNDS rounds
    if max_rounds <= 0:
        tail = np.flatnonzero(needed < 1e-12)
        needed, filled = (needed[: tail[0]], True) if tail.size else (needed, False)
    p_stall = float(special.bdtr(batch - 1, cap * gen, u_bar)) if max_rounds > 0 else float(not filled)
    # P(a step fills) as the survival function, not 1 - p_stall: near a certain stall the difference is round-off
    # (1 - 0.9999999999999999 = 1.1e-16, a rate of 3.6e17 rollouts per useful group where the truth is ~1e-80)
    p_fill = float(special.bdtrc(batch - 1, cap * gen, u_bar)) if max_rounds > 0 else float(filled)
    above = np.flatnonzero(needed <= 0.05)
    return {"rounds_expected": float(needed.sum()), "p_stall": p_stall, "p_fill": p_fill,
            "rounds_p95": int(above[0]) if above.size else None}


def dapo(p: np.ndarray, K: int, epochs: float, batch: int, gen: int, max_rounds: int, scheme: str = "rounds",
         inflight: int = 1) -> dict:
    """DAPO dynamic sampling, verl's filter_groups (see the module docstring). ``scheme`` "replace" (OpenRLHF,
    prime-rl: each filtered prompt replaced by one) or "verl-v1" (verl's V1 trainer, ``inflight`` =
    max_inflight_gen_batches): the prompts per step from :func:`grpo_lab.sims.doctor.cost.prompts_per_step`, no
    stall; ``rounds_expected`` is then those prompts / gen."""
    u = p_useful(p, K)
    u_bar = float(u.mean())
    if scheme == "rounds":
        rd = dapo_rounds(u_bar, batch, gen, max_rounds)
    else:
        from ..doctor.cost import prompts_per_step

        prompts = prompts_per_step(u_bar, {"scheme": scheme, "train_batch": batch, "gen_batch": gen, "cap": 0,
                                           "inflight": inflight})
        rd = {"rounds_expected": prompts / gen, "p_stall": 0.0 if np.isfinite(prompts) else 1.0, "rounds_p95": None,
              "scheme": scheme}
        rd["p_fill"] = 1.0 - rd["p_stall"]
    rollouts_step = rd["rounds_expected"] * gen * K
    trained_step = batch * rd["p_fill"]
    budget = p.size * K * epochs
    return _result(trained_step * budget / rollouts_step, budget, float("nan"), **rd,
                   batch=int(batch), gen_batch=int(gen), max_num_gen_batches=int(max_rounds))
