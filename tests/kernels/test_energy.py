"""kernels/energy.py: the compiled kinetic and potential energies against the array formulas."""
import numpy as np
import pytest

from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def test_compiled_energies_equal_the_array_formulas():
    """kernels/energy.py against the numpy expressions (1/2 m v^2 + 1/2 w' R I R' w, -m p.g) on a
    tumbling pile, and the rotational part against a hand value for one spinning box."""
    from contactlab.sim.simulator import energies, kinetic_energy, potential_energy
    sim = Simulator(make_scene("pile", count=20, seed=1), "box-friction", "pgs", iterations=20)
    for _ in range(25):
        sim.step()
    rng = np.random.default_rng(3)                     # turned boxes spinning about every axis
    sim.data.angular_velocity[:] = rng.normal(size=sim.data.angular_velocity.shape)
    assert np.abs(sim.data.quaternion[1:, 1:]).max() > 1e-2
    ke, pe = energies(sim.model, sim.data)
    assert ke == pytest.approx(kinetic_energy(sim.model, sim.data), rel=1e-12)
    assert pe == pytest.approx(potential_energy(sim.model, sim.data), rel=1e-12)
    one = Simulator(make_scene("stack", count=1), "box-friction", "pgs")
    i = one.model.index("box0")
    one.data.linear_velocity[i] = (0.0, 0.0, 0.0)
    one.data.angular_velocity[i] = (0.0, 0.0, 3.0)     # about z: I_zz = m (0.2^2 + 0.2^2) / 12
    ke1, _ = energies(one.model, one.data)
    assert ke1 == pytest.approx(0.5 * (1.0 * 0.08 / 12) * 9.0, rel=1e-12)
