"""The joint-row elimination kernels of the compiled jointed steps (kernels/joint_rows.py,
arechavaleta eq. 15) against numpy's dense factorisations."""
import numpy as np
import pytest

from contactlab.kernels.joint_rows import add_gram, spd_reduce


@pytest.mark.parametrize("seed", range(4))
def test_the_envelope_factor_is_the_dense_choleskys(seed):
    """kernels/joint_rows.py spd_reduce (Cholesky, L^-1 and Y = L^-1 C over A's envelope) against numpy's dense
    Cholesky on block-banded SPD matrices shaped like a hand's joint block (chains of 5-row blocks,
    each coupled to the next, plus a few full coupling rows at the end), and its decline on a matrix
    that is not positive definite."""
    rng = np.random.default_rng(seed)
    blocks, b, tail, n = 6, 5, 3, 7
    p = blocks * b + tail
    R = np.zeros((p, 12 * blocks))
    for k in range(blocks):                     # chain rows: this block's and the next block's columns
        R[k * b:(k + 1) * b, 12 * k:12 * k + 24 if k + 1 < blocks else 12 * k + 12] = \
            rng.normal(size=(b, 24 if k + 1 < blocks else 12))
    R[blocks * b:] = rng.normal(size=(tail, R.shape[1]))
    A = R @ R.T + 1e-3 * np.eye(p)
    A = (A + A.T) / 2
    A[np.abs(A) < 1e-12] = 0.0
    assert (A[b * 2:b * 3, :b] == 0).all()      # the envelope leaves zeros out
    C = rng.normal(size=(p, n))
    C[: b * 2, 3:] = 0.0                          # sparse joint-contact coupling
    g = rng.normal(size=p)
    ok, Li, Y, yg = spd_reduce(A, C, g)
    assert ok
    L = np.linalg.cholesky(A)
    Linv = np.linalg.inv(L)
    assert np.allclose(Li, Linv, rtol=1e-9, atol=1e-9 * np.abs(Linv).max())
    assert np.allclose(Y, np.linalg.solve(L, C), rtol=1e-9, atol=1e-9 * np.abs(Y).max())
    assert np.allclose(yg, np.linalg.solve(L, g), rtol=1e-9, atol=1e-9 * np.abs(yg).max())
    assert np.allclose(Y.T @ Y, C.T @ np.linalg.solve(A, C), rtol=1e-8, atol=1e-8 * np.abs(Y.T @ Y).max())
    B = A.copy()
    B[-1, -1] = -1.0                              # not positive definite: the QR branch's case
    assert not spd_reduce(B, C, g)[0]


@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_add_gram_adds_sign_times_YtY_and_keeps_M_exactly_symmetric(sign):
    """B + sign Y'Y against numpy's product (Y with exact zeros, as spd_reduce's Y has off a finger's band),
    and M[i, j] == M[j, i] bit for bit (the Schur complement pgs-sm and the certificate read)."""
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((5, 9))
    Y[rng.random(Y.shape) < 0.4] = 0.0
    B = rng.standard_normal((9, 9))
    B = B + B.T
    M = B.copy()
    add_gram(M, Y, sign)
    assert np.allclose(M, B + sign * (Y.T @ Y), rtol=0, atol=1e-13)
    assert np.array_equal(M, M.T)
