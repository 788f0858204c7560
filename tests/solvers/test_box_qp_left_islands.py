"""A large island that box-qp's compiled island call leaves after its Newton steps (kernels/box_qp_islands.py
POOR_LEFT_STEPS, the face step tried) goes to the interior point on its own block at once
(solvers/box_qp/islands.py ``_island_solves``), not through the whole method's own projected Newton
first; the answer is checked here against the KKT conditions of the box-friction LCP, computed with
numpy from the problem's data alone."""
from functools import lru_cache

import numpy as np
import pytest

import contactlab.solvers.box_qp.solver as box_qp_solver
from contactlab.kernels.box_qp import LEFT
from contactlab.kernels.box_qp_islands import POOR_LEFT_FROM, POOR_LEFT_STEPS, box_qp_islands, new_island_layouts
from contactlab.problems.islands import island_rows
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solution import Status
from contactlab.solvers import solve
from contactlab.solvers.box_qp import BoxQPOptions, _solve
from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX


@lru_cache(maxsize=1)
def _columns_problem():
    """The last problem of two resting 60-box columns (coupling "current": friction bounded by the
    normal of the same step), two islands of 720 rows, each on its CSR block in the compiled call, and
    its answer by box-qp's interior point alone at 1e-12."""
    sim = Simulator(make_scene("stack", count=60, columns=2), "box-friction", "box-qp")
    for _ in range(5):
        assert sim.step().success
    p = sim.last_problem
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)     # the interior point alone, to 1e-12
    assert ref.success
    ref.z.setflags(write=False)
    return p, ref.z


def _kkt_error(p, z, tol=1e-6):
    """The largest violation of the box-friction LCP's conditions at z, from M, q, findex and mu alone, in
    units of max|z| (bounds) and of the largest row size max_i |q_i| + |M_i| |z| (velocities): w = M z + q;
    a normal row 0 <= z _|_ w >= 0; a friction row in [-mu z_n, mu z_n], with w = 0 strictly inside
    (``tol`` of max|z| from both bounds), w >= 0 at the lower bound and w <= 0 at the upper."""
    M = p.M.toarray()
    w = M @ z + p.q
    zs = max(np.abs(z).max(), 1e-300)
    ws = (np.abs(p.q) + np.abs(M) @ np.abs(z)).max()
    f = p.findex
    lo = np.where(f < 0, p.lo, -p.mu * z[np.maximum(f, 0)])
    hi = np.where(f < 0, p.hi, p.mu * z[np.maximum(f, 0)])
    infeasible = max(np.max(lo - z), np.max(z - hi), 0.0) / zs
    at_lo, at_hi = z - lo <= tol * zs, hi - z <= tol * zs
    wrong = np.where(at_lo & at_hi, 0.0, np.where(at_lo, np.maximum(-w, 0.0),
                                                  np.where(at_hi, np.maximum(w, 0.0), np.abs(w))))
    return max(infeasible, wrong.max() / ws)


def _wrong_start(p, answer):
    """Impulses five times the answer, friction at the cone's edge, alternately the wrong way."""
    normal = p.findex < 0
    wrong = answer * 5
    rows = np.arange(p.n)
    wrong[~normal] = np.where(rows[~normal] % 2, 1.0, -1.0) * p.mu[~normal] * wrong[p.findex[~normal]]
    return wrong


def _sizes_of_calls(monkeypatch, name):
    """The sizes of the problems box-qp's Python ``name`` (``_qp``: projected Newton, ``_ipm``: the interior
    point) is called on from now on, filled as the calls happen."""
    sizes, original = [], getattr(box_qp_solver, name)

    def counted(M, q, *args, **kwargs):
        sizes.append(q.size)
        return original(M, q, *args, **kwargs)

    monkeypatch.setattr(box_qp_solver, name, counted)
    return sizes


def test_the_columns_answer_passes_the_independent_kkt_check():
    p, z = _columns_problem()
    assert _kkt_error(p, z) < 1e-6
    assert _kkt_error(p, _wrong_start(p, z)) > 1e-2       # and the check sees a wrong answer


def test_islands_left_after_their_newton_steps_take_the_interior_point_at_once(monkeypatch):
    """From impulses 10^6 times the answer with friction at the cone's edge, alternately the wrong way (a
    start on which the compiled call gives each 720-row island its Newton steps and leaves it: the first
    does not cut the error, POOR_PROGRESS; from five times the answer the POOR_LEFT_STEPS it gives them
    land them, since their solves share one factorisation):
    box-qp certifies the answer, the KKT conditions hold at it, and the Python projected Newton
    (solvers/box_qp/newton.py ``_qp``) is not run on those islands."""
    p, answer = _columns_problem()
    order, bounds = island_rows(*p.islands)
    assert np.diff(bounds).min() > POOR_LEFT_FROM
    wrong = _wrong_start(p, answer) * 1e6
    opts = BoxQPOptions()
    # the premise: the compiled call leaves every island after its Newton steps from this start
    M = p.M.tocsr()
    z, w = np.full(p.n, np.nan), np.empty(p.n)
    codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
    box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex, p.mu,
                   wrong, order, bounds, opts.tol, opts.island_iterations, opts.armijo, False, opts.max_outer, z, w,
                   codes, its, outers, p.body_groups, 64, p.n, opts.newton_steps, opts.island_poor_iterations,
                   IPM_WARM_MAX, *new_island_layouts())
    assert set(codes.tolist()) == {LEFT} and np.all((its >= 1) & (its <= POOR_LEFT_STEPS))

    newton_calls = _sizes_of_calls(monkeypatch, "_qp")
    sol = _solve(p, opts, wrong)
    assert sol.status is Status.SOLVED
    assert not [n for n in newton_calls if n > POOR_LEFT_FROM]
    assert _kkt_error(p, sol.z) < 1e-6
    # friction bounded by the same step's normal: the LCP's answers are not unique (each face's four contacts
    # are statically indeterminate, friction may carry internal loads that cancel); the vertical balance of each
    # interface is not: the normal impulses add up to the interior point's answer's
    normal = p.findex < 0
    assert abs(sol.z[normal].sum() - answer[normal].sum()) <= 1e-6 * answer[normal].sum()
    # its iterations count the compiled call's Newton steps once, and the interior point's after them
    assert sol.iterations >= its.sum()


@pytest.mark.parametrize("scale", [1.0, 1.01])
def test_islands_the_compiled_call_solves_never_reach_the_interior_point(monkeypatch, scale):
    """From the answer (and 1 % off it) the compiled call lands every island itself: no interior point."""
    p, answer = _columns_problem()
    ipm_calls = _sizes_of_calls(monkeypatch, "_ipm")
    sol = _solve(p, BoxQPOptions(), answer * scale)
    assert sol.status is Status.SOLVED and not ipm_calls
    assert _kkt_error(p, sol.z) < 1e-6
