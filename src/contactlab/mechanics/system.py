"""One step's constraint system: everything a contact model needs, as plain arrays.

Notation follows the papers (drumwright §III, arechavaleta §IV): M, v, f; J (bilateral rows),
L (joint-limit rows), N, S, T (contact normal and two tangents), D (d pyramid directions per
contact), A (velocity motors). All Jacobians are ``scipy.sparse`` CSR with ``ndof`` columns.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .model import KIND_KINEMATIC, Data, Model
from . import joint_kernels as _JK
from . import bodies as _B
from . import rows as _R
from . import terms as _T
from .delassus import delassus  # noqa: F401  (the system's Delassus operator; also importable from here)
from .joint_kernels import pack_joints
from .joint_projection import _mobility
from .rows import csr_of


@dataclass
class ConstraintSystem:
    """Inputs of a contact model for one step of length ``h``.

    Rows and their velocity-level conditions on the next velocity v+ (v+ = v + h M^-1 f + M^-1 (impulses)):
      J v+ = j_rhs                    bilateral: joints (drift correction -zeta dP/h, eq. 10), kinematic drives, planar rows
      L v+ + l_bias >= 0  perp c_l >= 0       joint limits (eq. 12), speculative (bias = gap/h)
      N v+ + n_bias >= 0  perp c_n >= 0       contact normals (eq. 7) with penetration stabilisation
      S, T: tangents t1, t2 of each contact; D: d unit directions cos(2 pi k/d) t1 + sin(2 pi k/d) t2 (rows k*d..)
      A v+ -> a_target with |c_a| <= a_max (impulse = h * max force)      velocity motors
    ``j_err`` is the position error of each J row (NaN for velocity-only rows) used by the joint
    projection. ``normal_guess`` is each contact's normal impulse matched from the previous step
    (NaN if new). Shapes: M, Minv (ndof, ndof); v, f (ndof,); J (nj, ndof); L (nl, ndof);
    N, S, T (nc, ndof); D (nc*d, ndof); A (nm, ndof); mu, phi, n_bias (nc,).
    """
    h: float
    ndof: int
    M: sp.csr_matrix
    Minv: sp.csr_matrix
    v: np.ndarray
    f: np.ndarray
    J: sp.csr_matrix
    j_rhs: np.ndarray
    j_err: np.ndarray
    L: sp.csr_matrix
    l_bias: np.ndarray
    N: sp.csr_matrix
    n_bias: np.ndarray
    S: sp.csr_matrix
    T: sp.csr_matrix
    d: int
    mu: np.ndarray
    phi: np.ndarray
    A: sp.csr_matrix
    a_target: np.ndarray
    a_max: np.ndarray
    cfm: float = 0.0
    contacts: object = None
    normal_guess: np.ndarray = None
    labels: Mapping = field(default_factory=dict)   # row labels: joint rows, limits, motors (RowLabels)
    W_blocks: np.ndarray = None   # (moving bodies, 6, 6) blocks of Minv, for :func:`delassus`
    pyramid: sp.csr_matrix = field(default=None, repr=False)   # D, formed on first use (see D)
    NST: sp.csr_matrix = field(default=None, repr=False)   # [N; S; T] (N, S, T are views of its arrays)

    @property
    def D(self) -> sp.csr_matrix:
        """The friction-pyramid rows (:func:`pyramid_rows`), formed the first time a model reads them
        (box friction and the no-slip/viscous models never do)."""
        if self.pyramid is None:
            self.pyramid = pyramid_rows(self.S, self.T, self.d) if self.nc else _empty(self.ndof)
        return self.pyramid

    @property
    def body_blocks(self) -> bool:
        """Whether ``W_blocks`` covers every coordinate (6 per moving body): the layout of the
        matrix-free sweeps, the compiled Delassus and the islands by body (maximal coordinates)."""
        return self.W_blocks is not None and 6 * self.W_blocks.shape[0] == self.ndof

    @property
    def nc(self) -> int:
        return self.N.shape[0]

    @property
    def nj(self) -> int:
        return self.J.shape[0]

    @property
    def nl(self) -> int:
        return self.L.shape[0]

    @property
    def nm(self) -> int:
        return self.A.shape[0]

    def _v_free_key(self) -> tuple:
        return id(self.v), id(self.f), id(self.Minv), self.h

    def v_free(self) -> np.ndarray:
        """v + h M^-1 f: the next velocity without constraint impulses (formed once per system: the
        model's build, its recovery and the step's energy check all read it; a copy is returned)."""
        key = self._v_free_key()
        cached = self.__dict__.get("_v_free")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_v_free"] = (key, self.v + self.h * rows_times(self.Minv, self.f))
        return cached[1].copy()


def stack_rows(parts, ncols: int) -> sp.csr_matrix:
    """The canonical CSR matrices ``parts`` (each with ``ncols`` columns) one above the other: data and
    indices concatenated, row pointers offset (what scipy's vstack does after converting and checking
    each block)."""
    parts = [m for m in parts if m.shape[0]]
    if not parts:
        return _empty(ncols)
    if not all(sp.issparse(m) and m.format == "csr" and m.has_canonical_format for m in parts):
        return sp.vstack(parts, format="csr")      # a system made by hand: scipy's general path
    if len(parts) == 1:
        return parts[0]
    ptr, off = [np.zeros(1, dtype=np.int64)], 0
    for m in parts:
        ptr.append(m.indptr[1:].astype(np.int64) + off)
        off += int(m.indptr[-1])
    return csr_of(np.concatenate([m.data for m in parts]),
                  np.concatenate([m.indices.astype(np.int64, copy=False) for m in parts]),
                  np.concatenate(ptr), (sum(m.shape[0] for m in parts), ncols))


def rows_times(H, x: np.ndarray) -> np.ndarray:
    """H x for a CSR H in one compiled call (scipy's ``H @ x`` wrapper costs more than the product on the
    small systems of a step); any other matrix through ``@``."""
    if not (sp.issparse(H) and H.format == "csr"):
        return np.asarray(H @ x, dtype=np.float64).ravel()
    return _R.rows_times(H.indptr, H.indices, H.data, np.ascontiguousarray(x, dtype=np.float64))


def rows_transpose_times(H: sp.csr_matrix, z: np.ndarray) -> np.ndarray:
    """H' z for a CSR H without forming H' (scipy transposes through a new matrix on every ``H.T``)."""
    if not (sp.issparse(H) and H.format == "csr"):
        return np.asarray(H.T @ z, dtype=np.float64).ravel()
    return _R.rows_transpose_times(H.indptr, H.indices, H.data, np.ascontiguousarray(z, dtype=np.float64), H.shape[1])


@functools.lru_cache(maxsize=64)
def _empty(ndof: int) -> sp.csr_matrix:
    """The (0, ndof) CSR matrix, one shared instance per ndof (it holds nothing a caller could
    change; building one costs more than reusing it, and a joint-free step asked for several)."""
    return sp.csr_matrix((0, ndof))


def held_blocks(model: Model, W_blocks: np.ndarray) -> np.ndarray:
    """``W_blocks`` ((k, 6, 6) blocks of M^-1 over the k non-fixed bodies, dof order) with the
    kinematic bodies' blocks zeroed: a position correction moves only the bodies that yield to
    it (a copy only where there are kinematic bodies). :func:`mobility_blocks` is this at ``data``'s
    pose, in one compiled pass."""
    kinematic = model.kind == KIND_KINEMATIC
    if not np.any(kinematic):
        return W_blocks
    held = W_blocks.copy()
    held[model.dof_start[kinematic] // 6] = 0.0
    return held


def mobility_blocks(model: Model, data: Data) -> np.ndarray:
    """(k, 6, 6) blocks of M^-1 over the k non-fixed bodies, kinematic ones zeroed (they do not
    yield to position corrections): :func:`held_blocks` of the blocks at ``data``'s pose."""
    return _mobility(model.dof_start, model.kind, KIND_KINEMATIC, model.mass, model.inv_inertia, data.quaternion)


def mobility(model: Model, data: Data) -> sp.csr_matrix:
    """M^-1 with the blocks of kinematic bodies zeroed (they do not yield to position corrections)."""
    if not np.any(model.dof_start >= 0):
        return _empty(0)
    return _block_csr(mobility_blocks(model, data))


@functools.lru_cache(maxsize=64)
def _block_pattern(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and row pointers of a block-diagonal (k, 6, 6) CSR, read-only (shared by
    every matrix of that size; int32, which scipy keeps without a contents check)."""
    it = np.int32 if 36 * k < 2 ** 31 else np.int64
    cols = np.ascontiguousarray(np.broadcast_to(6 * np.arange(k, dtype=it)[:, None, None] + np.arange(6, dtype=it),
                                                (k, 6, 6))).reshape(-1)
    ptr = np.arange(0, 36 * k + 1, 6, dtype=it)
    cols.flags.writeable = False
    ptr.flags.writeable = False
    return cols, ptr


def _block_csr(B: np.ndarray) -> sp.csr_matrix:
    """CSR of the block-diagonal matrix of the (k, 6, 6) blocks B (dense blocks, no conversion)."""
    k = B.shape[0]
    cols, ptr = _block_pattern(k)
    return csr_of(B.reshape(-1), cols, ptr, (6 * k, 6 * k))


def mass_blocks(model: Model, data: Data) -> tuple[np.ndarray, np.ndarray]:
    """(k, 6, 6) blocks diag(m I3, R I R') of M and of M^-1 over the k non-fixed bodies."""
    live = np.flatnonzero(model.dof_start >= 0)
    return _B.mass_blocks_kernel(live, data.quaternion, model.mass, model.inertia, model.inv_inertia)


def mass_matrices(model: Model, data: Data) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Block-diagonal M = diag(m I3, R I R') and its inverse over the non-fixed bodies."""
    if not np.any(model.dof_start >= 0):
        return _empty(0), _empty(0)
    M_blocks, W_blocks = mass_blocks(model, data)
    return _block_csr(M_blocks), _block_csr(W_blocks)


def joint_torque_forces(model: Model, data: Data) -> np.ndarray:
    """Generalised force of the joint torques in ``data.joint_torque`` (joint index -> tau): tau
    times the joint's rate row, i.e. +tau about (along) the axis on the child b and -tau on the
    parent a (revolute: torques tau*axis on the angular coordinates; prismatic: force tau*axis at
    the child's anchor). Equal and opposite, so the pair's total momentum is unchanged."""
    if not data.joint_torque:
        return np.zeros(model.ndof)
    P = _packed(model)
    idx = np.fromiter(data.joint_torque.keys(), dtype=np.int64, count=len(data.joint_torque))
    tau = np.fromiter(data.joint_torque.values(), dtype=np.float64, count=len(data.joint_torque))
    return _JK.joint_torque_kernel(idx, tau, P.kind, P.a, P.b, P.anchor_b, P.axis_a, model.dof_start,
                                   data.position, data.quaternion, model.ndof)


def generalized_forces(model: Model, data: Data) -> np.ndarray:
    """Gravity, (if enabled) gyroscopic torques -omega x (I omega) (eq. 5's F_e) and the joint
    torques set for this step (:func:`joint_torque_forces`)."""
    f = joint_torque_forces(model, data)
    _JK.body_forces(np.flatnonzero(model.dof_start >= 0), model.dof_start, model.mass, model.inertia, model.gravity,
                    data.quaternion, data.angular_velocity, bool(model.settings.gyroscopic), f)
    return f


def point_rows(model: Model, data: Data, a: np.ndarray, b: np.ndarray, P: np.ndarray,
               U: np.ndarray) -> sp.csr_matrix:
    """Rows u.(velocity of the point P on b - velocity of the point P on a), one per (a, b, P, u).

    Body index -1 (world) or a fixed body contributes nothing. Entries: b: [u, (P - x_b) x u],
    a: -[u, (P - x_a) x u]. ``U`` (k, 3), or (m, k, 3) for m directions per point (a tuple of m
    matrices sharing one sparsity pattern, written in one compiled pass).
    """
    rows = _point_rows(model, data, a, b, P, U)[0]
    return rows if np.ndim(U) == 3 else rows[0]


def _point_rows(model: Model, data: Data, a, b, P, U):
    """(the rows of each direction, all rows stacked direction by direction) of :func:`point_rows`,
    from one compiled pass: each direction's matrix is a view of the stacked one's arrays."""
    k = np.shape(U)[-2]
    dv, ix, ip = _R.frame_rows_csr(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), model.dof_start,
                                   data.position, np.ascontiguousarray(P, dtype=np.float64),
                                   np.ascontiguousarray(U, dtype=np.float64).reshape(-1, k, 3))
    return _stacked_rows(dv, ix, ip, model.ndof)


def _stacked_rows(dv: np.ndarray, ix: np.ndarray, ip: np.ndarray, ndof: int):
    """(each direction's rows, all rows stacked) from :func:`~contactlab.mechanics.rows.frame_rows_csr`'s
    arrays: the stacked CSR on them as they are, and each direction's a view of its values on one
    pattern object (indices[:nnz], indptr[:k + 1]) that all directions share (:func:`contactlab.models.common.contact_modes`
    tests the sharing by identity)."""
    m, nnz = dv.shape
    k = (ip.size - 1) // m
    own_ix, own_ip = ix[:nnz], ip[:k + 1]
    return tuple(csr_of(d, own_ix, own_ip, (k, ndof)) for d in dv), csr_of(dv.reshape(-1), ix, ip, (m * k, ndof))


@dataclass
class JointState:
    """Current joint coordinate (angle or displacement) and its rate row, per joint."""
    coordinate: np.ndarray
    rate_rows: sp.csr_matrix


def _packed(model: Model):
    """The model's joints as arrays (packed by build_model; packed here for a Model made by hand or
    one whose joints were replaced, e.g. by dataclasses.replace)."""
    if model.joint_arrays is None or model.joint_arrays.joints is not model.joints:
        object.__setattr__(model, "joint_arrays", pack_joints(model.joints, model.names, model.kind, model.dof_start,
                                                              model.planar, KIND_KINEMATIC))
    return model.joint_arrays


def motor_state(P, data: Data) -> tuple[np.ndarray, np.ndarray]:
    """The motor targets and force limits of the packed joints ``P``: the state's where it has them
    (``Data.motor_target``, ``set_motor`` changes them between steps), else the compiled joints'."""
    mt, mf = P.motor_target, P.motor_max_force
    if data.motor_target is not None and data.motor_target.size:
        k = min(P.a.size, data.motor_target.size)
        mt, mf = mt.copy(), mf.copy()
        mt[:k], mf[:k] = data.motor_target[:k], data.motor_max_force[:k]
    return mt, mf


def _joint_kernel_args(model: Model, data: Data) -> tuple:
    """The joint kernels' leading arguments (the model's packed joints, the state's motor targets
    and force limits where it has them, else the compiled joints')."""
    P = _packed(model)
    mt, mf = motor_state(P, data)
    return (P.a, P.b, P.kind, P.anchor_a, P.anchor_b, P.axis_a, P.q_rel0, P.lower, P.upper, mt, mf, P.follows, P.ratio,
            P.special, P.special_kin, P.label_base, P.special_base, model.dof_start, data.position, data.quaternion,
            data.linear_velocity, data.angular_velocity, data.planar_reference)


def joint_rows(model: Model, data: Data, h: float):
    """Equality rows (J, rhs, err, labels), limit rows (L, bias, labels), motor rows (A, target,
    bound h * max force, labels) and joint state (coordinates, rate rows), written by the compiled
    :func:`~contactlab.mechanics.joint_kernels.joint_rows_kernel` (its docstring: the rows and their
    right-hand sides, arechavaleta eqs. 10-12). Motor targets and force limits are the state's
    (``Data.motor_target``, ``set_motor`` changes them between steps), else the compiled joints'."""
    P = _packed(model)
    nj = P.a.size
    if nj == 0 and P.special.size == 0:   # no joint, kinematic or planar body: no rows (box piles, stacks)
        e = lambda: _empty(model.ndof)
        z = np.zeros(0)
        return (e(), z, z, []), (e(), z, []), (e(), z, z, []), JointState(z, e())
    (Jm, rhs, err, jl), (Lm, l_bias, ll), (Am, a_target, a_max, al), (Rm, coords) = _JK.joint_rows_kernel(
        *_joint_kernel_args(model, data), data.velocity_vector(model), float(h), float(model.settings.zeta))
    csr = lambda m, n: csr_of(*m, (n, model.ndof))
    lab = lambda ids: P.labels[ids].tolist()
    return ((csr(Jm, rhs.size), rhs, err, lab(jl)), (csr(Lm, l_bias.size), l_bias, lab(ll)),
            (csr(Am, a_target.size), a_target, a_max, lab(al)), JointState(coords, csr(Rm, nj)))


class RowLabels(Mapping):
    """A system's row labels by group ("joint", "limit", "motor"): each a list of names, one per row,
    read from the joints' label table when first asked for (a step builds them for every system;
    few readers want them)."""

    def __init__(self, table: np.ndarray, **ids: np.ndarray):
        self._table, self._ids, self._lists = table, ids, {}

    def __getitem__(self, key: str) -> list:
        if key not in self._lists:
            self._lists[key] = self._table[self._ids[key]].tolist()
        return self._lists[key]

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def _system_joint_rows(model: Model, data: Data, h: float, v: np.ndarray):
    """The ConstraintSystem's joint rows: (J, j_rhs, j_err), (L, l_bias), (A, a_target, a_max) and
    their :class:`RowLabels`, as :func:`joint_rows` gives them, from the compiled
    :func:`~contactlab.mechanics.joint_kernels.constraint_rows_kernel` with the system's velocity
    vector ``v`` (no joint state)."""
    P = _packed(model)
    if P.a.size == 0 and P.special.size == 0:
        return _no_joint_rows(model, P)
    return joint_groups(model, P, _JK.constraint_rows_kernel(*_joint_kernel_args(model, data), v, float(h),
                                                              float(model.settings.zeta)))


def _no_joint_rows(model: Model, P):
    """:func:`_system_joint_rows` of a model without joint, kinematic or planar body: no rows."""
    e, z, none = _empty(model.ndof), np.zeros(0), np.zeros(0, dtype=np.int64)
    return (e, z, z), (e, z), (e, z, z), RowLabels(P.labels, joint=none, limit=none, motor=none)


def joint_groups(model: Model, P, rows):
    """The joint rows of a step (J and its right-hand side and error, the limits L, the motors A,
    as the step's system holds them) from the compiled rows ``rows`` (the J, L and A groups of
    :func:`~contactlab.mechanics.joint_kernels.constraint_rows_kernel`)."""
    (Jm, rhs, err, jl), (Lm, l_bias, ll), (Am, a_target, a_max, al) = rows
    n = model.ndof
    return ((csr_of(*Jm, (rhs.size, n)), rhs, err), (csr_of(*Lm, (l_bias.size, n)), l_bias),
            (csr_of(*Am, (a_target.size, n)), a_target, a_max), RowLabels(P.labels, joint=jl, limit=ll, motor=al))


def contact_rows(model: Model, data: Data, contacts, d: int):
    """N, S, T, D for a :class:`~contactlab.collision.ContactSet` (normal points from a to b)."""
    N, S, T = contact_frame_rows(model, data, contacts)
    return N, S, T, (pyramid_rows(S, T, d) if N.shape[0] else _empty(model.ndof))


def contact_frame_rows(model: Model, data: Data, contacts):
    """N, S, T (the normal and the two tangents of each contact) without the pyramid rows."""
    return _contact_frame_rows(model, data, contacts)[0]


def _contact_frame_rows(model: Model, data: Data, contacts):
    """((N, S, T), [N; S; T]): the three blocks are views of the stacked matrix's arrays."""
    if contacts is None or contacts.count == 0:
        e = _empty(model.ndof)
        return (e, e, e), e
    a, b, P = contacts.body_a, contacts.body_b, contacts.point
    return _point_rows(model, data, a, b, P, np.stack((contacts.normal, contacts.t1, contacts.t2)))


def pyramid_rows(S: sp.csr_matrix, T: sp.csr_matrix, d: int) -> sp.csr_matrix:
    """D, contact-major: row i*d + k = cos(2 pi k/d) S_i + sin(2 pi k/d) T_i (S and T share their
    sparsity pattern: the same bodies per contact; one compiled pass, :func:`~.rows.pyramid_csr`)."""
    return csr_of(*_R.pyramid_csr(S.indptr, S.indices, S.data, T.data, int(d)), (S.shape[0] * d, S.shape[1]))


def normal_bias(phi: np.ndarray, h: float, zeta: float, slop: float) -> np.ndarray:
    """phi/h for a gap (speculative contact), 0 for a penetration within the slop, zeta (phi + slop)/h
    beyond it (pass zeta = 0 when
    penetration is corrected at the position level); compiled (:func:`~.rows.normal_bias_kernel`,
    where the reason is written)."""
    return _R.normal_bias_kernel(np.ascontiguousarray(phi, dtype=np.float64), float(h), float(zeta), float(slop))


def _live(model: Model) -> np.ndarray:
    """The bodies with dofs (ascending), computed once per dof layout of the model."""
    cached = model.__dict__.get("_live_bodies")
    if cached is None or cached[0] is not model.dof_start:
        cached = (model.dof_start, np.flatnonzero(model.dof_start >= 0))
        object.__setattr__(model, "_live_bodies", cached)
    return cached[1]


#: the contact arguments of :func:`~.terms.system_terms` for a step without contacts
_NO_CONTACTS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 3)), np.zeros((0, 3)),
                np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))


def contact_arrays(contacts) -> tuple:
    """(a, b, point, normal, t1, t2, phi) of ``contacts`` as the compiled kernels take them."""
    if contacts is None or not contacts.count:
        return _NO_CONTACTS
    c64 = lambda x: np.ascontiguousarray(x, dtype=np.float64)
    return (contacts.body_a.astype(np.int64, copy=False), contacts.body_b.astype(np.int64, copy=False),
            c64(contacts.point), c64(contacts.normal), c64(contacts.t1), c64(contacts.t2), c64(contacts.phi))


def build_system(model: Model, data: Data, contacts, h: float | None = None) -> ConstraintSystem:
    """Assemble the :class:`ConstraintSystem` of the current state and ``contacts``: the bodies', the
    contacts' and the joints' terms in one compiled call (:func:`~.terms.system_terms`), then the
    system around them."""
    st = model.settings
    h = float(st.dt if h is None else h)
    live = _live(model)
    f = joint_torque_forces(model, data)
    zeta = st.contact_zeta if st.contact_stabilization == "velocity" else 0.0
    nc = 0 if contacts is None else contacts.count
    a, b, point, normal, t1, t2, phi = contact_arrays(contacts)
    if not live.size:       # no moving body: the mass matrices and rows from the state (assemble_system)
        terms = _R.contact_terms(a, b, model.dof_start, data.position, point, normal, t1, t2, phi, h, float(zeta),
                                 float(st.slop)) if nc else None
        return assemble_system(model, data, contacts, h, f, None, terms, None)
    P = _packed(model)
    mt, mf = motor_state(P, data)
    covers = 6 * live.size == model.ndof
    body, v_free, terms, rows = _T.system_terms(
        live, model.dof_start, data.quaternion, data.position, model.mass, model.inertia, model.inv_inertia,
        model.gravity, data.linear_velocity, data.angular_velocity, bool(st.gyroscopic), f, covers, a, b, point, normal,
        t1, t2, phi, float(zeta), float(st.slop), P.kernel_args, mt, mf, data.planar_reference, h, float(st.zeta))
    joint = joint_groups(model, P, rows) if (P.a.size or P.special.size) else _no_joint_rows(model, P)
    return assemble_system(model, data, contacts, h, f, body, terms if nc else None, v_free if covers else None,
                           joint)


def assemble_system(model: Model, data: Data, contacts, h: float, f: np.ndarray, body, terms,
                    v_free: np.ndarray | None, joint=None) -> ConstraintSystem:
    """The :class:`ConstraintSystem` from the compiled terms :func:`build_system` computes:
    ``body`` = :func:`~.bodies.body_terms` (M_blocks, W_blocks, v) (None without moving bodies),
    ``terms`` = ``contact_terms`` (rows data, indices, indptr, normal bias) (None without contacts),
    ``v_free`` = ``free_velocity`` (W_blocks, v, f, h) where the blocks cover every dof, ``joint`` =
    :func:`_system_joint_rows`'s answer where already computed. Else the joint rows
    are formed here from ``data`` (a joint-free model reads nothing of it: :mod:`contactlab.sim.box_kernels` assembles
    a step's system after the step from the terms its compiled call returned)."""
    st = model.settings
    if body is not None:
        M_blocks, W_blocks, v = body
        M, Minv = _block_csr(M_blocks), _block_csr(W_blocks)
    else:
        (M, Minv), W_blocks, v = mass_matrices(model, data), np.zeros((0, 6, 6)), data.velocity_vector(model)
    (J, j_rhs, j_err), (L, l_bias), (A, a_target, a_max), labels = \
        _system_joint_rows(model, data, h, v) if joint is None else joint
    d = int(st.friction_directions)
    nc = 0 if contacts is None else contacts.count
    if nc:
        dv, ix, ip, n_bias = terms
        (N, S, T), NST = _stacked_rows(dv, ix, ip, model.ndof)
        phi, mu = contacts.phi, contacts.mu
        guess = getattr(contacts, "normal_guess", None)
    else:
        (N, S, T), NST = _contact_frame_rows(model, data, contacts)
        phi = mu = n_bias = np.zeros(0)
        guess = None
    sys = ConstraintSystem(h=h, ndof=model.ndof, M=M, Minv=Minv, v=v, f=f, J=J, j_rhs=j_rhs, j_err=j_err,
                           L=L, l_bias=l_bias, N=N, n_bias=n_bias,
                           S=S, T=T, d=d, mu=mu, phi=phi, A=A, a_target=a_target, a_max=a_max,
                           cfm=float(st.cfm), contacts=contacts,
                           normal_guess=np.full(nc, np.nan) if guess is None else guess,
                           labels=labels, W_blocks=W_blocks, NST=NST)
    if v_free is not None and sys.body_blocks:     # v_free from the blocks (compiled), what v_free() would compute
        sys.__dict__["_v_free"] = (sys._v_free_key(), v_free)
    return sys


#: public names of the layout helpers the compiled steps share (the private spellings stay)
block_pattern, live_bodies, packed_joints = _block_pattern, _live, _packed

# the former private spellings (sim/ imported them before they were public)
_motor_state, _joint_groups, _contact_arrays = motor_state, joint_groups, contact_arrays
