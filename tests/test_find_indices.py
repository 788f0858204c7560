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
