"""Projected Newton on an island's CSR block (kernels/box_qp.py ``projected_newton`` with sptr given): the
face step's product M dh over the held rows alone (M symmetric: the held rows' entries scattered) against
numpy's product and the same face step on the dense block, and w carried from step to step (w + M dz of the
accepted step, the stopping test made on w = M z + q recomputed) against numpy's M z + q and the
interior point's minimiser, on an island of stacked box columns with its friction bounds tightened (rows
held at a bound for the face step to carry)."""
import numpy as np

import contactlab.solvers.box_qp as BQ
from contactlab.kernels.box_qp import _face_step, box_relative_error, new_factor_cache, no_csr, projected_newton
from contactlab.kernels.box_qp_panels import new_panel_state
from contactlab.solvers import solve
from tests.kernels.test_box_qp_groups import _island_structures, _stacked_columns_problem


def _island(count=60, columns=2):
    _, p = _stacked_columns_problem(count=count, columns=columns, steps=5)
    idx, csr, groups, A = next(_island_structures(p, p.body_groups))
    return p, idx, csr, groups, A


def _box_qp(p, idx, A):
    """The island's q with static bounds: its friction rows bounded by 0.05 mu times the normal of box-qp's
    certified answer (coupled_bounds): a box QP on the island's matrix whose minimiser holds friction rows at
    a bound (a resting column's friction is near 0, under mu itself none would be). Returns (q, lo, hi, the
    answer clipped into them)."""
    from contactlab.kernels.box_qp import coupled_bounds
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-10)
    at = np.full(p.n, -1, dtype=np.int64)
    at[idx] = np.arange(idx.size)
    fk = np.where(p.findex[idx] >= 0, at[np.maximum(p.findex[idx], 0)], -1).astype(np.int64)
    lo, hi = np.empty(idx.size), np.empty(idx.size)
    coupled_bounds(p.lo[idx], p.hi[idx], fk, 0.05 * p.mu[idx], ref.z[idx], lo, hi)
    return p.q[idx], lo, hi, np.clip(ref.z[idx], lo, hi)


def test_face_step_on_the_csr_block_is_the_dense_blocks():
    """_face_step from the answer clipped into the tightened bounds (friction rows held), on the island's CSR block (M dh over the held rows,
    panel solves) and on its dense block (numpy's product, grouped dense solves): the same held rows and the
    same step to rounding; and its free rows solve M_FF d_F = -(w_F + M_FH d_H) as numpy computes it."""
    p, idx, (sptr, sidx, sval), (grp, gstep, nbr, nnb), A = _island()
    q, lo, hi, z0 = _box_qp(p, idx, A)
    w = A @ z0 + q
    eps = 1e-3 * np.abs(z0).max()
    out = []
    for csr in (True, False):
        d, held = np.empty(idx.size), np.empty(idx.size, dtype=np.bool_)
        parts = (sptr, sidx, sval) if csr else no_csr()
        M = np.empty((0, 0)) if csr else np.ascontiguousarray(A)
        ok, _ = _face_step(M, z0, w, lo, hi, eps, d, held, *new_factor_cache(0 if csr else idx.size), grp, gstep,
                           nbr, nnb, *parts, new_panel_state(idx.size if csr else 0))
        assert ok
        out.append((d.copy(), held.copy()))
    (d1, h1), (d2, h2) = out
    assert 0 < h1.sum() < idx.size and np.array_equal(h1, h2)
    # the block is ill-conditioned (cfm ~1e-8 on a face's twist): the steps agree in M d to rounding
    size = np.abs(w).max() + np.abs(A).max() * np.abs(d2).max()
    assert np.abs(A @ (d1 - d2)).max() <= 1e-9 * size
    F = ~h1
    assert np.all((z0 + d1)[h1] == np.where(z0[h1] + d1[h1] <= 0.0, lo[h1], hi[h1]))   # held rows at a bound
    # the last of FACE_SOLVES leaves rows it carries across to the line search: the solve itself is exact
    r = A[np.ix_(F, F)] @ d1[F] + w[F] + A[np.ix_(F, ~F)] @ d1[~F]
    assert np.abs(r).max() <= 1e-9 * size


def test_carried_w_is_m_z_plus_q_and_the_answer_the_minimiser():
    """projected_newton on the CSR block from the answer perturbed by 5 % (several Newton steps):
    converged, its w is M z + q as numpy computes it (the stopping test made on w recomputed, not the
    carried one), certified on that w by the scale-free residual, and the interior point's minimiser (SPD:
    unique) to the tolerance."""
    from contactlab.problems import BoxedLCP
    p, idx, (sptr, sidx, sval), (grp, gstep, nbr, nnb), A = _island()
    opts = BQ.BoxQPOptions()
    q, lo, hi, z = _box_qp(p, idx, A)
    z = np.clip(z * (1.0 + 5e-2 * np.random.default_rng(5).standard_normal(idx.size)), lo, hi)
    w = np.empty(idx.size)
    ok, its, _ = projected_newton(np.empty((0, 0)), q, lo, hi, z, w, opts.tol, 50, opts.armijo, False,
                                  np.empty((9, idx.size)), *new_factor_cache(0), False, grp, gstep, nbr, nnb, 50,
                                  np.inf, sptr, sidx, sval, new_panel_state(idx.size), True)
    assert ok and its >= 2
    wn = A @ z + q
    assert np.abs(w - wn).max() <= 1e-12 * (np.abs(q).max() + np.abs(A).max() * np.abs(z).max())
    t = np.abs(q) + np.abs(wn - q)
    assert box_relative_error(z, wn, lo, hi, q, t, np.empty((4, idx.size))) <= opts.tol
    ref = solve(BoxedLCP(A, q, lo, hi), "box-qp", algorithm="ipm", tol=1e-10)
    # (z itself is determined only to cfm's conditioning along each face's twist: its w, M z + q, is compared)
    size = np.abs(q).max() + np.abs(A).max() * np.abs(z).max()
    assert ref.success and np.abs(wn - (A @ ref.z + q)).max() <= 1e-6 * size
