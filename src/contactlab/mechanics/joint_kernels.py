"""Compiled joint rows: every joint's bilateral, limit, motor and rate rows in one numba call.

The joints of a :class:`~contactlab.mechanics.model.Model` are packed into arrays once, at build
time (:func:`pack_joints`); :func:`joint_rows_kernel` then writes, for the current state, the rows
:func:`contactlab.mechanics.system.joint_rows` documents (arechavaleta eqs. 10-12, drumwright §III):

* bilateral J rows per joint: revolute, spherical, fixed: the three world axes at the child's
  anchor (point rows [u, (P - x) x u] on the child, minus the same on the parent); prismatic: the
  two tangents of the axis. Revolute: two angular rows along the axis' tangents; fixed and
  prismatic: three angular rows. Position error e (anchor gap, axis misalignment, rotation
  vector of the relative-orientation error) and right-hand side -zeta e / h;
* the rate row of each revolute (axis . (omega_b - omega_a)) or prismatic joint (axis . relative
  anchor velocity) and its coordinate; a limit row sign * rate row where the bound is within
  reach (0.05 + 2 h |rate|), bias gap / h (speculative) or zeta gap / h (violated); a motor as a
  bilateral row (infinite force) or a velocity-motor row (impulse bound h * max force);
* joint couplings (Joint.follows): rate_b - ratio rate_a with drift correction; kinematic bodies
  (v+ equals their velocity) and planar bodies (vz = wx = wy = 0, drift corrected).

Also compiled here, for the same step: :func:`joint_torque_kernel` (generalised force of the
joint torques set by controllers) and :func:`body_forces` (gravity and gyroscopic torques).

Each row is assembled in a fixed-width buffer and sorted by column (duplicates summed), giving
canonical CSR directly, with the entries the former per-joint Python assembly produced (explicit
zeros of the unit axes kept).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels._jit import jit, jit_inline
from ..kernels.quaternion import quat_conj_into as _conj, quat_matrix as _rot, quat_mul_into as _qmul
from ..kernels.vec3 import cross3 as _cross, dot3 as _dot, mat_vec3 as _matvec

REVOLUTE, PRISMATIC, SPHERICAL, FIXED = 0, 1, 2, 3
KIND_CODE = {"revolute": REVOLUTE, "prismatic": PRISMATIC, "spherical": SPHERICAL, "fixed": FIXED}
#: bilateral rows per joint kind (index by code)
N_EQ = np.array([5, 5, 3, 6], dtype=np.int64)
_WIDTH = 24          # entries a row can hold before merging: 4 bodies x 6 (a coupling row)


@dataclass(frozen=True)
class JointArrays:
    """The joints of a model as arrays (nj,) / (nj, k): body indices ``a`` (-1 world) and ``b``,
    ``kind`` code, anchors and axis in the body frames, initial relative rotation ``q_rel0``,
    limits (NaN: none), the compiled motor (NaN target: none), ``follows`` (-1) and ``ratio``;
    ``special`` (ns,): kinematic or planar moving bodies (``special_kin`` True for kinematic);
    ``labels``: object array of every row label, ``label_base`` (nj,) / ``special_base`` (ns,)
    where each joint's / body's labels start (joint: its bilateral rows, then motor, coupling,
    lower, upper)."""
    a: np.ndarray
    b: np.ndarray
    kind: np.ndarray
    anchor_a: np.ndarray
    anchor_b: np.ndarray
    axis_a: np.ndarray
    q_rel0: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    motor_target: np.ndarray
    motor_max_force: np.ndarray
    follows: np.ndarray
    ratio: np.ndarray
    special: np.ndarray
    special_kin: np.ndarray
    label_base: np.ndarray
    special_base: np.ndarray
    labels: np.ndarray
    joints: tuple = ()           # the JointInfo tuple packed (a model whose joints differ is repacked)

    @property
    def kernel_args(self) -> tuple:
        """The arrays the compiled row writer reads, in :func:`fill_joint_rows`' order (a..special_base),
        as one tuple for kernels that evaluate the rows themselves (:mod:`contactlab.mechanics.joint_projection`)."""
        return (self.a, self.b, self.kind, self.anchor_a, self.anchor_b, self.axis_a, self.q_rel0, self.lower,
                self.upper, self.motor_target, self.motor_max_force, self.follows, self.ratio, self.special,
                self.special_kin, self.label_base, self.special_base)


def pack_joints(joints, names, kind, dof_start, planar, kinematic_code: int) -> JointArrays:
    """Pack compiled :class:`JointInfo` s (and the kinematic/planar bodies) into :class:`JointArrays`."""
    nj = len(joints)
    f = lambda xs, k: np.array(xs, dtype=np.float64).reshape(nj, k)
    nan = lambda x: np.nan if x is None else float(x)
    code = np.array([KIND_CODE[j.kind] for j in joints], dtype=np.int64)
    labels, base = [], []
    for j, c in zip(joints, code):
        base.append(len(labels))
        labels += [f"{j.name}:{k}" for k in range(N_EQ[c])] + [f"{j.name}:{t}" for t in ("motor", "coupling", "lower", "upper")]
    special = np.flatnonzero((dof_start >= 0) & ((kind == kinematic_code) | planar)).astype(np.int64)
    special_kin = kind[special] == kinematic_code
    sbase = []
    for i, kin in zip(special, special_kin):
        sbase.append(len(labels))
        labels += [f"{names[i]}:drive{k}" for k in range(6)] if kin else [f"{names[i]}:planar{k}" for k in range(3)]
    lab = np.empty(len(labels), dtype=object)
    lab[:] = labels
    return JointArrays(
        a=np.array([j.a for j in joints], dtype=np.int64), b=np.array([j.b for j in joints], dtype=np.int64), kind=code,
        anchor_a=f([j.anchor_a for j in joints], 3), anchor_b=f([j.anchor_b for j in joints], 3),
        axis_a=f([j.axis_a for j in joints], 3), q_rel0=f([j.q_rel0 for j in joints], 4),
        lower=np.array([nan(j.lower) for j in joints], dtype=np.float64),
        upper=np.array([nan(j.upper) for j in joints], dtype=np.float64),
        motor_target=np.array([nan(j.motor_target) for j in joints], dtype=np.float64),
        motor_max_force=np.array([j.motor_max_force for j in joints], dtype=np.float64),
        follows=np.array([j.follows for j in joints], dtype=np.int64),
        ratio=np.array([j.ratio for j in joints], dtype=np.float64),
        special=special, special_kin=special_kin, label_base=np.array(base, dtype=np.int64),
        special_base=np.array(sbase, dtype=np.int64), labels=lab, joints=joints)


# -- small scalar helpers (compiled inline) -------------------------------------------------------------

#: the project's compile flags plus numba IR-level inlining, for the helpers that append to the
#: row buffers: a compiled call passing arrays pays reference counting on each of them, a quarter of a
#: row evaluation (the same rows bit for bit; inlining the scalar helpers too gains nothing more and
#: doubles the first compile; docs/benchmarks-tuning.md)
_inline = jit_inline


@_inline
def _entries(cols, vals, cnt, row, s, lin, ang, sign):
    """Append body entries (first dof s, -1: none) to a row: sign * lin at s..s+2 (if lin is
    given: lin.size == 3) and sign * ang at s+3..s+5."""
    if s < 0:
        return
    c = cnt[row]
    if lin.size == 3:
        for i in range(3):
            cols[row, c] = s + i
            vals[row, c] = sign * lin[i]
            c += 1
    for i in range(3):
        cols[row, c] = s + 3 + i
        vals[row, c] = sign * ang[i]
        c += 1
    cnt[row] = c


@_inline
def _point_row(cols, vals, cnt, row, sa, sb, xa, xb, P, u, scale, r, w):
    """u.(velocity of P on b - on a) times scale (bodies by first dof; x the centres)."""
    for k in range(3):
        r[k] = P[k] - xb[k]
    _cross(r, u, w)
    _entries(cols, vals, cnt, row, sb, u, w, scale)
    for k in range(3):
        r[k] = P[k] - xa[k]
    _cross(r, u, w)
    _entries(cols, vals, cnt, row, sa, u, w, -scale)


@_inline
def _copy_row(cols, vals, cnt, row, scols, svals, scnt, srow, scale):
    """Append scale x row srow of the source buffer to row ``row``."""
    c = cnt[row]
    for i in range(scnt[srow]):
        cols[row, c] = scols[srow, i]
        vals[row, c] = scale * svals[srow, i]
        c += 1
    cnt[row] = c


@jit_inline
def limit_side(c, bound, sign, rate, h, zeta):
    """One side of a joint limit as a unilateral row on the joint's coordinate c (sign +1 for the
    lower bound, -1 for the upper; a NaN bound: no limit): the row is active when the gap
    sign (c - bound) is within reach 0.05 + 2 h |rate| of the bound, so a limit the joint can reach
    in this step is in the problem; its bias lets an open gap close by the end of the step (gap / h)
    and corrects a violated one at the rate zeta (zeta gap / h). Returns (active, bias)."""
    if np.isnan(bound):
        return False, 0.0
    gap = sign * (c - bound)
    if gap < 0.05 + 2.0 * h * abs(rate):
        return True, (gap / h if gap >= 0 else zeta * gap / h)
    return False, 0.0


@jit
def _csr(cols, vals, cnt, n):
    """Canonical CSR (data, indices, indptr) of the first n buffered rows: each row sorted by
    column (insertion sort, at most _WIDTH entries) with duplicate columns summed."""
    indptr = np.zeros(n + 1, dtype=np.int32)      # int32: scipy keeps them without a contents check
    total = 0
    for r in range(n):
        total += cnt[r]
    data = np.empty(total)
    indices = np.empty(total, dtype=np.int32)
    p = 0
    for r in range(n):
        m = cnt[r]
        for i in range(1, m):            # stable insertion sort of the row by column
            c, v = cols[r, i], vals[r, i]
            j = i - 1
            while j >= 0 and cols[r, j] > c:
                cols[r, j + 1] = cols[r, j]
                vals[r, j + 1] = vals[r, j]
                j -= 1
            cols[r, j + 1] = c
            vals[r, j + 1] = v
        i = 0
        while i < m:
            c, v = cols[r, i], vals[r, i]
            i += 1
            while i < m and cols[r, i] == c:
                v += vals[r, i]
                i += 1
            indices[p] = c
            data[p] = v
            p += 1
        indptr[r + 1] = p
    return data[:p].copy(), indices[:p].copy(), indptr


@jit
def row_buffers(nj, ns):
    """Buffers :func:`fill_joint_rows` writes: (cols, vals, count) per row group, J (with rhs, err,
    label), L (bias, label), A (target, max, label), rate rows and coordinates, sized for ``nj``
    joints and ``ns`` kinematic/planar bodies (at most 7 bilateral + motor + coupling rows a joint,
    6 a body)."""
    mj = 7 * nj + nj + 6 * ns
    J = (np.empty((mj, _WIDTH), dtype=np.int64), np.empty((mj, _WIDTH)), np.zeros(mj, dtype=np.int64),
         np.empty(mj), np.empty(mj), np.empty(mj, dtype=np.int64))
    L = (np.empty((2 * nj, _WIDTH), dtype=np.int64), np.empty((2 * nj, _WIDTH)), np.zeros(2 * nj, dtype=np.int64),
         np.empty(2 * nj), np.empty(2 * nj, dtype=np.int64))
    A = (np.empty((nj, _WIDTH), dtype=np.int64), np.empty((nj, _WIDTH)), np.zeros(nj, dtype=np.int64),
         np.empty(nj), np.empty(nj), np.empty(nj, dtype=np.int64))
    R = (np.empty((nj, _WIDTH), dtype=np.int64), np.empty((nj, _WIDTH)), np.zeros(nj, dtype=np.int64),
         np.full(nj, np.nan))
    return J, L, A, R


@jit
def joint_rows_kernel(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                      follows, ratio, special, special_kin, label_base, special_base,
                      dof_start, position, quaternion, lin_vel, ang_vel, planar_reference, v_all, h, zeta):
    """All joint rows of the current state (see the module docstring). Returns
    (J csr, j_rhs, j_err, j_label), (L csr, l_bias, l_label), (A csr, a_target, a_max, a_label),
    (rate csr, coordinate); csr = (data, indices, indptr); labels index ``JointArrays.labels``."""
    bufs = row_buffers(a.size, special.size)
    nJ, nL, nA = fill_joint_rows(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                                 follows, ratio, special, special_kin, label_base, special_base, dof_start, position,
                                 quaternion, lin_vel, ang_vel, planar_reference, v_all, h, zeta, bufs)
    J, L, A = _constraint_rows(bufs, nJ, nL, nA)
    Rc, Rv, Rn, coord = bufs[3]
    return J, L, A, (_csr(Rc, Rv, Rn, a.size), coord)


@jit
def constraint_rows_kernel(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                           follows, ratio, special, special_kin, label_base, special_base,
                           dof_start, position, quaternion, lin_vel, ang_vel, planar_reference, v_all, h, zeta):
    """:func:`joint_rows_kernel`'s J, L and A parts only (a ConstraintSystem's rows; the joint
    state's rate rows and coordinates are not returned)."""
    bufs = row_buffers(a.size, special.size)
    nJ, nL, nA = fill_joint_rows(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                                 follows, ratio, special, special_kin, label_base, special_base, dof_start, position,
                                 quaternion, lin_vel, ang_vel, planar_reference, v_all, h, zeta, bufs)
    return _constraint_rows(bufs, nJ, nL, nA)


@jit
def _constraint_rows(bufs, nJ, nL, nA):
    """The J, L and A rows :func:`fill_joint_rows` wrote, compacted: (J csr, j_rhs, j_err, j_label),
    (L csr, l_bias, l_label), (A csr, a_target, a_max, a_label)."""
    (Jc, Jv, Jn, j_rhs, j_err, j_lab), (Lc, Lv, Ln, l_bias, l_lab), (Ac, Av, An, a_target, a_max, a_lab), _ = bufs
    return ((_csr(Jc, Jv, Jn, nJ), j_rhs[:nJ].copy(), j_err[:nJ].copy(), j_lab[:nJ].copy()),
            (_csr(Lc, Lv, Ln, nL), l_bias[:nL].copy(), l_lab[:nL].copy()),
            (_csr(Ac, Av, An, nA), a_target[:nA].copy(), a_max[:nA].copy(), a_lab[:nA].copy()))


@jit
def fill_joint_rows(a, b, kind, anchor_a, anchor_b, axis_a, q_rel0, lower, upper, mtarget, mforce,
                    follows, ratio, special, special_kin, label_base, special_base,
                    dof_start, position, quaternion, lin_vel, ang_vel, planar_reference, v_all, h, zeta, bufs):
    """Write the rows of :func:`joint_rows_kernel` into ``bufs`` (:func:`row_buffers`; reused, so a
    Newton loop over positions evaluates them without allocating): each row's (unsorted, possibly
    repeated) columns and values, J's rhs / err / label, L's bias / label, A's target / max /
    label, the rate rows and coordinates (every joint; NaN coordinate for spherical and fixed).
    Returns the row counts (nJ, nL, nA)."""
    nj = a.size
    ns = special.size
    (Jc, Jv, Jn, j_rhs, j_err, j_lab), (Lc, Lv, Ln, l_bias, l_lab), (Ac, Av, An, a_target, a_max, a_lab), \
        (Rc, Rv, Rn, coord) = bufs
    Jn[:] = 0
    Ln[:] = 0
    An[:] = 0
    Rn[:] = 0
    coord[:] = np.nan
    nJ, nL, nA = 0, 0, 0

    Ra, Rb, Re = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    ident = np.array([1.0, 0.0, 0.0, 0.0])
    no_lin = np.empty(0)
    E = np.eye(3)
    xa, qa, xb = np.empty(3), np.empty(4), np.empty(3)
    pa, pb, axis, t1, t2, ref = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    q_des, q_err, qc, qt, qd = np.empty(4), np.empty(4), np.empty(4), np.empty(4), np.empty(4)
    ab, ex, d, tmp, r, w = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    e = np.empty(6)
    for k in range(nj):
        ja, jb, kd = a[k], b[k], kind[k]
        sa = dof_start[ja] if ja >= 0 else -1
        sb = dof_start[jb]
        if ja >= 0:
            for i in range(3):
                xa[i] = position[ja, i]
            for i in range(4):
                qa[i] = quaternion[ja, i]
        else:
            for i in range(3):
                xa[i] = 0.0
            for i in range(4):
                qa[i] = ident[i]
        _rot(qa, Ra)
        for i in range(3):
            xb[i] = position[jb, i]
        _rot(quaternion[jb], Rb)
        _matvec(Ra, anchor_a[k], tmp)
        for i in range(3):
            pa[i] = xa[i] + tmp[i]
        _matvec(Rb, anchor_b[k], tmp)
        for i in range(3):
            pb[i] = xb[i] + tmp[i]
            d[i] = pb[i] - pa[i]
        _matvec(Ra, axis_a[k], axis)
        # tangent_basis: t1 = normalise(e_y x n) (e_z x n near +-e_y), t2 = n x t1
        ref[0] = 0.0
        ref[1] = 0.0 if abs(axis[1]) > 0.9 else 1.0
        ref[2] = 1.0 if abs(axis[1]) > 0.9 else 0.0
        _cross(ref, axis, t1)
        nrm = np.sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2])
        for i in range(3):
            t1[i] /= nrm
        _cross(axis, t1, t2)
        ne = 0
        row0 = nJ
        if kd != PRISMATIC:                        # revolute, spherical, fixed: anchors coincide
            for i in range(3):
                _point_row(Jc, Jv, Jn, nJ, sa, sb, xa, xb, pb, E[i], 1.0, r, w)
                nJ += 1
                e[ne] = d[i]
                ne += 1
        else:
            _point_row(Jc, Jv, Jn, nJ, sa, sb, xa, xb, pb, t1, 1.0, r, w)
            _point_row(Jc, Jv, Jn, nJ + 1, sa, sb, xa, xb, pb, t2, 1.0, r, w)
            nJ += 2
            e[0] = _dot(t1, d)
            e[1] = _dot(t2, d)
            ne = 2
        _qmul(qa, q_rel0[k], q_des)                # where B's orientation should be
        _conj(q_des, qc)
        _qmul(quaternion[jb], qc, q_err)           # world-frame rotation from desired to actual
        if kd == FIXED or kd == PRISMATIC:
            for i in range(3):
                _entries(Jc, Jv, Jn, nJ, sb, no_lin, E[i], 1.0)
                _entries(Jc, Jv, Jn, nJ, sa, no_lin, E[i], -1.0)
                nJ += 1
            # quat_to_rotvec (shortest rotation)
            sg = -1.0 if q_err[0] < 0 else 1.0
            vx, vy, vz = sg * q_err[1], sg * q_err[2], sg * q_err[3]
            s = np.sqrt(vx * vx + vy * vy + vz * vz)
            th = 2.0 * np.arctan2(s, sg * q_err[0])
            kk = th / s if s > 1e-12 else 2.0
            e[ne], e[ne + 1], e[ne + 2] = kk * vx, kk * vy, kk * vz
            ne += 3
        if kd == REVOLUTE:
            _rot(q_err, Re)
            _matvec(Re, axis, ab)                  # B's copy of the axis
            _cross(axis, ab, ex)
            _entries(Jc, Jv, Jn, nJ, sb, no_lin, t1, 1.0)
            _entries(Jc, Jv, Jn, nJ, sa, no_lin, t1, -1.0)
            _entries(Jc, Jv, Jn, nJ + 1, sb, no_lin, t2, 1.0)
            _entries(Jc, Jv, Jn, nJ + 1, sa, no_lin, t2, -1.0)
            nJ += 2
            e[ne] = _dot(t1, ex)
            e[ne + 1] = _dot(t2, ex)
            ne += 2
        for i in range(ne):
            j_err[row0 + i] = e[i]
            j_rhs[row0 + i] = -zeta * e[i] / h
            j_lab[row0 + i] = label_base[k] + i
        # rate row, coordinate, limits, motor
        if kd == REVOLUTE:
            _entries(Rc, Rv, Rn, k, sb, no_lin, axis, 1.0)
            _entries(Rc, Rv, Rn, k, sa, no_lin, axis, -1.0)
            _conj(qa, qc)
            _qmul(qc, quaternion[jb], qt)
            _conj(q_rel0[k], qc)
            _qmul(qt, qc, qd)
            c = 2.0 * np.arctan2(axis_a[k, 0] * qd[1] + axis_a[k, 1] * qd[2] + axis_a[k, 2] * qd[3], qd[0])
            c = (c + np.pi) % (2 * np.pi) - np.pi
        elif kd == PRISMATIC:
            _point_row(Rc, Rv, Rn, k, sa, sb, xa, xb, pb, axis, 1.0, r, w)
            c = _dot(axis, d)
        else:
            continue
        coord[k] = c
        rate_dot = 0.0
        for i in range(Rn[k]):
            rate_dot += Rv[k, i] * v_all[Rc[k, i]]
        for side in range(2):
            bound = lower[k] if side == 0 else upper[k]
            sign = 1.0 if side == 0 else -1.0
            active, bias = limit_side(c, bound, sign, rate_dot, h, zeta)
            if active:
                _copy_row(Lc, Lv, Ln, nL, Rc, Rv, Rn, k, sign)
                l_bias[nL] = bias
                l_lab[nL] = label_base[k] + N_EQ[kd] + 2 + side
                nL += 1
        if not np.isnan(mtarget[k]):
            if np.isinf(mforce[k]):
                _copy_row(Jc, Jv, Jn, nJ, Rc, Rv, Rn, k, 1.0)
                j_err[nJ] = np.nan
                j_rhs[nJ] = mtarget[k]
                j_lab[nJ] = label_base[k] + N_EQ[kd]
                nJ += 1
            else:
                _copy_row(Ac, Av, An, nA, Rc, Rv, Rn, k, 1.0)
                a_target[nA] = mtarget[k]
                a_max[nA] = h * mforce[k]
                a_lab[nA] = label_base[k] + N_EQ[kd]
                nA += 1
    # joint couplings (Joint.follows): q_b' - ratio q_a' = -zeta (q_b - ratio q_a)/h
    for k in range(nj):
        f = follows[k]
        if f >= 0:
            _copy_row(Jc, Jv, Jn, nJ, Rc, Rv, Rn, k, 1.0)
            _copy_row(Jc, Jv, Jn, nJ, Rc, Rv, Rn, f, -ratio[k])
            ek = coord[k] - ratio[k] * coord[f]
            j_err[nJ] = ek
            j_rhs[nJ] = -zeta * ek / h
            j_lab[nJ] = label_base[k] + N_EQ[kind[k]] + 1
            nJ += 1
    # kinematic bodies: v+ equals their velocity; planar bodies: vz = wx = wy = 0 with drift correction
    for m in range(ns):
        i = special[m]
        s = dof_start[i]
        if special_kin[m]:
            for k in range(6):
                Jc[nJ, 0] = s + k
                Jv[nJ, 0] = 1.0
                Jn[nJ] = 1
                j_rhs[nJ] = lin_vel[i, k] if k < 3 else ang_vel[i, k - 3]
                j_err[nJ] = np.nan
                j_lab[nJ] = special_base[m] + k
                nJ += 1
        else:
            _rot(quaternion[i], Rb)
            _rot(planar_reference[i, 1:], Re)
            # ex = e_z x (R R0' e_z)
            for p in range(3):
                acc = 0.0
                for q in range(3):
                    acc += Rb[p, q] * Re[2, q]
                tmp[p] = acc
            ex[0] = -tmp[1]
            ex[1] = tmp[0]
            e[0] = position[i, 2] - planar_reference[i, 0]
            e[1] = ex[0]
            e[2] = ex[1]
            for k in range(3):
                Jc[nJ, 0] = s + 2 + k
                Jv[nJ, 0] = 1.0
                Jn[nJ] = 1
                j_err[nJ] = e[k]
                j_rhs[nJ] = -zeta * e[k] / h
                j_lab[nJ] = special_base[m] + k
                nJ += 1
    return nJ, nL, nA


@jit
def joint_torque_kernel(idx, tau, kind, a, b, anchor_b, axis_a, dof_start, position, quaternion, ndof):
    """Generalised force of joint torques tau at joints idx: +tau along/about the axis on the child,
    -tau on the parent (prismatic: the force at the child's anchor, with its moment)."""
    f = np.zeros(ndof)
    if idx.size == 0:
        return f
    work = np.empty(18)                 # R, axis, pb, tmp: views of one allocation
    R = work[:9].reshape((3, 3))
    axis, pb, tmp = work[9:12], work[12:15], work[15:]
    for m in range(idx.size):
        k = idx[m]
        t = tau[m]
        ja, jb = a[k], b[k]
        if ja >= 0:
            _rot(quaternion[ja], R)
            _matvec(R, axis_a[k], axis)
        else:
            for i in range(3):
                axis[i] = axis_a[k, i]
        _rot(quaternion[jb], R)
        _matvec(R, anchor_b[k], tmp)
        for i in range(3):
            pb[i] = position[jb, i] + tmp[i]
        for side in range(2):
            body = jb if side == 0 else ja
            sign = 1.0 if side == 0 else -1.0
            if body < 0 or dof_start[body] < 0:
                continue
            s = dof_start[body]
            if kind[k] == REVOLUTE:
                for i in range(3):
                    f[s + 3 + i] += sign * t * axis[i]
            else:
                for i in range(3):
                    f[s + i] += sign * t * axis[i]
                    tmp[i] = pb[i] - position[body, i]
                f[s + 3] += sign * t * (tmp[1] * axis[2] - tmp[2] * axis[1])
                f[s + 4] += sign * t * (tmp[2] * axis[0] - tmp[0] * axis[2])
                f[s + 5] += sign * t * (tmp[0] * axis[1] - tmp[1] * axis[0])
    return f


@jit
def body_forces(live, dof_start, mass, inertia, gravity, quaternion, omega, gyroscopic, f):
    """f += [m g, -omega x (R I R' omega)] of the moving bodies ``live`` (gyroscopic term only if
    ``gyroscopic``; drumwright eq. 5's F_e), in place."""
    work = np.empty(18)                 # R, u, Iu, Iw: views of one allocation
    R = work[:9].reshape((3, 3))
    u, Iu, Iw = work[9:12], work[12:15], work[15:]
    for m in range(live.size):
        i = live[m]
        s = dof_start[i]
        for k in range(3):
            f[s + k] += mass[i] * gravity[k]
        if gyroscopic:
            _rot(quaternion[i], R)
            w = omega[i]
            for k in range(3):                 # R' omega, I (R' omega), R I R' omega
                u[k] = R[0, k] * w[0] + R[1, k] * w[1] + R[2, k] * w[2]
            _matvec(inertia[i], u, Iu)
            _matvec(R, Iu, Iw)
            f[s + 3] += -(w[1] * Iw[2] - w[2] * Iw[1])
            f[s + 4] += -(w[2] * Iw[0] - w[0] * Iw[2])
            f[s + 5] += -(w[0] * Iw[1] - w[1] * Iw[0])
