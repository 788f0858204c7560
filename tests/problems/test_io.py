"""Reading Siconos' LCP .dat files (dense and sparse-block storage) and .npz round trips."""
import numpy as np
import pytest
import scipy.sparse as sp

import contactlab as cl
from contactlab import ProblemError
from contactlab.problems.generators import box_stack_factored, random_p_matrix
from contactlab.problems.sbm import read_sparse_block, write_sparse_block

# A 5 x 5 matrix in 2 + 3 blocks with three stored blocks (0,0), (0,1), (1,1), typed by hand in the
# layout of Siconos' SBM_write_in_file: nbblocks, blocknumber0/1, cumulative block sizes, filled1/2,
# index1_data, index2_data, then "k" and each block column-major.
SBM_FILE = """\
5
1 5 5
3
2 2
2 5
2 5
3 3
0 2 3
0 1 1
0
 4.0 1.0
 1.0 5.0
1
 0.5 0.0  -1.0 2.0  0.0 3.0
2
 6.0 0.0 1.0
 0.0 7.0 0.0
 1.0 0.0 8.0
-1.0 2.0 -3.0 0.5 -0.25
this trailing text is ignored
"""

EXPECTED = np.array([
    [4.0, 1.0, 0.5, -1.0, 0.0],
    [1.0, 5.0, 0.0, 2.0, 3.0],
    [0.0, 0.0, 6.0, 0.0, 1.0],
    [0.0, 0.0, 0.0, 7.0, 0.0],
    [0.0, 0.0, 1.0, 0.0, 8.0],
])


def test_sparse_block_dat_file_is_read_as_siconos_lays_it_out(tmp_path):
    path = tmp_path / "sbm.dat"
    path.write_text(SBM_FILE)
    P = cl.load(path)
    assert isinstance(P, cl.LCP) and P.is_sparse
    assert np.array_equal(P.M.toarray(), EXPECTED)
    assert np.array_equal(P.q, [-1.0, 2.0, -3.0, 0.5, -0.25])


def test_dense_dat_file_is_column_major(tmp_path):
    M = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, -1.0], [0.0, 1.0, 4.0]])
    q = np.array([-1.0, 0.0, 2.0])
    text = "3\n0 3 3\n3 3\n" + " ".join(repr(float(v)) for v in M.T.ravel()) + "\n" + " ".join(repr(float(v)) for v in q) + "\n1 2 3\n"
    path = tmp_path / "dense.dat"
    path.write_text(text)
    P = cl.load(path)
    assert not P.is_sparse and np.array_equal(P.M, M) and np.array_equal(P.q, q)


@pytest.mark.parametrize("seed", range(3))
def test_writer_and_reader_are_inverse_on_random_block_structures(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 4, size=5)
    n = int(sizes.sum())
    A = rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.3)
    tokens = write_sparse_block(A, sizes) + ["tail"]
    M, pos = read_sparse_block(tokens, 0, "mem", shape=(n, n))
    assert tokens[pos] == "tail"
    assert np.array_equal(M.toarray(), A)


def test_sparse_block_reader_rejects_broken_files():
    good = SBM_FILE.split()[4:]  # the matrix tokens after "n storage rows cols"
    with pytest.raises(ProblemError, match="block numbering"):
        bad = list(good)
        bad[bad.index("0", 14)] = "7"          # first block label
        read_sparse_block(bad, 0, "bad.dat")
    with pytest.raises(ProblemError, match="ends early"):
        read_sparse_block(good[:20], 0, "short.dat")
    with pytest.raises(ProblemError, match="filled1"):
        bad = list(good)
        bad[7] = "4"                           # filled1
        read_sparse_block(bad, 0, "bad.dat")
    with pytest.raises(ProblemError, match="no blocks"):
        read_sparse_block(["0"], 0, "empty.dat")
    M, pos = read_sparse_block(["0"], 0, "empty.dat", shape=(2, 2))
    assert M.shape == (2, 2) and M.nnz == 0 and pos == 1


def test_dat_header_errors_are_clear(tmp_path):
    path = tmp_path / "x.dat"
    path.write_text("3\n7 3 3\n")
    with pytest.raises(ProblemError, match="storage type 7"):
        cl.load(path)


def test_npz_round_trip_dense_sparse_and_factored(tmp_path):
    rng = np.random.default_rng(4)
    P = random_p_matrix(6, rng)
    cl.save(P, tmp_path / "p.npz")
    Q = cl.load(tmp_path / "p.npz")
    assert np.array_equal(Q.M, P.M) and np.array_equal(Q.q, P.q)

    S = cl.LCP(sp.random(30, 30, density=0.1, random_state=1, format="csr") + sp.eye(30), rng.standard_normal(30))
    cl.save(S, tmp_path / "s.npz")
    T = cl.load(tmp_path / "s.npz")
    assert T.is_sparse and (abs(T.M - S.M)).max() == 0 and np.array_equal(T.q, S.q)

    F = box_stack_factored(4, rng)
    cl.save(F, tmp_path / "f.npz")
    G = cl.load(tmp_path / "f.npz")
    assert isinstance(G, cl.FactoredLCP)
    assert np.array_equal(G.N, F.N) and np.array_equal(G.M, F.M) and np.allclose(G.q, F.q)


def test_files_in_the_layout_of_siconos_own_test_data(tmp_path):
    """Token layouts as in Siconos' numerics/src/LCP/test/data (lcp_deudeu_block.dat: one 2x2 block,
    tab-separated; lcp_CPS_1.dat: dense, with remarks after q)."""
    block = tmp_path / "deudeu_block.dat"
    block.write_text("2\n1\n2\n2\n1\n1\n1\n2\t\n2\t\n2\n1\n0\t1\t\n0\t\n0\n  2.000000e+00\n  1.000000e+00\n"
                     "  1.000000e+00\n  2.000000e+00\n -5.0e+00  -6.0e+00 ")
    P = cl.load(block)
    assert np.array_equal(P.M.toarray(), [[2.0, 1.0], [1.0, 2.0]]) and np.array_equal(P.q, [-5.0, -6.0])
    z = np.linalg.solve(P.M.toarray(), -P.q)          # (4/3, 7/3) > 0 is the unique solution
    assert np.all(z > 0) and P.residuals(z).natural < 1e-12
    dense = tmp_path / "cps_1.dat"
    dense.write_text("2\n0\n2\n2\n2\t2\n1 1\n1 1\n-1 -1\n\nRemark 4.1.14 CPS 2009\nset of solution is z_1 + z_2 = 1\n")
    D = cl.load(dense)
    assert np.array_equal(D.M, np.ones((2, 2))) and np.array_equal(D.q, [-1.0, -1.0])
    assert D.residuals(np.array([0.25, 0.75])).natural == 0.0
