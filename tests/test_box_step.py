"""The compiled box-friction step (sim/box_step.py) against the general path it replaces: the same
kernels in the same order, so the same bits, step after step; the system and problem assembled when
read equal the general path's; a declined step changes nothing; configurations it does not
reproduce never use it."""
import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import contactlab.sim.box_step as BS
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _sim(scene, count, coupling, compiled=True, stabilization=None, **kw):
    sc = make_scene(scene, count=count, **kw)
    if stabilization is not None:
        sc.settings.contact_stabilization = stabilization
    sim = Simulator(sc, "box-friction", "box-qp", model_options={"coupling": coupling})
    if not compiled:
        sim._box_step = None
    return sim


def _count_compiled(monkeypatch):
    """Count the compiled calls and the steps they took (outcome != DECLINED) and went deep."""
    seen = {"calls": 0, "taken": 0, "deep": 0}
    kernel = BS.box_friction_step

    def counted(*args):
        out = kernel(*args)
        seen["calls"] += 1
        seen["taken"] += out[0] != BS.DECLINED
        seen["deep"] += bool(out[0] != BS.DECLINED and out[3])
        return out

    monkeypatch.setattr(BS, "box_friction_step", counted)
    return seen


def _state(sim):
    d = sim.data
    return [a.copy() for a in (d.position, d.quaternion, d.linear_velocity, d.angular_velocity)]


def _shift_down(sim, body, dz):
    """Push ``body`` dz into the one below (a penetration beyond the slop: the position correction runs)."""
    sim.data.position[body, 2] -= dz


@pytest.mark.parametrize("scene,count,coupling,stabilization,push", [
    ("pile", 10, "previous", None, 0.0),          # falling, landing, settling (the benchmark's pile)
    ("stack", 8, "current", None, 0.0),           # friction-coupled bounds: box-qp's bound updates
    ("stack", 4, "current", None, 0.004),         # 4 mm overlap: position correction after the call
    ("stack", 4, "previous", "velocity", 0.004),  # velocity-level stabilisation (zeta in the bias)
])
def test_compiled_step_gives_the_general_paths_bits(monkeypatch, scene, count, coupling, stabilization, push):
    seen = _count_compiled(monkeypatch)
    a = _sim(scene, count, coupling, True, stabilization)
    b = _sim(scene, count, coupling, False, stabilization)
    assert a._box_step is not None
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
    # the compiled call took most steps (the general path only those it declines: no contact, ...)
    assert seen["taken"] >= 100
    if push and stabilization is None:
        assert seen["deep"] >= 1      # the position correction ran after a compiled call


def test_system_and_problem_assembled_when_read_equal_the_general_paths():
    a = _sim("pile", 10, "previous", True)
    b = _sim("pile", 10, "previous", False)
    for _ in range(80):
        a.step(), b.step()
    assert a._deferred_system is not None          # not assembled until read
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
    # the applied answer solves the problem read back, at the certified threshold
    assert pa.certify(a.last_solution.z)[2].natural <= 1e-6


def test_a_declined_step_changes_nothing_and_the_general_path_takes_it(monkeypatch):
    a = _sim("stack", 4, "current", True)
    b = _sim("stack", 4, "current", False)
    for _ in range(10):
        a.step(), b.step()
    seen = _count_compiled(monkeypatch)
    a._box_step.threshold = -1.0          # no answer certifies: every call declines
    before = _state(a)
    contacts = a.world.detect(a.data, margin=a._margin(), sweep=a._sweep())
    assert a._box_step(a, contacts, np.full(contacts.count, -1), 0.0, 0.0) is None
    for x, y in zip(_state(a), before):
        assert np.array_equal(x, y)
    for _ in range(5):
        ra, rb = a.step(), b.step()
        assert ra.residual == rb.residual
        for x, y in zip(_state(a), _state(b)):
            assert np.array_equal(x, y)
    assert seen["calls"] == 6 and seen["taken"] == 0


@pytest.mark.parametrize("make", [
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "pgs"),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", iterations=5),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", model_options={"joints": "schur"}),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", islands=True),
    lambda: Simulator(make_scene("stack", count=3), "box-friction", "box-qp", solver_options={"algorithm": "ipm"}),
    lambda: Simulator(make_scene("stack", count=3), "stewart-trinkle", "lemke"),
    lambda: Simulator(make_scene("box-gripper"), "box-friction", "box-qp"),     # joints and a kinematic base
])
def test_configurations_it_does_not_reproduce_take_the_general_path(make):
    assert make()._box_step is None
