"""Standard and boxed linear complementarity problems."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError
from ..kernels.residual import (boxed_certify_csr, boxed_certify_dense, boxed_zero_solves, coupled_bounds,
                                lcp_certify_dense, lcp_zero_solves)
from ..kernels import validation as V
from ..kernels.tolerances import NORMWISE_FLOOR
from ..kernels.validation import boxed_structure
from .base import Problem
from .residual import Residuals, box_relative, box_residuals, lcp_relative, lcp_residuals, row_terms
from .structure import as_structure
from .validation import as_matrix, as_vector, is_symmetric, matvec, max_abs


class LCP(Problem):
    """LCP(M, q): find z with w = M z + q, z >= 0, w >= 0, z'w = 0.

    ``M`` is an (n, n) dense array or ``scipy.sparse`` matrix (kept as CSR), ``q`` an (n,) vector;
    ``structure`` what its builder knows of its rows (:class:`~contactlab.problems.ProblemStructure`).
    """

    def __init__(self, M, q, *, structure=None):
        self.M = as_matrix("M", M, square=True)
        self.q = as_vector("q", q, self.M.shape[0])
        self.n = self.q.shape[0]
        self._scale = None
        self.structure = as_structure(structure)

    @classmethod
    def trusted(cls, M, q: np.ndarray, *, structure=None) -> "LCP":
        """A problem whose parts were checked already (no checks again): M a C-contiguous float64
        array or a CSR float64 matrix, q float64 (n,), e.g. a principal block of a checked LCP
        (:func:`contactlab.problems.islands.island_problem`); ``structure`` a
        :class:`~contactlab.problems.ProblemStructure` or None."""
        self = cls.__new__(cls)
        self.M, self.q, self.n, self._scale = M, q, q.shape[0], None
        self.structure = as_structure(structure)
        return self

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.M)

    def w(self, z):
        return matvec(self.M, z) + self.q

    def residuals(self, z, w=None) -> Residuals:
        return lcp_residuals(z, self.w(z) if w is None else w)

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        return lcp_relative(z, self.w(z) if w is None else w, self.q, row_terms(self.M, z, self.q))

    def max_abs_M(self) -> float:
        """max |M_ij|, computed once per problem."""
        if getattr(self, "_max_abs", None) is None:
            self._max_abs = max_abs(self.M)
        return self._max_abs

    def is_symmetric(self) -> bool:
        """The one symmetry test (problems/validation.py is_symmetric), computed once per problem."""
        if getattr(self, "_symmetric", None) is None:
            self._symmetric = is_symmetric(self.M)
        return self._symmetric

    def certify(self, z):
        """One numba pass for a dense M (kernels/residual.py lcp_certify_dense)."""
        if self.is_sparse or z.dtype != np.float64 or not z.flags.c_contiguous:
            return super().certify(z)
        w, r = self.certify_numbers(z)
        return w, Residuals(r[0], r[1], r[2]), Residuals(r[3], r[4], r[5])

    def certify_numbers(self, z):
        """(w, the six numbers of :meth:`certify`): one numba pass for a dense M."""
        if type(self.M) is not np.ndarray or z.dtype != np.float64 or not z.flags.c_contiguous:
            return super().certify_numbers(z)
        w, t = np.empty(self.n), np.empty(self.n)
        return w, lcp_certify_dense(self.M, self.q, z, w, t, NORMWISE_FLOOR)

    def scale(self) -> float:
        if self._scale is None:
            self._scale = max(1.0, float(np.max(np.abs(self.q), initial=0.0)))
        return self._scale

    def lcp_reduction(self):
        return self, lambda z: z

    def is_trivial(self) -> bool:
        """Whether z = 0 solves the problem exactly: q >= 0 (one compiled pass, kernels/residual.py
        lcp_zero_solves: a third of numpy's q.min() call at n = 10)."""
        return lcp_zero_solves(self.q)

    def dense_M(self) -> np.ndarray:
        return self.M.toarray() if self.is_sparse else self.M

    def __repr__(self):
        return f"LCP(n={self.n}, sparse={self.is_sparse})"


class BoxedLCP(Problem):
    """Boxed LCP: lo <= z <= hi, w = M z + q, with the mid-function complementarity.

    Infinite bounds are allowed. Rows with ``findex[i] = j >= 0`` have bounds coupled to z_j:
    lo_i = -mu_i z_j, hi_i = mu_i z_j (ODE's friction rows; arechavaleta eq. 16-17 with the
    bounds taken from the current normal value). Their entries of ``lo``/``hi`` are ignored.
    ``lo`` and ``hi`` default to 0 and +inf (LCP rows), so a contact problem given by ``findex``
    and ``mu`` needs no bounds at all.

    ``structure`` (:class:`~contactlab.problems.ProblemStructure`) is what the problem's builder knows
    of its rows, given at construction: its row kinds, its islands (row groups that no entry of M and
    no findex link couples, e.g. the separate stacks of a scene: box-qp solves them apart;
    ``contactlab.sim.islands.island_labels(problem)`` finds them from the matrix), the rows' body-pair
    groups, and the factors (H, W, cfm) of M = H W H' + cfm I, through which box-qp's interior point
    solves its Newton systems. The box-friction model's ``build`` gives them; ``problem.islands``,
    ``problem.factors``, ... read them.
    """

    def __init__(self, M, q, lo=None, hi=None, findex=None, mu=None, *, structure=None):
        self.M = as_matrix("M", M, square=True)
        n = self.M.shape[0]
        self.q = as_vector("q", q, n)
        self.lo = np.zeros(n) if lo is None else as_vector("lo", lo, n, allow_inf=True)
        self.hi = np.full(n, np.inf) if hi is None else as_vector("hi", hi, n, allow_inf=True)
        self.n = n
        if findex is None:
            if mu is not None:
                raise ProblemError("mu is given without findex; pass findex (index of each row's normal, -1 for none)")
            self.findex = np.full(n, -1, dtype=np.int64)
            self.mu = np.zeros(n)
        else:
            fi = np.asarray(findex)
            if fi.shape != (n,) or not np.issubdtype(fi.dtype, np.integer):
                raise ProblemError(f"findex must be an integer vector of length {n} (-1 for uncoupled rows)")
            self.findex = np.ascontiguousarray(fi, dtype=np.int64)
            if mu is None:
                raise ProblemError("findex is given without mu; pass mu (friction coefficient per row)")
            self.mu = as_vector("mu", mu, n)
        code, i = boxed_structure(self.lo, self.hi, self.findex, self.mu)
        if code != V.OK:
            raise ProblemError({
                V.FINDEX_RANGE: f"findex out of range: entries must be -1 or a row index in [0, {n})",
                V.FINDEX_SELF: "findex[i] == i couples a row to itself; point it at the normal row",
                V.MU_NEGATIVE: "mu must be >= 0 on coupled rows (friction coefficients are non-negative)",
                V.FINDEX_CHAIN: "findex points at a row that is itself coupled; point friction rows at normal rows",
                V.NORMAL_LO: "rows referenced by findex must have lo >= 0 (they are normal impulses)",
                V.BOUND_INF: "lo must not be +inf and hi must not be -inf",
                V.LO_ABOVE_HI: f"lo > hi at row {i} (lo={self.lo[i]}, hi={self.hi[i]}); swap or fix the bounds",
            }[code])
        self.structure = as_structure(structure)

    @classmethod
    def trusted(cls, M, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, findex: np.ndarray | None = None,
                mu: np.ndarray | None = None, *, structure=None) -> "BoxedLCP":
        """A problem whose parts a model assembled itself (no checks): M a C-contiguous float64 array
        or a CSR float64 matrix, q, lo, hi float64 (n,), findex int64 and mu float64 (n,) or both
        None, finite where the checked constructor wants them finite and with its structure (friction
        rows pointing at normal rows, lo <= hi); e.g. models/box_friction.py ``build``, which takes
        the checked constructor instead when q is not finite; ``structure`` a
        :class:`~contactlab.problems.ProblemStructure` or None. The same object as the checked
        constructor would build, without its checks (a cost on every simulation step)."""
        self = cls.__new__(cls)
        self.M, self.q, self.lo, self.hi, self.n = M, q, lo, hi, q.shape[0]
        self.findex = np.full(self.n, -1, dtype=np.int64) if findex is None else findex
        self.mu = np.zeros(self.n) if mu is None else mu
        if structure is not None:
            self.structure = structure
        return self

    @property
    def has_coupling(self) -> bool:
        return bool(np.any(self.findex >= 0))

    def bounds(self, z: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Effective (lo, hi); coupled rows use mu_i * z_findex[i] of the given ``z``."""
        if not self.has_coupling:
            return self.lo.copy(), self.hi.copy()
        if z is None:
            raise ProblemError("coupled bounds need z to be evaluated")
        lo, hi = np.empty(self.n), np.empty(self.n)
        coupled_bounds(self.lo, self.hi, self.findex, self.mu, np.ascontiguousarray(z, dtype=np.float64), lo, hi)
        return lo, hi

    def w(self, z):
        return matvec(self.M, z) + self.q

    def certify(self, z):
        """One compiled pass (kernels/residual.py boxed_certify_dense / boxed_certify_csr): w, the
        bounds at z, the row terms and both residual triples."""
        if z.dtype != np.float64 or not z.flags.c_contiguous or z.shape != (self.n,):
            return super().certify(z)
        w, r = self.certify_numbers(z)
        return w, Residuals(r[0], r[1], r[2]), Residuals(r[3], r[4], r[5])

    def certify_numbers(self, z):
        """(w, the six numbers of :meth:`certify`) from the same compiled pass."""
        if z.dtype != np.float64 or not z.flags.c_contiguous or z.shape != (self.n,):
            return super().certify_numbers(z)
        args = (self.q, self.lo, self.hi, self.findex, self.mu, z)
        if self.is_sparse:      # CSR float64 (as_matrix)
            w, *r = boxed_certify_csr(self.M.indptr, self.M.indices, self.M.data, *args)
        else:
            w, *r = boxed_certify_dense(self.M, *args)
        return w, r

    def is_trivial(self) -> bool:
        """Whether z = 0 solves the problem exactly: the residuals at z = 0, where w = q, are zero
        (one compiled pass, kernels/residual.py boxed_zero_solves; no product)."""
        return self.n == 0 or boxed_zero_solves(self.q, self.lo, self.hi, self.findex)

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.M)

    def residuals(self, z, w=None) -> Residuals:
        lo, hi = self.bounds(z)
        return box_residuals(z, self.w(z) if w is None else w, lo, hi)

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        lo, hi = self.bounds(z)
        return box_relative(z, self.w(z) if w is None else w, lo, hi, self.q, row_terms(self.M, z, self.q))

    def scale(self) -> float:
        return max(1.0, float(np.max(np.abs(self.q), initial=0.0)))

    def lcp_reduction(self):
        """Static-bound boxed LCP as a standard LCP.

        Substitute z = z0 + P u with u >= 0 (z = lo + u, z = hi - u, or z = u+ - u- for a free row)
        and add one multiplier v >= 0 per two-sided row for the upper bound:

            [P'MP   sE] [u]   [P'(M z0 + q) ]
            [-sE'   0 ] [v] + [s (hi - lo)  ]  (two-sided rows only; s = max|M|)

        P'MP keeps symmetry and positive semi-definiteness of M.
        """
        if self.has_coupling:
            raise ProblemError("a BoxedLCP with friction-coupled bounds (findex) has no static LCP form; "
                               "solve it with an iterative method (pgs, pgs-sm) or fix the bounds")
        n = self.n
        lo_f, hi_f = np.isfinite(self.lo), np.isfinite(self.hi)
        rows, signs = [], []
        z0 = np.zeros(n)
        box_rows = []
        for i in range(n):
            if lo_f[i]:
                z0[i] = self.lo[i]
                rows.append(i); signs.append(1.0)
                if hi_f[i]:
                    box_rows.append((len(rows) - 1, i))
            elif hi_f[i]:
                z0[i] = self.hi[i]
                rows.append(i); signs.append(-1.0)
            else:
                rows.append(i); signs.append(1.0)
                rows.append(i); signs.append(-1.0)
        k, b = len(rows), len(box_rows)
        P = sp.csr_matrix((signs, (rows, np.arange(k))), shape=(n, k))
        # the upper-bound rows are multiplied by s = max|M| (v = s v'): the reduced LCP of the
        # problem times c is the reduced LCP times c, so every method sees one scale
        sc = max_abs(self.M) or 1.0
        E = sp.csr_matrix((np.full(b, sc), ([j for j, _ in box_rows], np.arange(b))), shape=(k, b))
        Muu = P.T @ sp.csr_matrix(self.M) @ P
        big = sp.bmat([[Muu, E], [-E.T, None]], format="csr") if b else sp.csr_matrix(Muu)
        qq = np.concatenate([P.T @ (matvec(self.M, z0) + self.q),
                             sc * np.array([self.hi[i] - self.lo[i] for _, i in box_rows])])
        M_out = big if sp.issparse(self.M) else big.toarray()
        P = P.tocsr()

        def lift(y: np.ndarray) -> np.ndarray:
            return z0 + P @ y[:k]

        return LCP(M_out, qq), lift

    def __repr__(self):
        return f"BoxedLCP(n={self.n}, coupled={int(np.sum(self.findex >= 0))})"
