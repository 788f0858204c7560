"""kernels/csr_blocks.py: principal blocks of CSR matrices against scipy's slices."""
import numpy as np
import scipy.sparse as sp


def test_csr_sub_block_is_scipys_slice():
    """csr_sub_block (box-qp's sliced free blocks and sparse islands): the entries of
    scipy's M[F][:, F], canonical CSR (sorted, no duplicates), on random patterns and row sets."""
    from contactlab.kernels.csr_blocks import csr_sub_block
    from contactlab.mechanics.system import csr_of
    rng = np.random.default_rng(9)
    for t in range(60):
        n = int(rng.integers(1, 90))
        A = sp.random(n, n, density=float(rng.uniform(0.02, 0.3)), random_state=t, format="csr")
        A.sort_indices()
        F = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
        B = csr_of(*csr_sub_block(A.indptr, A.indices, A.data, F, n), (F.size, F.size))
        B.check_format(full_check=True)
        R = A[F][:, F]
        assert B.nnz == R.nnz and np.array_equal(B.toarray(), R.toarray())


def test_dense_block_and_masked_values_are_scipys():
    """csr_dense_block is M[F][:, F] dense; csr_masked keeps M's pattern with the entries of a held
    row or column zeroed but its diagonal (M_FF embedded in M's pattern)."""
    from contactlab.kernels.csr_blocks import csr_dense_block, csr_masked, diagonal_positions
    rng = np.random.default_rng(3)
    for t in range(30):
        n = int(rng.integers(1, 60))
        A = sp.random(n, n, density=float(rng.uniform(0.05, 0.4)), random_state=t, format="csr") + sp.eye(n, format="csr")
        A = (A + A.T).tocsr()
        A.sort_indices()
        F = np.sort(rng.choice(n, size=int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
        np.testing.assert_array_equal(csr_dense_block(A.indptr, A.indices, A.data, F, n), A[F][:, F].toarray())
        free = np.zeros(n, dtype=np.bool_)
        free[F] = True
        vals = csr_masked(A.indptr, A.indices, A.data, free)
        ref = A.toarray() * np.outer(free, free)
        ref[~free, ~free] = A.diagonal()[~free]
        np.testing.assert_array_equal(sp.csr_matrix((vals, A.indices, A.indptr), shape=A.shape).toarray(), ref)
        at = diagonal_positions(A.indptr, A.indices)
        np.testing.assert_array_equal(A.data[at], A.diagonal())
