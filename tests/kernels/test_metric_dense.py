"""kernels/metric_dense.py: the tree step's no-slip reduction on dense rows (drumwright Sec. VI, Alg. 2,
eq. 56-57) against scipy's triangular solves and numpy's projections, and bit for bit against the
general chain it replaces for the tree (kernels/metric_chain.py ``noslip_metric_chain``,
``recover_metric_step`` with no equality rows), on well-conditioned and near-singular inputs."""
import numpy as np
import pytest
import scipy.linalg as sla

from contactlab.kernels import metric_chain as MC
from contactlab.kernels import metric_dense as MD
from contactlab.kernels.householder import apply_reflectors, householder_select
from contactlab.kernels.mass_factor import mass_factor


def _spd(rng, sizes, cond):
    """Block-diagonal SPD matrix (blocks of ``sizes``) with eigenvalues spread over [1, cond] per block,
    some entries of a block's rotation exactly zero (a robot's H has zeros between legs)."""
    m = int(sum(sizes))
    M = np.zeros((m, m))
    s0 = 0
    for b in sizes:
        Q, _ = np.linalg.qr(rng.normal(size=(b, b)))
        ev = np.geomspace(1.0, cond, b)
        M[s0:s0 + b, s0:s0 + b] = (Q * ev) @ Q.T
        s0 += b
    return 0.5 * (M + M.T)


def _factor(M):
    m = M.shape[0]
    L, starts = np.empty((m, m)), np.empty(m + 1, dtype=np.int64)
    nb = mass_factor(M, L, starts)
    assert nb >= 1
    return L, starts, nb


def _tangent_rows(rng, m, nc, near):
    """ST (2 nc, m): S_0, T_0, ... with sparse rows, some contacts not touching (zero rows), one row
    repeated (dependent) and, with ``near``, one row within 1e-9 of the span of two others."""
    ST = rng.normal(size=(2 * nc, m)) * (rng.random((2 * nc, m)) < 0.5)
    off = rng.random(nc) < 0.25
    ST[0::2][off] = 0.0
    ST[1::2][off] = 0.0
    if nc >= 2:
        ST[-1] = ST[0]
    if near and nc >= 3:
        ST[-2] = ST[1] - 2.0 * ST[2] + 1e-9 * rng.normal(size=m)
    return ST


CASES = [(seed, cond, near) for seed in range(6) for cond, near in ((10.0, False), (1e10, True))]


@pytest.mark.parametrize("seed,cond,near", CASES)
def test_rows_lower_solve_is_the_triangular_solve(seed, cond, near):
    """Each column of the side-by-side solve is L_M^-1 g (scipy's solve_triangular on the dense
    factor), zero on the blocks where g is zero, in both forms (reciprocal products and divisions)."""
    rng = np.random.default_rng(seed)
    M = _spd(rng, rng.integers(1, 7, size=3), cond)
    m = M.shape[0]
    L, starts, nb = _factor(M)
    assert np.allclose(L @ L.T, M, rtol=1e-12, atol=1e-12 * np.abs(M).max())
    G = _tangent_rows(rng, m, 5, near)
    for scatter in (True, False):
        XT = np.full((m, G.shape[0] + 2), np.nan)
        MD.rows_lower_solve(L, starts, nb, G, XT, 2, scatter)
        ref = sla.solve_triangular(L, G.T, lower=True)
        scale = np.abs(ref).max() + 1.0
        assert np.allclose(XT[:, 2:], ref, rtol=0, atol=1e-12 * scale * np.sqrt(cond))
        for b in range(nb):
            s0, s1 = starts[b], starts[b + 1]
            zero = ~np.any(G[:, s0:s1] != 0.0, axis=1)
            assert np.all(XT[s0:s1, 2:][:, zero] == 0.0)


@pytest.mark.parametrize("seed,cond,near", CASES)
def test_reflectors_side_by_side_are_apply_reflectors(seed, cond, near):
    """Q' on the columns of a transposed block (:func:`reflect_rows_transposed`) gives what
    householder.apply_reflectors gives on each column alone, bit for bit, and keeps the norms (Q
    orthogonal); the reflectors come from householder_select on tangent rows."""
    rng = np.random.default_rng(100 + seed)
    m, nc = 12, 4
    Y = _tangent_rows(rng, m, nc, near) * np.sqrt(cond) ** rng.uniform(-1, 1, size=(2 * nc, 1))
    r = Y.shape[0]
    k0 = min(r, m)
    Lg, kept, prow, sgn, beta = np.empty((k0, k0)), np.empty(k0, np.int64), np.empty(k0, np.int64), \
        np.empty(k0), np.empty(k0)
    vval, vidx, vptr = np.empty(k0 * m), np.empty(k0 * m, np.int64), np.zeros(k0 + 1, np.int64)
    free, vmask = np.ones(m, np.bool_), np.zeros(k0, np.uint64)
    amask = np.full(r, np.uint64(2 ** 64 - 1))
    gg = np.einsum("ij,ij->i", Y, Y)
    k = householder_select(Y.copy(), amask, gg, 1e-9, Lg, kept, prow, sgn, vval, beta, vptr, vidx, free, vmask)
    assert k >= 1
    B = rng.normal(size=(m, 5)) * (rng.random((m, 5)) < 0.6)
    XT = B.copy()
    MD.reflect_rows_transposed(vval, vidx, vptr, beta, k, XT, np.empty(5))
    for c in range(5):
        x = np.ascontiguousarray(B[:, c])
        apply_reflectors(vval, vidx, vptr, beta, vmask, k, x, True)
        assert np.array_equal(x, XT[:, c])
    assert np.allclose(np.linalg.norm(XT, axis=0), np.linalg.norm(B, axis=0), rtol=1e-13)


def _chains(rng, cond, near, nc=4, n=5):
    M = _spd(rng, rng.integers(2, 8, size=rng.integers(1, 4)), cond)
    m = M.shape[0]
    L, starts, nb = _factor(M)
    ST = _tangent_rows(rng, m, nc, near)
    U, bias, v = rng.normal(size=(n, m)), rng.normal(size=n), rng.normal(size=m)
    h, tol = 0.01, 1e-9
    a = MD.dense_metric_chain(M, L, starts, nb, ST, tol, v, h, U, bias)
    b = MC.noslip_metric_chain(M, L, starts, nb, np.zeros((0, m)), ST, np.zeros(0), tol, v, np.zeros(m), h, U, bias)
    return M, L, starts, nb, ST, U, bias, v, a, b


@pytest.mark.parametrize("seed,cond,near", CASES)
def test_dense_chain_equals_the_general_chain_and_the_projection(seed, cond, near):
    """The same kept rows, Lg, p, U Z, Z' p, offset and q as noslip_metric_chain (bit for bit), and
    the mathematics against numpy: Lg Lg' = G_k M^-1 G_k' (Cholesky of the kept rows' Gram matrix in
    the M^-1 metric), U Z Z' p = U P p and U Z (U Z)' = U P U' with P = M^-1 - M^-1 G_k' (G_k M^-1
    G_k')^-1 G_k M^-1 (eq. 56: Z Z' is the M-orthogonal projection onto null(G_k) times M^-1), and
    every dropped nonzero row within Alg. 2's tolerance of the kept ones' span in the M^-1 metric
    (at most m rows are kept)."""
    rng = np.random.default_rng(200 + seed)
    M, L, starts, nb, ST, U, bias, v, a, b = _chains(rng, cond, near)
    (status, k, kept, p, Lg, x_p, UZ, Zp, offset, q) = a[:10]
    assert status == 0 and b[0] == 0
    assert np.array_equal(kept[:k], b[1]) and np.array_equal(np.tril(Lg[:k, :k]), b[4])
    for x, y in ((p, b[3]), (x_p, b[6]), (UZ, b[7]), (Zp, b[8]), (offset, b[9]), (q, b[10])):
        assert x.shape == y.shape and np.array_equal(x, y)
    Gk = ST[kept[:k]]
    Mi = np.linalg.inv(M)
    A = Gk @ Mi @ Gk.T
    Lk = np.tril(Lg[:k, :k])
    rel = max(1e-10, 1e-13 * cond)          # the references' own rounding grows with M's condition
    assert np.allclose(Lk @ Lk.T, A, rtol=0, atol=rel * np.abs(A).max())
    P = Mi - Mi @ Gk.T @ np.linalg.solve(A, Gk @ Mi)
    scale = np.abs(U).max() ** 2 * np.abs(Mi).max()
    assert np.allclose(UZ @ UZ.T, U @ P @ U.T, rtol=0, atol=rel * 1e3 * scale)
    assert np.allclose(q - offset, U @ P @ (M @ v), rtol=0, atol=rel * 1e3 * scale * np.abs(M @ v).max())
    assert np.array_equal(offset, bias) and not np.any(x_p)
    for i in np.flatnonzero(np.any(ST != 0.0, axis=1)):
        if i not in kept[:k] and k < M.shape[0]:        # (k = m: every row is in the span)
            # Alg. 2's test in the M^-1 metric: |L^-1 g - proj|^2 <= tol |L^-1 g|^2 (tol 1e-9)
            Yk, y = sla.solve_triangular(L, Gk.T, lower=True), sla.solve_triangular(L, ST[i], lower=True)
            res = y - Yk @ np.linalg.lstsq(Yk, y, rcond=None)[0]
            assert res @ res <= 2e-9 * (y @ y)


@pytest.mark.parametrize("seed,cond,near", CASES)
def test_dense_recover_equals_the_general_recovery_and_balances_momentum(seed, cond, near):
    """v+ and the tangential impulses equal recover_metric_step's bit for bit, and the physics holds:
    the kept tangent rows stop (G_k v+ = 0, eq. 45-46) and momentum balances, M v+ = p + U' z +
    G_k' lam (eq. 47), for z >= 0 of the reduced LCP's size."""
    rng = np.random.default_rng(300 + seed)
    M, L, starts, nb, ST, U, bias, v, a, b = _chains(rng, cond, near)
    status, k, kept, p, Lg, x_p, UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free = a
    nc = ST.shape[0] // 2
    z = np.abs(rng.normal(size=U.shape[0])) * (rng.random(U.shape[0]) < 0.7)
    vn, tangent = MD.dense_metric_recover(M, L, starts, nb, k, Lg, kept, x_p, vval, vidx, vptr, beta, prow, sgn,
                                          free, UZ, Zp, p, U, z, nc)
    _, kept_b, order, p_b, Lg_b, Gk_b, x_p_b, UZ_b, Zp_b, _o, _q, fpack, ipack = b
    vr, joint, tr = MC.recover_metric_step(M, L, starts, nb, Gk_b, Lg_b, order, x_p_b, fpack, ipack, UZ_b, Zp_b,
                                           p_b, U, z, 0, nc)
    assert np.array_equal(vn, vr) and np.array_equal(tangent, tr) and joint.size == 0
    Gk = ST[kept[:k]]
    lam = tangent.reshape(-1)[kept[:k]]
    scale = np.abs(M).max() * np.abs(vn).max() + np.abs(p).max() + np.abs(U.T @ z).max()
    assert np.abs(Gk @ vn).max() <= 1e-7 * np.abs(Gk).max() * np.abs(vn).max() * np.sqrt(cond)
    assert np.allclose(M @ vn, p + U.T @ z + Gk.T @ lam, rtol=0, atol=1e-7 * scale)


def test_non_finite_input_is_a_status():
    """A NaN in the rows, U or the velocity returns status 3 (the tree step then declines)."""
    rng = np.random.default_rng(7)
    M = _spd(rng, [6, 3], 10.0)
    L, starts, nb = _factor(M)
    m = M.shape[0]
    ST, U, bias, v = _tangent_rows(rng, m, 3, False), rng.normal(size=(3, m)), rng.normal(size=3), rng.normal(size=m)
    ST[0, 0] = np.nan
    assert MD.dense_metric_chain(M, L, starts, nb, ST, 1e-9, v, 0.01, U, bias)[0] == 3
    ST[0, 0] = 1.0
    U[1, 2] = np.inf
    assert MD.dense_metric_chain(M, L, starts, nb, ST, 1e-9, v, 0.01, U, bias)[0] == 3
    assert MD.dense_metric_chain(M, L, starts, -1, ST, 1e-9, v, 0.01, U, bias)[0] == 4
