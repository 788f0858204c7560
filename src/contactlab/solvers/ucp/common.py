"""What the UCP methods share: HiGHS (one model builder, the warm-started polyhedron LP), row
reduction of {u >= 0 : A u = a}, set-up of X and Y, and the no-solution result."""
from __future__ import annotations


import highspy
import numpy as np
import scipy.sparse as sp

from ...problems.ucp import UCP
from ...highs import new_highs
from ...solution import Solution, Status

INF = highspy.kHighsInf


OPTIMAL = highspy.HighsModelStatus.kOptimal
INFEASIBLE = highspy.HighsModelStatus.kInfeasible


def reduce_rows(A: np.ndarray, a: np.ndarray, rtol: float = 1e-10):
    """Full-row-rank ``(A_r, a_r)`` with the same solution set, or ``None`` when A u = a is inconsistent."""
    m = A.shape[1]
    if A.shape[0] == 0:
        return np.zeros((0, m)), np.zeros(0)
    U, S, Vt = np.linalg.svd(A, full_matrices=True)
    rank = int(np.sum(S > rtol * max(A.shape) * S[0])) if S.size and S[0] > 0 else 0
    rest = U[:, rank:].T @ a
    if rest.size and np.max(np.abs(rest)) > 1e-9 * max(1.0, np.max(np.abs(a))):
        return None
    Ar = S[:rank, None] * Vt[:rank]
    ar = U[:, :rank].T @ a
    return Ar, ar


class PolyhedronLP:
    """HiGHS model of {u >= 0 : A u = a} (the last ``n_free`` columns free); re-solved with new
    costs/bounds from the last basis (warm)."""

    def __init__(self, A, a: np.ndarray, counter: dict, n_free: int = 0):
        self.A, self.a, self.m = A, a, A.shape[1]
        self.lower = np.zeros(self.m)
        if n_free:
            self.lower[self.m - n_free:] = -INF
        self.counter = counter
        h = new_highs(solver="simplex", primal_feasibility_tolerance=1e-9, dual_feasibility_tolerance=1e-9)
        h.passModel(highs_model(A, self.lower, np.full(self.m, INF), a, a))
        self.h = h
        self.idx = np.arange(self.m, dtype=np.int32)
        self.upper = np.full(self.m, INF)

    def solve(self, cost=None, zero=None):
        """Minimise ``cost'u`` (0 when None) with ``u_i = 0`` on the boolean mask ``zero``.

        Returns ``(u, basic)`` (a vertex and its basic columns) or ``(None, None)`` when infeasible.
        """
        h = self.h
        h.changeColsCost(self.m, self.idx, np.zeros(self.m) if cost is None else np.asarray(cost, dtype=float))
        upper = np.full(self.m, INF) if zero is None else np.where(zero, 0.0, INF)
        if not np.array_equal(upper, self.upper):
            h.changeColsBounds(self.m, self.idx, self.lower, upper)
            self.upper = upper
        h.run()
        self.counter["lps"] += 1
        st = h.getModelStatus()
        if st == INFEASIBLE:
            return None, None
        if st != OPTIMAL:
            # HiGHS occasionally ends a warm-started solve with status "unknown": retry from scratch,
            # then without presolve, then with the interior-point method (and crossover to a vertex)
            for option, value in (("presolve", "choose"), ("presolve", "off"), ("solver", "ipm")):
                h.setOptionValue(option, value)
                h.clearSolver()
                h.run()
                self.counter["lps"] += 1
                st = h.getModelStatus()
                if st in (OPTIMAL, INFEASIBLE):
                    break
            h.setOptionValue("presolve", "choose")
            h.setOptionValue("solver", "simplex")
            if st == INFEASIBLE:
                return None, None
            if st != OPTIMAL:
                raise LPFailure(h.modelStatusToString(st))
        self.counter["simplex_iterations"] += int(h.getInfo().simplex_iteration_count)
        u = np.asarray(h.getSolution().col_value, dtype=float)
        signed = self.lower < 0
        u = np.where(signed, u, np.maximum(u, 0.0))
        u[~signed & (u < 1e-12 * max(1.0, float(u.max(initial=0.0))))] = 0.0   # round-off at zero
        basic = np.array([s == highspy.HighsBasisStatus.kBasic for s in h.getBasis().col_status])
        return u, basic


class LPFailure(RuntimeError):
    pass


def setup_polyhedra(problem: UCP, counter: dict):
    """Reduced polyhedra and their LP models, or ``None`` when X or Y is empty (by the equations)."""
    rx = reduce_rows(problem.A, problem.a)
    ry = reduce_rows(problem.B, problem.b)
    if rx is None or ry is None:
        return None
    return rx, ry, PolyhedronLP(*rx, counter), PolyhedronLP(*ry, counter)


def no_solution(problem: UCP, status: Status, **info) -> Solution:
    return Solution(z=np.full(problem.n, np.nan), w=np.full(problem.n, np.nan), status=status, info=info)


def highs_model(A, col_lower, col_upper, row_lower, row_upper, integrality=None) -> "highspy.HighsLp":
    """The one HiGHS model builder: min 0 s.t. row_lower <= A u <= row_upper, col bounds, optional
    integrality (a list of highspy.HighsVarType); A dense or sparse, passed column-wise."""
    Ac = sp.csc_matrix(A)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = Ac.shape[1], Ac.shape[0]
    lp.col_cost_ = np.zeros(Ac.shape[1])
    lp.col_lower_ = np.asarray(col_lower, dtype=float).copy()
    lp.col_upper_ = np.asarray(col_upper, dtype=float).copy()
    lp.row_lower_ = np.asarray(row_lower, dtype=float).copy()
    lp.row_upper_ = np.asarray(row_upper, dtype=float).copy()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Ac.indptr.astype(np.int32)
    lp.a_matrix_.index_ = Ac.indices.astype(np.int32)
    lp.a_matrix_.value_ = Ac.data
    if integrality is not None:
        lp.integrality_ = integrality
    return lp
