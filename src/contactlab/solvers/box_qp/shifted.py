"""The interior point's Newton systems (M + diag(d)) x = r, one factorisation per iteration: on M
itself (:class:`_Shifted`: dense Cholesky, or a sparse LDL' on M's own pattern), or for a contact
matrix M = H W H' + cfm I in body space (:class:`_BodySpace`: the Sherman-Morrison-Woodbury
identity through the bodies' 6x6 blocks, kernels/body_space.py)."""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ...kernels.body_space import (body_space_back, body_space_layout, body_space_rhs, body_space_values,
                                   kept_box_error)
from ...kernels.body_space_chol import block_analysis, block_factor, block_solve, block_space_solve, drop_cuts
from ...kernels.box_qp_ipm import ipm_block_loop
from ...kernels.csr_blocks import diagonal_positions
from .factors import _embedded, _sparse_spd_solver, _symmetric_csc


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
#: CHOLMOD's supernodal Cholesky where the block Cholesky (:class:`_BlockCholesky`) fails; below, QDLDL's
#: LDL' (AMD ordering). The interior point's calls of a falling pile, recorded and replayed with the same
#: iterates, ran faster with QDLDL on every S they had (up to ~12,000 rows at 2,000 boxes; docs/benchmarks-sim.md)
BODY_SPACE_CHOLMOD_MIN = 20_000


class _BlockCholesky:
    """The body-space S's block Cholesky (kernels/body_space_chol.py) for one interior-point call: the
    bodies in an approximate minimum degree order of their graph (AMD: Amestoy, Davis & Duff, SIAM J.
    Matrix Anal. Appl. 17(4), 1996, through cvxopt's SuiteSparse), L's block pattern, where each row's
    terms go, and the factor's storage (refactorised in place each iteration)."""

    def __init__(self, body):
        import cvxopt
        import cvxopt.amd as amd
        nt, ra, rb = body.nt, body.ra, body.rb
        two = rb >= 0                       # the bodies' graph: a pair per row on two bodies (ra < rb)
        A = cvxopt.spmatrix(1.0, np.concatenate([rb[two], np.arange(nt)]).tolist(),
                            np.concatenate([ra[two], np.arange(nt)]).tolist(), (nt, nt))
        self.perm = np.array(amd.order(A), dtype=np.int64).reshape(-1)
        self.sym = block_analysis(body._S.indptr, body._S.indices, self.perm, ra, rb, body.pair_base)
        self.Ld, self.Lv = np.empty((nt, 6, 6)), np.empty((self.sym[1].size, 6, 6))
        self.wpos = np.empty(nt, dtype=np.int64)
        self.nz = np.empty(self.sym[1].size, dtype=np.bool_)
        self.cut = drop_cuts(ra, rb, body.ha, body.hb, body.Winv)
        self.dropped = 0

    def factor(self, ra, rb, ha, hb, e_inv, Winv) -> bool:
        """S~ = L L' for S~ = W^-1 + H' diag(e_inv) H less the couplings of rows held at a bound
        (kernels/body_space_chol.py DROP; ``dropped`` counts them, 0: S~ = S); False where a pivot is
        not positive."""
        self.dropped = int(block_factor(ra, rb, ha, hb, e_inv, Winv, *self.sym[5:], self.cut, *self.sym[:5], self.Ld,
                                        self.Lv, self.wpos, self.nz))
        return self.dropped >= 0

    def solve(self, b, x):
        """x = S~^-1 b for the last factor."""
        block_solve(self.perm, self.sym[0], self.sym[1], self.Ld, self.Lv, self.nz, b, x)


#: body space is declined where the touched bodies' coordinates (6 per body, S's rows) number at least this
#: many times the kept rows. S's 6x6 blocks on the bodies' graph fill far less than M_keep's pattern, whose
#: rows on one body are all coupled, so S pays below this ratio even where it has more rows than M_keep: the
#: whole-pile problems of a landing pile (one to two body coordinates a kept row), recorded and replayed both
#: ways, ran faster in body space than on M_keep (QDLDL / CHOLMOD), with the same iterations; above it (few
#: rows on many bodies) S's size outweighs its sparser fill, and it was not measured there
#: (docs/benchmarks-sim.md, "the whole-pile interior point in body space up to two coordinates a kept row")
BODY_SPACE_MAX_RATIO = 2.0


class _BodySpace:
    """Factorisations of M + diag(d) on the rows ``keep`` of a contact matrix M = H W H' + cfm I
    (the problem's ``factors`` (H, W, cfm): H's rows on one or two bodies each, W the bodies' 6x6
    blocks of M^-1, cfm > 0) in body space (kernels/body_space.py): S = W^-1 + H' E^-1 H with
    E = cfm + d, one factorisation of S (6 rows per body) an iteration, and
    x = E^-1 (r - H S^-1 H' E^-1 r) per right-hand side (the Sherman-Morrison-Woodbury identity). The
    same interface as :class:`_Shifted` with ``keep`` (keep-sized vectors in and out). S is factorised
    by the compiled block Cholesky (:class:`_BlockCholesky`, analysed once per interior-point call), or
    where that meets a pivot that is not positive by :func:`_sparse_spd_solver`. Where E^-1 is large
    (rows far inside their box: E ~ cfm) x is the difference of nearly equal terms; the interior
    point checks its iterates with the certified residual whatever the solve's accuracy (on recorded
    impact steps it takes the same iterations as with M's own factorisation, docs/benchmarks-tuning.md)."""

    def __init__(self, layout, cfm, base):
        (self.ra, self.rb, self.ha, self.hb, self.nt, self.Winv, self.Wt, s_indptr, s_indices, self.diag_base,
         self.stride, self.pair_base) = layout
        self.cfm, self.base, self.sparse = cfm, base, True
        n = 6 * self.nt
        self._S = sp.csc_matrix.__new__(sp.csc_matrix)
        self._S._shape = (n, n)
        self._S.data, self._S.indices, self._S.indptr = np.zeros(s_indices.size), s_indices, s_indptr
        self._S.has_sorted_indices = True
        self.ldl = self.chol = self._e_inv = None

    @property
    def S(self) -> sp.csc_matrix:
        """S for the last :meth:`solver`'s d (upper triangle; body_space_layout's pattern), formed on
        request: the block Cholesky assembles its factor's storage directly."""
        if self._e_inv is not None:
            body_space_values(self.ra, self.rb, self.ha, self.hb, self._e_inv, self.Winv, self.diag_base,
                              self.stride, self.pair_base, self._S.data)
        return self._S

    @classmethod
    def of(cls, factors, M, keep: np.ndarray, dense_max: int):
        """The body-space form of the rows ``keep`` of a problem whose matrix is H W H' + cfm I
        (``factors``), or None where it does not apply or would not pay: no factors, cfm <= 0,
        M_keep small enough for the dense path, at least BODY_SPACE_MAX_RATIO body coordinates per kept
        row, a row on three
        bodies or more, a touched body's block not invertible."""
        if factors is None or keep.size <= dense_max:
            return None
        H, W, cfm = factors
        if not cfm > 0 or H.shape[0] != M.shape[0]:
            return None
        ok, *layout = body_space_layout(H.indptr.astype(np.int64, copy=False), H.indices.astype(np.int64, copy=False),
                                        H.data.astype(np.float64, copy=False), keep.astype(np.int64, copy=False),
                                        np.ascontiguousarray(W, dtype=np.float64))
        if not ok or 6 * layout[4] >= BODY_SPACE_MAX_RATIO * keep.size:
            return None
        return cls(layout, float(cfm), M.diagonal()[keep])

    def lower_error(self, q, lo, hi, z, size, w, work) -> float:
        """On the kept rows (the fixed ones at 0): w = M z + q into ``w``, and a lower bound of the
        certified error (kernels/body_space.py ``kept_box_error``: no pass over M's entries; ``size``
        = max|q| over every row)."""
        return float(kept_box_error(self.ra, self.rb, self.ha, self.hb, self.Wt, self.cfm, q, lo, hi, z, size, w, work))

    def iterate(self, z, sl, su, lo0, hi0, L, U, w2, iterations, tol, correctors, q, lo, hi, size, work,
                best_z, best_r):
        """Interior-point iterations on these rows as one compiled call (kernels/box_qp_ipm.py
        ``ipm_block_loop``: S by the block Cholesky, iterates screened by :meth:`lower_error`'s bound);
        returns its (reason, iterations, r, step). The state z, sl, su, w2 = M z + q is updated in place."""
        if self.chol is None:
            self.chol = _BlockCholesky(self)
        c = self.chol
        lp, li, rp, rc, rpos, ip, rdst, rtr = c.sym
        why, done, r, a = ipm_block_loop(z, sl, su, lo0, hi0, L, U, w2, int(iterations), float(tol), int(correctors),
                                         self.ra, self.rb, self.ha, self.hb, self.Winv, self.Wt, self.cfm, q, lo, hi,
                                         float(size), work, ip, rdst, rtr, c.cut, lp, li, rp, rc, rpos, c.perm, c.Ld,
                                         c.Lv, c.wpos, c.nz, best_z, best_r)
        return int(why), int(done), float(r), float(a)

    def solver(self, d):
        e_inv = self._e_inv = 1.0 / (self.cfm + d)
        if self.chol is None:
            self.chol = _BlockCholesky(self)
        t, y, x = np.empty(6 * self.nt), np.empty(6 * self.nt), np.empty(e_inv.size)
        ra, rb, ha, hb, nt = self.ra, self.rb, self.ha, self.hb, self.nt
        if self.chol.factor(ra, rb, ha, hb, e_inv, self.Winv):
            c = self.chol
            perm, lp, li, Ld, Lv, nz, dropped, Winv = c.perm, c.sym[0], c.sym[1], c.Ld, c.Lv, c.nz, c.dropped, self.Winv

            def solve(r):
                block_space_solve(ra, rb, ha, hb, r, e_inv, Winv, perm, lp, li, Ld, Lv, nz, dropped, t, y, x)
                return x.copy()
            return solve
        solve_s, self.ldl = _sparse_spd_solver(self.S, cholmod_min=BODY_SPACE_CHOLMOD_MIN)

        def solve_sparse(r):
            body_space_rhs(ra, rb, ha, hb, r, e_inv, nt, t)
            body_space_back(ra, rb, ha, hb, r, e_inv, solve_s(t), x)
            return x.copy()
        return solve_sparse
