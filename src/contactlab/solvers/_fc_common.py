"""Shared plumbing of the Coulomb friction solvers (nsgs, newton-ac, newton-fb, prox, pyramid)."""
from __future__ import annotations

import time

import numpy as np

from ..errors import ParamError
from ..kernels.coulomb import fc_residual_kernel
from ..problems.friction_contact import FrictionContact, GlobalFrictionContact
from ..solution import Solution, Status

FC_PROBLEMS = (FrictionContact, GlobalFrictionContact)


def local_problem(problem) -> FrictionContact:
    """The local problem a method works on: the problem itself, or the condensed global one
    (W = H' M^-1 H through the factorised M; DESIGN: global problems are condensed when M is cheap)."""
    return problem.local() if isinstance(problem, GlobalFrictionContact) else problem


TIME_LIMIT = "time limit reached"


class Deadline:
    """The wall-clock cap of a Coulomb solver: ``max_time`` seconds from its creation (0: none)."""

    def __init__(self, max_time: float):
        self.max_time = max_time
        self.t0 = time.perf_counter()

    def passed(self) -> bool:
        return self.max_time > 0 and time.perf_counter() - self.t0 > self.max_time

    def left(self) -> float:
        """Seconds left for an inner solver (at least 1 ms); 0.0 when there is no cap."""
        return max(self.max_time - (time.perf_counter() - self.t0), 1e-3) if self.max_time > 0 else 0.0


def measure(lp: FrictionContact, r: np.ndarray, u: np.ndarray | None = None) -> float:
    """What solve() certifies, as one stopping figure: max(natural-map residual, infeasibility)
    (kernels/coulomb.fc_residual_kernel; nsgs_kernel applies the same test inside numba)."""
    if u is None:
        u = lp.w(r)
    nat, _, inf = fc_residual_kernel(r, u, lp.mu, lp.rho, lp.dim, lp.denominator())
    return max(nat, inf)


def start(problem: FrictionContact, warm_start) -> np.ndarray:
    if warm_start is None:
        return np.zeros(problem.n)
    r = np.array(warm_start, dtype=np.float64).ravel()
    if r.shape != (problem.n,) or not np.all(np.isfinite(r)):
        raise ParamError(f"warm_start must be a finite vector of length {problem.n} (the impulses r)")
    return r


def finish(problem, r: np.ndarray, status: Status, iterations: int, **info) -> Solution:
    sol = Solution(z=r, w=np.zeros(0), status=status, iterations=iterations, info=info)
    if isinstance(problem, GlobalFrictionContact) and np.all(np.isfinite(r)):
        sol.x = problem.velocity(r)
    return sol
