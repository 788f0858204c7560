"""Hostile sparse matrices and files (issue 40): a malformed sparse structure (an index out of range
or negative, a decreasing index pointer, sizes that disagree) used to reach SciPy's conversions and
our compiled kernels, which read them without bound checks: heap corruption, a SIGSEGV or a false
"certified" answer. Each case now must be a ProblemError naming the argument, raised before any
kernel runs. The cases run in a child process, so a crash fails the test instead of killing pytest."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: one malformation per entry: (data, indices, indptr) of a 4 x 4 CSR matrix built with no checks
CSR_CASES = {
    "index-too-large": ([2.0] * 4, [0, 1, 2, 100000], [0, 1, 2, 3, 4]),
    "index-just-out": ([2.0] * 4, [0, 1, 2, 4], [0, 1, 2, 3, 4]),
    "negative-index": ([2.0] * 4, [0, 1, 2, -3], [0, 1, 2, 3, 4]),
    "decreasing-pointer": ([2.0] * 4, [0, 1, 2, 3], [0, 3, 1, 4, 4]),
    "pointer-past-end": ([2.0] * 4, [0, 1, 2, 3], [0, 1, 2, 3, 9]),
    "pointer-not-from-zero": ([2.0] * 4, [0, 1, 2, 3], [1, 1, 2, 3, 4]),
}

_CHILD = r"""
import json, sys, numpy as np, scipy.sparse as sp, h5py
import contactlab as cl
from contactlab.errors import ContactlabError
cases, tmp = json.loads(sys.argv[1]), sys.argv[2]

def bad_csr(data, indices, indptr, fmt="csr"):
    M = sp.csr_matrix((4, 4)).asformat(fmt)             # a valid shell, then the raw arrays swapped in (no checks)
    M.data, M.indices, M.indptr = (np.asarray(data, float), np.asarray(indices, np.int32),
                                   np.asarray(indptr, np.int32))
    return M

def attempt(label, fn):
    try:
        out = fn()
        print(json.dumps([label, "accepted", repr(out)[:80]]), flush=True)
    except ContactlabError as exc:
        print(json.dumps([label, type(exc).__name__, str(exc)]), flush=True)

for name, (data, indices, indptr) in cases.items():
    M = bad_csr(data, indices, indptr)
    attempt(f"{name}/LCP", lambda: cl.solve(cl.LCP(M, -np.ones(4)), method="lemke").status)
    attempt(f"{name}/LCP-csc", lambda: cl.LCP(bad_csr(data, indices, indptr, "csc"), -np.ones(4)))
    attempt(f"{name}/BoxedLCP", lambda: cl.solve(cl.BoxedLCP(M, -np.ones(4), -np.ones(4), np.ones(4)), "pgs").status)
    attempt(f"{name}/FrictionContact", lambda: cl.FrictionContact(M, -np.ones(4), [0.5, 0.5], dim=2))
    path = f"{tmp}/{name}.npz"
    np.savez(path, kind=np.array("LCP"), M__data=np.asarray(data, float), M__indices=np.asarray(indices),
             M__indptr=np.asarray(indptr), M__shape=np.array([4, 4]), q=-np.ones(4))
    attempt(f"{name}/npz", lambda: cl.solve(cl.load(path), method="lemke").status)
    for nz, label in ((-2, "csr"), (-1, "csc")):
        h5 = f"{tmp}/{name}-{label}.hdf5"
        with h5py.File(h5, "w") as f:
            g = f.create_group("fclib_local")
            W = g.create_group("W")
            for k, v in (("m", [4]), ("n", [4]), ("nz", [nz]), ("nzmax", [4])):
                W[k] = np.array(v, np.int32)
            W["p"], W["i"], W["x"] = np.asarray(indptr, np.int32), np.asarray(indices, np.int32), np.asarray(data)
            g["vectors/q"], g["vectors/mu"] = -np.ones(4), np.full(2, 0.5)
            g["spacedim"] = np.array([2], np.int32)
        attempt(f"{name}/fclib-{label}", lambda: cl.solve(cl.load(h5), method="prox").status)
"""


def run_child(code: str, *args, timeout=300):
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_malformed_sparse_structure_is_a_problem_error_on_every_path(tmp_path):
    res = run_child(_CHILD, json.dumps(CSR_CASES), str(tmp_path))
    assert res.returncode == 0, f"the child died (rc {res.returncode}): {res.stderr[-2000:]}"
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == len(CSR_CASES) * 7
    for label, kind, message in rows:
        assert kind == "ProblemError", (label, kind, message)
        assert "malformed" in message, (label, message)
        entry = label.split("/")[1]
        named = {"LCP": "M is", "LCP-csc": "M is", "BoxedLCP": "M is", "FrictionContact": "W is",
                 "npz": ": M is", "fclib-csr": "fclib_local/W", "fclib-csc": "fclib_local/W"}[entry]
        assert named in message, (label, message)


def test_complex_and_unrepresentable_numbers_are_refused_not_cast():
    import scipy.sparse as sp

    import contactlab as cl
    from contactlab.errors import ProblemError
    M = np.eye(3) + 0.5j
    with pytest.raises(ProblemError, match="M is complex"):
        cl.LCP(M, -np.ones(3))
    with pytest.raises(ProblemError, match="M is complex"):
        cl.LCP(sp.csr_matrix(M), -np.ones(3))
    with pytest.raises(ProblemError, match="q is complex"):
        cl.LCP(np.eye(3), -np.ones(3) * (1 + 0j))
    with pytest.raises(ProblemError, match="W is complex"):
        cl.FrictionContact(M, -np.ones(3), 0.5, dim=3)
    with pytest.raises(ProblemError, match="M must be a numeric matrix"):
        cl.LCP([[10 ** 400]], [-1.0])
    with pytest.raises(ProblemError, match="q must be a numeric vector"):
        cl.LCP([[1.0]], [10 ** 400])
    with pytest.raises(ProblemError, match="M must be a numeric matrix"):
        cl.LCP([["a", "b"], ["c", "d"]], -np.ones(2))


def test_a_valid_sparse_matrix_still_solves_after_the_checks():
    """The checks refuse only what is malformed: a CSC, COO, BSR and LIL matrix of one SPD M give
    the solution of the dense LCP (checked against the dense answer)."""
    import scipy.sparse as sp

    import contactlab as cl
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    M, q = A @ A.T + np.eye(6), rng.normal(size=6)
    ref = cl.solve(cl.LCP(M, q), "lemke")
    assert ref.status == cl.Status.SOLVED
    for fmt in ("csc", "coo", "bsr", "lil", "dia", "dok"):
        sol = cl.solve(cl.LCP(sp.csr_matrix(M).asformat(fmt), q), "lemke")
        assert sol.status == cl.Status.SOLVED and np.allclose(sol.z, ref.z, atol=1e-10), fmt


def test_malformed_fclib_triplets_and_npz_fields_are_problem_errors(tmp_path):
    import h5py

    import contactlab as cl
    from contactlab.errors import ProblemError
    path = tmp_path / "trip.hdf5"
    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_local")
        W = g.create_group("W")
        for k, v in (("m", [2]), ("n", [2]), ("nz", [2]), ("nzmax", [2])):
            W[k] = np.array(v, np.int32)
        W["p"], W["i"], W["x"] = np.array([0, 5], np.int32), np.array([0, 1], np.int32), np.ones(2)
        g["vectors/q"], g["vectors/mu"] = -np.ones(2), np.full(1, 0.5)
        g["spacedim"] = np.array([2], np.int32)
    with pytest.raises(ProblemError, match="triplet index outside"):
        cl.load(path)
    npz = tmp_path / "bad.npz"
    np.savez(npz, kind=np.array("LCP"), M__data=np.ones(2), M__indices=np.array([0, 1]),
             M__indptr=np.array([0, 1, 2]), M__shape=np.array([2.5, 2]), q=-np.ones(2))
    with pytest.raises(ProblemError, match="M__shape must be two integers"):
        cl.load(npz)
    np.savez(npz, kind=np.array("LCP"), M=np.eye(2) * (1 + 1j), q=-np.ones(2))
    with pytest.raises(ProblemError, match="complex"):
        cl.load(npz)
    npz.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ProblemError, match="not a .npz archive"):
        cl.load(npz)
