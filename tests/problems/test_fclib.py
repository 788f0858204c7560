"""FCLIB HDF5 and Siconos FrictionContact files: reading the shipped samples, round trips, clear errors,
and the export of simulator steps."""
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

import contactlab as cl
from contactlab import data
from contactlab.problems.fclib import StepExporter, write_siconos_fc

SAMPLES = data.ROOT / "fclib"       # shipped with the package (contactlab/data/fclib)
LOCAL = SAMPLES / "fclib_local_problem_test.hdf5"
GRANULAR = SAMPLES / "fc2d_granularflowonwall_07002_00801.dat"


def test_reads_the_fclib_sample_with_its_stored_vectors():
    p = cl.load(LOCAL)
    assert isinstance(p, cl.FrictionContact) and (p.nc, p.dim) == (48, 3)
    assert np.allclose(p.mu, 0.7)
    with h5py.File(LOCAL) as f:   # W is stored as CSR (nz = -2) in this file
        g = f["fclib_local/W"]
        W = sp.csr_matrix((g["x"][:], g["i"][:], g["p"][:]), shape=(144, 144))
    assert abs(p.W - W).max() == 0.0
    assert set(p.reference) == {"u", "r"} and len(p.guesses) == 1 and p.info["title"] == "Boxes Stack"
    sol = cl.solve(p, "prox")
    assert sol.status == cl.Status.SOLVED and sol.residual <= 1e-8


def test_reads_the_siconos_2d_sparse_sample():
    p = cl.load(GRANULAR)
    assert isinstance(p, cl.FrictionContact) and (p.nc, p.dim, p.W.nnz) == (7002, 2, 125806)
    assert p.W[0, 0] == pytest.approx(818.486) and p.W[2140, 0] == pytest.approx(-101.0)
    assert p.mu[-1] == 0.5 and p.q[0] == pytest.approx(3.946463423731838560e-05)


def test_fclib_round_trip_local_and_global_with_solution(tmp_path):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    p = cl.FrictionContact(sp.csr_matrix(A @ A.T + np.eye(6)), -np.abs(rng.normal(size=6)), [0.3, 0.4])
    sol = cl.solve(p, "newton-ac")
    out = cl.save(p, tmp_path / "local.hdf5", solution={"r": sol.z, "u": sol.w}, guesses=[{"r": np.zeros(6)}])
    assert not any(f.name.startswith(".") for f in tmp_path.iterdir())   # atomic: no temporary left
    back = cl.load(out)
    assert abs(back.W - p.W).max() == 0.0 and np.array_equal(back.q, p.q) and np.array_equal(back.mu, p.mu)
    assert back.residuals(back.reference["r"], back.reference["u"]).natural <= 1e-8
    assert np.array_equal(back.guesses[0]["r"], np.zeros(6))
    M = sp.diags(rng.uniform(1, 2, 5)).tocsr()
    g = cl.GlobalFrictionContact(M, sp.csr_matrix(rng.normal(size=(5, 4))), rng.normal(size=5), -np.ones(4),
                                 [0.2, 0.3], dim=2)
    gb = cl.load(cl.save(g, tmp_path / "global.h5"))
    assert isinstance(gb, cl.GlobalFrictionContact) and gb.dim == 2
    assert abs(gb.H - g.H).max() == 0.0 and np.array_equal(gb.b, g.b) and np.array_equal(gb.q, g.q)


def test_siconos_text_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(9, 9))
    p = cl.FrictionContact(A @ A.T, rng.normal(size=9), [0.1, 0.2, 0.3])
    back = cl.load(write_siconos_fc(p, tmp_path / "p.dat"))
    np.testing.assert_array_equal(back.dense_W(), p.W)
    np.testing.assert_array_equal(back.q, p.q)


def test_unsupported_files_say_what_they_hold(tmp_path):
    rolling = tmp_path / "rolling.dat"
    rolling.write_text("5\n1\n0\n5\n5\n5 5\n" + " ".join(["1"] * 25) + "\n" + " ".join(["-1"] * 5) + "\n0.3\n0.1\n")
    with pytest.raises(cl.ProblemError, match="rolling-friction"):
        cl.load(rolling)
    odd = tmp_path / "odd.hdf5"
    with h5py.File(odd, "w") as f:
        f.create_group("fclib_rolling_local")
    with pytest.raises(cl.ProblemError, match="rolling-friction problem"):
        cl.load(odd)
    mixed = tmp_path / "mixed.hdf5"
    with h5py.File(mixed, "w") as f:
        f.create_group("fclib_local/V")
    with pytest.raises(cl.ProblemError, match="equality rows"):
        cl.load(mixed)
    short = tmp_path / "short.dat"
    short.write_text("3\n2\n0\n6\n6\n6 6\n1 2 3\n")
    with pytest.raises(cl.ProblemError, match="ends early"):
        cl.load(short)
    notes = tmp_path / "notes.hdf5"
    notes.write_text("not hdf5")
    with pytest.raises(cl.ProblemError, match="not an HDF5 file"):
        cl.load(notes)


def test_simulator_steps_export_as_fclib_problems(tmp_path):
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("stack"), "stewart-trinkle")
    exp = StepExporter(tmp_path / "steps")
    sim.add_controller(exp)
    sim.run(3 * sim.h)
    exp(sim)
    assert [f.name for f in exp.written] == ["step_00001.hdf5", "step_00002.hdf5", "step_00003.hdf5"]
    p = cl.load(exp.written[-1])
    sys = sim.last_system
    assert p.nc == sys.nc and np.allclose(p.mu, sys.mu)
    sol = cl.solve(p, "prox")
    assert sol.status == cl.Status.SOLVED
    # a resting stack: the exact-cone impulses carry the weight step by step (sum of r_n on the ground row)
    assert np.all(sol.z[::3] >= 0)
