"""Exhaustive enumeration of supports, n <= 20: the reference solver of the tests.

Every support S (the indices where z may be positive, w_S = 0) is decided:
* M_SS nonsingular: z_S = -M_SS^-1 q_S is the only candidate; check z_S >= 0, w >= 0 (numba kernel);
* M_SS singular (rank test of kernels/tolerances.py RANK): the candidates form a polyhedron
  {z_S >= 0 : M_SS z_S = -q_S, M_NS z_S + q_N >= 0}, decided by one HiGHS LP.
Any LCP solution z has some support S and solves that support's system, so the search misses none
(it finds z = (0, 1) of M = [[0, 1], [0, 0]], q = (-1, 0), whose block M_SS = [0] is singular).

NO_SOLUTION carries a certificate (solvers/certificates.py): a Farkas vector when no z >= 0 has
w >= 0 (one LP), else ``{"kind": "exhaustive"}`` (the LCP is feasible but has no complementary
solution: every support decided).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels.enumerate import enumerate_kernel
from ..kernels.tolerances import RANK
from ..problems import LCP
from ..problems.validation import is_psd
from ..problems.residual import lcp_relative, relative_error, row_terms
from ..solution import Solution, Status
from .certificates import farkas_lp, lcp_feasible
from .registry import register

MAX_N = 20


@dataclass(frozen=True)
class EnumerateOptions:
    """max_solutions: stop after this many solutions (2 tells whether the basic solution is unique);
    tol: relative feasibility tolerance of a candidate (z_S >= -tol max|z_S|,
    w >= -tol (max|q| + max|M| max|z|))."""
    max_solutions: int = 1
    tol: float = 1e-10

    def __post_init__(self):
        if not (isinstance(self.max_solutions, (int, np.integer)) and self.max_solutions >= 1):
            raise ParamError(f"max_solutions must be an integer >= 1, got {self.max_solutions!r}")
        if not (self.tol > 0):
            raise ParamError(f"tol must be > 0, got {self.tol!r}")


def _support_lp(M, q, mask: int, n: int):
    """A point of {z_S >= 0 : M_SS z_S = -q_S, M_NS z_S + q_N >= 0} (HiGHS), or None if empty."""
    from scipy.optimize import linprog
    S = np.array([i for i in range(n) if (mask >> i) & 1], dtype=np.int64)
    N = np.array([i for i in range(n) if not (mask >> i) & 1], dtype=np.int64)
    s = max(float(np.max(np.abs(M), initial=0.0)), float(np.max(np.abs(q), initial=0.0))) or 1.0
    res = linprog(np.zeros(S.size), A_eq=M[np.ix_(S, S)] / s, b_eq=-q[S] / s,
                  A_ub=-M[np.ix_(N, S)] / s if N.size else None, b_ub=q[N] / s if N.size else None,
                  bounds=(0, None), method="highs")
    if res.status != 0:
        return None
    z = np.zeros(n)
    z[S] = np.maximum(res.x, 0.0)
    return z


def check_exhaustive(M, q: np.ndarray, cert: dict) -> tuple[bool, str]:
    """Check ``{"kind": "exhaustive", "supports": 2**n}`` (see solvers/certificates.py); (accepted,
    reason). Accepted when all 2^n supports were decided, M is not PSD (a feasible PSD LCP is
    solvable, Cottle-Pang-Stone 3.8.6, so the claim would contradict it) and the LCP is feasible
    (an infeasible one has a Farkas vector instead)."""
    n = q.size
    if not (n <= MAX_N and cert.get("supports") == 2 ** n):
        return False, "exhaustive search incomplete"
    if is_psd(M):
        return False, "exhaustive claim on a PSD matrix (feasible PSD LCPs are solvable)"
    if lcp_feasible(M, q) is not True:
        return False, "exhaustive claim needs a feasible LCP (else a Farkas vector)"
    return True, "every support decided (enumerate) on a feasible, non-PSD LCP"


@register("enumerate", problems=(LCP,), options=EnumerateOptions,
          classes=("spd", "psd", "p", "friction", "boxed"), certificates={"exhaustive": check_exhaustive},
          description="exhaustive search over the 2^n supports (n <= 20; singular blocks by LP)",
          guarantees="finds a solution whenever one exists; NO_SOLUTION with a checked certificate "
                     "(Farkas vector, or every support decided)")
def enumerate_solve(problem: LCP, opts: EnumerateOptions, warm_start=None) -> Solution:
    n = problem.n
    if n > MAX_N:
        raise ParamError(f"enumerate visits 2^n supports and accepts n <= {MAX_N}; got n = {n} (use lemke or dantzig)")
    M = np.ascontiguousarray(problem.dense_M())
    q = problem.q
    out = np.zeros((opts.max_solutions, n))
    singular = np.zeros(2 ** n, dtype=np.int64)
    found, tested, nsing = enumerate_kernel(M, q, opts.tol, opts.max_solutions, out, singular)
    sols = [out[i].copy() for i in range(min(found, opts.max_solutions))]
    info = {"bases_tested": int(tested), "singular_supports": int(nsing)}
    lps = 0
    certificate = None
    if len(sols) < opts.max_solutions:
        y = farkas_lp(M, q) if not sols else None
        lps += not sols
        if y is not None:
            certificate = {"kind": "farkas", "y": y}
        else:
            for mask in singular[:nsing]:
                z = _support_lp(M, q, int(mask), n)
                lps += 1
                if z is not None and relative_error(lcp_relative(z, M @ z + q, q, row_terms(M, z, q))) <= RANK:
                    sols.append(z)
                    if len(sols) >= opts.max_solutions:
                        break
            if not sols and tested == 2 ** n and lcp_feasible(M, q):
                # feasible, yet no support carries a solution (an infeasible problem whose Farkas
                # vector fails the margin of FARKAS_MARGIN is left unproven: NO_SOLUTION_FOUND)
                certificate = {"kind": "exhaustive", "supports": int(tested), "lp_supports": int(nsing)}
    info["lps"] = int(lps)
    info["solutions_found"] = len(sols)
    if sols:
        info["solutions"] = np.array(sols)
        info["distinct_solutions"] = int(np.unique(np.round(info["solutions"], 12), axis=0).shape[0])
        return Solution(z=sols[0], w=np.empty(0), status=Status.SOLVED, iterations=int(tested), info=info)
    if certificate is not None:
        info["certificate"] = certificate
        return Solution(z=np.zeros(n), w=np.empty(0), status=Status.NO_SOLUTION, iterations=int(tested), info=info)
    return Solution(z=np.zeros(n), w=np.empty(0), status=Status.NO_SOLUTION_FOUND, iterations=int(tested), info=info)
