"""box-qp's body-space block Cholesky (kernels/body_space_chol.py, solvers/box_qp/shifted.py
``_BlockCholesky``): S = W^-1 + H' E^-1 H factorised on the bodies' 6x6 blocks, against S formed
densely from H, W and E and numpy's solve; the fallback where S is not positive definite; the
analysis kept for a repeated pattern."""
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from contactlab.solvers.box_qp import BoxQPOptions, _BodySpace, _ipm
from contactlab.problems import BoxedLCP
from contactlab.problems.residual import relative_error

from tests.problems import body_rows


def sparse_contacts(rng, nbody, nrows, reach=3):
    """Rows on one body or on two bodies at most ``reach`` apart (a sparse bodies' graph, so that the
    elimination fills in), H CSR with 6 columns per body, W's SPD blocks."""
    def bodies_of(r):
        a = int(rng.integers(nbody))
        if rng.random() < 0.2:
            return [a]
        b = min(nbody - 1, a + int(rng.integers(1, reach + 1)))
        return [a] if b == a else [a, b]
    return body_rows(rng, nbody, nrows, bodies_of)


def dense_S(H, W, keep, e_inv):
    live = [b for b in range(W.shape[0]) if np.any(H[keep][:, 6 * b:6 * b + 6].toarray())]
    dofs = np.concatenate([np.arange(6 * b, 6 * b + 6) for b in live])
    Hk = H[keep][:, dofs].toarray()
    return sla.block_diag(*[np.linalg.inv(W[b]) for b in live]) + Hk.T @ np.diag(e_inv) @ Hk


def factor_of(chol, nt):
    """L (dense) from the block factor's Ld, Lv on :func:`block_symbolic`'s pattern."""
    lp, li = chol.sym[0], chol.sym[1]
    L = np.zeros((6 * nt, 6 * nt))
    for j in range(nt):
        L[6 * j:6 * j + 6, 6 * j:6 * j + 6] = chol.Ld[j]
        for e in range(lp[j], lp[j + 1]):
            L[6 * li[e]:6 * li[e] + 6, 6 * j:6 * j + 6] = chol.Lv[e]
    return L


@pytest.mark.parametrize("drop", [False, True])
def test_block_cholesky_is_S_and_solves_it(drop):
    """L L' = P' S P block by block (L from Ld, Lv on :func:`block_symbolic`'s pattern), and the
    solve against numpy's, for E spread over 12 orders of magnitude (rows near and far from a bound).
    ``drop``: the rows' couplings the factor may leave out (body_space_chol.py DROP); without, none
    is left out and L L' is S itself."""
    rng = np.random.default_rng(4)
    H, W = sparse_contacts(rng, 40, 400)
    cfm = 1e-8
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(400)).tocsr()
    keep = np.sort(rng.choice(400, size=380, replace=False))
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    assert body is not None
    for scale in (1e-6, 1.0, 1e6):
        d = scale * rng.uniform(0.0, 1.0, keep.size)
        if body.chol is not None and not drop:
            body.chol.cut[:] = -1.0
        solve = body.solver(d)
        chol = body.chol
        assert chol is not None and body.ldl is None        # the block path, not the fallback
        if drop:                                            # far from a bound on every row: nothing to leave out
            assert chol.dropped == 0
        nt = body.nt
        S = dense_S(H, W, keep, 1.0 / (cfm + d))
        lp, li = chol.sym[0], chol.sym[1]
        assert li.size > (body._S.indices.size // 36 - nt) // 2     # the order fills in: a real test of fill
        L = np.zeros((6 * nt, 6 * nt))
        for j in range(nt):
            L[6 * j:6 * j + 6, 6 * j:6 * j + 6] = chol.Ld[j]
            for e in range(lp[j], lp[j + 1]):
                i = li[e]
                L[6 * i:6 * i + 6, 6 * j:6 * j + 6] = chol.Lv[e]
        dofs = np.concatenate([np.arange(6 * c, 6 * c + 6) for c in chol.perm])
        Sp = S[np.ix_(dofs, dofs)]
        assert np.allclose(np.tril(L), L)
        assert np.abs(L @ L.T - Sp).max() <= 1e-12 * np.abs(S).max()
        b = rng.normal(size=6 * nt)
        x = np.empty(6 * nt)
        chol.solve(b, x)
        ref = np.linalg.solve(S, b)
        assert np.abs(S @ x - b).max() <= 1e-12 * (np.abs(S).max() * np.abs(x).max() + np.abs(b).max())
        assert np.abs(x - ref).max() <= 1e-13 * np.linalg.cond(S) * np.abs(ref).max()
        # the contact-space system it serves
        A = M[keep][:, keep].toarray() + np.diag(d)
        r = rng.normal(size=keep.size)
        xk = solve(r)
        assert np.abs(A @ xk - r).max() <= 1e-8 * (np.abs(A).max() * np.abs(xk).max() + np.abs(r).max())


def test_block_cholesky_reports_an_indefinite_S_and_the_solve_falls_back():
    """d below -cfm makes E negative on some rows and S indefinite: the block factor says so (a pivot
    not positive) and the solver falls back to the sparse LDL' or LU, still solving the system."""
    rng = np.random.default_rng(2)
    H, W = sparse_contacts(rng, 20, 150)
    cfm = 1e-3
    keep = np.arange(150)
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(150)).tocsr()
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    d = rng.uniform(0.0, 1.0, 150)
    d[:40] = -2.0 * cfm                                  # E = -cfm on 40 rows
    S = dense_S(H, W, keep, 1.0 / (cfm + d))
    assert np.linalg.eigvalsh(S).min() < 0
    solve = body.solver(d)
    assert not body.chol.factor(body.ra, body.rb, body.ha, body.hb, 1.0 / (cfm + d), body.Winv)
    A = M.toarray() + np.diag(d)
    r = rng.normal(size=150)
    x = solve(r)
    assert np.all(np.isfinite(x))
    assert np.abs(A @ x - r).max() <= 1e-6 * (np.abs(A).max() * np.abs(x).max() + np.abs(r).max())


def test_interior_point_on_sparse_contacts_certifies_through_the_block_path():
    """The interior point with the body-space systems by the block Cholesky certifies and agrees with
    the contact-space factorisation's answer."""
    rng = np.random.default_rng(6)
    H, W = sparse_contacts(rng, 60, 700)
    cfm = 1e-8
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(700)).tocsr()
    n = 700
    q = rng.normal(size=n)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    fr = np.arange(n) % 3 != 0
    lo[fr], hi[fr] = -0.3, 0.3
    opts = BoxQPOptions(algorithm="ipm")
    za, _, oka = _ipm(M, q, lo, hi, opts, opts.tol, [0])
    zb, _, okb = _ipm(M, q, lo, hi, opts, opts.tol, [0], factors=(H, W, cfm))
    assert oka and okb
    assert relative_error(BoxedLCP(M, q, lo, hi).relative_residuals(zb)) <= opts.tol
    assert np.abs(za - zb).max() <= 1e-5 * np.abs(za).max()


def test_compiled_iteration_hands_over_to_python_where_a_pivot_fails(monkeypatch):
    """The interior point's compiled body-space iteration (kernels/box_qp_ipm.py ``ipm_block_loop``) hands
    an iteration whose pivot is not positive to the Python iteration (whose solver falls back to a sparse
    factorisation where the block Cholesky fails): with that hand-over at every iteration ("python"), or
    after each compiled iteration ("alternate"), the iterates are the compiled loop's own (the same
    arithmetic in both), the answer certified, its w = M z + q, and the iterations counted once."""
    from contactlab.kernels.box_qp_ipm import IPM_DONE, IPM_PIVOT
    rng = np.random.default_rng(8)
    H, W = sparse_contacts(rng, 60, 700)
    cfm = 1e-8
    n = 700
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(n)).tocsr()
    q = rng.normal(size=n)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    fr = np.arange(n) % 3 != 0
    lo[fr], hi[fr] = -0.3, 0.3
    opts = BoxQPOptions(algorithm="ipm")
    runs = {}
    compiled = _BodySpace.iterate
    for mode in ("compiled", "python", "alternate"):
        handed = [0]

        def iterate(self, *args):
            if mode == "compiled":
                return compiled(self, *args)
            if mode == "python":
                handed[0] += 1
                return IPM_PIVOT, 0, 0.0, 0.0
            it = list(args)
            it[8] = 1                                   # one compiled iteration, then a failed pivot
            why, done, r, a = compiled(self, *it)
            if why == IPM_DONE:
                handed[0] += 1
                return IPM_PIVOT, done, 0.0, 0.0
            return why, done, r, a
        monkeypatch.setattr(_BodySpace, "iterate", iterate)
        counter = [0]
        z, w, ok = _ipm(M, q, lo, hi, opts, opts.tol, counter, factors=(H, W, cfm))
        assert ok, mode
        assert relative_error(BoxedLCP(M, q, lo, hi).relative_residuals(z)) <= opts.tol
        assert np.abs(w - (M @ z + q)).max() <= 1e-12 * np.abs(q).max()
        runs[mode] = (z, counter[0], handed[0])
    assert runs["compiled"][1] >= 5
    assert runs["python"][2] == runs["python"][1]               # every iteration in Python
    assert runs["alternate"][2] >= runs["alternate"][1] // 2 - 1  # half of them
    for mode in ("python", "alternate"):
        assert runs[mode][1] == runs["compiled"][1]
        assert np.array_equal(runs[mode][0], runs["compiled"][0])


def test_block_cholesky_keeps_no_subnormal_entries():
    """Rows held at a bound (tiny 1 / E: near the interior point's end 1e-20 and below) couple their
    bodies by blocks that shrink at every elimination they pass through: L's entries reach IEEE 754
    subnormals (below 2.2e-308, whose arithmetic is tens of times slower; with 1 / E of 1e-50 to 1e-70
    on this wide band of bodies, 36 of them without the flush); the factor stores none
    (body_space_chol.py FLUSH), and L L' is still S to rounding and the solve still numpy's."""
    rng = np.random.default_rng(12)
    H, W = sparse_contacts(rng, 300, 2000, reach=20)
    cfm = 1e-8
    keep = np.arange(2000)
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(2000)).tocsr()
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    assert body is not None
    d = 10.0 ** rng.uniform(50.0, 70.0, 2000)      # every row held far from its bound
    body.solver(np.ones(2000))
    body.chol.cut[:] = -1.0                         # every coupling kept (DROP would leave them all out)
    solve = body.solver(d)
    chol = body.chol
    assert chol is not None and body.ldl is None
    tiny = np.abs(chol.Lv[chol.Lv != 0.0])
    assert tiny.size and not np.any(tiny < np.finfo(float).tiny)
    nt = body.nt
    L = factor_of(chol, nt)
    S = dense_S(H, W, keep, 1.0 / (cfm + d))
    dofs = np.concatenate([np.arange(6 * c, 6 * c + 6) for c in chol.perm])
    assert np.abs(L @ L.T - S[np.ix_(dofs, dofs)]).max() <= 1e-12 * np.abs(S).max()
    b = rng.normal(size=6 * nt)
    x = np.empty(6 * nt)
    chol.solve(b, x)
    assert np.abs(x - np.linalg.solve(S, b)).max() <= 1e-13 * np.linalg.cond(S) * np.abs(x).max()
    A = M.toarray() + np.diag(d)
    r = rng.normal(size=2000)
    xk = solve(r)
    assert np.abs(A @ xk - r).max() <= 1e-8 * (np.abs(A).max() * np.abs(xk).max() + np.abs(r).max())


def test_block_cholesky_leaves_out_the_couplings_of_held_rows_and_refines():
    """Most rows held at a bound (1 / E ~ 1e-12, as near the interior point's end) and the rest free
    (1 / E ~ 1 / cfm): the factor leaves the held rows' couplings out (body_space_chol.py DROP, their
    diagonal terms kept), L L' is that S~ (formed densely from the rows), most of L's blocks are 0,
    and the contact-space solve, refined against S itself, is numpy's on the whole system."""
    rng = np.random.default_rng(5)
    H, W = sparse_contacts(rng, 60, 700)
    cfm = 1e-8
    n = 700
    M = (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(n)).tocsr()
    keep = np.arange(n)
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    held = rng.random(n) < 0.7
    d = np.where(held, 10.0 ** rng.uniform(11.0, 13.0, n), 0.0)
    solve = body.solver(d)
    chol = body.chol
    assert chol is not None and body.ldl is None
    e_inv = 1.0 / (cfm + d)
    two = body.rb >= 0
    out = two & (e_inv <= chol.cut)
    assert chol.dropped == out.sum() > 0.2 * two.sum()
    # S~: the held rows' couplings out, their diagonal blocks in (dense, from H and W)
    nt = body.nt
    S = dense_S(H, W, keep, e_inv)
    live = [b for b in range(60) if np.any(H[:, 6 * b:6 * b + 6].toarray())]
    Hd = H[:, np.concatenate([np.arange(6 * b, 6 * b + 6) for b in live])].toarray()
    St = S.copy()
    for k in np.flatnonzero(out):
        a, b = body.ra[k], body.rb[k]
        ha, hb = Hd[k, 6 * a:6 * a + 6], Hd[k, 6 * b:6 * b + 6]
        St[6 * a:6 * a + 6, 6 * b:6 * b + 6] -= e_inv[k] * np.outer(ha, hb)
        St[6 * b:6 * b + 6, 6 * a:6 * a + 6] -= e_inv[k] * np.outer(hb, ha)
    assert np.abs(St - S).max() > 0
    L = factor_of(chol, nt)
    dofs = np.concatenate([np.arange(6 * c, 6 * c + 6) for c in chol.perm])
    assert np.abs(L @ L.T - St[np.ix_(dofs, dofs)]).max() <= 1e-12 * np.abs(St).max()
    # the blocks flagged 0 are 0 (skipped as factors), the others not; some pairs are left uncoupled
    assert (~chol.nz).any() and not np.any(chol.Lv[~chol.nz])
    assert np.all(np.any(chol.Lv[chol.nz] != 0.0, axis=(1, 2)))
    A = M.toarray() + np.diag(d)
    r = rng.normal(size=n)
    x = solve(r)
    ref = sla.solve(A, r, assume_a="pos")
    assert np.abs(A @ x - r).max() <= 1e-8 * (np.abs(A).max() * np.abs(x).max() + np.abs(r).max())
    # as close to numpy's as the solve with every coupling (whose own error is the identity's
    # cancellation where 1 / E ~ 1 / cfm: 2e-7 of |x| here)
    chol.cut[:] = -1.0
    whole = body.solver(d)(r)
    assert body.chol.dropped == 0
    assert np.abs(x - ref).max() <= 2.0 * np.abs(whole - ref).max() + 1e-12 * np.abs(ref).max()
