"""The no-slip step in joint coordinates (sim/tree_stages.py, sim/tree_kernels.py) on the papers'
legged robots against the maximal-coordinate step (sim/noslip_stages.py): it is planned for the
trees and not for what it does not cover, every step is taken and certified, the bodies stay on
their joints without a projection, and the robots do the same job (the trot walks the same
distance, Solo-12 stands at the same height) within what the two time discretisations differ by."""
import numpy as np
import pytest

import contactlab.sim.tree_kernels as TK
import contactlab.sim.tree_stages as TS
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _sim(robot, **kw):
    sc = make_scene(robot)
    return Simulator(sc, "no-slip", kw.pop("method", None), controllers=getattr(sc, "controllers", ()), **kw)


def _run(sim, steps):
    x0 = sim.data.position[1].copy()
    worst_joint, certified = 0.0, 0
    for _ in range(steps):
        rec = sim.step()
        certified += bool(rec.success)
        worst_joint = max(worst_joint, rec.joint_error)
    return sim.data.position[1] - x0, sim.data.position[1, 2], certified, worst_joint


@pytest.mark.parametrize("robot,steps", [("quadruped", 600), ("solo12", 400)])
def test_the_robots_do_the_same_job_in_joint_coordinates(monkeypatch, robot, steps):
    seen = {"taken": 0}
    kernel = TK.tree_noslip_step

    def call(*args):
        out = kernel(*args)
        seen["taken"] += out[0] != 0
        return out

    monkeypatch.setattr(TK, "tree_noslip_step", call)
    tree = _sim(robot)
    assert type(tree.stages) is TS.CompiledTreeNoSlipStages
    moved, z, certified, joint = _run(tree, steps)
    assert seen["taken"] == steps and certified == steps
    assert joint < 1e-12                 # forward kinematics: on the joints, nothing to project
    monkeypatch.setattr(TS.CompiledTreeNoSlipStages, "plan", classmethod(lambda cls, sim, state: None))
    maximal = _sim(robot)
    assert type(maximal.stages) is not TS.CompiledTreeNoSlipStages
    moved_m, z_m, certified_m, _ = _run(maximal, steps)
    assert certified_m == steps
    assert abs(z - z_m) < 2e-3                                      # the same standing height (m)
    if robot == "quadruped":                                        # the trot walks forward as far
        assert moved_m[0] > 0.01 and abs(moved[0] - moved_m[0]) < 0.15 * moved_m[0]


def test_configurations_it_does_not_cover_take_the_maximal_stages():
    sc = make_scene("quadruped")
    sc.joints[0].kind = "spherical"
    sim = Simulator(sc, "no-slip", None)
    assert type(sim.stages) is not TS.CompiledTreeNoSlipStages and sim.stages.compiled


def test_a_step_with_a_motor_is_declined_and_taken_by_the_maximal_stages():
    sim = _sim("quadruped")
    assert type(sim.stages) is TS.CompiledTreeNoSlipStages
    for _ in range(5):
        sim.step()
    sim.data.motor_target[0] = 0.1
    before = sim.data.position.copy()
    rec = sim.step()
    assert rec.success and not np.array_equal(before, sim.data.position)
    assert sim.data.result.info["motor_trials"] >= 1 and sim.data.result.joint.size > 0   # the maximal answer


def test_contacts_given_as_plain_arrays_give_the_same_step_and_the_deferred_system_reads_them():
    """The call takes the detection's packed buffers; a contact set holding its own arrays (a scene's
    own generator, or fields reassigned) is packed for it: both give the same bits. The system
    assembled when read has the step's contacts."""
    import dataclasses
    a, b = _sim("quadruped"), _sim("quadruped")
    detect = b.world.detect_matched

    def plain(*args):
        contacts, match = detect(*args)
        return dataclasses.replace(contacts), match      # fields copied out: no packed buffers

    b.world.detect_matched = plain
    for _ in range(150):
        a.step(), b.step()
    assert b.data.contacts.ints is None and b.data.contacts.count > 0
    assert type(b.stages) is TS.CompiledTreeNoSlipStages
    for x, y in ((a.data.position, b.data.position), (a.data.quaternion, b.data.quaternion),
                 (a.data.linear_velocity, b.data.linear_velocity)):
        assert np.array_equal(x, y)
    sys_ = a.last_system
    assert np.array_equal(sys_.phi, a.data.contacts.phi) and sys_.N.shape[0] == a.data.contacts.count
