"""The box-friction step (``joints="schur"``, pgs-sm) of a kinematic tree in joint coordinates,
compiled: the Barrett hand's step with the hand's joints and couplings as a reduction of the
coordinates instead of rows to eliminate (arechavaleta Sec. III-IV, eq. 13-17, with Featherstone's
joint-space formulation, *Rigid Body Dynamics Algorithms* sec. 6.2 (CRBA));
:class:`contactlab.sim.tree_box_stages.CompiledTreeSchurRowStages` plans it.

The maximal-coordinate call (:func:`contactlab.sim.box_joint_kernels.box_schur_step`) keeps every
body's six coordinates, pins the kinematic palm's rows, and eliminates the joint and coupling rows
J by their Schur complement (arechavaleta eq. 15): M = H P H' + cfm I with P = W - W J' (J W J')^-1 J W.
Where the joints form a forest (:func:`contactlab.mechanics.tree.tree_topology` with kinematic
roots and couplings) the null space of J is spanned by the motion subspace: every admissible
velocity is v = S qdot, qdot the tree's nq joint coordinates (a kinematic root's six included),
and qdot = T u + t0 with u the nr free coordinates (:func:`coordinate_map`: a kinematic root's
rates and an exact velocity motor's coordinate known, t0; a coupled joint's rate ``ratio`` times
its leader's, a column of T). Then P = G Hr^-1 G' with G = S T and Hr = T' H T, H the joint-space
mass matrix (CRBA), and the eliminated problem is formed in nr unknowns:

* b = T' (S' M v_free - H t0), the momentum of the free velocity in the free coordinates less the
  known motion's (the maximal step's M-metric projection of v_free onto the joints' manifold, with
  its kinematic rows pinned: in exact arithmetic the same v0);
* the rows R = [A; L; N; S; T] in joint coordinates (R S, contacts by
  :func:`~contactlab.sim.tree_kernels.frame_rows_of`, motors and limits on their coordinate) and
  in the free ones, R_u = R S T, their known part R S t0;
* Hr = L L' and Y = L^-1 R_u', yg = L^-1 b by :func:`contactlab.kernels.joint_rows.spd_reduce` (the
  maximal call's factor, its SPD test and rank margin), so that M = Y'Y + cfm I and
  q = Y' yg + R S t0 - rhs (the maximal call's B - Y'Y of the Schur complement is this Y'Y);
* pgs-sm, ``solve()``'s triviality test and certificate on (M, q)
  (:func:`~contactlab.sim.box_joint_kernels.box_solve_certified`, the maximal call's own), u+ = L^-T (yg + Y z),
  qdot+ = T u+ + t0, v+ = S qdot+;
* x += h qdot+ on the joint coordinates (:func:`~contactlab.sim.tree_kernels.advance_tree`), the
  bodies' poses by forward kinematics (on the joints and the couplings by construction: nothing to
  project).

What differs from the maximal call, in exact arithmetic: the joint rows' and couplings' drift
correction (j_rhs = -zeta e / h: zero here, the state is on its joints after a joint-space step),
and the joint projection after the step (forward kinematics instead). The velocity-product terms
of :mod:`~contactlab.sim.tree_kernels` do not enter: v_free is projected as the maximal call
projects it (the bodies' stored velocities, not velocities rebuilt from the joint rates).

Declined (nothing changed, the maximal call takes the step): an exact velocity motor on a coupled
joint or on a joint without a coordinate, a coupling cycle, Hr outside spd_reduce's SPD branch, and
every case :func:`~contactlab.sim.box_joint_kernels.box_solve_certified` declines (a trivial problem,
pgs-sm not converged, an answer that does not certify).
"""
from __future__ import annotations

import numpy as np

from ..collision.boxes.packed import unpack_contacts
from ..kernels._jit import jit
from ..kernels.energy import energies, energies_and_depth
from ..kernels.joint_rows import add_gram, joint_impulses, spd_reduce
from ..mechanics.bodies import body_terms, free_velocity
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.rows import contact_terms, position_targets_window
from ..mechanics.tree import body_jacobians, crba, motion_columns, tree_coordinates, tree_joint_error
from ..models.common import MODE_IMPULSE_TOL, MODE_SPEED_TOL, _modes_of_rows
from .box_joint_kernels import _no_answer, box_solve_certified
from .faults import NOT_JUDGED, step_checks, step_verdict
from .noslip_kernels import DECLINED, DEEP, DONE, call_inputs
from .tree_kernels import (_limit_rows, advance_tree, block_kinetic_gain, frame_rows_of, joint_momentum,
                           maximal_rates, tree_joint_arrays)


#: the verdict of a step whose checks the call did not form (faults.NOT_JUDGED)
_NOT_JUDGED = (NOT_JUDGED, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@jit
def coordinate_map(order, jnt, qstart, kinematic, lin, ang, jq, follows, ratio, motor_target, motor_max_force, nq):
    """qdot = T u + t0 of the step: (ok, col, fac, t0, nr). A kinematic root's six rates are known
    (its velocity, as its pinned rows, joint_kernels.py); a joint with an exact velocity motor
    (target set, infinite force: a bilateral row qdot = target) has its target; a coupled joint's
    coordinate (``follows[k]`` >= 0) is ``ratio[k]`` times its leader's, through a chain of
    couplings; every other coordinate is free, numbered in coordinate order. Coordinate i is
    column ``col[i]`` of T with entry ``fac[i]``, or known (col -1, t0[i]). ``jq[k]``: joint k's
    coordinate (-1: a fixed joint). ok False: an exact motor on a coupled joint or a joint without
    a coordinate, a coupling of a joint without a coordinate, a cycle of couplings."""
    ibuf = np.empty(2 * nq, dtype=np.int64)       # col, lead; fac, t0: views of one allocation each
    fbuf = np.zeros(2 * nq)
    col = ibuf[:nq]
    lead = ibuf[nq:]
    fac = fbuf[:nq]
    t0 = fbuf[nq:]
    known = np.zeros(nq, dtype=np.bool_)
    for i in range(nq):
        col[i] = -1
        lead[i] = i
        fac[i] = 1.0
    for b in order:
        if jnt[b] < 0 and kinematic[b]:
            s = qstart[b]
            for i in range(3):
                t0[s + i] = lin[b, i]
                t0[s + 3 + i] = ang[b, i]
                known[s + i] = True
                known[s + 3 + i] = True
    for k in range(jq.shape[0]):
        s = jq[k]
        exact = motor_target[k] == motor_target[k] and np.isinf(motor_max_force[k])
        if s < 0:
            if exact or follows[k] >= 0:
                return False, col, fac, t0, 0
            continue
        if follows[k] >= 0:
            if exact or jq[follows[k]] < 0:
                return False, col, fac, t0, 0
            lead[s] = jq[follows[k]]
            fac[s] = ratio[k]
        elif exact:
            known[s] = True
            t0[s] = motor_target[k]
    nr = 0
    for i in range(nq):
        if not known[i] and lead[i] == i:
            col[i] = nr
            nr += 1
    for i in range(nq):
        if lead[i] == i:
            continue
        j = i
        r = 1.0
        steps = 0
        while lead[j] != j:
            r *= fac[j]
            j = lead[j]
            steps += 1
            if steps > nq:
                return False, col, fac, t0, 0
        if known[j]:
            t0[i] = r * t0[j]
            col[i] = -1
        else:
            col[i] = col[j]
        fac[i] = r
    return True, col, fac, t0, nr


@jit
def reduced_mass(H, p, col, fac, t0, nr):
    """(Hr, b): Hr = T' H T (each entry once on and above the diagonal, mirrored: exactly symmetric)
    and b = T' (p - H t0) of :func:`coordinate_map`'s T, t0."""
    nq = H.shape[0]
    g = p.copy()
    for j in range(nq):
        if t0[j] != 0.0:
            for i in range(nq):
                g[i] -= H[i, j] * t0[j]
    Hr = np.zeros((nr, nr))
    b = np.zeros(nr)
    for i in range(nq):
        ci = col[i]
        if ci < 0:
            continue
        b[ci] += fac[i] * g[i]
        for j in range(nq):
            cj = col[j]
            if cj >= ci:
                Hr[ci, cj] += fac[i] * fac[j] * H[i, j]
    for i in range(nr):
        for j in range(i):
            Hr[i, j] = Hr[j, i]
    return Hr, b


@jit
def tree_rows(Sb, dof_start, body_of_block, contact_ip, contact_ix, contact_dv, jq, motor_target, motor_max_force,
              h, limit_rows, l_bias, n_bias, nq):
    """The rows [A; L; N; S; T] in joint coordinates (n, nq) and their right-hand sides rhs
    ([a_target; -l_bias; -n_bias; 0; 0], models/box_friction.py ``build``), with the motors' a_target
    and a_max = h max_force: a finite velocity motor (joint_kernels.py ``constraint_rows_kernel``, in
    joint order) is the rate of its coordinate; the limits' rows ``limit_rows``
    (:func:`~contactlab.sim.tree_kernels._limit_rows`); the contacts' N, S, T are their maximal rows
    times S (:func:`~contactlab.sim.tree_kernels.frame_rows_of`)."""
    nj = jq.shape[0]
    nm = 0
    for k in range(nj):
        if motor_target[k] == motor_target[k] and not np.isinf(motor_max_force[k]) and jq[k] >= 0:
            nm += 1
    nl = l_bias.shape[0]
    nc = n_bias.shape[0]
    n = nm + nl + 3 * nc
    R = np.zeros((n, nq))
    rhs = np.zeros(n)
    a_target = np.empty(nm)
    a_max = np.empty(nm)
    r = 0
    for k in range(nj):
        if motor_target[k] == motor_target[k] and not np.isinf(motor_max_force[k]) and jq[k] >= 0:
            R[r, jq[k]] = 1.0
            a_target[r] = motor_target[k]
            a_max[r] = h * motor_max_force[k]
            rhs[r] = motor_target[k]
            r += 1
    for i in range(nl):
        R[nm + i] = limit_rows[i]
        rhs[nm + i] = -l_bias[i]
    o_n = nm + nl
    if nc:
        NST = frame_rows_of(Sb, dof_start, body_of_block, contact_ip, contact_ix, contact_dv)
        for e in range(3):
            for i in range(nc):
                R[o_n + e * nc + i] = NST[e, i]
        for i in range(nc):
            rhs[o_n + i] = -n_bias[i]
    return R, rhs, a_target, a_max, nm


@jit
def tree_box_step(tree, joint_of, body_of_block, nq, kinematic, jq, follows, ratio, live, dof_start, mass, inertia,
                  inv_inertia, gravity, gyroscopic, quaternion, position, linear_velocity, angular_velocity, f,
                  contact_floats, contact_ints, zeta_c, slop, joints, motor_target, motor_max_force, h, zeta_j, cfm,
                  new_bound, current, blk_cols, blk_ptr, warm, prev_motor, prev_limit, prev_normal, prev_tangent,
                  params, threshold, passive, position_stage, position_zeta, radius, judge, motion=True):
    """One box-friction step (``joints="schur"``, pgs-sm) of a forest with kinematic roots and couplings
    in joint coordinates (module docstring). ``tree``: TreeTopology.args; ``joint_of`` (nj,): each
    joint's child body; ``body_of_block``: the body of each 6-dof block; ``kinematic`` (nb,): the
    kinematic bodies; ``jq`` (nj,): each joint's coordinate (-1 none); ``follows``, ``ratio``: the
    joints' couplings. The other arguments are :func:`contactlab.sim.box_joint_kernels.box_schur_step`'s
    (``f`` is not written where the step declines), and so is the returned tuple, with no joint
    impulses (joint coordinates have none) and the joint error of
    :func:`~contactlab.mechanics.tree.tree_joint_error` (nothing projected: DEEP asks the caller's
    position correction as the maximal call does); then, as that call's, the per-step checks of a DONE
    step, whose state is final, on ``radius`` and ``judge`` (:func:`contactlab.sim.faults.step_checks`:
    the turn bound, the plausibility verdict on the call's own free velocity, the judged motion; code
    NOT_JUDGED and no motion otherwise, or where ``radius`` is not one per body); ``motion`` False: no
    judged motion either (:func:`~contactlab.sim.faults.step_verdict`: the fused call drops it)."""
    ke0, pe0 = energies(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity, position, gravity)
    e0 = 0.0 + ke0 + pe0
    order, parent, jnt, qstart, qcount, root, anc_ptr, anc_idx = tree
    point, normal, t1, t2, phi, mu, guess, a, b, _sa, _sb, match = unpack_contacts(contact_floats, contact_ints)
    ja, jkind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper = tree_joint_arrays(joints)
    nc = phi.shape[0]
    fw = f.copy()
    M_blocks, W_blocks, v = body_terms(live, dof_start, quaternion, mass, inertia, inv_inertia, gravity,
                                       linear_velocity, angular_velocity, gyroscopic, fw)
    v_free = free_velocity(W_blocks, v, fw, h)
    no_max = np.zeros(0)
    ok, col, fac, t0, nr = coordinate_map(order, jnt, qstart, kinematic, linear_velocity, angular_velocity, jq,
                                          follows, ratio, motor_target, motor_max_force, nq)
    if not ok or nr == 0:
        return (DECLINED, _no_answer(), np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, 0, no_max,
                0.0, _NOT_JUDGED, np.zeros(0))
    theta, qd, ax, P = tree_coordinates(order, parent, jnt, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a,
                                        q_rel0, nq, position, quaternion, linear_velocity, angular_velocity)
    S6 = motion_columns(order, jnt, qstart, qcount, root, jkind, nq, position, ax, P)
    Sb = body_jacobians(order, root, anc_ptr, anc_idx, nq, position, S6)
    H = crba(order, parent, qstart, qcount, root, anc_ptr, anc_idx, nq, position, quaternion, mass, inertia, S6)
    p = joint_momentum(live, dof_start, M_blocks, Sb, anc_ptr, anc_idx, v_free, nq)
    Hr, br = reduced_mass(H, p, col, fac, t0, nr)
    dv, ix, ip, n_bias = contact_terms(a, b, dof_start, position, point, normal, t1, t2, phi, h, zeta_c, slop)
    Np, Ni = ip[:nc + 1], ix[:dv.shape[1]]
    Lq, l_bias = _limit_rows(joint_of, qstart, jkind, lower, upper, theta, qd, h, zeta_j, nq)
    nl = l_bias.shape[0]
    R, rhs, a_target, a_max, nm = tree_rows(Sb, dof_start, body_of_block, Np, Ni, dv, jq, motor_target,
                                            motor_max_force, h, Lq, l_bias, n_bias, nq)
    n = R.shape[0]
    if n == 0:
        return (DECLINED, _no_answer(), np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max,
                0.0, _NOT_JUDGED, np.zeros(0))
    # C = R_u' (nr, n) = T' R', and the rows' known part R t0
    buf = np.zeros(nr * n + n * n + 2 * n)      # C, M, known, q: views of one allocation
    C = buf[:nr * n].reshape((nr, n))
    M = buf[nr * n:nr * n + n * n].reshape((n, n))
    known = buf[nr * n + n * n:nr * n + n * n + n]
    q = buf[nr * n + n * n + n:]
    for i in range(nq):
        ci = col[i]
        if ci >= 0:
            fi = fac[i]
            for r in range(n):
                C[ci, r] += fi * R[r, i]
        elif t0[i] != 0.0:
            ti = t0[i]
            for r in range(n):
                known[r] += R[r, i] * ti
    ok, Li, Y, yg = spd_reduce(Hr, C, br)
    if not ok:
        return (DECLINED, _no_answer(), np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max,
                0.0, _NOT_JUDGED, np.zeros(0))
    for i in range(n):
        s = 0.0
        for k in range(nr):
            s += Y[k, i] * yg[k]
        q[i] = s + known[i] - rhs[i]
    add_gram(M, Y, 1.0)         # M = Y'Y
    for i in range(n):
        M[i, i] += cfm
    ok, code, z, wv, numbers, stats = box_solve_certified(M, q, a_max, mu, guess, nm, nl, nc, new_bound, current,
                                                          warm, prev_motor, prev_limit, prev_normal, prev_tangent,
                                                          match, params, threshold)
    if not ok:
        return (DECLINED, _no_answer(), np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max,
                0.0, _NOT_JUDGED, np.zeros(0))
    u = joint_impulses(Li, Y, yg, z)          # -L^-T (Y z + yg) = -u+
    qd_next = t0.copy()
    for i in range(nq):
        if col[i] >= 0:
            qd_next[i] = -fac[i] * u[col[i]]
    v_next = maximal_rates(live, dof_start, Sb, anc_ptr, anc_idx, qd_next, v.shape[0])
    o_n = nm + nl
    tangent = np.empty((nc, 2))
    for c in range(nc):
        tangent[c, 0] = z[o_n + nc + c]
        tangent[c, 1] = z[o_n + 2 * nc + c]
    if nc:
        modes = _modes_of_rows(Np, Ni, dv[1], dv[2], v_next, z[o_n:o_n + nc], MODE_IMPULSE_TOL, MODE_SPEED_TOL)
    else:
        modes = np.zeros(0, dtype=np.int8)
    gain = block_kinetic_gain(M_blocks, v_next, v_free, passive)
    f[:] = fw
    out = (True, code, z, wv, np.zeros(0), numbers, stats, v_next, tangent, n)
    advance_tree(order, jnt, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, qd_next, h,
                 position, quaternion)
    for t in range(live.shape[0]):
        bb = live[t]
        s0 = dof_start[bb]
        for i in range(3):
            linear_velocity[bb, i] = v_next[s0 + i]
            angular_velocity[bb, i] = v_next[s0 + 3 + i]
    if position_stage and nc:
        Nv = np.empty(nc)
        for i in range(nc):
            acc_n = 0.0
            for j in range(nq):
                acc_n += R[o_n + i, j] * qd_next[j]
            Nv[i] = acc_n
        # no sink window (mechanics/rows.py position_targets_window): the restoration is the free-body steps'
        _c, deep = position_targets_window(Nv, phi, h, slop, position_zeta, 0.0)
        if deep:
            return (DEEP, out, modes, e0, gain, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max, 0.0, _NOT_JUDGED, np.zeros(0))
    joint_error = tree_joint_error(order, jnt, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, position,
                                   quaternion)
    ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity,
                                     position, gravity, phi)
    turn = 0.0
    verdict = _NOT_JUDGED
    judged = np.zeros(0)
    if radius.size == dof_start.size:
        x0, v0, w0, kind, jointed, total_mass, prev_joint_error, motors, actuated = judge
        if motion:
            turn, verdict, judged = step_checks(dof_start, kind, KIND_KINEMATIC, radius, contact_ints, x0, v0, w0,
                                                v_free, True, gravity, position, linear_velocity, angular_velocity, h,
                                                pen, slop, prev_joint_error, jointed, motors, actuated, gain, ke, pe,
                                                total_mass)
        else:
            turn, verdict = step_verdict(dof_start, kind, KIND_KINEMATIC, radius, contact_ints, x0, v0, w0, v_free,
                                         True, gravity, position, linear_velocity, angular_velocity, h, pen, slop,
                                         prev_joint_error, jointed, motors, actuated, gain, ke, pe, total_mass)
    return (DONE, out, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max, turn, verdict, judged)


@jit
def _put(out, k, src):
    """out[k:k + src.size] = src; returns k + src.size."""
    for i in range(src.size):
        out[k + i] = src[i]
    return k + src.size


@jit
def tree_box_fused_step(fixed, gyroscopic, quaternion, position, linear_velocity, angular_velocity, torque_idx, torques,
                        ndof, state_target, state_max_force, contact_floats, contact_ints, zeta_c, slop, h, zeta_j, cfm,
                        new_bound, current, warm, prev_motor, prev_limit, prev_normal, prev_tangent, threshold,
                        position_stage, position_zeta, radius, judge):
    """The fused hand step's call (sim/grasp_step.py): the stages' build inputs
    (:func:`contactlab.sim.noslip_kernels.call_inputs`: the joint torques' force, the motors' targets
    and limits), then :func:`tree_box_step` on them, the same kernels in the same order as the
    stages' two calls. ``fixed``: the plan's constant arrays as one argument
    (:func:`contactlab.kernels.frozen.frozen_arrays`; each array argument crossing from Python costs
    an unboxing), ``fixed.args`` = (plan: tree_box_step's first fourteen arguments, the frozen
    model's; torque_joints = (kind, a, b, anchor_b, axis_a, dof_start) of the packed joints; the
    packed motor targets and force limits; the packed joints' arrays; blk_cols, blk_ptr; pgs-sm's
    params; passive). Its answers come back in one float
    array, each crossing into Python costing a boxed array (about a microsecond each): ``out`` =
    [z (n) | w (n) | v+ (ndof) | tangent impulses (2 nc) | v_free (ndof) | the joint torques' force
    before the step (ndof) | motor targets | motor limits (nj each) | numbers (6) | stats (6)], with
    the contact modes. Returns (outcome, e0, gain, ke, pe, pen, joint_error, nl, n, turn bound, verdict,
    out, modes); DECLINED: nothing changed (``out`` empty)."""
    plan, torque_joints, packed_target, packed_max_force, joints, blk_cols, blk_ptr, params, passive = fixed.args
    f, mt, mf, _lim = call_inputs(torque_idx, torques, torque_joints[0], torque_joints[1], torque_joints[2],
                                  torque_joints[3], torque_joints[4], torque_joints[5], position, quaternion, ndof,
                                  packed_target, packed_max_force, state_target, state_max_force)
    f0 = f.copy()
    res = tree_box_step(plan[0], plan[1], plan[2], plan[3], plan[4], plan[5], plan[6], plan[7], plan[8], plan[9],
                        plan[10], plan[11], plan[12], plan[13], gyroscopic, quaternion, position, linear_velocity,
                        angular_velocity, f, contact_floats, contact_ints, zeta_c, slop, joints, mt, mf, h, zeta_j, cfm,
                        new_bound, current, blk_cols, blk_ptr, warm, prev_motor, prev_limit, prev_normal, prev_tangent,
                        params, threshold, passive, position_stage, position_zeta, radius, judge, False)
    outcome, answer, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, _a_max, turn, verdict, _judged = res
    _ok, _code, z, wv, _x, numbers, stats, v_next, tangent, n = answer
    if outcome == DECLINED:
        return outcome, e0, gain, ke, pe, pen, joint_error, nl, n, turn, verdict, np.zeros(0), modes
    nc = tangent.shape[0]
    out = np.empty(2 * n + 3 * ndof + 2 * nc + 2 * mt.size + 12)
    k = _put(out, 0, z)
    k = _put(out, k, wv)
    k = _put(out, k, v_next)
    for c in range(nc):
        out[k + 2 * c] = tangent[c, 0]
        out[k + 2 * c + 1] = tangent[c, 1]
    k = _put(out, k + 2 * nc, v_free)
    k = _put(out, k, f0)
    k = _put(out, k, mt)
    k = _put(out, k, mf)
    k = _put(out, k, numbers)
    _put(out, k, stats)
    return outcome, e0, gain, ke, pe, pen, joint_error, nl, n, turn, verdict, out, modes
