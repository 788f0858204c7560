"""The compiled no-slip step in joint coordinates' own parts against independent references:
the kinetic gain of block-diagonal M read from its blocks (:func:`block_kinetic_gain`) against
1/2 (a'Ma - b'Mb) with M formed densely and against the CSR kernel it replaces; the N, S, T rows in
joint coordinates in one pass (:func:`frame_rows_of`) against the dense product rows @ S."""
import numpy as np

from contactlab.mechanics.bodies import kinetic_gain
from contactlab.mechanics.system import block_pattern
from contactlab.sim.tree_kernels import block_kinetic_gain, frame_rows_of


def test_block_kinetic_gain_is_the_dense_quadratic_form_and_the_csr_kernels_bits():
    rng = np.random.default_rng(3)
    k = 5
    A = rng.standard_normal((k, 6, 6))
    B = np.einsum("tij,tkj->tik", A, A) + 6 * np.eye(6)        # SPD blocks
    after, before = rng.standard_normal(6 * k), rng.standard_normal(6 * k)
    weight = np.ones(6 * k)
    weight[6:12] = 0.0                                          # a kinematic body's dofs left out
    M = np.zeros((6 * k, 6 * k))
    for t in range(k):
        M[6 * t:6 * t + 6, 6 * t:6 * t + 6] = B[t]
    a, b = weight * after, weight * before
    g = block_kinetic_gain(B, after, before, weight)
    assert np.isclose(g, 0.5 * (a @ M @ a - b @ M @ b), rtol=1e-12, atol=1e-12)
    cols, ptr = block_pattern(k)
    assert g == kinetic_gain(ptr, cols, B.reshape(-1), after, before, weight)


def test_frame_rows_of_is_the_rows_times_the_body_jacobians():
    rng = np.random.default_rng(4)
    nb, nq, r = 3, 7, 4
    dof_start = np.array([0, -1, 6])
    body_of_block = np.array([0, 2])
    Sb = rng.standard_normal((nb, 6, nq))
    dense = np.zeros((3, r, 12))
    ip, ix, data = [0], [], [[], [], []]
    for i in range(r):
        cols = np.sort(rng.choice(12, size=5, replace=False))
        for c in cols:
            ix.append(c)
            for e in range(3):
                x = rng.standard_normal()
                data[e].append(x)
                dense[e, i, c] += x
        ip.append(len(ix))
    J = np.zeros((12, nq))                                      # maximal dofs -> joint rates
    J[0:6] = Sb[0]
    J[6:12] = Sb[2]
    out = frame_rows_of(Sb, dof_start, body_of_block, np.array(ip), np.array(ix), np.array(data))
    for e in range(3):
        assert np.allclose(out[e], dense[e] @ J, rtol=1e-12, atol=1e-12)
