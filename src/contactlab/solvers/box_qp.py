"""``box-qp``: projected Newton on the convex bound-constrained QP of a symmetric boxed LCP.

A boxed LCP with symmetric positive definite M (box friction with cfm > 0, arechavaleta eq. 16-17)
is the optimality condition of min 1/2 z'Mz + q'z over lo <= z <= hi. Bertsekas's projected
Newton method (SIAM J. Control Optim. 20(2), 1982): the rows at a bound whose gradient pushes
outward (within an epsilon that shrinks with the residual) are held; on the others, the exact
Newton step solves M_FF d_F = -g_F (dense Cholesky, or a sparse LU for large sparse M); an Armijo
search along the projection arc z(t) = clip(z + t d) keeps descent. Once the held set is the
solution's, the full step lands on the exact answer, so a warm-started step from the previous
time step typically needs one to three factorisations, not thousands of sweeps.

Projected Newton stalls on large redundant contact sets (a pile: four coplanar points per face,
Delassus condition ~1e9 at cfm 1e-8): its Newton directions are huge along the near-null space, and
the projection arc cuts them to nothing. ``algorithm="auto"`` (default) therefore gives projected
Newton its steps while they are full ones (a warm start near the answer certifies in 0-2; up to
``small_n`` rows its whole budget) and otherwise solves the QP by a primal-dual interior-point
method (Mehrotra predictor-corrector; Nocedal & Wright, Numerical Optimization, 2nd ed., Alg. 16.4
with the bounds as the inequalities; up to CENTRALITY_CORRECTORS of Gondzio's centrality
correctors on the same factorisation): rows with lo = hi are eliminated, each iteration factorises
M + diag(s_lo/(z-lo) + s_hi/(hi-z)) once (dense Cholesky; sparse: LDL' by QDLDL on an AMD
ordering, or from CHOLMOD_MIN rows CHOLMOD's supernodal Cholesky; for a contact matrix
M = H W H' + cfm I whose problem carries those ``factors``, through the bodies' velocities where they
have fewer coordinates than the kept rows: :class:`_BodySpace`), and the iterate itself is
checked against the certified residual. It certifies cold the recorded pile steps on which
projected Newton, PGS and PGS-SM do not (docs/benchmarks-sim.md). Its convergence
is Mehrotra's heuristic (no proof); an iterate that does not certify is reported as MAX_ITERATIONS.

Where every factorisation is dense (dense M, or n <= ``dense_max``), the projected Newton QPs and
the bound updates below run as one compiled call (kernels/box_qp.py: the same iterations, Cholesky
with the same least-squares fallback); Python takes over only for the interior point.

Friction-coupled bounds (``findex``, ``mu``): the bounds are frozen at the current normal values,
the QP solved, the bounds updated and the QP solved again from there (a fixed point of the
bounds, as in arechavaleta §IV-C eq. 16 with the estimate refined); ``max_outer`` cycles, and
solve() certifies the coupled residual. No convergence guarantee for the coupled problem: an
unconverged run is reported as MAX_ITERATIONS, never as SOLVED.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import qdldl as _qdldl

from ..errors import ParamError
from ..kernels._jit import jit
from ..kernels.box_qp import (INTERIOR, SOLVED, STALE, UNSETTLED, box_qp_dense_certified, box_qp_islands, csr_dense_block,
                               csr_masked, csr_rows_affine, diagonal_positions, island_blocks, new_factor_cache,
                               no_groups, upper_pattern)
from ..kernels.body_space import (body_space_back, body_space_layout, body_space_rhs, body_space_values,
                                  kept_box_error)
from ..kernels.components import kept_row_components
from ..kernels.residual import csr_box_error
from ..kernels.tolerances import CERTIFY
from ..problems import BoxedLCP
from ..problems.islands import csr_block, island_problem, island_rows
from ..problems.residual import box_relative, relative_error, row_terms
from ..solution import Solution, Status
from .registry import certified_by_kernel, register


@dataclass(frozen=True)
class BoxQPOptions:
    """tol: relative residual target (problems/residual.py, the measure solve() certifies);
    max_iterations: Newton steps per QP; max_outer: bound updates for friction-coupled rows;
    dense_max: largest n of a sparse M factorised densely (above: sparse LDL', QDLDL, whose factor of a
    contact matrix is far cheaper than a dense Cholesky; docs/benchmarks-tuning.md); armijo: sufficient decrease;
    algorithm: "auto" (``newton_steps`` projected Newton steps, then interior point), "newton"
    (projected Newton only) or "ipm" (interior point only); newton_steps: projected Newton steps
    before the interior point ("auto") for n > small_n, stopping at the first step the line search
    shortens (up to small_n: max_iterations, as Newton steps are cheap there and its vertex answers
    settle friction-coupled bounds in fewer updates);
    ipm_iterations: interior-point iterations per QP; islands: solve a sparse problem's own
    ``islands`` (set by its builder, e.g. box friction) apart (:func:`_islands`); grouped_max: the
    largest island solved by the compiled projected Newton with block-by-block factorisations over
    the problem's ``body_groups`` (0: none; e.g. a pile's columns of boxes);
    set_aside: with islands, solve the rows that 0 likely solves (gaps, :func:`_set_aside`) last, so
    the islands are those of the rows in play (off by default: a falling pile's velocity problems
    stay one island without their gaps and take several rounds; the position correction sets it);
    island_search_max: the largest island of the compiled call given ``max_iterations`` Newton steps
    with line search; a larger one takes ``newton_steps`` full steps, then the interior point, as a
    whole problem above small_n does (0: every island the line-search budget; the position correction
    sets 200: on its degenerate columns, four rows per face on three of its freedoms, Newton's free
    block is near singular and its steps are cut to 1e-8 for 30 iterations);
    island_iterations: the compiled call's Newton steps with line search per island (at most
    ``max_iterations``; "newton" alone: ``max_iterations``): an island whose Newton has not landed
    by then takes the interior point. A settled pile's columns certify in one or two steps; a
    falling pile's impact islands mostly do not land at all, and 60 steps each before the interior
    point cost more than they saved (certified piles, 200 steps, ms per step, 500 / 1,000 / 2,000
    boxes: 60 steps 18.5 / 42.5 / 122, 30 steps 15.9 at 500, 20 steps 15.3-16.2 / 37.2 / 123,
    15 steps 15.0 / 38.9, 10 steps 15.7 at 500: fewer cost the settled columns an interior point now
    and then); island_poor_iterations: the same budget for an island whose start is poor (relative
    error above IPM_WARM_MAX, the interior point's own line for a cold start): on a falling 500-box
    pile's impact steps (20-60) 992 of 2,671 islands started above 0.9, and 274 of those did not land
    in 20 steps (landed: 8.2 steps on average), while a settled column starts near its answer
    (certified piles, 200 steps, ms a step, 500 / 1,000 / 2,000 boxes: 20 steps 13.9-14.1 / 36.8 /
    122-123, 12 steps 13.4 at 500, 8 steps 13.1-13.3 / 33.6 / 124, 5 steps 12.9-15.4 / 32.9 / 130,
    3 steps 14.8 / 36.3)."""
    tol: float = 0.1 * CERTIFY
    max_iterations: int = 60
    max_outer: int = 30
    dense_max: int = 200
    armijo: float = 1e-4
    algorithm: str = "auto"
    newton_steps: int = 3
    small_n: int = 200
    ipm_iterations: int = 80
    islands: bool = True
    grouped_max: int = 600
    set_aside: bool = False
    island_search_max: int = 0
    island_iterations: int = 20
    island_poor_iterations: int = 8

    def __post_init__(self):
        if not (self.tol > 0 and self.max_iterations >= 1 and self.max_outer >= 1 and self.dense_max >= 0
                and self.newton_steps >= 0 and self.small_n >= 0 and self.ipm_iterations >= 1
                and self.grouped_max >= 0 and self.island_search_max >= 0 and self.island_iterations >= 1
                and self.island_poor_iterations >= 1):
            raise ParamError("tol > 0, max_iterations >= 1, max_outer >= 1, dense_max >= 0, newton_steps >= 0, "
                             "small_n >= 0, ipm_iterations >= 1, grouped_max >= 0, island_search_max >= 0, "
                             "island_iterations >= 1 and island_poor_iterations >= 1 are required")
        if self.algorithm not in ("auto", "newton", "ipm"):
            raise ParamError(f"algorithm must be 'auto', 'newton' or 'ipm', got {self.algorithm!r}")


def _spd_lu(A):
    """Sparse LU of a symmetric positive definite A with diagonal pivots only (what Cholesky does;
    stable for SPD) on a minimum-degree ordering of A + A': less fill and time than partial
    pivoting on a contact matrix (docs/benchmarks-tuning.md)."""
    return spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})


def _symmetric_csc(M: sp.csr_matrix, data: np.ndarray) -> sp.csc_matrix:
    """The symmetric matrix with the pattern of the symmetric CSR ``M`` and the values ``data``, as
    CSC on M's own index arrays (no copy: a symmetric matrix's CSR arrays are its CSC arrays). The
    interior point's M + diag (:class:`_Shifted`, CSC) has the same arrays when M has its diagonal,
    so Newton's and the interior point's factorisations share one ordering (:class:`_PatternCache`)."""
    K = sp.csc_matrix.__new__(sp.csc_matrix)
    K._shape = M.shape
    K.maxprint = M.maxprint
    K.data, K.indices, K.indptr = data, M.indices, M.indptr
    K.has_sorted_indices = M.has_sorted_indices
    return K


class _QDLDLFactor:
    """LDL' of a sparse symmetric matrix by QDLDL (AMD ordering) from its upper triangle ``U``
    (CSC); ``refactor`` keeps the ordering and the symbolic analysis."""

    def __init__(self, U):
        self.U = U
        self.solver = _qdldl.Solver(U, upper=True)

    @property
    def values(self) -> np.ndarray:
        return self.U.data

    def refactor(self, values: np.ndarray) -> None:
        self.U.data[:] = values
        self.solver.update(self.U, upper=True)

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self.solver.solve(b)


class _CholmodFactor:
    """Supernodal Cholesky LL' of a sparse symmetric positive definite matrix by CHOLMOD (SuiteSparse,
    through cvxopt's wheel) from its upper triangle ``U`` (CSC): CHOLMOD's default
    ordering and symbolic analysis once, ``refactor`` numeric only. The supernodes factor dense
    blocks with BLAS, where QDLDL works entry by entry: faster on large matrices, slower below
    CHOLMOD_MIN rows (docs/benchmarks-tuning.md).
    Raises ArithmeticError where the matrix is not numerically positive definite."""

    def __init__(self, U):
        import cvxopt
        import cvxopt.cholmod as cholmod
        self._cvxopt, self._cholmod = cvxopt, cholmod
        n = U.shape[0]
        cols = np.repeat(np.arange(n), np.diff(U.indptr))
        self.K = cvxopt.spmatrix(cvxopt.matrix(np.ascontiguousarray(U.data, dtype=np.float64)),
                                 cvxopt.matrix(U.indices.astype(np.int64)), cvxopt.matrix(cols.astype(np.int64)), (n, n))
        self._values = np.array(U.data, dtype=np.float64)
        self.F = cholmod.symbolic(self.K, uplo="U")
        cholmod.numeric(self.K, self.F)

    @property
    def values(self) -> np.ndarray:
        return self._values

    def refactor(self, values: np.ndarray) -> None:
        self._values[:] = values
        self.K.V = self._cvxopt.matrix(self._values)
        self._cholmod.numeric(self.K, self.F)

    def solve(self, b: np.ndarray) -> np.ndarray:
        B = self._cvxopt.matrix(np.array(b, dtype=np.float64))
        self._cholmod.solve(self.F, B)
        return np.array(B, dtype=np.float64).reshape(-1)


#: the fewest rows whose sparse factorisation is CHOLMOD's supernodal Cholesky (:class:`_CholmodFactor`);
#: below, QDLDL's LDL' (the crossover measured on recorded pile islands, docs/benchmarks-tuning.md)
CHOLMOD_MIN = 4000


class _PatternCache:
    """Recent sparse factorisations by the sparsity patterns of their matrices: a matrix with a
    pattern seen recently (a resting stack's Delassus matrix from one step to the next, the same
    free set of its second Newton step, each island of a pile step after step) is refactorised
    numerically only, without the ordering and symbolic analysis, and its upper triangle is
    a gather of its values. Up to ``size`` patterns, least recently used dropped first, found
    by shape, entry count and a hash of the column pointers, then compared in full (a settled
    pile's towers are one pattern each, every step). A
    pattern of at least CHOLMOD_MIN rows is factorised by CHOLMOD (:class:`_CholmodFactor`), a
    smaller one, or one CHOLMOD finds not positive definite, by QDLDL (:class:`_QDLDLFactor`)."""

    def __init__(self, size: int = 64):
        self.size = size
        self.entries = OrderedDict()    # key -> [(indptr, indices), gather, factor]

    @staticmethod
    def _key(A):
        return A.shape, A.format, A.indices.size, hash(A.indptr.tobytes())

    def _find(self, A):
        key = self._key(A)
        entry = self.entries.get(key)
        if entry is not None and np.array_equal(A.indptr, entry[0][0]) and np.array_equal(A.indices, entry[0][1]):
            return key, entry
        return key, None

    def holds(self, A) -> bool:
        """Whether the pattern of the symmetric ``A`` (read as CSC) has an analysis here."""
        return self._find(A)[1] is not None

    def ldl(self, A, stale_ok: bool = False, cholmod_min: int = 0):
        """(a factor of the symmetric sparse ``A`` (CSC; another format is converted) with
        ``solve(b)``, fresh) (raises ValueError or RuntimeError on a zero pivot; the entry is
        dropped then). ``stale_ok``: where the pattern's last factorisation is of values within
        STALE of A's (a resting stack's next step), that factorisation itself, with fresh = False
        (:func:`_sparse_spd_solver` refines). ``cholmod_min``: the fewest rows factorised by CHOLMOD
        (0: CHOLMOD_MIN)."""
        if A.format != "csc":
            A = A.tocsc()
        key, entry = self._find(A)
        if entry is not None:
            del self.entries[key]
            _, gather, factor = entry
            values = A.data[gather]
            old = factor.values
            fresh = not (stale_ok and np.max(np.abs(values - old), initial=0.0) <= STALE * np.max(np.abs(old)))
            if fresh:
                try:
                    factor.refactor(values)    # raises: the entry stays dropped
                except ArithmeticError as exc:
                    raise ValueError(f"CHOLMOD: {exc}") from None
            self.entries[key] = entry
            return factor, fresh
        up, ui, gather = upper_pattern(A.indptr, A.indices)       # which entry of A each of triu(A) is
        U = sp.csc_matrix((A.data[gather], ui.astype(np.int32), up.astype(np.int32)), shape=A.shape)
        factor = None
        if A.shape[0] >= (cholmod_min or CHOLMOD_MIN):
            try:
                factor = _CholmodFactor(U)
            except ArithmeticError:     # not numerically positive definite: LDL' below
                factor = None
        if factor is None:
            factor = _QDLDLFactor(U)
        self.entries.pop(key, None)
        self.entries[key] = [(A.indptr.copy(), A.indices.copy()), gather, factor]
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return factor, True


_LDL = _PatternCache()


def _sparse_spd_solver(A, stale_ok: bool = False, cholmod_min: int = 0):
    """A solver of A x = b for a sparse symmetric positive definite A: LDL' by QDLDL (AMD ordering),
    or from CHOLMOD_MIN rows CHOLMOD's supernodal Cholesky (the symbolic analysis reused while the
    pattern repeats, :class:`_PatternCache`), or SuperLU with diagonal pivots where the factorisation
    meets a zero pivot. Returns (solve, the factor or None). On contact matrices QDLDL is faster
    than SuperLU and far faster than a dense Cholesky (docs/benchmarks-tuning.md). ``stale_ok``: the
    pattern's last factorisation where A's values are within STALE of its, x = F^-1 b refined once
    by x += F^-1 (b - A x) (no factorisation). ``cholmod_min``: as :meth:`_PatternCache.ldl`."""
    try:
        ldl, fresh = _LDL.ldl(A, stale_ok, cholmod_min)
        if fresh:
            return ldl.solve, ldl

        def refined(b):
            x = ldl.solve(b)
            return x + ldl.solve(b - A @ x)
        return refined, ldl
    except (ValueError, RuntimeError):
        return _spd_lu(sp.csc_matrix(A)).solve, None


def _embedded(M: sp.csr_matrix, rows: np.ndarray) -> sp.csc_matrix:
    """M_RR embedded in the symmetric M's own pattern (kernels/box_qp.py ``csr_masked``: the other
    rows' off-diagonal entries zeroed, their diagonal kept), as CSC on M's arrays: its solve with a
    zero right-hand side outside ``rows`` is M_RR^-1 b_R on them and 0 elsewhere, and its
    factorisation reuses the analysis of M's pattern."""
    free = np.zeros(M.shape[0], dtype=np.bool_)
    free[rows] = True
    return _symmetric_csc(M, csr_masked(M.indptr, M.indices, M.data, free))


#: the smallest share of free rows whose Newton system is factorised in M's own pattern (below: the
#: sliced block M_FF, whose factor has far less fill when many rows are held; the value chosen on
#: recorded pile steps, docs/benchmarks-tuning.md)
EMBED_FREE = 0.75


def _factor_solve(M, F, rhs, dense_max, stale_ok=False):
    """Solve M_FF x = rhs: Cholesky when dense or small (a sparse M's block gathered by one compiled
    pass); else sparse LDL', with at least EMBED_FREE of the rows free of M_FF embedded in M's own
    pattern (kernels/box_qp.py ``csr_masked``: the held rows' off-diagonal entries zeroed), so the
    ordering and symbolic analysis of M's pattern serve every such free set and the interior point
    (:class:`_PatternCache`: otherwise every free set is a new pattern), and with fewer of the sliced block. ``stale_ok``: the last
    factorisation of the same values to within STALE, refined once (:func:`_sparse_spd_solver`)."""
    if F.size == 0:
        return np.zeros(0)
    if sp.issparse(M) and F.size > dense_max:
        M.sort_indices()
        if F.size == M.shape[0]:
            return _sparse_spd_solver(_symmetric_csc(M, M.data), stale_ok)[0](rhs)
        if F.size < EMBED_FREE * M.shape[0]:    # many rows held: the sliced block has far less fill
            A = csr_block(M, F)
            return _sparse_spd_solver(_symmetric_csc(A, A.data))[0](rhs)
        b = np.zeros(M.shape[0])
        b[F] = rhs
        return _sparse_spd_solver(_embedded(M, F), stale_ok)[0](b)[F]
    if sp.issparse(M):
        A = csr_dense_block(M.indptr, M.indices, M.data, np.ascontiguousarray(F, dtype=np.int64), M.shape[1])
    else:
        A = M[np.ix_(F, F)]
    try:
        return sla.cho_solve(sla.cho_factor(A, check_finite=False), rhs, check_finite=False)
    except np.linalg.LinAlgError:
        return sla.lstsq(A, rhs, check_finite=False)[0]


def _qp(M, q, lo, hi, z, opts, tol, counter, full_steps=False):
    """Projected Newton on min 1/2 z'Mz + q'z, lo <= z <= hi from z; returns (z, w, converged).
    ``full_steps``: only full Newton steps; give up at the first one without sufficient decrease (a
    held set far from the answer's: on a large problem the interior point is then cheaper than a
    line search and more Newton steps). The Armijo test takes the decrease f(z + dz) - f(z) =
    dz'(w + M dz / 2) as such: the difference of the two objective values cancels near the answer,
    where a Newton step's decrease is below their rounding and the test accepted or refused at random.
    Dense problems run this loop compiled (kernels/box_qp.py, through _compiled); this is the
    reference it is tested against and the path of large sparse problems."""
    diag = M.diagonal() if sp.issparse(M) else np.diag(M)
    for it in range(opts.max_iterations):
        w = M @ z + q
        if relative_error(box_relative(z, w, lo, hi, q)) <= tol:
            return z, w, True
        counter[0] += 1
        step = z - np.clip(z - w / diag, lo, hi)
        eps = min(1e-3 * max(float(np.max(np.abs(z), initial=0.0)), 1e-300),
                  float(np.max(np.abs(step), initial=0.0)))
        held = ((z <= lo + eps) & (w > 0)) | ((z >= hi - eps) & (w < 0))
        F = np.flatnonzero(~held)
        zt = None
        # Newton on the free rows, else a scaled projected gradient (full_steps: the full Newton step only)
        for newton in ((True,) if full_steps else (True, False)):
            d = -w / diag
            if newton:
                # the first step may reuse the last factorisation of nearly the same matrix (STALE)
                d[F] = _factor_solve(M, F, -w[F], opts.dense_max, stale_ok=it == 0)
            t = 1.0
            for _ in range(1 if full_steps else 30):
                cand = np.clip(z + t * d, lo, hi)
                dz = cand - z
                if dz @ (w + 0.5 * (M @ dz)) <= opts.armijo * (w @ dz) and np.any(dz):
                    zt = cand
                    break
                t *= 0.5
            if zt is not None:
                break
        if zt is None:
            return z, w, False
        z = zt
    w = M @ z + q
    return z, w, relative_error(box_relative(z, w, lo, hi, q)) <= tol


def _residual(M, q, z, w, lo, hi, absM=None):
    """The relative residual solve() certifies: each w_i in units of its row's terms |q_i| + |M_i||z|
    (problems/residual.py, row_terms)."""
    if absM is None or sp.issparse(M):      # row_terms: one compiled pass over a CSR matrix's entries
        t = row_terms(M, z, q)
    else:                                   # a dense |M| kept by the caller (the interior point)
        t = np.abs(q) + absM @ np.abs(z)
    return relative_error(box_relative(z, w, lo, hi, q, t=t))


class _Shifted:
    """Factorisations of M + diag(d) for a fixed M: dense Cholesky (LU where Cholesky fails), or a
    sparse LDL' on M's own pattern whose diagonal is overwritten (:func:`_sparse_spd_solver`: after
    the first iteration QDLDL refactorises numerically only). M symmetric with its whole diagonal (a contact matrix with cfm > 0):
    M's CSR arrays are the CSC arrays of K, no conversion; otherwise K has M + I's pattern."""

    def __init__(self, M, dense_max, keep=None):
        """``keep`` (sparse M only): the rows of the system, the others decoupled in M's own pattern
        (:func:`_factor_solve`'s embedding), so the analysis of M's pattern is shared with Newton's
        free-set solves; the solves then map keep-sized vectors to keep-sized vectors."""
        self.sparse = sp.issparse(M) and M.shape[0] > dense_max
        self.keep = keep
        if self.sparse:
            M = M if M.format == "csr" else sp.csr_matrix(M)
            M.sort_indices()
            K = _symmetric_csc(M, M.data.copy()) if keep is None else _embedded(M, keep)
            self.diag_at = diagonal_positions(M.indptr, M.indices)
            if not np.all(self.diag_at >= 0):
                K = (K + sp.identity(M.shape[0], format="csc")).tocsc()
                K.sort_indices()
                self.diag_at = diagonal_positions(K.indptr, K.indices)
                K.data[self.diag_at] -= 1.0
            self.base = K.data[self.diag_at].copy()
            self.K, self.ldl = K, None
        else:
            self.A = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
            self.base = np.diag(self.A).copy()

    def solver(self, d):
        if self.sparse:
            keep = self.keep
            if keep is None:
                self.K.data[self.diag_at] = self.base + d
                solve, self.ldl = _sparse_spd_solver(self.K)    # one pattern: numeric refactorisations
                return solve
            self.K.data[self.diag_at[keep]] = self.base[keep] + d
            solve, self.ldl = _sparse_spd_solver(self.K)
            b = np.zeros(self.K.shape[0])

            def embedded(r):
                b[keep] = r
                return solve(b)[keep]
            return embedded
        A = self.A.copy()
        A[np.diag_indices_from(A)] = self.base + d
        try:
            c = sla.cho_factor(A, check_finite=False)
            return lambda b: sla.cho_solve(c, b, check_finite=False)
        except np.linalg.LinAlgError:
            f = sla.lu_factor(A, check_finite=False)
            return lambda b: sla.lu_solve(f, b, check_finite=False)


#: the fewest body-space rows (6 per touched body) whose Schur complement S is factorised by
#: CHOLMOD's supernodal Cholesky (its 6x6 blocks are dense: supernodes from small sizes on)
BODY_SPACE_CHOLMOD_MIN = 600


class _BodySpace:
    """Factorisations of M + diag(d) on the rows ``keep`` of a contact matrix M = H W H' + cfm I
    (the problem's ``factors`` (H, W, cfm): H's rows on one or two bodies each, W the bodies' 6x6
    blocks of M^-1, cfm > 0) in body space (kernels/body_space.py): S = W^-1 + H' E^-1 H with
    E = cfm + d, one factorisation of S (6 rows per body) an iteration, and
    x = E^-1 (r - H S^-1 H' E^-1 r) per right-hand side (the Sherman-Morrison-Woodbury identity). The
    same interface as :class:`_Shifted` with ``keep`` (keep-sized vectors in and out). S's pattern (the
    pairs of bodies the rows join) is analysed once and reused through :class:`_PatternCache` while the
    pairs repeat (a pile's impact steps keep most of them from step to step). Where E^-1 is large
    (rows far inside their box: E ~ cfm) x is the difference of nearly equal terms; the interior
    point checks its iterates with the certified residual whatever the solve's accuracy (on recorded
    impact steps it takes the same iterations as with M's own factorisation, docs/benchmarks-tuning.md)."""

    def __init__(self, layout, cfm, base):
        (self.ra, self.rb, self.ha, self.hb, self.nt, self.Winv, self.Wt, s_indptr, s_indices, self.diag_base,
         self.stride, self.pair_base) = layout
        self.cfm, self.base, self.sparse = cfm, base, True
        n = 6 * self.nt
        self.S = sp.csc_matrix.__new__(sp.csc_matrix)
        self.S._shape = (n, n)
        self.S.data, self.S.indices, self.S.indptr = np.zeros(s_indices.size), s_indices, s_indptr
        self.S.has_sorted_indices = True
        self.ldl = None

    @classmethod
    def of(cls, factors, M, keep: np.ndarray, dense_max: int):
        """The body-space form of the rows ``keep`` of a problem whose matrix is H W H' + cfm I
        (``factors``), or None where it does not apply or would not pay: no factors, cfm <= 0,
        M_keep small enough for the dense path, no fewer body coordinates than rows, a row on three
        bodies or more, a touched body's block not invertible."""
        if factors is None or keep.size <= dense_max:
            return None
        H, W, cfm = factors
        if not cfm > 0 or H.shape[0] != M.shape[0]:
            return None
        ok, *layout = body_space_layout(H.indptr.astype(np.int64, copy=False), H.indices.astype(np.int64, copy=False),
                                        H.data.astype(np.float64, copy=False), keep.astype(np.int64, copy=False),
                                        np.ascontiguousarray(W, dtype=np.float64))
        if not ok or 6 * layout[4] >= keep.size:
            return None
        return cls(layout, float(cfm), M.diagonal()[keep])

    def lower_error(self, q, lo, hi, z, size, w, work) -> float:
        """On the kept rows (the fixed ones at 0): w = M z + q into ``w``, and a lower bound of the
        certified error (kernels/body_space.py ``kept_box_error``: no pass over M's entries; ``size``
        = max|q| over every row)."""
        return float(kept_box_error(self.ra, self.rb, self.ha, self.hb, self.Wt, self.cfm, q, lo, hi, z, size, w, work))

    def solver(self, d):
        e_inv = 1.0 / (self.cfm + d)
        body_space_values(self.ra, self.rb, self.ha, self.hb, e_inv, self.Winv, self.diag_base, self.stride,
                          self.pair_base, self.S.data)
        solve_s, self.ldl = _sparse_spd_solver(self.S, cholmod_min=BODY_SPACE_CHOLMOD_MIN)
        t, x = np.empty(6 * self.nt), np.empty(e_inv.size)
        ra, rb, ha, hb, nt = self.ra, self.rb, self.ha, self.hb, self.nt

        def solve(r):
            body_space_rhs(ra, rb, ha, hb, r, e_inv, nt, t)
            body_space_back(ra, rb, ha, hb, r, e_inv, solve_s(t), x)
            return x.copy()
        return solve


@jit
def _ipm_rhs(w, gl, gu, sl, su, L, U, tl, tu, out):
    """Right-hand side of the interior point's reduced Newton system (M + D) dz = out with targets
    (z-lo) s_lo -> tl, (hi-z) s_hi -> tu (0 for the predictor; :func:`_ipm_targets`)."""
    for i in range(w.size):
        r = -(w[i] - sl[i] + su[i])
        if L[i]:
            r += tl[i] / gl[i] - sl[i]
        if U[i]:
            r -= tu[i] / gu[i] - su[i]
        out[i] = r


@jit
def _ipm_duals(dz, gl, gu, sl, su, L, U, tl, tu, frac, dsl, dsu):
    """The multipliers' steps for dz (same targets as _ipm_rhs) into dsl, dsu; returns the longest
    step in (0, 1] that keeps z - lo, hi - z, s_lo, s_hi positive, times ``frac``."""
    a = 1.0
    for i in range(dz.size):
        dsl[i] = 0.0
        dsu[i] = 0.0
        if L[i]:
            dsl[i] = (tl[i] - gl[i] * sl[i] - sl[i] * dz[i]) / gl[i]
            if dz[i] < 0.0:
                a = min(a, frac * gl[i] / -dz[i])
            if dsl[i] < 0.0:
                a = min(a, frac * sl[i] / -dsl[i])
        if U[i]:
            dsu[i] = (tu[i] - gu[i] * su[i] + su[i] * dz[i]) / gu[i]
            if dz[i] > 0.0:
                a = min(a, frac * gu[i] / dz[i])
            if dsu[i] < 0.0:
                a = min(a, frac * su[i] / -dsu[i])
    return a


@jit
def _ipm_targets(L, U, smu, dza, dsla, dsua, tl, tu):
    """Mehrotra's corrector targets: sigma mu minus the predictor's second-order term."""
    for i in range(dza.size):
        tl[i] = smu - dza[i] * dsla[i] if L[i] else 0.0
        tu[i] = smu + dza[i] * dsua[i] if U[i] else 0.0


@jit
def _ipm_centrality(dz, dsl, dsu, gl, gu, sl, su, L, U, at, smu, tl, tu, tl2, tu2):
    """Gondzio's multiple centrality correction (Comput. Optim. Appl. 6, 1996; Colombo & Gondzio,
    Comput. Optim. Appl. 41, 2008): the complementarity products at the longer trial step ``at``
    along the current direction, those outside [0.1, 10] sigma mu pulled into that band (a product
    far above it by at most 10 sigma mu), as targets tl2, tu2 = tl, tu plus those corrections."""
    lo_b, hi_b = 0.1 * smu, 10.0 * smu
    for i in range(dz.size):
        tl2[i] = tl[i]
        tu2[i] = tu[i]
        if L[i]:
            v = (gl[i] + at * dz[i]) * (sl[i] + at * dsl[i])
            c = (lo_b - v) if v < lo_b else ((hi_b - v) if v > hi_b else 0.0)
            tl2[i] += max(c, -hi_b)
        if U[i]:
            v = (gu[i] - at * dz[i]) * (su[i] + at * dsu[i])
            c = (lo_b - v) if v < lo_b else ((hi_b - v) if v > hi_b else 0.0)
            tu2[i] += max(c, -hi_b)


@jit
def _ipm_gaps(z, sl, su, lo, hi, L, U, gl, gu, Dg):
    """The gaps gl = z - lo, gu = hi - z (1 where the bound is infinite), the diagonal
    Dg = s_lo / gl + s_hi / gu of the iteration's system M + diag(Dg), and the mean complementarity mu."""
    acc, m = 0.0, 0
    for i in range(z.size):
        gl[i] = z[i] - lo[i] if L[i] else 1.0
        gu[i] = hi[i] - z[i] if U[i] else 1.0
        Dg[i] = sl[i] / gl[i] + su[i] / gu[i]
        if L[i]:
            acc += gl[i] * sl[i]
            m += 1
        if U[i]:
            acc += gu[i] * su[i]
            m += 1
    return acc / m if m else 0.0


@jit
def _ipm_advance(z, sl, su, dz, dsl, dsu, a):
    """The step a along (dz, dsl, dsu), in place."""
    for i in range(z.size):
        z[i] += a * dz[i]
        sl[i] += a * dsl[i]
        su[i] += a * dsu[i]


@jit
def _ipm_mu(gl, gu, sl, su, L, U, a, dz, dsl, dsu):
    """Mean complementarity after a step a: sum (z-lo) s_lo + (hi-z) s_hi over the finite bounds / count."""
    acc, m = 0.0, 0
    for i in range(dz.size):
        if L[i]:
            acc += (gl[i] + a * dz[i]) * (sl[i] + a * dsl[i])
            m += 1
        if U[i]:
            acc += (gu[i] - a * dz[i]) * (su[i] + a * dsu[i])
            m += 1
    return acc / m if m else 0.0


#: the interior point starts from the warm start (pushed inside the box) when the warm start's own
#: relative residual is at most this; a poorer one (a falling pile's new contacts) starts cold (a
#: good warm start saves iterations, a poor one costs some: the threshold from recorded pile steps,
#: docs/benchmarks-tuning.md)
IPM_WARM_MAX = 0.5

#: Gondzio centrality correctors per interior-point iteration (0: Mehrotra's predictor-corrector only)
CENTRALITY_CORRECTORS = 2


def _ipm(M, q, lo, hi, opts, tol, counter, z_warm=None, factors=None, warm_residual=None):
    """Primal-dual interior point (Mehrotra predictor-corrector, Gondzio centrality correctors) on
    min 1/2 z'Mz + q'z over lo <= z <= hi, M symmetric positive (semi)definite: multipliers
    s_lo, s_hi >= 0 with M z + q = s_lo - s_hi, (z - lo) s_lo = mu, (hi - z) s_hi = mu, mu -> 0 (Nocedal & Wright
    Alg. 16.4, bounds as the inequalities). Each iterate (strictly inside the box) is checked with
    the certified residual (row sizes |q| + |M||z|, as solve() measures it). ``factors``: the problem's
    (H, W, cfm) with M = H W H' + cfm I, whose Newton systems are then solved in body space where
    that pays (:class:`_BodySpace`); ``warm_residual``: z_warm's certified residual where the caller
    has it. Returns (z, w, converged)."""
    n = q.size
    fixed = lo == hi
    keep = np.flatnonzero(~fixed)
    zf = np.where(fixed, lo, 0.0)
    absM = None if sp.issparse(M) else np.abs(M)       # dense: |M| once; sparse: row_terms per check

    w_all, work = np.empty(n), np.empty((5, n))

    def certified(x):   # w = M x + q (all rows) and the certified residual
        return _certified(M, q, lo, hi, x, w_all, work, absM)

    def check(z):       # the iterate on the kept rows, the fixed ones at their value
        zf[keep] = z
        return certified(zf)

    if keep.size == 0:
        w, r = check(np.zeros(0))
        return zf.copy(), w, r <= tol
    # few fixed rows, and M's pattern analysed already (by Newton's free-set solves, _factor_solve):
    # M's own pattern with the fixed rows decoupled; otherwise the sliced block, whose factor has
    # less fill when its pattern is new
    embed = (sp.issparse(M) and n > opts.dense_max and keep.size >= EMBED_FREE * n
             and _LDL.holds(_symmetric_csc(M, M.data)))
    lo2, hi2 = lo[keep], hi[keep]
    L, U = np.isfinite(lo2), np.isfinite(hi2)
    shifted = _BodySpace.of(factors, M, keep, opts.dense_max)
    lower = None
    if shifted is not None and not np.any(zf):  # the fixed rows at 0: the kept rows' w from the factors
        lower = shifted.lower_error
        q2k, qmax, wk, work_k = q[keep], float(np.max(np.abs(q), initial=0.0)), np.empty(keep.size), \
            np.empty((5, keep.size))
    if keep.size == n:
        M2, q2 = M, q
    elif embed or lower is not None:
        M2 = q2 = None
    else:
        M2 = csr_block(M, keep) if sp.issparse(M) else M[np.ix_(keep, keep)]
        q2 = q[keep] + (M[keep] @ zf if np.any(zf) else 0.0)

    def affine(z):      # M z + q on the kept rows, the fixed ones at their value
        if lower is not None:
            lower(q2k, lo2, hi2, z, qmax, wk, work_k)
            return wk.copy()
        if M2 is not None:
            return M2 @ z + q2
        zf[keep] = z
        return (M @ zf + q)[keep]

    if shifted is not None:
        diag = shifted.base
    else:
        shifted = _Shifted(M, opts.dense_max, keep=keep) if M2 is None else _Shifted(M2, opts.dense_max)
        diag = shifted.base if M2 is not None else shifted.base[keep]
    if M2 is None:
        q2 = affine(np.zeros(keep.size))
    scale_w = max(float(np.max(np.abs(q2), initial=0.0)), 1e-300)
    scale_z = scale_w / max(float(np.max(np.abs(diag), initial=0.0)), 1e-300)
    lo0, hi0 = np.where(L, lo2, 0.0), np.where(U, hi2, 0.0)
    warm = None
    if z_warm is not None:
        zw = np.clip(z_warm, lo, hi)
        if (certified(zw)[1] if warm_residual is None else warm_residual) <= IPM_WARM_MAX:
            warm = zw[keep]
    if warm is None:    # a start strictly inside the box, multipliers of the size of q
        z = np.where(L & U, 0.5 * (lo0 + hi0), np.where(L, lo0 + scale_z, np.where(U, hi0 - scale_z, 0.0)))
        sl, su = np.where(L, scale_w, 0.0), np.where(U, scale_w, 0.0)
    else:               # the warm start 1 % of the box (or of scale_z) inside, multipliers from its w
        pad = 1e-2 * np.minimum(np.where(L & U, hi0 - lo0, np.inf), scale_z)
        z = np.where(L, np.maximum(warm, lo0 + pad), warm)
        z = np.where(U, np.minimum(z, hi0 - pad), z)
        w2 = affine(z)
        mu0 = 1e-2 * scale_w * scale_z
        sl = np.where(L, np.maximum(np.maximum(w2, 0.0), mu0 / np.where(L, z - lo0, 1.0)), 0.0)
        su = np.where(U, np.maximum(np.maximum(-w2, 0.0), mu0 / np.where(U, hi0 - z, 1.0)), 0.0)
    best = (np.inf, None, None)
    nk = z.size
    z, sl, su = (np.array(v, dtype=np.float64) for v in (z, sl, su))
    r_, dsl, dsu, dsla, dsua, gl, gu, Dg = (np.empty(nk) for _ in range(8))
    tl, tu, tl2, tu2, dsl2, dsu2 = (np.zeros(nk) for _ in range(6))
    if warm is None:
        w2 = affine(z)      # M z + q on the kept rows; then each check's w
    for _ in range(opts.ipm_iterations):
        mu = _ipm_gaps(z, sl, su, lo0, hi0, L, U, gl, gu, Dg)
        solve_k = shifted.solver(Dg)
        counter[0] += 1
        # predictor (affine scaling: targets 0), then Mehrotra's corrector (sigma = (mu_aff/mu)^3)
        tl[:] = 0.0
        tu[:] = 0.0
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        dza = solve_k(r_)
        a = _ipm_duals(dza, gl, gu, sl, su, L, U, tl, tu, 1.0, dsla, dsua)
        mu_aff = _ipm_mu(gl, gu, sl, su, L, U, a, dza, dsla, dsua)
        smu = (mu_aff / mu) ** 3 * mu if mu > 0 else 0.0
        _ipm_targets(L, U, smu, dza, dsla, dsua, tl, tu)
        _ipm_rhs(w2, gl, gu, sl, su, L, U, tl, tu, r_)
        dz = solve_k(r_)
        a = _ipm_duals(dz, gl, gu, sl, su, L, U, tl, tu, 0.995, dsl, dsu)
        # Gondzio's centrality correctors: one more solve each with the same factorisation, kept
        # while they lengthen the step enough
        for _c in range(CENTRALITY_CORRECTORS):
            if a >= 0.995 or smu <= 0.0:
                break
            at = min(1.0, 1.5 * a)
            _ipm_centrality(dz, dsl, dsu, gl, gu, sl, su, L, U, at, smu, tl, tu, tl2, tu2)
            _ipm_rhs(w2, gl, gu, sl, su, L, U, tl2, tu2, r_)
            dz2 = solve_k(r_)
            a2 = _ipm_duals(dz2, gl, gu, sl, su, L, U, tl2, tu2, 0.995, dsl2, dsu2)
            if a2 < a + 0.1 * (at - a):
                break
            dz, a = dz2, a2
            dsl, dsl2, dsu, dsu2, tl, tl2, tu, tu2 = dsl2, dsl, dsu2, dsu, tl2, tl, tu2, tu
        _ipm_advance(z, sl, su, dz, dsl, dsu, a)
        if lower is not None:   # body space: w and a lower bound of the error from the factors; the
            r = lower(q2k, lo2, hi2, z, qmax, wk, work_k)   # exact check (a pass over M's entries)
            w = None                                        # only where the bound passes
        if lower is None or r <= tol:
            w, r = check(z)
        if r < best[0]:
            zf[keep] = z
            best = (r, zf.copy(), None if w is None else w.copy())
        if r <= tol:
            return best[1], best[2], True
        if not (np.isfinite(r) and a > 0):
            break
        w2 = wk if w is None else (w[keep] if keep.size < n else w)    # the next iterate's M z + q, kept rows
    if best[1] is None:
        w, _ = check(z)
        return zf.copy(), w, False
    return best[1], (best[2] if best[2] is not None else certified(best[1])[0].copy()), False


def _box_qp(M, q, lo, hi, z, opts, tol, counter, mode, factors=None):
    """One QP with static bounds by ``mode[0]`` ("auto", "newton" or "ipm"; module docstring). Once
    "auto" needs the interior point, mode[0] becomes "ipm" for the rest of the solve: alternating
    methods in the bound updates of friction-coupled rows can cycle between two answers of a
    degenerate QP (both within tol, different bounds next). ``factors``: as :func:`_ipm`."""
    if mode[0] == "newton":
        return _qp(M, q, lo, hi, z, opts, tol, counter)
    warm = None
    if mode[0] == "auto" and opts.newton_steps > 0:
        small = q.size <= opts.small_n
        # on a large sparse problem (no compiled path), a start too poor for the interior point to
        # start from (IPM_WARM_MAX: new contacts, an impact) is too poor for full Newton steps
        # (on recorded piles every such try gave way to the interior point)
        warm = None if (small or not sp.issparse(M) or q.size <= opts.dense_max) else \
            _certified(M, q, lo, hi, np.clip(z, lo, hi), np.empty(q.size), np.empty((5, q.size)))[1]
        if warm is None or warm <= IPM_WARM_MAX:
            short = BoxQPOptions(tol=opts.tol, max_iterations=opts.max_iterations if small else opts.newton_steps,
                                 dense_max=opts.dense_max, armijo=opts.armijo)
            zn, w, ok = _qp(M, q, lo, hi, z, short, tol, counter, full_steps=not small)
            if ok:
                return zn, w, True
            warm = None
    mode[0] = "ipm"
    return _ipm(M, q, lo, hi, opts, tol, counter, z_warm=z, factors=factors, warm_residual=warm)


def _certified(M, q, lo, hi, x, w, work, absM=None):
    """(w, r): w = M x + q and the certified relative residual r of x, one compiled pass for CSR (w
    written into ``w``; ``work``: 5 x n scratch), else through :func:`_residual` (``absM``: a dense
    |M| kept by the caller)."""
    if sp.issparse(M) and M.format == "csr":
        return w, float(csr_box_error(M.indptr, M.indices, M.data, q, lo, hi, x, w, work))
    w = M @ x + q
    return w, _residual(M, q, x, w, lo, hi, absM)


_DENSE_FACTORS: dict = {}


def _dense_factors(n: int):
    """The compiled Newton's factor cache for n rows (kernels/box_qp.py ``new_factor_cache``): one
    per problem size, the 8 sizes used last (a resting 10-box stack's next step reuses its factor:
    STALE)."""
    cache = _DENSE_FACTORS.pop(n, None)
    if cache is None:
        cache = new_factor_cache(n)
        while len(_DENSE_FACTORS) >= 8:
            del _DENSE_FACTORS[next(iter(_DENSE_FACTORS))]
    _DENSE_FACTORS[n] = cache
    return cache


def _dense_islands(problem: BoxedLCP):
    """The block structure of a dense problem's islands for the compiled Newton (kernels/box_qp.py
    ``island_blocks``) where it carries them (``problem.islands`` = (count, label per row), as box
    friction's dense build sets them) and they are labels of its rows; else the dense solves. Labels
    that split rows M couples only slow the Newton down: the answer is certified on the whole M."""
    own = getattr(problem, "islands", None)
    if own is None:
        return no_groups()
    count, label = int(own[0]), np.asarray(own[1])
    if count <= 1 or label.size == 0 or label.shape != (problem.n,) or label.dtype.kind not in "iu" \
            or label.min() < 0 or label.max() >= count:
        return no_groups()
    return island_blocks(count, np.ascontiguousarray(label, dtype=np.int64))


def _compiled(problem: BoxedLCP, opts: BoxQPOptions, z, counter, mode):
    """The projected Newton QPs and bound updates of _solve in one compiled call (kernels/box_qp.py),
    where every factorisation is dense (dense M, or n <= dense_max) and projected Newton runs first.
    Returns a Solution, or (z, outer) where the interior point takes over: _solve goes on from bound
    update ``outer`` at z with mode "ipm"."""
    M, n = problem.M, problem.n
    sparse = sp.issparse(M)
    if (sparse and n > opts.dense_max) or not (mode[0] == "newton" or (mode[0] == "auto" and opts.newton_steps > 0)):
        return None
    A = M if (type(M) is np.ndarray and M.dtype == np.float64 and M.flags.c_contiguous) else \
        np.ascontiguousarray(M.toarray() if sparse else M, dtype=np.float64)
    newton_only = mode[0] == "newton"
    small = n <= opts.small_n
    steps, full = (opts.max_iterations, False) if newton_only or small else (opts.newton_steps, True)
    groups = _dense_islands(problem) if not sparse else no_groups()
    code, z, w, its, outer, wc, numbers = box_qp_dense_certified(
        A, problem.q, problem.lo, problem.hi, problem.findex, problem.mu, z, opts.tol, steps, opts.armijo, full,
        newton_only, opts.max_outer, *_dense_factors(n), *groups)
    counter[0] = its
    if code == SOLVED:
        sol = Solution(z=z, w=w, status=Status.SOLVED, iterations=its, info={"outer": outer})
        # certified in the same call on problem.M itself: solve() reads the numbers (registry.certified_by_kernel)
        return certified_by_kernel(sol, problem, wc, numbers) if A is problem.M else sol
    if code == INTERIOR:
        mode[0] = "ipm"
        return z, outer
    info = {"outer": outer} if not problem.has_coupling else {"outer": outer, "reason": "bound updates did not settle"}
    return Solution(z=z, w=w, status=Status.MAX_ITERATIONS, iterations=its, info=info)


#: islands of more rows than this factorise their Newton steps block by block over their groups (where
#: the problem carries ``body_groups``); below it LAPACK's dense Cholesky is as fast
GROUPED_FROM = 64
_NO_LABELS = np.zeros(0, dtype=np.int64)


#: :func:`_set_aside`: a row at lo = 0 is set aside where q_i > SET_ASIDE_GAP * max(-q) (its gap at z = 0
#: is at least the largest push the problem asks for). Chosen on the position corrections of certified
#: piles (docs/benchmarks-tuning.md): 0.3 to 3 alike; 0 (every separating row) re-solves merged islands
#: over several rounds where rows set aside are pushed in
SET_ASIDE_GAP = 1.0


def _set_aside(problem: BoxedLCP, z: np.ndarray) -> np.ndarray | None:
    """The rows solved at z_i = 0 before the rest (a mask), or None: rows at 0 in the start ``z``
    that 0 can only leave unchanged -- fixed at 0 (lo = hi = 0: new contacts' friction under the
    previous step's normal) -- or a row with lo = 0 < hi and q_i > 0 (a contact separating at the free
    velocity, a speculative one with a gap) where q_i > SET_ASIDE_GAP * max(-q), with the friction rows
    tied to it by findex (bounds 0 when it is 0). They join the bodies they touch into islands that they
    take no part in: a pile's contacts with a gap merge its columns into one problem. Needs the rows'
    bodies (``factors``' H)."""
    factors = getattr(problem, "factors", None)
    if factors is None or factors[0].shape[0] != problem.n:
        return None
    q, lo, hi, fi = problem.q, problem.lo, problem.hi, problem.findex
    gap = SET_ASIDE_GAP * max(-q.min(initial=0.0), 0.0)
    aside = (z == 0.0) & (lo == 0.0) & ((hi == 0.0) | (q > gap)) & (fi < 0)
    tied = fi >= 0
    aside[fi[tied & (z != 0.0)]] = False        # a normal whose friction carries an impulse stays
    aside[tied] = (z[tied] == 0.0) & aside[fi[tied]]
    return aside if aside.any() else None


def _kept_islands(problem: BoxedLCP, aside: np.ndarray) -> tuple[int, np.ndarray]:
    """(count, label per row) of the rows not set aside (-1 on those), from the bodies they touch."""
    H = problem.factors[0]
    return kept_row_components(H.indptr, H.indices, problem.findex, 6, ~aside)


def _islands(problem: BoxedLCP, opts: BoxQPOptions, z: np.ndarray) -> Solution | None:
    """A sparse problem whose builder found its islands (``problem.islands`` = (count, label per
    row): independent row groups, e.g. models/box_friction.py from the bodies each row touches) is
    solved island by island: the islands of up to min(dense_max, small_n) rows in one compiled call
    (kernels/box_qp.py ``box_qp_islands``: each island's dense block and projected Newton, the
    small-problem settings), an island whose Newton gives way to the interior point (or a larger
    one) on its own block in Python. The whole problem's Newton stops, and its interior point
    iterates, until its worst island is solved, where each island alone mostly certifies in a Newton
    step or two. None where the problem carries no islands (or one), or its matrix is dense.

    Rows set aside (``set_aside``, :func:`_set_aside`: at 0, and 0 cannot be wrong unless the others
    push them in) are left out of the islands: the rest, split by the bodies they touch, is solved,
    then w = M z + q of the rows set aside; those below 0 (pushed in) join the rest and the islands
    are solved again from there, until none is: the answer of the whole problem, certified as a whole
    by solve()."""
    own = getattr(problem, "islands", None)
    M = problem.M
    if own is None or not opts.islands or not sp.issparse(M) or M.format != "csr":
        return None
    aside = _set_aside(problem, z) if opts.set_aside else None
    if aside is None and own[0] < 2:
        return None
    count, labels = own if aside is None else _kept_islands(problem, aside)
    zz, w = z.copy(), np.empty(problem.n)
    if aside is not None:
        zz[aside] = 0.0
    iterations, outer, rounds = 0, 1, 0
    while True:
        rounds += 1
        its, out, ok = _island_solves(problem, opts, count, labels, zz, w)
        iterations, outer = iterations + its, max(outer, out)
        if aside is None:
            break
        rows = np.flatnonzero(aside)
        w[rows] = csr_rows_affine(M.indptr, M.indices, M.data, rows, zz, problem.q)
        late = np.zeros(problem.n, dtype=bool)
        # pushed in (w < 0 at z = 0 with room above 0): a constraint after all
        late[rows[(w[rows] < 0.0) & (problem.hi[rows] > 0.0) & (problem.findex[rows] < 0)]] = True
        if not late.any():
            break
        tied = problem.findex >= 0
        late[tied] |= late[problem.findex[tied]]
        aside &= ~late
        count, labels = _kept_islands(problem, aside)
    return Solution(z=zz, w=w, status=Status.SOLVED if ok else Status.MAX_ITERATIONS, iterations=iterations,
                    info={"outer": outer, "islands": int(count), "set_aside": 0 if aside is None else int(aside.sum()),
                          "rounds": rounds})


def _island_solves(problem: BoxedLCP, opts: BoxQPOptions, count: int, labels: np.ndarray, zz: np.ndarray,
                   w: np.ndarray) -> tuple[int, int, bool]:
    """The islands (count, label per row; rows labelled -1 take no part) solved from zz, their
    answers written into zz and w: the compiled call for those it takes, box-qp in Python on the
    others. Returns (iterations, bound updates, whether every island is solved)."""
    M = problem.M
    order, bounds = island_rows(count, labels)
    order, bounds = order[bounds[0]:], bounds - bounds[0]       # the rows labelled -1 sort first
    sizes = np.diff(bounds)
    # the compiled call takes the islands that _compiled would take whole with the small-problem
    # settings (dense, up to small_n rows: the full Newton budget with line search), and with the
    # rows' groups (``body_groups``, set by box friction: rows on one body pair) those up to
    # grouped_max rows, whose Newton steps it factorises block by block; "ipm": none
    groups = getattr(problem, "body_groups", None)
    groups = _NO_LABELS if groups is None or opts.grouped_max <= 0 else groups
    fits = (sizes <= min(opts.dense_max, opts.small_n)) | ((sizes <= opts.grouped_max) & (groups.size > 0))
    fits &= opts.algorithm != "ipm"
    small = np.flatnonzero(fits)
    rows = order[np.repeat(fits, sizes)]                    # the small islands' rows, island by island
    starts = np.concatenate([[0], np.cumsum(sizes[small])])
    z = zz.copy()
    codes, its, outers = (np.zeros(small.size, dtype=np.int64) for _ in range(3))
    # Newton alone has no interior point to hand over to: max_iterations, whatever the start
    newton_only = opts.algorithm == "newton"
    budget = opts.max_iterations if newton_only else min(opts.max_iterations, opts.island_iterations)
    box_qp_islands(M.indptr, M.indices, M.data, problem.q, problem.lo, problem.hi, problem.findex, problem.mu,
                   z, rows, starts, opts.tol, budget, opts.armijo, newton_only,
                   opts.max_outer, zz, w, codes, its, outers, groups, GROUPED_FROM,
                   opts.island_search_max or problem.n, opts.newton_steps,
                   min(budget, opts.island_poor_iterations), np.inf if newton_only else IPM_WARM_MAX)
    iterations, outer, ok = int(its.sum()), int(outers.max(initial=1)), True
    # an island left out: the whole method on its own block; those the compiled Newton gave up on:
    # one interior point on their union from there (rows of separate islands stay uncoupled; one
    # run's ~15 iterations instead of ~15 per island, each a Python iteration), at the earliest of
    # their bound updates (their Newton iterations already counted)
    rest = [(order[bounds[k]:bounds[k + 1]], None, 0) for k in np.flatnonzero(~fits)]
    gave_up = np.flatnonzero(codes == INTERIOR)
    if gave_up.size:
        idx = np.sort(np.concatenate([order[bounds[k]:bounds[k + 1]] for k in small[gave_up]]))
        rest.append((idx, int(outers[gave_up].min()), int(its[gave_up].sum())))
    for idx, first, done in rest:
        sub = island_problem(problem, idx, opts.dense_max)
        if sub.is_trivial():    # z = 0 solves it (separating contacts): the interior point's iterates
            zz[idx], w[idx] = 0.0, sub.q        # never reach 0 exactly, and a scale-free residual
            continue                            # measures z in units of max|z| (solve() tests this first)
        s = _solve(sub, opts, zz[idx]) if first is None else _python_path(sub, opts, zz[idx], [done], ["ipm"], first)
        zz[idx], w[idx] = s.z, s.w
        iterations += s.iterations - done
        outer = max(outer, s.info.get("outer", 1))
        ok = ok and s.status is Status.SOLVED
    ok = ok and not np.any(codes == UNSETTLED)
    return iterations, outer, ok


def _solve(problem: BoxedLCP, opts: BoxQPOptions, warm_start, compiled: bool = True) -> Solution:
    """``compiled=False``: the Python path throughout (the reference the compiled one is tested against)."""
    n = problem.n
    z = np.zeros(n) if warm_start is None else np.asarray(warm_start, dtype=np.float64).copy()
    counter = [0]
    mode = [opts.algorithm]
    first = 1
    if compiled:
        done = _islands(problem, opts, z)
        if done is not None:
            return done
        done = _compiled(problem, opts, z, counter, mode)
        if isinstance(done, Solution):
            return done
        if done is not None:
            z, first = done
    return _python_path(problem, opts, z, counter, mode, first)


def _python_path(problem: BoxedLCP, opts: BoxQPOptions, z, counter, mode, first) -> Solution:
    """_solve in Python from z at bound update ``first`` in ``mode`` (after the compiled Newton, or
    from the start)."""
    M, q = problem.M, problem.q
    factors = getattr(problem, "factors", None)
    if not problem.has_coupling:
        lo, hi = problem.lo, problem.hi
        z = np.clip(z, lo, hi)
        z, w, ok = _box_qp(M, q, lo, hi, z, opts, opts.tol, counter, mode, factors)
        return Solution(z=z, w=w, status=Status.SOLVED if ok else Status.MAX_ITERATIONS,
                        iterations=counter[0], info={"outer": 1})
    for outer in range(first, opts.max_outer + 1):
        lo, hi = problem.bounds(z)
        z = np.clip(z, lo, hi)
        z, w, ok = _box_qp(M, q, lo, hi, z, opts, opts.tol, counter, mode, factors)
        lo2, hi2 = problem.bounds(z)
        if ok and _residual(M, q, z, w, lo2, hi2) <= opts.tol:
            return Solution(z=z, w=w, status=Status.SOLVED, iterations=counter[0], info={"outer": outer})
    return Solution(z=z, w=M @ z + q, status=Status.MAX_ITERATIONS, iterations=counter[0],
                    info={"outer": opts.max_outer, "reason": "bound updates did not settle"})


@register("box-qp", problems=(BoxedLCP,), options=BoxQPOptions, warm_start=True, convert=False,
          classes=("boxed",),
          description="projected Newton on the bound-constrained QP of a symmetric boxed LCP (exact "
                      "Newton steps on the free rows), a Mehrotra interior point where Newton stalls; "
                      "friction-coupled bounds by fixed-point bound updates",
          guarantees="algorithm='newton', static bounds, SPD M: converges to the exact solution "
                     "(Bertsekas 1982); the interior point is Mehrotra's heuristic (no proof); coupled "
                     "bounds: no guarantee; SOLVED only when the residual certifies the answer")
def box_qp_solve(problem, opts: BoxQPOptions, warm_start=None) -> Solution:
    return _solve(problem, opts, warm_start)
