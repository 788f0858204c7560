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
kernels the general stages call one by one from Python (:class:`contactlab.sim.stages.Stages`,
:class:`contactlab.sim.box_stages.RowStages`), in the same order on the same arrays, so a step gives
the same bits either way (the tests compare the state, the records and the answers of both paths
step by step); what they remove is the glue between them, a few dozen Python objects and compiled
calls a step (docs/benchmarks-tuning.md).

:class:`contactlab.sim.box_stages.CompiledRowStages` makes these calls: box friction's stages on
such scenes (the model's ``COMPILED_STEP``). A step changes nothing unless its answer is applied
as the general path would apply it: a step
whose Newton hands over to the interior point, whose answer does not certify (certified mode), or
whose answer is not finite, or whose q is not finite, returns before any state is touched, and the
general stages take the step (fallbacks and all) on the same contacts. A certified step with deep
penetration returns after the integration and the simulator runs its position correction. The
step's ConstraintSystem and problem are assembled only when read (``Simulator.last_system``,
``last_problem``) from the terms the call returns.
"""
from __future__ import annotations


import numpy as np

from ..collision.boxes import unpack_contacts
from ..kernels._jit import jit
from ..kernels.box_qp import SOLVED as _QP_SOLVED, box_qp_dense_certified, island_blocks
from ..kernels.energy import energies, energies_and_depth
from ..kernels.residual import (box_relative_error, box_residual_kernel, boxed_certify_dense, boxed_zero_solves,
                                coupled_bounds)
from ..mechanics.kernels import (advance_state, body_terms, contact_terms, delassus_dense, free_velocity,
                                 kinetic_gain, position_targets, position_targets_window, rows_times,
                                 rows_transpose_times)
from ..kernels.pgs_matrix_free import solve_matrix_free_kernel as _pgs_matrix_free
from ..kernels.tolerances import NORMWISE_FLOOR
from ..mechanics.joint_projection import displace
from ..models.box_friction import (row_heights, row_islands, box_bounds as _box_bounds, centre_normals,
                                   contact_parts as _contact_parts,
                                   matched_impulses as _matched_impulses, q_kernel as _q_kernel,
                                   recover_parts as _recover_parts)
from ..models.common import MODE_IMPULSE_TOL, MODE_SPEED_TOL
from ..mechanics.model import KIND_KINEMATIC
from .faults import NOT_JUDGED, plausibility
from .turns import turn_bound

# outcome codes of box_friction_step
DECLINED = 0     # nothing changed: the general path takes the step
SOLVED = 1       # box-qp's certified answer applied
TRIVIAL = 2      # z = 0 solves the problem (solve()'s TRIVIAL), applied


@jit
def _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, quat, pos, lin, ang, floats,
                ints, h, zeta, slop):
    """What both compiled steps start with, in the general path's order: e0
    (:func:`contactlab.kernels.energy.energies`), f = 0 and (M_blocks, W_blocks, v) (:func:`contactlab.mechanics.bodies.body_terms`: f += gravity and
    gyroscopic forces), v_free (``free_velocity``) and the rows of the packed contacts (``floats``,
    ``ints``: :func:`contactlab.collision.boxes.packed.pack_contacts`) with the normal bias (``contact_terms``).
    Returns (e0, f, M_blocks, W_blocks, v, v_free, rows data, indices, indptr, normal bias)."""
    P, normal, t1, t2, phi, _, _, a, b, _, _, _ = unpack_contacts(floats, ints)
    ke0, pe0 = energies(dof_start, mass, inertia, quat, lin, ang, pos, gravity)
    f = np.zeros(ndof)
    M_blocks, W_blocks, v = body_terms(live, dof_start, quat, mass, inertia, inv_inertia, gravity, lin, ang, gyroscopic, f)
    dv, ix, ip, n_bias = contact_terms(a, b, dof_start, pos, P, normal, t1, t2, phi, h, zeta, slop)
    return ke0 + pe0, f, M_blocks, W_blocks, v, free_velocity(W_blocks, v, f, h), dv, ix, ip, n_bias


@jit
def state_before(quat, pos, lin, ang):
    """The bodies' state at a step's start in one array (quaternions, positions, linear and angular
    velocities, each (nb, k) in turn): what a compiled step hands back instead of the nine arrays of
    its system (each array handed to Python costs a boxing and a freeing), which :func:`system_terms` recomputes."""
    return np.concatenate((quat.reshape(-1), pos.reshape(-1), lin.reshape(-1), ang.reshape(-1)))


@jit
def results(z, w, dvel, v_next, tangent, before):
    """A compiled step's float results in one array, [z | w | velocity change | v+ | tangent impulses
    (nc, 2) | state before]: each array handed to Python costs a boxing and a freeing
    (:func:`_split` views it)."""
    return np.concatenate((z, w, dvel, v_next, tangent.reshape(-1), before))


@jit
def system_terms(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, before, floats, ints, h, zeta,
                 slop):
    """The terms of a compiled step's system (:func:`contactlab.mechanics.system.assemble_system`'s f, (M_blocks, W_blocks,
    v), (rows data, indices, indptr, normal bias), v_free) from its state before the step
    (:func:`state_before`) and its packed contacts: :func:`_step_terms` on the same inputs, so the
    same bits as the step's own."""
    nb = dof_start.size
    quat = before[:4 * nb].reshape((nb, 4))
    pos = before[4 * nb:7 * nb].reshape((nb, 3))
    lin = before[7 * nb:10 * nb].reshape((nb, 3))
    ang = before[10 * nb:13 * nb].reshape((nb, 3))
    _, f, M_blocks, W_blocks, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                              gravity, gyroscopic, quat, pos, lin, ang, floats, ints,
                                                              h, zeta, slop)
    return f, M_blocks, W_blocks, v, v_free, dv, ix, ip, n_bias


@jit
def box_friction_step(live, ndof, dof_start, mass, inertia, inv_inertia, gravity, gyroscopic, quat, pos, lin, ang,
                      floats, ints, h, zeta, slop, cfm, new_bound, current, centre,
                      warm, prev_normal, prev_tangent, blk_cols, blk_ptr, passive,
                      tol, steps, armijo, full, newton_only, max_outer, cL, cA, cF, ck, threshold,
                      position_stage, position_zeta, try_warm, radius, kind, total_mass, prev_joint_error, jointed,
                      motors, actuated):
    """One box-friction step of a joint-free scene with nc = len(phi) contacts, n = 3 nc rows
    [N; S; T] (:mod:`contactlab.models.box_friction`'s layout, no joint, motor or limit rows), in the order of
    the general stages (:class:`contactlab.sim.stages.Stages`):

    e0 (:func:`contactlab.kernels.energy.energies`); f = 0 and (M_blocks, W_blocks, v) (:func:`contactlab.mechanics.bodies.body_terms`:
    f += gravity and gyroscopic forces); the rows and the normal bias (``contact_terms``); v_free
    (``free_velocity``); q (its normal rows centred by ``centre``, ``centre_normals``) and the bounds, and M unless
    the warm start is taken below (the dense parts' kernels of :mod:`contactlab.models.box_friction`); the warm start (``_matched_impulses`` of the previous impulses where ``warm``); z = 0 if it solves the
    problem (``boxed_zero_solves``, certified by ``boxed_certify_dense``), else box-qp's projected
    Newton and its certification (:func:`contactlab.kernels.box_qp.box_qp_dense_certified`: the call
    box-qp's solver makes, its Newton systems factorised island by island over the
    build's islands, :func:`contactlab.models.box_friction.row_islands`), accepted when it reports SOLVED and its relative error
    max(natural, infeasibility) is <= ``threshold`` (solve()'s test); v+, tangent impulses, modes
    (``_recover_parts``); with ``try_warm`` first the warm start against box-qp's own stop without
    M (:func:`warm_start_stop`, :meth:`contactlab.sim.box_stages.RowStages.certified_warm_start`'s test): where it holds, z is
    the warm start, v+ = v_free + W H' z (``_contact_parts``), and M is never formed;
    the energy the impulses added (``kinetic_gain``); x += h v+
    (``advance_state``, in place); with ``position_stage`` the deep test of the position correction
    (``position_targets``); the energies and deepest overlap (``energies_and_depth``) unless deep.

    The contacts come packed (:func:`contactlab.collision.boxes.packed.pack_contacts`: ``floats``, ``ints``, the latter
    with each contact's match, the previous contact whose impulses warm-start it).

    The per-step checks whose inputs are the call's own, on the state it leaves: the turn bound of the
    correct stage (:func:`contactlab.sim.turns.turn_bound` over the contacts' bodies, the velocities
    after the step; a deep contact's position correction moves no velocity) and, unless deep (the
    correction after the call moves the bodies), the plausibility verdict of
    :func:`contactlab.sim.faults.step_fault` (:func:`contactlab.sim.faults.plausibility`, issue 40
    item 5) on the inputs that function gives it for a step whose system is deferred: the state at
    the call's start and after it, free velocities v + h g and omega (gravity is these bodies' only
    force), depth max(pen, 0), the record's energies; ``radius``, ``kind``, ``total_mass``,
    ``jointed``: :func:`contactlab.sim.faults.fault_statics`; ``prev_joint_error``, ``motors``,
    ``actuated``: what step_fault reads of the simulator. Python uses the verdict only where those
    inputs are still what it would pass (:func:`contactlab.sim.faults.step_fault`).

    Returns (outcome, iterations, outer, deep, e0, contact_gain, ke, pe, pen, numbers (6), the float
    results in one array (:func:`results`: z, w, v+, the tangent impulses, the state before the
    step, from which the step's system is assembled when read, :func:`system_terms`, and the
    positions and velocities after it), modes, whether the warm start was taken without M, the turn
    bound, the verdict (code NOT_JUDGED where none was formed)); outcome DECLINED leaves every state
    array as it was."""
    before = state_before(quat, pos, lin, ang)
    _, _, _, _, phi, mu_c, guess, body_a, body_b, _, _, match = unpack_contacts(floats, ints)
    e0, f, M_blocks, W_blocks, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                               gravity, gyroscopic, quat, pos, lin, ang, floats,
                                                               ints, h, zeta, slop)
    nc, nnz, H, none = phi.size, dv.shape[1], dv.reshape(-1), np.zeros(0)     # H: the rows' values, row by row
    n = 3 * nc
    turn = 0.0
    verdict = (NOT_JUDGED, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
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
    centre_normals(q, 0, guess, new_bound, centre)
    lo, hi, findex, mu = _box_bounds(0, 0, 0, n, none, mu_c, guess, new_bound, current)
    taken = False
    if try_warm and warm and nc:
        taken, w_s, dvel, numbers_s = warm_start_stop(ip, ix, H, blk_ptr, blk_cols, W_blocks.reshape(-1), cfm, q, lo, hi,
                                                      findex, mu, z0, tol)
        taken = taken and numbers_s[3] <= threshold     # solve()'s test too (max(certify, tol) >= tol)
        if taken:
            outcome, w, numbers = SOLVED, w_s, numbers_s
            v_next, tangent, modes = _contact_parts(v_free + dvel, z, 0, ip[:nc + 1], ix[:nnz], dv[1], dv[2],
                                                    MODE_IMPULSE_TOL, MODE_SPEED_TOL)
    finite = False
    if not taken:       # the rest of box friction's dense parts: M, and whether q is finite
        M = delassus_dense(ip, ix, H, W_blocks, n, np.full(n, cfm))
        finite = np.all(np.isfinite(q))
    if finite:
        if boxed_zero_solves(q, lo, hi, findex):
            z = np.zeros(n)
            w, nat, comp, infeas, rn, rc, ri = boxed_certify_dense(M, q, lo, hi, findex, mu, z)
            numbers = (nat, comp, infeas, rn, rc, ri)
            outcome = TRIVIAL
        else:
            count, label = row_islands(ip, ix, 0, nc)      # the build's islands (models.box_friction)
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
            v_next, tangent, modes = _recover_parts(blk_ptr, blk_cols, W_blocks.reshape(-1), ip, ix, H, z, v_free, 0,
                                                    ip[:nc + 1], ix[:nnz], dv[1], dv[2], MODE_IMPULSE_TOL,
                                                    MODE_SPEED_TOL)
        else:       # no contact: box_friction.recover's general branch, v_free + M^-1 (H' z) with H empty
            v_next = v_free + rows_times(blk_ptr, blk_cols, W_blocks.reshape(-1),
                                         rows_transpose_times(ip, ix, H, z, v_free.size))
        contact_gain = kinetic_gain(blk_ptr, blk_cols, M_blocks.reshape(-1), v_next, v_free.copy(), passive)
        advance_state(dof_start, v_next, lin, ang, pos, quat, h)
        if position_stage and nc:
            c, deep = position_targets(rows_times(ip[:nc + 1], ix[:nnz], dv[0], v_next), phi, h, slop, position_zeta)
        turn = turn_bound(body_a, body_b, ang, radius, h)
        if not deep:
            ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quat, lin, ang, pos, gravity, phi)
            nb = dof_start.size
            x0 = before[4 * nb:7 * nb].reshape((nb, 3))
            v0 = before[7 * nb:10 * nb].reshape((nb, 3))
            w0 = before[10 * nb:13 * nb].reshape((nb, 3))
            depth = pen if np.isfinite(pen) else 0.0
            if 0.0 > depth:     # Python's max(depth, 0.0) (faults.step_depth)
                depth = 0.0
            verdict = plausibility(dof_start, kind, KIND_KINEMATIC, radius, x0, v0, w0, v0 + h * gravity, w0, pos, lin,
                                   ang, h, depth, slop, prev_joint_error, jointed, motors, actuated, contact_gain, ke,
                                   ke + pe, total_mass)
    out = results(z, w, np.zeros(0), v_next, tangent, np.concatenate((before, pos.reshape(-1), lin.reshape(-1),
                                                                       ang.reshape(-1))))
    return (outcome, its, outer, deep, e0, contact_gain, ke, pe, pen, numbers, out, modes, taken, turn, verdict)


@jit
def warm_start_stop(ip, ix, H, m_ptr, m_idx, m_data, cfm, q, lo, hi, findex, mu, z, tol):
    """Whether box-qp would return the warm start z without a Newton step, found without the
    Delassus matrix (:meth:`contactlab.sim.box_stages.RowStages.certified_warm_start` calls it on the general path): z = 0
    not a solution (solve()'s TRIVIAL first), dv = W H' z (:mod:`contactlab.mechanics.rows`
    ``rows_transpose_times``, then ``rows_times`` on M^-1's blocks), w = (H dv + cfm z) + q, and
    box-qp's stop at its start (:func:`contactlab.kernels.box_qp.projected_newton`): ``box_relative_error``
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
                            new_bound, current, centre, warm, prev_normal, prev_tangent, blk_cols, blk_ptr, passive,
                            sweeps, tol, tol_w, position_stage, position_zeta):
    """The fixed-budget (``iterations``) box-friction step of :func:`box_friction_step`'s scenes:
    the rows, q (:func:`contactlab.models.box_friction.q_kernel`, centred by ``centre_normals``) and
    bounds (:func:`contactlab.models.box_friction.box_bounds`), the warm start, at
    most ``sweeps`` matrix-free PGS sweeps (:func:`contactlab.kernels.pgs_matrix_free.solve_matrix_free_kernel`, what
    :meth:`contactlab.sim.box_stages.RowStages.solve_matrix_free` calls: its stopping ``tol`` and ``tol_w`` (pgs's
    ``w_step_tol``), check every 10 sweeps, exact residual report), v+ = v_free + W H' z with the
    tangent impulses and modes (``_contact_parts``), the energy check, x += h v+, and where a
    contact is deeper than the slop the position correction's PGS on the normal rows with the same
    budget (``Simulator.project_contacts``' fixed-budget branch) and its displacement, then the
    energies. Any number of contacts (no matrix is formed).

    Returns (outcome, pgs code, stats (4 numbers), e0, contact_gain, ke, pe, pen, the float results
    in one array (:func:`results`: z, w, the velocity change W H' z, v+, the tangent impulses, the state
    before the step), modes); outcome DECLINED (a row on more than two bodies, or an answer that is
    not finite: the general path reports it) leaves every state array as it was. Contacts as
    :func:`box_friction_step`'s."""
    before = state_before(quat, pos, lin, ang)
    P, _, _, _, phi, mu_c, guess, _, _, _, _, match = unpack_contacts(floats, ints)
    e0, f, M_blocks, W_blocks, v, v_free, dv, ix, ip, n_bias = _step_terms(live, ndof, dof_start, mass, inertia, inv_inertia,
                                                               gravity, gyroscopic, quat, pos, lin, ang, floats,
                                                               ints, h, zeta, slop)
    nc, nnz, H, none = phi.size, dv.shape[1], dv.reshape(-1), np.zeros(0)     # H: the rows' values, row by row
    n = 3 * nc
    q = _q_kernel(ip, ix, H, v_free, none, none, none, n_bias)
    centre_normals(q, 0, guess, new_bound, centre)
    lo, hi, findex, mu = _box_bounds(0, 0, 0, n, none, mu_c, guess, new_bound, current)
    z = np.zeros(n)
    if warm:
        _matched_impulses(z, 0, match, prev_normal, prev_tangent)
    height = row_heights(P, gravity, 0, 3)
    ok, w, dvel, code, stats = _pgs_matrix_free(ip, ix, H, W_blocks, q, np.full(n, cfm), lo, hi, findex, mu, z, sweeps, 10,
                                                tol, tol_w, NORMWISE_FLOOR, True, height)
    outcome = SOLVED if ok else DECLINED
    for i in range(n):
        if not np.isfinite(z[i]):
            outcome = DECLINED
    if not stats[2] <= np.inf:      # a NaN residual: not usable (the certify stage raises)
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
        contact_gain = kinetic_gain(blk_ptr, blk_cols, M_blocks.reshape(-1), v_next, v_free.copy(), passive)
        advance_state(dof_start, v_next, lin, ang, pos, quat, h)
        if position_stage and nc:
            # no sink window in fixed-budget mode (mechanics/rows.py position_targets_window)
            c, deep = position_targets_window(rows_times(ip[:nc + 1], ix[:nnz], dv[0], v_next), phi, h, slop,
                                              position_zeta, 0.0)
            if deep:
                p = np.zeros(nc)
                ok2, _, dx, _, _ = _pgs_matrix_free(ip[:nc + 1], ix[:nnz], dv[0], W_blocks, c, np.full(nc, 1e-9),
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
