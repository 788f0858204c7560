"""Lemke on badly scaled LCPs: the symmetric equilibration of solvers/lemke.py (z = D y,
M -> D M D, q -> D q), its answer certified on the unscaled problem, checked against references
that do not use it (a constructed solution, enumeration, an LP feasibility check by HiGHS)."""
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import contactlab as cl
from contactlab.kernels.lemke import equilibrate_symmetric
from contactlab.solvers.lemke import equilibration

DATA = Path(__file__).parents[1] / "data"


def _check_lcp(M, q, z, tol):
    """The LCP conditions computed here with NumPy, relative to the problem's own magnitudes."""
    w = M @ z + q
    scale_w = np.abs(q) + np.abs(M) @ np.abs(z)
    assert np.all(z >= -tol * max(np.abs(z).max(), 1e-300))
    assert np.all(w >= -tol * scale_w)
    assert np.all(np.minimum(z / max(np.abs(z).max(), 1e-300), w / np.maximum(scale_w, 1e-300)) <= tol)


def _scaled_problem(rng, n, decades, symmetric_only=False):
    """A positive definite (nonsymmetric: SPD + skew, so a P-matrix with one solution) LCP with a
    constructed solution z* (about half its entries zero, w* complementary), then its units changed
    by rows and columns spread over ``decades`` orders of magnitude: M' = R M C, q' = R q, whose
    one solution is y* = C^-1 z* (row scaling keeps z, column scaling maps it). Returns the scaled
    (M', q', y*), the unscaled (M, q) and C's diagonal c."""
    A = rng.normal(size=(n, n))
    S = rng.normal(size=(n, n))
    M = A @ A.T / n + 0.05 * np.eye(n) + (S - S.T) / np.sqrt(n)
    zs = np.where(rng.random(n) < 0.5, rng.uniform(0.1, 2.0, n), 0.0)
    ws = np.where(zs > 0, 0.0, rng.uniform(0.1, 2.0, n))
    q = ws - M @ zs
    c = 10.0 ** rng.uniform(-decades / 2, decades / 2, n)
    r = c if symmetric_only else 10.0 ** rng.uniform(-decades / 2, decades / 2, n)
    return r[:, None] * M * c[None, :], r * q, zs / c, (M, q), c


@pytest.mark.parametrize("symmetric", [True, False])
def test_equilibration_balances_rows_and_columns_with_powers_of_two(symmetric):
    rng = np.random.default_rng(3)
    for n in (1, 5, 40):
        M = _scaled_problem(rng, n, 10)[0]
        M[0, :] = 0.0          # a zero row keeps a finite scaling (its column is not zero)
        R, C = equilibration(M, symmetric)
        if symmetric:
            assert R is C
        for D in (R, C):
            assert np.all(D > 0) and np.all(np.isfinite(D))
            np.testing.assert_array_equal(np.log2(D), np.round(np.log2(D)))   # exact powers of two
        S = np.abs(R[:, None] * M * C[None, :])
        rows, cols = S.max(axis=1), S.max(axis=0)
        m = [np.maximum(rows, cols)] if symmetric else [rows, cols]
        for x in m:
            assert np.all(x[x > 0] >= 0.5 - 1e-12) and np.all(x <= 2.0 + 1e-12)
    D = np.empty(3)
    equilibrate_symmetric(np.zeros((3, 3)), D, np.empty(3))
    np.testing.assert_array_equal(D, 1.0)   # nothing to scale


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [8, 40])
def test_badly_scaled_p_matrix_lcp_solved_right(seed, n):
    """Rows and columns scaled by 1e-5..1e5 (symmetric, a change of units, for even seeds; rows and
    columns independently for odd ones): Lemke certifies, on the problem it was given, the one
    solution, which the constructed z* and (n = 8) enumeration of the problem before its scaling,
    mapped by C^-1, confirm (enumeration of the scaled problem itself is no reference: the normwise
    residual lets it certify a basis whose tiny-unit component is off)."""
    rng = np.random.default_rng(seed)
    M, q, ys, (M1, q1), c = _scaled_problem(rng, n, 10, symmetric_only=seed % 2 == 0)
    sol = cl.solve(cl.LCP(M, q), "lemke")
    assert sol.status is cl.Status.SOLVED and sol.relative_residual <= 1e-8
    _check_lcp(M, q, sol.z, 1e-8)
    floor = 1e-9 * np.abs(ys[ys > 0]).min()      # the zero entries: below the smallest unit
    assert np.all(np.abs(sol.z - ys) <= 1e-6 * np.abs(ys) + floor)
    if n <= 10:
        ref = cl.solve(cl.LCP(M1, q1), "enumerate")
        assert ref.success
        assert np.all(np.abs(sol.z - ref.z / c) <= 1e-6 * np.abs(ys) + floor)


@pytest.mark.parametrize("step", [30, 70])
def test_recorded_hand5_pyramid_lcp_certified(step):
    """A Stewart-Trinkle LCP of the five-finger hand (arechavaleta eq. 15: joints eliminated, 8-edge
    pyramid; motor rows ~1e5 beside contact rows with cfm 1e-6, cond ~1e11). HiGHS shows the feasible
    set {z >= 0, M z + q >= 0} nonempty, so Lemke (copositive-plus M) must not end in a ray; without
    the equilibration it does. With it: SOLVED, the conditions checked here on the unscaled (M, q)."""
    data = np.load(DATA / f"hand5_pyramid_step{step}.npz")
    M, q = data["M"], data["q"]
    n = q.size
    lp = linprog(np.zeros(n), A_ub=-M, b_ub=q, bounds=[(0, None)] * n, method="highs")
    assert lp.status == 0           # feasible (an independent solver)
    plain = cl.solve(cl.LCP(M, q), "lemke", equilibrate="never", regularize=False, pivot_retries=())
    assert not plain.success        # the unscaled run fails on this problem (why equilibrate)
    sol = cl.solve(cl.LCP(M, q), "lemke")
    assert sol.status is cl.Status.SOLVED and sol.relative_residual <= 1e-8
    assert "equilibrated" in sol.info
    _check_lcp(M, q, sol.z, 1e-8)
    first = cl.solve(cl.LCP(M, q), "lemke", equilibrate="first")
    assert first.success
    _check_lcp(M, q, first.z, 1e-8)


def test_equilibrate_option_checked():
    with pytest.raises(cl.errors.ParamError, match="equilibrate"):
        cl.solve(cl.LCP(np.eye(2), -np.ones(2)), "lemke", equilibrate="yes")


def test_refinement_on_the_unscaled_problem_recovers_the_basis_solution():
    """solvers/lemke.py ``refine_on_original``: from a scaled answer perturbed by 1e-7 (relative) the
    basis it reads (z_i basic where y_i > w'_i) is re-solved on the unscaled (M, q), giving the
    constructed solution to rounding; a singular basis block gives None (the caller keeps its answer)."""
    from contactlab.solvers.lemke import refine_on_original
    rng = np.random.default_rng(11)
    M, q, ys, _, _ = _scaled_problem(rng, 30, 10, symmetric_only=True)
    R, C = equilibration(M)
    Ms = R[:, None] * M * C[None, :]
    y = ys / C * (1 + 1e-7 * rng.standard_normal(30))     # the scaled problem's solution, perturbed
    z = refine_on_original(M, q, R, C, Ms, y)
    floor = 1e-12 * np.abs(ys[ys > 0]).min()
    assert np.all(np.abs(z - ys) <= 1e-10 * np.abs(ys) + floor)
    assert refine_on_original(np.zeros((2, 2)), -np.ones(2), np.ones(2), np.ones(2), np.zeros((2, 2)),
                              np.ones(2)) is None
