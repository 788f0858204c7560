"""kernels/components.py: connected components of a problem's rows against scipy."""
import numpy as np


def test_component_kernels_match_scipy_on_random_graphs():
    """kernels/components.py (row-scan search, union-find; dense and CSR) give scipy's connected
    components on random symmetric and nonsymmetric patterns with findex links."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from contactlab.kernels.components import csr_components, dense_components
    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        A = (rng.random((n, n)) < rng.uniform(0.01, 0.2)) * rng.normal(size=(n, n))
        if trial % 2:
            A = A + A.T
        fi = np.full(n, -1)
        for i in rng.integers(0, n, size=n // 4):
            j = int(rng.integers(0, n))
            if j != i:
                fi[i] = j
        rows = np.flatnonzero(fi >= 0)
        G = sp.csr_matrix((A != 0).astype(int)) + sp.csr_matrix((np.ones(rows.size), (rows, fi[rows])), shape=(n, n))
        c_ref, l_ref = connected_components(G, directed=False)
        S = sp.csr_matrix(A)
        for c, lab in (dense_components(A, fi), csr_components(S.indptr, S.indices, S.data, fi)):
            assert c == c_ref and len(set(zip(l_ref, lab))) == c_ref
