"""build_system's one compiled call (mechanics/terms.py system_terms) against the separate kernels it
replaces: every array of the constraint system equal, bit for bit, on a robot with joints, motors
and contacts."""
import numpy as np

from contactlab.mechanics import bodies as B
from contactlab.mechanics import rows as R
from contactlab.mechanics import system as SY
from contactlab.scenarios.registry import make_scene
from contactlab.sim import Simulator


def _separate(m, d, c, h):
    """build_system as it was: body terms, contact terms, free velocity and joint rows apart."""
    st = m.settings
    live = SY._live(m)
    f = SY.joint_torque_forces(m, d)
    body = B.body_terms(live, m.dof_start, d.quaternion, m.mass, m.inertia, m.inv_inertia, m.gravity,
                        d.linear_velocity, d.angular_velocity, bool(st.gyroscopic), f)
    zeta = st.contact_zeta if st.contact_stabilization == "velocity" else 0.0
    a, b, point, normal, t1, t2, phi = SY._contact_arrays(c)
    terms = R.contact_terms(a, b, m.dof_start, d.position, point, normal, t1, t2, phi, h, float(zeta),
                            float(st.slop)) if c.count else None
    v_free = B.free_velocity(body[1], body[2], f, h) if 6 * live.size == m.ndof else None
    return SY.assemble_system(m, d, c, h, f, body, terms, v_free)


def test_one_call_system_equals_the_separate_kernels():
    sim = Simulator(make_scene("quadruped"), "no-slip")
    for _ in range(40):
        sim.step()
    m, d = sim.model, sim.data
    c = d.contacts
    assert c.count > 0 and len(m.joints) > 0
    a, b = _separate(m, d, c, sim.h), SY.build_system(m, d, c, sim.h)
    for k in ("M", "Minv", "J", "L", "N", "S", "T", "A", "NST"):
        x, y = getattr(a, k), getattr(b, k)
        assert x.shape == y.shape and x.indices.dtype == y.indices.dtype, k
        assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices), k
        assert np.array_equal(x.data, y.data), k
    for k in ("v", "f", "j_rhs", "j_err", "l_bias", "n_bias", "a_target", "a_max", "W_blocks", "mu", "phi"):
        assert np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True), k
    assert np.array_equal(a.v_free(), b.v_free())
    assert {g: a.labels[g] for g in a.labels} == {g: b.labels[g] for g in b.labels}
    assert b.nj > 0
