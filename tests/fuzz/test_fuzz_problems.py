"""Fuzzing the problem constructors and solve() (issue 40): hostile matrices (NaN, inf, 1e308, complex,
huge integers, wrong shapes, sparse matrices with arbitrary index arrays) and vectors. Every case
must be refused with a contactlab error or solved honestly: a SOLVED answer is re-checked from the
problem's own data in the child (tests/fuzz/harness.py); no crash, no raw exception."""
import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import failures, run_cases

NUMBERS = st.one_of(st.floats(-10, 10), st.sampled_from([0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e308, -1e308,
                                                          1e-308, 5e-324]),
                    st.floats(allow_nan=True, allow_infinity=True))


@st.composite
def dense(draw, rows=None, cols=None):
    r = draw(st.integers(0, 4)) if rows is None else rows
    c = draw(st.integers(0, 4)) if cols is None else cols
    vals = draw(st.lists(NUMBERS, min_size=r * c, max_size=r * c))
    A = np.array(vals, dtype=float).reshape(r, c)
    mode = draw(st.sampled_from(["plain", "plain", "plain", "complex", "list", "int", "huge-int"]))
    if mode == "complex":
        return A + 1j * draw(st.floats(-1, 1))
    if mode == "list":
        return A.tolist()
    if mode == "int":
        return np.clip(np.nan_to_num(A, nan=0, posinf=1, neginf=-1), -1e18, 1e18).astype(np.int64)
    if mode == "huge-int" and r and c:
        out = A.astype(object)
        out[0, 0] = 10 ** draw(st.integers(20, 400))
        return out
    return A


@st.composite
def raw_sparse(draw, n):
    """A CSR or CSC matrix whose arrays are drawn freely (indices may be out of range or negative,
    pointers may decrease), installed without SciPy's checks."""
    fmt = draw(st.sampled_from(["csr", "csc", "coo"]))
    nnz = draw(st.integers(0, 6))
    data = np.array(draw(st.lists(NUMBERS, min_size=nnz, max_size=nnz)), dtype=float)
    indices = np.array(draw(st.lists(st.integers(-3, n + 3), min_size=nnz, max_size=nnz)), dtype=np.int32)
    M = sp.csr_matrix((n, n)).asformat(fmt)
    if fmt == "coo":
        rows = np.array(draw(st.lists(st.integers(-2, n + 2), min_size=nnz, max_size=nnz)), dtype=np.int32)
        M.data, M.row, M.col = data, rows, indices
        return M
    ptr = np.array(draw(st.lists(st.integers(-1, nnz + 2), min_size=n + 1, max_size=n + 1)), dtype=np.int32)
    if draw(st.booleans()):
        ptr = np.sort(ptr)
        ptr[0] = 0
    M.data, M.indices, M.indptr = data, indices, ptr
    return M


@st.composite
def vectors(draw, n):
    k = draw(st.sampled_from([n, n, n, max(n - 1, 0), n + 1]))
    v = np.array(draw(st.lists(NUMBERS, min_size=k, max_size=k)), dtype=float)
    return v if draw(st.integers(0, 9)) else v.astype(complex)


@st.composite
def good_spd(draw, n):
    seed = draw(st.integers(0, 2 ** 31))
    A = np.random.default_rng(seed).normal(size=(n, n))
    scale = draw(st.sampled_from([1.0, 1e-150, 1e150, 1e300]))
    return (A @ A.T + np.eye(n)) * scale, np.random.default_rng(seed + 1).normal(size=n) * scale


@st.composite
def problem_cases(draw):
    n = draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["LCP", "LCP", "BoxedLCP", "FrictionContact"]))
    source = draw(st.sampled_from(["dense", "sparse", "spd"]))
    if source == "dense":
        M = draw(dense(n, n)) if draw(st.integers(0, 4)) else draw(dense())
    elif source == "sparse":
        M = draw(raw_sparse(n))
    else:
        M, q_good = draw(good_spd(n))
    q = q_good if source == "spd" and draw(st.booleans()) else draw(vectors(n))
    if kind == "LCP":
        return ("LCP", (M, q), {}, None)
    if kind == "BoxedLCP":
        lo = np.array(draw(st.lists(st.sampled_from([0.0, -1.0, -np.inf, 0.5, np.nan]), min_size=n, max_size=n)))
        hi = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, np.inf, 0.5, -np.inf]), min_size=n, max_size=n)))
        return ("BoxedLCP", (M, q, lo, hi), {}, None)
    mu = draw(st.sampled_from([0.5, -0.1, np.nan, [0.3]]))
    return ("FrictionContact", (M, q, mu), {"dim": draw(st.sampled_from([1, 2, 3]))}, None)


def collect(strategy, n: int) -> list:
    """``n`` examples of ``strategy``, drawn by hypothesis (fixed examples: tests/conftest.py)."""
    out = []
    if n <= 0:
        return out

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(x):
        out.append(x)
    draw()
    return out


def test_fuzz_problem_constructors_and_solve():
    """On main before issue 40 these cases gave 3 crashes (SIGSEGV, two heap-corruption aborts)
    and 2 raw OverflowErrors."""
    cases = collect(problem_cases(), 120)
    results = run_cases("problem", cases)
    assert len(results) == len(cases)
    bad = failures(results, cases)
    assert not bad, bad[:5]
    # the suite exercises both sides: answers accepted and bad input refused
    outcomes = {r[1] for r in results}
    assert {"ok", "refused"} <= outcomes
