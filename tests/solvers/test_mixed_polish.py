"""solve()'s block-pivoting polish of a MixedLCP's lifted answer (solvers/registry.py ``_polish_mixed``,
problems/mixed.py ``MixedLCP.polish``; block principal pivoting, Judice & Pires 1994).

Fixture tests/data/trinkle_pang_gripper_mixed.npz: three MixedLCPs (drumwright eq. 4-7) of the
trinkle-pang model with Lemke on drumwright's box gripper (36 rolling contacts, mu = 100, CFM 1e-6,
34 free rows; reduced F of condition ~1e10), steps 28, 94 and 99 of
``scenarios.box_gripper.make_simulator("trinkle-pang", "lemke")``; its ``provenance`` entry says how
they were captured. Lemke certifies on the reduced LCP but its lifted answer misses the mixed
certificate (1e-6) by a small factor; the polish must make solve() certify them, and the answer it
keeps must solve the complementarity system on its own active set (checked here by an SVD
least-squares solve, not the polish's LU) with the right signs.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.linalg as sla

import contactlab as cl
from contactlab.problems import MixedLCP
from contactlab.solvers import registry

DATA = Path(__file__).resolve().parents[1] / "data" / "trinkle_pang_gripper_mixed.npz"
STEPS = (28, 94, 99)


def _problem(step: int) -> MixedLCP:
    with np.load(DATA) as d:
        return MixedLCP(*(d[f"s{step}_{name}"] for name in "ACDBgh"))


def _certificate(problem: MixedLCP, y: np.ndarray) -> float:
    r = problem.relative_residuals(y)
    return max(r.natural, r.infeasibility)


@pytest.mark.parametrize("step", STEPS)
def test_lemke_alone_misses_the_mixed_certificate_and_the_polish_passes_it(step):
    problem = _problem(step)
    reduced = cl.solve(problem.lcp_reduction()[0], "lemke")
    assert reduced.status is cl.Status.SOLVED                  # certified on F, e (eq. 9-10) ...
    assert 1e-6 < _certificate(problem, reduced.z) < 1e-3      # ... but not on the mixed problem

    sol = cl.solve(problem, "lemke")
    assert sol.status is cl.Status.SOLVED
    assert sol.info["polish"]["accepted"] and 1 <= sol.info["polish"]["rounds"] <= 6
    assert sol.info["polish"]["residual_before"] > 1e-6
    assert sol.relative_residual <= 1e-6
    assert _certificate(problem, sol.z) == pytest.approx(sol.relative_residual)

    # independent reference: on the polished answer's active set the mixed problem is a square linear
    # system; its SVD least-squares solution must be the polished y, with y_B >= 0 and w_N >= 0
    y, x = sol.z, sol.x
    A, C, D, B, g, h = problem.A, problem.C, problem.D, np.asarray(problem.B), problem.g, problem.h
    basic = np.flatnonzero(y > 0.0)
    K = np.block([[A, C[:, basic]], [D[basic], B[np.ix_(basic, basic)]]])
    u = sla.lstsq(K, -np.concatenate([g, h[basic]]), lapack_driver="gelsd")[0]
    scale = np.abs(y).max()
    assert np.abs(u[problem.p:] - y[basic]).max() <= 1e-6 * scale
    assert np.abs(u[:problem.p] - x).max() <= 1e-6 * np.abs(x).max()
    w = D @ x + B @ y + h
    free = np.setdiff1d(np.arange(problem.n), basic)
    size = max(np.abs(h).max(), np.abs(g).max())                 # the data's size (as the certificate's floor)
    assert np.all(w[free] >= -1e-6 * size)                        # complementarity's sign conditions
    assert np.abs(w[basic]).max() <= 1e-6 * size
    assert np.abs(A @ x + C @ y + g).max() <= 1e-6 * (np.abs(A) @ np.abs(x) + np.abs(C) @ np.abs(y)).max()


def test_a_miss_beyond_the_polish_factor_is_not_polished():
    problem = _problem(STEPS[0])
    sol = cl.solve(problem, "lemke", certify=1e-10, tol=1e-10)   # misses by ~1e4: a wrong answer there
    assert sol.status is cl.Status.NUMERICAL_FAILURE
    assert "polish" not in sol.info


@pytest.fixture
def near_miss():
    """A method that claims SOLVED with y = 0 for whatever MixedLCP it is given."""
    @registry.register("test-near-miss", problems=(MixedLCP,))
    def _near_miss(problem, opts, warm_start=None):
        return cl.Solution(z=np.zeros(problem.n), w=np.empty(0), status=cl.Status.SOLVED)
    yield
    del registry._REGISTRY["test-near-miss"]


def test_the_polish_cannot_help_an_infeasible_problem(near_miss):
    # x = 0, w = -y - 1 >= 0 with y >= 0 has no solution; the claim y = 0 misses by 1 (relative),
    # within POLISH_FACTOR of certify = 1e-3, so the polish runs, finds nothing and the failure stands
    problem = MixedLCP([[1.0]], [[0.0]], [[0.0]], [[-1.0]], [0.0], [-1.0])
    sol = cl.solve(problem, "test-near-miss", certify=1e-3)
    assert sol.status is cl.Status.NUMERICAL_FAILURE
    assert sol.info["polish"] == {"accepted": False, "residual_before": sol.relative_residual}
    assert np.array_equal(sol.z, [0.0])
