r"""The ``prompts`` population variant: the per-prompt trend's information (prompt identity) inside the measured drift.

Issue 39 item 8 (one doctor): the group path's two expiry models, the per-prompt logistic trend
(:func:`.forecast.fit_trend`) and the measured drift (:mod:`.drift`, marginal over prompts), become one model; the
trend's information enters the drift as a population variant beside ``beta``, ``masses``, ``overdispersed`` and
``rates``, chosen with the shapes by the same leave-future-out score (:func:`.drift.model_weights`).

**Model.** Each prompt j of the record has its own pass rate p_j at the first logged step, and a group of prompt j
at step s has k ~ Binomial(K, g^-1(g(p_j) + h(s))): the same common shift h(s) as every variant, on the same links
and shapes. Each p_j is a draw from the Beta population (the ``beta`` variant's fit, on its :data:`.drift.NODES`
quantile nodes p_m): its **posterior given the prompt's own groups** on the fitting steps,
W_jm proportional to prod over those groups of Binomial(k; K, g^-1(g(p_m) + h_beta(s))), h_beta the ``beta``
variant's measured shift at the group's step (a nuisance; the prompt's own intercept is what is estimated). A
prompt without a group there keeps the prior (uniform over the nodes: the Beta population). The per-step
likelihood is conditional on identity, the prompt's posterior predictive:

    LL[s, h] = sum over the step's groups of log sum_m W_{j(group), m} Binomial(k; K, g^-1(g(p_m) + h)),

so the shift's measurement (:func:`.drift.shift_estimates`), the shapes, the chooser's score, the draws
(:func:`.stall_risk.drift_futures`) and the expiry (:mod:`.drift_expiry`) read it unchanged. The mixed share
ahead is the prompt set's, as the prompts are sampled: sum_j w_j sum_m W_jm u_m(h), w_j the share of the record's
groups that are prompt j's among the prompts the sampler still draws (:meth:`PromptEvidence.retired`) and
u_m(h) = 1 - p^K - (1 - p)^K at p = g^-1(g(p_m) + h): the table of the nodes under the set's posterior weights
v_m = sum_j w_j W_jm (:func:`prompt_table`). With the ``linear`` shape this variant is the per-prompt trend (a logit intercept per prompt, one common slope) in all but the fitting method: the trend's
intercepts are point estimates (Newton's method with a Jeffreys pseudo-observation each) fitted jointly with the
slope; here each intercept is a posterior under the Beta population (shrunk toward it, its uncertainty kept: a
point intercept put the broad runs' mixed share 0.49 where 0.34 was logged, the Jensen gap of P(mixed) at few
groups a prompt), the shift measured per step and the shape fitted to it.

**The prior's Beta and rho, by maximum likelihood** (:func:`fit_prompts`). The prior's nodes are those of a Beta
(a, b), started at the population variant's fit, and a group's kernel is the beta-binomial of intra-group
correlation rho (the binomial at 0); (a, b, rho) maximise the marginal likelihood of the prompts' groups on the
fitting steps, sum over prompts of log sum_m prior_m prod over the prompt's groups of its kernel at node m (type-II
maximum likelihood; the masses' weights, the nuisance shifts and the nodes' count stay as given). Repeated groups of
one prompt tell the within-group correlation from the spread between prompts, which the mixed share alone does not:
the ``beta`` variant's binomial fit reads correlated rollouts as spread between prompts (a U-shaped Beta, a, b about
0.55 on the stall study's ``correlated`` regime, icc 0.3, Beta(1.5, 1.5)). Earlier rho alone was matched to the
mixed share under that prior (0.24, the overdispersion counted twice, in the prior and the kernel), the loglog shapes
won the chooser's score by 20-30 nats and the expiry came late (2/6 seeds held the set's crossing); fitted so,
a, b 1.2-1.5, rho 0.29-0.30, the logit shapes win and 6/6 hold it (docs/doctor.md, "prompts_masses").

**Two priors, two variants.** ``prompts`` takes the ``beta`` variant's population as every prompt's prior;
``prompts_masses`` (:data:`.drift.PROMPTS_MASSES`, measured where ``masses`` is) the ``masses`` variant's: the Beta's
nodes at (1 - w0 - w1) / NODES each, and a node at p = 0 of prior weight w0 and one at p = 1 of w1 that the shift does
not move (:func:`_prior`), so a prompt whose groups all failed is, in its posterior, never solvable with the odds its
groups and w0 give, and stays at 0 ahead. Both are offered and the chooser weighs them with the rest: neither prior
is right on every run. Measured (the stall study's expiry, every group logged, seeds 0-5, 95% interval against the
prompt set's own crossing): with ``prompts`` alone 2/6 on 30% never-solvable prompts and 3/6 on 20% never solved (its
never-solved prompts move with the drift, the expiry late); with the masses prior inside the one variant 6/6 and 6/6,
but the shipped broad-ds run's band then held 42.7% of later rows (84.7% with the Beta prior): prompts that failed
every group so far were learnt later, and the masses prior pinned them at 0. Two variants let the leave-future-out
score tell the two apart.

**Fairness of the choice.** Posteriors from the scored steps would score those steps with their own data: for the
chooser's score the posteriors are taken on the steps before its first origin (:func:`.choice.origins`) alone and
the shift measured under them (``score`` of the variant's link entry); the forecast's shift and shapes use the
posteriors on every logged step. (The other variants' populations are fitted on every step, scored ones included:
:mod:`.drift`'s named deviation, two to three parameters each, not one per prompt.)

**Where it is offered** (:func:`prompt_evidence`): only where prompts repeat, at least :data:`MIN_REPEAT` of the
groups being of a prompt seen at an earlier step, on at most :data:`MAX_PAIRS` distinct (prompt, successes) pairs
(the cost; a larger record: not offered, said), and only on a record holding every group (a survivors-only dump
truncates each group's likelihood; not offered there, said). A fresh prompt every group: not offered, and the
reason said (``drift["prompts"]``). Named deviation: the posteriors are not redrawn with the population's draws
(the stall risk's :data:`.stall_risk.POPULATIONS`): the variant's uncertainty is the posteriors' own, the shift's
and the shape's.

**Cost and memory.** The posteriors: one sparse product (prompts x (step, k) counts against the nodes' log
pmf). The likelihood: per distinct (prompt, k) pair its posterior predictive on the grid (a dense product with the
nodes' pmf), in blocks of :data:`BLOCK` pairs (memory bounded by BLOCK x len(H_GRID)), then one sparse product
with the (step, pair) counts.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, sparse

from .drift import H_GRID, PROMPTS, _g, _ginv, beta_nodes
from .drift_variants import betabinom_pmf

__all__ = ["VARIANT", "MIN_REPEAT", "MAX_PAIRS", "RETIRE_FALSE", "BLOCK", "PromptEvidence", "repeat_share", "prompt_evidence", "fit_prompts",
           "prompt_table"]

VARIANT = PROMPTS  #: the variant's name (:data:`.drift.PROMPTS`, added to the variants measured where offered)
MIN_REPEAT = 0.5  #: the variant is offered where at least this share of the groups is of a prompt seen before
#: a prompt is taken as retired by the sampler where, were it still drawn, the gap since its last draw would have
#: probability under 1 / (this x the prompts seen): at most about this many of the set misread in expectation
#: (a Bonferroni bound over the prompts; not measured on the runs)
RETIRE_FALSE = 1.0
#: the variant is offered on at most this many distinct (prompt, successes) pairs: its likelihood costs pairs x
#: len(H_GRID) per table, some 1.2 s of CPU at 59,000 pairs on the shared machine, and a diagnosis computes about
#: eight tables (the whole run and the half split, two links, the chooser's and the forecast's posteriors); the
#: 1,000,000-group benchmark (50,000 prompts, about 300,000 pairs) took 65 s of forecast with it, over the 60 s target
MAX_PAIRS = 100_000
BLOCK = 16384  #: (prompt, k) pairs per block of the likelihood
RHO_MAX = 0.5  #: the largest intra-group correlation fitted
RHO_START = 0.05  #: rho where its maximum-likelihood fit starts
#: the least rho fitted above 0 (the beta-binomial's pmf loses precision as rho goes to 0, c = (1 - rho) / rho the
#: Beta's size; 0.001 moves a group's variance by 0.7% at K = 8): the fit compares rho 0 (the binomial) at its Beta
RHO_MIN = 1e-3
AB_LOG = (np.log(0.05), np.log(200.0))  #: bounds of the prior Beta's log a and log b in that fit
_P = 1e-12


class PromptEvidence:
    """The groups of a record with their prompts: per group its step's index ``step`` (into the record's steps),
    its prompt ``pid`` (0..J-1, the record's prompts present), its successes ``k``; ``K``; ``n_steps``. ``loglik(table)``
    gives ``LL`` (n_steps, len(table's grid)) of a :func:`prompt_table` (module docstring). ``P`` and ``K`` name its
    content (what :func:`.drift._content` keys a measurement by)."""

    def __init__(self, step_index, prompt, successes, K: int, n_steps: int):
        self.K, self.n_steps = int(K), int(n_steps)
        self.step = np.asarray(step_index, np.int64)
        self.pid = np.unique(np.asarray(prompt), return_inverse=True)[1].ravel().astype(np.int64)
        self.k = np.asarray(successes, np.int64)
        self.J = int(self.pid.max()) + 1 if self.pid.size else 0
        self.P = np.stack([self.step, self.pid, self.k])
        # the distinct (prompt, successes) pairs and the groups per (step, pair)
        pair, inv = np.unique(self.pid * (self.K + 1) + self.k, return_inverse=True)
        self.pair_j, self.pair_k = pair // (self.K + 1), pair % (self.K + 1)
        self.M = sparse.csc_matrix((np.ones(self.k.size), (self.step, inv.ravel())), shape=(self.n_steps, pair.size))

    def weights(self, upto: int | None = None) -> np.ndarray:
        """w_j: the share of the groups of the first ``upto`` steps (all by default) that are prompt j's, 0 for a
        prompt :meth:`retired` there, renormalised: the prompts as the sampler draws them now."""
        upto = self.n_steps if upto is None else int(upto)
        m = self.step < upto
        w = np.where(self.retired(upto), 0.0, np.bincount(self.pid[m], minlength=self.J))
        return w / max(float(w.sum()), 1.0)

    def retired(self, upto: int | None = None) -> np.ndarray:
        """Per prompt, whether the sampler no longer draws it by the ``upto``-th step (a retiring curriculum): a
        prompt still drawn is drawn at step s with probability q_s = d_s / n_s at least, d_s the distinct prompts
        drawn at s and n_s the prompts seen by s (the sampler drawing uniformly among the prompts it still draws,
        at most n_s of them), so its gap, no draw at any step after its last, has probability at most
        prod (1 - q_s) over those steps; retired where that is under 1 / (:data:`RETIRE_FALSE` J), J the prompts
        seen: about :data:`RETIRE_FALSE` prompt of a set drawn throughout misread, in expectation. A sampler that
        draws every prompt each pass (uniform, with or without replacement) retires none but by that chance; one
        that stops drawing prompts (retire after all-pass draws) shows them after a gap of a few passes. Named
        limit: a sampler that favours some prompts (a weighted curriculum) can have a disfavoured prompt read as
        retired; a prompt retired within the last few passes is not yet seen to be."""
        upto = self.n_steps if upto is None else int(upto)
        m = self.step < upto
        st, pid = self.step[m], self.pid[m]
        out = np.zeros(self.J, bool)
        if not m.any():
            return out
        first = np.full(self.J, upto)
        np.minimum.at(first, pid, st)
        seen = np.cumsum(np.bincount(first[first < upto], minlength=upto))
        distinct = np.bincount(np.unique(st * self.J + pid) // self.J, minlength=upto)
        log_miss = np.log(np.maximum(1.0 - distinct / np.maximum(seen, 1), 1e-300))
        after = np.r_[np.cumsum(log_miss[::-1])[::-1], 0.0]  # sum over the steps from s on
        last = np.full(self.J, -1)
        np.maximum.at(last, pid, st)
        J = int(np.count_nonzero(last >= 0))
        return (last >= 0) & (after[last + 1] < -np.log(RETIRE_FALSE * J))

    def loglik(self, table: dict) -> np.ndarray:
        """LL[s, h] of the groups under ``table`` (:func:`prompt_table`): each group's log posterior predictive
        pmf (module docstring). Named deviation: each pair's predictive and its log in single precision (half the
        time and memory; about 1e-7 of a group's log pmf, 1e-3 of a step's LL of 2,000 groups), summed in double;
        a predictive under 1e-37 is floored there."""
        kern = np.asarray(table["kernel"], np.float32)  # (H, nodes, K + 1)
        W = np.asarray(table["post"], np.float32)  # (J, nodes)
        LL = np.zeros((self.n_steps, kern.shape[0]))
        for lo in range(0, self.pair_j.size, BLOCK):
            hi = min(lo + BLOCK, self.pair_j.size)
            j, k = self.pair_j[lo:hi], self.pair_k[lo:hi]
            L = np.empty((hi - lo, kern.shape[0]), np.float32)
            for kk in np.unique(k):
                sel = k == kk
                L[sel] = W[j[sel]] @ kern[:, :, kk].T
            LL += self.M[:, lo:hi] @ np.log(np.maximum(L, np.float32(1e-37))).astype(np.float64)
        return LL


def repeat_share(groups) -> float:
    """The share of the groups whose prompt was logged at an earlier step."""
    if groups.n == 0:
        return 0.0
    o = np.lexsort((groups.step, groups.prompt_id))
    pid, st = groups.prompt_id[o], groups.step[o]
    first = np.r_[True, pid[1:] != pid[:-1]]
    start = np.minimum.reduceat(st, np.flatnonzero(first))[np.cumsum(first) - 1]
    return float(np.mean(st > start))


def prompt_evidence(groups, steps, survivors: bool = False) -> tuple[PromptEvidence | None, dict]:
    """(the evidence, or None where the variant is not offered; ``{"offered", "repeat_share", "reason"}``) for the
    record's ``groups`` at its logged ``steps`` (increasing; module docstring, "Where it is offered")."""
    share = repeat_share(groups)
    if survivors:
        return None, {"offered": False, "repeat_share": share, "reason": (
            "the record holds only the groups that trained: a group's likelihood is truncated")}
    if share < MIN_REPEAT:
        return None, {"offered": False, "repeat_share": share, "reason": (
            f"{100 * share:.0f}% of the groups are of a prompt logged at an earlier step (under "
            f"{100 * MIN_REPEAT:.0f}%): too few repeats for a prompt's own pass rate")}
    pairs = np.unique(np.asarray(groups.prompt_id, np.int64) * (groups.K + 1) + groups.successes).size
    if pairs > MAX_PAIRS:
        return None, {"offered": False, "repeat_share": share, "reason": (
            f"{pairs:,} (prompt, successes) pairs, over the {MAX_PAIRS:,} the variant's likelihood is computed "
            "for (its cost grows with them; not yet bounded otherwise)")}
    ev = PromptEvidence(np.searchsorted(steps, groups.step), groups.prompt_id, groups.successes, groups.K, len(steps))
    return ev, {"offered": True, "repeat_share": share, "reason": (
        f"{100 * share:.0f}% of the groups are of a prompt logged at an earlier step")}


def _prior(pop: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(nodes p_m, ``fixed`` (the nodes the shift does not move), log prior weight of each) of a population: the
    Beta's :data:`.drift.NODES` quantile nodes, equal weight (1 - w0 - w1) / NODES, and where ``pop`` holds masses
    (w0, w1 > 0: the ``masses`` variant's fit) a node at p = 0 and one at p = 1 of prior weight w0 and w1 that the
    shift does not move (a prompt never solved stays never solved)."""
    p = beta_nodes(pop["a"], pop["b"])
    w0, w1 = float(pop.get("w0", 0.0)), float(pop.get("w1", 0.0))
    logw = np.full(len(p), np.log(max(1.0 - w0 - w1, _P) / len(p)))
    fixed = np.zeros(len(p), bool)
    for at, w in ((0.0, w0), (1.0, w1)):
        if w > 0.0:
            p, fixed, logw = np.r_[p, at], np.r_[fixed, True], np.r_[logw, np.log(w)]
    return p, fixed, logw


def _moved(p, fixed, shift, link: str) -> np.ndarray:
    """The nodes' pass rates under the shifts ``shift`` (rows): g^-1(g(p_m) + h), the ``fixed`` nodes where they are,
    clipped to [_P, 1 - _P]."""
    P = _ginv(_g(np.clip(p, _P, 1 - _P), link)[None, :] + np.asarray(shift, float)[:, None], link)
    return np.clip(np.where(fixed[None, :], p[None, :], P), _P, 1 - _P)


def fit_prompts(ev: PromptEvidence, upto: int, beta_link: dict, bins, link: str, variant: str = VARIANT,
                start: dict | None = None) -> dict:
    """The variant's population from the groups at the first ``upto`` logged steps (module docstring): ``variant``,
    ``nodes`` (the population's nodes p_m), ``fixed`` (the nodes the shift does not move: the masses), ``post`` W
    (J, nodes), ``weights`` w_j (every group of the record), ``a``, ``b`` (the Beta), ``w0`` = ``w1`` = 0 (no
    masses beside the table: they are among its nodes), ``prior_masses`` (the prior's w0, w1), ``x`` (empty: nothing drawn), ``cov``, ``evidence``, ``upto``, ``link``, ``masses`` False, ``prompts``
    (how many have a group on the fitting steps). ``beta_link``: the prior population's entry of ``link`` (its
    population and per-bin shifts ``h``: the ``masses`` variant's where measured, so a prompt whose groups all
    failed is, in its posterior, never solvable with the odds the population's mass gives; else the ``beta``
    variant's); ``bins`` the step bins. The Beta (``a``, ``b``) and ``rho`` are fitted (module docstring, "The
    prior's Beta and rho"): the optimisation starts at the prior population's Beta and rho :data:`RHO_START`, or at
    ``start`` (a fit's ``a``, ``b``, ``rho``: the same record's on fewer steps); the prior's own (rho 0) is kept where
    the fit does not beat it."""
    pop = beta_link["population"]
    K = ev.K
    m = ev.step < upto
    nb = int(bins[upto - 1]) + 1 if upto else 0
    h = np.asarray(beta_link["h"], float)[:nb]
    b = np.asarray(bins)[ev.step[m]]
    C = sparse.csr_matrix((np.ones(int(m.sum())), (ev.pid[m], b * (K + 1) + ev.k[m])), shape=(ev.J, nb * (K + 1)))

    def posterior(x):
        """(W, log marginal likelihood of the prompts' groups, nodes, fixed) at x = (log a, log b, rho)."""
        p, fixed, logw = _prior({**pop, "a": float(np.exp(x[0])), "b": float(np.exp(x[1]))})
        kern = betabinom_pmf(_moved(p, fixed, h, link), K, float(x[2]))  # (bins, nodes, K + 1)
        logpost = C @ np.log(np.maximum(kern, 1e-300)).transpose(0, 2, 1).reshape(nb * (K + 1), len(p)) + logw
        top = logpost.max(axis=1, keepdims=True)
        W = np.exp(logpost - top)
        evidence = float(np.sum(top[:, 0] + np.log(W.sum(axis=1))))  # sum_j log sum_m prior_m prod_groups pmf
        return W / W.sum(axis=1, keepdims=True), evidence, p, fixed

    x = np.array([np.log(pop["a"]), np.log(pop["b"]), 0.0])
    if m.any():  # the prior's Beta and rho by the marginal likelihood of the prompts' groups (module docstring)
        x0 = np.r_[x[:2], RHO_START] if start is None else np.r_[np.log([start["a"], start["b"]]),
                                                                 max(start["rho"], RHO_MIN)]
        best = optimize.minimize(lambda y: -posterior(y)[1], x0, method="L-BFGS-B", jac="3-point",
                                 bounds=[AB_LOG, AB_LOG, (RHO_MIN, RHO_MAX)])
        binomial = np.r_[best.x[:2], 0.0]  # the fitted Beta with the binomial kernel
        x, (W, _, p, fixed) = max(((y, posterior(y)) for y in (x, binomial, best.x)), key=lambda yf: yf[1][1])
    else:
        W, _, p, fixed = posterior(x)
    return {"variant": variant, "nodes": p, "fixed": fixed, "post": W, "rho": float(x[2]), "weights": ev.weights(),
            "a": float(np.exp(x[0])), "b": float(np.exp(x[1])), "w0": 0.0, "w1": 0.0,
            "prior_masses": (float(pop.get("w0", 0.0)), float(pop.get("w1", 0.0))),
            "x": np.zeros(0), "cov": np.zeros((0, 0)), "evidence": ev, "upto": int(upto),
            "link": link, "masses": False, "prompts": int(np.count_nonzero(np.bincount(ev.pid[m], minlength=ev.J)))}


def prompt_table(pop: dict, K: int, link: str, grid=H_GRID, logit_shift: float = 0.0) -> dict:
    """:func:`.drift.population_table`'s dict (``pmf``, ``u``, ``u2``, ``fail``, ``pass`` per shift of ``grid``) of
    the prompt set (module docstring), every drifted pass rate's logit moved by ``logit_shift`` besides; with
    ``kernel`` (the nodes' pmf per shift), ``post`` and ``evidence``, by which :func:`.drift.step_loglik` scores the
    groups by identity (:meth:`PromptEvidence.loglik`). ``u2``: the mean over the set of P(mixed)^2 of each
    prompt (its posterior's)."""
    grid = np.asarray(grid, float)
    fixed = np.asarray(pop.get("fixed", np.zeros(len(pop["nodes"]), bool)))
    P = _moved(np.asarray(pop["nodes"], float), fixed, grid, link)
    if logit_shift:
        P = np.where(fixed[None, :], P, np.clip(1.0 / (1.0 + (1.0 - P) / P * np.exp(-logit_shift)), _P, 1 - _P))
    kern = betabinom_pmf(P, K, float(pop.get("rho", 0.0)))  # (H, nodes, K + 1)
    W, w = pop["post"], np.asarray(pop["weights"], float)
    pmf = np.einsum("hmk,m->hk", kern, w @ W)
    um = 1.0 - kern[..., 0] - kern[..., K]  # (H, nodes)
    u2 = np.zeros(len(grid))
    for lo in range(0, len(w), BLOCK):
        uj = W[lo:lo + BLOCK] @ um.T  # (block, H): each prompt's P(mixed)
        u2 += w[lo:lo + BLOCK] @ (uj * uj)
    return {"pmf": pmf, "u": 1.0 - pmf[:, 0] - pmf[:, K], "u2": u2, "fail": pmf[:, 0], "pass": pmf[:, K], "K": K,
            "link": link, "w0": 0.0, "w1": 0.0, "kernel": kern, "post": W, "evidence": pop["evidence"]}
