"""The step's correction on the exact geometry where the bodies' turns can have hidden an overlap
from its linear rows (a stage of its own: :meth:`contactlab.sim.stages.Stages.correct`).

A step's contact rows, and the position correction's phi + h N v+, are linear in the motion: a point
of a body turning by theta = h |omega+| in the step leaves its linear prediction by up to
1/2 theta^2 r (r the body's radius about its centre; the chord's sagitta). A box spun to 9-50 rad/s
by an impact in a pile turns 0.1-0.5 rad in a 10 ms step and swings its corners through the face it
rests on; the next detection finds the overlap and the ordinary correction removes only
``contact_zeta`` of it a step (docs/benchmarks-sim.md, "Fidelity at scale"). So after a step whose
contacts' bodies turned enough for that bound to exceed the slop, the contacts are detected again at
the new poses and the whole overlap beyond the slop is projected out at the position level
(``Simulator.project_contacts`` with zeta = 1 and v = 0, so phi' = phi: Cline and Pai's
post-stabilisation, SCA 2003, on the exact geometry). A body at rest never fires it (the bound is
0), so resting stacks pay one compiled pass over their contacts and keep their trajectories.
"""
from __future__ import annotations

import numpy as np

from ..collision import CollisionWorld
from ..kernels._jit import jit
from ..kernels.tolerances import SLOP_EXCESS
from ..mechanics.system import build_system

#: the turn bound 1/2 (h |omega+|)^2 r, in units of the settings' slop, beyond which the step's
#: contacts are detected again and their overlap projected out: at the slop a turn can leave an
#: overlap the next step's correction would see
TURN_TRIGGER = 1.0


@jit
def turn_bound(body_a, body_b, angular_velocity, radius, h):
    """max over the bodies of the contacts (body_a[c], body_b[c]) of 1/2 (h |omega_b|)^2 r_b: how far
    a point of a body in contact can have left the straight path its contact rows assumed (the
    sagitta of its arc). One pass over the contacts; a fixed body's omega is 0."""
    worst = 0.0
    for c in range(body_a.size):
        for b in (body_a[c], body_b[c]):
            if b < 0:
                continue
            w2 = (angular_velocity[b, 0] * angular_velocity[b, 0] + angular_velocity[b, 1] * angular_velocity[b, 1]
                  + angular_velocity[b, 2] * angular_velocity[b, 2])
            bound = 0.5 * h * h * w2 * radius[b]
            if bound > worst or bound != bound:
                worst = bound
    return worst


def fires(sim, contacts, bound: float | None = None) -> bool:
    """Whether the step just taken (its ``contacts``, the bodies' velocities after it) can have left
    an overlap its rows did not see: a body in contact whose turn bound exceeds TURN_TRIGGER slop,
    on a scene with the position stabilisation and the simulator's own CollisionWorld. ``bound``:
    :func:`turn_bound` of these contacts on the world's radii and the velocities after the step
    where the step's compiled call formed it (:func:`contactlab.sim.box_kernels.box_friction_step`)."""
    st = sim.model.settings
    if not contacts.count or st.contact_stabilization != "position" or not isinstance(sim.world, CollisionWorld):
        return False
    if bound is None:
        bound = turn_bound(np.ascontiguousarray(contacts.body_a, dtype=np.int64),
                           np.ascontiguousarray(contacts.body_b, dtype=np.int64), sim.data.angular_velocity,
                           sim.world.body_radius, float(sim.h))
    return bool(bound > TURN_TRIGGER * st.slop)


def correct_turns(sim) -> float:
    """Detect the contacts at the bodies' new poses (the settings' margin; compiled) and, where one
    overlaps beyond the slop, project the whole overlap beyond it out (``project_contacts`` on their
    system with zeta = 1 and v = 0). Returns the deepest overlap found there (m) where a correction
    ran, else 0.0 (so its truth says whether one ran): the step's position correction may move a
    body by that much, which the step's own contacts did not show (sim/faults.py). The velocities
    are not changed: the impulses of the step stay those that were certified."""
    model, data = sim.model, sim.data
    st = model.settings
    contacts = sim.world.detect(data)
    deepest = -float(np.min(contacts.phi)) if contacts.count else 0.0
    if not deepest > st.slop * (1.0 + SLOP_EXCESS):
        return 0.0
    sys_ = build_system(model, data, contacts, sim.h)
    sim.project_contacts(sys_, np.zeros(model.ndof), zeta=1.0)
    return deepest
