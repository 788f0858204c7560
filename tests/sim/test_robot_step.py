"""The legged robots' fused step (sim/robot_step.py) against the stages it stands for: the same
kernels in the same order, so the same bits (state, records, the controller's log) as the staged
step of :meth:`Simulator.step` with ``fused`` off; it is planned only where every controller has a
compiled form, and the steps it cannot take (motors, torques set by hand, a declined call) are the
stages' with the controller run once."""
import numpy as np
import pytest

import contactlab.sim.robot_rollout as RR
import contactlab.sim.robot_step as RS
import contactlab.sim.tree_kernels as TK
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _sim(robot, fused=True, extra=()):
    sc = make_scene(robot)
    sim = Simulator(sc, "no-slip", None, controllers=[*getattr(sc, "controllers", ()), *extra])
    sim.fused = fused
    return sc, sim


def _trace(sc, sim, steps, between=None):
    recs = []
    for _ in range(steps):
        if between is not None:
            between(sim)
        recs.append(sim.step())
    state = [a.copy() for a in (sim.data.position, sim.data.quaternion, sim.data.linear_velocity,
                                sim.data.angular_velocity)]
    log = sc.controllers[0].arrays()
    return state, recs, log


def _same(a, b):
    (sa, ra, la), (sb, rb, lb) = a, b
    assert all(np.array_equal(x, y) for x, y in zip(sa, sb))
    fields = ("time", "contacts", "lcp_size", "iterations", "pivots", "residual", "success", "rescued",
              "kinetic_energy", "energy", "energy_gain", "contact_energy_gain", "max_penetration", "joint_error",
              "plausible", "fault", "status")
    assert [[getattr(r, f) for f in fields] for r in ra] == [[getattr(r, f) for f in fields] for r in rb]
    assert la.keys() == lb.keys() and all(np.array_equal(la[k], lb[k], equal_nan=True) for k in la)


@pytest.mark.parametrize("robot,steps", [("quadruped", 160), ("solo12", 120)])
def test_the_fused_step_gives_the_staged_steps_bits(robot, steps):
    sc, fused = _sim(robot)
    a = _trace(sc, fused, steps)
    assert isinstance(fused._fused, RS.FusedRobotStep)           # every step was the fused one
    sc2, staged = _sim(robot, fused=False)
    b = _trace(sc2, staged, steps)
    assert staged._fused is None
    _same(a, b)
    # the system and problem of the last step, assembled when read, are the stages' too
    assert np.array_equal(fused.last_system.N.toarray(), staged.last_system.N.toarray())
    assert fused.last_solution.status == staged.last_solution.status


def test_a_python_controller_keeps_the_stages():
    seen = []
    sc, sim = _sim("quadruped", extra=[lambda s: seen.append(s.data.steps)])
    for _ in range(3):
        sim.step()
    assert sim._fused is False and seen == [0, 1, 2]     # planned out; the callback runs each step


def test_steps_it_cannot_take_are_the_stages_with_the_controller_run_once(monkeypatch):
    """Joint torques set by hand before a step, and a motor on a knee (its target read by the call,
    which declines: the maximal stages take those steps), on both paths: the same bits."""
    def poke(sim):
        if sim.data.steps == 40:
            sim.set_joint_torque(sim.model.joints[2].name, 0.01)
        if sim.data.steps == 60:
            sim.set_motor(sim.model.joints[2].name, target_velocity=0.0, max_force=np.inf)
    declined = {"n": 0}
    kernel = TK.tree_noslip_step

    def call(*args):
        out = kernel(*args)
        declined["n"] += out[0] == 0
        return out
    monkeypatch.setattr(TK, "tree_noslip_step", call)
    sc, fused = _sim("quadruped")
    a = _trace(sc, fused, 80, poke)
    assert declined["n"] >= 20 and isinstance(fused._fused, RS.FusedRobotStep)
    assert len(sc.controllers[0].arrays()["time"]) == 80          # one log row per step: run once each
    sc2, staged = _sim("quadruped", fused=False)
    b = _trace(sc2, staged, 80, poke)
    _same(a, b)


def test_a_force_limited_motor_goes_to_the_stages_build():
    def poke(sim):
        if sim.data.steps == 30:
            sim.set_motor(sim.model.joints[2].name, target_velocity=0.0, max_force=1.0)
    sc, fused = _sim("quadruped")
    a = _trace(sc, fused, 50, poke)
    sc2, staged = _sim("quadruped", fused=False)
    b = _trace(sc2, staged, 50, poke)
    _same(a, b)


def test_a_deep_contact_is_corrected_by_the_stages_integration_on_both_paths(monkeypatch):
    """The robot started 4 mm into the ground: every call leaves its position correction to the
    caller (outcome DEEP), which the stages' integrate does; both paths the same bits."""
    outcomes = []
    kernel = TK.tree_noslip_step

    def call(*args):
        out = kernel(*args)
        outcomes.append(int(out[0]))
        return out
    monkeypatch.setattr(TK, "tree_noslip_step", call)

    def sunk(fused):
        sc, sim = _sim("quadruped", fused=fused)
        sim.data.position[sim.model.dof_start >= 0, 2] -= 0.004
        return sc, sim
    sc, fused = sunk(True)
    a = _trace(sc, fused, 30)
    assert isinstance(fused._fused, RS.FusedRobotStep) and outcomes.count(2) >= 10     # DEEP steps taken
    assert a[1][-1].max_penetration < a[1][0].max_penetration                           # pushed out
    sc2, staged = sunk(False)
    _same(a, _trace(sc2, staged, 30))


def _run_trace(sc, sim, steps, record_poses=False):
    """:meth:`Simulator.run` (the rollout where the fused step takes the steps, sim/robot_rollout.py)."""
    traj = sim.run(steps * sim.h, record_poses=record_poses)
    state = [a.copy() for a in (sim.data.position, sim.data.quaternion, sim.data.linear_velocity,
                                sim.data.angular_velocity)]
    assert all(np.isnan(r.energy_gain) for r in traj.records)      # motors act: run() records NaN
    for r in traj.records:
        r.energy_gain = 0.0
    return (state, traj.records, sc.controllers[0].arrays()), traj


def _calls(monkeypatch):
    """(steps asked, steps taken, handed over) of each rollout call."""
    calls, run = [], RR.RobotRollout.run

    def counted(self, steps, record_poses):
        asked = 0 if self.rest else min(steps, self.chunk)
        out = run(self, steps, record_poses)
        calls.append((asked, len(out[0]), out[3]))
        return out
    monkeypatch.setattr(RR.RobotRollout, "run", counted)
    return calls


def _fixed_chunks(monkeypatch, n):
    """Every rollout call of ``n`` steps (not sized from the wall time of the one before: a schedule
    that does not depend on the machine's load)."""
    monkeypatch.setattr(RR, "FIRST_CHUNK", n)
    monkeypatch.setattr(RR, "next_chunk", lambda steps, seconds: n)


@pytest.mark.parametrize("robot,steps", [("quadruped", 300), ("solo12", 120)])
def test_runs_through_the_rollout_give_the_staged_steps_bits(robot, steps, monkeypatch):
    """run() takes chunks of steps in one compiled call (past a chunk's end: 256 steps, then a second
    chunk, no single step between them); its records, poses, state, log, contacts and last step's
    objects are those of the staged steps."""
    _fixed_chunks(monkeypatch, RR.MAX_CHUNK)
    calls = _calls(monkeypatch)
    sc, rolled = _sim(robot)
    a, ta = _run_trace(sc, rolled, steps, record_poses=True)
    assert sum(c[1] for c in calls) == steps and not any(c[2] for c in calls)     # every step by a call
    sc2, staged = _sim(robot, fused=False)
    b, tb = _run_trace(sc2, staged, steps, record_poses=True)
    _same(a, b)
    assert [list(vars(r)) for r in ta.records] == [list(vars(r)) for r in tb.records]   # the records' own layout
    assert len(ta.positions) == steps + 1 and all(np.array_equal(x, y) for x, y in zip(ta.positions, tb.positions))
    assert all(np.array_equal(x, y) for x, y in zip(ta.quaternions, tb.quaternions))
    assert np.array_equal(rolled.data.result.normal, staged.data.result.normal)
    assert np.array_equal(rolled.data.contacts.point, staged.data.contacts.point)
    assert rolled.data.steps == staged.data.steps == steps and rolled.data.time == staged.data.time
    assert np.array_equal(rolled.last_system.N.toarray(), staged.last_system.N.toarray())
    sa, sb = rolled.last_solution, staged.last_solution
    assert (sa.status, sa.iterations, sa.pivots, sa.residual) == (sb.status, sb.iterations, sb.pivots, sb.residual)
    assert np.array_equal(sa.z, sb.z) and np.array_equal(sa.w, sb.w) and sa.info.keys() == sb.info.keys()
    assert all(np.array_equal(sa.info[k], sb.info[k]) for k in sa.info)
    assert np.array_equal(rolled.last_problem.q, staged.last_problem.q)


def test_a_step_handed_over_mid_chunk_is_the_stages_and_the_rollout_resumes(monkeypatch):
    """With a slop of 1e-8 m the turn test (sim/turns.py) and deep contacts hand steps to the
    stages in the middle of a chunk: the state goes back to the start of that step, the fused step
    takes it, the rollout resumes; the same bits as the staged steps throughout."""
    _fixed_chunks(monkeypatch, RR.MAX_CHUNK)
    calls = _calls(monkeypatch)

    def tight(fused):
        sc, sim = _sim("quadruped", fused=fused)
        sim.model.settings.slop = 1e-8
        return sc, sim
    sc, rolled = tight(True)
    a, _ = _run_trace(sc, rolled, 400)
    assert any(c[2] and 0 < c[1] < c[0] for c in calls)        # handed over after some steps of a chunk
    assert any(not c[2] or c[1] > 0 for c in calls[1:])
    sc2, staged = tight(False)
    _same(a, _run_trace(sc2, staged, 400)[0])


def test_each_call_is_sized_to_end_within_the_call_seconds():
    """next_chunk: as many steps as the last call's pace fits in CALL_SECONDS, from 1 to MAX_CHUNK."""
    assert RR.next_chunk(256, 10 * RR.CALL_SECONDS) == 25          # 10x too slow: a tenth of the steps
    assert RR.next_chunk(32, RR.CALL_SECONDS / 2) == 64
    assert RR.next_chunk(100, 1e-6) == RR.MAX_CHUNK
    assert RR.next_chunk(1, 100.0) == 1 and RR.next_chunk(0, 100.0) == 1   # (0: a step handed over at once)
    assert RR.next_chunk(5, 0.0) == RR.MAX_CHUNK


@pytest.mark.parametrize("chunk", [1, 7])
def test_calls_of_any_size_give_the_staged_steps_bits(chunk, monkeypatch):
    """Calls of 1 or 7 steps (one after another, every step by a call, Simulator.run): the records, poses,
    state and log of the staged steps, bit for bit (where the calls end is the wall clock's choice)."""
    _fixed_chunks(monkeypatch, chunk)
    calls = _calls(monkeypatch)
    sc, rolled = _sim("quadruped")
    a, ta = _run_trace(sc, rolled, 60, record_poses=True)
    assert len(calls) == -(-60 // chunk) and {c[0] for c in calls[:-1]} == {chunk} and not any(c[2] for c in calls)
    assert sum(c[1] for c in calls) == 60
    sc2, staged = _sim("quadruped", fused=False)
    b, tb = _run_trace(sc2, staged, 60, record_poses=True)
    _same(a, b)
    assert all(np.array_equal(x, y) for x, y in zip(ta.positions, tb.positions))


def _interrupt_at_return(exc):
    """A Ctrl-C as CPython reports one that lands while a compiled call boxes its result: SystemError
    with the KeyboardInterrupt behind it (contactlab.errors.interrupt_behind; tests/test_errors.py)."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as k:
        try:
            raise SystemError("CPUDispatcher(<function robot_rollout>) returned a result with an exception set") \
                from k
        except SystemError as e:
            exc.append(e)
    return exc[-1]


@pytest.mark.parametrize("where", ["call", "bookkeeping"])
def test_an_interrupt_leaves_every_step_taken_recorded_and_the_run_resumes_with_the_same_bits(where, monkeypatch):
    """A Ctrl-C in the third rollout call of a run into a Trajectory (as ``contactlab simulate``
    runs), at the call's return (after its steps, before they are handed over) or in its bookkeeping
    (the records formed, the state's objects already replaced): KeyboardInterrupt out of run(), and
    the simulator stands at its last recorded step (the call's steps undone: time, step count, state,
    the last pose recorded, one controller log row per step). Resumed, the run is the uninterrupted
    run's: the same records, poses, state and log, bit for bit."""
    from contactlab.sim.recorder import Trajectory
    _fixed_chunks(monkeypatch, 25)
    n = {"calls": 0}
    kernel, records = RR.robot_rollout, RR._records

    def rollout(*args):
        out = kernel(*args)
        n["calls"] += 1
        if where == "call" and n["calls"] == 3:
            raise _interrupt_at_return([])
        return out

    def bookkeeping(*args):
        if where == "bookkeeping" and n["calls"] == 3:
            raise KeyboardInterrupt
        return records(*args)
    monkeypatch.setattr(RR, "robot_rollout", rollout)
    monkeypatch.setattr(RR, "_records", bookkeeping)
    sc, sim = _sim("quadruped")
    traj = Trajectory(list(sim.model.names))
    with pytest.raises(KeyboardInterrupt):
        sim.run(200 * sim.h, trajectory=traj, record_poses=True)
    done = len(traj.records)
    assert done == 50 and sim.data.steps == done        # two calls of 25, one after the other
    assert sim.data.time == traj.records[-1].time == pytest.approx(done * sim.h)
    assert len(traj.positions) == done + 1 and np.array_equal(traj.positions[-1], sim.data.position)
    assert np.array_equal(traj.quaternions[-1], sim.data.quaternion)
    assert sc.controllers[0].arrays()["time"].size == done
    n["calls"] = 10 ** 6                                 # no more interrupts: resume
    sim.run((200 - done) * sim.h, trajectory=traj, record_poses=True)
    monkeypatch.setattr(RR, "robot_rollout", kernel)
    sc2, whole = _sim("quadruped")
    b, tb = _run_trace(sc2, whole, 200, record_poses=True)
    for r in traj.records:
        r.energy_gain = 0.0
    state = [x.copy() for x in (sim.data.position, sim.data.quaternion, sim.data.linear_velocity,
                                sim.data.angular_velocity)]
    _same((state, traj.records, sc.controllers[0].arrays()), b)
    assert len(traj.positions) == 201 and all(np.array_equal(x, y) for x, y in zip(traj.positions, tb.positions))
    assert np.array_equal(sim.data.result.normal, whole.data.result.normal)
