"""kernels/metric_dense.py: the tree step's no-slip reduction on dense rows in the metric of H's
tree factor (drumwright Sec. VI, Alg. 2, eq. 56-57; Featherstone RBDA sec. 6.5) against numpy's
inverse, solves and projections and scipy's triangular solves, on well-conditioned and near-singular
inputs, with H tree-sparse (a floating base's chain and legs) or dense (one chain)."""
import numpy as np
import pytest
import scipy.linalg as sla

from contactlab.kernels import metric_dense as MD
from contactlab.kernels.householder import apply_reflectors, householder_select
from contactlab.kernels.mass_factor import tree_factor


def _legs(nlegs, per_leg):
    """lam of a floating base (a chain of 6) with ``nlegs`` chains of ``per_leg`` coordinates hanging
    from its last coordinate (a legged robot's coordinate tree)."""
    lam = [-1, 0, 1, 2, 3, 4]
    for _ in range(nlegs):
        lam += [5] + [len(lam) + i for i in range(per_leg - 1)]
    return np.array(lam, dtype=np.int64)


def _ancestors(lam):
    m = lam.shape[0]
    anc = np.zeros((m, m), dtype=bool)
    for k in range(m):
        i = k
        while i >= 0:
            anc[k, i] = True
            i = lam[i]
    return anc


def _tree_spd(rng, lam, cond):
    """An SPD H = L' L with the tree's sparsity (L_ki nonzero only for i = k or an ancestor of k),
    its condition spread to about ``cond`` by L's diagonal."""
    m = lam.shape[0]
    L = np.where(_ancestors(lam), rng.normal(size=(m, m)), 0.0)
    L[np.diag_indices(m)] = np.geomspace(1.0, np.sqrt(cond), m)[rng.permutation(m)]
    return L.T @ L


def _factor(H, lam):
    L = np.empty_like(H)
    assert tree_factor(H, lam, L)
    return L


def _tangent_rows(rng, lam, nc, near):
    """ST (2 nc, m): S_0, T_0, ... each contact's pair supported on one path to the root (a foot's
    rows) or, for one in four, anywhere; some contacts not touching (zero rows), one row repeated
    (dependent) and, with ``near``, one row within 1e-9 of the span of two others."""
    m = lam.shape[0]
    anc = _ancestors(lam)
    ST = np.zeros((2 * nc, m))
    for c in range(nc):
        leaf = rng.integers(m)
        support = anc[leaf] if rng.random() < 0.75 else rng.random(m) < 0.5
        ST[2 * c:2 * c + 2] = rng.normal(size=(2, m)) * support
        if rng.random() < 0.25:
            ST[2 * c:2 * c + 2] = 0.0
    if nc >= 2:
        ST[-1] = ST[0]
    if near and nc >= 3:
        ST[-2] = ST[1] - 2.0 * ST[2] + 1e-9 * rng.normal(size=m)
    return ST


CASES = [(seed, cond, near, legs) for seed in range(4) for cond, near in ((10.0, False), (1e10, True))
         for legs in (True, False)]


def _lam(legs):
    return _legs(4, 3) if legs else np.arange(14, dtype=np.int64) - 1


@pytest.mark.parametrize("seed,cond,near,legs", CASES)
def test_tree_transposed_solve_is_the_triangular_solve(seed, cond, near, legs):
    """Each column of the side-by-side L^-T solve is scipy's solve_triangular of L', zero off the
    paths its row lives on, and |L^-T g|^2 = g H^-1 g' (numpy's solve)."""
    from contactlab.kernels.mass_factor import tree_transposed_solve
    rng = np.random.default_rng(seed)
    lam = _lam(legs)
    H = _tree_spd(rng, lam, cond)
    L = _factor(H, lam)
    assert np.allclose(L.T @ L, H, rtol=0, atol=1e-12 * np.abs(H).max())
    G = _tangent_rows(rng, lam, 5, near)
    XT = np.ascontiguousarray(G.T)
    tree_transposed_solve(L, lam, XT)
    ref = sla.solve_triangular(L.T, G.T, lower=False)
    assert np.allclose(XT, ref, rtol=0, atol=1e-12 * (np.abs(ref).max() + 1.0) * np.sqrt(cond))
    reach = _ancestors(lam).T.astype(float) @ (G.T != 0.0)      # entry t of a row's solve: t on its rows' paths
    assert np.all(XT[reach == 0.0] == 0.0)
    gHg = np.einsum("ij,ij->i", G, np.linalg.solve(H, G.T).T)
    assert np.allclose(np.einsum("ij,ij->j", XT, XT), gHg, rtol=1e-8, atol=1e-300)


@pytest.mark.parametrize("seed,cond,near,legs", CASES[::2])
def test_reflectors_side_by_side_are_apply_reflectors(seed, cond, near, legs):
    """Q' on the columns of a transposed block (:func:`reflect_rows_transposed`) gives what
    householder.apply_reflectors gives on each column alone, bit for bit, and keeps the norms (Q
    orthogonal); the reflectors come from householder_select on tangent rows."""
    rng = np.random.default_rng(100 + seed)
    m, nc = 12, 4
    Y = _tangent_rows(rng, _legs(2, 3), nc, near) * np.sqrt(cond) ** rng.uniform(-1, 1, size=(2 * nc, 1))
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


def _chains(rng, cond, near, legs, nc=4, n=5):
    lam = _lam(legs)
    H = _tree_spd(rng, lam, cond)
    m = H.shape[0]
    L = _factor(H, lam)
    ST = _tangent_rows(rng, lam, nc, near)
    U, bias, v = rng.normal(size=(n, m)), rng.normal(size=n), rng.normal(size=m)
    p = H @ v
    a = MD.tree_metric_chain(H, L, lam, ST, 1e-9, p, U, bias)
    return H, L, lam, ST, U, bias, p, a


@pytest.mark.parametrize("seed,cond,near,legs", CASES)
def test_tree_chain_is_the_projection_in_the_metric_of_h(seed, cond, near, legs):
    """The reduction's mathematics against numpy: Lg Lg' = G_k H^-1 G_k' (Cholesky of the kept rows'
    Gram matrix in the H^-1 metric), U Z Z' p = U P p and U Z (U Z)' = U P U' with P = H^-1 -
    H^-1 G_k' (G_k H^-1 G_k')^-1 G_k H^-1 (eq. 56: Z Z' is the H-orthogonal projection onto null(G_k)
    times H^-1), q = U Z Z' p + offset, offset = bias, the kept rows in trial order and every dropped
    nonzero row within Alg. 2's tolerance of the kept ones' span in the H^-1 metric."""
    rng = np.random.default_rng(200 + seed)
    H, L, lam, ST, U, bias, p, a = _chains(rng, cond, near, legs)
    status, k, kept, Lg, UZ, Zp, offset, q = a[:8]
    assert status == 0 and k >= 1 and np.all(np.diff(kept[:k]) > 0)
    m = H.shape[0]
    assert UZ.shape == (U.shape[0], m - k) and Zp.shape == (m - k,)
    Gk = ST[kept[:k]]
    Hi = np.linalg.inv(H)
    A = Gk @ Hi @ Gk.T
    Lk = np.tril(Lg[:k, :k])
    rel = max(1e-10, 1e-13 * cond)          # the references' own rounding grows with H's condition
    assert np.allclose(Lk @ Lk.T, A, rtol=0, atol=rel * np.abs(A).max())
    P = Hi - Hi @ Gk.T @ np.linalg.solve(A, Gk @ Hi)
    scale = np.abs(U).max() ** 2 * np.abs(Hi).max()
    assert np.allclose(UZ @ UZ.T, U @ P @ U.T, rtol=0, atol=rel * 1e3 * scale)
    assert np.allclose(q - offset, U @ P @ p, rtol=0, atol=rel * 1e3 * scale * np.abs(p).max())
    assert np.array_equal(offset, bias)
    Lt = L.T            # H = F F' with F = L': the rows' coordinates y = F^-1 g
    for i in np.flatnonzero(np.any(ST != 0.0, axis=1)):
        if i not in kept[:k] and k < m:        # (k = m: every row is in the span)
            Yk, y = sla.solve_triangular(Lt, Gk.T, lower=False), sla.solve_triangular(Lt, ST[i], lower=False)
            res = y - Yk @ np.linalg.lstsq(Yk, y, rcond=None)[0]
            assert res @ res <= 2e-9 * (y @ y)


@pytest.mark.parametrize("seed,cond,near,legs", CASES)
def test_tree_recover_stops_the_kept_rows_and_balances_momentum(seed, cond, near, legs):
    """The physics of the recovery: v+ = H^-1 (p + U' z) projected (the kept tangent rows stop, G_k
    v+ = 0, eq. 45-46), momentum balances, H v+ = p + U' z + G_k' lam (eq. 47), and v+ equals the
    dense solve of the KKT system [H G_k'; G_k 0] for z >= 0 of the reduced LCP's size."""
    rng = np.random.default_rng(300 + seed)
    H, L, lam, ST, U, bias, p, a = _chains(rng, cond, near, legs)
    status, k, kept, Lg, UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free = a
    nc = ST.shape[0] // 2
    z = np.abs(rng.normal(size=U.shape[0])) * (rng.random(U.shape[0]) < 0.7)
    vn, tangent = MD.tree_metric_recover(H, L, lam, k, Lg, kept, vval, vidx, vptr, beta, prow, sgn, free, UZ, Zp,
                                         p, U, z, nc)
    Gk = ST[kept[:k]]
    mult = tangent.reshape(-1)[kept[:k]]
    assert np.all(tangent.reshape(-1)[np.setdiff1d(np.arange(2 * nc), kept[:k])] == 0.0)
    scale = np.abs(H).max() * np.abs(vn).max() + np.abs(p).max() + np.abs(U.T @ z).max()
    assert np.abs(Gk @ vn).max() <= 1e-7 * np.abs(Gk).max() * np.abs(vn).max() * np.sqrt(cond)
    assert np.allclose(H @ vn, p + U.T @ z + Gk.T @ mult, rtol=0, atol=1e-7 * scale)
    if cond < 1e3:
        m = H.shape[0]
        K = np.block([[H, Gk.T], [Gk, np.zeros((k, k))]])
        ref = np.linalg.solve(K, np.concatenate([p + U.T @ z, np.zeros(k)]))
        assert np.allclose(vn, ref[:m], rtol=0, atol=1e-10 * np.abs(ref[:m]).max())
        assert np.allclose(mult, -ref[m:], rtol=0, atol=1e-9 * np.abs(ref[m:]).max())


def test_non_finite_input_is_a_status():
    """A NaN in the rows, U or the momentum returns status 3 (the tree step then declines)."""
    rng = np.random.default_rng(7)
    lam = _legs(1, 3)
    H = _tree_spd(rng, lam, 10.0)
    L = _factor(H, lam)
    m = H.shape[0]
    ST, U, bias, p = _tangent_rows(rng, lam, 3, False), rng.normal(size=(3, m)), rng.normal(size=3), rng.normal(size=m)
    ST[0, 0] = np.nan
    assert MD.tree_metric_chain(H, L, lam, ST, 1e-9, p, U, bias)[0] == 3
    ST[0, 0] = 1.0
    U[1, 2] = np.inf
    assert MD.tree_metric_chain(H, L, lam, ST, 1e-9, p, U, bias)[0] == 3
    U[1, 2] = 0.0
    p[0] = np.nan
    assert MD.tree_metric_chain(H, L, lam, ST, 1e-9, p, U, bias)[0] == 3
    assert MD.tree_metric_chain(H, L, lam, ST, 1e-9, np.zeros(m), U, bias)[0] == 0
