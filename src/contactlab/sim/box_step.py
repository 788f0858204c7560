"""Box-friction steps compiled end to end: build -> solve -> recover -> integrate in one call.

For the scenes of the simulator benchmark (stacks and piles of free bodies, no joints, no
kinematic bodies) with box friction (arechavaleta eq. 16-17), the step after detection is a fixed
chain of compiled kernels: the bodies' mass blocks and free velocity, the contact rows, the problem
(certified mode: the dense Delassus matrix with q and the bounds; fixed-budget mode: q and the bounds
only, the sweeps being matrix-free), the warm start from the matched previous impulses, the solve
(box-qp's projected Newton with the certification of its answer; or at most ``iterations`` PGS
sweeps), the recovery of v+, the energy check, the semi-implicit Euler update, the position
correction (its deep test; in fixed-budget mode its PGS sweeps too) and the energies.
:func:`box_friction_step` and :func:`box_friction_fixed_step` run that chain in one call on the very
kernels the general path calls one by one from Python (simulator.py ``_step``), in the same order
on the same arrays, so a step gives the same bits either way (tests/test_box_step.py compares the
state, the records and the answers of both paths step by step); what they remove is the glue
between them: ~30 Python objects and ~20 compiled calls a step (docs/benchmarks-tuning.md).

A step changes nothing unless its answer is applied as the general path would apply it: a step
whose Newton hands over to the interior point, whose answer does not certify (certified mode), or
whose answer is not finite, or whose q is not finite, returns before any state is touched, and the
simulator runs the general path (fallbacks and all) on the same contacts. A certified step with deep
penetration returns after the integration and the simulator runs its position correction. The
step's ConstraintSystem and problem are assembled only when read (``Simulator.last_system``,
``last_problem``) from the terms the call returns.
"""
from __future__ import annotations

import time

import numpy as np

from ..collision.boxes import unpack_contacts
from ..collision.contacts import packed
from ..kernels._jit import jit
from ..kernels.box_qp import SOLVED as _QP_SOLVED, box_qp_dense_certified, island_blocks
from ..kernels.energy import energies, energies_and_depth
from ..kernels.residual import (box_relative_error, box_residual_kernel, boxed_certify_dense, boxed_zero_solves,
                                coupled_bounds)
from ..mechanics.kernels import (advance_state, body_terms, contact_terms, delassus_dense, free_velocity,
                                 kinetic_gain, position_targets, rows_times, rows_transpose_times)
from ..kernels.pgs import CONVERGED as _PGS_CONVERGED, MAX_SWEEPS as _PGS_MAX_SWEEPS, STALLED as _PGS_STALLED
from ..kernels.pgs_matrix_free import _solve as _pgs_matrix_free
from ..kernels.tolerances import CERTIFY, NORMWISE_FLOOR
from ..mechanics.joint_projection import displace
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.system import _block_pattern, _live, _packed
from ..models.box_friction import (row_heights, row_islands, _box_bounds, _contact_parts, _matched_impulses,
                                   _q_kernel, _recover_parts)
from ..models.common import MODE_IMPULSE_TOL, MODE_SPEED_TOL, StepResult
from ..solution import Solution, Status
from ..solvers.box_qp import _dense_factors
from .fallback import certified
from .recorder import StepRecord

# a step's arguments where it has no warm start (never written: the kernels only read them)
_NO_NORMAL, _NO_TANGENT = np.zeros(0), np.zeros((0, 2))
# a step's joint, limit and motor impulses (none on these scenes): one read-only empty array
_NONE = np.zeros(0)
_NONE.flags.writeable = False

# outcome codes of box_friction_step
DECLINED = 0     # nothing changed: the general path takes the step
SOLVED = 1       # box-qp's certified answer applied
TRIVIAL = 2      # z = 0 solves the problem (solve()'s TRIVIAL), applied


@jit
def _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, quat, pos, lin, ang, floats,
                ints, h, zeta, slop):
    """What both compiled steps start with, in the general path's order: e0 (kernels/energy.py
    ``energies``), f = 0 and (Bm, Bw, v) (mechanics/kernels.py ``body_terms``: f += gravity and
    gyroscopic forces), v_free (``free_velocity``) and the rows of the packed contacts (``floats``,
    ``ints``: collision/boxes.py ``pack_contacts``) with the normal bias (``contact_terms``).
    Returns (e0, f, Bm, Bw, v, v_free, rows data, indices, indptr, normal bias)."""
    P, normal, t1, t2, phi, _, _, a, b, _, _, _ = unpack_contacts(floats, ints)
    ke0, pe0 = energies(dof_start, mass, inertia, quat, lin, ang, pos, gravity)
    f = np.zeros(ndof)
    Bm, Bw, v = body_terms(live, dof_start, quat, mass, inertia, inv_inertia, gravity, lin, ang, gyroscopic, f)
    dv, ix, ip, n_bias = contact_terms(a, b, dof_start, pos, P, normal, t1, t2, phi, h, zeta, slop)
    return ke0 + pe0, f, Bm, Bw, v, free_velocity(Bw, v, f, h), dv, ix, ip, n_bias


@jit
def state_before(quat, pos, lin, ang):
    """The bodies' state at a step's start in one array (quaternions, positions, linear and angular
    velocities, each (nb, k) in turn): what a compiled step hands back instead of the nine arrays of
    its system (each array handed to Python costs ~0.3 us), which :func:`system_terms` recomputes."""
    return np.concatenate((quat.reshape(-1), pos.reshape(-1), lin.reshape(-1), ang.reshape(-1)))


@jit
def results(z, w, dvel, v_next, tangent, before):
    """A compiled step's float results in one array, [z | w | velocity change | v+ | tangent impulses
    (nc, 2) | state before]: each array handed to Python costs ~0.3 us to box and about as much to free
    (:func:`_split` views it)."""
    return np.concatenate((z, w, dvel, v_next, tangent.reshape(-1), before))


@jit
def system_terms(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, before, floats, ints, h, zeta,
                 slop):
    """The terms of a compiled step's system (mechanics/system.py ``assemble_system``'s f, (Bm, Bw,
    v), (rows data, indices, indptr, normal bias), v_free) from its state before the step
    (:func:`state_before`) and its packed contacts: :func:`_step_terms` on the same inputs, so the
    same bits as the step's own."""
    nb = dof_start.size
    quat = before[:4 * nb].reshape((nb, 4))
    pos = before[4 * nb:7 * nb].reshape((nb, 3))
    lin = before[7 * nb:10 * nb].reshape((nb, 3))
    ang = before[10 * nb:13 * nb].reshape((nb, 3))
    _, f, Bm, Bw, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                              gravity, gyroscopic, quat, pos, lin, ang, floats, ints,
                                                              h, zeta, slop)
    return f, Bm, Bw, v, v_free, dv, ix, ip, n_bias


@jit
def box_friction_step(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, quat, pos, lin, ang,
                      floats, ints, h, zeta, slop, cfm, new_bound, current,
                      warm, prev_normal, prev_tangent, blk_cols, blk_ptr, passive,
                      tol, steps, armijo, full, newton_only, max_outer, cL, cA, cF, ck, threshold,
                      position_stage, position_zeta, try_warm):
    """One box-friction step of a joint-free scene with nc = len(phi) contacts, n = 3 nc rows
    [N; S; T] (models/box_friction.py layout, no joint, motor or limit rows), in the order of
    simulator.py ``_step``:

    e0 (kernels/energy.py ``energies``); f = 0 and (Bm, Bw, v) (mechanics/kernels.py ``body_terms``:
    f += gravity and gyroscopic forces); the rows and the normal bias (``contact_terms``); v_free
    (``free_velocity``); q and the bounds, and M unless the warm start is taken below (box_friction.py
    ``_dense_parts``' kernels); the warm start (``_matched_impulses`` of the previous impulses where ``warm``); z = 0 if it solves the
    problem (``boxed_zero_solves``, certified by ``boxed_certify_dense``), else box-qp's projected
    Newton and its certification (kernels/box_qp.py ``box_qp_dense_certified``: the call
    solvers/box_qp.py ``_compiled`` makes, its Newton systems factorised island by island over the
    build's islands, box_friction.py ``row_islands``), accepted when it reports SOLVED and its relative error
    max(natural, infeasibility) is <= ``threshold`` (solve()'s test); v+, tangent impulses, modes
    (``_recover_parts``); with ``try_warm`` first the warm start against box-qp's own stop without
    M (:func:`warm_start_stop`, simulator.py ``_certified_warm_start``'s test): where it holds, z is
    the warm start, v+ = v_free + W H' z (``_contact_parts``), and M is never formed;
    the energy the impulses added (``kinetic_gain``); x += h v+
    (``advance_state``, in place); with ``position_stage`` the deep test of the position correction
    (``position_targets``); the energies and deepest overlap (``energies_and_depth``) unless deep.

    The contacts come packed (collision/boxes.py ``pack_contacts``: ``floats``, ``ints``, the latter
    with each contact's match, the previous contact whose impulses warm-start it).

    Returns (outcome, iterations, outer, deep, e0, contact_gain, ke, pe, pen, numbers (6), the float
    results in one array (:func:`results`: z, w, v+, the tangent impulses, and the state before the
    step, from which the step's system is assembled when read, :func:`system_terms`), modes, whether
    the warm start was taken without M); outcome DECLINED leaves every state array as it was."""
    before = state_before(quat, pos, lin, ang)
    _, _, _, _, phi, mu_c, guess, _, _, _, _, match = unpack_contacts(floats, ints)
    e0, f, Bm, Bw, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                               gravity, gyroscopic, quat, pos, lin, ang, floats,
                                                               ints, h, zeta, slop)
    nc, nnz, H, none = phi.size, dv.shape[1], dv.reshape(-1), np.zeros(0)     # H: the rows' values, row by row
    n = 3 * nc
    z0 = np.zeros(n)
    if warm:
        _matched_impulses(z0, 0, match, prev_normal, prev_tangent)
    outcome, its, outer, deep = DECLINED, 0, 0, False
    contact_gain = ke = pe = pen = 0.0
    z = z0
    w = np.zeros(n)
    numbers = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    v_next = v_free
    tangent = np.zeros((nc, 2))
    modes = np.zeros(nc, dtype=np.int8)
    q = _q_kernel(ip, ix, H, v_free, none, none, none, n_bias)
    lo, hi, findex, mu = _box_bounds(0, 0, 0, n, none, mu_c, guess, new_bound, current)
    taken = False
    if try_warm and warm and nc:
        taken, w_s, dvel, numbers_s = warm_start_stop(ip, ix, H, blk_ptr, blk_cols, Bw.reshape(-1), cfm, q, lo, hi,
                                                      findex, mu, z0, tol)
        taken = taken and numbers_s[3] <= threshold     # solve()'s test too (max(certify, tol) >= tol)
        if taken:
            outcome, w, numbers = SOLVED, w_s, numbers_s
            v_next, tangent, modes = _contact_parts(v_free + dvel, z, 0, ip[:nc + 1], ix[:nnz], dv[1], dv[2],
                                                    MODE_IMPULSE_TOL, MODE_SPEED_TOL)
    finite = False
    if not taken:       # the rest of box_friction.py ``_dense_parts``: M, and whether q is finite
        M = delassus_dense(ip, ix, H, Bw, n, np.full(n, cfm))
        finite = np.all(np.isfinite(q))
    if finite:
        if boxed_zero_solves(q, lo, hi, findex):
            z = np.zeros(n)
            w, nat, comp, infeas, rn, rc, ri = boxed_certify_dense(M, q, lo, hi, findex, mu, z)
            numbers = (nat, comp, infeas, rn, rc, ri)
            outcome = TRIVIAL
        else:
            count, label = row_islands(ip, ix, 0, nc)      # the build's islands (box_friction.py)
            grp, gstep, nbr, nnb = island_blocks(count, label)
            code, z, w_qp, its, outer, w, numbers = box_qp_dense_certified(
                M, q, lo, hi, findex, mu, z0, tol, steps, armijo, full, newton_only, max_outer, cL, cA, cF, ck,
                grp, gstep, nbr, nnb)
            relative = numbers[5] if numbers[5] > numbers[3] else numbers[3]    # Python's max(natural, infeas.)
            if code == _QP_SOLVED and relative <= threshold:
                outcome = SOLVED
    if outcome != DECLINED:
        if taken:
            pass            # v+, tangent impulses and modes from W H' z above
        elif nc:
            v_next, tangent, modes = _recover_parts(blk_ptr, blk_cols, Bw.reshape(-1), ip, ix, H, z, v_free, 0,
                                                    ip[:nc + 1], ix[:nnz], dv[1], dv[2], MODE_IMPULSE_TOL,
                                                    MODE_SPEED_TOL)
        else:       # no contact: box_friction.recover's general branch, v_free + M^-1 (H' z) with H empty
            v_next = v_free + rows_times(blk_ptr, blk_cols, Bw.reshape(-1),
                                         rows_transpose_times(ip, ix, H, z, v_free.size))
        contact_gain = kinetic_gain(blk_ptr, blk_cols, Bm.reshape(-1), v_next, v_free.copy(), passive)
        advance_state(dof_start, v_next, lin, ang, pos, quat, h)
        if position_stage and nc:
            c, deep = position_targets(rows_times(ip[:nc + 1], ix[:nnz], dv[0], v_next), phi, h, slop, position_zeta)
        if not deep:
            ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quat, lin, ang, pos, gravity, phi)
    return (outcome, its, outer, deep, e0, contact_gain, ke, pe, pen, numbers,
            results(z, w, np.zeros(0), v_next, tangent, before), modes, taken)


@jit
def warm_start_stop(ip, ix, H, m_ptr, m_idx, m_data, cfm, q, lo, hi, findex, mu, z, tol):
    """Whether box-qp would return the warm start z without a Newton step, found without the
    Delassus matrix (simulator.py ``_certified_warm_start`` calls it on the general path): z = 0
    not a solution (solve()'s TRIVIAL first), dv = W H' z (mechanics/kernels.py
    ``rows_transpose_times``, then ``rows_times`` on M^-1's blocks), w = (H dv + cfm z) + q, and
    box-qp's stop at its start (kernels/box_qp.py ``projected_newton``): ``box_relative_error``
    with each w_i in units of |q_i| + |w_i - q_i|, at the coupled bounds of z, at most ``tol``.
    Those units are at most solve()'s row terms |q_i| + sum_j |A_ij| |z_j| (same z scale and
    floor), so the value bounds solve()'s relative residual from above: a certified answer.
    Returns (taken, w, dv, (natural, complementarity, infeasibility, relative, 0, relative))."""
    n = q.size
    none = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if boxed_zero_solves(q, lo, hi, findex):
        return False, np.zeros(n), np.zeros(0), none
    dv = rows_times(m_ptr, m_idx, m_data, rows_transpose_times(ip, ix, H, z, m_ptr.size - 1))
    Hdv = rows_times(ip, ix, H, dv)
    w = np.empty(n)
    t = np.empty(n)
    for i in range(n):
        w[i] = (Hdv[i] + cfm * z[i]) + q[i]
        t[i] = abs(q[i]) + abs(w[i] - q[i])
    lo_z, hi_z = np.empty(n), np.empty(n)
    coupled_bounds(lo, hi, findex, mu, z, lo_z, hi_z)
    rel = box_relative_error(z, w, lo_z, hi_z, q, t, np.empty((4, n)))
    if not rel <= tol:
        return False, w, dv, none
    nat, comp, infeas = box_residual_kernel(z, w, lo_z, hi_z)
    return True, w, dv, (nat, comp, infeas, rel, 0.0, rel)


@jit
def box_friction_fixed_step(live, ndof, dof_start, kind, kinematic, mass, inertia, inv_inertia, gravity, gyroscopic,
                            quat, pos, lin, ang, floats, ints, h, zeta, slop, cfm,
                            new_bound, current, warm, prev_normal, prev_tangent, blk_cols, blk_ptr, passive,
                            sweeps, tol, tol_w, position_stage, position_zeta):
    """The fixed-budget (``iterations``) box-friction step of :func:`box_friction_step`'s scenes:
    the rows, q (box_friction.py ``_q_kernel``) and bounds (``_box_bounds``), the warm start, at
    most ``sweeps`` matrix-free PGS sweeps (kernels/pgs_matrix_free.py ``_solve``, what
    simulator.py ``_solve_matrix_free`` calls: its stopping ``tol`` and ``tol_w`` (pgs's
    ``w_step_tol``), check every 10 sweeps, exact residual report), v+ = v_free + W H' z with the
    tangent impulses and modes (``_contact_parts``), the energy check, x += h v+, and where a
    contact is deeper than the slop the position correction's PGS on the normal rows with the same
    budget (simulator.py ``project_contacts``' fixed-budget branch) and its displacement, then the
    energies. Any number of contacts (no matrix is formed).

    Returns (outcome, pgs code, stats (4 numbers), e0, contact_gain, ke, pe, pen, the float results
    in one array (:func:`results`: z, w, the velocity change W H' z, v+, the tangent impulses, the state
    before the step), modes); outcome DECLINED (a row on more than two bodies, or an answer that is
    not finite: the general path reports it) leaves every state array as it was. Contacts as
    :func:`box_friction_step`'s."""
    before = state_before(quat, pos, lin, ang)
    P, _, _, _, phi, mu_c, guess, _, _, _, _, match = unpack_contacts(floats, ints)
    e0, f, Bm, Bw, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                               gravity, gyroscopic, quat, pos, lin, ang, floats,
                                                               ints, h, zeta, slop)
    nc, nnz, H, none = phi.size, dv.shape[1], dv.reshape(-1), np.zeros(0)     # H: the rows' values, row by row
    n = 3 * nc
    q = _q_kernel(ip, ix, H, v_free, none, none, none, n_bias)
    lo, hi, findex, mu = _box_bounds(0, 0, 0, n, none, mu_c, guess, new_bound, current)
    z = np.zeros(n)
    if warm:
        _matched_impulses(z, 0, match, prev_normal, prev_tangent)
    height = row_heights(P, gravity, 0, 3)
    ok, w, dvel, code, stats = _pgs_matrix_free(ip, ix, H, Bw, q, np.full(n, cfm), lo, hi, findex, mu, z, sweeps, 10,
                                                tol, tol_w, NORMWISE_FLOOR, True, height)
    outcome = SOLVED if ok else DECLINED
    for i in range(n):
        if not np.isfinite(z[i]):
            outcome = DECLINED
    if not stats[2] <= np.inf:      # a NaN residual: not usable (simulator.py raises)
        outcome = DECLINED
    contact_gain = ke = pe = pen = 0.0
    v_next = v_free
    tangent = np.zeros((nc, 2))
    modes = np.zeros(nc, dtype=np.int8)
    dflat = dvel.copy().reshape(-1)
    if outcome != DECLINED:
        if nc:
            v_next, tangent, modes = _contact_parts(v_free + dflat, z, 0, ip[:nc + 1], ix[:nnz], dv[1], dv[2],
                                                    MODE_IMPULSE_TOL, MODE_SPEED_TOL)
        else:
            v_next = v_free + dflat
        contact_gain = kinetic_gain(blk_ptr, blk_cols, Bm.reshape(-1), v_next, v_free.copy(), passive)
        advance_state(dof_start, v_next, lin, ang, pos, quat, h)
        if position_stage and nc:
            c, deep = position_targets(rows_times(ip[:nc + 1], ix[:nnz], dv[0], v_next), phi, h, slop, position_zeta)
            if deep:
                p = np.zeros(nc)
                ok2, _, dx, _, _ = _pgs_matrix_free(ip[:nc + 1], ix[:nnz], dv[0], Bw, c, np.full(nc, 1e-9),
                                                    np.zeros(nc), np.full(nc, np.inf),
                                                    np.full(nc, -1, dtype=np.int64), np.zeros(nc), p, sweeps, 10,
                                                    1e-4, 0.0, NORMWISE_FLOOR, False, height[:nc])
                finite = True
                for i in range(nc):
                    if not np.isfinite(p[i]):
                        finite = False
                if finite:
                    displace(dof_start, kind, kinematic, dx.copy().reshape(-1), pos, quat)
        ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quat, lin, ang, pos, gravity, phi)
    return (outcome, code, (stats[0], stats[1], stats[2], stats[3]), e0, contact_gain, ke, pe, pen,
            results(z, w, dflat, v_next, tangent, before), modes)


def free_bodies_only(model) -> bool:
    """Whether every moving body of ``model`` is a free rigid body (6 dof, no joint, no planar or
    kinematic body, no special pair): the scenes whose box-friction steps the compiled kernels take."""
    P, live = _packed(model), _live(model)
    return not (P.a.size or P.special.size or model.joints or np.any(model.planar)
                or np.any(model.kind == KIND_KINEMATIC) or not live.size or 6 * live.size != model.ndof)


class BoxFrictionStep:
    """The simulator's compiled box-friction step for one Simulator: certified mode by box-qp
    (:func:`box_friction_step`, steps with up to ``dense_max`` / 3 contacts: a dense problem) or
    fixed-budget mode by matrix-free PGS (:func:`box_friction_fixed_step`, any step); :meth:`plan`
    says whether it applies. Applies to box friction (``joints="rows"``) with no reuse, islands
    option, joint, planar or kinematic body; every other step, and a step it declines, takes the
    general path."""

    def __init__(self, sim, fixed: bool, opts=None, certify: float = CERTIFY):
        self.fixed = fixed
        self.opts = opts
        self.planned_for = _configuration(sim)
        if not fixed:
            self.newton_only = opts.algorithm == "newton"
            self.threshold = opts.tol if opts.tol > certify else certify     # solve()'s max(certify, tol)
            self.warm_tol = sim._warm_start_tol() > 0.0     # the general path's condition, read once per plan
            self.max_rows = int(sim.model_options.dense_max)
        self.kinematic = KIND_KINEMATIC
        self.live = _live(sim.model)
        self.blk_cols, self.blk_ptr = _block_pattern(self.live.size)
        self.gravity = np.asarray(sim.model.gravity, dtype=np.float64)
        m = self.model = sim.model       # frozen: its arrays are the plan's (a new model is planned anew)
        self.model_args = (self.live, m.ndof, m.dof_start, m.kind, self.kinematic, m.mass, m.inertia, m.inv_inertia,
                           self.gravity) if fixed else \
            (self.live, m.ndof, m.dof_start, m.mass, m.inertia, m.inv_inertia, self.gravity)
        self.cfm = float(sim.model_options.cfm + sim.model.settings.cfm)

    def system_terms(self, gyroscopic, before, floats, ints, h, zeta, slop):
        """mechanics/system.py ``assemble_system``'s (f, (Bm, Bw, v), (rows data, indices, indptr,
        normal bias), v_free) of a step this plan took (:func:`system_terms`), for
        Simulator.defer_system."""
        m = self.model
        f, Bm, Bw, v, v_free, dv, ix, ip, n_bias = system_terms(
            self.live, m.ndof, m.dof_start, m.mass, m.inertia, m.inv_inertia, self.gravity, gyroscopic, before, floats,
            ints, h, zeta, slop)
        return f, (Bm, Bw, v), (dv, ix, ip, n_bias), v_free

    @staticmethod
    def plan(sim):
        """A :class:`BoxFrictionStep` for ``sim``, or None where its configuration is not one the
        compiled steps reproduce."""
        if sim.model_name != "box-friction" or sim.reuse is not None or sim.islands \
                or sim.model_options.joints != "rows" or not free_bodies_only(sim.model):
            return None
        if sim._matrix_free:        # fixed budget by pgs (simulator.py: no other solver option than the budget and tol)
            return BoxFrictionStep(sim, True)
        if sim.method != "box-qp" or sim.iterations is not None:
            return None
        options = {k: v for k, v in sim.solver_options.items() if k != "certify"}
        try:
            opts = sim._spec.make_options(options)
        except Exception:       # the general path reports a bad option
            return None
        if not (opts.algorithm == "newton" or (opts.algorithm == "auto" and opts.newton_steps > 0)):
            return None
        return BoxFrictionStep(sim, False, opts, float(sim.solver_options.get("certify", CERTIFY)))

    def __call__(self, sim, contacts, match: np.ndarray, t_start: float, t_detect: float):
        """Take the step on ``contacts`` (detected by the simulator; ``match``: each one's previous
        contact, collision.match_contacts); the StepRecord, or None where the general path must take
        it (nothing changed). A simulator whose method, budget, options, model or reuse changed since
        the plan is planned anew, and this step takes the general path."""
        if _configuration(sim) != self.planned_for:
            sim._box_step = BoxFrictionStep.plan(sim)
            return None
        nc = contacts.count
        n = 3 * nc
        data = sim.data
        if data.joint_torque or (not self.fixed and n > self.max_rows):
            return None
        model, h = sim.model, sim.h
        st = model.settings         # read each step: the Model is frozen, its Settings object is not
        prev = data.result
        warm = bool(sim.warm_start and data.warm.get("z") is not None and prev is not None)
        floats, ints = packed(contacts, match)
        f64, f8 = np.ascontiguousarray, np.float64
        zeta, slop, gyroscopic = float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0), \
            float(st.slop), bool(st.gyroscopic)
        args = (floats, ints, h, zeta, slop, self.cfm, float(sim.model_options.new_contact_bound),
                sim.model_options.coupling == "current", warm, f64(prev.normal, dtype=f8) if warm else _NO_NORMAL,
                f64(prev.tangent, dtype=f8) if warm else _NO_TANGENT, self.blk_cols, self.blk_ptr, sim._passive)
        position_stage, position_zeta = st.contact_stabilization == "position", float(st.contact_zeta)
        if self.fixed:
            t0 = time.perf_counter()
            (outcome, code, stats, e0, gain, ke, pe, pen, out, modes) = box_friction_fixed_step(
                *self.model_args, gyroscopic, data.quaternion, data.position, data.linear_velocity,
                data.angular_velocity, *args, int(sim.iterations), *sim.sweep_stops(), position_stage, position_zeta)
            t_solved = time.perf_counter()
            if outcome == DECLINED:
                return None
            z, w, dvel, v_next, tangent, before = _split(out, n, 6 * self.live.size, model.ndof, nc)
            sol = matrix_free_solution(z, w, dvel, code, stats)
            deep = False
        else:
            opts = self.opts
            steps, full = (opts.max_iterations, False) if self.newton_only or n <= opts.small_n \
                else (opts.newton_steps, True)
            cL, cA, cF, ck = _dense_factors(n)
            t0 = time.perf_counter()
            (outcome, its, outer, deep, e0, gain, ke, pe, pen, numbers, out, modes, taken) = box_friction_step(
                *self.model_args, gyroscopic, data.quaternion, data.position, data.linear_velocity,
                data.angular_velocity, *args, float(opts.tol), int(steps), float(opts.armijo), full, self.newton_only,
                int(opts.max_outer), cL, cA, cF, ck, self.threshold, position_stage, position_zeta,
                warm and self.warm_tol and sim._warm_start_may_certify())
            t_solved = time.perf_counter()
            if outcome == DECLINED:
                return None
            z, w, _, v_next, tangent, before = _split(out, n, 0, model.ndof, nc)
            solved = outcome == SOLVED
            info = {"outer": int(outer)} if solved else {}
            if taken:       # the warm start, certified without M (simulator.py _certified_warm_start)
                info = {"warm_start_certified": True, "relative_residual_bound": True}
            sol = Solution(z=z, w=w, status=Status.SOLVED if solved else Status.TRIVIAL, iterations=int(its),
                           method="box-qp", info=info)
            sol.residual, sol.complementarity, sol.infeasibility = numbers[0], numbers[1], numbers[2]
            sol.relative_residual = max(numbers[3], numbers[5]) if solved else 0.0
        sol.time_s = t_solved - t0
        success = sol.success
        rescued = not success and certified(sol)
        result = StepResult(v_next=v_next, normal=z[:nc], tangent=tangent, joint=_NONE, limit=_NONE, motor=_NONE,
                            modes=modes)
        data.warm["z"] = z.copy()
        sim.defer_system(contacts, h, self.system_terms, (gyroscopic, before, floats, ints, h, zeta, slop))
        if deep:        # the position correction (simulator.py project_contacts), then the energies
            sim.project_contacts(sim.last_system, v_next)
            ke, pe, pen = energies_and_depth(model.dof_start, model.mass, model.inertia, data.quaternion,
                                             data.linear_velocity, data.angular_velocity, data.position,
                                             self.gravity, f64(contacts.phi, dtype=f8))
        data.time += h
        data.steps += 1
        data.contacts, data.result = contacts, result
        sim.last_solution = sol
        t_end = time.perf_counter()
        e1 = ke + pe
        # the compiled call is build, solve, recover and integrate at once: its time is reported as "solve"
        sim.timing = {"detect": t_detect - t_start, "build": 0.0, "solve": t_solved - t0,
                      "integrate": t_end - t_solved, "record": 0.0}
        return StepRecord(time=data.time, contacts=nc, lcp_size=n, iterations=int(sol.iterations), pivots=0,
                          residual=float(sol.residual), success=bool(success), status=sol.status.name,
                          rescued=bool(rescued), kinetic_energy=ke, energy=e1, energy_gain=e1 - e0,
                          contact_energy_gain=gain, max_penetration=pen, solve_time=t_solved - t0, joint_error=0.0)


def _split(out, n: int, nv: int, ndof: int, nc: int) -> tuple:
    """The views of :func:`results`' array: (z, w, velocity change (nv,), v+, tangent impulses (nc, 2),
    state before)."""
    a = 2 * n + nv
    b = a + ndof
    return out[:n], out[n:2 * n], out[2 * n:a], out[a:b], out[b:b + 2 * nc].reshape(nc, 2), out[b + 2 * nc:]


_PGS_STATUS = {_PGS_CONVERGED: Status.SOLVED, _PGS_MAX_SWEEPS: Status.MAX_ITERATIONS,
               _PGS_STALLED: Status.NO_SOLUTION_FOUND}


def matrix_free_solution(z, w, velocity_change, code, stats) -> Solution:
    """The Solution of matrix-free PGS (kernels/pgs_matrix_free.py ``_solve``'s z, w, code and stats;
    ``velocity_change`` = W H' z, flat): the fixed-budget steps' answer, compiled or not."""
    return Solution(z=z, w=w, status=_PGS_STATUS.get(int(code), Status.NUMERICAL_FAILURE), iterations=int(stats[0]),
                    residual=float(stats[1]), method="pgs", relative_residual=float(stats[2]),
                    info={"matrix_free": True, "last_step": float(stats[3]), "velocity_change": velocity_change})


def _configuration(sim) -> tuple:
    """What a plan depends on that a user may change between steps (the Model itself is frozen)."""
    return (sim.method, sim.iterations, dict(sim.solver_options), sim.model_options, sim.model_name, sim.reuse,
            sim.islands, sim.model, sim._matrix_free, sim.warm_start)
