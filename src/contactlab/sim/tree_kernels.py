"""The no-slip step of a kinematic tree in joint coordinates, compiled (drumwright Sec. VI, eq. 45-57,
Alg. 1 and 2, with Featherstone's joint-space formulation: sec. 6.2 CRBA).

The maximal-coordinate step (:mod:`contactlab.sim.noslip_kernels`) keeps every body's 6 coordinates
and the joints as bilateral rows J v+ = J_rhs: FIND-INDICES reduces the 60-90 joint rows with the
contacts' tangent rows, and after the step a Newton projection pulls the bodies back onto the
joints. On a forest of revolute, prismatic and fixed joints
(:func:`contactlab.mechanics.tree.tree_topology`) the joint rows' null space is the motion subspace
S (v = S qdot exactly), so :func:`tree_noslip_step` solves the same model in the tree's nq joint
coordinates:

1. the joint coordinates and rates of the state (:func:`~contactlab.mechanics.tree.tree_coordinates`),
   the bodies' poses and velocities rebuilt from them (forward kinematics: any drift a previous
   maximal-coordinate step left is removed here);
2. the joint-space mass matrix H (CRBA), the bodies' free velocity v + h M^-1 f (gravity, gyroscopic
   and joint torques, as the maximal step) less h times the velocity-product accelerations
   (:func:`~contactlab.mechanics.tree.bias_accelerations`), and its momentum S' M (...) in joint
   coordinates: H qdot_free = S' (M v + h f) - h S' M a_bias, the semi-implicit Euler step of
   H qddot + C qdot = S' f;
3. the contact rows N S, and the tangent rows S S, T S of the touching contacts, joint limits as
   unilateral rows on their coordinate (the joint rows' bias and reach), and the no-slip reduction
   in H's metric (:func:`~contactlab.kernels.metric_dense.tree_metric_chain`: FIND-INDICES on the
   tangent rows only, the factored LCP of eq. 57, the mathematics of
   :func:`~contactlab.kernels.metric_chain.noslip_metric_chain` with H's tree-sparse factor H = L' L,
   Featherstone RBDA sec. 6.5, :func:`~contactlab.kernels.mass_factor.tree_factor`, the rows dense and
   solved side by side), ppm and its certification (as the maximal step);
4. qdot+ recovered, x += h qdot+ on the joint coordinates (a root: x += h v, q <- exp(h omega) q),
   forward kinematics to the bodies' poses; the bodies' velocities are v+ = S(q) qdot+, the velocity
   eq. 45-46 constrain (the stance feet's tangential velocity zero), as the maximal step keeps its
   v+; the next step reads its joint rates from them at the new configuration (step 1).

In exact arithmetic step 3's v+ = S qdot+ is the maximal step's v+ with J_rhs = 0 and the
velocity-product terms added; the trajectories differ from the maximal path's by those terms and
by the joint projection that the maximal path needs and this one does not.

Outcomes and the returned tuple are :func:`contactlab.sim.noslip_kernels.noslip_step`'s (DECLINED
leaves the state untouched; ``joint`` is empty: the joints' impulses are not unknowns in joint
coordinates); v_next is S(q) qdot+ at the state before the step (the maximal step's v+),
v_free the maximal free velocity (the plausibility check's).
"""
from __future__ import annotations

import numpy as np

from ..collision.boxes.packed import unpack_contacts
from ..kernels._jit import jit
from ..kernels.energy import energies, energies_and_depth
from ..kernels.factored import THEOREM1_UNCLEAR
from ..kernels.mass_factor import tree_factor
from ..kernels.metric_dense import tree_metric_chain, tree_metric_recover
from ..mechanics.bodies import body_terms, free_velocity
from ..mechanics.integrate import _exp_rotate
from ..mechanics.joint_kernels import PRISMATIC, REVOLUTE, limit_side
from ..mechanics.rows import contact_terms, position_targets_window
from ..mechanics.tree import (body_jacobians, body_rates, body_velocities, bias_accelerations, crba,
                              forward_kinematics, motion_columns, tree_coordinates, tree_joint_error)
from ..models.common import MODE_IMPULSE_TOL, MODE_SPEED_TOL, _modes_of_speeds
from .noslip_kernels import DECLINED, DEEP, DONE, certified_ppm


@jit
def joint_rows_of(Sb, dof_start, body_of_block, ip, ix, data):
    """Dense rows (r, nq) in joint coordinates of CSR rows over the maximal dofs: row . Sb (each
    entry at dof c of body b adds its value times Sb[b, c - dof_start[b], :])."""
    return frame_rows_of(Sb, dof_start, body_of_block, ip, ix, data.reshape((1, data.shape[0])))[0]


@jit
def frame_rows_of(Sb, dof_start, body_of_block, ip, ix, dv):
    """:func:`joint_rows_of` of the directions dv (nd, nnz) that share one CSR pattern (ip, ix) (the
    contact frames' N, S, T: mechanics/rows.py frame_rows_csr) in one pass over the pattern:
    out (nd, r, nq), each entry the same sum in the same order as one direction's."""
    r = ip.shape[0] - 1
    nq = Sb.shape[2]
    nd = dv.shape[0]
    out = np.zeros((nd, r, nq))
    for i in range(r):
        for p in range(ip[i], ip[i + 1]):
            c = ix[p]
            b = body_of_block[c // 6]
            k = c - dof_start[b]
            for e in range(nd):
                x = dv[e, p]
                for j in range(nq):
                    out[e, i, j] += x * Sb[b, k, j]
    return out


@jit
def _limit_rows(joint_of, qstart, jkind, lower, upper, theta, qd, h, zeta, nq):
    """Joint limits as unilateral rows on their coordinate, where the joint rows put them
    (the angle wrapped to [-pi, pi), each side by mechanics/joint_kernels.py :func:`limit_side`), in
    joint order, lower first."""
    nj = jkind.shape[0]
    rows = np.zeros((2 * nj, nq))
    bias = np.zeros(2 * nj)
    n = 0
    for k in range(nj):
        if jkind[k] != REVOLUTE and jkind[k] != PRISMATIC:
            continue
        s = qstart[joint_of[k]]
        c = theta[s]
        if jkind[k] == REVOLUTE:
            c = (c + np.pi) % (2 * np.pi) - np.pi
        for side in range(2):
            bound = lower[k] if side == 0 else upper[k]
            sign = 1.0 if side == 0 else -1.0
            active, b = limit_side(c, bound, sign, qd[s], h, zeta)
            if active:
                rows[n, s] = sign
                bias[n] = b
                n += 1
    return rows[:n], bias[:n]


@jit
def tree_joint_arrays(joints):
    """The packed joints' arrays a tree step reads (joint_kernels.py ``JointArrays.kernel_args``): each
    joint's parent body, kind, anchors, parent-frame axis, rest orientation and limits."""
    return joints[0], joints[2], joints[3], joints[4], joints[5], joints[6], joints[7], joints[8]


@jit
def maximal_rates(live, dof_start, Sb, anc_ptr, anc_idx, qd, ndof):
    """v = S qd (ndof,): every live body's (v_c; omega) of the joint rates qd
    (:func:`~contactlab.mechanics.tree.body_rates`) at its maximal dofs."""
    v = np.zeros(ndof)
    for t in range(live.shape[0]):
        bb = live[t]
        s0 = dof_start[bb]
        v[s0], v[s0 + 1], v[s0 + 2], v[s0 + 3], v[s0 + 4], v[s0 + 5] = body_rates(Sb, anc_ptr, anc_idx, bb, qd)
    return v


@jit
def joint_momentum(live, dof_start, M_blocks, Sb, anc_ptr, anc_idx, y, nq):
    """p = S' M y (nq,): the momentum of the maximal velocities y (ndof,) in joint coordinates, body
    by body (M's (6, 6) blocks ``M_blocks`` in ``live``'s order, Sb the bodies' jacobians of
    :func:`~contactlab.mechanics.tree.body_jacobians`); each p[k] gets a body's six terms in their order."""
    p = np.zeros(nq)
    my = np.empty(6)
    for t in range(live.shape[0]):
        bb = live[t]
        s0 = dof_start[bb]
        for i in range(6):
            mi = 0.0
            for j in range(6):
                mi += M_blocks[t, i, j] * y[s0 + j]
            my[i] = mi
        for q in range(anc_ptr[bb], anc_ptr[bb + 1]):
            kq = anc_idx[q]
            for i in range(6):
                p[kq] += Sb[bb, i, kq] * my[i]
    return p


@jit
def advance_tree(order, jnt, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, qd_next, h, pos,
                 quat):
    """Semi-implicit Euler on the joint coordinates, in place: a root's x += h v and q <- exp(h omega) q
    (the maximal step's :func:`~contactlab.mechanics.integrate.advance_state`), a joint's theta += h qdot;
    then every other body's pose from them (:func:`~contactlab.mechanics.tree.forward_kinematics`)."""
    for t in range(order.shape[0]):
        bb = order[t]
        s0 = qstart[bb]
        if jnt[bb] < 0:
            for i in range(3):
                pos[bb, i] += h * qd_next[s0 + i]
            quat[bb, 0], quat[bb, 1], quat[bb, 2], quat[bb, 3] = _exp_rotate(
                h * qd_next[s0 + 3], h * qd_next[s0 + 4], h * qd_next[s0 + 5], quat[bb, 0], quat[bb, 1], quat[bb, 2],
                quat[bb, 3])
        elif qcount[bb]:
            theta[s0] += h * qd_next[s0]
    forward_kinematics(order, jnt, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, pos, quat)


@jit
def _declined(e0, v, v_free):
    """:func:`tree_noslip_step`'s DECLINED tuple (the state untouched), formed only when a step declines."""
    z = np.zeros(0)
    return (DECLINED, False, THEOREM1_UNCLEAR, 0, z, z, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), np.zeros(2, dtype=np.int64),
            np.zeros(0, dtype=np.int64), 0, 0, e0, 0.0, 0.0, 0.0, 0.0, 0.0, v, np.zeros(0), np.zeros((0, 2)),
            np.zeros(0, dtype=np.int8), 0, 0, 0, v_free, 0.0)


@jit
def block_kinetic_gain(B, after, before, weight):
    """:func:`~contactlab.mechanics.bodies.kinetic_gain` of the block-diagonal M whose (k, 6, 6) blocks
    B cover the dofs in order (block t on dofs 6 t .. 6 t + 5, the CSR of
    :func:`~contactlab.mechanics.system.block_pattern`): the same products summed in the same order,
    read from the blocks instead of through the CSR's index arrays."""
    g = 0.0
    for t in range(B.shape[0]):
        s0 = 6 * t
        for i in range(6):
            r = s0 + i
            wr = weight[r]
            if wr == 0.0:
                continue
            sa = 0.0
            sb = 0.0
            for j in range(6):
                c = s0 + j
                wc = B[t, i, j] * weight[c]
                sa += wc * after[c]
                sb += wc * before[c]
            g += wr * (after[r] * sa - before[r] * sb)
    return 0.5 * g


@jit
def tree_noslip_step(tree, joint_of, body_of_block, nq, live, dof_start, mass, inertia, inv_inertia, gravity,
                     gyroscopic, quaternion, position, linear_velocity, angular_velocity, f,
                     contact_floats, contact_ints, zeta_c, slop, joints, motor_target, h, zeta_j, blk_cols, blk_ptr,
                     active_gap, tol, cfm, max_it, threshold, passive, position_stage, position_zeta):
    """One no-slip step of a forest in joint coordinates (module docstring). ``tree``: TreeTopology.args
    and lam, each joint coordinate's parent (:func:`~contactlab.kernels.mass_factor.coordinate_parents`:
    the model's alone, formed once where the stages are planned, :class:`~contactlab.sim.tree_stages.CompiledTreeNoSlipStages`);
    ``joint_of`` (nj,): each joint's child body; ``body_of_block`` (ndof / 6,): the body of each
    6-dof block; ``joints``: the packed joints' kernel arguments (their frames and limits);
    the joint error after the step is :func:`~contactlab.mechanics.tree.tree_joint_error`'s; ``f``:
    the joint torques' generalized force (the bodies' forces are added in place, as the maximal
    step does); ``contact_floats``, ``contact_ints``: the step's contacts as the detection packed
    them (:func:`contactlab.collision.boxes.packed.pack_contacts`: two buffers cross into the call,
    not seven arrays made from them in Python); ``blk_cols``, ``blk_ptr``: M's block pattern, kept in
    the argument list (the kinetic gain reads the blocks in that pattern's order, :func:`block_kinetic_gain`).
    The other arguments and the returned tuple are :func:`contactlab.sim.noslip_kernels.noslip_step`'s."""
    order, parent, jnt, qstart, qcount, root, anc_ptr, anc_idx, lam = tree
    point, normal, t1, t2, phi, _mu, _guess, a, b, _sa, _sb, _match = unpack_contacts(contact_floats, contact_ints)
    ja, jkind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper = tree_joint_arrays(joints)
    nc = phi.shape[0]
    ke0, pe0 = energies(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity, position, gravity)
    e0 = 0.0 + ke0 + pe0
    pos = position.copy()
    quat = quaternion.copy()
    lin = linear_velocity.copy()
    ang = angular_velocity.copy()
    theta, qd, ax, P = tree_coordinates(order, parent, jnt, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a,
                                        q_rel0, nq, pos, quat, lin, ang)
    ax, P = forward_kinematics(order, jnt, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, pos, quat)
    S6 = motion_columns(order, jnt, qstart, qcount, root, jkind, nq, pos, ax, P)
    Sb = body_jacobians(order, root, anc_ptr, anc_idx, nq, pos, S6)
    body_velocities(order, anc_ptr, anc_idx, Sb, qd, lin, ang)
    M_blocks, W_blocks, v = body_terms(live, dof_start, quat, mass, inertia, inv_inertia, gravity, lin, ang,
                                       gyroscopic, f)
    v_free = free_velocity(W_blocks, v, f, h)
    numbers = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    counts = np.zeros(2, dtype=np.int64)
    nonbasic = np.zeros(0, dtype=np.int64)
    for k in range(motor_target.shape[0]):
        if motor_target[k] == motor_target[k]:       # a motor: the maximal step's active set takes it
            return _declined(e0, v, v_free)
    # momentum in joint coordinates: S' M (v_free - h a_bias)
    acc, alpha = bias_accelerations(order, parent, jnt, qstart, jkind, pos, lin, ang, qd, ax, P)
    y = np.empty(v_free.shape[0])
    for t in range(live.shape[0]):
        bb = live[t]
        s0 = dof_start[bb]
        for i in range(6):
            acc_i = acc[bb, i] if i < 3 else alpha[bb, i - 3]
            y[s0 + i] = v_free[s0 + i] - h * acc_i
    p = joint_momentum(live, dof_start, M_blocks, Sb, anc_ptr, anc_idx, y, nq)
    H = crba(order, parent, qstart, qcount, root, anc_ptr, anc_idx, nq, pos, quat, mass, inertia, S6)
    Lh = np.empty((nq, nq))
    if not tree_factor(H, lam, Lh):
        return _declined(e0, v, v_free)
    # the contacts' and limits' rows in joint coordinates
    dv, ix, ip, n_bias = contact_terms(a, b, dof_start, pos, point, normal, t1, t2, phi, h, zeta_c, slop)
    Np = ip[:nc + 1]        # N, S and T share one CSR pattern (mechanics/rows.py frame_rows_csr)
    NST = frame_rows_of(Sb, dof_start, body_of_block, Np, ix, dv)
    Nq, Sq, Tq = NST[0], NST[1], NST[2]
    Lq, l_bias = _limit_rows(joint_of, qstart, jkind, lower, upper, theta, qd, h, zeta_j, nq)
    nl = l_bias.shape[0]
    n = nl + nc
    U = np.empty((n, nq))
    bias = np.empty(n)
    for i in range(nl):
        U[i] = Lq[i]
        bias[i] = l_bias[i]
    for i in range(nc):
        U[nl + i] = Nq[i]
        bias[nl + i] = n_bias[i]
    ST = np.zeros((2 * nc, nq))
    for i in range(nc):
        if phi[i] <= active_gap:
            ST[2 * i] = Sq[i]
            ST[2 * i + 1] = Tq[i]
    chain = tree_metric_chain(H, Lh, lam, ST, tol, p, U, bias)
    status, kept_rows, kept, Lg, UZ, Zp, offset, q, vval, vidx, vptr, beta, prow, sgn, free = chain
    d = UZ.shape[1]
    if status != 0 or d == 0:
        return _declined(e0, v, v_free)
    ok, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, t_solve = certified_ppm(
        UZ, Zp, offset, q, cfm, n, max_it, threshold, np.zeros(n), numbers, counts, nonbasic)
    if not ok:
        return _declined(e0, v, v_free)
    qd_next, tangent = tree_metric_recover(H, Lh, lam, kept_rows, Lg, kept, vval, vidx, vptr, beta, prow, sgn, free,
                                           UZ, Zp, p, U, z, nc)
    joint = np.zeros(0)
    normal_z = z[nl:]
    vt = np.empty(nc)
    for i in range(nc):
        vs = 0.0
        vtt = 0.0
        for j in range(nq):
            vs += Sq[i, j] * qd_next[j]
            vtt += Tq[i, j] * qd_next[j]
        vt[i] = np.sqrt(vs * vs + vtt * vtt)
    modes = _modes_of_speeds(vt, normal_z, MODE_IMPULSE_TOL, MODE_SPEED_TOL)
    v_next = maximal_rates(live, dof_start, Sb, anc_ptr, anc_idx, qd_next, v.shape[0])
    gain = block_kinetic_gain(M_blocks, v_next, v_free, passive)
    deep = False
    if position_stage and nc:
        Nv = np.empty(nc)
        for i in range(nc):
            acc_n = 0.0
            for j in range(nq):
                acc_n += Nq[i, j] * qd_next[j]
            Nv[i] = acc_n
        # no sink window (mechanics/rows.py position_targets_window): the restoration is the free-body steps'
        _c, deep = position_targets_window(Nv, phi, h, slop, position_zeta, 0.0)
    # integrate the joint coordinates, then the bodies' poses and velocities from them
    advance_tree(order, jnt, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, qd_next, h, pos,
                 quat)
    for t in range(live.shape[0]):     # v(t + h) = v+ = S(q) qdot+: S v+ = T v+ = 0 hold for it (eq. 45-46)
        bb = live[t]
        s0 = dof_start[bb]
        for i in range(3):
            lin[bb, i] = v_next[s0 + i]
            ang[bb, i] = v_next[s0 + 3 + i]
    position[:] = pos
    quaternion[:] = quat
    linear_velocity[:] = lin
    angular_velocity[:] = ang
    if deep:
        return (DEEP, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, e0, gain, 0.0, 0.0,
                0.0, 0.0, v_next, joint, tangent, modes, nl, kept_rows, d, v_free, t_solve)
    joint_error = tree_joint_error(order, jnt, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, position,
                                   quaternion)
    ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity,
                                     position, gravity, phi)
    return (DONE, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, e0, gain, ke, pe, pen,
            joint_error, v_next, joint, tangent, modes, nl, kept_rows, d, v_free, t_solve)
