"""Physics every contact model owned here must obey in the simulator (issue 10, "contact models").

Each test states an analytic fact and fails when the defect it guards returns:
impacts under RK4 (no approach after impact, no sinking), friction only at touching contacts,
viscous drag never adds energy, Coulomb sliding friction opposes the slip.
"""
import numpy as np
import pytest

from contactlab.errors import ModelError
from contactlab.mechanics.scene import Body, Scene, Settings, Shape
from contactlab.sim.simulator import Simulator

G = 9.81


def _scene(shape: str, z: float, vel=(0.0, 0.0, 0.0), mu: float = 0.5, mass: float = 1.0, dt: float = 0.01):
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    geo = Shape("sphere", radius=0.1) if shape == "sphere" else Shape("box", size=(0.2, 0.2, 0.2))
    body = Body("body", mass=mass, position=(0.0, 0.0, z), linear_velocity=tuple(vel), shapes=[geo])
    return Scene(name=f"drop-{shape}", bodies=[ground, body], mu=mu, settings=Settings(dt=dt))


def _velocity_rows(sim):
    """min over contacts of N v+ + n_bias (>= 0: no approach beyond what the gap allows)."""
    sys_ = sim.last_system
    if sys_.nc == 0:
        return np.inf
    v = sim.data.velocity_vector(sim.model)
    return float((sys_.N @ v + sys_.n_bias).min())


DROP_CASES = [(model, integ) for model in ("viscous", "trinkle-pang") for integ in ("rk4", "euler")]


@pytest.mark.parametrize("model,integrator", DROP_CASES)
@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_drop_at_several_speeds_neither_sinks_nor_approaches_after_impact(model, integrator, shape):
    """A ball / box falls onto the ground at 0.5, 2 and 5 m/s (starting 1 cm above it, inside the
    contact margin grown for the speed): after every step N v+ + n_bias >= 0 (the combined RK4
    update included), the body stops at the ground without sinking deeper than 1e-6 m, and the
    vertical velocity after landing is ~0 (inelastic: no bounce, no approach)."""
    for speed in (0.5, 2.0, 5.0):
        sim = Simulator(_scene(shape, 0.1 + 0.01, vel=(0.0, 0.0, -speed)), model=model,
                        model_options={"integrator": integrator})
        i = sim.model.index("body")
        for _ in range(8):
            rec = sim.step()
            assert rec.success, (model, integrator, shape, speed, rec.status)
            assert _velocity_rows(sim) > -1e-6 * speed, (model, integrator, shape, speed)
        bottom = sim.data.position[i, 2] - 0.1
        assert bottom > -1e-6, f"{model}/{integrator}/{shape} at {speed} m/s sank {-bottom:.3g} m"
        assert abs(sim.data.linear_velocity[i, 2]) < 1e-6 * speed + 1e-9
        info = sim.data.result.info
        assert info["stage_failures"] == 0 and info["certified"]


def test_rk4_landing_step_uses_the_onset_impact():
    """drumwright Sec. VII-B: the step in which the ball arrives starts with the inelastic impact
    (info['impact']); the steps of sustained contact do not."""
    sim = Simulator(_scene("sphere", 0.105, vel=(0.0, 0.0, -1.0)), model="viscous",
                    model_options={"integrator": "rk4"})
    flags = []
    for _ in range(4):
        sim.step()
        flags.append(sim.data.result.info["impact"])
    assert flags[0] and not any(flags[2:])


@pytest.mark.parametrize("model", ["no-slip", "viscous", "trinkle-pang"])
def test_speculative_contact_carries_no_friction(model):
    """A ball 5 mm above the ground (inside the margin: a speculative contact) moving up at 1 m/s
    and sideways at 2 m/s: nothing touches it, so its horizontal velocity is unchanged and its
    vertical one is v_z - g h (free flight)."""
    h = 0.01
    opts = {"mu_v": 5.0} if model == "viscous" else {}
    sim = Simulator(_scene("sphere", 0.1 + 0.005, vel=(2.0, 0.0, 1.0), dt=h), model=model, model_options=opts)
    rec = sim.step()
    assert rec.contacts >= 1 and rec.success            # the contact exists (speculative) ...
    i = sim.model.index("body")
    np.testing.assert_allclose(sim.data.linear_velocity[i], [2.0, 0.0, 1.0 - G * h], rtol=0, atol=1e-9)
    np.testing.assert_allclose(sim.data.angular_velocity[i], 0.0, atol=1e-9)   # ... but exerts no torque


@pytest.mark.parametrize("model", ["no-slip", "viscous"])
def test_touching_contact_still_carries_friction(model):
    """The other half of the rule: a ball resting on the ground and sliding at 1 m/s is slowed
    (no-slip: its contact point stops in one step; viscous: the slip decays)."""
    sim = Simulator(_scene("sphere", 0.1, vel=(1.0, 0.0, 0.0)), model=model, model_options=(
        {"mu_v": 1.0} if model == "viscous" else {}))
    sim.step()
    slip = (sim.last_system.S @ sim.data.velocity_vector(sim.model))[0]
    assert abs(slip) < (1e-9 if model == "no-slip" else 0.99)


@pytest.mark.parametrize("mu_v", [0.1, 10.0, 100.0, 1e4])
@pytest.mark.parametrize("shape", ["sphere", "box"])
def test_viscous_friction_never_gains_energy(mu_v, shape):
    """A 1 kg ball / box sliding and spinning on the ground under viscous friction (semi-implicit
    Euler, implicit drag): the contact impulses never add kinetic energy (KE(v+) <= KE(v + h M^-1 f))
    and the total energy (kinetic + potential; the box may tip on the drag and fall back) never
    grows, for every coefficient (the explicit drag grew it by orders of magnitude at mu_v = 100)."""
    sim = Simulator(_scene(shape, 0.1, vel=(1.0, 0.5, 0.0)), model="viscous", model_options={"mu_v": mu_v})
    sim.set_velocity("body", angular=(0.0, 0.0, 3.0))
    e = []
    for _ in range(15):
        rec = sim.step()
        assert rec.success
        assert rec.contact_energy_gain <= 1e-9
        e.append(rec.energy)
    assert np.all(np.diff(e) <= 1e-9) and e[-1] < e[0]


def test_viscous_rk4_refuses_an_unstable_drag_instead_of_pumping_energy():
    """Explicit (RK4) drag on a 1 kg ball with mu_v = 100, h = 0.01: h * 3.5 mu_v / m = 3.5 > 2.785,
    outside RK4's stability interval. The model says so; below the limit RK4 dissipates."""
    sim = Simulator(_scene("sphere", 0.1, vel=(1.0, 0.0, 0.0)), model="viscous",
                    model_options={"mu_v": 100.0, "integrator": "rk4"})
    with pytest.raises(ModelError, match="stability"):
        sim.step()
    sim = Simulator(_scene("sphere", 0.1, vel=(1.0, 0.0, 0.0)), model="viscous",
                    model_options={"mu_v": 75.0, "integrator": "rk4"})    # h * 3.5 * 75 = 2.625
    ke = [sim.step().kinetic_energy for _ in range(10)]
    assert np.all(np.diff(ke) <= 1e-12)


@pytest.mark.parametrize("angle", [0.3, np.pi / 6, 1.0])
def test_trinkle_pang_sliding_friction_opposes_the_slip(angle):
    """A box sliding on the ground along a direction between the pyramid's edges: with the default
    (Coulomb) law the friction impulse is exactly -mu c_n v_t/|v_t|, and the box keeps its direction
    and decelerates at mu g; the pyramid law (opt-in) points up to 45 degrees off."""
    vel = 2.0 * np.array([np.cos(angle), np.sin(angle), 0.0])
    sim = Simulator(_scene("box", 0.1, vel=vel, mu=0.3), model="trinkle-pang")
    i = sim.model.index("body")
    sim.step()
    sys_, res = sim.last_system, sim.data.result
    S, T = sys_.S.toarray(), sys_.T.toarray()
    # world-frame friction impulse: sum_i fs_i t1_i + ft_i t2_i (rows 0:3 of S', T' are the linear parts)
    F = S[:, 6 * 0:3].T @ res.tangent[:, 0] + T[:, :3].T @ res.tangent[:, 1] if S.shape[1] == 6 else None
    F = (S.T @ res.tangent[:, 0] + T.T @ res.tangent[:, 1])[:3]
    slip = vel[:2] / np.linalg.norm(vel[:2])
    assert np.linalg.norm(F[:2]) > 0
    np.testing.assert_allclose(F[:2] / np.linalg.norm(F[:2]), -slip, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(F[:2]), 0.3 * res.normal.sum(), rtol=1e-9)
    v1 = sim.data.linear_velocity[i]
    np.testing.assert_allclose(v1[:2], vel[:2] - 0.3 * G * sim.h * slip, rtol=0, atol=1e-6)
    pyr = Simulator(_scene("box", 0.1, vel=vel, mu=0.3), model="trinkle-pang",
                    model_options={"sliding_law": "pyramid"})
    pyr.step()
    res = pyr.data.result
    Fp = (pyr.last_system.S.T @ res.tangent[:, 0] + pyr.last_system.T.T @ res.tangent[:, 1])[:3]
    off = np.degrees(np.arccos(np.clip(-Fp[:2] @ slip / np.linalg.norm(Fp[:2]), -1, 1)))
    assert off > 5.0      # the linearised law is visibly off the slip: the default must not be it


@pytest.mark.parametrize("model,mu,integrator", [("trinkle-pang", 0.1, "euler"), ("trinkle-pang", 1.0, "euler"),
                                                  ("trinkle-pang", 0.1, "rk4"), ("trinkle-pang", 1.0, "rk4"),
                                                  ("no-slip", 0.5, None)])
def test_coulomb_and_noslip_friction_never_gain_energy(model, mu, integrator):
    """A box sliding and spinning on the ground: the contact impulses (friction and normal) never add
    kinetic energy, KE(v+) <= KE(v + h M^-1 f), and the total energy never grows (no-slip: velocity
    level; trinkle-pang: Coulomb sliding, pyramid rolling). (Much larger mu can make the sliding box's
    acceleration-level problem inconsistent, Painleve-like: the step then fails, it is never applied.)"""
    opts = {"integrator": integrator} if integrator else {}
    sim = Simulator(_scene("box", 0.1, vel=(1.0, 0.5, 0.0), mu=mu), model=model, model_options=opts)
    sim.set_velocity("body", angular=(0.0, 0.0, 3.0))
    e = []
    for _ in range(12):
        rec = sim.step()
        assert rec.success
        assert rec.contact_energy_gain <= 1e-6 * max(rec.kinetic_energy, 1e-3)
        e.append(rec.energy)
    assert np.all(np.diff(e) <= 1e-6) and e[-1] < e[0]


@pytest.mark.parametrize("model", ["viscous", "trinkle-pang"])
def test_rk4_combined_update_keeps_the_joint_rows(model):
    """The equality rows obey the same algebra as the contact rows: the RK4 stages alone leave
    37.5 % of a step-start violation of J v = j_rhs; with the onset projection the combined update
    satisfies J v+ = j_rhs to rounding on a swinging pendulum chain."""
    from contactlab.scenarios import make_scene
    sim = Simulator(make_scene("pendulum-chain"), model=model, model_options={"integrator": "rk4"})
    worst = 0.0
    for _ in range(15):
        assert sim.step().success
        sys_, v = sim.last_system, sim.data.velocity_vector(sim.model)
        worst = max(worst, float(np.abs(sys_.J @ v - sys_.j_rhs).max()))
    assert sys_.nj > 0 and worst < 1e-10
