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
(a closed loop). The maximal-coordinate path keeps those.

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

from ..kernels._jit import jit
from ..kernels.quaternion import quat_conj_into as _conj, quat_matrix as _rot, quat_mul_into as _qmul
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


def tree_topology(model) -> tuple[TreeTopology | None, str]:
    """(TreeTopology, "") when ``model``'s moving bodies and joints form a forest of revolute,
    prismatic and fixed joints (module docstring), else (None, why not)."""
    from .model import KIND_KINEMATIC
    nb = model.nb
    live = model.dof_start >= 0
    if np.any(model.planar) or np.any(model.kind[live] == KIND_KINEMATIC):
        return None, "planar or kinematic bodies"
    parent = np.full(nb, -1, dtype=np.int64)
    joint = np.where(live, ROOT, -2).astype(np.int64)
    for k, j in enumerate(model.joints):
        if j.kind not in ("revolute", "prismatic", "fixed"):
            return None, f"joint {j.name!r} is {j.kind}"
        if j.follows >= 0:
            return None, f"joint {j.name!r} is coupled to another (follows)"
        if not live[j.b]:
            return None, f"joint {j.name!r}'s child has no dofs"
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


# -- small helpers -------------------------------------------------------------------------------------

@jit
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


@jit
def _parent_frame(jp, anchor_a, axis_a, position, quaternion, k, R):
    """(position, quaternion, world axis, world anchor) of joint k, whose parent is body jp (-1: the
    world, identity frame; else the body's current pose, moving or fixed); R receives its rotation."""
    qa = np.array([1.0, 0.0, 0.0, 0.0])
    xa = np.zeros(3)
    if jp >= 0:
        for i in range(4):
            qa[i] = quaternion[jp, i]
        for i in range(3):
            xa[i] = position[jp, i]
    _rot(qa, R)
    ax = R @ axis_a[k]
    P = xa + R @ anchor_a[k]
    return xa, qa, ax, P


@jit
def tree_coordinates(order, parent, joint, qstart, qcount, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, nq,
                     position, quaternion, lin, ang):
    """(theta, qdot) (nq,) of the maximal state: a root's six entries of theta are unused (its pose is
    read from the arrays) and its qdot is (v_c; omega); a revolute joint's angle 2 atan2(axis_a .
    vec(r), r_w) of r = conj(q_a) q_b conj(q_rel0) and rate axis . (omega_b - omega_a) (the joint
    rows' coordinate and rate row); a prismatic joint's axis . (P_b - P_a) and the rate of that
    along the axis at the child's anchor."""
    theta = np.zeros(nq)
    qd = np.zeros(nq)
    R = np.empty((3, 3))
    Rb = np.empty((3, 3))
    qc = np.empty(4)
    t = np.empty(4)
    r = np.empty(4)
    qr = np.empty(4)
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
        xa, qa, ax, P = _parent_frame(jp, anchor_a, axis_a, position, quaternion, k, R)
        wa = np.zeros(3)
        va = np.zeros(3)
        if jp >= 0:
            for i in range(3):
                wa[i] = ang[jp, i]
                va[i] = lin[jp, i]
        if jkind[k] == REVOLUTE:
            _conj(qa, qc)
            _qmul(qc, quaternion[b], t)
            _conj(q_rel0[k], qr)
            _qmul(t, qr, r)
            al = axis_a[k]
            theta[s] = 2.0 * np.arctan2(al[0] * r[1] + al[1] * r[2] + al[2] * r[3], r[0])
            qd[s] = ax[0] * (ang[b, 0] - wa[0]) + ax[1] * (ang[b, 1] - wa[1]) + ax[2] * (ang[b, 2] - wa[2])
        else:       # prismatic
            _rot(quaternion[b], Rb)
            Pb = position[b] + Rb @ anchor_b[k]
            theta[s] = ax[0] * (Pb[0] - P[0]) + ax[1] * (Pb[1] - P[1]) + ax[2] * (Pb[2] - P[2])
            vb = lin[b] + _cross(ang[b], Pb - position[b])
            vpa = va + _cross(wa, Pb - xa)
            qd[s] = ax[0] * (vb[0] - vpa[0]) + ax[1] * (vb[1] - vpa[1]) + ax[2] * (vb[2] - vpa[2])
    return theta, qd


@jit
def forward_kinematics(order, joint, qstart, jkind, ja, anchor_a, anchor_b, axis_a, q_rel0, theta, position,
                       quaternion):
    """The poses of every non-root body from its parent's and its joint coordinate, in tree order, in
    place (roots keep theirs): q_b = q_a (axis_a, theta) q_rel0 (revolute) or q_a q_rel0 (prismatic,
    fixed), normalised; x_b = x_a + R_a (anchor_a + s axis_a) - R_b anchor_b (s the slide of a
    prismatic joint, else 0)."""
    R = np.empty((3, 3))
    Rb = np.empty((3, 3))
    qj = np.empty(4)
    t = np.empty(4)
    qb = np.empty(4)
    for b in order:
        k = joint[b]
        if k < 0:
            continue
        jp = ja[k]
        xa, qa, ax, P = _parent_frame(jp, anchor_a, axis_a, position, quaternion, k, R)
        slide = 0.0
        if jkind[k] == REVOLUTE:
            half = 0.5 * theta[qstart[b]]
            sn = np.sin(half)
            qj[0] = np.cos(half)
            for i in range(3):
                qj[1 + i] = sn * axis_a[k, i]
            _qmul(qa, qj, t)
            _qmul(t, q_rel0[k], qb)
        else:
            if jkind[k] == PRISMATIC:
                slide = theta[qstart[b]]
            _qmul(qa, q_rel0[k], qb)
        nrm = np.sqrt(qb[0] * qb[0] + qb[1] * qb[1] + qb[2] * qb[2] + qb[3] * qb[3])
        for i in range(4):
            quaternion[b, i] = qb[i] / nrm
        _rot(quaternion[b], Rb)
        ab = Rb @ anchor_b[k]
        for i in range(3):
            position[b, i] = P[i] + slide * ax[i] - ab[i]


@jit
def motion_columns(order, joint, qstart, qcount, root, jkind, ja, anchor_a, axis_a, nq, position, quaternion):
    """S6 (nq, 6): each coordinate's motion subspace column (angular; linear) about its tree's point
    o = the root's centre (module docstring)."""
    S6 = np.zeros((nq, 6))
    R = np.empty((3, 3))
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
        xa, qa, ax, P = _parent_frame(ja[k], anchor_a, axis_a, position, quaternion, k, R)
        if jkind[k] == REVOLUTE:
            o = position[root[b]]
            lv = _cross(ax, o - P)
            for i in range(3):
                S6[s, i] = ax[i]
                S6[s, 3 + i] = lv[i]
        else:
            for i in range(3):
                S6[s, 3 + i] = ax[i]
    return S6


@jit
def body_jacobians(order, root, anc_ptr, anc_idx, nq, position, S6):
    """Sb (nb, 6, nq): d(v_c; omega)_b / d qdot, from the columns of b's ancestors (zero elsewhere)."""
    nb = position.shape[0]
    Sb = np.zeros((nb, 6, nq))
    for b in order:
        r = position[b] - position[root[b]]
        for p in range(anc_ptr[b], anc_ptr[b + 1]):
            k = anc_idx[p]
            w = S6[k, :3]
            lv = S6[k, 3:] + _cross(w, r)
            for i in range(3):
                Sb[b, i, k] = lv[i]
                Sb[b, 3 + i, k] = w[i]
    return Sb


@jit
def body_velocities(order, anc_ptr, anc_idx, Sb, qd, lin, ang):
    """(v_c; omega) of every moving body = Sb[b] qdot, into lin and ang."""
    for b in order:
        for i in range(6):
            acc = 0.0
            for p in range(anc_ptr[b], anc_ptr[b + 1]):
                k = anc_idx[p]
                acc += Sb[b, i, k] * qd[k]
            if i < 3:
                lin[b, i] = acc
            else:
                ang[b, i - 3] = acc


@jit
def crba(order, parent, qstart, qcount, root, anc_ptr, anc_idx, nq, position, quaternion, mass, inertia, S6):
    """The joint-space mass matrix H (nq, nq) by the composite rigid body algorithm (Featherstone
    Table 6.2): each body's spatial inertia about its tree's point o (mass m, first moment m r,
    rotational inertia R I R' + m (|r|^2 1 - r r'), r = c - o), summed from the leaves to the roots
    into composites I^c; then H_kl = s_l' I^c_b s_k for each own coordinate k of body b and each
    coordinate l that moves b (its ancestors' and its own)."""
    nb = position.shape[0]
    cm = np.zeros(nb)
    ch = np.zeros((nb, 3))
    cI = np.zeros((nb, 3, 3))
    R = np.empty((3, 3))
    for b in order:
        r = position[b] - position[root[b]]
        _rot(quaternion[b], R)
        Iw = R @ inertia[b] @ R.T
        m = mass[b]
        rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
        cm[b] = m
        for i in range(3):
            ch[b, i] = m * r[i]
            for j in range(3):
                cI[b, i, j] = Iw[i, j] - m * r[i] * r[j] + (m * rr if i == j else 0.0)
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
        for k in range(qstart[b], qstart[b] + qcount[b]):
            w = S6[k, :3]
            v = S6[k, 3:]
            Fa = cI[b] @ w + _cross(ch[b], v)
            Fl = cm[b] * v - _cross(ch[b], w)
            for p in range(anc_ptr[b], anc_ptr[b + 1]):
                l = anc_idx[p]
                x = S6[l, 0] * Fa[0] + S6[l, 1] * Fa[1] + S6[l, 2] * Fa[2] + S6[l, 3] * Fl[0] + S6[l, 4] * Fl[1] \
                    + S6[l, 5] * Fl[2]
                H[k, l] = x
                H[l, k] = x
    return H


@jit
def bias_accelerations(order, parent, joint, qstart, jkind, ja, anchor_a, axis_a, position, quaternion, lin, ang, qd):
    """(a, alpha) (nb, 3): each moving body's centre-of-mass and angular acceleration at zero joint
    accelerations (the velocity-product terms: d/dt of its velocity expressed through its parent's,
    Featherstone sec. 4.4 in classical vectors): a root's are zero; a child b of parent p through
    a revolute joint (world axis x, anchor P, rate u) has alpha_b = alpha_p + u (w_p x x) and
    a_b = a_p + alpha_p x (c_b - c_p) + w_p x (v_b - v_p) + u ((w_p x x) x (c_b - P) + x x (v_b - v_P));
    prismatic: alpha_b = alpha_p, a_b = a_p + alpha_p x (c_b - c_p) + w_p x (v_b - v_p) + u (w_p x x);
    fixed: the same without the rate term. A static parent (the world, a fixed body) has zero motion."""
    nb = position.shape[0]
    acc = np.zeros((nb, 3))
    alpha = np.zeros((nb, 3))
    R = np.empty((3, 3))
    for b in order:
        k = joint[b]
        if k < 0:
            continue
        p = parent[b]
        xp, qa, ax, P = _parent_frame(ja[k], anchor_a, axis_a, position, quaternion, k, R)
        ap = np.zeros(3)
        alp = np.zeros(3)
        wp = np.zeros(3)
        vp = np.zeros(3)
        if p >= 0:
            for i in range(3):
                ap[i] = acc[p, i]
                alp[i] = alpha[p, i]
                wp[i] = ang[p, i]
                vp[i] = lin[p, i]
        xb = position[b]
        vb = lin[b]
        a_b = ap + _cross(alp, xb - xp) + _cross(wp, vb - vp)
        al_b = alp.copy()
        if jkind[k] != FIXED:
            u = qd[qstart[b]]
            wx = _cross(wp, ax)
            if jkind[k] == REVOLUTE:
                vP = vp + _cross(wp, P - xp)
                al_b += u * wx
                a_b += u * (_cross(wx, xb - P) + _cross(ax, vb - vP))
            else:
                a_b += u * wx
        for i in range(3):
            acc[b, i] = a_b[i]
            alpha[b, i] = al_b[i]
    return acc, alpha
