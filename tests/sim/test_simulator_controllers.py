"""Per-step controllers and joint torques (issue 11): a torque-driven pendulum against the analytic
angular acceleration tau / I_pivot, equal and opposite reaction, one-step lifetime of a torque."""
import numpy as np
import pytest

from contactlab.errors import ModelError
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _pendulum(links=1, dt=0.001):
    scene = make_scene("pendulum-chain", links=links, length=0.4, mass=2.0, dt=dt)
    scene.gravity = (0.0, 0.0, 0.0)
    return scene


def test_torque_driven_pendulum_has_the_analytic_angular_acceleration():
    tau, m, L, w, h = 3.0, 2.0, 0.4, 0.05, 0.001
    calls = []

    def drive(sim):
        calls.append(sim.data.steps)
        sim.set_joint_torque("joint0", tau)

    sim = Simulator(_pendulum(dt=h), "box-friction", "pgs-sm", controllers=[drive])
    n = 50
    sim.run(n * h)
    assert calls == list(range(n))           # called once before every step, in order
    # I about the pivot (rod of a box L x w x w rotating about y through one end)
    I_pivot = m * (L * L + w * w) / 12.0 + m * (L / 2) ** 2
    alpha = tau / I_pivot
    omega = sim.data.angular_velocity[0]
    assert omega[1] == pytest.approx(alpha * n * h, rel=1e-4)  # cfm and drift correction: ~1e-5
    assert abs(omega[0]) < 1e-9 and abs(omega[2]) < 1e-9
    # the link turns about the pivot: the centre moves on the circle of radius L/2
    theta = 0.5 * alpha * (n * h) ** 2
    assert np.linalg.norm(sim.data.position[0] - np.array([0.0, 0.0, 3.0])) == pytest.approx(L / 2, rel=1e-6)
    c = sim.data.position[0] - np.array([0.0, 0.0, 3.0])
    # positive rotation about +y takes +x towards -z
    assert np.arctan2(-c[2], c[0]) == pytest.approx(theta, rel=0.02)


def test_joint_torque_is_equal_and_opposite_and_lasts_one_step():
    h = 0.001
    sim = Simulator(_pendulum(links=2, dt=h), "box-friction", "pgs-sm")
    sim.add_controller(lambda s: s.set_joint_torque("joint1", 1.5) if s.data.steps == 0 else None)
    sim.step()
    # the torque between the links is internal: total angular momentum about the fixed pivot
    # changes only through the pivot's reaction, which has no moment about the pivot axis (y)
    m, I = sim.model.mass, sim.model.inertia
    pivot = np.array([0.0, 0.0, 3.0])
    Ly = 0.0
    for i in range(2):
        R = sim.data.rotation()[i]
        Iw = R @ I[i] @ R.T
        r = sim.data.position[i] - pivot
        Ly += (Iw @ sim.data.angular_velocity[i])[1] + m[i] * np.cross(r, sim.data.linear_velocity[i])[1]
    assert abs(Ly) < 1e-9
    assert sim.data.angular_velocity[1][1] > 1e-4          # the child turned forward ...
    assert sim.data.angular_velocity[0][1] < -1e-4         # ... and the parent back
    w1 = sim.data.angular_velocity.copy()
    sim.step()                                              # no torque any more: free rotation
    assert np.allclose(sim.data.angular_velocity[:, 1], w1[:, 1], atol=1e-6)


def test_bad_controller_and_joint_names_are_our_errors():
    sim = Simulator(_pendulum(), "box-friction", "pgs-sm")
    with pytest.raises(ModelError, match="callable"):
        sim.add_controller(3)
    with pytest.raises(ModelError, match="no joint named"):
        sim.set_joint_torque("elbow", 1.0)
    with pytest.raises(ModelError, match="finite"):
        sim.set_joint_torque("joint0", float("nan"))


def test_set_joint_torques_is_set_joint_torque_for_each_joint():
    """The bulk setter leaves the same torques, in the same order, as one set_joint_torque per joint
    (so the step sums the same forces in the same order), and refuses what the single one refuses."""
    names = ["joint0", "joint1", "joint2"]
    a, b = (Simulator(make_scene("pendulum-chain"), "box-friction", "pgs") for _ in range(2))
    tau = [0.5, -1.25, 2.0]
    for n, t in zip(names, tau):
        a.set_joint_torque(n, t)
    b.set_joint_torques(names, np.array(tau))
    assert list(a.data.joint_torque.items()) == list(b.data.joint_torque.items())
    a.step(), b.step()
    assert np.array_equal(a.data.position, b.data.position) and not b.data.joint_torque
    with pytest.raises(ModelError, match="one value per joint"):
        b.set_joint_torques(names, [1.0, 2.0])
    with pytest.raises(ModelError, match="finite"):
        b.set_joint_torques(names, [1.0, np.nan, 2.0])
    with pytest.raises(ModelError, match="no joint named"):
        b.set_joint_torques(["joint0", "elbow"], [1.0, 2.0])
