"""Solvers of the uncoupled complementarity problem (Pang, Trinkle & Lo 1994).

* ``bilinear-lp``: the LP-based descent on min x'y of section 4 (Steps 0-3) with the restart
  variant of section 5; a heuristic: SOLVED or NO_SOLUTION_FOUND (cycling / restart limit).
* ``mip``: an exact decision the paper lacked: x_i y_i = 0 by binaries, with big-M bounds from LPs
  on the homogenised, normalised polyhedra (bounded, so big-M <= 1), solved by HiGHS' MIP.
* ``mode-enumeration``: contact-mode enumeration in the spirit of Trinkle & Zeng (1994): each
  contact rolls, slides +/- or breaks; a mode is a pair of LP feasibility tests (X and Y separate).

Every LP and the MIP go through HiGHS (highspy). A polyhedron {u >= 0 : A u = a} is first reduced to
full row rank by an SVD; an inconsistent system proves the polyhedron empty (NO_SOLUTION).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import functools

import highspy
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..errors import ParamError
from ..problems.ucp import UCP
from ..solution import Solution, Status
from .registry import register

_INF = highspy.kHighsInf


def _single_thread_blas(func):
    """Run ``func`` with BLAS limited to one thread: its matrices are small (hundreds of rows), and
    multi-threaded BLAS on a loaded machine was measured 30x slower on them."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # optional: without it BLAS keeps its own default
            return func(*args, **kwargs)
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)
    return wrapper
_OPTIMAL = highspy.HighsModelStatus.kOptimal
_INFEASIBLE = highspy.HighsModelStatus.kInfeasible


def _reduce_rows(A: np.ndarray, a: np.ndarray, rtol: float = 1e-10):
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


class _LP:
    """HiGHS model of {u >= 0 : A u = a} (the last ``n_free`` columns free); re-solved with new
    costs/bounds from the last basis (warm)."""

    def __init__(self, A, a: np.ndarray, counter: dict, n_free: int = 0):
        self.A, self.a, self.m = A, a, A.shape[1]
        self.lower = np.zeros(self.m)
        if n_free:
            self.lower[self.m - n_free:] = -_INF
        self.counter = counter
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
        h.setOptionValue("dual_feasibility_tolerance", 1e-9)
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.m, A.shape[0]
        lp.col_cost_ = np.zeros(self.m)
        lp.col_lower_ = self.lower.copy()
        lp.col_upper_ = np.full(self.m, _INF)
        lp.row_lower_ = a.copy()
        lp.row_upper_ = a.copy()
        Ac = sp.csc_matrix(A)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = Ac.indptr.astype(np.int32)
        lp.a_matrix_.index_ = Ac.indices.astype(np.int32)
        lp.a_matrix_.value_ = Ac.data
        h.passModel(lp)
        self.h = h
        self.idx = np.arange(self.m, dtype=np.int32)
        self.upper = np.full(self.m, _INF)

    def solve(self, cost=None, zero=None):
        """Minimise ``cost'u`` (0 when None) with ``u_i = 0`` on the boolean mask ``zero``.

        Returns ``(u, basic)`` (a vertex and its basic columns) or ``(None, None)`` when infeasible.
        """
        h = self.h
        h.changeColsCost(self.m, self.idx, np.zeros(self.m) if cost is None else np.asarray(cost, dtype=float))
        upper = np.full(self.m, _INF) if zero is None else np.where(zero, 0.0, _INF)
        if not np.array_equal(upper, self.upper):
            h.changeColsBounds(self.m, self.idx, self.lower, upper)
            self.upper = upper
        h.run()
        self.counter["lps"] += 1
        st = h.getModelStatus()
        if st == _INFEASIBLE:
            return None, None
        if st != _OPTIMAL:
            # HiGHS occasionally ends a warm-started solve with status "unknown": retry from scratch,
            # then without presolve, then with the interior-point method (and crossover to a vertex)
            for option, value in (("presolve", "choose"), ("presolve", "off"), ("solver", "ipm")):
                h.setOptionValue(option, value)
                h.clearSolver()
                h.run()
                self.counter["lps"] += 1
                st = h.getModelStatus()
                if st in (_OPTIMAL, _INFEASIBLE):
                    break
            h.setOptionValue("presolve", "choose")
            h.setOptionValue("solver", "simplex")
            if st == _INFEASIBLE:
                return None, None
            if st != _OPTIMAL:
                raise _LPFailure(h.modelStatusToString(st))
        self.counter["simplex_iterations"] += int(h.getInfo().simplex_iteration_count)
        u = np.asarray(h.getSolution().col_value, dtype=float)
        signed = self.lower < 0
        u = np.where(signed, u, np.maximum(u, 0.0))
        u[~signed & (u < 1e-12 * max(1.0, float(u.max(initial=0.0))))] = 0.0   # round-off at zero
        basic = np.array([s == highspy.HighsBasisStatus.kBasic for s in h.getBasis().col_status])
        return u, basic


class _LPFailure(RuntimeError):
    pass


def _setup(problem: UCP, counter: dict):
    """Reduced polyhedra and their LP models, or ``None`` when X or Y is empty (by the equations)."""
    rx = _reduce_rows(problem.A, problem.a)
    ry = _reduce_rows(problem.B, problem.b)
    if rx is None or ry is None:
        return None
    return rx, ry, _LP(*rx, counter), _LP(*ry, counter)


def _no_solution(problem: UCP, status: Status, **info) -> Solution:
    return Solution(z=np.full(problem.n, np.nan), w=np.full(problem.n, np.nan), status=status, info=info)


# ---------------------------------------------------------------------------------------------------
# adjacent extreme points (section 4, Step 3; Murty, Linear Programming, section 3.7.1)

def _complete_basis(A: np.ndarray, u: np.ndarray, hint: np.ndarray | None, tol: float) -> np.ndarray:
    """Indices of ``rank(A)`` independent columns containing the support of the vertex ``u``."""
    rows, m = A.shape
    support = np.flatnonzero(u > tol)
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    if support.size:
        Q, R, piv = sla.qr(A[:, support], mode="economic", pivoting=True)
        k = int(np.sum(np.abs(np.diag(R)) > 1e-10 * max(1.0, abs(R[0, 0]))))
        chosen = list(support[piv[:k]])
        Q = Q[:, :k]
    else:
        chosen, Q = [], np.zeros((rows, 0))
    if len(chosen) < rows:
        others = np.setdiff1d(np.arange(m), chosen)
        if hint is not None:   # prefer the columns the LP reported basic
            others = np.concatenate([others[hint[others]], others[~hint[others]]])
        Rm = A[:, others] - Q @ (Q.T @ A[:, others])
        _, R2, piv2 = sla.qr(Rm, mode="economic", pivoting=True)
        need = rows - len(chosen)
        chosen += list(others[piv2[:need]])
    return np.array(chosen, dtype=np.int64)


def _adjacent_vertices(A: np.ndarray, u: np.ndarray, hint, tol: float, max_bases: int = 12) -> np.ndarray:
    """Extreme points of {u >= 0 : A u = a} adjacent to the vertex ``u`` (rows of the result): one
    simplex pivot along each nonbasic column; at a degenerate vertex, degenerate pivots explore up
    to ``max_bases`` bases of the same vertex."""
    rows, m = A.shape
    if rows == 0:
        return np.zeros((0, m))
    start = _complete_basis(A, u, hint, tol)
    seen_bases = {np.sort(start).tobytes()}
    queue = [start]
    blocks = []
    while queue:
        basis = queue.pop(0)
        try:
            lu = sla.lu_factor(A[:, basis])
        except (ValueError, sla.LinAlgError):
            continue
        nonbasic = np.setdiff1d(np.arange(m), basis)
        D = sla.lu_solve(lu, A[:, nonbasic])
        if not np.all(np.isfinite(D)):
            continue
        uB = u[basis]
        dec = D > 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(dec, uB[:, None] / np.where(dec, D, 1.0), np.inf)
        leave = np.argmin(ratios, axis=0)
        t = ratios[leave, np.arange(nonbasic.size)]
        edge = np.isfinite(t)                  # columns with an infinite t are extreme rays
        move = edge & (t > tol)
        if np.any(move):
            cols, tk = nonbasic[move], t[move]
            V = np.repeat(u[None, :], cols.size, axis=0)
            V[np.arange(cols.size), cols] = tk
            V[:, basis] -= tk[:, None] * D[:, move].T
            V[V < tol] = 0.0
            blocks.append(V)
        for k in np.flatnonzero(edge & ~move):   # degenerate pivots: same vertex, new basis
            if len(seen_bases) >= max_bases:
                break
            nb = basis.copy()
            nb[leave[k]] = nonbasic[k]
            kb = np.sort(nb).tobytes()
            if kb not in seen_bases:
                seen_bases.add(kb)
                queue.append(nb)
    if not blocks:
        return np.zeros((0, m))
    V = np.vstack(blocks)
    _, first = np.unique(np.round(V, 9), axis=0, return_index=True)
    V = V[np.sort(first)]
    return V[np.any(np.abs(V - u) > 1e-9 * max(1.0, float(np.abs(u).max(initial=0))), axis=1)]


# ---------------------------------------------------------------------------------------------------
# bilinear-lp

@dataclass(frozen=True)
class BilinearOptions:
    """tol: stop at x'y <= tol * ||x||_1 ||y||_inf (the paper's 1e-10, scaled by the vertex
    size because HiGHS solves to 1e-9); variant: 'restart'
    (section 5: back to Step 1 after a random adjacent pair) or 'original' (section 4: repeat Step 3);
    max_restarts: random Step-3 moves allowed (the paper stopped after 20); seed: for those moves;
    max_pairs: a hard cap on (x, y) pairs."""

    tol: float = 1e-10
    variant: str = "restart"
    max_restarts: int = 20
    seed: int = 0
    max_pairs: int = 2000

    def __post_init__(self):
        if self.variant not in ("restart", "original"):
            raise ParamError(f"variant must be 'restart' or 'original', got {self.variant!r}")
        if self.tol <= 0 or self.max_restarts < 0 or self.max_pairs < 1:
            raise ParamError("tol must be > 0, max_restarts >= 0 and max_pairs >= 1")


@register("bilinear-lp", problems=(UCP,), options=BilinearOptions, convert=False,
          description="Pang-Trinkle-Lo LP descent on min x'y (Steps 0-3, restart variant)",
          guarantees="heuristic: a SOLVED answer is certified; NO_SOLUTION only when X or Y is empty; "
                     "otherwise failure is NO_SOLUTION_FOUND")
@_single_thread_blas
def bilinear_lp(problem: UCP, opts: BilinearOptions, warm_start=None) -> Solution:
    """Pang-Trinkle-Lo section 4 (Steps 0-3) and the section-5 restart variant on min x'y over X x Y.

    SOLVED with a complementary vertex pair; NO_SOLUTION when X or Y is empty; NO_SOLUTION_FOUND after
    ``max_restarts`` random Step-3 moves (reason: cycling when a pair was revisited) or ``max_pairs``.
    """
    counter = {"lps": 0, "simplex_iterations": 0}
    setup = _setup(problem, counter)
    if setup is None:
        return _no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (inconsistent equations)",
                            pairs=0, lps=0)
    (Ax, _), (Ay, _), lpx, lpy = setup
    rng = np.random.default_rng(opts.seed)
    info = {"pairs": 0, "lps": 0, "step3": 0, "restarts": 0, "revisits": 0, "variant": opts.variant}

    def finish(status, x, y, reason=""):
        info["lps"] = counter["lps"]
        info["xTy"] = float(best[0])
        if reason:
            info["reason"] = reason
        z = UCP.stack(x, y) if x is not None else np.full(problem.n, np.nan)
        return Solution(z=z, w=np.zeros(0), status=status, iterations=info["pairs"],
                        pivots=counter["simplex_iterations"], info=info)

    try:
        # Step 0: two LPs with a zero objective
        x, bx = lpx.solve()
        y, by = lpy.solve()
        if x is None or y is None:
            info["lps"] = counter["lps"]
            return _no_solution(problem, Status.NO_SOLUTION, reason=f"{'X' if x is None else 'Y'} is empty (LP)",
                                **info)

        def small(x, y):
            # the paper's x'y <= 1e-10, relative to the size of the vertices (HiGHS works to 1e-9)
            return float(x @ y) <= opts.tol * float(x.sum()) * float(np.abs(y).max(initial=0))

        def key(x, y):
            return np.round(x, 8).tobytes() + np.round(y, 8).tobytes()

        obj = float(x @ y)
        best = [obj, x, y]
        visited = {key(x, y)}
        while True:
            if small(x, y):
                return finish(Status.SOLVED, x, y)
            if info["pairs"] >= opts.max_pairs:
                return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason="pair limit")
            # Step 1: alternating LPs (14), (15)
            x1, bx1 = lpx.solve(cost=y)
            y1, by1 = lpy.solve(cost=x1)
            info["pairs"] += 1
            obj1 = float(x1 @ y1)
            if obj1 < best[0]:
                best[:] = [obj1, x1, y1]
            k1 = key(x1, y1)
            seen_before = set()
            if k1 in visited:
                info["revisits"] += 1
                seen_before = {k1}
            visited.add(k1)
            # Step 2 (a pair seen before would repeat the same path: treat it as stationary)
            if small(x1, y1) or (obj1 < obj - 1e-12 * max(1.0, obj) and k1 not in seen_before):
                x, y, bx, by, obj = x1, y1, bx1, by1, obj1
                continue
            x, y, bx, by, obj = x1, y1, bx1, by1, obj1   # stationary pair (16)
            # Step 3: adjacent extreme points; pairs already visited are not taken again (no cycling)
            while True:
                info["step3"] += 1
                Ex = np.vstack([x[None, :], _adjacent_vertices(Ax, x, bx, 1e-10)])
                Ey = np.vstack([y[None, :], _adjacent_vertices(Ay, y, by, 1e-10)])
                prod = Ex @ Ey.T
                prod[0, 0] = np.inf
                order = np.argsort(prod, axis=None)
                moved = False
                for flat in order:
                    i, j = np.unravel_index(int(flat), prod.shape)
                    if not prod[i, j] < obj - 1e-12 * max(1.0, obj):
                        break
                    if key(Ex[i], Ey[j]) not in visited:
                        moved = True
                        break
                if moved:
                    x, y, bx, by, obj = Ex[i], Ey[j], None, None, float(prod[i, j])
                    info["pairs"] += 1
                    visited.add(key(x, y))
                    if obj < best[0]:
                        best[:] = [obj, x, y]
                    break
                if info["restarts"] >= opts.max_restarts:
                    reason = "cycling (a pair was revisited)" if info["revisits"] else "restart limit"
                    return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason=reason)
                info["restarts"] += 1
                if prod.size <= 1:
                    return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason="no adjacent extreme point")
                flat = int(rng.integers(1, prod.size))   # a random pair other than the current one
                i, j = np.unravel_index(flat, prod.shape)
                x, y, bx, by, obj = Ex[i], Ey[j], None, None, float(prod[i, j])
                info["pairs"] += 1
                kk = key(x, y)
                if kk in visited:
                    info["revisits"] += 1
                visited.add(kk)
                if obj < best[0]:
                    best[:] = [obj, x, y]
                if small(x, y) or opts.variant == "restart":
                    break
    except _LPFailure as exc:
        info["lps"] = counter["lps"]
        return _no_solution(problem, Status.NUMERICAL_FAILURE, reason=f"HiGHS: {exc}", **info)


# ---------------------------------------------------------------------------------------------------
# mip

@dataclass(frozen=True)
class MipOptions:
    """delta: least weight t of the homogenising coordinate (see :func:`mip`); tighten: compute each
    big-M by an LP (2 m warm-started LPs; else sigma, the bound the normalising plane gives; measured:
    1 node instead of 192 at n_c = 100); time_limit: seconds for HiGHS' branch and bound."""

    delta: float = 1e-6
    tighten: bool = True
    time_limit: float = 600.0
    heuristic_first: bool = False   # try bilinear-lp (3 restarts) first; the MIP only if it finds nothing
    max_rounds: int = 8             # MIP runs (a rejected pattern or an unconfirmed infeasibility costs one)

    def __post_init__(self):
        if not 1e-7 <= self.delta < 0.5:
            raise ParamError("delta must lie in [1e-7, 0.5): below 1e-7 it meets HiGHS' feasibility "
                             "tolerance (1e-9) and rays pass for vertices")
        if self.time_limit <= 0:
            raise ParamError("time_limit must be > 0")


def _normalised(G, F, g, sigma):
    """Sparse equations of {(u, t, w) : u >= 0, t >= 0, G u + F w = g t, e'u / sigma + t = 1}: the
    homogenised polyhedron {u >= 0 : G u + F w = g} cut by a normalising plane (bounded in u and t,
    every u_i in [0, sigma]); ``w`` (free) are lifting variables."""
    rows, m = G.shape
    k = F.shape[1]
    top = sp.hstack([sp.csr_matrix(G), sp.csr_matrix(-g[:, None]), sp.csr_matrix(F)])
    norm = sp.csr_matrix(np.concatenate([np.full(m, 1.0 / sigma), [1.0], np.zeros(k)])[None, :])
    return sp.vstack([top, norm], format="csr"), np.concatenate([np.zeros(rows), [1.0]])


@register("mip", problems=(UCP,), options=MipOptions, convert=False,
          description="exact decision: x_i y_i = 0 by binaries and LP-derived big-M, HiGHS MIP",
          guarantees="decides: SOLVED (certified) or NO_SOLUTION (proven, for vertices with "
                     "||u||_1 < sigma (1/delta - 1)); MAX_ITERATIONS at the time limit")
@_single_thread_blas
def mip(problem: UCP, opts: MipOptions, warm_start=None) -> Solution:
    """Exact decision of the UCP by mixed-integer programming.

    A solution, if any, exists with x and y vertices of X and Y (Pang-Trinkle-Lo, section 4). X is
    homogenised to {(x, t) >= 0 : A x = a t} and cut by e'x / sigma_x + t = 1, which makes it a
    polytope with x_i <= Mx_i (Mx_i = max x_i there, one LP each); the same for Y with (y, s). Then

        x_i <= Mx_i z_i,  y_i <= My_i (1 - z_i),  z binary,  t >= delta,  s >= delta

    is feasible iff the UCP has a solution whose vertices satisfy e'x <= sigma_x (1 - delta)/delta
    (and likewise y); sigma is the 1-norm of a first LP vertex, so delta = 1e-6 admits vertices a
    million times larger than it. The binary pattern is then polished by two LPs on X and Y.
    X is taken in the problem's sparse lifted form when it has one (``UCP.x_lift``). With the contact
    layout (``UCP.contacts``) the binaries of a contact are restricted to its four modes
    (z_t+ >= z_n, z_t- >= z_n, z_t+ + z_t- <= 1 + z_n), which keeps a solution whenever one exists.
    """
    if opts.heuristic_first:
        first = bilinear_lp(problem, BilinearOptions(max_restarts=3), None)
        if first.status == Status.SOLVED and problem.residuals(first.z).natural <= 1e-6 * problem.scale():
            first.info.update(decided_by="bilinear-lp", nodes=0)
            return first
    counter = {"lps": 0, "simplex_iterations": 0}
    setup = _setup(problem, counter)
    m = problem.m
    if setup is None:
        return _no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (inconsistent equations)",
                            lps=0, nodes=0)
    (Ax, ax), (Ay, ay), lpx, lpy = setup
    info: dict = {}
    try:
        x0, _ = lpx.solve()
        y0, _ = lpy.solve()
        if x0 is None or y0 is None:
            return _no_solution(problem, Status.NO_SOLUTION, reason=f"{'X' if x0 is None else 'Y'} is empty (LP)",
                                lps=counter["lps"], nodes=0)
        if float(x0 @ y0) == 0.0:
            return Solution(z=UCP.stack(x0, y0), w=np.zeros(0), status=Status.SOLVED,
                            info={"lps": counter["lps"], "nodes": 0, "pairs": 0, "xTy": 0.0})
        sx, sy = max(1.0, float(x0.sum())), max(1.0, float(y0.sum()))
        if problem.x_lift is not None:
            Gx, Fx, gx = problem.x_lift
        else:
            Gx, Fx, gx = Ax, np.zeros((Ax.shape[0], 0)), ax
        Ex, ex = _normalised(Gx, Fx, gx, sx)
        Ey, ey = _normalised(problem.B, np.zeros((problem.B.shape[0], 0)), problem.b, sy)
        kx = Fx.shape[1]
        Mx, My = np.full(m, sx), np.full(m, sy)
        if opts.tighten:
            for E, e, M, k in ((Ex, ex, Mx, kx), (Ey, ey, My, 0)):
                lp = _LP(E, e, counter, n_free=k)
                for i in range(m):
                    c = np.zeros(E.shape[1])
                    c[i] = -1.0
                    u, _ = lp.solve(cost=c)
                    if u is None:   # the normalised set is empty: no point with t > 0
                        break
                    M[i] = min(M[i], u[i] * (1 + 1e-7) + 1e-12)
        info["big_m_max"] = [float(Mx.max(initial=0)), float(My.max(initial=0))]
        # columns: [x (m), t, w (kx)] [y (m), s] [z (m, binary)]
        nx, ny = m + 1 + kx, m + 1
        ncol = nx + ny + m
        blk = sp.block_diag([Ex, Ey], format="csr")
        I = sp.identity(m, format="csr")
        rows = [sp.hstack([blk, sp.csr_matrix((blk.shape[0], m))]),
                sp.hstack([I, sp.csr_matrix((m, nx - m + ny)), -sp.diags(Mx)]),           # x_i <= Mx_i z_i
                sp.hstack([sp.csr_matrix((m, nx)), I, sp.csr_matrix((m, 1)), sp.diags(My)])]  # y_i <= My_i (1 - z_i)
        lo = [np.concatenate([ex, ey]), np.full(m, -_INF), np.full(m, -_INF)]
        hi = [np.concatenate([ex, ey]), np.zeros(m), My.copy()]
        if problem.contacts:
            nc = problem.contacts
            zn, zp, zm = np.arange(nc), nc + np.arange(nc), 2 * nc + np.arange(nc)
            r = np.arange(nc)
            cut = lambda cols, vals: sp.csr_matrix(  # noqa: E731
                (np.concatenate([np.full(nc, v) for v in vals]),
                 (np.concatenate([r] * len(cols)), np.concatenate([nx + ny + c for c in cols]))), shape=(nc, ncol))
            rows += [cut([zp, zn], [1.0, -1.0]), cut([zm, zn], [1.0, -1.0]), cut([zp, zm, zn], [1.0, 1.0, -1.0])]
            lo += [np.zeros(nc), np.zeros(nc), np.full(nc, -_INF)]
            hi += [np.full(nc, _INF), np.full(nc, _INF), np.ones(nc)]
        Amat = sp.vstack(rows, format="csc")
        col_lo = np.concatenate([np.zeros(m), [opts.delta], np.full(kx, -_INF), np.zeros(m), [opts.delta],
                                 np.zeros(m)])
        col_hi = np.concatenate([np.full(nx + ny, _INF), np.ones(m)])
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = ncol, Amat.shape[0]
        lp.col_cost_ = np.zeros(ncol)
        lp.col_lower_, lp.col_upper_ = col_lo, col_hi
        lp.row_lower_, lp.row_upper_ = np.concatenate(lo), np.concatenate(hi)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = Amat.indptr.astype(np.int32)
        lp.a_matrix_.index_ = Amat.indices.astype(np.int32)
        lp.a_matrix_.value_ = Amat.data
        lp.integrality_ = [highspy.HighsVarType.kContinuous] * (nx + ny) + [highspy.HighsVarType.kInteger] * m
        zcols = np.arange(nx + ny, ncol, dtype=np.int32)
        t_start = time.perf_counter()
        nogoods: list[np.ndarray] = []
        info.update(pairs=0, nodes=0, mip_runs=[], rejected_patterns=0)

        def run_mip(presolve: str):
            """One HiGHS branch and bound on the model plus the no-good cuts found so far."""
            h = highspy.Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("presolve", presolve)
            h.setOptionValue("time_limit", max(1.0, float(opts.time_limit) - (time.perf_counter() - t_start)))
            h.setOptionValue("mip_feasibility_tolerance", 1e-9)
            h.setOptionValue("primal_feasibility_tolerance", 1e-9)
            h.passModel(lp)
            for pat in nogoods:   # sum_{z=1 in pat} (1 - z_i) + sum_{z=0 in pat} z_i >= 1
                coef = np.where(pat, -1.0, 1.0)
                h.addRow(1.0 - float(pat.sum()), _INF, m, zcols, coef)
            h.run()
            st = h.getModelStatus()
            info["nodes"] += int(h.getInfo().mip_node_count)
            info["mip_runs"].append(f"presolve={presolve}: {h.modelStatusToString(st)}")
            zbin = np.asarray(h.getSolution().col_value)[nx + ny:] > 0.5 if st == _OPTIMAL else None
            return st, zbin

        # HiGHS at tolerance 1e-9 has been seen to call a feasible model infeasible (presolve off, two
        # n_c = 100 cases): an infeasibility is only reported when a second run with presolve toggled
        # agrees; a pattern that the LPs on X and Y reject is cut off (no-good) and the MIP re-run.
        presolves = ["on", "off"]
        infeasible_runs = 0
        for _ in range(opts.max_rounds):
            st, zbin = run_mip(presolves[infeasible_runs % 2])
            info["lps"] = counter["lps"]
            if st == _INFEASIBLE:
                infeasible_runs += 1
                if infeasible_runs >= 2:
                    return _no_solution(problem, Status.NO_SOLUTION, reason="MIP infeasible (confirmed by a "
                                        "second run with presolve toggled)", xTy=float("nan"), **info)
                continue
            if st != _OPTIMAL:
                return _no_solution(problem, Status.MAX_ITERATIONS if st == highspy.HighsModelStatus.kTimeLimit
                                    else Status.NUMERICAL_FAILURE, reason=f"HiGHS MIP: {info['mip_runs'][-1]}",
                                    **info)
            # polish: exact vertices with the binary pattern
            x, _ = lpx.solve(cost=np.ones(m), zero=~zbin)
            y, _ = lpy.solve(cost=np.ones(m), zero=zbin)
            info["lps"] = counter["lps"]
            if x is not None and y is not None:
                return Solution(z=UCP.stack(x, y), w=np.zeros(0), status=Status.SOLVED,
                                info={**info, "polished": True, "xTy": float(x @ y)})
            info["rejected_patterns"] += 1
            nogoods.append(zbin.copy())
        return _no_solution(problem, Status.NO_SOLUTION_FOUND, reason="MIP runs disagree or patterns keep "
                            "failing the LP check", **info)
    except _LPFailure as exc:
        return _no_solution(problem, Status.NUMERICAL_FAILURE, reason=f"HiGHS: {exc}", lps=counter["lps"])


# ---------------------------------------------------------------------------------------------------
# contact-mode enumeration

@dataclass(frozen=True)
class EnumerationOptions:
    """prune: test partial mode assignments and cut infeasible subtrees (else test every complete
    assignment, the classical exhaustive scheme); find_all: keep going after the first solution;
    max_candidates: give up (MAX_ITERATIONS) after this many candidate tests."""

    prune: bool = True
    find_all: bool = False
    max_candidates: int = 1_000_000

    def __post_init__(self):
        if self.max_candidates < 1:
            raise ParamError("max_candidates must be >= 1")


def _mode_masks(problem: UCP):
    """Per group, the list of (x-zero indices, y-zero indices) of each mode."""
    if problem.contacts:
        nc = problem.contacts
        groups = []
        for i in range(nc):
            vn, vp, vm = i, nc + i, 2 * nc + i
            groups.append([((vn, vp, vm), ()),          # rolling: v = 0
                           ((vn, vm), (vp,)),           # sliding+: v_n = v- = 0, s+ = 0
                           ((vn, vp), (vm,)),           # sliding-: v_n = v+ = 0, s- = 0
                           ((), (vn, vp, vm))])         # breaking: c_n = s+ = s- = 0
        return groups, ("rolling", "sliding+", "sliding-", "breaking")
    return [[((i,), ()), ((), (i,))] for i in range(problem.m)], ("x=0", "y=0")


@register("mode-enumeration", problems=(UCP,), options=EnumerationOptions, convert=False,
          description="contact-mode enumeration (Trinkle-Zeng style), 4 modes per contact, LP tests",
          guarantees="decides by exhaustion (SOLVED or NO_SOLUTION); exponential in the number of contacts; "
                     "MAX_ITERATIONS past max_candidates")
@_single_thread_blas
def mode_enumeration(problem: UCP, opts: EnumerationOptions, warm_start=None) -> Solution:
    """Contact-mode enumeration (Trinkle & Zeng 1994 style) on the uncoupled polyhedra.

    With ``problem.contacts``: per contact rolling (v = 0), sliding+ (v_n = v- = 0, s+ = 0), sliding-
    (v_n = v+ = 0, s- = 0) or breaking (c_n = s+ = s- = 0); these four cover every complementary
    pattern. Without it: per index x_i = 0 or y_i = 0. A candidate is an LP feasibility test on X and/or
    Y with those zeros. SOLVED (first or, with ``find_all``, every feasible assignment in
    ``info['modes']``), NO_SOLUTION when every assignment is infeasible, MAX_ITERATIONS past the budget.
    """
    counter = {"lps": 0, "simplex_iterations": 0}
    setup = _setup(problem, counter)
    if setup is None:
        return _no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (inconsistent equations)",
                            candidates=0, lps=0, solutions=0)
    _, _, lpx, lpy = setup
    groups, names = _mode_masks(problem)
    G, m = len(groups), problem.m
    info = {"candidates": 0, "complete_candidates_total": float(len(names)) ** G, "solutions": 0,
            "mode_names": list(names)}
    zx, zy = np.zeros(m, dtype=bool), np.zeros(m, dtype=bool)
    first: list = []
    modes_found: list = []

    def test(check_x: bool, check_y: bool):
        x = y = None
        if check_x:
            x, _ = lpx.solve(zero=zx)
            if x is None:
                return None, None
        if check_y:
            y, _ = lpy.solve(zero=zy)
            if y is None:
                return None, None
        return x, y

    def leaf() -> bool:
        """A complete mode assignment: with pruning both tests already passed on the way down."""
        if opts.prune:
            x, _ = lpx.solve(zero=zx)
            y, _ = lpy.solve(zero=zy)
        else:
            info["candidates"] += 1
            x, y = test(True, True)
        if x is None or y is None:
            return False
        info["solutions"] += 1
        if not first:
            first.append((x, y))
        modes_found.append([names[k] for k in assignment])
        return True

    assignment = [0] * G
    try:
        x_ok, y_ok = test(True, True)
        if x_ok is None or y_ok is None:
            return _no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (LP)", lps=counter["lps"], **info)

        def dfs(g: int) -> bool:
            if info["candidates"] >= opts.max_candidates:
                raise _Budget
            if g == G:
                return leaf() and not opts.find_all
            for k, (xz, yz) in enumerate(groups[g]):
                xz, yz = list(xz), list(yz)
                oldx, oldy = zx[xz].copy(), zy[yz].copy()
                zx[xz] = True
                zy[yz] = True
                assignment[g] = k
                ok = True
                if opts.prune:
                    info["candidates"] += 1
                    x, y = test(True, False) if xz else (0, 0)
                    ok = x is not None
                    if ok and yz:
                        x, y = test(False, True)
                        ok = y is not None
                if ok and dfs(g + 1):
                    return True
                zx[xz] = oldx
                zy[yz] = oldy
            return False

        dfs(0)
    except _Budget:
        info["lps"] = counter["lps"]
        if first:
            x, y = first[0]
            return Solution(z=UCP.stack(x, y), w=np.zeros(0), status=Status.SOLVED, iterations=info["candidates"],
                            info={**info, "modes": modes_found[:100], "complete": False})
        return _no_solution(problem, Status.MAX_ITERATIONS, reason="max_candidates reached", **info)
    except _LPFailure as exc:
        return _no_solution(problem, Status.NUMERICAL_FAILURE, reason=f"HiGHS: {exc}", lps=counter["lps"], **info)
    info["lps"] = counter["lps"]
    info["modes"] = modes_found[:100]
    if not first:
        return _no_solution(problem, Status.NO_SOLUTION, reason="every contact mode is infeasible", **info)
    x, y = first[0]
    return Solution(z=UCP.stack(x, y), w=np.zeros(0), status=Status.SOLVED, iterations=info["candidates"],
                    pivots=counter["simplex_iterations"], info={**info, "xTy": float(x @ y)})


class _Budget(Exception):
    pass
