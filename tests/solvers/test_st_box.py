"""solvers/st_box.py: the Stewart-Trinkle pyramid (d = 4) solved as box friction in 45-degree axes.

References independent of the method: the pyramid's set of friction impulses from a linear
programme (scipy's HiGHS), the pyramid LCP's own answer by Lemke (same v+ up to uniqueness), and
solve()'s certificate on the pyramid LCP itself."""
import numpy as np
import pytest
from scipy.optimize import linprog

from contactlab.models import stewart_trinkle
from contactlab.problems import LCP, ProblemStructure
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solution import Status
from contactlab.solvers import solve
from contactlab.solvers.registry import choose_method
from contactlab.solvers.st_box import AUTO_MIN_ROWS, box_of_pyramid, pyramid_contacts, pyramid_of_box


def _in_pyramid(f, bound):
    """Whether f = sum_j beta_j d_j with beta >= 0, sum beta <= bound (d_j = +t1, +t2, -t1, -t2): an LP."""
    D = np.array([[1.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, -1.0]])
    r = linprog(np.zeros(4), A_ub=np.ones((1, 4)), b_ub=[bound], A_eq=D, b_eq=f, bounds=[(0, None)] * 4,
                method="highs")
    return r.status == 0


def test_the_four_direction_pyramid_is_the_box_of_half_width_mu_cn_over_sqrt2_in_45_degree_axes():
    """The set {sum beta_j d_j : beta >= 0, sum beta <= mu c_n} (an LP feasibility test) is the box
    |g1|, |g2| <= mu c_n / sqrt(2) with g1 = (f1 + f2)/sqrt(2), g2 = (f1 - f2)/sqrt(2): the same answer
    on points just inside and just outside every side and vertex, and on random points."""
    rng = np.random.default_rng(3)
    bound = 0.7
    pts = [bound * np.array(v) * s for v in ((1, 0), (0, 1), (-1, 0), (0, -1), (0.5, 0.5), (-0.3, 0.7))
           for s in (1 - 1e-6, 1 + 1e-6)]
    pts += list(rng.uniform(-1.2 * bound, 1.2 * bound, (200, 2)))
    for f in pts:
        g = np.array([f[0] + f[1], f[0] - f[1]]) / np.sqrt(2)
        assert _in_pyramid(f, bound) == bool(np.all(np.abs(g) <= bound / np.sqrt(2))), f
    # the box is not the one of half-width mu c_n in the pyramid's own axes (|f1|, |f2| <= mu c_n)
    assert not _in_pyramid(np.array([0.9, 0.9]) * bound, bound)


def _pyramid_problems(scene, steps, setup=None):
    """(system, problem) of each step of ``scene`` under Stewart-Trinkle + Lemke."""
    sim = Simulator(scene, "stewart-trinkle", "lemke")
    if setup:
        setup(sim)
    out = []
    for _ in range(steps):
        assert sim.step().success
        if sim.last_problem.n:
            out.append((sim.last_system, sim.last_problem))
    return out


def _slide(sim):
    """Every box pushed sideways at 30 degrees off the pyramid's axes (their friction at a face or vertex)."""
    for name in sim.model.names:
        if sim.model.dof_start[sim.model.index(name)] >= 0:
            sim.set_velocity(name, linear=[0.8 * np.cos(0.5), 0.8 * np.sin(0.5), 0.0], angular=[0.0, 0.0, 1.5])


@pytest.mark.parametrize("scene, steps, setup", [
    (lambda: make_scene("stack", count=3), 10, None),
    (lambda: make_scene("stack", count=2), 12, _slide),
    (lambda: make_scene("pile", count=8), 30, None),
])
def test_the_mapped_answer_solves_the_pyramid_lcp_with_lemkes_velocities(scene, steps, setup):
    """On resting stacks, stacks pushed into sliding and a falling pile: st-box's answer is
    certified by solve() on the pyramid LCP itself, and its v+ (models/stewart_trinkle.py recover) is
    Lemke's on the same LCP to 1e-6 of the speeds (v+ is unique where the pyramid LCP's c_n, f are
    up to the degenerate contacts' distribution)."""
    for sys, problem in _pyramid_problems(scene(), steps, setup):
        a, b = solve(problem, "st-box"), solve(problem, "lemke")
        assert a.status is Status.SOLVED and b.status is Status.SOLVED
        assert a.relative_residual <= 1e-6
        va = stewart_trinkle.recover(sys, problem, a).v_next
        vb = stewart_trinkle.recover(sys, problem, b).v_next
        assert np.max(np.abs(va - vb)) <= 1e-6 * max(1.0, np.max(np.abs(vb)))


def test_box_problem_and_mapping_are_the_pyramid_rows_turned():
    """box_of_pyramid's matrix is P M P' on the [c_n; beta] rows (P: the normals, and (beta_0 +- beta_1)
    / sqrt(2)), its bounds mu/sqrt(2) coupled to each contact's normal; pyramid_of_box maps a box
    answer to beta >= 0 with sum beta = |f1| + |f2| and D beta = f, and lambda = max_j -(w_j at lambda 0)."""
    _, problem = _pyramid_problems(make_scene("stack", count=2), 5, _slide)[-1]
    nc = pyramid_contacts(problem)
    M, q = problem.M, problem.q
    B, qb, lo, hi, findex, mub = box_of_pyramid(M, q, nc)
    P = np.zeros((3 * nc, 5 * nc))
    for c in range(nc):
        P[c, c] = 1.0
        P[nc + c, [nc + 4 * c, nc + 4 * c + 1]] = np.sqrt(0.5)
        P[2 * nc + c, [nc + 4 * c, nc + 4 * c + 1]] = np.sqrt(0.5) * np.array([1.0, -1.0])
    assert np.allclose(B, P @ M[:5 * nc, :5 * nc] @ P.T, rtol=1e-12, atol=1e-14)
    assert np.allclose(qb, P @ q[:5 * nc])
    assert np.array_equal(findex[nc:], np.tile(np.arange(nc), 2))
    assert np.allclose(mub[nc:], np.tile(M[5 * nc + np.arange(nc), np.arange(nc)], 2) / np.sqrt(2))
    rng = np.random.default_rng(0)
    zb = np.concatenate([rng.uniform(0, 1, nc), rng.uniform(-0.3, 0.3, 2 * nc)])
    y = pyramid_of_box(zb, M, q, nc)
    beta = y[nc:5 * nc].reshape(nc, 4)
    f = np.column_stack([zb[nc:2 * nc] + zb[2 * nc:], zb[nc:2 * nc] - zb[2 * nc:]]) / np.sqrt(2)
    assert np.all(beta >= 0)
    assert np.allclose(beta[:, 0] - beta[:, 2], f[:, 0]) and np.allclose(beta[:, 1] - beta[:, 3], f[:, 1])
    assert np.allclose(beta.sum(axis=1), np.abs(f).sum(axis=1))
    w0 = M[nc:5 * nc, :5 * nc] @ y[:5 * nc] + q[nc:5 * nc]
    assert np.allclose(y[5 * nc:], np.maximum(0.0, (-w0.reshape(nc, 4)).max(axis=1)))


def test_other_problems_are_refused_and_auto_chooses_by_size():
    """A plain LCP, a Stewart-Trinkle LCP with joint limits or another number of friction directions
    are refused before any work (NO_SOLUTION_FOUND, refused); auto takes st-box for a pyramid LCP of
    free bodies from AUTO_MIN_ROWS rows and Lemke below."""
    M = np.eye(6) + 0.1
    plain = solve(LCP(M, -np.ones(6)), "st-box")
    assert plain.status is Status.NO_SOLUTION_FOUND and plain.info.get("refused")
    groups = {"limit": slice(0, 1), "normal": slice(1, 2), "friction": slice(2, 6), "lambda": slice(6, 7)}
    limited = LCP(np.eye(7), -np.ones(7), structure=ProblemStructure(row_groups=groups))
    assert "limit" in pyramid_contacts(limited)
    six = {"normal": slice(0, 1), "friction": slice(1, 7), "lambda": slice(7, 8)}
    assert isinstance(pyramid_contacts(LCP(np.eye(8), -np.ones(8), structure=ProblemStructure(row_groups=six))), str)
    for nc in (AUTO_MIN_ROWS // 6 - 1, AUTO_MIN_ROWS // 6 + 1):
        n = 6 * nc
        g = {"normal": slice(0, nc), "friction": slice(nc, 5 * nc), "lambda": slice(5 * nc, n)}
        p = LCP(np.eye(n), np.ones(n), structure=ProblemStructure(row_groups=g))
        assert choose_method(p)[0] == ("st-box" if n >= AUTO_MIN_ROWS else "lemke")


def test_an_uncertified_mapping_is_handed_to_lemke():
    """With no subspace minimisation rounds the mapped answer of a sliding stack misses the pyramid's
    cfm terms (a separated sliding contact's friction cfm lambda): Lemke answers, and says so; with
    fallback=False the same answer is reported as a failure, never as SOLVED."""
    problems = _pyramid_problems(make_scene("stack", count=2), 12, _slide)
    seen = 0
    for _, problem in problems:
        raw = solve(problem, "st-box", rounds=0, fallback=False)
        if raw.relative_residual > 1e-6:
            seen += 1
            assert raw.status is not Status.SOLVED
            handed = solve(problem, "st-box", rounds=0)
            assert handed.status is Status.SOLVED and handed.info["answered_by"] == "lemke"
    assert seen


@pytest.mark.slow
def test_a_stewart_trinkle_pile_of_100_boxes_is_certified_every_step_by_default():
    """Simulator(pile of 100 boxes, "stewart-trinkle") without a method takes auto, which gives st-box
    the islands from AUTO_MIN_ROWS rows (at step 24 one island of ~2,800 rows, on which Lemke pivots
    for a minute and a half): every one of the first 30 steps certifies on the whole LCP."""
    sim = Simulator(make_scene("pile", count=100), "stewart-trinkle")
    assert sim.method == "auto"
    used = set()
    for _ in range(30):
        rec = sim.step()
        assert rec.success and sim.last_solution.relative_residual <= 1e-6
        sol = sim.last_solution     # island by island, or the whole LCP where it is one island
        used.update(sol.info.get("island_methods", [sol.info.get("answered_by", sol.method)]))
    assert "st-box" in used
