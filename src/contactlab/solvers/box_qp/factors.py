"""``box-qp``'s sparse factorisations of symmetric positive definite systems: LDL' by QDLDL (AMD
ordering) or CHOLMOD's supernodal Cholesky, kept by sparsity pattern (:class:`_PatternCache`) so a
repeated pattern is refactorised numerically only; SuperLU with diagonal pivots where LDL' meets a
zero pivot; and the Newton systems M_FF x = b on a free set F (:func:`_factor_solve`)."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import qdldl as _qdldl

from ...kernels.box_qp import STALE
from ...kernels.csr_blocks import csr_dense_block, csr_masked, upper_pattern
from ...problems.islands import csr_block


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
    """M_RR embedded in the symmetric M's own pattern (:func:`~contactlab.kernels.csr_blocks.csr_masked`: the other
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
    pattern (:func:`~contactlab.kernels.csr_blocks.csr_masked`: the held rows' off-diagonal entries zeroed), so the
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
