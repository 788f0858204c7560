"""The compiled box-friction step (contactlab.sim.box_kernels, called by contactlab.sim.box_stages.CompiledRowStages) against the
general stages it replaces (``Simulator(compiled=False)``): the same
kernels in the same order, so the same bits, step after step; the system and problem assembled when
read equal the general path's; a declined step changes nothing; configurations it does not
reproduce never use it."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import contactlab.sim.box_kernels as BS
import contactlab.sim.simulator as SM
from contactlab.kernels.pgs_matrix_free import solve_matrix_free
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _sim(scene, count, coupling, compiled=True, stabilization=None, iterations=None, options=None, centre=0.0):
    sc = make_scene(scene, count=count)
    if stabilization is not None:
        sc.settings.contact_stabilization = stabilization
    model_options = {"coupling": coupling, **({"cfm_centre": centre} if centre else {})}
    return Simulator(sc, "box-friction", "pgs" if iterations else "box-qp", model_options=model_options,
                     iterations=iterations, solver_options=options, compiled=compiled)


def _count_compiled(monkeypatch):
    """Count the compiled calls and the steps they took (outcome != DECLINED) and went deep."""
    seen = {"calls": 0, "taken": 0, "deep": 0}
    certified, fixed = BS.box_friction_step, BS.box_friction_fixed_step

    def counted(kernel, deep_at):
        def call(*args):
            out = kernel(*args)
            seen["calls"] += 1
            seen["taken"] += out[0] != BS.DECLINED
            seen["deep"] += bool(deep_at and out[0] != BS.DECLINED and out[deep_at])
            return out
        return call

    monkeypatch.setattr(BS, "box_friction_step", counted(certified, 3))
    monkeypatch.setattr(BS, "box_friction_fixed_step", counted(fixed, 0))
    return seen


def _state(sim):
    d = sim.data
    return [a.copy() for a in (d.position, d.quaternion, d.linear_velocity, d.angular_velocity)]


def _shift_down(sim, body, dz):
    """Push ``body`` dz into the one below (a penetration beyond the slop: the position correction runs)."""
    sim.data.position[body, 2] -= dz


@pytest.mark.parametrize("scene,count,coupling,stabilization,push,iterations,options", [
    ("pile", 10, "previous", None, 0.0, None, None),          # falling, landing, settling (the benchmark's pile)
    ("stack", 8, "current", None, 0.0, None, None),           # friction-coupled bounds: box-qp's bound updates
    ("stack", 4, "current", None, 0.004, None, None),         # 4 mm overlap: position correction after the call
    ("stack", 4, "previous", "velocity", 0.004, None, None),  # velocity-level stabilisation (zeta in the bias)
    ("pile", 10, "current", None, 0.0, 50, None),             # fixed budget: matrix-free PGS, 50 sweeps
    ("pile", 10, "current", None, 0.0, 50, {"w_step_tol": 3e-4}),  # ... stopped as Bullet stops
    ("stack", 6, "current", None, 0.004, 20, None),           # fixed budget with the position correction's PGS
    ("stack", 4, "previous", "velocity", 0.0, 7, None),
])
def test_compiled_step_gives_the_general_paths_bits(monkeypatch, scene, count, coupling, stabilization, push,
                                                    iterations, options):
    seen = _count_compiled(monkeypatch)
    corrections = []
    monkeypatch.setattr(SM, "solve_matrix_free", lambda *a, **k: corrections.append(1) or solve_matrix_free(*a, **k))
    a = _sim(scene, count, coupling, True, stabilization, iterations, options)
    b = _sim(scene, count, coupling, False, stabilization, iterations, options)
    assert a.stages.compiled and a.stages.fixed == (iterations is not None) and not b.stages.compiled
    if push:
        for s in (a, b):
            _shift_down(s, 2, push)
    for k in range(120):
        ra, rb = a.step(), b.step()
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y), f"step {k + 1}"
        fa, fb = dataclasses.asdict(ra), dataclasses.asdict(rb)
        fa.pop("solve_time"), fb.pop("solve_time")
        assert fa == fb, f"step {k + 1}"
        assert np.array_equal(a.data.result.normal, b.data.result.normal)
        assert np.array_equal(a.data.result.tangent, b.data.result.tangent)
        assert np.array_equal(a.data.result.modes, b.data.result.modes)
        assert np.array_equal(a.data.warm["z"], b.data.warm["z"])
        sa, sb = a.last_solution, b.last_solution
        assert (sa.status, sa.iterations, sa.residual, sa.relative_residual) == \
            (sb.status, sb.iterations, sb.residual, sb.relative_residual)
        assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w)
    # the compiled call took most steps (the general path only those it declines: no contact, ...)
    assert seen["taken"] >= 100
    if push and stabilization is None:
        # the position correction ran: after the compiled call (certified) or in it (fixed budget,
        # where the general path's own correction, a matrix-free PGS, ran on the same steps)
        assert (seen["deep"] >= 1) if iterations is None else bool(corrections)


@pytest.mark.parametrize("scene,count,push,iterations", [("pile", 10, 0.0, None), ("stack", 4, 0.004, None),
                                                         ("pile", 10, 0.0, 50)])
def test_compiled_step_gives_the_general_paths_bits_with_a_centred_cfm(monkeypatch, scene, count, push, iterations):
    """With the normal rows' cfm centred (``cfm_centre``, models/box_friction.py ``centre_normals``)
    the compiled step (its ``centre`` argument) and the general build (``build``/``rows``) solve the
    same problem: the same states, answers and residuals step by step, and the centre is on (the
    answers differ from the uncentred run's)."""
    seen = _count_compiled(monkeypatch)
    a = _sim(scene, count, "previous", True, iterations=iterations, centre=1.0)
    b = _sim(scene, count, "previous", False, iterations=iterations, centre=1.0)
    c = _sim(scene, count, "previous", True, iterations=iterations)
    assert a.stages.compiled and not b.stages.compiled and a.stages.centre > 0 and c.stages.centre == 0
    if push:
        for s in (a, b, c):
            _shift_down(s, 2, push)
    differs = False
    for k in range(120):
        a.step(), b.step(), c.step()
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y), f"step {k + 1}"
        sa, sb = a.last_solution, b.last_solution
        assert (sa.status, sa.iterations, sa.residual) == (sb.status, sb.iterations, sb.residual)
        assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w)
        differs = differs or not np.array_equal(a.data.position, c.data.position)
    assert seen["taken"] >= 100 and differs


@pytest.mark.parametrize("iterations", [None, 50])
def test_system_and_problem_assembled_when_read_equal_the_general_paths(iterations):
    coupling = "current" if iterations else "previous"
    a = _sim("pile", 10, coupling, True, iterations=iterations)
    b = _sim("pile", 10, coupling, False, iterations=iterations)
    for _ in range(80):
        a.step(), b.step()
    assert a.step_state.deferred is not None          # not assembled until read
    sa, sb = a.last_system, b.last_system
    for name in ("M", "Minv", "N", "S", "T", "NST"):
        x, y = getattr(sa, name), getattr(sb, name)
        assert (x != y).nnz == 0 and x.shape == y.shape, name
    for name in ("v", "f", "n_bias", "phi", "mu", "normal_guess", "W_blocks"):
        assert np.array_equal(getattr(sa, name), getattr(sb, name)), name
    assert np.array_equal(sa.v_free(), sb.v_free())
    pa, pb = a.last_problem, b.last_problem
    for name in ("M", "q", "lo", "hi", "findex", "mu"):
        x, y = getattr(pa, name), getattr(pb, name)
        assert np.array_equal(x.toarray() if sp.issparse(x) else x, y.toarray() if sp.issparse(y) else y), name
    # the applied answer's residual is the problem read back's own at it (certified: <= 1e-6); a warm
    # start certified without the matrix reports box-qp's stricter measure, an upper bound of it
    rel = pa.certify(a.last_solution.z)[2]
    exact = max(rel.natural, rel.infeasibility)
    if a.last_solution.info.get("warm_start_certified"):
        assert iterations is None and a.last_solution.info["relative_residual_bound"]
        assert exact <= a.last_solution.relative_residual * (1 + 1e-9) <= 1e-7
    else:
        assert exact == pytest.approx(a.last_solution.relative_residual, rel=1e-9, abs=1e-15)
    if iterations is None:
        assert a.last_solution.relative_residual <= 1e-6


def test_a_declined_step_changes_nothing_and_the_general_path_takes_it(monkeypatch):
    a = _sim("stack", 4, "current", True)
    b = _sim("stack", 4, "current", False)
    for _ in range(10):
        a.step(), b.step()
    seen = _count_compiled(monkeypatch)
    a.stages.threshold = -1.0          # no answer certifies: every call declines
    kernel, unchanged = BS.box_friction_step, []

    def call(*args):            # the state right before and right after each compiled call
        before = _state(a)
        out = kernel(*args)
        unchanged.append(all(np.array_equal(x, y) for x, y in zip(_state(a), before)))
        return out
    monkeypatch.setattr(BS, "box_friction_step", call)
    for _ in range(5):
        ra, rb = a.step(), b.step()
        assert ra.residual == rb.residual and ra.iterations == rb.iterations
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y)
        assert not a.last_solution.info.get("warm_start_certified") or b.last_solution.info.get("warm_start_certified")
    assert seen["calls"] == 5 and seen["taken"] == 0 and unchanged == [True] * 5


@pytest.mark.parametrize("make", [
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "pgs"),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "pgs", iterations=5,
                      solver_options={"omega": 1.2}),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", iterations=5),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", model_options={"joints": "schur"}),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", islands=True),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", solver_options={"algorithm": "ipm"}),
    lambda: Simulator(make_scene("stack", count=3), "stewart-trinkle", "lemke"),
    lambda: Simulator(make_scene("box-gripper"), "box-friction", "box-qp"),     # joints and a kinematic base
])
def test_configurations_it_does_not_reproduce_take_the_general_path(make):
    assert not make().stages.compiled


def test_a_changed_configuration_is_planned_anew():
    """Options changed between steps reach the step: the plan is made again (here: the fixed budget
    raised from 3 to 40 sweeps, then a solver option the compiled step does not reproduce)."""
    a = _sim("stack", 4, "current", True, iterations=3)
    b = _sim("stack", 4, "current", False, iterations=3)
    for _ in range(3):
        a.step(), b.step()
    for s in (a, b):
        s.iterations = 40
        s.solver_options.update(max_iterations=40)
    for _ in range(3):
        ra, rb = a.step(), b.step()
        assert ra.iterations == rb.iterations and ra.iterations > 3
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y)
    a.solver_options["omega"] = 1.1       # not matrix-free any more: no compiled step
    a.step()
    assert not a.stages.compiled and not a.stages.matrix_free
