"""API mistakes found by issue 40's second campaign (docs/robustness.md), each a contactlab error
naming the argument: before, a FIFO or /dev/zero given to ``load`` blocked or read forever, a path
given as bytes or None raised TypeError, ``save`` to /proc raised FileNotFoundError from its
temporary file, ``certify='x'`` raised TypeError from a comparison, and a registered solver that
returned something other than a Solution raised AttributeError."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import contactlab as cl
from contactlab.errors import ParamError, ProblemError

ROOT = Path(__file__).resolve().parents[2]


def test_load_refuses_special_files_without_reading_them(tmp_path):
    """In a child with a time limit: a FIFO with no writer blocked open() for ever, /dev/zero never ended."""
    fifo = tmp_path / "p.npz"
    os.mkfifo(fifo)
    zero = tmp_path / "z.dat"
    zero.symlink_to("/dev/zero")
    code = ("import sys, contactlab as cl\nfor p in sys.argv[1:]:\n    try: cl.load(p)\n"
            "    except cl.ProblemError as e: print(e)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, "-c", code, str(fifo), str(zero)], capture_output=True, text=True,
                       timeout=120, env=env)
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and len(lines) == 2, p.stderr[-2000:]
    assert all("is not a regular file" in ln for ln in lines), lines


def test_load_and_save_name_a_path_of_the_wrong_type(tmp_path):
    lcp = cl.LCP(np.eye(2), -np.ones(2))
    for bad in (b"/tmp/x.npz", None, 3):
        with pytest.raises(ParamError, match="load: path must be a str or os.PathLike"):
            cl.load(bad)
        with pytest.raises(ParamError, match="save: path must be a str or os.PathLike"):
            cl.save(lcp, bad)
    loop = tmp_path / "a.npz"
    loop.symlink_to(tmp_path / "b.npz")
    (tmp_path / "b.npz").symlink_to(loop)
    with pytest.raises(ProblemError, match="symbolic links"):
        cl.load(loop)


def test_save_checks_its_target_before_writing(tmp_path):
    lcp = cl.LCP(np.eye(2), -np.ones(2))
    with pytest.raises(ParamError, match=r"save: path /proc/x\.npz: cannot write there"):
        cl.save(lcp, "/proc/x.npz")
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(ParamError, match="is a directory"):
        cl.save(lcp, tmp_path / "d.npz")
    fc = cl.FrictionContact(np.eye(3), -np.ones(3), [0.5])
    with pytest.raises(ParamError, match="cannot write there"):
        cl.save(fc, "/proc/x.hdf5")
    with pytest.raises(ProblemError, match=r"save writes \.npz files; got '.*x\.xyz'"):
        cl.save(lcp, tmp_path / "x.xyz")


@pytest.mark.parametrize("certify", [-1.0, float("nan"), float("inf"), "x", None, True])
def test_certify_must_be_a_finite_threshold(certify):
    """certify=inf would have certified any finite answer; NaN or < 0 none; 'x' raised TypeError."""
    with pytest.raises(ParamError, match="certify must be a finite relative residual >= 0"):
        cl.solve(cl.LCP(np.eye(2), -np.ones(2)), "lemke", certify=certify)
    assert cl.solve(cl.LCP(np.eye(2), -np.ones(2)), "lemke", certify=0).status == cl.Status.SOLVED


def test_a_registered_solver_is_held_to_the_certificate():
    from contactlab.solution import Solution
    from contactlab.solvers.registry import _REGISTRY

    @cl.register("hostile-none", problems=(cl.LCP,))
    def nothing(p, opts, warm):
        return None

    @cl.register("hostile-short", problems=(cl.LCP,))
    def short(p, opts, warm):
        return Solution(z=np.ones(5), w=np.ones(5), status=cl.Status.SOLVED)

    @cl.register("hostile-liar", problems=(cl.LCP,))
    def liar(p, opts, warm):
        return Solution(z=np.ones(2), w=np.ones(2), status=cl.Status.SOLVED)
    try:
        p = cl.LCP(np.eye(2), -np.ones(2))
        with pytest.raises(ParamError, match="method 'hostile-none' returned a NoneType, not a Solution"):
            cl.solve(p, "hostile-none")
        with pytest.raises(cl.ContactlabError, match="hostile-short"):
            cl.solve(p, "hostile-short")
        assert cl.solve(p, "hostile-liar").status == cl.Status.SOLVED        # z = (1, 1) is the answer
        assert cl.solve(cl.LCP(np.eye(2), [-2.0, -2.0]), "hostile-liar").status == cl.Status.NUMERICAL_FAILURE
    finally:
        for name in ("hostile-none", "hostile-short", "hostile-liar"):
            _REGISTRY.pop(name, None)


def test_an_fclib_file_with_a_group_where_a_dataset_belongs_is_a_problem_error(tmp_path):
    """fclib_local/vectors/q a group: AttributeError ('Group' object has no attribute 'dtype') before."""
    import h5py
    import scipy.sparse as sp
    path = cl.save(cl.FrictionContact(sp.csr_matrix(np.eye(6) * 2), -np.ones(6), [0.5, 0.5]), tmp_path / "f.hdf5")
    with h5py.File(path, "a") as f:
        del f["fclib_local/vectors/q"]
        f.create_group("fclib_local/vectors/q")
    with pytest.raises(ProblemError, match="malformed FCLIB file"):
        cl.load(path)
