"""The lean Dantzig path (kernels/pivoting.py ``dantzig_dense``) and the reuse option's method rule.

The compiled path must be the same algorithm as the general one: the same answer (checked against
the exhaustive solver), the same certification (recomputed here with the problem's own residual),
Theorem 1's n - k bound from a sub-problem start (loomis-balkcom), and a checked Farkas ray on an
infeasible PSD problem. Speed is not timed here (docs/computation-reuse.md has the figures)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app
from contactlab.problems import LCP
from contactlab.sim import Simulator
from contactlab.sim.reuse import principal_subproblem
from contactlab.solution import Status


def psd_contact_lcp(rng, n, m):
    """A rank-deficient PSD contact LCP: M = J J' (J n x m, n > m), q = J b + a small offset."""
    J = rng.standard_normal((n, m))
    return LCP(J @ J.T, J @ rng.standard_normal(m) - 0.1 * rng.random(n))


@pytest.mark.parametrize("seed", range(6))
def test_lean_path_is_the_general_path(seed):
    """Cold and warm-started dense solves (lean path) give the exhaustive solver's w = M z + q (unique
    for PSD M), the general path's (a sparse copy of M runs it), and the residual solve() reports
    is the problem's own residual at the returned z."""
    rng = np.random.default_rng(seed)
    P = psd_contact_lcp(rng, 9, 6)
    ref = cl.solve(P, "enumerate")
    assert ref.success
    w_ref = P.M @ ref.z + P.q
    general = cl.solve(LCP(sp.csr_matrix(P.M), P.q), "dantzig")
    warm_z = np.where(rng.random(9) < 0.5, ref.z, 0.0)
    for sol in (cl.solve(P, "dantzig"), cl.solve(P, "dantzig", warm_start=warm_z), general):
        assert sol.status is Status.SOLVED
        assert np.allclose(P.M @ sol.z + P.q, w_ref, atol=1e-9)
        w, numbers = P.certify_numbers(np.ascontiguousarray(sol.z))
        assert sol.residual == pytest.approx(numbers[0], abs=1e-15)
        assert np.allclose(sol.w, w, atol=1e-12)
    lean = cl.solve(P, "dantzig")
    assert lean.pivots == general.pivots and np.array_equal(lean.info["active_set"], general.info["active_set"])


@pytest.mark.parametrize("seed", range(6))
def test_lean_warm_start_from_a_subproblem_keeps_theorem_1(seed):
    """Initialised with the solution of a principal sub-problem on k indices, the lean path takes at
    most n - k major cycles (loomis-balkcom Theorem 1) and reaches the full problem's answer."""
    rng = np.random.default_rng(100 + seed)
    P = psd_contact_lcp(rng, 14, 10)
    rows = np.sort(rng.choice(14, size=8, replace=False))
    sub = cl.solve(principal_subproblem(P, rows), "dantzig")
    assert sub.success
    z0 = np.zeros(14)
    z0[rows] = sub.z
    sol = cl.solve(P, "dantzig", warm_start=z0)
    cold = cl.solve(P, "dantzig")
    assert sol.success and cold.success
    k = sol.info["warm_start_k"]
    assert k == np.count_nonzero(sub.z > 0) and sol.info["major_cycle_bound"] == 14 - k
    assert sol.iterations <= 14 - k
    assert np.allclose(P.M @ sol.z + P.q, P.M @ cold.z + P.q, atol=1e-9)


def test_lean_path_farkas_ray_on_an_infeasible_psd_lcp():
    """M = [[1, -1], [-1, 1]], q = (-1, -1): w1 + w2 = -2 for every z, so no solution; the lean path
    stops on its driving ray and solve() accepts NO_SOLUTION only after checking it."""
    P = LCP(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([-1.0, -1.0]))
    sol = cl.solve(P, "dantzig")
    assert sol.status is Status.NO_SOLUTION
    y = sol.info["certificate"]["y"]
    assert np.all(y >= 0) and np.all(P.M.T @ y <= 1e-12) and P.q @ y < 0


def test_reuse_with_a_method_without_warm_start_warns():
    """The Simulator API keeps working (the sub-solves are taken) but says the reuse cannot pay."""
    from contactlab.scenarios import make_scene
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        Simulator(make_scene("column-collapse"), "frictionless", "lemke", reuse="motionless")
        Simulator(make_scene("column-collapse"), "frictionless", "dantzig", reuse="motionless")
    msgs = [str(w.message) for w in got if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "'lemke'" in msgs[0] and "dantzig" in msgs[0]


def test_cli_reuse_refuses_a_method_without_warm_start_and_picks_dantzig_by_default():
    runner = CliRunner()
    base = ["simulate", "column-collapse", "--model", "frictionless", "--duration", "0.02", "--reuse", "motionless"]
    bad = runner.invoke(app, base + ["--method", "lemke"])
    assert bad.exit_code == 2 and "takes no warm start" in bad.output and "dantzig" in bad.output
    ok = runner.invoke(app, base + ["--json"])
    assert ok.exit_code == 0, ok.output
    assert "dantzig is used" in ok.output and '"method": "dantzig"' in ok.output


def test_reuse_stages_take_the_general_stages_steps():
    """sim/reuse_stages.py's lean solve and certify (planned for dantzig with reuse="motionless") give
    the general stages' steps bit for bit (the same compiled call, reached without the Python around
    it), every step certified; and the cold baseline through the same call (the warm start withheld)
    gives the same positions within 1e-9 m (loomis-balkcom §IV: the motionless set only chooses the
    start) and v+ = the warm run's within 1e-9 m/s, over column-collapse's first set change (step 79)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.reuse_stages import ReuseStages
    from contactlab.sim.stages import Stages

    def run(stages_cls, warm=True, steps=95):
        sim = Simulator(make_scene("column-collapse"), "frictionless", "dantzig", warm_start=False, reuse="motionless")
        assert type(sim.plan()) is ReuseStages
        if stages_cls is Stages:
            sim.stages = Stages(sim, sim.step_state)       # the same configuration: kept by plan()
        if not warm:
            sim.reuse.warm_start = lambda built, contacts: None
        recs = [sim.step() for _ in range(steps)]
        assert type(sim.stages) is stages_cls
        assert all(r.success and not r.rescued for r in recs)
        return sim, recs

    lean, lean_recs = run(ReuseStages)
    general, general_recs = run(Stages)
    cold, _ = run(ReuseStages, warm=False)
    assert np.array_equal(lean.data.position, general.data.position)
    assert np.array_equal(lean.data.linear_velocity, general.data.linear_velocity)
    assert [r.pivots for r in lean_recs] == [r.pivots for r in general_recs]
    assert sum(lean.reuse.log.changed) >= 2 and any(lean.reuse.log.warm_rows)
    assert np.abs(lean.data.position - cold.data.position).max() <= 1e-9
    assert np.abs(lean.data.linear_velocity - cold.data.linear_velocity).max() <= 1e-9
