"""Joint-space PD with torque limits, and the joint angles/rates read from maximal coordinates.

``tau = clip(kp (q_ref - q) + kd (qd_ref - qd), -tau_max, tau_max)``, applied as a joint torque
(+tau on the child, -tau on the parent) for one step (scenario-specs §2.2: kp 10, kv 0.1,
4 N m per joint; the integral term of the paper's PID is left out).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels._jit import jit
from ..kernels.dense import matvec
from ..kernels.quaternion import quat_conj_into, quat_matrix, quat_mul_into
from ..mechanics.rotation import quat_conj


@dataclass(frozen=True)
class JointPD:
    """Gains ``kp`` (N m/rad), ``kd`` (N m s/rad) and the torque limit ``tau_max`` (N m), scalars or
    one per joint."""
    kp: float = 10.0
    kd: float = 0.1
    tau_max: float = 4.0

    def __post_init__(self):
        for nm in ("kp", "kd", "tau_max"):
            v = np.asarray(getattr(self, nm), dtype=np.float64)
            if not (np.all(np.isfinite(v)) and np.all(v >= 0)):
                raise ParamError(f"JointPD.{nm} must be finite and >= 0, got {getattr(self, nm)!r}")
        if np.any(np.asarray(self.tau_max) == 0):
            raise ParamError("JointPD.tau_max must be > 0")

    def __call__(self, q, qd, q_ref, qd_ref=0.0, tau_ff=0.0) -> np.ndarray:
        args = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in
                                     (self.kp, self.kd, self.tau_max, q, qd, q_ref, qd_ref, tau_ff)))
        shape = args[0].shape
        return pd_torque(*(np.ascontiguousarray(v).reshape(-1) for v in args)).reshape(shape)

    def gains(self, shape) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(kp, kd, tau_max) as float arrays of ``shape`` (for :func:`pd_torque` on arrays of that shape)."""
        return tuple(np.ascontiguousarray(np.broadcast_to(np.asarray(g, dtype=np.float64), shape))
                     for g in (self.kp, self.kd, self.tau_max))


@jit
def pd_torque(kp, kd, tau_max, q, qd, q_ref, qd_ref, tau_ff):
    """clip(kp (q_ref - q) + kd (qd_ref - qd) + tau_ff, -tau_max, tau_max), elementwise over arrays of
    one shape (:class:`JointPD`)."""
    tau = np.empty(q.shape)
    pd_torque_into(kp, kd, tau_max, q, qd, q_ref, qd_ref, tau_ff, tau)
    return tau


@jit
def pd_torque_into(kp, kd, tau_max, q, qd, q_ref, qd_ref, tau_ff, tau):
    """:func:`pd_torque` into ``tau`` (C-contiguous, the arrays' shape)."""
    t, k, d, qq, qv, qr, vr, ff, tm = (tau.reshape(-1), kp.reshape(-1), kd.reshape(-1), q.reshape(-1), qd.reshape(-1),
                                       q_ref.reshape(-1), qd_ref.reshape(-1), tau_ff.reshape(-1), tau_max.reshape(-1))
    for i in range(t.size):
        v = k[i] * (qr[i] - qq[i]) + d[i] * (vr[i] - qv[i]) + ff[i]
        t[i] = min(max(v, -tm[i]), tm[i])


class JointReader:
    """Angles and rates of revolute joints ``names`` of a compiled model, all at once: the angle is
    the rotation of conj(q_a) q_b conj(q_rel0) about the parent-frame axis (the same coordinate
    the simulator's limits use, zero in the scene's initial configuration), the rate is
    axis . (omega_b - omega_a)."""

    def __init__(self, model, names):
        by_name = {j.name: k for k, j in enumerate(model.joints)}
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ParamError(f"no joint(s) {missing} in the model; joints: {list(by_name)}")
        js = [model.joints[by_name[n]] for n in names]
        bad = [j.name for j in js if j.kind != "revolute"]
        if bad:
            raise ParamError(f"JointReader reads revolute joints only; {bad} are not")
        self.names = list(names)
        self.index = np.array([by_name[n] for n in names])
        self.a = np.array([j.a for j in js])
        self.b = np.array([j.b for j in js])
        self.axis_a = np.array([j.axis_a for j in js])
        self.q_rel0_conj = quat_conj(np.array([j.q_rel0 for j in js], dtype=np.float64).reshape(-1, 4))
        self.axis_a = self.axis_a.reshape(-1, 3).astype(np.float64)

    def __call__(self, data) -> tuple[np.ndarray, np.ndarray]:
        return _angles_rates(self.a, self.b, self.axis_a, self.q_rel0_conj, data.quaternion, data.angular_velocity)


@jit
def _angles_rates(a, b, axis_a, q_rel0_conj, quaternion, omega):
    """Per joint k: qd = conj(q_a) q_b conj(q_rel0), angle 2 atan2(axis_a . qd_xyz, qd_w) wrapped to
    [-pi, pi), rate (R_a axis_a) . (omega_b - omega_a) (world parent: q_a = 1, omega_a = 0)."""
    n = a.size
    ang, rate = np.empty(n), np.empty(n)
    _angles_rates_into(a, b, axis_a, q_rel0_conj, quaternion, omega, ang, rate, np.empty(28))
    return ang, rate


@jit
def _angles_rates_into(a, b, axis_a, q_rel0_conj, quaternion, omega, ang, rate, scratch):
    """:func:`_angles_rates` into ``ang`` and ``rate`` (joints,); ``scratch``: 28 floats of work
    (the quaternion products, R_a and its axis)."""
    n = a.size
    qa, qc, qt, qd = scratch[0:4], scratch[4:8], scratch[8:12], scratch[12:16]
    R, axis = scratch[16:25].reshape((3, 3)), scratch[25:28]
    for k in range(n):
        if a[k] >= 0:
            qa[:] = quaternion[a[k]]
        else:
            qa[0], qa[1], qa[2], qa[3] = 1.0, 0.0, 0.0, 0.0
        quat_conj_into(qa, qc)
        quat_mul_into(qc, quaternion[b[k]], qt)
        quat_mul_into(qt, q_rel0_conj[k], qd)
        c = 2.0 * np.arctan2(axis_a[k, 0] * qd[1] + axis_a[k, 1] * qd[2] + axis_a[k, 2] * qd[3], qd[0])
        ang[k] = (c + np.pi) % (2.0 * np.pi) - np.pi
        quat_matrix(qa, R)
        matvec(R, axis_a[k], axis)
        r = 0.0
        for i in range(3):
            r += axis[i] * (omega[b[k], i] - (omega[a[k], i] if a[k] >= 0 else 0.0))
        rate[k] = r
