"""Kinematic trees in joint coordinates: topology, forward kinematics, motion subspaces, the
joint-space mass matrix by the composite rigid body algorithm and the velocity-product terms
(Featherstone, *Rigid Body Dynamics Algorithms*, 2008: sec. 4.1-4.4 (kinematic trees, motion
subspaces), sec. 6.2 (CRBA, Table 6.2)), compiled (numba).

A scene's bodies are stored in maximal coordinates (each moving body's position, orientation and
velocity; :class:`~contactlab.mechanics.model.Data`). Where its joints form a forest, every moving
body is either a root (a floating body, six coordinates: its centre-of-mass velocity and angular
velocity in the world frame) or the child of exactly one revolute (one coordinate, the angle),
prismatic (one, the slide) or fixed joint (none) whose parent is the world, a fixed body or a
moving body earlier in the tree order. :func:`tree_topology` finds that structure once per model
(arrays only, for the kernels); it returns None (with the reason) for anything else: spherical
joints, couplings (``Joint.follows``), kinematic or planar bodies, a body with two parent joints
(a closed loop). The maximal-coordinate path keeps those; the box-friction step in joint
coordinates (sim/tree_box_kernels.py) asks for kinematic roots (a scripted palm: its rates known)
and couplings (a reduction of the coordinates) as well.

Joint coordinates follow the joint rows' own definitions (:mod:`~contactlab.mechanics.joint_kernels`):
a revolute joint's child orientation is q_b = q_a (axis_a, theta) q_rel0 and its anchors coincide;
a prismatic joint's child keeps q_b = q_a q_rel0 with its anchor at the parent's plus s axis;
a fixed joint's child keeps q_b = q_a q_rel0 at the anchor. :func:`tree_coordinates` reads
(theta, qdot) from maximal state, :func:`forward_kinematics` writes the bodies' poses from them,
exactly on the joint manifold (no drift to project).

Spatial vectors are (angular; linear) 6-vectors about one reference point o per tree (its root's
centre of mass at the step's start: small lever arms). Column k of the motion subspace is s_k:
a root's (0; e_i) and (e_i; 0), a revolute joint's (a; a x (o - P)) for its world axis a through
its anchor P, a prismatic joint's (0; a). A body's maximal velocity (v_c; omega) is its ancestors'
columns times qdot, v_c = v_o + omega x (c - o) (:func:`body_jacobians`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels._jit import jit, jit_inline
from .joint_kernels import FIXED, PRISMATIC, REVOLUTE

ROOT = -1       # TreeTopology.joint of a floating root


@dataclass(frozen=True)
class TreeTopology:
    """A model's forest (module docstring), as arrays the kernels read (``args``): ``order`` (nt,) the
    moving bodies, every parent before its children; per body (nb,): ``parent`` (-1: the world),
    ``joint`` (its parent joint, ROOT for a floating root, -2 for a body without dofs), ``qstart``
    and ``qcount`` (its own coordinates: 6, 1 or 0), ``root`` (the body whose centre is its tree's
    reference point); ``anc_ptr``/``anc_idx``: CSR of the coordinates that move each body (its
    ancestors' and its own, increasing); ``nq`` coordinates in all."""
    order: np.ndarray
    parent: np.ndarray
    joint: np.ndarray
    qstart: np.ndarray
    qcount: np.ndarray
    root: np.ndarray
    anc_ptr: np.ndarray
    anc_idx: np.ndarray
    nq: int

    @property
    def args(self) -> tuple:
        return (self.order, self.parent, self.joint, self.qstart, self.qcount, self.root, self.anc_ptr,
                self.anc_idx)


def tree_topology(model, kinematic_roots: bool = False, couplings: bool = False) -> tuple[TreeTopology | None, str]:
    """(TreeTopology, "") when ``model``'s moving bodies and joints form a forest of revolute,
    prismatic and fixed joints (module docstring), else (None, why not). ``kinematic_roots``: a
    kinematic body (a scripted palm or wrist) may be a root, its six rates known in every step
    (a kinematic child of a joint is still refused); ``couplings``: joints that follow another
    (``Joint.follows``) are kept as ordinary coordinates, for a caller that reduces them
    (sim/tree_box_kernels.py ``coordinate_map``)."""
    from .model import KIND_KINEMATIC
    nb = model.nb
    live = model.dof_start >= 0
    kinematic = live & (model.kind == KIND_KINEMATIC)
    if np.any(model.planar) or (np.any(kinematic) and not kinematic_roots):
        return None, "planar or kinematic bodies"
    parent = np.full(nb, -1, dtype=np.int64)
    joint = np.where(live, ROOT, -2).astype(np.int64)
    for k, j in enumerate(model.joints):
        if j.kind not in ("revolute", "prismatic", "fixed"):
            return None, f"joint {j.name!r} is {j.kind}"
        if j.follows >= 0 and not couplings:
            return None, f"joint {j.name!r} is coupled to another (follows)"
        if not live[j.b]:
            return None, f"joint {j.name!r}'s child has no dofs"
        if kinematic[j.b]:
            return None, f"joint {j.name!r}'s child is kinematic"
        if joint[j.b] != ROOT:
            return None, f"body {model.names[j.b]!r} is the child of two joints (a closed loop)"
        joint[j.b] = k
        parent[j.b] = j.a if (j.a >= 0 and live[j.a]) else -1
    order, placed = [], np.zeros(nb, dtype=bool)
    pending = [b for b in range(nb) if live[b]]
    while pending:
        left = [b for b in pending if not (parent[b] < 0 or placed[parent[b]])]
        ready = [b for b in pending if parent[b] < 0 or placed[parent[b]]]
        if not ready:
            return None, "the joints form a cycle"
        for b in ready:
            placed[b] = True
            order.append(b)
        pending = left
    qstart = np.zeros(nb, dtype=np.int64)
    qcount = np.zeros(nb, dtype=np.int64)
    root = np.arange(nb, dtype=np.int64)
    anc: list[list[int]] = [[] for _ in range(nb)]
    nq = 0
    for b in order:
        k = joint[b]
        qstart[b] = nq
        qcount[b] = 6 if k == ROOT else (0 if model.joints[k].kind == "fixed" else 1)
        nq += qcount[b]
        p = parent[b]
        if p >= 0:
            root[b] = root[p]
            anc[b] = list(anc[p])
        anc[b] += list(range(qstart[b], qstart[b] + qcount[b]))
    ptr = np.zeros(nb + 1, dtype=np.int64)
    for b in range(nb):
        ptr[b + 1] = ptr[b] + len(anc[b])
    idx = np.array([c for b in range(nb) for c in anc[b]], dtype=np.int64)
    return TreeTopology(np.array(order, dtype=np.int64), parent, joint, qstart, qcount, root, ptr, idx, int(nq)), ""


# -- small helpers (scalars and caller-owned buffers: no allocation per body) ---------------------------

@jit_inline
def _qmul(aw, ax, ay, az, bw, bx, by, bz):
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


@jit_inline
def _parent_quat(jp, quaternion):
    if jp >= 0:
        return quaternion[jp, 0], quaternion[jp, 1], quaternion[jp, 2], quaternion[jp, 3]
    return 1.0, 0.0, 0.0, 0.0


@jit_inline
def _rot_entries(quaternion, b):
    """The nine entries (row-major) of the rotation matrix of body b's unit quaternion, as
    :func:`~contactlab.kernels.quaternion.quat_matrix` forms them (the same expressions: the same
    bits), returned as scalars and inlined: the per-body loops below pass no view of the quaternion
    array to a separate function and fill no 3 x 3 array."""
    w, x, y, z = quaternion[b, 0], quaternion[b, 1], quaternion[b, 2], quaternion[b, 3]
    return (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))


@jit_inline
def _rot(quaternion, b, R):
    """R (3, 3) = the rotation matrix of body b's unit quaternion (:func:`_rot_entries`)."""
    (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1],
     R[2, 2]) = _rot_entries(quaternion, b)


@jit_inline
def _frame(b, jp, k, anchor_a, axis_a, position, quaternion, ax, P):
    """Joint k's world axis ax[b] and anchor P[b] from its parent body jp's pose (-1: the world: the
    joint's own world axis and anchor)."""
    u0, u1, u2 = axis_a[k, 0], axis_a[k, 1], axis_a[k, 2]
    a0, a1, a2 = anchor_a[k, 0], anchor_a[k, 1], anchor_a[k, 2]
    if jp >= 0:
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = _rot_entries(quaternion, jp)
        ax[b, 0] = r00 * u0 + r01 * u1 + r02 * u2
        ax[b, 1] = r10 * u0 + r11 * u1 + r12 * u2
        ax[b, 2] = r20 * u0 + r21 * u1 + r22 * u2
        P[b, 0] = position[jp, 0] + r00 * a0 + r01 * a1 + r02 * a2
        P[b, 1] = position[jp, 1] + r10 * a0 + r11 * a1 + r12 * a2
        P[b, 2] = position[jp, 2] + r20 * a0 + r21 * a1 + r22 * a2
    else:
        ax[b, 0], ax[b, 1], ax[b, 2] = u0, u1, u2
        P[b, 0], P[b, 1], P[b, 2] = a0, a1, a2


@jit
def joint_frames(order, joint, ja, anchor_a, axis_a, position, quaternion):
    """(ax, P) (nb, 3): the world axis and anchor (on the parent) of each body's parent joint."""
    nb = position.shape[0]
    ax = np.zeros((nb, 3))
    P = np.zeros((nb, 3))
    for b in order:
        k = joint[b]
        if k >= 0:
            _frame(b, ja[k], k, anchor_a, axis_a, position, quaternion, ax, P)
    return ax, P


@jit
def tree_coordinates(order, parent, joint, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, nq,
                     position, quaternion, lin, ang):
    """(theta, qdot, ax, P) of the maximal state: a root's six entries of theta are unused (its pose
    is read from the arrays) and its qdot is (v_c; omega); a revolute joint's angle 2 atan2(axis_a .
    vec(r), r_w) of r = conj(q_a) q_b conj(q_rel0) and rate ax . (omega_b - omega_a) (the joint
    rows' coordinate and rate row); a prismatic joint's ax . (P_b - P_a) and the rate of that along
    the axis at the child's anchor; ax, P: :func:`joint_frames`."""
    theta = np.zeros(nq)
    qd = np.zeros(nq)
    ax, P = joint_frames(order, joint, ja, anchor_a, axis_a, position, quaternion)
    Rb = np.empty((3, 3))
    for b in order:
        k = joint[b]
        s = qstart[b]
        if k < 0:
            for i in range(3):
                qd[s + i] = lin[b, i]
                qd[s + 3 + i] = ang[b, i]
            continue
        if qcount[b] == 0:
            continue
        jp = ja[k]
        moving = jp >= 0
        if jkind[k] == REVOLUTE:
            aw, axx, ay, az = _parent_quat(jp, quaternion)
            tw, tx, ty, tz = _qmul(aw, -axx, -ay, -az, quaternion[b, 0], quaternion[b, 1], quaternion[b, 2],
                                   quaternion[b, 3])
            rw, rx, ry, rz = _qmul(tw, tx, ty, tz, q_rel0[k, 0], -q_rel0[k, 1], -q_rel0[k, 2], -q_rel0[k, 3])
            theta[s] = 2.0 * np.arctan2(axis_a[k, 0] * rx + axis_a[k, 1] * ry + axis_a[k, 2] * rz, rw)
            acc = 0.0
            for i in range(3):
                acc += ax[b, i] * (ang[b, i] - (ang[jp, i] if moving else 0.0))
            qd[s] = acc
        else:       # prismatic
            _rot(quaternion, b, Rb)
            c = 0.0
            u = 0.0
            for i in range(3):
                pb = position[b, i] + Rb[i, 0] * anchor_b[k, 0] + Rb[i, 1] * anchor_b[k, 1] + Rb[i, 2] * anchor_b[k, 2]
                c += ax[b, i] * (pb - P[b, i])
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                # velocity of the child's anchor on b minus on the parent: v + w x (Pb - x)
                r1 = Rb[i1, 0] * anchor_b[k, 0] + Rb[i1, 1] * anchor_b[k, 1] + Rb[i1, 2] * anchor_b[k, 2]
                r2 = Rb[i2, 0] * anchor_b[k, 0] + Rb[i2, 1] * anchor_b[k, 1] + Rb[i2, 2] * anchor_b[k, 2]
                vb = lin[b, i] + ang[b, i1] * r2 - ang[b, i2] * r1
                va = 0.0
                if moving:
                    d1 = position[b, i1] + r1 - position[jp, i1]
                    d2 = position[b, i2] + r2 - position[jp, i2]
                    va = lin[jp, i] + ang[jp, i1] * d2 - ang[jp, i2] * d1
                u += ax[b, i] * (vb - va)
            theta[s] = c
            qd[s] = u
    return theta, qd, ax, P


@jit
def forward_kinematics(order, joint, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, position,
                       quaternion):
    """The poses of every non-root body from its parent's and its joint coordinate, in tree order, in
    place (roots keep theirs): q_b = q_a (axis_a, theta) q_rel0 (revolute) or q_a q_rel0 (prismatic,
    fixed), normalised; x_b = P + s ax - R_b anchor_b (P, ax the joint's anchor and axis on the
    parent, s the slide of a prismatic joint, else 0). Returns the new (ax, P) (:func:`joint_frames`)."""
    nb = position.shape[0]
    ax = np.zeros((nb, 3))
    P = np.zeros((nb, 3))
    for b in order:
        k = joint[b]
        if k < 0:
            continue
        jp = ja[k]
        _frame(b, jp, k, anchor_a, axis_a, position, quaternion, ax, P)
        aw, axx, ay, az = _parent_quat(jp, quaternion)
        slide = 0.0
        if jkind[k] == REVOLUTE:
            half = 0.5 * theta[qstart[b]]
            sn = np.sin(half)
            tw, tx, ty, tz = _qmul(aw, axx, ay, az, np.cos(half), sn * axis_a[k, 0], sn * axis_a[k, 1],
                                   sn * axis_a[k, 2])
        else:
            if jkind[k] == PRISMATIC:
                slide = theta[qstart[b]]
            tw, tx, ty, tz = aw, axx, ay, az
        qw, qx, qy, qz = _qmul(tw, tx, ty, tz, q_rel0[k, 0], q_rel0[k, 1], q_rel0[k, 2], q_rel0[k, 3])
        nrm = np.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        quaternion[b, 0] = qw / nrm
        quaternion[b, 1] = qx / nrm
        quaternion[b, 2] = qy / nrm
        quaternion[b, 3] = qz / nrm
        b00, b01, b02, b10, b11, b12, b20, b21, b22 = _rot_entries(quaternion, b)
        c0, c1, c2 = anchor_b[k, 0], anchor_b[k, 1], anchor_b[k, 2]
        position[b, 0] = P[b, 0] + slide * ax[b, 0] - (b00 * c0 + b01 * c1 + b02 * c2)
        position[b, 1] = P[b, 1] + slide * ax[b, 1] - (b10 * c0 + b11 * c1 + b12 * c2)
        position[b, 2] = P[b, 2] + slide * ax[b, 2] - (b20 * c0 + b21 * c1 + b22 * c2)
    return ax, P


@jit
def motion_columns(order, joint, qstart, qcount, root, jkind, nq, position, ax, P):
    """S6 (nq, 6): each coordinate's motion subspace column (angular; linear) about its tree's point
    o = the root's centre (module docstring); ax, P: the joints' world axes and anchors."""
    S6 = np.zeros((nq, 6))
    for b in order:
        k = joint[b]
        s = qstart[b]
        if k < 0:
            for i in range(3):
                S6[s + i, 3 + i] = 1.0          # v_c along e_i
                S6[s + 3 + i, i] = 1.0          # omega along e_i (about o = c_root)
            continue
        if qcount[b] == 0:
            continue
        if jkind[k] == REVOLUTE:
            o = root[b]
            for i in range(3):
                i1 = (i + 1) % 3
                i2 = (i + 2) % 3
                S6[s, i] = ax[b, i]
                S6[s, 3 + i] = ax[b, i1] * (position[o, i2] - P[b, i2]) - ax[b, i2] * (position[o, i1] - P[b, i1])
        else:
            for i in range(3):
                S6[s, 3 + i] = ax[b, i]
    return S6


@jit
def body_jacobians(order, root, anc_ptr, anc_idx, nq, position, S6):
    """Sb (nb, 6, nq): d(v_c; omega)_b / d qdot, from the columns of b's ancestors (zero elsewhere)."""
    nb = position.shape[0]
    Sb = np.zeros((nb, 6, nq))
    for b in order:
        o = root[b]
        r0 = position[b, 0] - position[o, 0]
        r1 = position[b, 1] - position[o, 1]
        r2 = position[b, 2] - position[o, 2]
        for p in range(anc_ptr[b], anc_ptr[b + 1]):
            k = anc_idx[p]
            w0, w1, w2 = S6[k, 0], S6[k, 1], S6[k, 2]
            Sb[b, 0, k] = S6[k, 3] + w1 * r2 - w2 * r1
            Sb[b, 1, k] = S6[k, 4] + w2 * r0 - w0 * r2
            Sb[b, 2, k] = S6[k, 5] + w0 * r1 - w1 * r0
            Sb[b, 3, k] = w0
            Sb[b, 4, k] = w1
            Sb[b, 5, k] = w2
    return Sb


@jit_inline
def body_rates(Sb, anc_ptr, anc_idx, b, qd):
    """Body b's (v_c; omega) = Sb[b] qd as six scalars: each component summed over b's ancestor
    coordinates in their order (the sum of a dot product row by row), the six side by side so that
    no component's chain of additions waits for another's."""
    a0 = a1 = a2 = a3 = a4 = a5 = 0.0
    for p in range(anc_ptr[b], anc_ptr[b + 1]):
        k = anc_idx[p]
        x = qd[k]
        a0 += Sb[b, 0, k] * x
        a1 += Sb[b, 1, k] * x
        a2 += Sb[b, 2, k] * x
        a3 += Sb[b, 3, k] * x
        a4 += Sb[b, 4, k] * x
        a5 += Sb[b, 5, k] * x
    return a0, a1, a2, a3, a4, a5


@jit
def body_velocities(order, anc_ptr, anc_idx, Sb, qd, lin, ang):
    """(v_c; omega) of every moving body = Sb[b] qdot, into lin and ang (:func:`body_rates`)."""
    for b in order:
        lin[b, 0], lin[b, 1], lin[b, 2], ang[b, 0], ang[b, 1], ang[b, 2] = body_rates(Sb, anc_ptr, anc_idx, b, qd)


@jit
def crba(order, parent, qstart, qcount, root, anc_ptr, anc_idx, nq, position, quaternion, mass, inertia, S6):
    """The joint-space mass matrix H (nq, nq) by the composite rigid body algorithm (Featherstone
    Table 6.2): each body's spatial inertia about its tree's point o (mass m, first moment m r,
    rotational inertia R I R' + m (|r|^2 1 - r r'), r = c - o, formed as (R I) R' and symmetric by
    construction), summed from the leaves to the roots
    into composites I^c; then H_kl = s_l' I^c_b s_k for each own coordinate k of body b and each
    coordinate l that moves b (its ancestors' and its own)."""
    nb = position.shape[0]
    work = np.zeros(13 * nb + 21)       # cm, ch, cI, R, T, r: views of one allocation
    cm = work[:nb]
    ch = work[nb:4 * nb].reshape((nb, 3))
    cI = work[4 * nb:13 * nb].reshape((nb, 3, 3))
    R = work[13 * nb:13 * nb + 9].reshape((3, 3))
    T = work[13 * nb + 9:13 * nb + 18].reshape((3, 3))
    r = work[13 * nb + 18:]
    for b in order:
        o = root[b]
        for i in range(3):
            r[i] = position[b, i] - position[o, i]
        _rot(quaternion, b, R)
        m = mass[b]
        rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
        cm[b] = m
        for i in range(3):          # T = R I, then R I R' = T R' on and above the diagonal, mirrored
            for c in range(3):
                T[i, c] = R[i, 0] * inertia[b, 0, c] + R[i, 1] * inertia[b, 1, c] + R[i, 2] * inertia[b, 2, c]
        for i in range(3):
            ch[b, i] = m * r[i]
            for j in range(i, 3):
                x = (T[i, 0] * R[j, 0] + T[i, 1] * R[j, 1] + T[i, 2] * R[j, 2]) - m * r[i] * r[j] \
                    + (m * rr if i == j else 0.0)
                cI[b, i, j] = x
                cI[b, j, i] = x
    for t in range(order.size - 1, -1, -1):
        b = order[t]
        p = parent[b]
        if p >= 0:
            cm[p] += cm[b]
            for i in range(3):
                ch[p, i] += ch[b, i]
                for j in range(3):
                    cI[p, i, j] += cI[b, i, j]
    H = np.zeros((nq, nq))
    for b in order:
        h0, h1, h2 = ch[b, 0], ch[b, 1], ch[b, 2]
        for k in range(qstart[b], qstart[b] + qcount[b]):
            w0, w1, w2, v0, v1, v2 = S6[k, 0], S6[k, 1], S6[k, 2], S6[k, 3], S6[k, 4], S6[k, 5]
            # F = I^c s: angular cI w + h x v, linear m v - h x w
            f0 = cI[b, 0, 0] * w0 + cI[b, 0, 1] * w1 + cI[b, 0, 2] * w2 + h1 * v2 - h2 * v1
            f1 = cI[b, 1, 0] * w0 + cI[b, 1, 1] * w1 + cI[b, 1, 2] * w2 + h2 * v0 - h0 * v2
            f2 = cI[b, 2, 0] * w0 + cI[b, 2, 1] * w1 + cI[b, 2, 2] * w2 + h0 * v1 - h1 * v0
            f3 = cm[b] * v0 - (h1 * w2 - h2 * w1)
            f4 = cm[b] * v1 - (h2 * w0 - h0 * w2)
            f5 = cm[b] * v2 - (h0 * w1 - h1 * w0)
            for p in range(anc_ptr[b], anc_ptr[b + 1]):
                l = anc_idx[p]
                x = S6[l, 0] * f0 + S6[l, 1] * f1 + S6[l, 2] * f2 + S6[l, 3] * f3 + S6[l, 4] * f4 + S6[l, 5] * f5
                H[k, l] = x
                H[l, k] = x
    return H


@jit_inline
def _crs(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@jit
def bias_accelerations(order, parent, joint, qstart, jkind, position, lin, ang, qd, ax, P):
    """(a, alpha) (nb, 3): each moving body's centre-of-mass and angular acceleration at zero joint
    accelerations (the velocity-product terms: d/dt of its velocity expressed through its parent's,
    Featherstone sec. 4.4 in classical vectors): a root's are zero; a child b of parent p through
    a revolute joint (world axis x, anchor P, rate u) has alpha_b = alpha_p + u (w_p x x) and
    a_b = a_p + alpha_p x (c_b - c_p) + w_p x (v_b - v_p) + u ((w_p x x) x (c_b - P) + x x (v_b - v_P));
    prismatic: alpha_b = alpha_p, a_b = a_p + alpha_p x (c_b - c_p) + w_p x (v_b - v_p) + u (w_p x x);
    fixed: the same without the rate term. A static parent (the world, a fixed body) has zero motion.
    ax, P: the joints' world axes and anchors (:func:`joint_frames`)."""
    nb = position.shape[0]
    acc = np.zeros((nb, 3))
    alpha = np.zeros((nb, 3))
    for b in order:
        k = joint[b]
        if k < 0:
            continue
        p = parent[b]
        ap0 = ap1 = ap2 = al0 = al1 = al2 = wp0 = wp1 = wp2 = vp0 = vp1 = vp2 = xp0 = xp1 = xp2 = 0.0
        if p >= 0:
            ap0, ap1, ap2 = acc[p, 0], acc[p, 1], acc[p, 2]
            al0, al1, al2 = alpha[p, 0], alpha[p, 1], alpha[p, 2]
            wp0, wp1, wp2 = ang[p, 0], ang[p, 1], ang[p, 2]
            vp0, vp1, vp2 = lin[p, 0], lin[p, 1], lin[p, 2]
            xp0, xp1, xp2 = position[p, 0], position[p, 1], position[p, 2]
        xb0, xb1, xb2 = position[b, 0], position[b, 1], position[b, 2]
        dv0, dv1, dv2 = lin[b, 0] - vp0, lin[b, 1] - vp1, lin[b, 2] - vp2
        c0, c1, c2 = _crs(al0, al1, al2, xb0 - xp0, xb1 - xp1, xb2 - xp2)
        e0, e1, e2 = _crs(wp0, wp1, wp2, dv0, dv1, dv2)
        a0, a1, a2 = ap0 + c0 + e0, ap1 + c1 + e1, ap2 + c2 + e2
        b0, b1, b2 = al0, al1, al2
        if jkind[k] != FIXED:
            u = qd[qstart[b]]
            x0, x1, x2 = ax[b, 0], ax[b, 1], ax[b, 2]
            wx0, wx1, wx2 = _crs(wp0, wp1, wp2, x0, x1, x2)
            if jkind[k] == REVOLUTE:
                P0, P1, P2 = P[b, 0], P[b, 1], P[b, 2]
                # v_P = v_p + w_p x (P - c_p); v_b - v_P = dv - w_p x (P - c_p)
                g0, g1, g2 = _crs(wp0, wp1, wp2, P0 - xp0, P1 - xp1, P2 - xp2)
                m0, m1, m2 = _crs(wx0, wx1, wx2, xb0 - P0, xb1 - P1, xb2 - P2)
                n0, n1, n2 = _crs(x0, x1, x2, dv0 - g0, dv1 - g1, dv2 - g2)
                b0, b1, b2 = b0 + u * wx0, b1 + u * wx1, b2 + u * wx2
                a0, a1, a2 = a0 + u * (m0 + n0), a1 + u * (m1 + n1), a2 + u * (m2 + n2)
            else:
                a0, a1, a2 = a0 + u * wx0, a1 + u * wx1, a2 + u * wx2
        acc[b, 0], acc[b, 1], acc[b, 2] = a0, a1, a2
        alpha[b, 0], alpha[b, 1], alpha[b, 2] = b0, b1, b2
    return acc, alpha


@jit
def tree_joint_error(order, joint, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, position, quaternion):
    """The largest joint position error of a tree's state, per joint: the anchor gap's world
    components (P on the parent - P on the child) and the world rotation vector of the child's
    orientation error q_b conj(q_a (axis_a, theta) q_rel0) (theta the revolute joint's coordinate,
    :func:`tree_coordinates`; 0 for prismatic and fixed joints), whose components bound the joint
    rows' axis misalignment (mechanics/joint_kernels.py: revolute) or equal their rotation error
    (prismatic, fixed). A prismatic joint's gap is measured across its axis."""
    err = 0.0
    R = np.empty((3, 3))
    Rb = np.empty((3, 3))
    g = np.empty(3)
    for b in order:
        k = joint[b]
        if k < 0:
            continue
        jp = ja[k]
        if jp >= 0:
            _rot(quaternion, jp, R)
        else:
            for i in range(3):
                for j in range(3):
                    R[i, j] = 1.0 if i == j else 0.0
        _rot(quaternion, b, Rb)
        along = 0.0
        for i in range(3):
            pa = (position[jp, i] if jp >= 0 else 0.0) + R[i, 0] * anchor_a[k, 0] + R[i, 1] * anchor_a[k, 1] \
                + R[i, 2] * anchor_a[k, 2]
            pb = position[b, i] + Rb[i, 0] * anchor_b[k, 0] + Rb[i, 1] * anchor_b[k, 1] + Rb[i, 2] * anchor_b[k, 2]
            g[i] = pb - pa
        if jkind[k] == PRISMATIC:
            for i in range(3):
                along += g[i] * (R[i, 0] * axis_a[k, 0] + R[i, 1] * axis_a[k, 1] + R[i, 2] * axis_a[k, 2])
            for i in range(3):
                g[i] -= along * (R[i, 0] * axis_a[k, 0] + R[i, 1] * axis_a[k, 1] + R[i, 2] * axis_a[k, 2])
        for i in range(3):
            err = max(err, abs(g[i]))
        aw, ax_, ay, az = _parent_quat(jp, quaternion)
        if jkind[k] == REVOLUTE:
            tw, tx, ty, tz = _qmul(aw, -ax_, -ay, -az, quaternion[b, 0], quaternion[b, 1], quaternion[b, 2],
                                   quaternion[b, 3])
            rw, rx, ry, rz = _qmul(tw, tx, ty, tz, q_rel0[k, 0], -q_rel0[k, 1], -q_rel0[k, 2], -q_rel0[k, 3])
            half = np.arctan2(axis_a[k, 0] * rx + axis_a[k, 1] * ry + axis_a[k, 2] * rz, rw)
            sn = np.sin(half)
            aw, ax_, ay, az = _qmul(aw, ax_, ay, az, np.cos(half), sn * axis_a[k, 0], sn * axis_a[k, 1],
                                    sn * axis_a[k, 2])
        dw, dx, dy, dz = _qmul(aw, ax_, ay, az, q_rel0[k, 0], q_rel0[k, 1], q_rel0[k, 2], q_rel0[k, 3])
        ew, ex, ey, ez = _qmul(quaternion[b, 0], quaternion[b, 1], quaternion[b, 2], quaternion[b, 3], dw, -dx, -dy,
                               -dz)
        sg = -1.0 if ew < 0 else 1.0
        s = np.sqrt(ex * ex + ey * ey + ez * ez)
        th = 2.0 * np.arctan2(s, sg * ew)
        kk = th / s if s > 1e-12 else 2.0
        err = max(err, abs(kk * sg * ex), abs(kk * sg * ey), abs(kk * sg * ez))
    return err
