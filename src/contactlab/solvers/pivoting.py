"""Principal pivoting: Cottle-Dantzig with warm start (loomis-balkcom Theorem 1) and
Drumwright's modified PPM I on the factored contact form (drumwright Alg. 1, Theorem 1)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError
from ..kernels import pivoting as K
from ..kernels import factored as KF
from ..kernels.factored import clear_full_row_rank, dense_csr
from ..kernels.tolerances import CERTIFY, ITERATE, NORMWISE_FLOOR, RANK, SYMMETRY
from ..problems import LCP, FactoredLCP
from ..problems.residual import lcp_natural_residual, lcp_residuals
from ..problems.validation import to_dense
from ..solution import Solution, Status
from .registry import certified_by_kernel, check_common, dense_matrix_for, register

#: the Status of each code the compiled pivoting kernels (kernels/pivoting.py) return
PIVOTING_STATUS = {K.SOLVED: Status.SOLVED, K.UNBOUNDED: Status.NO_SOLUTION, K.MAX_PIVOTS: Status.MAX_ITERATIONS,
           K.NUMERICAL: Status.NUMERICAL_FAILURE, K.NOT_P: Status.NUMERICAL_FAILURE}


@dataclass(frozen=True)
class DantzigOptions:
    """tol: certified relative residual (solve() checks max(certify, tol)); max_iterations: pivot
    limit, default 20 n + 100 (alias max_pivots); refine: one step of iterative refinement of
    M_CC z_C = -q_C."""
    tol: float = CERTIFY
    max_iterations: int | None = None
    refine: bool = True

    def __post_init__(self):
        check_common(self)


def _warm_candidates(M, q, warm_start, tol):
    """The active indices a warm start proposes, and k for Theorem 1's bound (n - k major cycles).

    ``warm_start`` is a full-size Solution (or z vector): its positive entries; or a pair
    (indices, z_sub) solving the principal sub-LCP on ``indices`` (checked): its positive entries,
    and k = len(indices).
    """
    n = q.size
    if isinstance(warm_start, tuple) and len(warm_start) == 2:
        idx = np.asarray(warm_start[0], dtype=np.int64).ravel()
        zs = np.asarray(warm_start[1], dtype=np.float64).ravel()
        if idx.shape != zs.shape or np.any(idx < 0) or np.any(idx >= n) or np.unique(idx).size != idx.size:
            raise ParamError(f"warm_start pair needs distinct indices in [0, {n}) and z_sub of the same length")
        sub = lcp_residuals(zs, M[np.ix_(idx, idx)] @ zs + q[idx])
        if max(sub.natural, sub.infeasibility) > 1e-6 * max(1.0, np.abs(q[idx]).max(initial=0.0)):
            raise ParamError("warm_start (indices, z_sub) does not solve the principal sub-problem on those "
                             f"indices (residual {sub.natural:.2g}); pass that sub-problem's solution")
        return idx[zs > tol], idx.size
    zfull = np.asarray(getattr(warm_start, "z", warm_start), dtype=np.float64).ravel()
    if zfull.shape != (n,):
        raise ParamError(f"warm_start must be a Solution or vector of length {n}, or a pair (indices, z_sub)")
    return np.flatnonzero(zfull > tol), None


def dantzig_refusal(problem: LCP) -> str | None:
    """Cottle-Dantzig is guaranteed for symmetric PSD M and for P-matrices (the nonsymmetric kernel
    keeps M_CC^-1 by bordering, which needs every principal block nonsingular). A nonsymmetric M
    with a diagonal entry <= 0 is not a P-matrix (e.g. Stewart-Trinkle's friction LCP, whose
    lambda rows have a zero diagonal and are not PSD): ``solve()`` refuses it before any pivot
    (NO_SOLUTION_FOUND with info['reason'] naming lemke; the registry's ``accepts`` is False, so
    fallback chains and ``simulate --method`` do not offer dantzig for it). Only LCPs given as such:
    the reductions of boxed / mixed problems, which dantzig solves in practice, run and report
    honestly (the kernel stops with 'not a P-matrix' at a Schur complement <= 0). O(n^2): for a
    dense M the symmetry test's two numbers in one compiled pass (kernels/pivoting.py
    ``symmetry_dense``), kept on the problem as ``is_symmetric`` and ``max_abs_M`` keep them."""
    if type(problem.M) is np.ndarray and getattr(problem, "_symmetric", None) is None and problem.M.dtype == np.float64:
        mmax, asym = K.symmetry_dense(problem.M)
        problem._max_abs, problem._symmetric = mmax, bool(asym <= SYMMETRY * mmax)
    if problem.is_symmetric():
        return None
    M = problem.M
    diag = M.diagonal() if sp.issparse(M) else np.diag(M)
    i = int(np.argmin(diag))
    if diag.size and diag[i] <= 0.0:
        return (f"method 'dantzig' is guaranteed only for symmetric PSD and P-matrix LCPs; this M is "
                f"nonsymmetric with M[{i},{i}] = {diag[i]:.3g} <= 0, so it is not a P-matrix (a friction "
                "LCP such as Stewart-Trinkle's is copositive-plus): use method='lemke' (guaranteed for "
                "copositive-plus M) or 'auto'")
    return None


@register("dantzig", problems=(LCP,), options=DantzigOptions, warm_start=True,
          classes=("spd", "psd", "p", "factored"), refuse=dantzig_refusal,
          description="Cottle-Dantzig principal pivoting with warm start from a sub-problem (Loomis-Balkcom)",
          guarantees="P-matrix and PSD LCPs: solution in at most n major cycles (n - k from a k-index "
                     "sub-problem solution, loomis-balkcom Theorem 1); NO_SOLUTION only with the driving "
                     "ray as a Farkas vector checked by solve() (exists for infeasible PSD M); a "
                     "nonsymmetric M with a diagonal entry <= 0 (not P, e.g. Stewart-Trinkle friction) "
                     "is refused (NO_SOLUTION_FOUND, reason naming lemke; accepts() False); other matrices outside P/PSD: no "
                     "guarantee, an honest non-success (never an exception)")
def dantzig_solve(problem: LCP, opts: DantzigOptions, warm_start=None) -> Solution:
    M = dense_matrix_for("dantzig", problem, copies=3)
    if M is problem.M and (warm_start is None or isinstance(warm_start, (np.ndarray, Solution))):
        zw = _EMPTY if warm_start is None else getattr(warm_start, "z", warm_start)
        if type(zw) is np.ndarray and zw.dtype == np.float64 and zw.ndim == 1 and zw.flags.c_contiguous \
                and zw.size in (0, problem.n):
            return _dantzig_dense(problem, opts, zw)
    q = problem.q
    n = problem.n
    mmax = problem.max_abs_M()
    tol = ITERATE * (float(np.max(np.abs(q), initial=0.0)) + mmax)  # warm-start entries counted positive
    sym = problem.is_symmetric()
    inC = np.zeros(n, dtype=np.bool_)
    idx = np.zeros(n, dtype=np.int64)
    Minv = np.zeros((n, n))
    info: dict = {}
    z = np.zeros(n)
    k0 = 0
    if warm_start is not None:
        cand, k_sub = _warm_candidates(M, q, warm_start, tol)
        k0 = K.warm_start_kernel(M, q, np.ascontiguousarray(cand, dtype=np.int64), Minv, sym, idx, inC, z,
                                 np.zeros(n), np.zeros(n), np.zeros(n))
        # Theorem 1's k: the sub-problem's size, less any of its active indices the start had to drop
        k_sub = k0 if k_sub is None else k_sub - (cand.size - k0)
        info["warm_start_k"] = int(k_sub)
        info["major_cycle_bound"] = int(n - k_sub)
    w = M @ z + q
    w[inC] = 0.0
    max_pivots = opts.max_iterations if opts.max_iterations is not None else 20 * n + 100
    counts = np.zeros(3, dtype=np.int64)
    work = [np.empty(n) for _ in range(4)]
    MT = M if sym else np.ascontiguousarray(M.T)
    code, k = K.dantzig_kernel(M, MT, q, z, w, inC, idx, k0, Minv, sym, max_pivots, mmax, *work,
                               np.zeros(n, dtype=np.bool_), counts)
    status = PIVOTING_STATUS[code]
    if code == K.UNBOUNDED:
        # the driving ray: a Farkas vector when M is PSD (or copositive-plus); solve() checks it
        y = np.zeros(n)
        y[counts[2]] = 1.0
        y[idx[:k]] = work[2][:k]
        info["certificate"] = {"kind": "farkas", "y": y}
        info["reason"] = "no blocking index on the driving ray"
    if code == K.NOT_P:
        info["reason"] = not_p_reason(int(counts[2]))
    if status is Status.SOLVED and opts.refine and k:
        zr = z.copy()
        K.refine_active(M, q, zr, idx, k, Minv, sym, work[0], work[1])
        if np.all(zr[idx[:k]] >= 0) and (lcp_natural_residual(zr, M @ zr + q)
                                         <= lcp_natural_residual(z, M @ z + q)):
            z = zr
    info["active_set"] = np.sort(idx[:k]).copy()
    return Solution(z=np.maximum(z, 0.0), w=np.empty(0), status=status, iterations=int(counts[0]),
                    pivots=int(counts[1]), info=info)


_EMPTY = np.zeros(0)


def _dantzig_dense(problem: LCP, opts: DantzigOptions, zw: np.ndarray) -> Solution:
    """:func:`dantzig_solve` of a dense M (cold, or warm-started from a full-size z) in one compiled
    call over this thread's work arrays (kernels/pivoting.py ``dantzig_work``: the warm start's exact
    start, the pivoting, the refinement and the certification of z with the library's residual
    kernel, which ``solve()`` then reads, :func:`~contactlab.solvers.registry.certified_by_kernel`).
    The same steps as the general path; a warm start from a motionless set (loomis-balkcom §IV) then
    costs its pivots, not the Python around them."""
    n = problem.n
    work = _work()
    if n > work.size:
        work.arrays(n)
    code, k0, majors, pivots, d, rel, numbers, z, w, active = K.dantzig_result(
        problem.M, problem.q, zw, -1 if opts.max_iterations is None else opts.max_iterations, bool(opts.refine),
        NORMWISE_FLOOR, False, 0.0, work.f, work.i, work.b)
    code, k0, majors, pivots = int(code), int(k0), int(majors), int(pivots)   # numpy ints without numba
    info: dict = {"active_set": active}
    if zw.size:
        info["warm_start_k"] = k0
        info["major_cycle_bound"] = n - k0
    if code == K.UNBOUNDED:   # the driving ray: a Farkas vector when M is PSD; solve() checks it
        info["certificate"] = {"kind": "farkas", "y": work.f[2 * n:3 * n].copy()}
        info["reason"] = "no blocking index on the driving ray"
    elif code == K.NOT_P:
        info["reason"] = not_p_reason(int(d))
    sol = Solution(z=z, w=_EMPTY, status=PIVOTING_STATUS[code], iterations=majors, pivots=pivots, info=info)
    return certified_by_kernel(sol, problem, w, numbers, rel)


class DantzigWork:
    """The work arrays of dense Dantzig solves (kernels/pivoting.py ``dantzig_work``), kept between
    calls and grown to the largest n seen: a caller that solves many small LCPs in a row (a
    simulator's steps, sim/reuse.py's motionless set, loomis-balkcom §IV) allocates nothing per solve.
    One per thread for ``solve()`` (:func:`_work`); a caller may keep its own. Not shared between
    threads: a solve writes them."""

    __slots__ = ("size", "f", "i", "b", "into")

    def __init__(self):
        self.size = -1
        self.f = self.i = self.b = None
        #: the compiled call of :meth:`lean` (kernels/pivoting.py ``dantzig_into``): numba's dispatcher
        #: until the first call, then its machine code for the lean callers' argument types (:meth:`bind`)
        self.into = K.dantzig_into

    def arrays(self, n: int):
        """(float, int) work arrays for n rows (bool ones in ``b``), grown when n is larger than before."""
        if n > self.size:
            nf, ni, nb = K.work_sizes(n)
            self.f, self.i, self.b = np.empty(nf), np.empty(ni, dtype=np.int64), np.empty(nb, dtype=np.bool_)
            self.size = n
        return self.f, self.i

    def direct(self, problem, warm_start: np.ndarray | None = None, opts: DantzigOptions | None = None):
        """``solve(problem, "dantzig", warm_start=warm_start)`` without solve()'s dispatch, for a
        caller that solves many small LCPs in a row (sim/reuse.py: the motionless set's warm starts,
        loomis-balkcom §IV, where the dispatch cost about as much as the pivots the warm start saves).
        One compiled call (kernels/pivoting.py ``dantzig_work`` with ``direct``) over these work arrays;
        the Solution is the one :func:`~contactlab.solvers.registry.solve` returns (same z, w, status,
        counts, residual numbers, info; tests/solvers/test_pivoting.py) when the kernel's answer is
        SOLVED and certifies (relative residual within max(CERTIFY, tol), finite) on a problem
        solve() neither calls trivial nor refuses (refusal needs a diagonal entry <= 0: any M with one
        is left to solve()). Returns None otherwise: the caller then calls solve(), which gives every
        other outcome its full treatment.

        ``problem``: an LCP with a dense, C-contiguous float64 M; ``warm_start``: None or a full-size
        float64 z of the caller's own making (the motionless set's stored values; unlike solve(), its
        entries are not checked: the kernel only reads which exceed the candidate threshold, and a NaN
        does not); ``opts``: DantzigOptions (default ones when None)."""
        M = problem.M
        if type(problem) is not LCP or type(M) is not np.ndarray:
            return None
        q = problem.q
        n = q.shape[0]
        opts = _DEFAULT if opts is None else opts
        zw = _EMPTY if warm_start is None else warm_start
        if zw.shape[0] not in (0, n) or zw.dtype != np.float64 or not zw.flags.c_contiguous:
            return None
        if n > self.size:
            self.arrays(n)
        t0 = time.perf_counter()
        code, k0, majors, pivots, d, rel, c, z, w, active = K.dantzig_result(
            M, q, zw, -1 if opts.max_iterations is None else opts.max_iterations, opts.refine, NORMWISE_FLOOR, True,
            opts.tol if opts.tol > CERTIFY else CERTIFY, self.f, self.i, self.b)
        if code:       # NOT_DIRECT: solve()'s to answer
            return None
        info: dict = {"active_set": active}
        if zw.shape[0]:
            info["warm_start_k"] = int(k0)
            info["major_cycle_bound"] = n - int(k0)
        return Solution(z, w, _SOLVED, int(majors), int(pivots), c[0], "dantzig", info, c[1], c[2],
                        time.perf_counter() - t0, None, rel)

    def lean(self, M, q, zw, max_pivots: int, tol: float):
        """:meth:`direct`'s Solution for a caller that has checked what :meth:`direct` checks once
        for all its solves (sim/reuse.py, sim/reuse_stages.py: an LCP with a dense M, options with
        ``refine`` on; ``max_pivots`` < 0 for the default limit, ``tol`` = max(CERTIFY, the option's
        tol)), ``zw`` a C-contiguous float64 z of length 0 (cold) or n, ``q`` C-contiguous: one
        :attr:`into` call then :func:`lean_solution`. The same z, w, status, counts, residual numbers
        and info as :meth:`direct` (tests/solvers/test_pivoting.py). None where :meth:`direct`
        returns None."""
        n = q.shape[0]
        if n > self.size:
            self.arrays(n)
        t0 = time.perf_counter()
        zwo, act = np.empty(2 * n), np.empty(n, dtype=np.int64)
        out = self.into(M, q, zw, max_pivots, tol, self.f, self.i, self.b, zwo, act)
        seconds = time.perf_counter() - t0
        if self.into is K.dantzig_into:
            self.bind(M, q, zw, max_pivots, tol, zwo, act)
        return lean_solution(out, zwo, act, zw.shape[0], seconds)

    def bind(self, M, q, zw, max_pivots: int, tol: float, zwo, act) -> None:
        """Set :attr:`into` to the machine code numba's dispatcher runs for these arguments' types
        (``CPUDispatcher.overloads[types].entry_point``), so later calls skip the dispatcher's typing
        of ten arguments and its overload lookup (~1 us in warm caches, several inside a
        simulator's step: docs/computation-reuse.md). Only for callers whose arguments always have
        those types (float64 C-contiguous arrays of the same dimensions, an int, a float): the entry
        point does not check them. Left as the dispatcher while the kernel has no compiled code
        (tiered mode interprets it first: kernels/_jit.py)."""
        self.into = compiled_entry(K.dantzig_into, (M, q, zw, max_pivots, tol, self.f, self.i, self.b, zwo, act))


def lean_takes(problem, warm_start) -> bool:
    """Whether :meth:`DantzigWork.lean` takes this problem and warm start as they are: an LCP with a
    dense M (C-contiguous float64 by LCP's contract), a C-contiguous q, and no warm start or a
    C-contiguous float64 one of length n (the types :meth:`DantzigWork.bind`'s machine code reads)."""
    if type(problem) is not LCP or type(problem.M) is not np.ndarray or not problem.q.flags.c_contiguous:
        return False
    return warm_start is None or (type(warm_start) is np.ndarray and warm_start.shape == (problem.n,) and
                                  warm_start.dtype == np.float64 and warm_start.flags.c_contiguous)


def compiled_entry(dispatcher, args: tuple):
    """``dispatcher``'s compiled function for the types of ``args`` without its per-call typing and
    overload lookup, or ``dispatcher`` itself where it has none (not compiled yet, interpreted)."""
    try:
        return dispatcher.overloads[tuple(dispatcher.typeof_pyval(a) for a in args)].entry_point
    except (AttributeError, KeyError, TypeError):
        return dispatcher


def lean_solution(out: tuple, zwo: np.ndarray, act: np.ndarray, warm: int, seconds: float = 0.0):
    """The Solution of a :attr:`DantzigWork.into` call (kernels/pivoting.py ``dantzig_into``): its
    numbers ``out``, z and w in ``zwo`` (2n), the active set in ``act[:k]`` (``warm``: the warm start's
    length, 0 for a cold start; ``seconds``: its time_s), or None where the call left the problem to
    solve()."""
    code, k0, majors, pivots, k, rel, nat, comp, infeas = out
    if code:
        return None
    n = act.shape[0]
    active = act[:k]
    if warm:
        info = {"active_set": active, "warm_start_k": int(k0), "major_cycle_bound": n - int(k0)}
    else:
        info = {"active_set": active}
    return Solution(zwo[:n], zwo[n:], _SOLVED, int(majors), int(pivots), nat, "dantzig", info, comp, infeas, seconds,
                    None, rel)


_LOCAL = threading.local()


def _work() -> DantzigWork:
    """This thread's :class:`DantzigWork` (solve()'s dense Dantzig solves)."""
    work = getattr(_LOCAL, "work", None)
    if work is None:
        work = _LOCAL.work = DantzigWork()
    return work


def dantzig_direct(problem, warm_start: np.ndarray | None = None, opts: DantzigOptions | None = None):
    """:meth:`DantzigWork.direct` over this thread's work arrays: ``solve(problem, "dantzig",
    warm_start=warm_start)``'s Solution without solve()'s dispatch, or None where solve() would answer
    otherwise (see there)."""
    return _work().direct(problem, warm_start, opts)


_INF = float("inf")
_SOLVED = Status.SOLVED
_DEFAULT = DantzigOptions()


def not_p_reason(d: int) -> str:
    """Why Dantzig stopped where index ``d`` showed M is not a P-matrix, and what to use instead."""
    return (f"M is not a P-matrix (adding index {d} to the principal block gives a Schur complement <= 0); "
            "dantzig is guaranteed only for P-matrix and symmetric PSD LCPs: use method='lemke' (guaranteed "
            "for copositive-plus M, e.g. friction LCPs)")


def _csr_arrays(N):
    """(indptr, indices, data) of N as int64/float64 CSR arrays (compiled for a dense N, kernels/factored.py)."""
    if sp.issparse(N):
        c = sp.csr_matrix(N)
        return c.indptr.astype(np.int64), c.indices.astype(np.int64), np.ascontiguousarray(c.data, dtype=np.float64)
    return dense_csr(np.ascontiguousarray(N, dtype=np.float64))


@dataclass(frozen=True)
class PPMOptions:
    """tol: certified relative residual; max_iterations: default 10 n + 100."""
    tol: float = CERTIFY
    max_iterations: int | None = None

    def __post_init__(self):
        check_common(self)


def theorem1_holds(problem: FactoredLCP) -> tuple[bool, str]:
    """Whether drumwright Theorem 1 covers the problem: cfm > 0 (the bordered [N, sqrt(cfm) I] has
    full row rank), or offset in range(N) (q = N (f* + x)), or N of full row rank (compiled when the
    Gram matrix N N' shows it beyond doubt, kernels/factored.py; else numpy's SVD rank). O(n m^2).
    The general path's test (a sparse N); for a dense N, kernels/factored.py ``ppm_dense`` makes the
    same decision with the same thresholds inside its one compiled call (``theorem1_decide``)."""
    if problem.cfm > 0:
        return True, "cfm > 0: [N, sqrt(cfm) I] has full row rank"
    off = problem.offset
    if not np.any(off):
        return True, "q = N f* (no offset)"
    Nd = to_dense(problem.N)
    if problem.n <= problem.m and (clear_full_row_rank(np.ascontiguousarray(Nd, dtype=np.float64))
                                   or np.linalg.matrix_rank(Nd) == problem.n):
        return True, "N has full row rank"
    x = np.linalg.lstsq(Nd, off, rcond=None)[0]
    if np.max(np.abs(Nd @ x - off)) <= RANK * max(float(np.max(np.abs(off))), 1e-300):
        return True, "offset in range(N)"
    return False, "offset outside range(N) and N rank-deficient (outside Theorem 1)"


@register("ppm", problems=(FactoredLCP,), options=PPMOptions, convert=False, classes=("factored",),
          description="Drumwright's modified principal pivoting (Alg. 1) on N M^-1 N' (+ cfm I) kept factored",
          guarantees="Theorem 1: symmetric PSD contact LCPs with q in range(N), or N of full row rank, or "
                     "cfm > 0; O(m^3 + m^2 n). Problems outside Theorem 1 (offset outside range(N), "
                     "rank-deficient N, cfm = 0) are routed to dantzig on N M^-1 N' (info['routed']), "
                     "which is guaranteed for PSD LCPs")
def ppm_solve(problem: FactoredLCP, opts: PPMOptions, warm_start=None) -> Solution:
    n, m = problem.n, problem.m
    N = problem.N
    if type(N) is np.ndarray and N.dtype == np.float64 and N.flags.c_contiguous:
        sol = _ppm_dense(problem, opts)
        if sol is not None:
            return sol
    ok, why = theorem1_holds(problem)
    if not ok:
        sol = dantzig_solve(problem.to_lcp(), _default_dantzig(opts))
        sol.info["routed"] = {"to": "dantzig", "reason": why}
        return sol
    if getattr(problem, "_csr", None) is None:   # once per problem (contact rows touch two bodies)
        problem._csr = _csr_arrays(problem.N)
    indptr, indices, data = problem._csr
    Lm = problem.lower_factor()  # once per problem (a dense Cholesky of M when M is sparse)
    q = problem.q
    kmax = n if problem.cfm > 0 else min(m, n)   # Lemma 1: at most rank(N M^-1 N') <= m positive
    L = np.zeros((kmax + 1, kmax + 1))
    rows = np.zeros(kmax + 1, dtype=np.int64)
    Gb = np.zeros((kmax + 1, m))
    zb = np.zeros(kmax + 1)
    wt = np.zeros(n)
    counts = np.zeros(2, dtype=np.int64)
    max_it = opts.max_iterations if opts.max_iterations is not None else 10 * n + 100
    code, k = K.ppm_kernel(indptr, indices, data, Lm, q, problem.cfm, max_it, L, rows, Gb, zb, wt,
                           np.zeros(kmax + 1), np.zeros(kmax + 1), np.zeros(m), np.zeros(m), np.zeros(m), counts)
    z = np.zeros(n)
    info = {"theorem1": why}
    if code == K.UNBOUNDED:   # a zero row (N_i M^-1 N_i' = 0) with q_i < 0: y = e_i is a Farkas vector
        y = np.zeros(n)
        y[rows[0]] = 1.0
        info["certificate"] = {"kind": "farkas", "y": y}
    else:
        z[rows[:k]] = zb[:k]
    info.update({"positive": int(np.sum(z > 0)), "rank_bound": m, "nonbasic": np.sort(rows[:k]).copy()})
    return Solution(z=np.maximum(z, 0.0), w=np.empty(0), status=PIVOTING_STATUS[code], iterations=int(counts[0]),
                    pivots=int(counts[1]), info=info)


#: why a factored problem is inside drumwright's Theorem 1 (or outside it), per kernels/factored.py's code
THEOREM1_WHY = {KF.THEOREM1_CFM: "cfm > 0: [N, sqrt(cfm) I] has full row rank",
                 KF.THEOREM1_NO_OFFSET: "q = N f* (no offset)", KF.THEOREM1_FULL_RANK: "N has full row rank",
                 KF.THEOREM1_RANGE: "offset in range(N)",
                 KF.THEOREM1_OUTSIDE: "offset outside range(N) and N rank-deficient (outside Theorem 1)"}


def ppm_info(case: int, code: int, nonbasic, positive, row0, rank_bound: int, n: int, y=None) -> dict:
    """The ``info`` of ppm's Solution from the compiled call's outcome (kernels/factored.py
    ``ppm_dense``): outside Theorem 1 the routed Dantzig's (its active set; on a driving ray the
    Farkas vector ``y`` where given; why it was routed), else Theorem 1's case, the positive count,
    the rank bound and the nonbasic set (a zero row with q_i < 0: e_i as the Farkas vector)."""
    if case == KF.THEOREM1_OUTSIDE:   # routed: what dantzig_solve on problem.to_lcp() returns
        info: dict = {"active_set": nonbasic}
        if code == K.UNBOUNDED:   # the driving ray: a Farkas vector when M is PSD; solve() checks it
            if y is not None:
                info["certificate"] = {"kind": "farkas", "y": y}
            info["reason"] = "no blocking index on the driving ray"
        elif code == K.NOT_P:
            info["reason"] = not_p_reason(int(row0))
        info["routed"] = {"to": "dantzig", "reason": THEOREM1_WHY[case]}
        return info
    info = {"theorem1": THEOREM1_WHY[case]}
    if code == K.UNBOUNDED:   # a zero row (N_i M^-1 N_i' = 0) with q_i < 0: y = e_i is a Farkas vector
        e = np.zeros(n)
        e[row0] = 1.0
        info["certificate"] = {"kind": "farkas", "y": e}
    info["positive"], info["rank_bound"], info["nonbasic"] = int(positive), rank_bound, nonbasic
    return info


def _ppm_dense(problem: FactoredLCP, opts: PPMOptions) -> Solution | None:
    """:func:`ppm_solve` of a dense N in one compiled call (kernels/factored.py ``ppm_dense``: Theorem
    1's decision, as :func:`theorem1_holds` makes it, then the pivoting, or for a problem outside
    Theorem 1 the routed Dantzig on the formed N M^-1 N'; z and its certification on the factored
    problem, which ``solve()`` then reads instead of computing it again,
    :func:`~contactlab.solvers.registry.certified_by_kernel`). The same answer and info as the general
    path. None when the kernel leaves the decision to it (N without columns, or data not finite)."""
    n = problem.n
    max_it = opts.max_iterations if opts.max_iterations is not None else 10 * n + 100
    case, code, k, z, w, numbers, counts, nonbasic, positive, row0, y = KF.ppm_dense(
        problem.N, problem.lower_factor(), np.ascontiguousarray(problem.f_star, dtype=np.float64),
        np.ascontiguousarray(problem.offset, dtype=np.float64), np.ascontiguousarray(problem.q, dtype=np.float64),
        float(problem.cfm), int(max_it))
    if case == KF.THEOREM1_UNCLEAR:
        return None
    code = int(code)
    info = ppm_info(case, code, nonbasic, positive, row0, problem.m, n, y)
    sol = Solution(z=z, w=np.empty(0), status=PIVOTING_STATUS[code], iterations=int(counts[0]), pivots=int(counts[1]),
                   info=info)
    return certified_by_kernel(sol, problem, w, numbers)


def _default_dantzig(opts: PPMOptions) -> DantzigOptions:
    return DantzigOptions(tol=opts.tol, max_iterations=None)

# the former private spellings
_STATUS, _THEOREM1_WHY, _not_p_reason = PIVOTING_STATUS, THEOREM1_WHY, not_p_reason
