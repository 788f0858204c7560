"""FIND-INDICES (drumwright Alg. 2): independent rows, same set as a brute-force rank test."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from contactlab.errors import ModelError
from contactlab.models.find_indices import find_indices, find_indices_bruteforce, nullspace_basis


def _case(seed, m, j, n, n_dep):
    """Random SPD M and rows J, S, T where ``n_dep`` rows are integer combinations of earlier ones."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A @ A.T + m * np.eye(m)
    J = rng.normal(size=(j, m)) if j else None
    S = rng.normal(size=(n, m))
    T = rng.normal(size=(n, m))
    rows = [("J", J, i) for i in range(j)] + [(b, X, i) for i in range(n) for b, X in (("S", S), ("T", T))]
    for _ in range(n_dep if len(rows) >= 3 else 0):
        k = int(rng.integers(2, len(rows)))
        name, X, i = rows[k]
        a, b = rng.choice(k, size=2, replace=False)
        coeff = rng.integers(-2, 3, size=2)
        X[i] = coeff[0] * rows[a][1][rows[a][2]] + coeff[1] * rows[b][1][rows[b][2]]
    return M, J, S, T


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(2, 9), j=st.integers(0, 4), n=st.integers(1, 6),
       n_dep=st.integers(0, 5))
def test_matches_bruteforce_and_rows_are_independent(seed, m, j, n, n_dep):
    M, J, S, T = _case(seed, m, j, n, n_dep)
    sets = find_indices(M, J, S, T)
    ref = find_indices_bruteforce(M, J, S, T)
    for got, want in zip((sets.J_rows, sets.S_rows, sets.T_rows), ref):
        np.testing.assert_array_equal(got, want)
    # independence and maximality: the kept rows have full rank equal to the rank of all rows
    all_rows = np.vstack([X for X in (J, S, T) if X is not None])
    assert sets.rank == np.linalg.matrix_rank(sets.G) == np.linalg.matrix_rank(all_rows)
    assert sets.rank <= m  # drumwright Sec. VI: X is at most m x m
    # the incrementally grown factor is the Cholesky factor of G M^-1 G'
    np.testing.assert_allclose(sets.L @ sets.L.T, sets.G @ np.linalg.solve(M, sets.G.T), atol=1e-9)
    assert np.allclose(sets.L, np.tril(sets.L))


def test_trial_order_is_algorithm_2():
    """J first, then S_i before T_i for each contact: a T row equal to an S row is the one dropped."""
    M = np.diag([1.0, 2.0, 3.0])
    S = np.array([[1.0, 0, 0], [0, 1.0, 0]])
    T = np.array([[1.0, 0, 0], [0, 0, 1.0]])
    sets = find_indices(M, None, S, T)
    assert list(sets.S_rows) == [0, 1] and list(sets.T_rows) == [1]
    J = np.array([[0, 1.0, 0]])
    sets = find_indices(M, J, S, T)
    assert list(sets.J_rows) == [0] and list(sets.S_rows) == [0] and list(sets.T_rows) == [1]


def test_at_most_m_rows_and_nullspace():
    rng = np.random.default_rng(3)
    m = 5
    M = np.eye(m) * 2
    S, T = rng.normal(size=(6, m)), rng.normal(size=(6, m))
    sets = find_indices(M, None, S, T)
    assert sets.rank == m
    assert nullspace_basis(sets.G, m).shape == (m, 0)
    sets = find_indices(M, None, S[:1], T[:1])
    Z = nullspace_basis(sets.G, m)
    assert Z.shape == (m, m - 2)
    np.testing.assert_allclose(sets.G @ Z, 0, atol=1e-12)
    np.testing.assert_allclose(Z.T @ Z, np.eye(m - 2), atol=1e-12)


def test_bad_input_names_the_argument():
    with pytest.raises(ModelError, match="S and T"):
        find_indices(np.eye(3), None, np.ones((1, 3)), None)
    with pytest.raises(ModelError, match="columns"):
        find_indices(np.eye(3), np.ones((1, 4)))
    with pytest.raises(ModelError, match="positive definite"):
        find_indices(-np.eye(3), np.ones((1, 3)))


def test_shifted_factored_lcp_is_exact_with_offset_and_cfm():
    """w = N M^-1 (N' z + f) + offset + cfm z, factored (bordered N and M), equals the explicit LCP."""
    import contactlab as cl
    from contactlab.models.find_indices import ShiftedFactoredLCP
    rng = np.random.default_rng(7)
    m, n = 5, 9
    A = rng.normal(size=(m, m))
    M = A @ A.T + np.eye(m)
    N, f, off = rng.normal(size=(n, m)), rng.normal(size=m), rng.normal(size=n)
    p = ShiftedFactoredLCP(N, M, f, off, cfm=1e-3)
    F = N @ np.linalg.solve(M, N.T) + 1e-3 * np.eye(n)
    q = N @ np.linalg.solve(M, f) + off
    lcp = p.to_lcp()
    np.testing.assert_allclose(lcp.M, F, atol=1e-10)
    np.testing.assert_allclose(lcp.q, q, atol=1e-12)
    sol = cl.solve(p, method="ppm")
    assert sol.success
    np.testing.assert_allclose(sol.w, F @ sol.z + q, atol=1e-9)
    np.testing.assert_allclose(p.coordinates(sol.z), np.linalg.solve(M, N.T @ sol.z + f), atol=1e-10)


def test_no_slip_equality_right_hand_side():
    """J v+ = J_rhs (drift correction) holds exactly with the tangential rows."""
    import contactlab as cl
    from contactlab.models.noslip import build_noslip, recover_noslip
    rng = np.random.default_rng(11)
    m = 8
    M = np.diag(rng.uniform(1, 3, m))
    J = rng.normal(size=(2, m))
    N, S, T = rng.normal(size=(3, m)), rng.normal(size=(3, m)), rng.normal(size=(3, m))
    built = build_noslip(M, rng.normal(size=m), rng.normal(size=m), 0.01, N, S[:1], T[:1], J,
                         J_rhs=[0.3, -0.2], normal_bias=[0.1, 0.0, -0.05])
    sol = cl.solve(built.problem, method="ppm")
    assert sol.success
    res = recover_noslip(built, sol.z)
    np.testing.assert_allclose(J @ res.v_next, [0.3, -0.2], atol=1e-12)
    np.testing.assert_allclose([S[0] @ res.v_next, T[0] @ res.v_next], 0, atol=1e-12)
    w = N @ res.v_next + [0.1, 0.0, -0.05]
    assert w.min() > -1e-10 and abs(w @ sol.z) < 1e-10


# -- the compiled chain (kernels/noslip.py) against dense references -----------------------------------------

def _block_case(seed, nblocks, j, n, n_dep):
    """Block-diagonal SPD M (blocks of 1-6, as a system's bodies) and sparse rows touching 1-2 blocks,
    ``n_dep`` of them combinations of earlier ones."""
    import scipy.linalg as sla
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, nblocks)
    blocks = []
    for s in sizes:
        A = rng.normal(size=(s, s))
        blocks.append(A @ A.T + s * np.eye(s))
    M = sla.block_diag(*blocks)
    m = M.shape[0]
    starts = np.concatenate([[0], np.cumsum(sizes)])

    def row():
        g = np.zeros(m)
        for b in rng.choice(nblocks, size=min(2, nblocks), replace=False):
            g[starts[b]:starts[b + 1]] = rng.normal(size=sizes[b]) * (rng.random(sizes[b]) < 0.7)
        return g
    J = np.array([row() for _ in range(j)]).reshape(j, m) if j else None
    S = np.array([row() for _ in range(n)])
    T = np.array([row() for _ in range(n)])
    rows = [(J, i) for i in range(j)] + [(X, i) for i in range(n) for X in (S, T)]
    for _ in range(n_dep if len(rows) >= 3 else 0):
        k = int(rng.integers(2, len(rows)))
        a, b = rng.choice(k, size=2, replace=False)
        X, i = rows[k]
        X[i] = rows[a][0][rows[a][1]] - 2.0 * rows[b][0][rows[b][1]]
    return M, J, S, T


def _projector(Z):
    return Z @ Z.T


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), nblocks=st.integers(1, 14), j=st.integers(0, 12), n=st.integers(1, 6),
       n_dep=st.integers(0, 4))
def test_compiled_chain_matches_dense_references(seed, nblocks, j, n, n_dep):
    """Block Cholesky solve = numpy's solve; FIND-INDICES (sparse products, profile) = the brute-force
    rank test; the Householder null space spans null(G) (projector = scipy's SVD null space); the
    factored LCP of eq. 57 and the recovered multipliers = the dense formulas."""
    import scipy.linalg as sla
    from contactlab.models.find_indices import MassFactor
    from contactlab.models.noslip import build_noslip, recover_noslip
    M, J, S, T = _block_case(seed, nblocks, j, n, n_dep)
    m = M.shape[0]
    rng = np.random.default_rng(seed + 1)
    b = rng.normal(size=(m, 3))
    cf = MassFactor(M)
    np.testing.assert_allclose(cf.solve(b), np.linalg.solve(M, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cf.solve(b[:, 0]), np.linalg.solve(M, b[:, 0]), rtol=1e-10, atol=1e-12)
    sets = find_indices(M, J, S, T)
    for got, want in zip((sets.J_rows, sets.S_rows, sets.T_rows), find_indices_bruteforce(M, J, S, T)):
        np.testing.assert_array_equal(got, want)
    G = sets.G
    np.testing.assert_allclose(sets.L @ sets.L.T, G @ np.linalg.solve(M, G.T), rtol=1e-9, atol=1e-9)
    Z = nullspace_basis(G, m)
    assert Z.shape == (m, m - sets.rank)
    np.testing.assert_allclose(Z.T @ Z, np.eye(Z.shape[1]), atol=1e-12)
    np.testing.assert_allclose(G @ Z, 0, atol=1e-12 * max(1.0, np.abs(G).max(initial=0.0)))
    np.testing.assert_allclose(_projector(Z), _projector(sla.null_space(G) if G.size else np.eye(m)), atol=1e-9)
    # the no-slip problem: F = N X^-1 N', q = N (X^-1 p + x_p) + bias with X^-1 = Z (Z'MZ)^-1 Z' (eq. 56-57)
    N = rng.normal(size=(3, m))
    v, f = rng.normal(size=m), rng.normal(size=m)
    jr = rng.normal(size=0 if J is None else J.shape[0])
    bias = rng.normal(size=3) * 0.1
    built = build_noslip(M, v, f, 0.01, N, S, T, J, J_rhs=jr if J is not None else None, normal_bias=bias)
    Zr = sla.null_space(G) if G.size else np.eye(m)
    Xinv = Zr @ np.linalg.solve(Zr.T @ M @ Zr, Zr.T) if Zr.shape[1] else np.zeros((m, m))
    r = np.concatenate([jr, np.zeros(2 * n)])[sets.kept]
    x_p = np.linalg.solve(M, G.T @ np.linalg.solve(G @ np.linalg.solve(M, G.T), r)) if sets.rank else np.zeros(m)
    p = M @ v + 0.01 * f
    lcp = built.problem.to_lcp()
    scale = max(1.0, np.abs(N @ Xinv @ N.T).max())
    np.testing.assert_allclose(lcp.M, N @ Xinv @ N.T, atol=1e-9 * scale)
    np.testing.assert_allclose(lcp.q, N @ (Xinv @ p + x_p) + bias, atol=1e-9 * max(scale, np.abs(p).max()))
    z = np.abs(rng.normal(size=3))
    res = recover_noslip(built, z)
    vp = Xinv @ (p + N.T @ z) + x_p
    np.testing.assert_allclose(res.v_next, vp, atol=1e-9 * max(1.0, np.abs(vp).max()))
    # multipliers: M v+ = p + N'z + J' joint + S' fs + T' ft, with zero on the dropped rows
    Jt = 0 if J is None else J.T @ res.joint
    resid = M @ res.v_next - p - N.T @ z - Jt - S.T @ res.tangent_s - T.T @ res.tangent_t
    cond = np.linalg.cond(sets.L @ sets.L.T) if sets.rank else 1.0     # the multipliers' conditioning
    assert np.abs(resid).max() < 1e-13 * max(1e4, cond) * max(1.0, np.abs(p).max(), np.abs(N.T @ z).max())


def test_nullspace_beyond_64_columns_and_not_spd_mass():
    """The nonzero masks cover m > 64 (several columns per bit); M not SPD is a ModelError."""
    import scipy.linalg as sla
    from contactlab.models.find_indices import MassFactor
    rng = np.random.default_rng(5)
    m, k = 150, 120
    G = np.zeros((k, m))
    for i in range(k):
        cols = rng.choice(m, size=6, replace=False)
        G[i, cols] = rng.normal(size=6)
    assert np.linalg.matrix_rank(G) == k
    Z = nullspace_basis(G, m)
    np.testing.assert_allclose(Z.T @ Z, np.eye(m - k), atol=1e-12)
    np.testing.assert_allclose(G @ Z, 0, atol=1e-12)
    np.testing.assert_allclose(_projector(Z), _projector(sla.null_space(G)), atol=1e-9)
    with pytest.raises(ModelError, match="positive definite"):
        MassFactor(np.diag([1.0, -1.0]))
    with pytest.raises(ModelError, match="positive definite"):
        MassFactor(np.diag([1.0, np.nan]))


def test_clear_full_row_rank_never_claims_a_rank_deficient_N():
    """kernels/factored.py's shortcut for Theorem 1: True only where numpy's SVD rank is full too."""
    from contactlab.kernels.factored import clear_full_row_rank
    rng = np.random.default_rng(9)
    for trial in range(300):
        n, m = int(rng.integers(1, 8)), int(rng.integers(1, 12))
        N = rng.normal(size=(n, m)) * 10.0 ** rng.integers(-6, 6)
        if trial % 3 == 0 and n > 1:          # exactly or nearly dependent rows
            N[-1] = N[0] * 2.0 - N[1 % n] + (1e-14 * rng.normal(size=m) if trial % 2 else 0.0)
        full = n <= m and np.linalg.matrix_rank(N) == n
        if clear_full_row_rank(np.ascontiguousarray(N)):
            assert full
        elif n <= m and trial % 3:
            assert not full or np.linalg.cond(N) > 1e5   # only unclear when ill-conditioned


def test_factored_certify_compiled_equals_generic():
    """FactoredLCP.certify's compiled pass (dense N) = the generic one (sparse N) on random problems."""
    import scipy.sparse as sp
    import contactlab as cl
    rng = np.random.default_rng(4)
    for cfm in (0.0, 1e-3):
        m, n = 6, 9
        A = rng.normal(size=(m, m))
        M = A @ A.T + np.eye(m)
        N, f, off = rng.normal(size=(n, m)), rng.normal(size=m), rng.normal(size=n)
        z = np.abs(rng.normal(size=n)) * (rng.random(n) < 0.6)
        dense = cl.FactoredLCP(N, M, f, offset=off, cfm=cfm)
        sparse = cl.FactoredLCP(sp.csr_matrix(N), M, f, offset=off, cfm=cfm)
        (w1, r1, q1), (w2, r2, q2) = dense.certify(z), sparse.certify(z)
        np.testing.assert_allclose(w1, w2, atol=1e-12)
        for a, b in ((r1, r2), (q1, q2)):
            np.testing.assert_allclose([a.natural, a.complementarity, a.infeasibility],
                                       [b.natural, b.complementarity, b.infeasibility], rtol=1e-9, atol=1e-13)
        lcp = dense.to_lcp()
        np.testing.assert_allclose(w1, lcp.M @ z + lcp.q, atol=1e-10)


def test_barrett_grasp_step_keeps_independent_rows_only():
    """A recorded no-slip step of the rubber Barrett grasp (tests/data/noslip_barrett_step48.npz: the
    inputs of kernels/noslip.py ``noslip_chain``, 52 joint rows and 16 contact tangent rows on 60
    coordinates, masses of links and glass far apart). Its 1e-9 test alone kept an exactly dependent
    row there (60 rows of rank 59: smallest singular value 5e-17) once the Delassus sums were
    reordered, and the step stopped with "kept dependent rows". With the second projection of a
    near-threshold row (RECHECK) the kept rows have full rank, their count is the rank of all the
    candidates (numpy's SVD), and every row left out is a combination of the kept ones."""
    from pathlib import Path
    from contactlab.kernels import noslip as K
    d = np.load(Path(__file__).parents[1] / "data" / "noslip_barrett_step48.npz")
    args = [d[k] for k in ("M", "Lm", "starts")] + [int(d["nb"])] + [d[k] for k in ("J", "ST", "rhs_j")] + \
        [float(d["tol"]), d["v"], d["f"], float(d["h"]), d["U"], d["bias"]]
    status, kept = K.noslip_chain(*args)[:2]
    assert status == 0
    G = np.vstack([d["J"], d["ST"]])
    Gk = G[kept]
    s = np.linalg.svd(Gk, compute_uv=False)
    assert s[-1] > 1e-9 * s[0]                                     # independent
    assert kept.size == np.linalg.matrix_rank(G)                   # maximal
    for c in sorted(set(range(G.shape[0])) - set(kept.tolist())):
        x = np.linalg.lstsq(Gk.T, G[c], rcond=None)[0]
        assert np.abs(Gk.T @ x - G[c]).max() <= 1e-9 * np.abs(G[c]).max(), c
