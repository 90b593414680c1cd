r"""A profile-likelihood interval of one parameter of a maximum-likelihood fit.

For a negative log-likelihood ``nll`` maximised at x, the profile of parameter i is
pl(v) = min over the other parameters of nll(x with x_i = v), and the level-c interval is the connected set of v
around x_i with 2 (pl(v) - nll(x)) <= chi2_1(c) (the likelihood-ratio test of x_i = v, inverted). Unlike a Wald
interval x_i +- z se it needs no quadratic likelihood: it follows a likelihood that is flat on one side, curved
along a ridge with the other parameters, or bounded (Venzon & Moolgavkar 1988 find the same end points by a
Newton search; here a walk and a bracketing search, which a ridge whose minimiser jumps between branches does not
derail).

**Search.** From x_i each side is walked in steps that start at z se (the Wald end point; 1/2 where se is not
finite) and double while the profile stays under a quarter of the cut, each profile point minimised by L-BFGS-B
within the bounds from the previous point's minimiser moved along the path's slope (the minimiser follows the ridge
continuously) and, where the caller gives one (``spread``), from a start on another branch (a basin the path alone
would not enter: the rounds' ridge has a concentrated and a spread population); the first point past the cut
is bracketed with the last inside by the Illinois method on sqrt(2 (pl - nll(x))) - sqrt(chi2) (near linear in v)
to :data:`TOL` of the parameter. A side that reaches the parameter's bound inside the cut ends there
(``at_bound``: the likelihood does not limit it). A profile point below nll(x) (the fit was not the global
optimum) lowers the reference from there on.

Edge cases: at most :data:`MAX_STEPS` steps a side (then the last inside point, ``capped``); NaN values of nll count
as outside.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.stats import chi2

__all__ = ["profile_interval", "TOL", "MAX_STEPS"]

TOL = 2e-2  #: the end points are found to this width of the parameter
MAX_STEPS = 24  #: walking steps per side at most
ILLINOIS_ITERS = 12  #: bracketing iterations per side at most
INNER = {"ftol": 1e-6, "gtol": 1e-3, "eps": 1e-6}  #: each profile point's L-BFGS-B: a relative change of 1e-6 in nll (5e-5 at 50)


def profile_interval(nll, x, bounds, i: int, se: float = float("nan"), level: float = 0.95, spread=None) -> dict:
    """``{"interval": [lo, hi], "at_bound": [lower side at its bound, upper side at its bound], "capped": bool,
    "evaluations": profile points minimised}`` of parameter ``i`` (see the module docstring). ``nll``: theta ->
    float; ``x``: its minimiser; ``bounds``: (lo, hi) per parameter; ``se``: the Wald standard error (the first
    step's scale); ``spread``: z -> another start for the other parameters (e.g. the other branch of a ridge), tried
    at every walking step beside the path's own."""
    x = np.asarray(x, float)
    others = [j for j in range(len(x)) if j != i]
    ob = [bounds[j] for j in others]
    cut = float(chi2.ppf(level, 1))
    state = {"ref": float(nll(x)), "n": 0}

    def full(v, z):
        y = x.copy()
        y[i], y[others] = v, z
        return y

    def profile(v, starts):
        best = None
        for z0 in starts:
            r = optimize.minimize(lambda z: nll(full(v, z)), z0, method="L-BFGS-B", bounds=ob, options=INNER)
            fun = float(r.fun) if np.isfinite(r.fun) else np.inf
            if best is None or fun < best[0]:
                best = (fun, np.clip(r.x, [b[0] for b in ob], [b[1] for b in ob]))
        state["n"] += 1
        state["ref"] = min(state["ref"], best[0])
        return best

    def excess(fun):  # signed root of the likelihood-ratio statistic past the cut
        return np.sqrt(max(2 * (fun - state["ref"]), 0.0)) - np.sqrt(cut)

    step0 = float(se) * np.sqrt(cut) if np.isfinite(se) and se > 0 else 0.5
    ends, at_bound, capped = [], [], False
    for side, edge in ((-1, bounds[i][0]), (1, bounds[i][1])):
        v_in, z_in, e_in = x[i], x[others], -np.sqrt(cut)
        slope = np.zeros(len(others))  # dz/dv along the path: the next point's start is extrapolated
        h = max(step0, TOL)
        end, hit = None, False
        for _ in range(MAX_STEPS):
            v = v_in + side * h
            if side * (v - edge) >= 0:
                v = edge
            z_path = z_in + slope * (v - v_in)
            fun, z = profile(v, [z_path] if spread is None else [z_path, spread(z_path)])
            e = excess(fun)
            if e <= 0:
                slope = (z - z_in) / (v - v_in)
                v_in, z_in, e_in = v, z, e
                if v == edge:
                    end, hit = edge, True
                    break
                if 2 * (fun - state["ref"]) < cut / 4:
                    h *= 2
                continue
            end = _illinois(lambda w, z0: (lambda fz: (excess(fz[0]), fz[1]))(profile(w, [z0])), v_in, e_in, v, e,
                            z_in, slope)
            break
        if end is None:
            end, capped = v_in, True
        ends.append(float(end))
        at_bound.append(hit)
    return {"interval": ends, "at_bound": at_bound, "capped": capped, "evaluations": state["n"]}


def _illinois(f, a, fa, b, fb, za, slope) -> float:
    """The root of f between a (f <= 0, inside; its minimiser za) and b (f > 0) by the Illinois method, to
    :data:`TOL`; f(w, start) -> (value, minimiser), started from the last inside point's minimiser moved along
    ``slope`` (dz/dw)."""
    side = 0
    for _ in range(ILLINOIS_ITERS):
        if abs(b - a) <= TOL:
            break
        c = b - fb * (b - a) / (fb - fa) if fb != fa else (a + b) / 2
        fc, zc = f(c, za + slope * (c - a))
        if fc <= 0:
            a, fa, za = c, fc, zc
            if side == -1:
                fb /= 2
            side = -1
        else:
            b, fb = c, fc
            if side == 1:
                fa /= 2
            side = 1
    return float((a + b) / 2)
