"""Physics faults are loud (issue 40 item 5): a step whose motion no physics of the step explains is
reported, and scenes whose mass ratio the certified solvers cannot resolve are refused at load.

A certificate is relative: solve() accepts an answer whose residual is small against the scale of
the problem (|M| |z| + |q|). With a 1e9 mass ratio that scale is the heavy body's impulse seen by
the light body, 1e9 times the light body's own velocities, so a "certified" answer can fling the
light body at metres per second or lift the heavy one (docs/robustness.md). The checks below
measure the step in physical units instead, from the states before and after it.

What a step may do (semi-implicit Euler, ``x1 = x0 + h v1`` then the position corrections):

- **speed** (the velocity change): contact and joint impulses are passive (no restitution), so they
  can redistribute the step's free motion but not create speed: a body's speed after the step,
  |v1| + |omega1| r (r: its collision radius, so a spin counts at its rim), is at most
  :data:`SPEED_AMPLIFICATION` times the fastest free motion of the step (the speeds before it, or
  the free velocities v + h M^-1 f where the step's system carries them: gravity, joint torques,
  controllers' velocities), plus the speed that removes the step's penetration and joint error in
  one step ((depth + joint error) / h: Baumgarte and drift terms), plus the motors' target speeds
  at the scene's extent. The factor allows levers (a see-saw's long arm moves faster than its short
  one) up to 1:``SPEED_AMPLIFICATION``.
- **position correction**: ``x1 - x0 - h v1`` is what the contact position correction and the
  joint projection moved the body (no velocity change). The contact correction removes the
  penetration (at most the deepest, plus the slop; where the bodies turned fast, the deepest overlap
  found again at the new poses, :func:`contactlab.sim.turns.correct_turns`); the joint projection removes the joint error
  (at most the previous error plus what the step's motion adds, h times the fastest speed). A
  correction beyond :data:`CORRECTION_FACTOR` times that is a body pushed out through the far side.
- **energy**: without actuation the contact impulses cannot add kinetic energy beyond what the
  stabilisation terms put in (StepRecord.contact_energy_gain, KE(v1) - KE(v + h M^-1 f)); more than
  :data:`ENERGY_FACTOR` times the free kinetic energy, plus that stabilisation energy, is a fault.

A faulty step is kept (the run goes on; a fault does not change the state) and reported:
``StepRecord.plausible`` False and ``StepRecord.fault`` the first finding in words, naming the body;
``Trajectory.metrics()["physics_faults"]`` counts them; ``contactlab simulate`` prints them on
stderr and exits 1.
"""
from __future__ import annotations

import math

import numpy as np

from ..collision.boxes import PACKED_INTS
from ..kernels._jit import jit
# the mass-ratio limit of scenes: its home is mechanics (below every loader of scenes, which checks
# it); its names stay importable from here
from ..mechanics.mass_ratio import MAX_MASS_RATIO, check_mass_ratio, mass_ratio_limit  # noqa: F401
from .turns import turn_bound

#: a body's speed after a step is at most this many times the step's fastest free motion (plus the
#: penetration and joint-error recovery speeds): contact impulses only redistribute motion, and a
#: lever of arms 1:10 is the largest gain of speed expected of a scene's geometry
SPEED_AMPLIFICATION = 10.0

#: a position correction is at most this many times the penetration plus slop (contacts) and the
#: joint error the step can have made (joints) it removes
CORRECTION_FACTOR = 2.0

#: contact impulses may add at most this many times the free kinetic energy (plus the stabilisation
#: terms' energy) before the step counts as a fault; passive impulses add none
ENERGY_FACTOR = 1.0

#: speeds (m/s) and displacements (m) below these are never faults (rounding of bodies at rest)
SPEED_FLOOR = 1e-6
CORRECTION_FLOOR = 1e-9


@jit
def _motion_check(dof_start, kind, kinematic, radius, x0, v0, w0, vf, wf, x1, v1, w1, h):
    """Per body with dofs: the speed scale of the step (fastest |v| + |omega| r before it, in its
    free motion, and of kinematic bodies after it), and the worst body by speed after the step and
    by position correction |x1 - x0 - h v1| (kinematic bodies excluded). Returns (scale, fastest
    body, its speed, most corrected body, its correction, largest distance between bodies)."""
    nb = dof_start.shape[0]
    scale = 0.0
    fast, vmax = -1, 0.0
    moved, cmax = -1, 0.0
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i in range(nb):
        if dof_start[i] < 0:
            continue
        r = radius[i]
        s0 = math.sqrt(v0[i, 0] ** 2 + v0[i, 1] ** 2 + v0[i, 2] ** 2) + r * math.sqrt(
            w0[i, 0] ** 2 + w0[i, 1] ** 2 + w0[i, 2] ** 2)
        sf = math.sqrt(vf[i, 0] ** 2 + vf[i, 1] ** 2 + vf[i, 2] ** 2) + r * math.sqrt(
            wf[i, 0] ** 2 + wf[i, 1] ** 2 + wf[i, 2] ** 2)
        s1 = math.sqrt(v1[i, 0] ** 2 + v1[i, 1] ** 2 + v1[i, 2] ** 2) + r * math.sqrt(
            w1[i, 0] ** 2 + w1[i, 1] ** 2 + w1[i, 2] ** 2)
        scale = max(scale, s0, sf)
        for k in range(3):
            lo[k] = min(lo[k], x1[i, k] - r)
            hi[k] = max(hi[k], x1[i, k] + r)
        if kind[i] == kinematic:
            scale = max(scale, s1)
            continue
        if not s1 <= vmax:      # NaN counts as the worst
            fast, vmax = i, s1
        c = math.sqrt((x1[i, 0] - x0[i, 0] - h * v1[i, 0]) ** 2 + (x1[i, 1] - x0[i, 1] - h * v1[i, 1]) ** 2
                      + (x1[i, 2] - x0[i, 2] - h * v1[i, 2]) ** 2)
        if not c <= cmax:
            moved, cmax = i, c
    extent = 0.0
    for k in range(3):
        if hi[k] > lo[k]:
            extent += (hi[k] - lo[k]) ** 2
    return scale, fast, vmax, moved, cmax, math.sqrt(extent)


@jit
def split_velocity(dof_start, v, nb):
    """(linear (nb, 3), angular (nb, 3)) of the generalized velocity v: body i's dofs
    v[s:s + 3], v[s + 3:s + 6] (s = dof_start[i]); zero for bodies without dofs."""
    lin = np.zeros((nb, 3))
    ang = np.zeros((nb, 3))
    for i in range(nb):
        s = dof_start[i]
        if s >= 0:
            for k in range(3):
                lin[i, k] = v[s + k]
                ang[i, k] = v[s + 3 + k]
    return lin, ang


def _free_velocity_flat(sim):
    """The step's free velocity v + h M^-1 f (gravity, joint torques) as one (ndof,) vector where the
    step has it: a compiled step's own whose system is deferred (sim/noslip_stages.py), else the
    step's system's where it was assembled (the general path); None where neither is at hand (a
    compiled step of free bodies: v0 + h g, :func:`_free_velocities`)."""
    # the step's system where the step assembled it (stages.StepState; None where a compiled
    # step deferred it: assembling it here would cost more than the step)
    state = getattr(sim, "step_state", None)
    sys = getattr(state, "system", None)
    model = sim.model
    vf = getattr(state, "free_velocity", None)      # a compiled step's own (sim/noslip_stages.py)
    if sys is None and vf is not None and vf.shape == (model.ndof,):
        return vf
    if sys is not None:
        try:
            vf = np.asarray(sys.v_free(), dtype=np.float64)
        except Exception:      # a system without free velocities: gravity below
            vf = None
        if vf is not None and vf.shape == (model.ndof,):
            return vf
    return None


def _free_velocities(sim, v0, w0):
    """(linear, angular) free velocities of the step, v + h M^-1 f (gravity, joint torques), from
    the step's system where it is at hand (:func:`_free_velocity_flat`); else v0 + h g (a compiled
    step of free bodies: gravity is their only force). v0 and w0 are the velocities after the
    controllers ran (``Simulator.step`` runs them before :func:`checked_step`), so a velocity a
    controller set is part of the step's free motion on either path."""
    vf = _free_velocity_flat(sim)
    if vf is not None:
        return split_velocity(sim.model.dof_start, vf, v0.shape[0])
    return v0 + sim.h * np.asarray(sim.model.gravity, dtype=np.float64), w0


def fault_statics(sim):
    """What the checks read of the model, worked out once per (frozen) model: body kinds (int64),
    collision radii, whether there are joint or planar rows, the moving bodies' total mass."""
    model = sim.model
    cached = getattr(sim, "_fault_statics", None)
    if cached is not None and cached[0] is model:
        return cached[1]
    radius = getattr(sim.world, "body_radius", None)
    radius = np.zeros(model.nb) if radius is None or len(radius) != model.nb else \
        np.ascontiguousarray(radius, dtype=np.float64)
    kind = np.ascontiguousarray(model.kind, dtype=np.int64)
    jointed = bool(model.joints) or bool(np.any(model.planar))
    mass = float(np.sum(model.mass[(model.dof_start >= 0) & (kind != 2)]))
    statics = (kind, radius, jointed, mass)
    sim._fault_statics = (model, statics)
    return statics


@jit
def _motor_speed(motors):
    """max |target| over the motors' finite targets (0 without one): the speed a motor may drive."""
    top = 0.0
    for i in range(motors.size):
        m = motors[i]
        if math.isfinite(m) and abs(m) > top:
            top = abs(m)
    return top


def _where(data) -> str:
    """The step a fault names (formatted only where one is found)."""
    return f"step {data.steps} (t = {data.time:.6g} s)"


@jit
def _verdict(scale, fast, vmax, moved, cmax, extent, h, depth, slop, prev_joint_error, jointed, motors, actuated, gain,
             ke, energy, mass):
    """The plausibility tests of a step (module docstring) on :func:`_motion_check`'s numbers: ``depth``
    the step's deepest overlap (its record's max_penetration, or the turn correction's overlap),
    ``motors`` the motors' targets, ``actuated`` whether anything drives the scene (no energy test
    then), ``gain``/``ke``/``energy`` the record's contact_energy_gain, kinetic_energy, energy.
    Returns (code: 0 plausible, 1 speed, 2 position correction, 3 energy; then the numbers
    :func:`_fault_words` puts in words: bound, scale, motor speed, recovery speed, joint allowance,
    free kinetic energy)."""
    joint_error = prev_joint_error if jointed else 0.0
    motor = 0.0
    if motors.size:
        motor = _motor_speed(motors) * (1.0 if 1.0 > extent else extent)     # max(extent, 1.0)
    recovery = (depth + slop + joint_error) / h
    speed_bound = SPEED_AMPLIFICATION * (scale + motor) + recovery + SPEED_FLOOR
    if fast >= 0 and not vmax <= speed_bound:
        return 1, speed_bound, scale, motor, recovery, 0.0, 0.0
    joint_allow = (prev_joint_error + h * vmax) if jointed else 0.0
    corr_bound = CORRECTION_FACTOR * (depth + slop + joint_allow) + CORRECTION_FLOOR
    if moved >= 0 and not cmax <= corr_bound:
        return 2, corr_bound, scale, motor, recovery, joint_allow, 0.0
    if not actuated:
        free = ke - gain
        if 0.0 > free:
            free = 0.0
        bias = 0.5 * mass * recovery ** 2
        bound = ENERGY_FACTOR * free + bias + 1e-12 * (abs(energy) + 1.0)
        if not gain <= bound:
            return 3, bound, scale, motor, recovery, joint_allow, free
    return 0, 0.0, scale, motor, recovery, joint_allow, 0.0


@jit
def free_plausibility(dof_start, kind, kinematic, radius, x0, v0, w0, v_free, split, gravity, x1, v1, w1, h, depth,
                      slop, prev_joint_error, jointed, motors, actuated, gain, ke, energy, mass):
    """:func:`plausibility` with the free velocities formed in the same call, as
    :func:`_free_velocities` forms them: ``v_free`` (ndof,) split per body (:func:`split_velocity`)
    where ``split``, else v0 + h g and omega0 (one compiled call a step, not two)."""
    if split:
        vf, wf = split_velocity(dof_start, v_free, x0.shape[0])
    else:
        hg = h * gravity
        vf = v0 + hg
        wf = w0
    return plausibility(dof_start, kind, kinematic, radius, x0, v0, w0, vf, wf, x1, v1, w1, h, depth, slop,
                        prev_joint_error, jointed, motors, actuated, gain, ke, energy, mass)


@jit
def step_verdict(dof_start, kind, kinematic, radius, contact_ints, x0, v0, w0, v_free, split, gravity, x1, v1, w1, h,
                 pen, slop, prev_joint_error, jointed, motors, actuated, gain, ke, pe, mass):
    """:func:`step_checks` without the judged motion (a caller that drops it forms no copy of it):
    (turn bound, verdict)."""
    nc = contact_ints.shape[0] // PACKED_INT_FIELDS
    turn = turn_bound(contact_ints[:nc], contact_ints[nc:2 * nc], w1, radius, h)
    depth = pen if np.isfinite(pen) else 0.0
    if 0.0 > depth:     # Python's max(depth, 0.0) (step_depth)
        depth = 0.0
    verdict = free_plausibility(dof_start, kind, kinematic, radius, x0, v0, w0, v_free, split, gravity, x1, v1, w1, h,
                                depth, slop, prev_joint_error, jointed, motors, actuated, gain, ke, ke + pe, mass)
    return turn, verdict


@jit
def step_checks(dof_start, kind, kinematic, radius, contact_ints, x0, v0, w0, v_free, split, gravity, x1, v1, w1, h, pen,
                slop, prev_joint_error, jointed, motors, actuated, gain, ke, pe, mass):
    """The per-step checks of a compiled step whose state after it is final (nothing moves the bodies
    before the checks run), in one call on their own inputs: the correct stage's turn bound
    (:func:`contactlab.sim.turns.turn_bound` of the packed contacts' bodies, ``contact_ints``, on
    ``radius``, the velocities after the step), :func:`step_fault`'s verdict
    (:func:`free_plausibility`, depth max(pen, 0) as :func:`step_depth` forms it without a turn
    correction, the record's energies ke and ke + pe): :func:`step_verdict`; and the judged motion
    [x0 | v0 | w0 | x1 | v1 | w1 | motors] that :func:`judged_verdict` compares (:func:`same_motion`).
    Returns (turn bound, verdict, judged motion)."""
    turn, verdict = step_verdict(dof_start, kind, kinematic, radius, contact_ints, x0, v0, w0, v_free, split, gravity,
                                 x1, v1, w1, h, pen, slop, prev_joint_error, jointed, motors, actuated, gain, ke, pe,
                                 mass)
    judged = np.concatenate((x0.reshape(-1), v0.reshape(-1), w0.reshape(-1), x1.reshape(-1), v1.reshape(-1),
                             w1.reshape(-1), motors))
    return turn, verdict, judged


@jit
def plausibility(dof_start, kind, kinematic, radius, x0, v0, w0, vf, wf, x1, v1, w1, h, depth, slop, prev_joint_error,
                 jointed, motors, actuated, gain, ke, energy, mass):
    """:func:`_motion_check` then :func:`_verdict` in one call: (code, worst body, its number, the
    numbers of :func:`_verdict`); the worst body and its number are the fastest body and its
    speed for code 1, the most corrected body and its correction otherwise."""
    scale, fast, vmax, moved, cmax, extent = _motion_check(dof_start, kind, kinematic, radius, x0, v0, w0, vf, wf, x1,
                                                           v1, w1, h)
    code, bound, scale, motor, recovery, joint_allow, free = _verdict(
        scale, fast, vmax, moved, cmax, extent, h, depth, slop, prev_joint_error, jointed, motors, actuated, gain, ke,
        energy, mass)
    if code == 1:
        return code, fast, vmax, bound, scale, motor, recovery, joint_allow, free
    return code, moved, cmax, bound, scale, motor, recovery, joint_allow, free


def step_depth(sim, rec) -> float:
    """The overlap the step's position corrections may have removed: the record's deepest
    penetration (0 where not finite or negative) or the turn correction's (sim/turns.py), the
    larger."""
    depth = max(float(rec.max_penetration), 0.0) if math.isfinite(rec.max_penetration) else 0.0
    # a turn correction (sim/turns.py) removed an overlap found at the new poses, which the step's
    # own contacts did not show
    return max(depth, float(getattr(getattr(sim, "step_state", None), "turn_overlap", 0.0)))


def motor_targets(data) -> np.ndarray:
    """The motors' targets as :func:`_verdict` takes them (empty where there are none)."""
    motors = getattr(data, "motor_target", None)
    return _NO_MOTORS if motors is None or not len(motors) else np.ascontiguousarray(motors, dtype=np.float64)


_NO_MOTORS = np.zeros(0)
#: the packed contacts' int fields (collision/boxes PACKED_INTS: each field's rows in turn, body_a's
#: first, then body_b's)
PACKED_INT_FIELDS = len(PACKED_INTS)
assert PACKED_INTS[:2] == ("body_a", "body_b")
#: no free velocity at hand (free_plausibility forms v0 + h g)
_NO_FREE = np.zeros(0)


#: the code of a verdict a compiled step did not form (:func:`contactlab.sim.box_kernels.box_friction_step`)
NOT_JUDGED = -1


@jit
def _same_rows(a, judged, k):
    """Whether a (nb, 3) is bit for bit judged[k:k + 3 nb] (row by row)."""
    for i in range(a.shape[0]):
        for j in range(3):
            if not a[i, j] == judged[k + 3 * i + j]:
                return False
    return True


@jit
def same_motion(x0, v0, w0, x1, v1, w1, motors, judged):
    """Whether the states before (x0, v0, w0) and after (x1, v1, w1) a step and the motors' targets are
    bit for bit those a compiled step judged, ``judged`` = [x0 | v0 | w0 | x1 | v1 | w1 | motors] flat
    (a NaN in a state is never the same: the step is judged again; a motor's NaN target, a joint
    without a motor, is the same as another NaN: :func:`_verdict` reads only the finite targets)."""
    m = 3 * x0.shape[0]
    if not judged.size == 6 * m + motors.size:
        return False
    for i in range(motors.size):
        a, b = motors[i], judged[6 * m + i]
        if not (a == b or (a != a and b != b)):
            return False
    return (_same_rows(x0, judged, 0) and _same_rows(v0, judged, m) and _same_rows(w0, judged, 2 * m)
            and _same_rows(x1, judged, 3 * m) and _same_rows(v1, judged, 4 * m) and _same_rows(w1, judged, 5 * m))


def judged_verdict(sim, before, rec, depth):
    """The verdict of :func:`plausibility` a compiled step formed on its own inputs
    (``StepState.judged`` = (verdict, statics, scalars, motion[, free velocity]):
    :meth:`contactlab.sim.box_stages.CompiledRowStages.integrate`, free bodies, whose free velocities
    are v0 + h g and omega0; :meth:`contactlab.sim.box_joint_stages.CompiledSchurRowStages.integrate`,
    whose free velocity is its call's v_free, given as the fifth item), where every input
    :func:`step_fault` would give it is still that one: the statics (:func:`fault_statics`), the free
    velocities (no system read since the step, and the step's own free velocity, or none), the scalars
    (depth, previous joint error, actuation, the record's energies, h, slop), and the states before
    and after and the motors' targets bit for bit (:func:`same_motion`); else None (judged here)."""
    state = getattr(sim, "step_state", None)
    judged = getattr(state, "judged", None)
    if judged is None or state.system is not None:
        return None
    verdict, statics, scalars, motion = judged[:4]
    if state.free_velocity is not (judged[4] if len(judged) > 4 else None):
        return None
    data = sim.data
    if statics is not fault_statics(sim) or scalars != (
            depth, float(before[3]), bool(sim.has_actuation), float(rec.contact_energy_gain), float(rec.kinetic_energy),
            float(rec.energy), sim.h, float(sim.model.settings.slop)):
        return None
    if not same_motion(before[0], before[1], before[2], data.position, data.linear_velocity, data.angular_velocity,
                       motor_targets(data), motion):
        return None
    return verdict


def step_fault(sim, before, rec) -> str:
    """The first physics fault of the step that took the state ``before`` (positions, linear and
    angular velocities, previous joint error) to the simulator's state, in words naming the body;
    "" when its motion is plausible (module docstring). The verdict a compiled step formed on these
    very inputs is taken as it is (:func:`judged_verdict`); else it is formed here."""
    x0, v0, w0, prev_joint_error = before
    depth = step_depth(sim, rec)
    verdict = judged_verdict(sim, before, rec, depth)
    if verdict is None:
        model, data, h = sim.model, sim.data, sim.h
        kind, radius, jointed, mass = fault_statics(sim)
        vf = _free_velocity_flat(sim)      # split per body in the call (as _free_velocities splits it)
        verdict = free_plausibility(model.dof_start, kind, 2, radius, x0, v0, w0,
                                    _NO_FREE if vf is None else np.ascontiguousarray(vf), vf is not None,
                                    np.asarray(model.gravity, dtype=np.float64), data.position, data.linear_velocity,
                                    data.angular_velocity, h, depth, float(model.settings.slop),
                                    float(prev_joint_error), jointed, motor_targets(data), bool(sim.has_actuation),
                                    float(rec.contact_energy_gain), float(rec.kinetic_energy), float(rec.energy), mass)
    return fault_words(sim, verdict, depth, prev_joint_error, rec) if verdict[0] else ""


def fault_words(sim, verdict, depth, prev_joint_error, rec) -> str:
    """The finding of :func:`plausibility` (code non-zero) in words naming the body."""
    code, body, value, bound, scale, motor, recovery, joint_allow, free = verdict
    data = sim.data
    name = sim.model.names[body] if code != 3 else ""
    if code == 1:
        return (f"{_where(data)}: body {name!r} reached {value:.3g} m/s, where the step's motion allows at most "
                f"{bound:.3g} m/s ({SPEED_AMPLIFICATION:g} x its fastest free motion {scale:.3g} m/s"
                + (f" and motor speeds {motor:.3g} m/s" if motor else "")
                + f", + {recovery:.3g} m/s to remove penetration and joint error)")
    if code == 2:
        return (f"{_where(data)}: body {name!r} was displaced {value:.3g} m by the position correction, where the "
                f"penetration {depth:.3g} m" + (f" and joint error {joint_allow:.3g} m" if joint_allow else "")
                + f" allow at most {bound:.3g} m")
    gain = float(rec.contact_energy_gain)
    return (f"{_where(data)}: the contact impulses added {gain:.3g} J of kinetic energy to the free motion's "
            f"{free:.3g} J (at most {bound:.3g} J with the stabilisation terms); passive contacts add none")


def checked_step(sim, take, before=None):
    """``take()`` (the simulator's step after its controllers ran), then the plausibility of its
    motion from the state before ``take`` (:func:`step_fault`): the record's ``plausible`` and
    ``fault`` say what was found. ``before``: that state where the caller copied it already
    (positions, linear and angular velocities, previous joint error; sim/robot_step.py). Called by
    ``Simulator.step`` and the fused robot step where the stages take its step."""
    d = sim.data
    if before is None:
        before = (d.position.copy(), d.linear_velocity.copy(), d.angular_velocity.copy(),
                  float(getattr(sim, "_fault_joint_error", 0.0)))
    state = getattr(sim, "step_state", None)
    if state is not None:
        state.judged = None         # a verdict formed by this step's compiled call only (judged_verdict)
    rec = take()
    rec.fault = step_fault(sim, before, rec)
    rec.plausible = not rec.fault
    sim._fault_joint_error = float(rec.joint_error) if math.isfinite(rec.joint_error) else 0.0
    return rec
