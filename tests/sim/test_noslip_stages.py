"""The compiled no-slip step (contactlab.sim.noslip_kernels, called by
contactlab.sim.noslip_stages.CompiledNoSlipStages) against the general stages it replaces
(``Simulator(compiled=False)``): the same kernels in the same order, so the same bits step after
step (state, records, impulses, the Solution and its certification); the system and problem
assembled when read equal the general path's; a step with force-limited motors is the motor call's
(noslip_kernels.noslip_motor_step: the active set over the motors' states), the same bits; a
declined step changes nothing; configurations it does not reproduce never use it."""
import dataclasses

import numpy as np
import pytest

import contactlab.sim.noslip_kernels as NK
import contactlab.sim.tree_stages as TS
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


#: the joint-coordinate stages' own plan (the fixture below replaces it)
_TREE_PLAN = TS.CompiledTreeNoSlipStages.__dict__["plan"]


@pytest.fixture(autouse=True)
def _maximal(monkeypatch):
    """These tests compare the maximal-coordinate compiled step with the general stages: the robots'
    joint-coordinate stages (sim/tree_stages.py, tests/sim/test_tree_stages.py) are left out."""
    monkeypatch.setattr(TS.CompiledTreeNoSlipStages, "plan", classmethod(lambda cls, sim, state: None))


def _sim(robot, compiled=True, **kw):
    sc = make_scene(robot)
    return Simulator(sc, "no-slip", kw.pop("method", None), controllers=getattr(sc, "controllers", ()), compiled=compiled, **kw)


def _count(monkeypatch, name="noslip_step"):
    seen = {"calls": 0, "taken": 0, "deep": 0, "trials": []}
    kernel = getattr(NK, name)

    def call(*args):
        out = kernel(*args)
        seen["calls"] += 1
        seen["taken"] += out[0] != NK.DECLINED
        seen["deep"] += out[0] == NK.DEEP
        if len(out) > 26:       # noslip_motor_step: (motor impulses, trials, consistent, saturated)
            seen["trials"].append(int(out[27]))
        return out

    monkeypatch.setattr(NK, name, call)
    return seen


def _state(sim):
    d = sim.data
    return [a.copy() for a in (d.position, d.quaternion, d.linear_velocity, d.angular_velocity)]


def _same_step(a, b, k):
    ra, rb = a.step(), b.step()
    for x, y in zip(_state(a), _state(b)):
        assert np.array_equal(x, y), f"step {k + 1}"
    fa, fb = dataclasses.asdict(ra), dataclasses.asdict(rb)
    fa.pop("solve_time"), fb.pop("solve_time")
    assert fa == fb, f"step {k + 1}"
    res_a, res_b = a.data.result, b.data.result
    for name in ("v_next", "normal", "tangent", "joint", "limit", "motor", "modes"):
        assert np.array_equal(getattr(res_a, name), getattr(res_b, name)), (name, k + 1)
    assert res_a.info == res_b.info
    assert np.array_equal(a.data.warm["z"], b.data.warm["z"])
    sa, sb = a.last_solution, b.last_solution
    assert (sa.status, sa.iterations, sa.pivots, sa.residual, sa.complementarity, sa.infeasibility,
            sa.relative_residual) == (sb.status, sb.iterations, sb.pivots, sb.residual, sb.complementarity,
                                      sb.infeasibility, sb.relative_residual)
    assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w)
    # the compiled step's Solution says so (Simulator.last_solution.info["compiled_step"]), as st_stages'
    assert sa.info.pop("compiled_step", None) is a.stages.compiled and "compiled_step" not in sb.info
    assert sa.info.keys() == sb.info.keys()
    for key in sa.info:
        x, y = sa.info[key], sb.info[key]
        assert (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y), key


@pytest.mark.parametrize("robot,steps,push", [
    ("quadruped", 250, 0.0),     # standing up, the trot's first steps (feet touching and leaving)
    ("solo12", 150, 0.0),
    ("quadruped", 60, 0.004),    # 4 mm into the ground: the position correction after the call (DEEP)
])
def test_compiled_step_gives_the_general_paths_bits(monkeypatch, robot, steps, push):
    seen = _count(monkeypatch)
    a, b = _sim(robot, True), _sim(robot, False)
    assert a.stages.compiled and not b.stages.compiled
    for s in (a, b):
        s.data.position[s.model.dof_start >= 0, 2] -= push
    for k in range(steps):
        _same_step(a, b, k)
    assert seen["taken"] == steps
    assert (seen["deep"] >= 1) == (push > 0)


def test_system_and_problem_assembled_when_read_equal_the_general_paths():
    a, b = _sim("quadruped", True), _sim("quadruped", False)
    for _ in range(120):
        a.step(), b.step()
    assert a.step_state.deferred is not None        # not assembled until read
    sa, sb = a.last_system, b.last_system
    for name in ("M", "Minv", "J", "L", "N", "S", "T", "A"):
        x, y = getattr(sa, name), getattr(sb, name)
        assert x.shape == y.shape and (x != y).nnz == 0, name
    for name in ("v", "f", "j_rhs", "j_err", "l_bias", "n_bias", "phi", "mu", "W_blocks"):
        assert np.array_equal(getattr(sa, name), getattr(sb, name)), name
    assert np.array_equal(sa.v_free(), sb.v_free())
    pa, pb = a.last_problem, b.last_problem
    for name in ("N", "f_star", "offset", "q"):
        assert np.array_equal(getattr(pa, name), getattr(pb, name)), name
    # the applied answer certifies on the problem read back (the certificate computed apart from ppm)
    w, c = pa.certify_numbers(a.last_solution.z)
    assert max(c[3], c[5]) <= 1e-6 and np.array_equal(w, a.last_solution.w)


def test_a_step_with_motors_is_declined_and_taken_by_the_motor_call(monkeypatch):
    """A force-limited velocity motor (models/noslip.py ``build``'s active set over the motors'
    states): noslip_step is not called, noslip_motor_step takes the step, the general path's bits."""
    seen, motor = _count(monkeypatch), _count(monkeypatch, "noslip_motor_step")
    a, b = _sim("quadruped", True), _sim("quadruped", False)
    joint = a.model.joints[0].name
    for k in range(40):
        if k == 10:
            for s in (a, b):
                s.set_motor(joint, 0.0, 0.05)
        _same_step(a, b, k)
    assert seen["calls"] == 10 and seen["taken"] == 10     # a motor's steps do not call it
    assert motor["calls"] == motor["taken"] == 30


#: six motors on the quadruped's joints (target rate, force limit): some reach their targets, some
#: saturate, so the active set takes 3 to 8 trials a step and ends on mixed states
MOTORS = [(0.0, 0.05), (0.5, 0.3), (-0.3, 2.0), (0.0, 1e-3), (1.0, 10.0), (0.2, 0.01)]


@pytest.mark.parametrize("model_options,solver_options", [
    (None, None),
    ({"motor_trials": 2}, None),           # the search stops at its budget: the last state solved afterwards
    (None, {"max_iterations": 500}),       # the stages' own budget: the last state's problem solved again
])
def test_motors_active_set_in_the_call_gives_the_general_paths_bits(monkeypatch, model_options, solver_options):
    """Mixed motor states (free rows joined to J, saturated ones as forces), several trials a step:
    the compiled active set takes every step with the general path's state, records, impulses
    (the motors' included), StepResult info (trials, consistency) and Solution, bit for bit."""
    motor = _count(monkeypatch, "noslip_motor_step")
    a = _sim("quadruped", True, model_options=model_options, solver_options=solver_options)
    b = _sim("quadruped", False, model_options=model_options, solver_options=solver_options)
    names = [j.name for j in a.model.joints]
    for s in (a, b):
        for j, (target, force) in zip(names, MOTORS):
            s.set_motor(j, target, force)
    for k in range(60):
        _same_step(a, b, k)
        assert a.data.result.motor.shape == (len(MOTORS),)
    assert motor["calls"] == motor["taken"] == 60
    budget = (model_options or {}).get("motor_trials", 8)
    assert max(motor["trials"]) == budget and min(motor["trials"]) >= 2


def test_a_motor_step_in_a_tree_plan_is_the_maximal_call(monkeypatch):
    """The joint-coordinate plan (sim/tree_stages.py) hands a step with motors to the maximal-coordinate
    motor call, as its general fallback is the maximal stages: the general path's bits."""
    monkeypatch.setattr(TS.CompiledTreeNoSlipStages, "plan", _TREE_PLAN)      # undo _maximal
    motor = _count(monkeypatch, "noslip_motor_step")
    a, b = _sim("quadruped", True), _sim("quadruped", False)
    a.fused = False         # the stages, not the robot's fused step (sim/robot_step.py)
    assert type(a.stages) is TS.CompiledTreeNoSlipStages
    joint = a.model.joints[2].name
    for s in (a, b):
        s.set_motor(joint, 0.3, 0.5)
    for k in range(30):
        _same_step(a, b, k)
    assert motor["calls"] == motor["taken"] == 30


@pytest.mark.parametrize("kw", [{"iterations": 30}, {"method": "lemke"}, {"solver_options": {"tol": 1e-8}}])
def test_configurations_it_does_not_reproduce_take_the_general_stages(kw):
    sim = _sim("quadruped", True, **kw)
    if "solver_options" in kw:          # ppm's own tol: still its step, the threshold max(certify, tol)
        assert sim.stages.compiled
        return
    assert not sim.stages.compiled


def test_the_interpreted_call_gives_the_same_bits(monkeypatch):
    """``noslip_step`` run as Python (its callees compiled: what kernels/_jit.py's tiered mode runs
    before compiling it, and what NUMBA_DISABLE_JIT runs all the way down) gives the compiled
    call's step, bit for bit."""
    monkeypatch.setattr(NK, "noslip_step", getattr(NK.noslip_step, "py_func", NK.noslip_step))
    a, b = _sim("quadruped", True), _sim("quadruped", False)
    for k in range(40):
        _same_step(a, b, k)


def test_clock_reads_perf_counter_from_compiled_code():
    import time
    from contactlab.kernels.clock import perf_counter
    t0 = time.perf_counter()
    t = perf_counter()
    t1 = time.perf_counter()
    assert t0 <= t <= t1
    assert perf_counter.py_func() >= t1 if hasattr(perf_counter, "py_func") else True


def _copied(x):
    """An argument copied: an array, or a tuple's arrays (the call's ``body``, ``motion``, ``contact``)."""
    if isinstance(x, np.ndarray):
        return x.copy()
    return tuple(_copied(y) for y in x) if isinstance(x, tuple) else x


def _arrays(name, x):
    """(name, array) of an argument's arrays, a tuple's by position (name[i])."""
    if isinstance(x, np.ndarray):
        return [(name, x)]
    return [a for i, y in enumerate(x) for a in _arrays(f"{name}[{i}]", y)] if isinstance(x, tuple) else []


def _captured_call(monkeypatch, steps=120):
    """The compiled call's arguments at a mid-trot step (copies)."""
    seen = {}
    kernel = NK.noslip_step

    def grab(*args):
        seen["args"] = [_copied(x) for x in args]
        return kernel(*args)

    monkeypatch.setattr(NK, "noslip_step", grab)
    sim = _sim("quadruped", True)
    for _ in range(steps):
        sim.step()
    monkeypatch.setattr(NK, "noslip_step", kernel)
    return kernel, seen["args"]


@pytest.mark.parametrize("change", ["motor", "uncertified", "not finite"])
def test_a_declined_call_changes_nothing(monkeypatch, change):
    """Where the general path would do otherwise (motors: their active set; an answer outside
    solve()'s threshold: the fallbacks; a NaN velocity: the model's error), the call returns
    DECLINED with the state and every argument as they were."""
    kernel, args = _captured_call(monkeypatch)
    names = kernel.py_func.__code__.co_varnames[:kernel.py_func.__code__.co_argcount]
    at = {n: i for i, n in enumerate(names)}
    if change == "motor":
        mt, mf = args[at["motor_target"]], args[at["motor_max_force"]]
        mt[0], mf[0] = 0.0, 1.0
    elif change == "uncertified":
        args[at["threshold"]] = -1.0
    else:
        args[at["motion"]][NK.MOTION.index("linear_velocity")][3, 0] = np.nan
    before = [_copied(x) for x in args]
    out = kernel(*args)
    assert out[0] == NK.DECLINED
    for name, x, y in zip(names, before, args):
        for (label, a), (_, b) in zip(_arrays(name, x), _arrays(name, y)):
            if name != "f":       # f: the bodies' forces are added in place
                assert np.array_equal(a, b, equal_nan=True), label


def test_call_inputs_equal_the_joint_torque_force_and_motor_state_they_replace():
    """noslip_kernels.call_inputs against mechanics.system's joint_torque_forces and motor_state
    (the general path's): the same force bits, the same motor arrays, the force-limited test."""
    from contactlab.mechanics.system import joint_torque_forces, motor_state, packed_joints
    from contactlab.sim import noslip_kernels as NK
    sim = _sim("quadruped", True)
    for _ in range(20):
        sim.step()
    m, d = sim.model, sim.data
    P = packed_joints(m)
    rng = np.random.default_rng(3)
    d.joint_torque.clear()
    for k in rng.choice(len(m.joints), 5, replace=False):
        d.joint_torque[int(k)] = float(rng.normal())
    for target in (None, 0.3):
        if target is not None:
            d.motor_target[2], d.motor_max_force[2] = target, 5.0
        idx = np.array(list(d.joint_torque), dtype=np.int64)
        tau = np.array(list(d.joint_torque.values()))
        f, mt, mf, limited = NK.call_inputs(idx, tau, P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start,
                                            d.position, d.quaternion, m.ndof, P.motor_target, P.motor_max_force,
                                            d.motor_target, d.motor_max_force)
        mt0, mf0 = motor_state(P, d)
        assert np.array_equal(f, joint_torque_forces(m, d)) and np.abs(f).max() > 0
        assert np.array_equal(mt, mt0, equal_nan=True) and np.array_equal(mf, mf0)
        assert limited == (target is not None)
