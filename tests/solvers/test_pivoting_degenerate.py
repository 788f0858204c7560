"""Cottle-Dantzig on degenerate, rank-deficient PSD LCPs (issue 14 defect 1): the frictionless
acceleration LCP of the 91-brick pyramid (338 contacts, rank 182, 312 of the 338 entries of q are
exactly zero) is massively degenerate. With least-index ties throughout, the first major cycle
alone took 5655 zero-step-heavy pivots (7221 in all, 21 n); the tie rule (a z leaving before a w
entering, then the steepest rate, least index after n zero steps in a row) needs 1340 (4 n)."""
import numpy as np

from contactlab.planning.statics import StaticsModel
from contactlab.planning.structures import get_structure
from contactlab.problems import LCP
from contactlab.solvers import solve


def _pyramid_lcp():
    s = get_structure("pyramid-91")
    m = StaticsModel(s)
    idx = m.contacts_of(np.ones(s.n, dtype=bool))
    return m, idx, LCP(m.A[np.ix_(idx, idx)], m.b[idx])


def test_dantzig_degenerate_pyramid_pivots_of_order_n():
    m, idx, lcp = _pyramid_lcp()
    n = lcp.n
    assert np.linalg.matrix_rank(lcp.M) < n and np.count_nonzero(lcp.q) < n // 4   # degenerate, singular
    sol = solve(lcp, method="dantzig", max_iterations=100 * n)
    assert sol.success
    # physics, independently of the solver: the pyramid stands, every block acceleration vanishes
    assert m.acceleration(np.ones(m.structure.n, dtype=bool), idx, sol.z) <= 1e-8
    assert sol.iterations <= n                  # major cycles (Cottle-Dantzig: at most n)
    assert sol.pivots <= 5 * n, sol.pivots      # was 7221 = 21 n with least-index ties


def test_dantzig_degenerate_default_cap_suffices():
    """The default pivot cap 20 n + 100 is enough from scratch (the planner needed 50 n before)."""
    _, _, lcp = _pyramid_lcp()
    assert solve(lcp, method="dantzig").success


def _stewart_trinkle_lcp(cfm, mu=0.5, seed=0):
    """A Stewart-Trinkle LCP (eq. 13-15 shape: normal, 4-edge pyramid, lambda rows) for 3 contacts
    on a 6-dof body with unit mass matrix: nonsymmetric, not PSD, copositive-plus."""
    rng = np.random.default_rng(seed)
    m, c, ne = 6, 3, 4
    N, D = rng.normal(size=(c, m)), rng.normal(size=(c * ne, m))
    E = np.kron(np.eye(c), np.ones((ne, 1)))
    t, n = c + c * ne, 2 * c + c * ne
    A = np.zeros((n, n))
    A[:t, :t] = np.vstack([N, D]) @ np.vstack([N, D]).T
    A[c:t, t:] = E
    A[t:, :c] = mu * np.eye(c)
    A[t:, c:t] = -E.T
    v = rng.normal(size=m)
    return LCP(A + cfm * np.eye(n), np.concatenate([N @ v - 1.0, D @ v, np.zeros(c)]))


def test_dantzig_refuses_friction_lcp_and_names_lemke():
    """Issue 14 defect 2: a friction LCP (zero diagonal on the lambda rows: not a P-matrix, not PSD)
    is refused before any pivot (NO_SOLUTION_FOUND, reason naming lemke, never an exception); the
    registry does not offer dantzig for it (the simulator's fallbacks and `simulate --method` checks use accepts()); auto picks
    lemke, which solves it (certified by solve())."""
    from contactlab.solvers import available_solvers
    p = _stewart_trinkle_lcp(0.0)
    sol = solve(p, method="dantzig")
    assert sol.status.name == "NO_SOLUTION_FOUND" and sol.pivots == 0 and "lemke" in sol.info["reason"]
    assert not available_solvers()["dantzig"].accepts(p)
    assert available_solvers()["lemke"].accepts(p)
    auto = solve(p, method="auto")
    assert auto.method == "lemke" and auto.success
    # the symmetric PSD part alone is still dantzig's
    assert available_solvers()["dantzig"].accepts(LCP(p.M[:15, :15], p.q[:15]))


def test_dantzig_not_p_is_an_honest_failure_naming_lemke():
    """Nonsymmetric M with positive diagonal (the up-front test passes) but a negative principal
    minor (det M[:2, :2] = 2 - 5 < 0: not a P-matrix): the bordering step with a Schur complement
    <= 0 stops with NUMERICAL_FAILURE and a reason naming lemke (before: any nonzero Schur
    complement was accepted and the kernel went on outside its guarantee)."""
    M = np.array([[1.0, -1.0, -1.0], [-5.0, 2.0, 2.0], [-1.0, 2.0, 1.0]])
    assert np.linalg.det(M[:2, :2]) < 0
    sol = solve(LCP(M, np.array([-1.0, -1.0, -2.0])), method="dantzig")
    assert sol.status.name == "NUMERICAL_FAILURE"
    assert "not a P-matrix" in sol.info["reason"] and "lemke" in sol.info["reason"]


# ---- Lemke on Stewart-Trinkle column-collapse (issue 39 item 5) ----------------------------------
# Three LCPs of `contactlab simulate column-collapse` (stewart-trinkle + lemke, steps 17, 20 and 269
# of the trajectory before the restart: n = 144 and 192, cond(M) ~ 3e8, resting blocks whose corner
# contacts are redundant, so many rows are degenerate). The reduced basis ended on complementary
# bases that were infeasible, re-solved exactly, by 1.6e-5 .. 1.9e-4 (relative): rows whose tiny
# column entries the pivot tolerance did not take as blocking. Restarted from the refactorised
# final basis (kernels/lemke.py _restart_from_basis), Lemke itself certifies each.
import pytest  # noqa: E402

COLUMN_COLLAPSE = [17, 20, 269]


def _certified_error(M, q, z):
    """The library's scale-free LCP error (problems/residual.py lcp_relative, NORMWISE_FLOOR = 1e-2)
    written out here in numpy: z in units of max z, w_i in units of max(|q_i| + sum_j |M_ij z_j|, 1e-2 max|q|)."""
    w = M @ z + q
    u = np.maximum(np.abs(q) + np.abs(M) @ np.abs(z), 1e-2 * np.abs(q).max())
    zr, wr = z / np.abs(z).max(), w / u
    return max(np.abs(np.minimum(zr, wr)).max(), max(0.0, -zr.min(), -wr.min()))


@pytest.mark.parametrize("step", COLUMN_COLLAPSE)
def test_lemke_certifies_column_collapse_lcps(step):
    from pathlib import Path
    import contactlab as cl
    p = cl.load(Path(__file__).parents[1] / "data" / f"column_collapse_lemke_step{step}.npz")
    M, q = p.dense_M(), p.q
    bare = solve(p, method="lemke", restarts=0, pivot_retries=(), regularize=False, equilibrate="never")
    assert _certified_error(M, q, bare.z) > 1e-6            # the failure: an infeasible final basis
    sol = solve(p, method="lemke")
    # Lemke's own answer, from its first (reduced) run, certified at its tolerance 1e-8
    assert sol.status == cl.Status.SOLVED and "reduced_attempt" not in sol.info and "regularization" not in sol.info
    assert sol.z.min() >= 0 and _certified_error(M, q, sol.z) <= 1e-8


@pytest.mark.slow
def test_lemke_certifies_every_column_collapse_step():
    """300 steps (3 s) of column-collapse under Stewart-Trinkle: every step certified by Lemke itself
    (StepRecord.success is the method's own success; no fallback rescued a step)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("column-collapse"), "stewart-trinkle", "lemke")
    records = sim.run(3.0).records
    assert len(records) == 300
    assert [k for k, r in enumerate(records) if not r.success or r.rescued] == []
