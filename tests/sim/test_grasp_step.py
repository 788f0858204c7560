"""The hand's fused step (sim/grasp_step.py) against the stages it stands for
(sim/tree_box_stages.py): the same kernels in the same order, so the same bits (state, records,
verdicts, the Solution) as the staged step of :meth:`Simulator.step` with ``fused`` off; the
verdicts it takes from its call are those :func:`contactlab.sim.faults.step_fault` forms from
scratch on the states before and after; the steps it declines are the stages' on the same inputs."""
import numpy as np

import contactlab.sim.grasp_step as GS
import contactlab.sim.tree_box_kernels as TB
from contactlab.kernels.residual import boxed_certify_dense
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim import faults
from .test_box_joint_stages import _independent_problem

FIELDS = ("time", "contacts", "lcp_size", "iterations", "pivots", "residual", "success", "rescued", "kinetic_energy",
          "energy", "energy_gain", "contact_energy_gain", "max_penetration", "joint_error", "plausible", "fault",
          "status")
STATE = ("position", "quaternion", "linear_velocity", "angular_velocity")


def _sim(fused=True):
    sc = make_scene("barrett-grasp", material="rubber")
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                    controllers=sc.controllers)
    sim.fused = fused
    return sim


def _same_step(a, b, ra, rb):
    assert [getattr(ra, f) for f in FIELDS] == [getattr(rb, f) for f in FIELDS]
    for f in STATE:
        assert np.array_equal(getattr(a.data, f), getattr(b.data, f))


def test_the_fused_step_gives_the_staged_steps_bits():
    """200 steps of the grasp (settle, close, squeeze): every step the fused one, the same state and
    records bit for bit; the last step's Solution, StepResult, warm start and system (assembled when
    read) are the stages' too."""
    a, b = _sim(), _sim(fused=False)
    for _ in range(200):
        ra, rb = a.step(), b.step()
        _same_step(a, b, ra, rb)
    assert isinstance(a._fused, GS.FusedGraspStep) and b._fused is None
    sa, sb = a.last_solution, b.last_solution
    assert sa.status == sb.status and sa.info == sb.info and sa.iterations == sb.iterations
    assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w)
    assert sa.relative_residual == sb.relative_residual and sa.residual == sb.residual
    for f in ("v_next", "normal", "tangent", "joint", "limit", "motor", "modes"):
        assert np.array_equal(getattr(a.data.result, f), getattr(b.data.result, f))
    assert np.array_equal(a.data.warm["z"], b.data.warm["z"])
    assert np.array_equal(a.last_system.N.toarray(), b.last_system.N.toarray())
    assert np.array_equal(a.last_system.v_free(), b.last_system.v_free())


def test_its_steady_steps_call_the_compiled_entry_and_any_other_argument_goes_to_the_dispatcher():
    """A steady step (the previous one the fused step's, with contacts) calls the physics call's
    machine code directly (FusedGraspStep._entry, taken once); an argument that is no longer the
    object the entry was taken with (a replaced motor array) sends the call back to the dispatcher;
    every step the staged run's bits."""
    a, b = _sim(), _sim(fused=False)
    for _ in range(80):
        _same_step(a, b, a.step(), b.step())
    fused = a._fused
    assert fused._entry and fused._entry_for[0] is a.data.position
    real, calls = fused._entry, []
    fused._entry = lambda *args: calls.append(1) or real(*args)
    for _ in range(20):
        _same_step(a, b, a.step(), b.step())
    assert len(calls) == 20 and a.data.contacts.count
    for sim in (a, b):      # the same values in a new array: the dispatcher's call (not the entry's key)
        sim.data.motor_target = sim.data.motor_target.copy()
    for _ in range(20):
        _same_step(a, b, a.step(), b.step())
    assert len(calls) == 20


def test_the_solution_built_when_read_is_the_stages():
    """The fused step leaves its Solution to be built on first read (StepState.solve_later): read
    every third step of 60, it is the staged step's Solution field for field (types too), the
    record's iterations, residual and solve time are that Solution's, it is built once, and an
    unread step's is dropped by the next step's."""
    a, b = _sim(), _sim(fused=False)
    fields = ("status", "iterations", "pivots", "method", "info", "x")
    numbers = ("residual", "complementarity", "infeasibility", "relative_residual")
    for k in range(60):
        ra, rb = a.step(), b.step()
        _same_step(a, b, ra, rb)
        if k < 2 or k % 3:
            continue
        assert a.step_state._unsolved is not None       # not built before it is read
        sa, sb = a.last_solution, b.last_solution
        assert a.step_state._unsolved is None and a.last_solution is sa
        assert type(sa) is type(sb) and [getattr(sa, f) for f in fields] == [getattr(sb, f) for f in fields]
        for f in numbers:
            x, y = getattr(sa, f), getattr(sb, f)
            assert type(x) is type(y) and (x == y or (x != x and y != y))
        assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w)
        assert ra.iterations == sa.iterations and ra.residual == float(sa.residual) and ra.solve_time == sa.time_s
    a.last_solution = sb
    assert a.step_state._unsolved is None and a.last_solution is sb


def test_its_verdicts_and_certificates_are_those_formed_from_scratch():
    """Each step's verdict (taken from the call) equals faults.step_fault's on the states before and
    after with no verdict at hand (the free velocity from the assembled system), and each answer's
    certificate holds on the problem assembled from scratch (solve()'s relative residual, at most
    its threshold)."""
    sc = make_scene("barrett-grasp", material="rubber")
    seen = []

    def snapshot(sim):      # the last controller: the state the step starts from
        d = sim.data
        seen[:] = [(d.position.copy(), d.linear_velocity.copy(), d.angular_velocity.copy(),
                    float(getattr(sim, "_fault_joint_error", 0.0)))]
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                    controllers=[*sc.controllers, snapshot])
    checked = 0
    for k in range(120):
        rec = sim.step()
        assert isinstance(sim._fused, GS.FusedGraspStep)
        if k % 10 == 9:
            state = sim.step_state
            assert state.judged is None          # the fused step's verdict was its call's own
            sys = sim.last_system       # assembled from the state before the step (StepState.defer)
            scratch = faults.step_fault(sim, seen[0], rec)      # on the assembled system's v_free
            assert scratch == rec.fault and rec.plausible == (not scratch)
            # the certificate on the step's boxed LCP formed with dense numpy from the maximal system
            # (tests/sim/test_tree_box_stages.py: its answer solves that problem)
            M, q, lo, hi, *_ = _independent_problem(sys, sys.cfm + sim.model_options.cfm, sim.model_options)
            z = sim.last_solution.z
            n = q.shape[0]
            _w, nat, _comp, infeas, rn, _rc, ri = boxed_certify_dense(M, q, lo, hi, np.full(n, -1), np.zeros(n), z)
            assert max(rn, ri) <= sim.stages.threshold and np.isfinite(nat) and np.isfinite(infeas)
            assert max(rn, ri) <= 10 * max(sim.last_solution.relative_residual, 1e-12) + sim.stages.threshold
            checked += 1
    assert checked == 12


def test_a_step_it_declines_is_the_stages_on_the_same_inputs(monkeypatch):
    """The call declines every third step (nothing changed, as the kernel declines): the stages take
    those steps from build on the same contacts, and the run is the staged run's bit for bit."""
    kernel = TB.tree_box_fused_step
    seen = {"declined": 0}
    calls = {"n": 0}

    def declining(*args):
        calls["n"] += 1
        if calls["n"] % 3 == 0:
            seen["declined"] += 1
            return (TB.DECLINED, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0, faults_not_judged(), np.zeros(0),
                    np.zeros(0, dtype=np.int8))
        return kernel(*args)
    a, b = _sim(), _sim(fused=False)
    monkeypatch.setattr(TB, "tree_box_fused_step", declining)
    for _ in range(90):
        ra, rb = a.step(), b.step()
        _same_step(a, b, ra, rb)
        assert a.last_solution.info == b.last_solution.info
    assert seen["declined"] == 30 and isinstance(a._fused, GS.FusedGraspStep)


def faults_not_judged():
    return (faults.NOT_JUDGED, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_run_takes_the_fused_steps_and_the_planning_declines_what_it_cannot_take():
    """Simulator.run steps through the fused step (no rollout for the hand) to the staged run's
    records; a world whose detection is its own, or ``fused`` off, keeps the stages."""
    a, b = _sim(), _sim(fused=False)
    ta, tb = a.run(40 * a.h), b.run(40 * b.h)
    assert isinstance(a._fused, GS.FusedGraspStep)
    assert len(ta.records) == len(tb.records) == 40
    # (run sets energy_gain NaN under actuation: compared by repr, every bit of the others too)
    assert [[repr(getattr(r, f)) for f in FIELDS] for r in ta.records] == [[repr(getattr(r, f)) for f in FIELDS]
                                                                            for r in tb.records]
    c = _sim()
    c.world.detect_matched = lambda *args, **kw: type(c.world).detect_matched(c.world, *args, **kw)
    c.step()
    assert c._fused is False


def test_settings_changed_between_steps_are_read_the_step_after():
    """The fused step forms its floats from the Settings once per change (FusedGraspStep._read_settings):
    a margin, slop, drift correction and cfm set between steps are the next step's, as the stages read
    them each step: the staged run's bits before and after each change, on a fused step throughout."""
    a, b = _sim(), _sim(fused=False)
    changes = [("margin", 0.004), ("slop", 2e-4), ("zeta", 0.1), ("cfm", 1e-9), ("contact_zeta", 0.3)]
    for k in range(30 * (len(changes) + 1)):
        if k and k % 30 == 0:
            name, value = changes[k // 30 - 1]
            for sim in (a, b):
                setattr(sim.model.settings, name, value)
        _same_step(a, b, a.step(), b.step())
        assert isinstance(a._fused, GS.FusedGraspStep)
    assert a.world.margin == b.world.margin == 0.004


def test_its_timing_and_result_are_the_stages_forms():
    """The step's timing formed on first read (StepState.time_later) has the stages' stages, the
    call's time as "solve", and stays what was read; its StepResult (StepResult.of) is the
    constructor's form: no info, no acceleration, the StepResult type."""
    from contactlab.models.common import StepResult
    a = _sim()
    for _ in range(30):
        a.step()
    state = a.step_state
    assert state._stamps is not None
    t = a.timing
    assert state._stamps is None and a.timing is t
    assert list(t) == ["detect", "build", "solve", "integrate", "record"]
    assert t["build"] == t["record"] == 0.0 and min(t.values()) >= 0.0 and t["solve"] == a.last_solution.time_s
    a.timing = {"detect": 1.0}
    assert a.timing == {"detect": 1.0}
    r = a.data.result
    assert type(r) is StepResult and r.info == {} and r.accel is None
    assert list(vars(r)) == [f for f in StepResult.__dataclass_fields__]
    made = StepResult(v_next=r.v_next, normal=r.normal, tangent=r.tangent, joint=r.joint, limit=r.limit,
                      motor=r.motor, modes=r.modes)
    assert vars(made).keys() == vars(r).keys()
    assert all(getattr(made, f) is getattr(r, f) for f in vars(r) if f != "info")


def test_motor_and_torque_inputs_follow_the_data_between_steps():
    """The call's motor and torque inputs, kept while the motors' arrays are the same objects and no
    joint torque is set (FusedGraspStep._inputs), follow the data: joint torques set on some steps
    (a controller), the force limits replaced by a new array, the targets' values changed in place;
    every step the staged run's bits."""
    def torque(sim):
        if sim.data.steps % 7 == 3:
            sim.set_joint_torque("f1_distal", 0.05)
    sims = []
    for fused in (True, False):
        sc = make_scene("barrett-grasp", material="rubber")
        sim = Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                        controllers=[*sc.controllers, torque])
        sim.fused = fused
        sims.append(sim)
    a, b = sims
    for k in range(90):
        if k == 40:
            for sim in (a, b):
                sim.data.motor_max_force = 0.5 * sim.data.motor_max_force
        _same_step(a, b, a.step(), b.step())
    assert isinstance(a._fused, GS.FusedGraspStep) and a._fused._inputs_for is a.data.motor_target
    assert a._fused._inputs[3] is a.data.motor_max_force


def test_compiled_entry_is_the_specialisation_the_dispatcher_ran():
    """_compiled_entry after a call: with one specialisation compiled, that one's machine code (it
    has just run on the arguments); with several, the one of the arguments' exact types; either
    gives the dispatcher's answer."""
    import numba

    @numba.njit
    def kernel(x, y):
        return x.sum() * y

    f, i = np.arange(3.0), np.arange(4)
    assert kernel(f, 2.0) == 6.0
    (only,) = kernel.overloads.values()
    assert GS._compiled_entry(kernel, (f, 2.0)) is only.entry_point
    assert kernel(i, 3) == 18 and len(kernel.overloads) == 2
    for args in ((f, 2.0), (i, 3)):
        entry = GS._compiled_entry(kernel, args)
        assert entry is kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)].entry_point
        assert entry(*args) == kernel(*args)
