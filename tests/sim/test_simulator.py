"""The Simulator's step (sim/simulator.py): fixed-budget mode, the certified warm start, success as the
method's own, the position correction's LCP, and the record's energies and depth."""
import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.errors import ModelError
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def test_fixed_budget_caps_iterations_and_reports_the_residual_reached():
    K = 7
    sim = Simulator(make_scene("stack", count=6), "box-friction", "pgs", iterations=K)
    for _ in range(5):
        rec = sim.step()
        assert 1 <= rec.iterations <= K
        # the reported residual is the problem's own residual at the applied answer
        r = sim.last_problem.residuals(sim.last_solution.z)
        assert rec.residual == pytest.approx(r.natural, rel=1e-9, abs=1e-15)
    assert not rec.success            # 7 sweeps do not certify a 6-box stack: reported, not hidden
    with pytest.raises(ModelError, match="iterations"):
        Simulator(make_scene("stack", count=2), "box-friction", "pgs", iterations=0)


def test_warm_start_certified_without_the_delassus_matrix_is_box_qps_answer():
    """A resting 30-box stack (360 rows, past box friction's dense_max) in certified mode: a step
    whose warm start box-qp would return without a Newton step takes it without the Delassus
    matrix (sim/box_stages.py RowStages.certified_warm_start), and only such a step: on the assembled problem,
    box-qp from the same warm start returns that very z with 0 iterations exactly where the
    shortcut took it (and iterates where it did not), solve() certifies it there with a relative
    residual at most the bound reported, and the trajectory is the assembled path's bit for bit."""
    from contactlab import solve
    from contactlab.models.built import problem_of

    def run(shortcut):
        sim = Simulator(make_scene("stack", count=30), "box-friction", "box-qp", model_options={"coupling": "current"})
        seen = []
        if shortcut:
            inner = sim.stages.certified_warm_start

            def spy(sys, warm):
                out = inner(sys, warm)
                seen.append((sys, warm.copy(), out))
                return out
            sim.stages.certified_warm_start = spy
        else:
            sim.stages.warm_start_certify = False
        for _ in range(60):
            sim.step()
            if shortcut and seen and seen[-1][2] is not None:
                assert sim.last_solution is seen[-1][2][1] and sim.last_problem is not None
        return sim, seen

    sim, seen = run(True)
    ref, _ = run(False)
    assert np.array_equal(sim.data.position, ref.data.position)
    assert np.array_equal(sim.data.quaternion, ref.data.quaternion)
    taken = [s for s in seen if s[2] is not None]
    assert len(taken) >= 15 and len(seen) - len(taken) >= 5
    for sys_, warm, out in seen:
        P = problem_of(sim.contact_model.build(sys_, sim.model_options))
        assert P.n > sim.model_options.dense_max
        s = solve(P, "box-qp", warm_start=warm)
        assert s.status.name == "SOLVED"
        if out is None:
            assert s.iterations >= 1
            continue
        n, sol = out
        assert s.iterations == 0 and np.array_equal(s.z, sol.z) and sol.iterations == 0
        assert sol.status.name == "SOLVED" and sol.info["warm_start_certified"]
        assert s.relative_residual <= sol.relative_residual <= 1e-7
        assert np.abs(sol.w - (P.M @ sol.z + P.q)).max() <= 1e-12 * np.abs(P.q).max()


def test_success_is_the_methods_own_not_a_small_residual(monkeypatch):
    """Issue 10: a step whose method returned a non-success (here NUMERICAL_FAILURE) with an answer
    that certifies is recorded as rescued, never as the method's success."""
    import dataclasses

    import contactlab.sim.simulator as simmod
    import contactlab.sim.stages as stages
    from contactlab.scenarios import make_scene
    from contactlab.solution import Status

    real = stages.solve

    def failing(problem, method, **kw):
        sol = real(problem, method, **kw)
        return dataclasses.replace(sol, status=Status.NUMERICAL_FAILURE) if problem.n else sol

    sim = simmod.Simulator(make_scene("stack", count=2), "box-friction", "pgs-sm")
    honest = sim.step()
    assert honest.lcp_size > 0 and honest.success and not honest.rescued
    monkeypatch.setattr(stages, "solve", failing)     # the solve stage's solve() (sim/stages.py)
    rec = sim.step()
    assert rec.lcp_size > 0 and not rec.success and rec.rescued and rec.status == "NUMERICAL_FAILURE"


@pytest.mark.parametrize("sparse", [False, True])
def test_position_lcp_solves_the_whole_lcp(sparse):
    """The position correction's LCP (box-qp from p = 0, a few rows deep) gives the whole
    LCP's unique solution (A SPD), the one lemke pivots to, and its relative residual as solve()
    measures it."""
    from contactlab import solve
    from contactlab.problems import LCP
    from contactlab.problems.residual import box_relative, relative_error, row_terms
    from contactlab.sim.simulator import position_lcp
    rng = np.random.default_rng(5)
    n = 60
    B = rng.normal(size=(n, n)) * (rng.random((n, n)) < 0.1)
    A = B @ B.T + 0.1 * np.eye(n)
    c = rng.uniform(0.0, 1.0, n)
    deep = np.zeros(n, dtype=bool)
    deep[rng.choice(n, 6, replace=False)] = True
    c[deep] = -rng.uniform(0.5, 2.0, 6)
    p, rel = position_lcp(sp.csr_matrix(A) if sparse else A, c)
    ref = solve(LCP(A, c), "lemke")
    assert ref.success and rel <= 1e-8
    assert np.abs(p - ref.z).max() <= 1e-8 * max(1.0, np.abs(ref.z).max())
    assert np.count_nonzero(p) > deep.sum()        # rows beyond the deep ones are pushed: the growth is exercised
    w = A @ p + c
    assert rel == pytest.approx(relative_error(box_relative(p, w, np.zeros(n), np.full(n, np.inf), c,
                                                            t=row_terms(A, p, c))), abs=1e-15)


def test_step_record_energies_and_depth_are_their_definitions():
    """The record's kinetic energy, energy and deepest overlap (one compiled pass after the step)
    equal energies() of the state after the step and max(0, -min phi) of the step's contacts."""
    from contactlab.scenarios import make_scene
    from contactlab.sim.simulator import Simulator, energies

    sim = Simulator(make_scene("pile", count=6), "box-friction", "box-qp")
    seen_overlap = False
    for _ in range(120):
        rec = sim.step()
        ke, pe = energies(sim.model, sim.data)
        phi = sim.data.contacts.phi
        assert rec.kinetic_energy == ke and rec.energy == ke + pe
        assert rec.max_penetration == (max(0.0, float(-phi.min())) if phi.size else 0.0)
        seen_overlap |= rec.max_penetration > 0
    assert seen_overlap          # the pile's contacts overlapped at some step: the depth was measured
