r"""The level's path, measured: a population at the first step, a per-step shift, and several shapes fitted to it.

**Model.** Prompts' pass rates at the first logged step s0 follow p ~ Beta(a, b). At step s every prompt's pass
rate moves by the same shift h(s) on a link scale: ``g(p_s) = g(p) + h(s)``, h(s0) = 0, with g = logit (a
logit-linear drift is h linear in s) or g(p) = -log(-log p) (the power map p_s = p^(1 / (1 + gamma t)) is
h = log(1 + gamma t) exactly). A group at step s has k ~ Binomial(K, p_s), p drawn from the population
(prompts within a step are distinct). The population is represented by :data:`NODES` quantile nodes of the
Beta (midpoints), shifted on a grid of h (:data:`H_GRID`): the table of the group pmf per h is exact for the
nodes, so P(k | h) = mean over nodes of Binomial(k; K, g^-1(g(p_j) + h)).

**Population variants** (:data:`VARIANTS`; issue 39): ``beta``, the Beta alone, and ``masses``, a share w0 of
prompts never solved (p = 0) and a share w1 never failed (p = 1) beside a Beta that holds the rest:
p ~ w0 delta_0 + w1 delta_1 + (1 - w0 - w1) Beta(a, b). The masses do not move with the shift (a prompt that no
rollout ever solves stays so), so the group pmf is (1 - w0 - w1) P_Beta(k | h) + w0 [k = 0] + w1 [k = K], the
mixed share (1 - w0 - w1) u_Beta(h). A Beta alone can mimic a mass with a ~ 0, but not a mass and a broad rest at
once, and its prompts near 0 move once the shift is large: on 30% never-solvable prompts it put the first stall
66-125 steps late. The variant is chosen with the shapes, by the same leave-future-out score: every (variant,
shape) pair is scored on its own variant's per-step likelihood and the pseudo-BMA+ weights are over the pairs
(:func:`model_weights`). Named deviation: each variant's population is fitted on all logged steps, the scored ones
included (as for the Beta before), which favours the two extra parameters of ``masses`` by about one nat where
there are no masses; there its masses fit near 0 and its forecast is the Beta's. From a survivors-only record the
masses cancel from the truncated likelihood (only the rounds, where logged, hold them): the two variants then
score alike and the masses' draws follow their prior (:func:`.stall_risk.population_draws`). Two more variants,
``overdispersed`` (correlated rollouts: a beta-binomial kernel, rho fitted) and ``rates`` (prompts' own rates: the
shift h e^(sigma z) per prompt, sigma fitted), are :mod:`.drift_variants`' (:data:`EXTRA_VARIANTS`), chosen alike.
A fifth, ``prompts`` (:data:`PROMPTS`, :mod:`.drift_prompts`), uses the record's prompt identity where prompts
repeat (a group path record given ``prompts``): each prompt's pass rate a posterior under the Beta given its own
groups, each group scored by its prompt's posterior predictive; its chooser's score reads posteriors taken on the
steps before the first origin only (one parameter per prompt would otherwise be scored on its own data).

**Per-step likelihood** ``LL[s, h]`` = sum over the step's groups of log P(k | h), and

* where the record holds only the groups that trained (the survivors of DAPO's filter, verl's rollout dump):
  a group is in the record only if 0 < k < K, so P(k | h) is replaced by P(k | h) / (1 - P(0 | h) - P(K | h))
  (the beta-binomial truncated at both ends); and, where the record logs ``train/num_gen_batches`` R_s, the
  rounds add log P(R = r | u(h)), P(R <= r) = P(Binomial(r B, u) >= T) (u = the mixed share at h). The rounds
  carry nothing where every logged R is 1 beyond a lower bound on u. Without the rounds, where the cap is known,
  each step adds log P(R <= cap | u(h)) (:func:`filled_logp`): the logged step filled, which bounds u below;
* where every generated group is recorded, the stopping rule of dynamic sampling is ignorable and the groups
  alone are the likelihood (the rounds are a function of them).

The per-step shares of a tracker log (no groups) give their own ``LL[s, h]`` on the same grid
(:class:`.drift_shares.ShareEvidence`, passed where ``counts`` goes): everything below is then the same for both.

**Population** (a, b): maximises sum_s LL[s, beta tau_s] jointly with a nuisance linear shift beta (Nelder-Mead
on (log a, log b, beta) from an explicit first simplex, :data:`POPULATION_STEP`); its covariance from the numerical
Hessian (:func:`.fit._hessian`) there, beta profiled out. (Integrating each later step's shift out on the grid instead, flat, was tried: on survivors-only records it
made the forecast worse, e.g. plateau 75 -> 47% covered; docs/doctor.md.) **Per-step shift**: ``h_hat[s]`` and
``se[s]``, the mean and standard deviation of h under exp(LL[s, .]) on the grid.

**Mixed share only** (evidence most of whose steps resolve the mixed share alone, the zero-std share or the
rounds: ``counts.mixed_only``, :class:`.drift_shares.ShareEvidence`). Under the logit link a population and its
mirror (p -> 1 - p: Beta(b, a), the masses swapped) under the opposite shift give every step the same mixed share,
so a step's likelihood in h has two modes, one on each side of the peak h* of the table's mixed share u(h), and
its mean and sd over the grid mean nothing. The population is fitted as above: the nuisance linear shift lands on
one side (the mirror is a label switch) and that side is kept. Each step's shift is then measured on the branch of
h* where the nuisance line beta tau_s lies (:func:`mirror_fold`: the step's likelihood cut at h*, the moments of
the side kept), so a path that crosses the peak is measured crossing it; the drawn populations of the forecasts
are measured alike. Such evidence pools its rows into bins of at least :data:`.drift_shares.MIXED_BIN_GROUPS`
groups (``counts.points``; a row of 64 groups barely tells h near h*). Named deviations: the branch is chosen by
that reference line, not by continuity from step to step (near h* the two modes merge, and continuity cannot tell
a path crossing the peak from one turning back); near h* the cut moves a step's measured shift off the peak by up
to 0.8 of its sd and narrows it. Everything after is unchanged (the shapes, the walk and the jump included, fitted
to those measurements); the chooser's scores integrate each step's whole likelihood, both modes. The side (all-pass
saturation vs all-fail collapse, the shift's sign) stays unidentified and is said so.

**Shapes on the tabulated likelihood** (bins of rows that give the rounds alone). A row of the rounds alone has a
likelihood in h that is a step in the mixed share: a row of one round is flat over every h whose mixed share fills
the batch in one round and falls off steeply below. A bin of such rows is a box, not a peak; its mean and sd describe
the box, but n such bins fitted as normal measurements allow a slope about sqrt(n / 6) times tighter than the box
does (a product of equal boxes is the box): on the stall study's logs whose 60 rows were all one round the expiry's
95% interval began at step 126 for crossings at 120-124. So where a bin's rows mostly give the rounds alone
(:func:`tabulated_bins`), the forecasts' draws of the shapes (:func:`.stall_risk.drift_futures`, :func:`fit_shape`
given ``LL``) weigh each drawn path by that bin's folded likelihood (:func:`folded`) at the path's shift, the other
bins by their moments' normal as before (:func:`shape_loglik`), summed over the bins and over the fit's misfit
scale (:func:`tabulated_loglik`): the parameters of linear, power and plateau (:func:`_posterior_draws`), the
jump's change point and line (:func:`_jump_draws`), by sampling-importance-resampling from :data:`TAB_SIR_FACTOR` x
n proposals of the normal approximation, its covariance times :data:`TAB_PROPOSAL`, under flat priors. Named
deviations: the walk keeps the moments (its past path is not drawn); the shapes' fits, the chooser's weights and the
fitted curves are the moments' as before; a log of the zero-std share keeps the moments (weighed by its tabulated
likelihood, the study's zero-std first stall fell from 19/20 to 18/20: its rows' binomial likelihoods are peaked).

**Shapes** fitted to (s, h_hat, se) (weighted least squares, each with a free intercept c; their covariance
scaled up by the reduced chi-square when it exceeds 1, i.e. by the misfit):

* ``linear`` (logit link): c + beta tau (tau = s - s0);
* ``power`` (log-log link): c + A log(1 + gamma tau), gamma > 0 (A = 1 is the power map; A free);
* ``plateau`` (logit link): c + A (1 - exp(-tau / lambda)), lambda > 0;
* ``walk`` (logit link, the flexible one): a local level with drift, h_s = h_{s-1} + d + eta, eta ~ N(0, sigma^2)
  per step, observed with error se_s (Kalman filter over the state (h, d), diffuse start; sigma by maximum
  likelihood). It follows any path and extrapolates the recent slope with a variance that grows with the
  distance ahead;
* ``walk_loglog`` (log-log link): the same walk on the log-log link's shifts, offered to the ``prompts`` variant
  (:data:`WALK_LOGLOG_FOR`). There each link carries its flexible shape, so that the link the groups' identity
  prefers does not force a rigid path: with the power alone on the log-log link, the variant's identity likelihood
  chose the link by some 770 nats on broad-tasa's scored steps (the shapes of one link 50-300 apart) and the power,
  concave, could not follow the shift's later rise (its band held 67.8% of the later steps). Named deviation: the
  marginal variants (their links 25-160 nats apart there) are not offered it: offered to every variant it
  moved the per-step shares' back-test by -17 to +10 rows a run (broad-ds 243 -> 226 of 295) and cost some 8% more
  CPU (docs/doctor.md, "Each link its flexible shape");
* ``jump`` (logit link, a change point): c + beta tau + J [tau >= tau_j], one level shift J at an unknown logged
  point j and a common drift beta before and after it. Given j it is linear (weighted least squares: theta_j and
  its covariance); j is profiled over every logged point with :data:`JUMP_SIDE` points on each side and carried
  as a discrete parameter with weights exp(-chi2_j / (2 scale)) |X_j' W X_j|^(-1/2) (the marginal likelihood of
  j under a flat prior on theta; scale the reduced chi-square of the best j where above 1). Its prediction is the
  mixture over j; beyond the logged steps every j gives c + J + beta tau, so a one-off jump is read as a level
  that moved once, not as drift (the walk and the linear read the jump's height into their slope).

**Choosing among them** (:func:`shape_weights`): the doctor's one chooser, :func:`.choice.lfo_weights` (the
scalars path chooses its drift maps with it too): leave-future-out on the logged steps (Buerkner, Gabry and Vehtari
2020), refitted at rolling origins. The origins are every logged point from :data:`.choice.ORIGIN` (half the
points) on, or :data:`.choice.MAX_ORIGINS` evenly spaced ones on a longer record; each shape is fitted on the
points up to an origin and scores the points up to the next origin (each point scored once, a few steps ahead: the prequential log
score) by log of the integral of exp(LL[s, h]) times its predictive density of h (the data's own likelihood, so
the two links compare). Scoring every later point from a few fixed origins instead (the earlier design: origins
at 50, 65 and 80%) lets one surprise count at every later point: a jump just after an origin, which no shape fitted
before it can foresee, then outweighs everything seen after it and hands the weight to whichever shape is widest
there. Weights are pseudo-BMA+ (Yao et al. 2018): softmax of the summed scores, averaged over
Bayesian-bootstrap (Dirichlet) reweightings of the scored steps, so that a choice the data cannot make stays
shared.
"""

from __future__ import annotations

import hashlib
import pickle

import numpy as np
from scipy import optimize, special
from scipy.special import expit, gammaln, logit, logsumexp

from .choice import lfo_weights
from .fit import _hessian

__all__ = ["H_GRID", "NODES", "LINKS", "SHAPES", "WALKS", "WALK_LOGLOG_FOR", "variant_shapes", "VARIANTS", "population_table", "population_params",
           "population_nll", "rounds_logp", "filled_logp", "step_loglik", "fit_population", "step_bins", "shift_estimates", "mirror_fold", "fit_shape", "predict",
           "folded", "tabulated_bins", "shape_loglik", "tabulated_loglik",
           "shape_weights", "model_weights", "measure_drift", "forget_measured"]

H_GRID = np.linspace(-12.0, 12.0, 241)  #: the shifts h on which the per-step likelihood is tabulated
NODES = 48  #: quantile nodes of the Beta population
LINKS = ("logit", "loglog")
SHAPES = {"linear": "logit", "power": "loglog", "plateau": "logit", "walk": "logit", "jump": "logit",
          "walk_loglog": "loglog"}  #: shape -> link
WALKS = ("walk", "walk_loglog")  #: the local level with drift on each link (module docstring, "Shapes")
PROMPTS = "prompts"  #: the variant of :mod:`.drift_prompts`, measured where :func:`measure_drift` is given prompts
#: the same under the ``masses`` variant's population as the prompts' prior (a prompt whose groups all failed may be
#: never solvable, and then does not move with the shift), measured beside it where ``masses`` is
PROMPTS_MASSES = "prompts_masses"
PROMPT_VARIANTS = (PROMPTS, PROMPTS_MASSES)
#: the variants offered ``walk_loglog`` (module docstring, "Shapes"): the prompts variants, whose two links are told
#: apart by the groups' identity (:mod:`.drift_prompts`); the others are offered every other shape
WALK_LOGLOG_FOR = PROMPT_VARIANTS


def variant_shapes(variant: str) -> list[str]:
    """The shapes (:data:`SHAPES`) the chooser offers ``variant``: ``walk_loglog`` only to :data:`WALK_LOGLOG_FOR`."""
    return [s for s in SHAPES if s != "walk_loglog" or variant in WALK_LOGLOG_FOR]
SIR_FACTOR = 4  #: proposals per parameter draw (:func:`_posterior_draws`)
#: on the tabulated likelihood (a fit given ``LL``, :func:`fit_shape`): proposals per draw and the factor on the
#: normal approximation's covariance they are drawn with. A flat-topped likelihood (every row one round) allows
#: paths out to its edges, 3.5 of the per-step moments' sd of the slope away on 12 bins, where the doubled
#: covariance's proposals (SIR_FACTOR) barely reach
TAB_SIR_FACTOR, TAB_PROPOSAL = 16, 8.0
FOLD_OFF = -1e6  #: the log-likelihood :func:`folded` gives the mirror side (finite: a path there still weighs)
MAX_POINTS = 150  #: a record of more steps has its consecutive steps pooled into this many points (bins)
JUMP_SIDE = 3  #: the ``jump`` shape's change point has at least this many logged points before it
_P = 1e-12


def _g(p, link):
    p = np.clip(p, _P, 1 - _P)
    return logit(p) if link == "logit" else -np.log(-np.log(p))


def _ginv(z, link):
    # log-log link: below z = -700, exp(-z) overflows and the pass rate is 0 to double precision anyway
    return expit(z) if link == "logit" else np.exp(-np.exp(-np.maximum(z, -700.0)))


def population_table(a: float, b: float, K: int, link: str, grid=H_GRID, w0: float = 0.0, w1: float = 0.0,
                     logit_shift: float = 0.0) -> dict:
    """Per shift h of ``grid``: ``pmf`` (len(grid), K + 1) the group pmf, ``u`` the mixed share, ``u2`` the mean
    squared P(mixed) over prompts (for the between-prompt variance of u), ``fail`` / ``pass`` the shares of
    all-fail / all-pass groups. ``w0`` / ``w1``: shares of prompts never solved (p = 0) and never failed (p = 1),
    which the shift does not move (the ``masses`` population, module docstring); the Beta holds the rest.
    ``logit_shift``: every drifted pass rate's logit moved by this much besides (the data's difficulty changed,
    :func:`.rules.cap_changes`; the masses stay at 0 and 1)."""
    p = beta_nodes(a, b)
    return kernel_table(binomial_pmf(shifted(p, grid[:, None], link, logit_shift), K), K, link, w0, w1)


def beta_nodes(a: float, b: float) -> np.ndarray:
    """The :data:`NODES` quantile midpoints of Beta(a, b) (the population's prompts): the inverse regularised
    incomplete beta function, ``stats.beta.ppf``'s own values without its argument checks (called per likelihood
    evaluation of the population fits; equal to it over 20,000 random (a, b) in [1e-3, 1e4]^2)."""
    return np.clip(special.betaincinv(a, b, _NODE_Q), _P, 1 - _P)


_NODE_Q = (np.arange(NODES) + 0.5) / NODES  #: the quantile levels of :func:`beta_nodes`


def shifted(p, H, link: str, logit_shift: float = 0.0) -> np.ndarray:
    """Pass rates g^-1(g(p) + H) (``H`` broadcast against ``p``; e.g. (len(grid), 1)), then every logit moved by
    ``logit_shift``; clipped to (0, 1)."""
    P = np.clip(_ginv(_g(p, link) + H, link), _P, 1 - _P)
    return np.clip(expit(logit(P) + logit_shift), _P, 1 - _P) if logit_shift else P


def binomial_pmf(P, K: int) -> np.ndarray:
    """Binomial(k; K, P) for every pass rate of ``P`` (..., ) : (..., K + 1)."""
    k = np.arange(K + 1)
    logc = gammaln(K + 1) - gammaln(k + 1) - gammaln(K - k + 1)
    return np.exp(logc + k * np.log(P)[..., None] + (K - k) * np.log1p(-P)[..., None])


def kernel_table(pmf_j, K: int, link: str, w0: float = 0.0, w1: float = 0.0) -> dict:
    """:func:`population_table`'s dict from the group pmf of every population node per shift, ``pmf_j`` (H,
    nodes, K + 1) (equal-weight nodes), with masses w0 / w1 at k = 0 / K beside them."""
    rest = 1.0 - w0 - w1
    pmf = rest * pmf_j.mean(axis=1)
    pmf[:, 0] += w0
    pmf[:, K] += w1
    uj = 1.0 - pmf_j[..., 0] - pmf_j[..., K]
    return {"pmf": pmf, "u": 1.0 - pmf[:, 0] - pmf[:, K], "u2": rest * (uj * uj).mean(axis=1), "fail": pmf[:, 0],
            "pass": pmf[:, K], "K": K, "link": link, "w0": float(w0), "w1": float(w1)}


def rounds_logp(r, u, gen_batch: int, train_batch: int) -> np.ndarray:
    """log P(R = r | u) of the rounds a step needs (from a large dataset): P(R <= r) = P(Bin(rB, u) >= T)
    (:func:`.stall.rounds_distribution`'s law), ``r`` and ``u`` broadcast together. The one rounds likelihood of
    both paths (:func:`rounds_logpmf` here, :func:`.scalars_fit._row_loglik`)."""
    u = np.clip(np.asarray(u, float), 1e-12, 1 - 1e-12)
    v = np.round(np.asarray(r, float)).astype(np.int64)
    hi = special.bdtrc(train_batch - 1, v * gen_batch, u)
    lo = np.where(v > 1, special.bdtrc(train_batch - 1, np.maximum(v - 1, 1) * gen_batch, u), 0.0)
    return np.log(np.maximum(hi - lo, 1e-300))


def rounds_logpmf(r, u, gen_batch: int, train_batch: int) -> np.ndarray:
    """:func:`rounds_logp` on the grid: ``r`` (S,) and ``u`` (H,) give (S, H) (per distinct r only)."""
    vals, inv = np.unique(np.asarray(r, float), return_inverse=True)
    return rounds_logp(vals[:, None], np.asarray(u, float)[None, :], gen_batch, train_batch)[inv]


def filled_logp(u, settings: dict) -> np.ndarray:
    """log P(R <= cap | u) = log P(Binomial(cap B, u) >= T): the step filled its T mixed groups within its cap of
    rounds (:func:`rounds_logp`'s law). Every step of a record completed (a stalled step logs nothing), so a
    survivors-only record without the rounds still holds this of the mixed share. Named deviation: the rounds
    are drawn as from a large dataset (a finite prompt set drawn without replacement fills a little more surely)."""
    n = int(settings["cap_effective"]) * int(settings["gen_batch"])
    u = np.clip(np.asarray(u, float), 1e-12, 1 - 1e-12)
    return np.log(np.maximum(special.bdtrc(int(settings["train_batch"]) - 1, n, u), 1e-300))


def step_bins(n_steps: int, points: int = MAX_POINTS) -> np.ndarray:
    """Bin index per step: consecutive steps pooled into at most ``points`` bins of near-equal size
    (one step per bin for a record of fewer steps). The shift is taken as constant within a bin."""
    return (np.arange(n_steps) * min(n_steps, points)) // max(n_steps, 1)


def step_loglik(table: dict, counts: np.ndarray, survivors: bool, rounds=None, settings: dict | None = None,
                bins=None):
    """``LL`` (steps, len(H_GRID)) of the per-step cell counts ``counts`` (steps, K + 1) (module docstring);
    with ``bins`` (:func:`step_bins`), the rows of each bin summed: (bins, len(H_GRID))."""
    LL = _step_loglik(table, counts, survivors, rounds, settings)
    if bins is None:
        return LL
    out = np.zeros((int(bins[-1]) + 1, LL.shape[1]))
    np.add.at(out, bins, LL)
    return out


def _step_loglik(table, counts, survivors, rounds, settings):  # settings: _LIKELIHOOD_SETTINGS' keys only
    if "evidence" in table:  # the prompts variant: the groups by identity (.drift_prompts; every group logged)
        return table["evidence"].loglik(table)
    if hasattr(counts, "loglik"):  # evidence other than group counts: the per-step shares (.drift_shares)
        return counts.loglik(table)
    K = table["K"]
    logpmf = np.log(np.maximum(table["pmf"], 1e-300))
    if survivors:
        lp = logpmf[:, 1:K] - np.log(np.maximum(table["u"], 1e-300))[:, None]
        LL = counts[:, 1:K] @ lp.T
        if rounds is not None:
            LL = LL + rounds_logpmf(rounds, table["u"], settings["gen_batch"], settings["train_batch"])
        elif settings and settings.get("cap_effective"):  # without rounds: still, every logged step filled
            LL = LL + filled_logp(table["u"], settings)[None, :]
        return LL
    return counts @ logpmf.T


def _moments(LL: np.ndarray):
    """Mean and standard deviation of h under exp(LL[s, .]) on the grid (flat prior)."""
    w = np.exp(LL - LL.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    m = w @ H_GRID
    sd = np.sqrt(np.maximum(w @ H_GRID**2 - m**2, (H_GRID[1] - H_GRID[0]) ** 2 / 12))
    return m, sd


MASS_BOUNDS = (-12.0, 4.0)  #: bounds of the masses' log-odds z0, z1 (w_i = e^z_i / (1 + e^z0 + e^z1))
#: population variants: the Beta alone; the Beta with masses at p = 0 and p = 1; those of :mod:`.drift_variants`
EXTRA_VARIANTS = ("overdispersed", "rates")
VARIANTS = ("beta", "masses", *EXTRA_VARIANTS)


#: Nelder-Mead's first simplex in :func:`fit_population`: x0 and x0 plus this step along each coordinate (log a, log b[,
#: z0, z1], the shift at the last step), by ``masses``. scipy's own moves a coordinate by 5% of its value, or by
#: 0.00025 where it is 0: the shift started at 0 barely moved (the Beta stuck at no drift, up to 105 nats short)
POPULATION_STEP = {False: np.array([0.3, 0.3, 0.5]), True: np.array([0.3, 0.3, 1.0, 1.0, 0.5])}


def population_params(x, masses: bool) -> tuple[float, float, float, float]:
    """(a, b, w0, w1) of a population parameter vector x = (log a, log b[, z0, z1]) (bounds applied)."""
    a, b = np.exp(np.clip(np.asarray(x[:2], float), np.log(1e-3), np.log(1e4)))
    if not masses:
        return float(a), float(b), 0.0, 0.0
    z = np.exp(np.clip(np.asarray(x[2:4], float), *MASS_BOUNDS))
    return float(a), float(b), float(z[0] / (1 + z.sum())), float(z[1] / (1 + z.sum()))


def population_nll(x, beta: float, counts, K: int, link: str, survivors: bool, rounds=None, settings=None,
                   tau=None, bins=None, masses: bool = False, table=None) -> float:
    """- sum_s LL[s, beta tau_s] of the population x (:func:`population_params`) with the linear shift beta per
    step (the objective of :func:`fit_population`). ``table``: (x, grid) -> the population's table on ``grid``
    for another population variant (:mod:`.drift_variants`); default the Beta with ``masses`` or without."""
    bins = np.arange(counts.shape[0]) if bins is None else bins
    tau = np.arange(int(bins[-1]) + 1, dtype=float) if tau is None else np.asarray(tau, float)
    pos = np.clip(np.interp(beta * tau, H_GRID, np.arange(len(H_GRID))), 0, len(H_GRID) - 1.000001)
    i = pos.astype(int)
    f = pos - i
    cols = np.unique(np.concatenate([i, i + 1]))  # the table only at the grid points the shifts fall between
    if table is None:
        a, b, w0, w1 = population_params(x, masses)
        tab = population_table(a, b, K, link, H_GRID[cols], w0=w0, w1=w1)
    else:
        tab = table(x, H_GRID[cols])
    LL = step_loglik(tab, counts, survivors, rounds, settings, bins)
    j = np.searchsorted(cols, i)
    rows = np.arange(len(tau))
    return -float(np.sum(LL[rows, j] * (1 - f) + LL[rows, j + 1] * f))


def fit_population(counts, K: int, link: str, survivors: bool, rounds=None, settings=None, tau=None,
                   bins=None, masses: bool = False, start=None) -> dict:
    """ML population (a, b) at the first step, jointly with a nuisance linear shift h = beta tau on the link
    scale (module docstring); with ``masses`` also the shares w0, w1 of prompts never solved / never failed
    (log-odds z0, z1 against the Beta's share). Returns ``a``, ``b``, ``w0``, ``w1``, ``x`` (log a, log b[, z0,
    z1]), ``cov`` (of x, beta profiled out of the Hessian; NaN if it is not positive definite), ``beta``.
    ``start``: a fit of the Beta alone to start the masses' fit from."""
    bins = np.arange(counts.shape[0]) if bins is None else bins
    tau = np.arange(int(bins[-1]) + 1, dtype=float) if tau is None else np.asarray(tau, float)
    span = max(float(tau.max()), 1.0)
    npar = 4 if masses else 2

    def nll3(x):  # x[-1] is the shift at the last step
        return population_nll(x[:npar], x[-1] / span, counts, K, link, survivors, rounds, settings, tau, bins, masses)

    c = counts.sum(axis=0)
    kk = np.arange(K + 1)
    m = float(np.clip(c @ kk / (K * c.sum()), 0.05, 0.95))
    if masses:  # from the Beta's fit with no masses, and from masses the size of the unanimous shares' excess
        b0 = start if start is not None else fit_population(counts, K, link, survivors, rounds, settings, tau, bins)
        f0, f1 = (c[0] / c.sum(), c[K] / c.sum()) if not survivors else (0.1, 0.1)
        z = lambda w0, w1: np.log(np.maximum([w0, w1], 1e-5) / max(1 - w0 - w1, 0.05))  # noqa: E731
        x0s = [np.r_[b0["x"], z(1e-4, 1e-4), b0["beta"] * span], np.r_[b0["x"], z(0.5 * f0, 0.5 * f1), b0["beta"] * span]]
    else:  # two starts: a diffuse and a concentrated population of the observed mean
        x0s = [np.array([np.log(m * tot), np.log((1 - m) * tot), 0.0]) for tot in (1.0, 4.0)]
    best, at = None, [nll3(x0) for x0 in x0s]
    for x0, start_nll in zip(x0s, at):
        # a start far worse than the first start (both unclimbed) is not climbed; against the first's climbed optimum
        # it would be skipped wrongly where the first stopped early on a flat mass direction (1.2 nats short on a
        # Beta(1.5, 1.5) logit drift with the masses started at zero shift: test_population_fit_moves_the_...)
        if start_nll > at[0] + 50:
            continue
        res = optimize.minimize(nll3, x0, method="Nelder-Mead", options={
            "xatol": 1e-2, "fatol": 1e-2, "maxiter": 300 if not masses else 600,
            "initial_simplex": np.vstack([x0, x0 + np.diag(POPULATION_STEP[masses])])})
        if best is None or res.fun < best.fun:
            best = res
    x = best.x.copy()
    x[:2] = np.clip(x[:2], np.log(1e-3), np.log(1e4))
    if masses:
        x[2:4] = np.clip(x[2:4], *MASS_BOUNDS)
    H = _hessian(nll3, x, 1e-2)
    # a mass at its lower bound (none of it: w < 1e-4) is flat there: the covariance of the other coordinates, that mass
    # given a unit variance of its log-odds (still nothing of it) and no correlation
    free = np.array([not (masses and 2 <= i < 4 and x[i] < MASS_BOUNDS[0] + 3.0) for i in range(len(x))])
    cov = profiled_cov(H, free, npar)
    a, b, w0, w1 = population_params(x[:npar], masses)
    return {"a": a, "b": b, "w0": w0, "w1": w1, "masses": masses, "x": x[:npar], "cov": cov, "link": link,
            "nll": float(best.fun), "beta": float(x[-1]) / span}


def profiled_cov(H, free, npar: int) -> np.ndarray:
    """The covariance of the first ``npar`` coordinates from the Hessian ``H`` of the negative log-likelihood
    (the rest, e.g. the nuisance shift, profiled out); a coordinate not ``free`` (flat at its bound) given a unit
    variance and no correlation. NaN where the free block is not positive definite."""
    try:
        Hf = H[np.ix_(free, free)]
        np.linalg.cholesky(Hf)
        full = np.diag(np.where(free, 0.0, 1.0))
        full[np.ix_(free, free)] = np.linalg.inv(Hf)
        return full[:npar, :npar]
    except np.linalg.LinAlgError:
        return np.full((npar, npar), np.nan)


def shift_estimates(LL: np.ndarray, fold=None) -> tuple[np.ndarray, np.ndarray]:
    """(h_hat, se) per step: the mean and sd of h under each step's likelihood; the first step is h = 0.
    ``fold`` (:func:`mirror_fold`): ``(u, h_ref)``, the table's mixed share on the grid and a reference shift per
    step: each step's likelihood is cut at the mixed share's peak h* = argmax u and kept on the side of h* its
    reference lies (h >= h* where h_ref >= h*), so a step whose shares resolve the mixed share only (two mirror
    modes, one on each side of h*) is measured on one branch (module docstring, "Mixed share only")."""
    return _moments(LL if fold is None else folded(LL, fold, -np.inf))


def folded(LL: np.ndarray, fold, off: float = FOLD_OFF) -> np.ndarray:
    """``LL`` cut at the mixed share's peak h* as :func:`shift_estimates` cuts it (``fold`` its ``(u, h_ref)``):
    each row kept on the side of h* its reference lies, ``off`` on the other (``LL`` itself where ``fold`` is None)."""
    if fold is None:
        return LL
    u, ref = fold
    peak = H_GRID[int(np.argmax(u))]
    right = np.asarray(ref, float)[:, None] >= peak
    return np.where(np.where(right, H_GRID[None, :] >= peak, H_GRID[None, :] <= peak), LL, off)


def mirror_fold(counts, table: dict, pop: dict, tau) -> tuple | None:
    """The ``fold`` of :func:`shift_estimates` for evidence that resolves the mixed share only on most of its
    steps (``counts.mixed_only``, :class:`.drift_shares.ShareEvidence`): the ``table``'s mixed share and the
    population ``pop``'s nuisance linear shift ``pop["beta"] * tau`` (:func:`fit_population`) as the reference,
    the side its fit landed on; None for any other evidence (group counts: every step is measured whole)."""
    if not getattr(counts, "mixed_only", False):
        return None
    return table["u"], float(pop["beta"]) * np.asarray(tau, float)


def tabulated_bins(counts, bins) -> np.ndarray | None:
    """Per bin (``bins``, :func:`step_bins` of the evidence's rows): more than half its rows have a flat-topped
    likelihood (``counts.flat_rows``, :class:`.drift_shares.ShareEvidence`: the rows that give the rounds alone);
    None where no bin does, or the evidence says nothing of it (group counts)."""
    flat = getattr(counts, "flat_rows", None)
    if flat is None or not np.any(flat):
        return None
    bins = np.asarray(bins)
    tab = np.bincount(bins, weights=np.asarray(flat, float)) / np.bincount(bins) > 0.5
    return tab if tab.any() else None


def shape_loglik(LL: np.ndarray, h, se, fold, tab) -> np.ndarray | None:
    """The per-bin log-likelihood on :data:`H_GRID` the shapes' draws weigh a path by (:func:`fit_shape`'s ``LL``):
    on the bins ``tab`` (:func:`tabulated_bins`) the tabulated ``LL`` cut as the shifts were measured
    (:func:`folded` with ``fold``), elsewhere the normal of the measured shift ``h`` and its ``se`` (what the draws
    weighed every bin by before); None where ``tab`` is None (the draws weigh by the moments alone)."""
    if tab is None:
        return None
    normal = -0.5 * ((H_GRID[None, :] - np.asarray(h, float)[:, None]) / np.asarray(se, float)[:, None]) ** 2
    return np.where(np.asarray(tab)[:, None], folded(LL, fold), normal)


# ------------------------------------------------------------------------------------------ shapes

_LOG_RATE = (-15.0, 0.0)  #: bounds of log r (the power's gamma, the plateau's 1 / lambda; r <= 1 per step: a
#: faster bend is a jump at the first step, which no shape should extrapolate from)


def _curve(shape, theta, tau):
    """The shape's h(tau); power and plateau as c + s f(r tau) / r, so that s is the initial slope and both
    tend to the linear c + s tau as r -> 0 (a rate the data cannot see stays harmless)."""
    tau = np.asarray(tau, float)
    if shape == "linear":
        return theta[0] + theta[1] * tau
    r = np.exp(float(np.clip(theta[2], *_LOG_RATE)))
    if shape == "power":
        return theta[0] + theta[1] * np.log1p(r * tau) / r
    if shape == "plateau":
        return theta[0] + theta[1] * (-np.expm1(-r * tau)) / r
    raise ValueError(shape)


def _jac(shape, theta, tau):
    """d curve / d theta, (len(tau), len(theta))."""
    one = np.ones_like(tau)
    if shape == "linear":
        return np.stack([one, tau], 1)
    r = np.exp(float(np.clip(theta[2], *_LOG_RATE)))
    if shape == "power":
        f = np.log1p(r * tau) / r
        return np.stack([one, f, theta[1] * (tau / (1 + r * tau) - f)], 1)
    f = -np.expm1(-r * tau) / r
    return np.stack([one, f, theta[1] * (tau * np.exp(-r * tau) - f)], 1)


def _starts(shape, tau, h):
    span = max(float(tau.max()), 1.0)
    slope = float(np.polyfit(tau, h, 1)[0]) if len(tau) > 1 else 0.0
    if shape == "linear":
        return [np.array([h[0], slope])]
    return [np.array([h[0], slope * (1 + k), np.log(k / span)]) for k in (0.1, 3.0)]


def _kalman(tau, h, se, sigma):
    """Local level with drift (state (level, drift), diffuse start): log-likelihood and the last filtered state
    (mean (2,), covariance (2, 2)). Written out in scalars: the 2 x 2 algebra costs more in numpy calls."""
    m0, m1 = float(h[0]), 0.0
    p00, p01, p11 = float(se[0]) ** 2, 0.0, 1e2  # after the first observation: level known to its error
    ll = 0.0
    s2 = sigma * sigma
    for i in range(1, len(tau)):
        dt = float(tau[i] - tau[i - 1])
        m0 += dt * m1
        p00, p01 = p00 + 2 * dt * p01 + dt * dt * p11 + s2 * dt, p01 + dt * p11
        S = p00 + float(se[i]) ** 2
        v = float(h[i]) - m0
        ll += -0.5 * (np.log(2 * np.pi * S) + v * v / S)
        k0, k1 = p00 / S, p01 / S
        m0, m1 = m0 + k0 * v, m1 + k1 * v
        p00, p01, p11 = p00 - k0 * p00, p01 - k0 * p01, p11 - k1 * p01
    return ll, np.array([m0, m1]), np.array([[p00, p01], [p01, p11]])


def _fit_jump(tau, h, se) -> dict:
    """The ``jump`` shape (module docstring): per candidate change point j (index into tau), the weighted least
    squares of (c, beta, J) in closed form, vectorised over j; ``p`` the weights of j, ``theta`` (m, 3) and
    ``cov`` (m, 3, 3) per candidate, ``theta``/``cov`` of the best j beside."""
    n = len(tau)
    w = 1.0 / se**2
    cands = np.arange(JUMP_SIDE, n) if n > JUMP_SIDE + 2 else np.array([n // 2])
    rc = lambda x: np.cumsum(x[::-1])[::-1]  # noqa: E731  (sum over i >= j)
    S0, S1, S2 = w.sum(), (w * tau).sum(), (w * tau * tau).sum()
    T0, T1, Th = rc(w)[cands], rc(w * tau)[cands], rc(w * h)[cands]
    A = np.empty((len(cands), 3, 3))
    A[:, 0, 0], A[:, 0, 1], A[:, 1, 1] = S0, S1, S2
    A[:, 0, 2] = A[:, 2, 0] = A[:, 2, 2] = T0
    A[:, 1, 2] = A[:, 2, 1] = T1
    A[:, 1, 0] = S1
    bvec = np.stack([np.full(len(cands), (w * h).sum()), np.full(len(cands), (w * tau * h).sum()), Th], 1)
    A = A + 1e-12 * S0 * np.eye(3)  # a candidate that cannot separate J (no weight after it) stays solvable
    theta = np.linalg.solve(A, bvec[..., None])[..., 0]
    chi2 = np.maximum((w * h * h).sum() - np.einsum("ij,ij->i", bvec, theta), 0.0)
    dof = max(n - 4, 1)
    scale = max(1.0, float(chi2.min()) / dof)
    logp = -0.5 * chi2 / scale - 0.5 * np.linalg.slogdet(A)[1]
    p = np.exp(logp - logp.max())
    p /= p.sum()
    cov = np.linalg.inv(A) * scale
    i = int(np.argmax(p))
    return {"shape": "jump", "_tau": tau, "cands": tau[cands], "p": p, "thetas": theta, "covs": cov,
            "theta": theta[i], "cov": cov[i], "chi2": float(chi2[i]), "dof": int(dof), "scale": scale,
            "tau_jump": float(tau[cands[i]])}


def fit_shape(shape: str, tau, h, se, LL=None) -> dict:
    """Fit one shape to the per-step shifts (module docstring). Returns ``shape``, ``theta``, ``cov`` (scaled
    by the reduced chi-square where above 1), ``chi2``, ``dof``; for ``walk``: ``sigma``, ``state`` (m, P of
    (level, drift) at the last step) and ``tau_last``. ``LL`` (the per-step likelihood on :data:`H_GRID` the
    shifts were measured from, rows as ``tau``): the parametric shapes' and the jump's draws weigh each drawn path
    by it (:func:`_posterior_draws`, :func:`_jump_draws`; "Shapes on the tabulated likelihood" in the module
    docstring); the walk ignores it."""
    tau, h, se = (np.asarray(x, float) for x in (tau, h, se))
    if LL is not None and shape not in WALKS:
        return {**fit_shape(shape, tau, h, se), "_LL": np.asarray(LL, float)}
    if shape in WALKS:
        obj = lambda ls: -_kalman(tau, h, se, np.exp(ls))[0]  # noqa: E731
        res = optimize.minimize_scalar(obj, bounds=(np.log(1e-4), np.log(2.0)), method="bounded",
                                       options={"xatol": 1e-3})
        sigma = float(np.exp(res.x))
        _, m, P = _kalman(tau, h, se, sigma)
        return {"shape": shape, "sigma": sigma, "state": (m, P), "tau_last": float(tau[-1]), "loglik": -float(res.fun)}
    if shape == "jump":
        return _fit_jump(tau, h, se)
    best = None
    for x0 in _starts(shape, tau, h):
        r = optimize.least_squares(lambda th: (_curve(shape, th, tau) - h) / se, x0,
                                   jac=lambda th: _jac(shape, th, tau) / se[:, None],
                                   method="lm" if len(tau) > len(x0) else "trf", max_nfev=200)
        if best is None or r.cost < best.cost:
            best = r
    dof = max(len(tau) - len(best.x), 1)
    chi2 = 2.0 * best.cost
    J = best.jac
    try:
        cov = np.linalg.inv(J.T @ J) * max(1.0, chi2 / dof)
    except np.linalg.LinAlgError:
        cov = np.full((len(best.x), len(best.x)), np.nan)
    if not np.all(np.isfinite(cov)):
        cov = np.diag(np.full(len(best.x), 1e2))
    return {"shape": shape, "theta": best.x, "cov": cov, "chi2": float(chi2), "dof": int(dof),
            "scale": max(1.0, chi2 / dof), "_data": (tau, h, se)}


def predict(fit: dict, tau) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance of h at ``tau`` (parameter uncertainty; the walk's innovations too)."""
    tau = np.atleast_1d(np.asarray(tau, float))
    if fit["shape"] in WALKS:
        m, P = fit["state"]
        d = tau - fit["tau_last"]
        mean = m[0] + m[1] * d
        var = P[0, 0] + 2 * d * P[0, 1] + d * d * P[1, 1] + fit["sigma"] ** 2 * np.maximum(d, 0)
        return mean, var
    if fit["shape"] == "jump":  # the mixture over the change point: its mean and variance
        ind = (tau[None, :] >= fit["cands"][:, None]).astype(float)  # (m, len(tau))
        X = np.stack([np.ones_like(ind), np.broadcast_to(tau, ind.shape), ind], 2)  # (m, len(tau), 3)
        means = np.einsum("mtk,mk->mt", X, fit["thetas"])
        vars_ = np.einsum("mtk,mkl,mtl->mt", X, fit["covs"], X)
        mean = fit["p"] @ means
        return mean, np.maximum(fit["p"] @ (vars_ + means**2) - mean**2, 0.0)
    th = fit["theta"]
    mean = _curve(fit["shape"], th, tau)
    eps = 1e-5
    G = np.stack([(_curve(fit["shape"], th + eps * np.eye(len(th))[i], tau) - mean) / eps for i in range(len(th))], 1)
    var = np.einsum("ij,jk,ik->i", G, fit["cov"], G)
    return mean, np.maximum(var, 0.0)


def draw_paths(fit: dict, tau_future, n: int, rng) -> np.ndarray:
    """``n`` draws of h along ``tau_future`` (increasing, after the last fitted step): (n, len(tau_future))."""
    tau_future = np.asarray(tau_future, float)
    if fit["shape"] in WALKS:
        m, P = fit["state"]
        st = rng.multivariate_normal(m, P + 1e-12 * np.eye(2), size=n)
        d = np.diff(np.concatenate([[fit["tau_last"]], tau_future]))
        noise = np.cumsum(rng.standard_normal((n, len(d))) * fit["sigma"] * np.sqrt(np.maximum(d, 0))[None, :], axis=1)
        return st[:, :1] + st[:, 1:] * (tau_future - fit["tau_last"])[None, :] + noise
    if fit["shape"] == "jump":  # a change point by its weight, then (c, beta, J) from its normal posterior
        j, th = _jump_draws(fit, n, rng)
        ind = (tau_future[None, :] >= fit["cands"][j][:, None]).astype(float)
        return th[:, :1] + th[:, 1:2] * tau_future[None, :] + th[:, 2:3] * ind
    th = _posterior_draws(fit, n, rng)
    return np.stack([_curve(fit["shape"], t, tau_future) for t in th])


def _jump_draws(fit: dict, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` draws (change point index, (c, beta, J)) of a ``jump`` fit: the change point by its weight, then the
    line and the jump from its normal posterior; where the fit holds the tabulated likelihood (``_LL``), by
    sampling-importance-resampling from :data:`TAB_SIR_FACTOR` x n such proposals, the covariance times
    :data:`TAB_PROPOSAL`, weighted by that likelihood of each proposal's path (over the misfit scale) over its
    proposal density (flat priors on the change point and the line)."""
    tab = "_LL" in fit
    m, f = (TAB_SIR_FACTOR * n, TAB_PROPOSAL) if tab else (n, 1.0)
    j = rng.choice(len(fit["p"]), size=m, p=fit["p"])
    L = np.linalg.cholesky(f * fit["covs"][j] + 1e-12 * np.eye(3))
    z = rng.standard_normal((m, 3))
    th = fit["thetas"][j] + np.einsum("nkl,nl->nk", L, z)
    if not tab:
        return j, th
    tau = np.asarray(fit["_tau"], float)
    paths = th[:, :1] + th[:, 1:2] * tau[None, :] + th[:, 2:3] * (tau[None, :] >= fit["cands"][j][:, None])
    logq = np.log(fit["p"][j]) - 0.5 * np.sum(z * z, axis=1) - np.log(np.abs(np.diagonal(L, axis1=1, axis2=2))).sum(1)
    logw = tabulated_loglik(fit["_LL"], paths) / fit["scale"] - logq
    w = np.exp(logw - logw.max())
    k = rng.choice(m, size=n, p=w / w.sum())
    return j[k], th[k]


def tabulated_loglik(LL: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """sum_s LL[s, h_s] of each path of shifts ``paths`` (m, rows of ``LL``), ``LL`` interpolated on
    :data:`H_GRID` (a shift beyond the grid: its end)."""
    pos = np.clip(np.interp(paths, H_GRID, np.arange(len(H_GRID), dtype=float)), 0, len(H_GRID) - 1.000001)
    i = pos.astype(int)
    f = pos - i
    rows = np.arange(LL.shape[0])[None, :]
    return np.sum(LL[rows, i] * (1 - f) + LL[rows, i + 1] * f, axis=1)


def _posterior_draws(fit: dict, n: int, rng) -> np.ndarray:
    """``n`` parameter draws by sampling-importance-resampling: :data:`SIR_FACTOR` x n proposals from the normal
    approximation with its covariance doubled, weighted by exp(-chi^2 / (2 scale)) (the fit's own, misfit-scaled
    likelihood of the logged shifts) over the proposal's density, resampled. The normal approximation alone
    misplaces a nonlinear shape whose rate is unidentified (a plateau on a flat path): such draws are given
    the weight of their fit to the logged steps, not their normal weight. The fit itself is one proposal, so
    that where every proposal fits badly the draws fall back on it, not on the least bad wild one."""
    tau, h, se = fit["_data"]
    tab = "_LL" in fit
    cov = (fit["cov"] + fit["cov"].T) / 2
    vals, vecs = np.linalg.eigh(cov)
    sd = np.sqrt(np.maximum(vals, 1e-18)) * np.sqrt(TAB_PROPOSAL if tab else 2.0)
    m = (TAB_SIR_FACTOR if tab else SIR_FACTOR) * n
    z = rng.standard_normal((m, len(vals)))
    th = fit["theta"][None, :] + (z * sd) @ vecs.T
    th = np.vstack([th, fit["theta"][None, :]])  # the fit itself among the proposals: never only wild ones
    z = np.vstack([z, np.zeros((1, len(vals)))])
    if tab:  # the path's likelihood on the grid (over the misfit scale), not the moments' normal one
        loglik = tabulated_loglik(fit["_LL"], np.stack([_curve(fit["shape"], t, tau) for t in th]))
    else:
        loglik = -0.5 * np.array([np.sum(((_curve(fit["shape"], t, tau) - h) / se) ** 2) for t in th])
    logw = loglik / fit["scale"] + 0.5 * np.sum(z * z, axis=1)
    w = np.exp(logw - logw.max())
    return th[rng.choice(m + 1, size=n, p=w / w.sum())]


def _score(LL_rows: np.ndarray, mean, var) -> np.ndarray:
    """log of the integral of exp(LL[s, h]) N(h; mean_s, var_s) dh on the grid, per scored step."""
    dh = H_GRID[1] - H_GRID[0]
    v = np.maximum(var, dh * dh)[:, None]
    logn = -0.5 * np.log(2 * np.pi * v) - 0.5 * (H_GRID[None, :] - mean[:, None]) ** 2 / v
    return logsumexp(LL_rows + logn, axis=1) + np.log(dh)


def shape_weights(tau, per_link: dict, rng=None) -> dict:
    """Pseudo-BMA+ weights of :data:`SHAPES` by rolling-origin scores (module docstring).

    ``per_link``: {link: (LL, h_hat, se)}. Returns ``weights`` {shape: w}, ``scores`` {shape: summed log score},
    ``scored_steps``."""
    return model_weights(tau, {"beta": per_link}, rng)


def model_weights(tau, per_variant: dict, rng=None, points: dict | None = None) -> dict:
    """Pseudo-BMA+ weights of every (population variant, shape) pair by the rolling-origin scores of the module
    docstring, each pair scored on its own variant's per-step likelihood (the same data, so the scores compare);
    a variant's shapes those :func:`variant_shapes` offers it.

    ``per_variant``: {variant: {link: (LL, h_hat, se)}}. Returns ``weights`` {shape: w summed over variants},
    ``variants`` {variant: w}, ``pairs`` {"variant/shape": w}, ``scores`` {shape: summed log score of the first
    variant}, ``pair_scores``, ``scored_steps``. ``points``: {(variant, shape, cut, end): the pair's point scores}
    for these ``tau`` and ``per_variant``, read where present and filled (a pair's scores depend on its own
    variant's (LL, h_hat, se) only: :func:`measure_drift` weighs a subset of the variants it measured from them)."""
    pairs = [(v, s) for v in per_variant for s in variant_shapes(v)]
    points = {} if points is None else points

    def point_scores(pair, cut, end):
        got = points.get((*pair, cut, end))
        if got is None:
            LL, h, se = per_variant[pair[0]][SHAPES[pair[1]]]
            mean, var = predict(fit_shape(pair[1], tau[:cut], h[:cut], se[:cut]), tau[cut:end])
            got = points[(*pair, cut, end)] = _score(LL[cut:end], mean, var)
        return got

    lfo = lfo_weights(len(tau), pairs, point_scores, rng)
    w, P = lfo["weights"], lfo["scores"]
    variants = list(per_variant)
    out = {"weights": {s: float(sum(w.get((v, s), 0.0) for v in variants)) for s in SHAPES},
           "scores": None if P is None else {s: P[(variants[0], s)] for s in variant_shapes(variants[0])},
           "scored_steps": lfo["scored_steps"]}
    if len(variants) > 1:
        out["variants"] = {v: float(sum(w[(v, s)] for s in variant_shapes(v))) for v in variants}
        out["pairs"] = {f"{v}/{s}": float(w[(v, s)]) for v, s in pairs}
        out["pair_scores"] = None if P is None else {f"{v}/{s}": P[(v, s)] for v, s in pairs}
    return out


MEASURED = 4  #: measurements :func:`measure_drift` keeps (a diagnosis makes up to four: whole, half, shares, risk)
_LAST: list = []  #: [(key, (measured, point scores))], the newest first, by the inputs' content (:func:`_inputs_key`)


def _content(x):
    """A hashable, comparable stand-in for ``x``'s value: an array by dtype, shape and bytes (an array of objects,
    such as the shares' row kinds, by its items: its bytes are the objects' addresses); a dict by its items;
    evidence other than group counts (:class:`.drift_shares.ShareEvidence`) by K and its prepared rows."""
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            return "array", x.dtype.str, x.shape, tuple(_content(v) for v in x.ravel().tolist())
        return "array", x.dtype.str, x.shape, x.tobytes()
    if isinstance(x, dict):
        return "dict", tuple((k, _content(v)) for k, v in sorted(x.items(), key=lambda kv: str(kv[0])))
    if isinstance(x, (list, tuple)):
        return type(x).__name__, tuple(_content(v) for v in x)
    if hasattr(x, "P") and hasattr(x, "loglik"):
        return "evidence", int(x.K), _content(x.P)
    return repr(x)


_LIKELIHOOD_SETTINGS = ("gen_batch", "train_batch", "cap_effective")  #: the settings :func:`_step_loglik` reads


def _inputs_key(counts, steps, K, survivors, rounds, settings, variants, prompts=None) -> tuple:
    """What :func:`measure_drift` reads, by content: (a digest of all but ``prompts``, a digest of ``prompts`` or
    None); of ``settings`` only what enters the likelihood (:data:`_LIKELIHOOD_SETTINGS`, and only for a
    survivors-only record: the rounds' and the filled step's terms). Digests (SHA-256 of the content), not the
    bytes: a kept key holds no copy of a large record's groups."""
    used = None if not (survivors and settings) else tuple(_content(settings.get(k)) for k in _LIKELIHOOD_SETTINGS)
    rest = (_content(counts), _content(np.asarray(steps, float)), int(K), bool(survivors), _content(rounds), used,
            tuple(variants))
    return _digest(rest), None if prompts is None else _digest(_content(prompts))


def _digest(content) -> bytes:
    """SHA-256 of a :func:`_content` value."""
    return hashlib.sha256(pickle.dumps(content, protocol=4)).digest()


def measure_drift(counts, steps, K: int, survivors: bool, rounds=None, settings=None, variants=VARIANTS,
                  prompts=None) -> dict:
    """Population and per-step shifts for both links and every population variant (:data:`VARIANTS`), the shapes
    fitted to all logged steps, and the weights of every (variant, shape) pair.

    ``counts`` (steps, K + 1) per logged step ``steps`` (increasing); ``rounds`` per step or None. ``tau``
    (returned) is the step offset of each bin (:func:`step_bins`) from the first step. ``links`` is the Beta
    variant's (as before the variants), ``variants`` {variant: links}.

    The last :data:`MEASURED` measurements are kept and given again for inputs equal in content
    (:func:`_inputs_key`; its draws are seeded, so it is a function of them): a diagnosis measures its record for
    its expiry, its stall risk and each change of the cap rule (:func:`.rules.cap_changes`), the same record each
    time, and a fleet or a test session diagnoses the same records again. A measurement without ``prompts`` whose
    inputs equal a kept one's with them is that one less the ``prompts`` variant, its pairs weighed again from the
    kept point scores (:func:`_without_prompts`; the stall risk's, :data:`.stall_risk.NO_PROMPTS`, beside the
    expiry's): the same result as measuring it afresh. The nested results are shared, not copied (no caller
    changes them); ``counts`` and ``settings`` are the caller's.

    ``prompts``: the groups with their prompts (:class:`.drift_prompts.PromptEvidence`, where
    :func:`.drift_prompts.prompt_evidence` offers it): the ``prompts`` variant is measured too, after the others
    (its prompts without an intercept read the Beta's population)."""
    key = _inputs_key(counts, steps, K, survivors, rounds, settings, variants, prompts)
    kept = list(_LAST)  # one read of _LAST: another thread may replace it meanwhile
    got = next((v for k, v in kept if k == key), None)
    if got is None and prompts is None:
        wider = next((v for k, v in kept if k[0] == key[0] and k[1] is not None), None)
        got = None if wider is None else _without_prompts(*wider)
    if got is None:
        points = {}
        got = (_measure_drift(counts, steps, K, survivors, rounds, settings, variants, prompts, points), points)
    _LAST[:] = [(key, got)] + [kv for kv in kept if kv[0] != key][:MEASURED - 1]
    return {**got[0], "counts": counts, "settings": settings}


def _without_prompts(measured: dict, points: dict) -> tuple[dict, dict]:
    """A kept measurement with the ``prompts`` variant, less it: what :func:`_measure_drift` gives without
    ``prompts`` (the other variants are measured before it and without it; their pairs are weighed again by
    :func:`model_weights` from their kept point scores, with its default seeded generator), and its point scores."""
    per = {v: links for v, links in measured["variants"].items() if v not in PROMPT_VARIANTS}
    points = {k: x for k, x in points.items() if k[0] not in PROMPT_VARIANTS}
    weights = model_weights(measured["tau"], {v: {k: (x["LL"], x["h"], x["se"]) for k, x in per[v].items()}
                                              for v in per}, points=dict(points))
    fits = {v: f for v, f in measured["variant_fits"].items() if v not in PROMPT_VARIANTS}
    return {**measured, "variants": per, "variant_fits": fits, "weights": weights}, points


def _measure_prompts(prompts, counts, steps, K, tau, bins, beta_links, variant: str = PROMPTS) -> dict:
    """The ``prompts`` variant's links (:mod:`.drift_prompts`), named ``variant``: per link the population (the
    prompts' posteriors on every logged step under the prior ``beta_links``: the ``beta`` variant's for
    :data:`PROMPTS`, the ``masses`` variant's for :data:`PROMPTS_MASSES`), its ``LL``, ``h``, ``se``, and ``score``: (LL, h, se) under the posteriors on the steps
    before the chooser's first origin (:func:`.choice.origins`), what :func:`model_weights` scores the variant by."""
    from .choice import origins
    from .drift_prompts import fit_prompts, prompt_table

    cuts = origins(len(tau))
    upto = int(np.sum(bins < cuts[0][0])) if cuts else len(steps)
    links = {}
    for link in LINKS:
        out = {}
        pop = None
        for n in dict.fromkeys((upto, len(steps))):  # the score's fit first, its own steps; the whole run's from it
            pop = fit_prompts(prompts, n, beta_links[link], bins, link, variant, pop)
            LL = step_loglik(prompt_table(pop, K, link), counts, False, bins=bins)
            out[n] = (pop, LL, *shift_estimates(LL))
        pop, LL, h, se = out[len(steps)]
        links[link] = {"population": pop, "LL": LL, "h": h, "se": se, "score": out[upto][1:]}
    return links


def pair_weights(weights: dict) -> dict:
    """``{"variant/shape": weight}`` of a :func:`model_weights` result (``beta/<shape>`` where it weighed one
    variant)."""
    return weights.get("pairs") or {f"beta/{s}": x for s, x in weights["weights"].items()}


def forget_measured() -> None:
    """Drop the measurements :func:`measure_drift` keeps: the next is measured afresh (a test that compares two
    diagnoses, each computed on its own), and the draws made from it (:func:`.stall_risk.forget_drawn`)."""
    from .stall_risk import forget_drawn

    _LAST.clear()
    forget_drawn()


def _measure_drift(counts, steps, K, survivors, rounds, settings, variants, prompts=None, points=None) -> dict:
    steps = np.asarray(steps, float)
    bins = step_bins(len(steps), getattr(counts, "points", MAX_POINTS))
    tau = np.bincount(bins, weights=steps - steps[0]) / np.bincount(bins)  # a bin's mean step
    per = {}
    for v in variants:
        links = {}
        for link in LINKS:
            start = per["beta"][link]["population"] if "beta" in per else None
            if v in EXTRA_VARIANTS:  # overdispersed rollouts, prompts' own rates (:mod:`.drift_variants`)
                from .drift_variants import fit_variant, variant_table
                start = start or fit_population(counts, K, link, survivors, rounds, settings, tau, bins)
                pop = fit_variant(v, counts, K, link, survivors, rounds, settings, tau, bins, start)
                tab = variant_table(v, pop["x"], K, link)
            else:
                pop = fit_population(counts, K, link, survivors, rounds, settings, tau, bins, masses=v == "masses",
                                     start=start)
                tab = population_table(pop["a"], pop["b"], K, link, w0=pop["w0"], w1=pop["w1"])
            LL = step_loglik(tab, counts, survivors, rounds, settings, bins)
            h, se = shift_estimates(LL, mirror_fold(counts, tab, pop, tau))
            links[link] = {"population": pop, "LL": LL, "h": h, "se": se}
        per[v] = links
    if prompts is not None:
        per[PROMPTS] = _measure_prompts(prompts, counts, steps, K, tau, bins, per["beta"], PROMPTS)
        if "masses" in per:
            per[PROMPTS_MASSES] = _measure_prompts(prompts, counts, steps, K, tau, bins, per["masses"], PROMPTS_MASSES)
    weights = model_weights(tau, {v: {k: x.get("score", (x["LL"], x["h"], x["se"])) for k, x in per[v].items()}
                                  for v in per}, points=points)
    fits = {v: {s: fit_shape(s, tau, per[v][SHAPES[s]]["h"], per[v][SHAPES[s]]["se"]) for s in variant_shapes(v)}
            for v in per}
    first = variants[0]
    return {"links": per[first], "variants": per, "fits": fits[first], "variant_fits": fits, "weights": weights,
            "tau": tau, "steps": steps, "bins": bins, "counts": counts, "survivors": survivors, "rounds": rounds,
            "settings": settings, "K": K}
