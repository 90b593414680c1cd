r"""Groups per logged row, two ways: the trainer's own arithmetic and the lattice of the logged shares.

A logged share of groups (``frac_reward_zero_std``, all-pass, all-fail) over ``g`` groups is ``k / g`` for an
integer ``k``; a row that averages ``m`` generations of ``n`` groups each is a multiple of ``1 / (m n)``. So the
shares a run logged lie on the lattice ``{k / g}`` of the groups behind each row, and :func:`share_lattice`
finds the **smallest** ``g`` (1 .. ``max_g``) with every logged share within ``tol`` of a multiple of ``1 / g``:

    g* = min { g : max_i | g x_i - round(g x_i) | <= g tol }

``tol`` (1e-6 by default) covers a float32 share (TRL's ``is_std_zero.float().mean()``, relative error 6e-8)
averaged in double precision; a log rounded to fewer digits needs a larger one. The smallest ``g`` is a lower
bound: the true count is a multiple of it (shares of 40 groups that all happen to be multiples of 1/20 read as
20), and with a handful of rows, or shares all 0 or 1, it says little: ``informative`` is False when no share
lies strictly inside (0, 1) or fewer than :data:`MIN_DISTINCT` distinct shares do.

:func:`resolve` puts the two side by side: the config's figure is used where every logged share is a multiple
of one over it (``agree``); where it is not, the config does not describe this log (a different batch, gradient
accumulation or process count than the config says) and the lattice's figure is used, the disagreement named.
"""

from __future__ import annotations

import numpy as np

__all__ = ["share_lattice", "resolve", "MAX_G", "TOL", "MIN_DISTINCT"]

MAX_G = 4096        #: the largest groups-per-row the lattice search tries (the ingest's largest group count)
TOL = 1e-6          #: |share - k/g| allowed, per share
MIN_DISTINCT = 2    #: distinct shares strictly inside (0, 1) needed for an informative lattice
SAMPLE = 512        #: distinct shares a candidate g is first tried on (then checked on every distinct share)


def share_lattice(*columns, max_g: int = MAX_G, tol: float = TOL) -> dict:
    """The smallest ``g`` whose multiples of ``1/g`` hold every finite share in ``columns`` (module docstring).

    Returns ``{g, rows, distinct, informative, tol, rounded}``: ``g`` None where no ``g <= max_g`` fits (shares
    that are not counts of groups, e.g. an average of unequal batches, or a log rounded coarser than ``tol``),
    ``rows`` the finite shares looked at, ``distinct`` the distinct ones strictly inside (0, 1), ``rounded`` True
    where ``g`` (at least 100) divides 10^2, 10^3 or 10^4: the lattice of a log rounded to that many decimals
    (a console or CSV export), not of its groups, so not informative.
    """
    vals = np.concatenate([np.asarray(c, dtype=float).ravel() for c in columns]) if columns else np.zeros(0)
    vals = vals[np.isfinite(vals)]
    inner = np.unique(vals[(vals > tol) & (vals < 1 - tol)])
    out = {"g": None, "rows": int(vals.size), "distinct": int(inner.size),
           "informative": bool(inner.size >= MIN_DISTINCT), "tol": float(tol), "rounded": False}
    if vals.size == 0:
        return out
    if inner.size == 0:
        out["g"] = 1
        return out
    u = np.unique(vals)
    # candidates from at most SAMPLE distinct shares (a (256 x SAMPLE) product a block), each checked on them all
    probe = u[np.linspace(0, u.size - 1, min(u.size, SAMPLE)).astype(int)]
    for lo in range(1, max_g + 1, 256):
        g = np.arange(lo, min(lo + 256, max_g + 1), dtype=float)[:, None]
        x = g * probe[None, :]
        for cand in g[np.all(np.abs(x - np.round(x)) <= g * tol, axis=1), 0]:
            y = cand * u
            if np.all(np.abs(y - np.round(y)) <= cand * tol):
                out["g"] = int(cand)
                if out["g"] >= 100 and any(10 ** d % out["g"] == 0 for d in (2, 3, 4)):
                    out["rounded"] = True  # 1/100, 1/1000, 1/10^4 or a divisor: the log's rounding, not its groups
                    out["informative"] = False
                return out
    return out


def _fits(n: float, cols, tol: float) -> bool:
    """Every finite share in ``cols`` is within ``tol`` of a multiple of ``1/n``."""
    for c in cols:
        v = np.asarray(c, dtype=float)
        v = v[np.isfinite(v)]
        if v.size and np.any(np.abs(n * v - np.round(n * v)) > n * tol):
            return False
    return True


def resolve(config_value: float | None, config_how: str | None, cols, *, tol: float = TOL) -> dict:
    """Groups per logged row from the config's arithmetic and from the lattice of the shares in ``cols``.

    Returns ``{value, from, config, config_how, lattice, agree, note}``: ``value`` the figure to use (None where
    neither gives one), ``from`` ``"config"``, ``"lattice"`` or None, ``lattice`` :func:`share_lattice`'s dict,
    ``agree`` whether the config's figure holds every logged share (None where either is missing or no share
    lies inside (0, 1): a single share off its lattice refutes the config, while agreeing shares prove less the
    fewer they are, see ``lattice["informative"]``; False too for a config figure that is not a whole number,
    which is then not used), ``note`` one sentence for the record's notes. With no config, the lattice's figure is
    used only where informative.
    """
    lat = share_lattice(*cols, tol=tol)
    g = lat["g"]
    shown = f"{g} (the smallest g with every logged share k/g; {lat['distinct']} distinct shares in (0, 1))"
    out = {"value": None, "from": None, "config": config_value, "config_how": config_how, "lattice": lat,
           "agree": None, "note": None}
    integral = config_value is not None and abs(config_value - round(config_value)) < 1e-9
    if config_value is not None:
        out["value"], out["from"] = float(config_value), "config"
        if lat["distinct"] and g is not None and not lat["rounded"]:  # one share off its lattice refutes it
            out["agree"] = bool(integral and _fits(float(round(config_value)), cols, tol))
            if out["agree"]:
                out["note"] = (f"groups per logged row {config_value:g} from the config agrees with the lattice of "
                               f"the logged shares (smallest g = {g})")
            else:
                out["value"], out["from"] = float(g), "lattice"
                out["note"] = (f"groups per logged row: the config's arithmetic gives {config_value:g}, but the logged "
                               f"shares are not all multiples of 1/{config_value:g}; their lattice gives {shown}, "
                               "used instead (check the gradient accumulation, processes and logging_steps given)")
        elif not integral:  # no share to check it on, but a count of groups is whole: the config is wrong here
            out["agree"], out["value"], out["from"] = False, None, None
            out["note"] = (f"groups per logged row: the config's arithmetic gives {config_value:g}, not a whole number "
                           "of groups, and the logged shares cannot tell (check the batch sizes given; "
                           "--groups-per-step at diagnose)")
        return out
    if lat["informative"] and g is not None:
        out["value"], out["from"] = float(g), "lattice"
        out["note"] = (f"groups per logged row from the lattice of the logged shares: {shown}; a lower bound "
                       "(the true count is a multiple), no config gave it")
    elif lat["rounded"]:
        out["note"] = (f"the logged shares lie on the lattice 1/{g}, a rounding of the log, not a count of groups: "
                       "groups per row unknown from the shares")
    elif g is None and lat["distinct"]:
        out["note"] = (f"the logged shares lie on no lattice k/g with g <= {MAX_G} (tolerance {tol:g}): they are "
                       "not counts of equal batches of groups, or were rounded")
    return out
