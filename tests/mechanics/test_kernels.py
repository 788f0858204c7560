"""mechanics/kernels.py: the compiled per-body terms of a step against their formulas."""
import numpy as np
import pytest


def test_kinetic_gain_is_the_quadratic_form():
    """mechanics/kernels.py kinetic_gain (the step's contact energy gain) equals
    1/2 (a'Ma - b'Mb) with a, b the weighted velocities, on a block-diagonal CSR M with a body left out."""
    import scipy.sparse as sp
    from contactlab.mechanics.kernels import kinetic_gain
    rng = np.random.default_rng(6)
    blocks = []
    for _ in range(4):
        B = rng.normal(size=(6, 6))
        blocks.append(B @ B.T + np.eye(6))
    M = sp.block_diag(blocks, format="csr")
    a, b = rng.normal(size=24), rng.normal(size=24)
    w = np.ones(24)
    w[12:18] = 0.0
    ref = 0.5 * ((a * w) @ (M @ (a * w)) - (b * w) @ (M @ (b * w)))
    assert kinetic_gain(M.indptr, M.indices, M.data, a, b, w) == pytest.approx(ref, rel=1e-13, abs=1e-13)
