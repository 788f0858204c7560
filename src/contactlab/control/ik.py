"""Leg kinematics: forward kinematics, Jacobians and inverse kinematics for the feet.

Two forms, both vectorised over the legs (arrays with a leading leg axis):

* :class:`SerialLegs`: any chain of revolute joints given in its zero configuration
  (product of exponentials: joint i turns everything after it by ``q_i`` about the axis
  ``w_i`` through ``c_i``); position Jacobian ``J_i = w_i' x (p - c_i')`` with the axis and point
  moved by the joints before it; inverse kinematics by damped least squares (Levenberg-Marquardt)
  from the previous answer. Used for URDF legs (Solo-12) and as the independent check of the
  analytic solution.
* :class:`ThreeJointLegs`: the paper's leg (scenario-specs §2.2): a hip ab/adduction joint about
  the base x axis, then hip and knee flexion about y with links ``l1`` (thigh) and ``l2``
  (shank to foot centre); closed-form inverse (the roll angle puts the foot in the leg plane,
  then the two-link planar solution with the knee sign of the paper's initial pose).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels._jit import jit
from ..kernels.dense import chol_factor_block, chol_solve


def axis_rotations(axes: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotation matrices (..., 3, 3) about unit ``axes`` (..., 3) by ``angles`` (...) (Rodrigues)."""
    w = np.asarray(axes, dtype=np.float64)
    th = np.asarray(angles, dtype=np.float64)[..., None, None]
    K = np.zeros(w.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    K[..., 1, 0], K[..., 2, 0], K[..., 2, 1] = w[..., 2], -w[..., 1], w[..., 0]
    return np.eye(3) + np.sin(th) * K + (1.0 - np.cos(th)) * (K @ K)


@dataclass(frozen=True)
class SerialLegs:
    """``legs`` serial chains of ``k`` revolute joints in their zero configuration, in one frame
    (the base body's): ``anchors`` (legs, k, 3) points on the joint axes, ``axes`` (legs, k, 3)
    unit axes, ``feet`` (legs, 3) foot points. Joint angles ``q`` (legs, k)."""
    anchors: np.ndarray
    axes: np.ndarray
    feet: np.ndarray

    def __post_init__(self):
        a, w, f = (np.asarray(x, dtype=np.float64) for x in (self.anchors, self.axes, self.feet))
        if a.ndim != 3 or a.shape[2] != 3 or w.shape != a.shape or f.shape != (a.shape[0], 3):
            raise ParamError(f"SerialLegs: anchors and axes must be (legs, k, 3) and feet (legs, 3); got "
                             f"{a.shape}, {w.shape}, {f.shape}")
        n = np.linalg.norm(w, axis=2, keepdims=True)
        if np.any(n < 1e-12):
            raise ParamError("SerialLegs.axes must be non-zero")
        object.__setattr__(self, "anchors", a)
        object.__setattr__(self, "axes", w / n)
        object.__setattr__(self, "feet", f)

    @property
    def shape(self) -> tuple[int, int]:
        return self.anchors.shape[:2]

    def _frames(self, q: np.ndarray):
        """Per joint: the axis and anchor moved by the joints before it, and the foot position."""
        L, k = self.shape
        return _serial_frames(self.anchors, self.axes, self.feet, np.asarray(q, dtype=np.float64).reshape(L, k))

    def forward(self, q: np.ndarray) -> np.ndarray:
        """Foot positions (legs, 3) at joint angles ``q`` (legs, k)."""
        return self._frames(q)[2]

    def jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(feet (legs, 3), position Jacobians (legs, 3, k)): d foot / d q."""
        w, c, p = self._frames(q)
        return p, _position_jacobian(w, c, p)

    def inverse(self, x: np.ndarray, q0: np.ndarray | None = None, *, tol: float = 1e-10,
                max_iter: int = 50, damping: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
        """Joint angles putting the feet at ``x`` (legs, 3), by damped least squares from ``q0``
        (default zeros). Returns (q, converged (legs,) bool: |foot - x| <= tol * max(1, |x|)); an
        unreachable target ends at the closest point the iteration finds (converged False)."""
        L, k = self.shape
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(L, 3))
        q = np.zeros((L, k)) if q0 is None else np.array(q0, dtype=np.float64).reshape(L, k)
        return serial_inverse(self.anchors, self.axes, self.feet, x, q, float(tol), int(max_iter), float(damping))


@jit
def spd_solve_into(A, b, x):
    """x = A^-1 b for a symmetric positive definite A (n, n) given by its lower triangle, by Cholesky
    A = L L' (Golub & Van Loan, Matrix Computations, Alg. 4.2.1) in place of that triangle, then
    L y = b and L' x = y. The damped normal equations (J'J + lam I) dq = J'e of
    :func:`serial_inverse` are such a system (lam > 0; Nocedal & Wright, Numerical Optimization,
    sec. 10.3): solved here without the general LU's pivoting, copies and library call, by
    kernels/dense.py ``chol_factor_block`` and ``chol_solve``. A pivot
    that is not positive (A not positive definite in floating point) makes x NaN: the caller's
    trial step then fails its error test."""
    n = b.shape[0]
    if chol_factor_block(A, A, 0, n):       # L in place of A's lower triangle
        chol_solve(A, n, b, x)
    else:
        x[:] = np.nan


@jit
def ik_work(L, k):
    """The work arrays of :func:`serial_inverse_into` for ``L`` legs of ``k`` joints: made once by a
    caller that solves every step (the controller's :func:`~contactlab.control.locomotion.control_work`),
    so that no array is allocated per solve. Order: scale, lam, err, converged (L,); the frames
    (L, k, 3) twice, the trial's feet (L, 3) and Jacobians (L, 3, k), 33 floats of scratch, the feet,
    Jacobians and errors of q, one foot's error (3,), the normal equations (k, k), (k,), their
    solution (k,), the trial angles (L, k), and the angles (L, k) whose feet and Jacobians the work
    holds (NaN: none yet)."""
    return (np.empty(L), np.empty(L), np.empty(L), np.empty(L, dtype=np.bool_), np.empty((L, k, 3)),
            np.empty((L, k, 3)), np.empty((L, 3)), np.empty((L, 3, k)), np.empty(33), np.empty((L, 3)),
            np.empty((L, 3, k)), np.empty((L, 3)), np.empty(3), np.empty((k, k)), np.empty(k), np.empty(k),
            np.empty((L, k)), np.full((L, k), np.nan))


@jit
def serial_inverse(anchors, axes, feet, x, q, tol, max_iter, damping):
    """:meth:`SerialLegs.inverse`, compiled; ``q`` (legs, k) is the start and is overwritten.
    :func:`serial_inverse_into` with work arrays of its own. Returns (q, converged per leg)."""
    L, k = q.shape
    work = ik_work(L, k)
    serial_inverse_into(anchors, axes, feet, x, q, tol, max_iter, damping, work)
    return q, work[3]


@jit
def serial_inverse_into(anchors, axes, feet, x, q, tol, max_iter, damping, work):
    """Damped least squares from ``q`` (legs, k), overwritten with the answer; whether each leg
    converged into ``work[3]`` (``work``: :func:`ik_work`).

    Levenberg-Marquardt on every leg at once: dq = (J'J + lam I)^-1 J' e with e = x - foot(q)
    (:func:`spd_solve_into`); a leg takes the step when its error falls (then lam <- max(0.3 lam,
    damping)), else keeps q and lam <- 10 lam; the iterations stop when every leg's error is
    <= tol * max(1, |x|_inf), or after ``max_iter``. The feet and Jacobians of the answer stay in
    ``work`` with its angles: a solve that starts from them (the controller's, from its last answer)
    takes them from there, not from a second evaluation of the same angles (the same numbers)."""
    L, k = q.shape
    scale, lam, err, converged, wn, cn, pn, Jn, scratch, p, J, e, en, A, g, dq, qn, q_held = work
    for l in range(L):
        scale[l] = max(1.0, np.abs(x[l]).max())
        lam[l] = damping
    # the frames, feet and Jacobians of q (unless held: the same bits, signed zeros included), then of
    # each trial qn (wn, cn: work for both)
    held = True
    for l in range(L):
        for i in range(k):
            if q[l, i] != q_held[l, i] or math.copysign(1.0, q[l, i]) != math.copysign(1.0, q_held[l, i]):
                held = False
    if not held:
        _serial_frames_into(anchors, axes, feet, q, wn, cn, p, scratch)
        _position_jacobian_into(wn, cn, p, J)
    for l in range(L):
        s = 0.0                 # |x - p|: the squares summed in order from zero
        for i in range(3):
            e[l, i] = x[l, i] - p[l, i]
            s += e[l, i] * e[l, i]
        err[l] = np.sqrt(s)
    for _ in range(max_iter):
        done = True
        for l in range(L):
            if err[l] > tol * scale[l]:
                done = False
        if done:
            break
        for l in range(L):
            for a in range(k):
                g[a] = J[l, 0, a] * e[l, 0] + J[l, 1, a] * e[l, 1] + J[l, 2, a] * e[l, 2]
                for b in range(a + 1):
                    A[a, b] = J[l, 0, a] * J[l, 0, b] + J[l, 1, a] * J[l, 1, b] + J[l, 2, a] * J[l, 2, b]
                A[a, a] += lam[l]
            spd_solve_into(A, g, dq)
            for a in range(k):
                qn[l, a] = q[l, a] + dq[a]
        _serial_frames_into(anchors, axes, feet, qn, wn, cn, pn, scratch)
        _position_jacobian_into(wn, cn, pn, Jn)
        for l in range(L):
            s = 0.0
            for i in range(3):
                en[i] = x[l, i] - pn[l, i]
                s += en[i] * en[i]
            errn = np.sqrt(s)
            if errn < err[l]:
                q[l], p[l], J[l], e[l], err[l] = qn[l], pn[l], Jn[l], en, errn
                lam[l] = max(lam[l] * 0.3, damping)
            else:
                lam[l] = lam[l] * 10.0
    for l in range(L):
        converged[l] = err[l] <= tol * scale[l]
    q_held[:] = q


@jit
def _serial_frames(anchors, axes, feet, q):
    """Down each chain (product of exponentials): joint i's axis w_i' = R w_i and point
    c_i' = R c_i + t with (R, t) the motion of the joints before it; then (R, t) <- (R, t) o
    (rotation by q_i about the line (c_i, w_i)); the foot p = R foot + t."""
    L, k = q.shape
    w_out, c_out, p = np.empty((L, k, 3)), np.empty((L, k, 3)), np.empty((L, 3))
    _serial_frames_into(anchors, axes, feet, q, w_out, c_out, p, np.empty(33))
    return w_out, c_out, p


@jit
def _serial_frames_into(anchors, axes, feet, q, w_out, c_out, p, scratch):
    """:func:`_serial_frames` into ``w_out``, ``c_out`` (legs, k, 3) and ``p`` (legs, 3); ``scratch``:
    33 floats of work (the motions R, R_i, R R_i and the vectors t, d)."""
    L, k = q.shape
    R, Ri, Rn = scratch[0:9].reshape((3, 3)), scratch[9:18].reshape((3, 3)), scratch[18:27].reshape((3, 3))
    t, d = scratch[27:30], scratch[30:33]
    for l in range(L):
        R[:] = 0.0
        R[0, 0] = R[1, 1] = R[2, 2] = 1.0
        t[:] = 0.0
        for i in range(k):
            w, c = axes[l, i], anchors[l, i]
            for r in range(3):
                w_out[l, i, r] = R[r, 0] * w[0] + R[r, 1] * w[1] + R[r, 2] * w[2]
                c_out[l, i, r] = R[r, 0] * c[0] + R[r, 1] * c[1] + R[r, 2] * c[2] + t[r]
            s, v = np.sin(q[l, i]), 1.0 - np.cos(q[l, i])      # Rodrigues: I + s K + v K K
            K = ((0.0, -w[2], w[1]), (w[2], 0.0, -w[0]), (-w[1], w[0], 0.0))
            for r in range(3):
                for m in range(3):
                    kk = K[r][0] * K[0][m] + K[r][1] * K[1][m] + K[r][2] * K[2][m]
                    Ri[r, m] = (1.0 if r == m else 0.0) + s * K[r][m] + v * kk
            for r in range(3):
                d[r] = c[r] - (Ri[r, 0] * c[0] + Ri[r, 1] * c[1] + Ri[r, 2] * c[2])
            for r in range(3):
                t[r] += R[r, 0] * d[0] + R[r, 1] * d[1] + R[r, 2] * d[2]
            for r in range(3):
                for m in range(3):
                    Rn[r, m] = R[r, 0] * Ri[0, m] + R[r, 1] * Ri[1, m] + R[r, 2] * Ri[2, m]
            R[:] = Rn
        for r in range(3):
            p[l, r] = R[r, 0] * feet[l, 0] + R[r, 1] * feet[l, 1] + R[r, 2] * feet[l, 2] + t[r]


@jit
def _position_jacobian(w, c, p):
    """(legs, 3, k): column i = w_i x (p - c_i)."""
    J = np.empty((w.shape[0], 3, w.shape[1]))
    _position_jacobian_into(w, c, p, J)
    return J


@jit
def _position_jacobian_into(w, c, p, J):
    """:func:`_position_jacobian` into ``J`` (legs, 3, k)."""
    L, k = w.shape[0], w.shape[1]
    for l in range(L):
        for i in range(k):
            r0, r1, r2 = p[l, 0] - c[l, i, 0], p[l, 1] - c[l, i, 1], p[l, 2] - c[l, i, 2]
            J[l, 0, i] = w[l, i, 1] * r2 - w[l, i, 2] * r1
            J[l, 1, i] = w[l, i, 2] * r0 - w[l, i, 0] * r2
            J[l, 2, i] = w[l, i, 0] * r1 - w[l, i, 1] * r0


@dataclass(frozen=True)
class ThreeJointLegs:
    """The paper's 3-joint legs (scenario-specs §2.2), angles in the paper's convention (q = 0: leg
    straight out along ``side`` x). ``hips`` (legs, 3): hip flexion joint centres (on the
    ab/adduction axis, parallel to x); ``side`` (legs,) +1 front / -1 hind; ``signs`` (legs, 3):
    the joint axes are signs[:, 0] e_x, signs[:, 1] e_y, signs[:, 2] e_y; ``l1``, ``l2``: thigh
    and shank (knee to foot centre) lengths."""
    hips: np.ndarray
    side: np.ndarray
    signs: np.ndarray
    l1: float = 0.10
    l2: float = 0.10

    def __post_init__(self):
        h = np.asarray(self.hips, dtype=np.float64)
        s = np.asarray(self.side, dtype=np.float64)
        g = np.asarray(self.signs, dtype=np.float64)
        if h.ndim != 2 or h.shape[1] != 3 or s.shape != (h.shape[0],) or g.shape != (h.shape[0], 3):
            raise ParamError(f"ThreeJointLegs: hips (legs, 3), side (legs,), signs (legs, 3); got {h.shape}, "
                             f"{s.shape}, {g.shape}")
        if not (np.all(np.abs(s) == 1) and np.all(np.abs(g) == 1)):
            raise ParamError("ThreeJointLegs.side and signs must be +1 or -1")
        if not (self.l1 > 0 and self.l2 > 0):
            raise ParamError(f"ThreeJointLegs link lengths must be > 0, got {self.l1}, {self.l2}")
        for nm, v in (("hips", h), ("side", s), ("signs", g)):
            object.__setattr__(self, nm, v)

    def forward(self, q: np.ndarray) -> np.ndarray:
        """Foot centres (legs, 3) at joint angles ``q`` (legs, 3)."""
        q = np.asarray(q, dtype=np.float64).reshape(-1, 3)
        phi, t1, t2 = (self.signs * q).T
        # in the leg plane (R_y(t) side e_x = side (cos t, 0, -sin t)), then the roll R_x(phi)
        X = self.side * (self.l1 * np.cos(t1) + self.l2 * np.cos(t1 + t2))
        Z = -self.side * (self.l1 * np.sin(t1) + self.l2 * np.sin(t1 + t2))
        return self.hips + np.stack([X, -np.sin(phi) * Z, np.cos(phi) * Z], axis=1)

    def inverse(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Joint angles (legs, 3) putting the foot centres at ``x`` (legs, 3); returns (q, reachable).
        An out-of-reach target is clipped to the reachable annulus (reachable False)."""
        return three_joint_inverse(self.hips, self.side, self.signs, float(self.l1), float(self.l2),
                                   np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1, 3)))


@jit
def three_joint_inverse(hips, side, signs, l1, l2, x):
    """:meth:`ThreeJointLegs.inverse`, compiled: per leg, d = x - hip, the roll
    phi = atan2(d_y, -d_z) brings the foot into the leg plane, where the planar target is
    (X, Y) = side (d_x, |d_yz|); knee t2 = side acos(D), D = (X^2 + Y^2 - l1^2 - l2^2) / (2 l1 l2)
    clipped to [-1, 1] (reachable: |D| <= 1), hip t1 = atan2(Y, X) - atan2(l2 sin t2, l1 + l2 cos t2);
    q = (phi, t1, t2) x signs."""
    n = x.shape[0]
    q = np.empty((n, 3))
    reachable = np.empty(n, dtype=np.bool_)
    three_joint_inverse_into(hips, side, signs, l1, l2, x, q, reachable)
    return q, reachable


@jit
def three_joint_inverse_into(hips, side, signs, l1, l2, x, q, reachable):
    """:func:`three_joint_inverse` into ``q`` (legs, 3) and ``reachable`` (legs,)."""
    n = x.shape[0]
    for l in range(n):
        d0, d1, d2 = x[l, 0] - hips[l, 0], x[l, 1] - hips[l, 1], x[l, 2] - hips[l, 2]
        r = np.hypot(d1, d2)
        phi = np.arctan2(d1, -d2)                   # roll that brings the foot into the leg plane
        X = side[l] * d0                            # along the leg
        Y = side[l] * r                             # planar target (X, Y) with Y = -side * z'
        D = (X * X + Y * Y - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
        reachable[l] = abs(D) <= 1.0
        t2 = side[l] * np.arccos(min(max(D, -1.0), 1.0))
        t1 = np.arctan2(Y, X) - np.arctan2(l2 * np.sin(t2), l1 + l2 * np.cos(t2))
        q[l, 0], q[l, 1], q[l, 2] = phi * signs[l, 0], t1 * signs[l, 1], t2 * signs[l, 2]
