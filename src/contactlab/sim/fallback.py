"""What the simulator does when a step's solve is not certified: the one place for that policy.

Certified means what :func:`contactlab.solve` certifies: the scale-free residual
(``Solution.relative_residual``) at most :data:`contactlab.kernels.tolerances.CERTIFY` (one
constant, shared with ``solve()``). A fallback is run only where it can help, with its cost capped:

* a friction-coupled boxed LCP (``findex``) is not an LCP, so neither Lemke (no reduction) nor
  PGS-SM (its subspace step ignores that the bounds move with the normals; it diverges on piles)
  can rescue it; only more PGS sweeps from the failed iterate can, and only when the primary
  method was not PGS already (it has just spent those sweeps);
* a boxed LCP with fixed bounds is a convex bound-constrained QP: PGS-SM continues from the
  failed iterate; Lemke on its LCP reduction only while it is small (pivoting is O(n^3));
* an LCP / mixed LCP: Lemke (complete on the copositive-plus contact matrices; small only),
  then PGS from the failed iterate.

Every fallback gets at most as many iterations as the primary spent (at least ``MIN_BUDGET``), so
a rescue never costs much more than the step itself; a candidate that is not finite is dropped.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..kernels.tolerances import CERTIFY
from ..problems import BoxedLCP
from ..solvers import available_solvers, solve

#: fewest iterations a fallback is given (a primary that stopped at once still gets a real try;
#: a sweep and a pivot both cost O(n^2) on a dense matrix)
MIN_BUDGET = 200
#: largest problem handed to a pivoting fallback (O(n^3) per solve)
PIVOTING_MAX_N = 400


def certified(sol) -> bool:
    """The answer is usable as certified: finite and within ``solve()``'s threshold."""
    if sol.success:
        return True
    return bool(np.all(np.isfinite(sol.z)) and sol.relative_residual <= CERTIFY)


def usable(problem, sol, max_relative: float) -> bool:
    """Not certified but close enough to apply (relative residual <= ``max_relative``)."""
    return bool(np.all(np.isfinite(sol.z)) and sol.relative_residual <= max_relative)


def _cap_option(method: str, budget: int) -> dict:
    """The method's iteration-cap option set to ``budget`` (whatever the option is called)."""
    names = {f.name for f in dataclasses.fields(available_solvers()[method].options)}
    for key in ("max_iterations", "max_sweeps", "max_outer", "max_pivots"):
        if key in names:
            return {key: int(budget)}
    return {}


def chain(problem, primary: str) -> tuple[str, ...]:
    """The fallback methods worth running for ``problem`` after ``primary`` failed (see module doc)."""
    if isinstance(problem, BoxedLCP):
        if problem.has_coupling:
            out = ("pgs",)
        else:
            out = ("pgs-sm",) + (("lemke",) if problem.n <= PIVOTING_MAX_N else ())
    else:
        out = ("lemke", "pgs") if problem.n <= PIVOTING_MAX_N else ("pgs",)
    solvers = available_solvers()
    return tuple(m for m in out if m != primary and m in solvers and solvers[m].accepts(problem))


def rescue(problem, failed, primary: str):
    """Try :func:`chain`'s methods, warm-started from the failed iterate where they take one, each
    capped at the primary's iteration count; return the first certified answer (marked
    ``info['fallback_from']``), else the finite answer with the smallest residual (or ``failed``)."""
    best = failed
    budget = max(MIN_BUDGET, int(getattr(failed, "iterations", 0) or 0))
    z0 = np.asarray(failed.z, dtype=np.float64)
    for m in chain(problem, primary):
        spec = available_solvers()[m]
        kwargs = _cap_option(m, budget) if m != "lemke" else {}
        if spec.warm_start and np.all(np.isfinite(z0)) and z0.shape == (problem.n,):
            kwargs["warm_start"] = z0
        try:
            cand = solve(problem, m, **kwargs)
        except Exception:   # a fallback that rejects this problem is skipped
            continue
        if not np.all(np.isfinite(cand.z)):
            continue
        if certified(cand):
            cand.info["fallback_from"] = primary
            return cand
        if cand.relative_residual < best.relative_residual:
            best = cand
    return best
