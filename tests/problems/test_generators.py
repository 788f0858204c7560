"""The generators produce the matrix classes they claim (eigenvalues, principal minors, rank, structure)."""
import itertools

import numpy as np
import pytest

from contactlab import FactoredLCP, LCP, ProblemError
from contactlab.problems import generators as g


def principal_minors(M):
    n = M.shape[0]
    for k in range(1, n + 1):
        for S in itertools.combinations(range(n), k):
            yield np.linalg.det(M[np.ix_(S, S)])


@pytest.mark.parametrize("seed", range(3))
def test_random_spd_is_symmetric_positive_definite_with_requested_condition(seed):
    rng = np.random.default_rng(seed)
    P = g.random_spd(12, rng, cond=1e4)
    assert isinstance(P, LCP) and P.n == 12
    assert np.array_equal(P.M, P.M.T)
    lam = np.linalg.eigvalsh(P.M)
    assert lam.min() == pytest.approx(1.0, rel=1e-8)
    assert lam.max() / lam.min() == pytest.approx(1e4, rel=1e-6)
    lam_default = np.linalg.eigvalsh(g.random_spd(9, rng).M)
    assert 1.0 - 1e-9 <= lam_default.min() and lam_default.max() <= 10.0 + 1e-9


def test_random_spd_is_reproducible_from_the_seed():
    a = g.random_spd(6, np.random.default_rng(7))
    b = g.random_spd(6, np.random.default_rng(7))
    assert np.array_equal(a.M, b.M) and np.array_equal(a.q, b.q)


@pytest.mark.parametrize("n,rank", [(8, 3), (10, 1), (6, 6), (5, 0)])
def test_random_psd_has_the_requested_rank_and_a_known_solution(n, rank):
    P = g.random_psd(n, np.random.default_rng(n + rank), rank=rank)
    old = g.random_psd(n, rank, np.random.default_rng(n + rank))   # the old argument order still works
    assert np.array_equal(old.M, P.M) and np.array_equal(old.q, P.q)
    assert np.array_equal(P.M, P.M.T)
    lam = np.linalg.eigvalsh(P.M)
    assert lam.min() >= -1e-12
    assert int(np.sum(lam > 1e-10)) == rank
    assert np.linalg.matrix_rank(P.M) == rank


@pytest.mark.parametrize("seed", range(4))
def test_random_p_matrix_is_nonsymmetric_with_all_principal_minors_positive(seed):
    P = g.random_p_matrix(7, np.random.default_rng(seed))
    assert not np.allclose(P.M, P.M.T)
    assert min(principal_minors(P.M)) > 0
    x = np.random.default_rng(100 + seed).standard_normal((50, 7))
    assert np.all(np.einsum("ij,jk,ik->i", x, P.M, x) > 0)  # positive definite, not symmetric


def test_friction_pyramid_lcp_has_the_stewart_trinkle_structure():
    rng = np.random.default_rng(3)
    k, d, mu = 5, 4, 0.3
    system = g.random_contact_system(k, rng, d=d, mu=mu, bodies=3)
    A, b = g.friction_pyramid_matrix(system)
    n = k * (d + 2)
    assert A.shape == (n, n)
    G = A[:k * (d + 1), :k * (d + 1)]
    J = np.vstack([system.N, system.D])
    assert np.allclose(G, J @ np.linalg.solve(system.M, J.T))
    assert np.allclose(G, G.T) and np.linalg.eigvalsh(G).min() > -1e-9
    E = A[k:k * (d + 1), k * (d + 1):]
    assert np.array_equal(E, np.kron(np.eye(k), np.ones((d, 1))))
    assert np.array_equal(A[k * (d + 1):, :k], mu * np.eye(k))
    assert np.array_equal(A[k * (d + 1):, k:k * (d + 1)], -E.T)
    assert np.all(A[k * (d + 1):, k * (d + 1):] == 0) and np.all(A[:k, k * (d + 1):] == 0)
    assert np.all(b[k * (d + 1):] == 0)
    assert np.allclose(b[:k], system.N @ system.v_free)
    # copositive: z'Az = |J'(c, beta)|^2_{M^-1} + mu lambda'c >= 0 for z >= 0
    Z = np.abs(rng.standard_normal((200, n)))
    assert np.all(np.einsum("ij,jk,ik->i", Z, A, Z) >= -1e-9)
    # friction directions are unit tangents spread evenly: each pyramid's directions sum to 0 velocity row
    for c in range(k):
        assert np.allclose(system.D[c * d:(c + 1) * d].sum(axis=0), 0.0, atol=1e-12)
    P = g.friction_pyramid_lcp(k, np.random.default_rng(3), d=d, mu=mu)
    assert np.allclose(P.M, A) and np.allclose(P.q, b)


def test_contact_rows_see_no_relative_velocity_under_a_common_rigid_motion():
    """Rows are relative point velocities: a rigid motion of all bodies together moves no body-body contact."""
    rng = np.random.default_rng(11)
    s = g.random_contact_system(12, rng, bodies=3)
    v0, omega = rng.standard_normal(3), rng.standard_normal(3)
    # body b moves with v_b = v0 + omega x c_b (velocity of its centre) and angular velocity omega
    vel = np.concatenate([np.r_[v0 + np.cross(omega, c), omega] for c in s.centers])
    J = np.vstack([s.N, s.D])
    for row in J:
        on = [b for b in range(3) if np.any(row[6 * b:6 * b + 6] != 0)]
        assert np.isclose(np.linalg.norm(row[6 * on[0]:6 * on[0] + 3]), 1.0)
        if len(on) == 2:
            assert abs(row @ vel) < 1e-10


@pytest.mark.parametrize("dim,per_face,rank_per_pair", [(3, 4, 3), (2, 2, 2), (3, 9, 3)])
def test_box_stack_contact_lcp_is_psd_with_the_rank_of_face_contacts(dim, per_face, rank_per_pair):
    rng = np.random.default_rng(5)
    structure = g.random_box_stack(6, rng, dim=dim)
    F = g.box_structure_factored(structure, rng, contacts_per_face=per_face, velocity_scale=0.1)
    assert isinstance(F, FactoredLCP)
    assert F.n == 6 * per_face and F.m == (6 if dim == 3 else 3) * 6   # one support per box
    L = F.to_lcp()
    assert np.allclose(L.M, L.M.T)
    lam = np.linalg.eigvalsh(L.M)
    assert lam.min() > -1e-9 * lam.max()
    # each face pair constrains only normal translation and the two (one planar) tilts
    assert np.linalg.matrix_rank(L.M, tol=1e-9 * lam.max()) == 6 * rank_per_pair
    assert np.allclose(L.q, F.N @ np.linalg.solve(F.M, F.f))


def test_box_stack_explicit_and_factored_forms_agree():
    a = g.box_stack_contact_lcp(8, np.random.default_rng(2))
    b = g.box_stack_factored(8, np.random.default_rng(2)).to_lcp()
    assert np.allclose(a.M, b.M) and np.allclose(a.q, b.q)


def test_box_column_and_pyramid_match_loomis_balkcom_sizes_and_statics():
    col = g.box_structure_factored(g.box_column(50))
    assert col.n == 100 and col.m == 150               # planar: 2 contacts per face pair, 3 dof per block
    pyr = g.box_pyramid(13)
    assert pyr.n_boxes == 91
    F = g.box_structure_factored(pyr)
    # 13 ground contacts x 2, and each of the 78 upper blocks rests on two blocks: 2 * 2 * 78
    assert F.n == 26 + 4 * 78
    # at rest under gravity only the ground contacts are pushed together (q < 0)
    assert np.sum(F.q < -1e-12) == 26 and np.all(F.q <= 1e-12)


def test_murty_example_solution_and_class():
    for n in (3, 8, 12):
        P = g.murty(n)
        assert np.array_equal(np.tril(P.M, -1), np.zeros((n, n)))
        assert np.all(np.diag(P.M) == 1) and np.all(P.M[np.triu_indices(n, 1)] == 2)
        assert P.q[-1] == -2.0 ** n and P.q[0] == -(2.0 ** (n + 1) - 2)
        z = np.zeros(n)
        z[-1] = 2.0 ** n
        w = P.M @ z + P.q
        assert np.all(w >= 0) and z @ w == 0     # the unique solution (M is a P-matrix)
    assert min(principal_minors(g.murty(6).M)) > 0


def test_kostreva_example_is_degenerate_and_solved_by_e_over_3():
    P = g.kostreva_cycling()
    z = np.full(3, 1 / 3)
    assert np.allclose(P.M @ z + P.q, 0)
    assert min(principal_minors(P.M)) > 0          # P-matrix: e/3 is the only solution
    assert np.ptp(P.q) == 0                       # first Lemke ratio test ties in every row


def test_generators_reject_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ProblemError, match="rank"):
        g.random_psd(3, rng, rank=4)
    with pytest.raises(ProblemError, match="cond"):
        g.random_spd(3, rng, cond=0.5)
    with pytest.raises(ProblemError, match="rng"):
        g.random_spd(3, 0)
    with pytest.raises(ProblemError, match="contacts_per_face"):
        g.box_stack_factored(3, rng, contacts_per_face=5)
    with pytest.raises(ProblemError, match="n_contacts"):
        g.friction_pyramid_lcp(0, rng)


@pytest.mark.parametrize("structure", [g.box_pyramid(4), g.random_box_stack(9, np.random.default_rng(8), dim=2),
                                       g.random_box_stack(7, np.random.default_rng(9), dim=3)])
def test_sub_assembly_lcp_is_the_leading_principal_block(structure):
    """loomis-balkcom eq. 8: the contact LCP of the first k blocks is the principal sub-problem on their contacts."""
    full = g.box_structure_factored(structure).to_lcp()
    uppers = np.array([u for _, u, _ in g.box_contacts(structure)])
    assert np.all(np.diff(uppers) >= 0)
    for k in range(1, structure.n_boxes + 1):
        sub = g.box_structure_factored(structure.subset(range(k))).to_lcp()
        nk = int(np.sum(uppers < k))
        assert sub.n == nk
        assert np.allclose(sub.M, full.M[:nk, :nk], atol=1e-12) and np.allclose(sub.q, full.q[:nk], atol=1e-15)
