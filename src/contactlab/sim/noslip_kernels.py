"""The no-slip step compiled end to end: build -> solve -> certify -> recover -> integrate -> joint
projection in one call (drumwright Sec. VI, eq. 45-57; Alg. 1 and 2).

A jointed robot's no-slip step on the general stages (:class:`contactlab.sim.stages.Stages`) is a
fixed chain of compiled kernels called one by one from Python, with a dozen Python objects built
between them (the ConstraintSystem and its CSR wrappers, the factored LCP, the Solution, the
StepResult). :func:`noslip_step` runs the same kernels in the same order on the same arrays in one
call, so a step gives the same bits either way (tests/sim/test_noslip_stages.py compares the state,
the records and the answers of both paths step by step):

1. e0, the energy before the step (:func:`contactlab.kernels.energy.energies`);
2. the system's terms (:func:`contactlab.mechanics.terms.system_terms`: mass blocks, free velocity,
   contact rows N, S, T with the normal bias, joint rows J, L, A), the CSR arrays the general path
   wraps in its ConstraintSystem taken as they are;
3. the no-slip reduction (:func:`contactlab.kernels.metric_chain.noslip_system_chain`: M's block
   factor, FIND-INDICES and the null space in one Householder QR in the M metric, the factored LCP
   (N Z, I, Z' p) of eq. 57);
4. ``solve()``'s work on that factored LCP with ``ppm``: its TRIVIAL test (n = 0 or q >= 0),
   else :func:`contactlab.kernels.factored.ppm_dense` (Theorem 1's decision, the pivoting or the
   routed Dantzig, and the certification of z on the factored problem, computed apart from the
   pivoting by the library's residual kernel); the certification decides as ``solve()`` does
   (relative residual within max(certify, tol), the absolute numbers finite);
5. recovery of v+ and the joint and tangential impulses
   (:func:`contactlab.kernels.metric_chain.recover_metric_step`), the contact modes, the kinetic
   energy the impulses added, x += h v+ (:func:`contactlab.mechanics.integrate.advance_state`);
6. the position correction's deep test (:func:`contactlab.mechanics.rows.position_targets`), the
   joint projection (:func:`contactlab.mechanics.joint_projection.project_joints_kernel`) or the
   joint error, and the energies and deepest overlap after the step.

A step changes nothing unless its answer is applied as the general path would apply it: where
the step has motors (their active set solves several LCPs, models/noslip.py ``build``: the stages
call :func:`noslip_motor_step` for it instead, the same kernels with that active set), the
reduction fails (a non-finite input, M not positive definite, every coordinate fixed), ppm leaves
Theorem 1's decision to the general path or its answer does not certify, the call returns
:data:`DECLINED` before any state is touched and the general stages take the step (fallbacks,
errors and all) on the same contacts. A certified step with a deep contact returns :data:`DEEP`
after the integration: the simulator runs its position correction (box-qp, Python) and the joint
projection.
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.clock import perf_counter
from ..kernels.energy import energies, energies_and_depth
from ..kernels.factored import THEOREM1_UNCLEAR, ppm_dense, factored_certify
from ..kernels.mass_factor import mass_factor
from ..kernels.metric_chain import (csr_rows_into, noslip_metric_chain, noslip_system_chain, recover_metric_kernel,
                                    recover_metric_step)
from ..kernels.motor_set import motor_force, motor_impulses, motor_rows, motor_start, motor_violations
from ..kernels.pivoting import SOLVED as _PPM_SOLVED
from ..mechanics.bodies import kinetic_gain
from ..mechanics.integrate import advance_state
from ..mechanics.joint_kernels import joint_torque_kernel
from ..mechanics.joint_projection import joint_error_kernel, project_joints_kernel
from ..mechanics.rows import position_targets_window, rows_times
from ..mechanics.terms import system_terms
from ..models.common import MODE_IMPULSE_TOL, MODE_SPEED_TOL, _modes_of_rows

# outcome codes of noslip_step
DECLINED = 0     # nothing changed: the general stages take the step
DONE = 1         # the certified answer applied, the joints projected
DEEP = 2         # applied and integrated; the position correction and the joint projection are the caller's

#: the fields of the compiled jointed steps' ``body`` argument, the model's fixed arrays as one tuple
#: gathered once per plan (sim/noslip_stages.py ``CompiledJointCall.joint_layout``): the live bodies,
#: each body's first dof, kinds, masses, inertias and their inverses, gravity, M^-1's block pattern
#: (columns, row pointers) and ``passive`` (1 on the dofs whose kinetic energy the impulses' gain counts)
BODY = ("live", "dof_start", "kind", "mass", "inertia", "inv_inertia", "gravity", "blk_cols", "blk_ptr", "passive")
#: the fields of their ``motion`` argument, the state's arrays (written in place by the integration)
MOTION = ("quaternion", "position", "linear_velocity", "angular_velocity", "planar_reference")


@jit
def any_force_limited(motor_target, motor_max_force) -> bool:
    """Whether a joint has a motor (target not NaN) with a finite force limit: models/noslip.py
    ``build`` solves such motors' active set, which the compiled step declines (one pass, not the
    four array operations of its numpy form)."""
    for i in range(motor_target.size):
        if not np.isnan(motor_target[i]) and np.isfinite(motor_max_force[i]):
            return True
    return False


@jit
def call_inputs(idx, tau, kind, a, b, anchor_b, axis_a, dof_start, position, quaternion, ndof, packed_target,
                packed_max_force, state_target, state_max_force):
    """The compiled step's joint inputs in one call: the joint torques' generalized force
    (:func:`contactlab.mechanics.joint_kernels.joint_torque_kernel` on the torques ``tau`` at joints
    ``idx``, as :func:`contactlab.mechanics.system.joint_torque_forces`), the motor targets and force
    limits (:func:`contactlab.mechanics.system.motor_state`: the state's ``state_target`` /
    ``state_max_force`` over the packed joints' where it has them; empty where it has none) and
    :func:`any_force_limited` of them. Returns (f, motor targets, force limits, limited)."""
    f = joint_torque_kernel(idx, tau, kind, a, b, anchor_b, axis_a, dof_start, position, quaternion, ndof)
    mt = packed_target.copy()
    mf = packed_max_force.copy()
    k = min(mt.size, state_target.size)
    mt[:k] = state_target[:k]
    mf[:k] = state_max_force[:k]
    return f, mt, mf, any_force_limited(mt, mf)


@jit
def _identity(d):
    eye = np.zeros((d, d))
    for i in range(d):
        eye[i, i] = 1.0
    return eye


@jit
def certified_ppm(UZ, Zp, offset, q, cfm, n, max_it, threshold, z, numbers, counts, nonbasic):
    """The compiled no-slip steps' solve of the reduced LCP (drumwright Alg. 1 on the factored M =
    UZ UZ' + cfm I, as ``solve(problem, "ppm")`` runs it): the TRIVIAL test (q >= 0, no NaN: z = 0,
    certified), else ppm_dense; ``ok`` only where ppm SOLVED under Theorem 1 and the certified
    residual is within ``threshold`` (solve()'s test). ``z``, ``numbers``, ``counts``, ``nonbasic``:
    the caller's defaults, returned where the trivial case leaves them. Returns (ok, trivial, case,
    code, z, w, numbers, counts, nonbasic, positive, row0, the solve's seconds as solve() times them)."""
    eye = _identity(UZ.shape[1])
    trivial = n == 0
    if not trivial:
        qmin = q[0]
        for i in range(1, n):
            qmin = min(qmin, q[i])
        trivial = qmin >= 0.0       # float(q.min()) >= 0: a NaN in q fails it (min keeps the first NaN)
        for i in range(n):
            if q[i] != q[i]:
                trivial = False
    case, code, row0, positive = THEOREM1_UNCLEAR, 0, 0, 0
    ok = True
    t_solve = perf_counter()            # the solver's seconds (StepRecord.solve_time), as solve() is timed
    if trivial:
        w, numbers = factored_certify(UZ, eye, Zp, offset, cfm, q, z)
        relative = 0.0
    else:
        case, code, _k, z, w, numbers, counts, nonbasic, positive, row0, _y = ppm_dense(
            UZ, eye, Zp, offset, q, cfm, 10 * n + 100 if max_it < 0 else max_it)
        ok = case != THEOREM1_UNCLEAR and code == _PPM_SOLVED and numbers[3] == numbers[3] \
            and numbers[5] == numbers[5]
        relative = max(numbers[3], numbers[5])
    t_solve = perf_counter() - t_solve
    ok = ok and relative <= threshold and numbers[0] < np.inf and numbers[2] < np.inf
    return ok, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, t_solve


@jit
def jointed_terms(body, motion, gyroscopic, f, contact, zeta_c, slop, joints, motor_target, motor_max_force, h,
                  zeta_j):
    """The front the compiled jointed steps share (:func:`noslip_step`, sim/st_kernels.py ``st_step``,
    sim/box_joint_kernels.py ``box_schur_step``), as the general stages compute it (sim/stages.py
    ``build``): e0, the energy before the step, and the system's terms
    (:func:`contactlab.mechanics.terms.system_terms`; ``f``, the joint torques' generalized force,
    gets the bodies' forces added in place). ``body``: the model's fixed arrays (:data:`BODY`),
    ``motion``: the state's (:data:`MOTION`), ``contact``: (a, b, point, normal, t1, t2, phi). Returns (e0, M's blocks, M^-1's blocks, v, v_free = v + h
    M^-1 f, the contact rows' data (N, S, T) on the pattern (Np, Ni), the normal bias, the joint rows
    J (data, indices, indptr) with their right-hand sides, the limit rows L with their bias, the motor
    rows A with their targets and force limits)."""
    live, dof_start, _kind, mass, inertia, inv_inertia, gravity, _cols, _ptr, _passive = body
    quaternion, position, linear_velocity, angular_velocity, planar_reference = motion
    a, b, point, normal, t1, t2, phi = contact
    ke0, pe0 = energies(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity, position, gravity)
    e0 = 0.0 + ke0 + pe0        # sum((ke, pe)) of the general path
    body, v_free, contact, jrows = system_terms(
        live, dof_start, quaternion, position, mass, inertia, inv_inertia, gravity, linear_velocity, angular_velocity,
        gyroscopic, f, True, a, b, point, normal, t1, t2, phi, zeta_c, slop, joints, motor_target, motor_max_force,
        planar_reference, h, zeta_j)
    M_blocks, W_blocks, v = body
    dv, ix, ip, n_bias = contact
    (Jm, j_rhs, j_err, j_lab), (Lm, l_bias, l_lab), (Am, a_target, a_max, a_lab) = jrows
    nc = phi.shape[0]
    Np, Ni = ip[:nc + 1], ix[:dv.shape[1]]
    return e0, M_blocks, W_blocks, v, v_free, dv, Np, Ni, n_bias, Jm, j_rhs, Lm, l_bias, Am, a_target, a_max


@jit
def declined(n, nl, e0, v, v_free):
    """:func:`noslip_step`'s tuple for DECLINED (nothing changed: e0, v and v_free of the terms formed),
    its z = 0 (n,), empty w, zero certificate numbers and counts the defaults the solve starts from."""
    return (DECLINED, False, THEOREM1_UNCLEAR, 0, np.zeros(n), np.zeros(0), (0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
            np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64), 0, 0, e0, 0.0, 0.0, 0.0, 0.0, 0.0, v, np.zeros(0),
            np.zeros((0, 2)), np.zeros(0, dtype=np.int8), nl, 0, 0, v_free, 0.0)


@jit
def noslip_step(body, ndof, kinematic, gyroscopic, motion, f, contact, zeta_c, slop, joints, motor_target,
                motor_max_force, h, zeta_j, active_gap, tol, cfm, max_it, threshold, position_stage, position_zeta,
                project, proj_tol, proj_max_iter):
    """One no-slip step of a scene whose moving bodies are free 6-dof bodies (their blocks cover every
    coordinate) joined by joints (module docstring). ``body``: the model's fixed arrays (:data:`BODY`;
    its ``passive``: 1 on the dofs whose kinetic energy counts); ``motion``: the state's arrays
    (:data:`MOTION`, written in place); ``contact``: (a, b, point, normal, t1, t2, phi). ``f``: the
    joint torques' generalized force (written: the bodies' forces are added in place, as
    ``build_system`` does); ``joints``: the packed joints' kernel arguments; ``cfm``: the settings'
    cfm plus the model's; ``threshold``: ``solve()``'s max(certify, tol); ``position_stage``: the settings' contact stabilisation is "position"; ``project``: project the
    joints (else their error is measured).

    ``max_it``: ppm's pivot budget (negative: its default 10 n + 100, n the limit and contact rows).

    Returns (outcome, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, e0, gain,
    ke, pe, pen, joint_error, v_next, joint, tangent, modes, nl, kept rows, d, v_free, solve seconds):
    ``case``, ``code``... ``row0`` as
    :func:`~contactlab.kernels.factored.ppm_dense` returns them (``trivial``: z = 0 solved it, no
    pivot), z = [limit impulses; normal impulses], ``joint`` the J rows' impulses, ``tangent``
    (nc, 2), ``modes`` (nc,) int8, d the reduced coordinates (ppm's ``rank_bound``), v_free
    = v + h M^-1 f, the solve's seconds those of the TRIVIAL test or ppm_dense with its certification
    (what ``solve()`` times); ke, pe, pen and joint_error are set for DONE only."""
    phi, blk_cols, blk_ptr = contact[6], body[7], body[8]
    nc = phi.shape[0]
    e0, M_blocks, W_blocks, v, v_free, dv, Np, Ni, n_bias, Jm, j_rhs, Lm, l_bias, Am, a_target, a_max = jointed_terms(
        body, motion, gyroscopic, f, contact, zeta_c, slop, joints, motor_target, motor_max_force, h, zeta_j)
    nl = l_bias.shape[0]
    n = nl + nc
    none = declined(n, nl, e0, v, v_free)
    z, numbers, counts, nonbasic = none[4], none[6], none[7], none[8]
    if a_target.shape[0]:        # motors: models/noslip.py build's active set over their states
        return none
    touch = np.empty(nc, dtype=np.bool_)
    for i in range(nc):
        touch[i] = phi[i] <= active_gap
    Mx = M_blocks.reshape(-1)
    nb, M, Lmf, starts, U, chain = noslip_system_chain(
        ndof, blk_ptr, blk_cols, Mx, Jm[2], Jm[1], Jm[0], Lm[2], Lm[1], Lm[0], Np, Ni, dv[0], Np, Ni,
        dv[1], Np, Ni, dv[2], touch, v, f, j_rhs, l_bias, n_bias, tol, h)
    status, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack = chain
    d = UZ.shape[1]
    if status != 0 or d == 0:
        return none
    ok, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, t_solve = certified_ppm(
        UZ, Zp, offset, q, cfm, n, max_it, threshold, z, numbers, counts, nonbasic)
    if not ok:
        return none
    nj = j_rhs.shape[0]
    v_next, joint, tangent = recover_metric_step(M, Lmf, starts, nb, Gk, Lg, order, x_p, fpack, ipack, UZ, Zp, p, U,
                                                 z, nj, nc)
    outcome, modes, gain, ke, pe, pen, joint_error = apply_answer(
        Np, Ni, dv, v_next, z[nl:], v_free, Mx, body, kinematic, motion, joints, phi, h, slop, position_stage,
        position_zeta, project, proj_tol, proj_max_iter)
    return (outcome, trivial, case, code, z, w, numbers, counts, nonbasic, positive, row0, e0, gain, ke, pe, pen,
            joint_error, v_next, joint, tangent, modes, nl, Gk.shape[0], d, v_free, t_solve)


@jit
def noslip_motor_step(body, ndof, kinematic, gyroscopic, motion, f, contact, zeta_c, slop, joints, motor_target,
                      motor_max_force, h, zeta_j, active_gap, tol, cfm, max_it, threshold, position_stage,
                      position_zeta, project, proj_tol, proj_max_iter, motor_trials, trial_threshold):
    """:func:`noslip_step` of a step with force-limited velocity motors: models/noslip.py ``build``'s
    active set over the motors' states (:mod:`contactlab.kernels.motor_set`), then the stages' solve
    of the last state's problem, its certification and recovery, in one call. As the general path
    runs it: the system's rows scattered into dense arrays (U = [L; N], the touching contacts' S_i,
    T_i interleaved, M, J, A), M's block factor, the first state saturated toward the targets
    (:func:`~contactlab.kernels.motor_set.motor_start`); per trial (at most ``motor_trials``) the
    state's reduction (:func:`~contactlab.kernels.metric_chain.noslip_metric_chain` on [J; A_free]
    with f plus the saturated motors' forces), ``solve(problem, "ppm")`` with its defaults
    (:func:`certified_ppm`: the pivot budget 10 n + 100, ``trial_threshold`` = solve()'s default
    max(certify, ppm's tol)), the recovery and the state the answer calls for; the search ends at a
    consistent state or one seen before. The last state's problem is then solved as the stages
    solve it (``max_it``, ``threshold``): where the search ended on a solved state with the same
    budget and threshold, that answer is the same call's and is kept rather than computed again.

    Declined (the general stages take the step: a NO_SOLUTION trial's saturation of the free motors,
    the fallbacks, the model's errors) where a motor's force limit is not finite, the reduction
    fails, every coordinate is fixed, or a trial's or the final answer does not certify.

    Returns :func:`noslip_step`'s tuple followed by (the motors' impulses (nm,), trials, whether the
    answer's state is consistent (:func:`~contactlab.kernels.motor_set.motor_violations`), whether
    every motor is saturated): models/noslip.py ``recover``'s StepResult fields; ``joint`` the
    equality rows' impulses (the free motors' multipliers are in the motors' impulses)."""
    phi, blk_cols, blk_ptr = contact[6], body[7], body[8]
    nc = phi.shape[0]
    m = ndof
    e0, M_blocks, W_blocks, v, v_free, dv, Np, Ni, n_bias, Jm, j_rhs, Lm, l_bias, Am, a_target, a_max = jointed_terms(
        body, motion, gyroscopic, f, contact, zeta_c, slop, joints, motor_target, motor_max_force, h, zeta_j)
    nl = l_bias.shape[0]
    nj = j_rhs.shape[0]
    nm = a_target.shape[0]
    n = nl + nc
    none = declined(n, nl, e0, v, v_free) + (np.zeros(0), 0, False, False)
    numbers, counts, nonbasic = none[6], none[7], none[8]
    for i in range(nm):
        if not np.isfinite(a_max[i]):
            return none
    if nm == 0:
        return none
    # models/noslip.py build's dense arrays: U = [L; N], ST (touching contacts), M, J, A
    keep = np.zeros(0, dtype=np.bool_)
    U = np.zeros((nl + nc, m))
    csr_rows_into(Lm[2], Lm[1], Lm[0], U, 0, 1, keep, False)
    csr_rows_into(Np, Ni, dv[0], U, nl, 1, keep, False)
    bias = np.empty(nl + nc)
    bias[:nl] = l_bias
    bias[nl:] = n_bias
    touch = np.empty(nc, dtype=np.bool_)
    for i in range(nc):
        touch[i] = phi[i] <= active_gap
    ST = np.zeros((2 * nc, m))
    csr_rows_into(Np, Ni, dv[1], ST, 0, 2, touch, True)
    csr_rows_into(Np, Ni, dv[2], ST, 1, 2, touch, True)
    M = np.zeros((m, m))
    csr_rows_into(blk_ptr, blk_cols, M_blocks.reshape(-1), M, 0, 1, keep, False)
    J = np.zeros((nj, m))
    csr_rows_into(Jm[2], Jm[1], Jm[0], J, 0, 1, keep, False)
    A = np.zeros((nm, m))
    csr_rows_into(Am[2], Am[1], Am[0], A, 0, 1, keep, False)
    Lmass = np.empty((m, m))
    starts = np.empty(m + 1, dtype=np.int64)
    nb = mass_factor(M, Lmass, starts)
    if nb < 0:
        return none
    # the active set over the motors' states (models/noslip.py build)
    state = motor_start(Am[2], Am[1], Am[0], a_target, v_free)
    seen = np.empty((motor_trials + 1, nm), dtype=np.int8)
    seen[0] = state
    n_seen = 1
    G, rhs = motor_rows(J, A, state, j_rhs, a_target)
    chain = noslip_metric_chain(M, Lmass, starts, nb, G, ST, rhs, tol, v, motor_force(Am[2], Am[1], Am[0], state,
                                                                                   a_max, h, f), h, U, bias)
    if chain[0] != 0 or chain[7].shape[1] == 0:
        return none
    trials = 0
    solved = False      # the last state's problem solved by the search
    for trial in range(1, motor_trials + 1):
        st, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack = chain
        ok, trivial, case, code, zs, ws, nums, cnts, nonb, positive, row0, t_solve = certified_ppm(
            UZ, Zp, offset, q, cfm, n, -1, trial_threshold, np.zeros(n), numbers, counts, nonbasic)
        if not ok:      # a NO_SOLUTION trial, an uncertified answer: the general path's
            return none
        rec = recover_metric_kernel(M, Lmass, starts, nb, Gk, Lg, order, x_p, fpack, ipack, UZ, Zp, p, U, zs,
                                    G.shape[0], nc)
        new = motor_violations(Am[2], Am[1], Am[0], a_target, a_max, state, rec[0],
                               motor_impulses(state, a_max, rec[2], nj), 1e-9)
        trials = trial
        again = False
        for s in range(n_seen):
            same = True
            for i in range(nm):
                if seen[s, i] != new[i]:
                    same = False
                    break
            if same:
                again = True
                break
        if again:       # consistent (new is state) or a state seen before
            solved = True
            break
        seen[n_seen] = new
        n_seen += 1
        state = new
        G, rhs = motor_rows(J, A, state, j_rhs, a_target)
        chain = noslip_metric_chain(M, Lmass, starts, nb, G, ST, rhs, tol, v,
                                    motor_force(Am[2], Am[1], Am[0], state, a_max, h, f), h, U, bias)
        if chain[0] != 0 or chain[7].shape[1] == 0:
            return none
    st, kept, order, p, Lg, Gk, x_p, UZ, Zp, offset, q, fpack, ipack = chain
    d = UZ.shape[1]
    if not (solved and max_it < 0 and threshold == trial_threshold):   # the stages' solve of the last state
        ok, trivial, case, code, zs, ws, nums, cnts, nonb, positive, row0, t_solve = certified_ppm(
            UZ, Zp, offset, q, cfm, n, max_it, threshold, np.zeros(n), numbers, counts, nonbasic)
        if not ok:
            return none
        rec = recover_metric_kernel(M, Lmass, starts, nb, Gk, Lg, order, x_p, fpack, ipack, UZ, Zp, p, U, zs,
                                    G.shape[0], nc)
    v_next, _lam, joint_all, ts, tt, _uv = rec
    motor = motor_impulses(state, a_max, joint_all, nj)
    new = motor_violations(Am[2], Am[1], Am[0], a_target, a_max, state, v_next, motor, 1e-9)
    consistent = True
    saturated = True
    for i in range(nm):
        consistent = consistent and new[i] == state[i]
        saturated = saturated and state[i] != 0
    tangent = np.empty((nc, 2))
    for i in range(nc):
        tangent[i, 0] = ts[i]
        tangent[i, 1] = tt[i]
    Mx = M_blocks.reshape(-1)
    outcome, modes, gain, ke, pe, pen, joint_error = apply_answer(
        Np, Ni, dv, v_next, zs[nl:], v_free, Mx, body, kinematic, motion, joints, phi, h, slop, position_stage,
        position_zeta, project, proj_tol, proj_max_iter)
    return (outcome, trivial, case, code, zs, ws, nums, cnts, nonb, positive, row0, e0, gain, ke, pe, pen,
            joint_error, v_next, joint_all[:nj].copy(), tangent, modes, nl, Gk.shape[0], d, v_free, t_solve, motor,
            trials, consistent, saturated)


@jit
def apply_answer(Np, Ni, dv, v_next, normal_z, v_free, Mx, body, kinematic, motion, joints, phi, h, slop,
                 position_stage, position_zeta, project, proj_tol, proj_max_iter):
    """A jointed step's certified answer applied as the general stages apply it (sim/stages.py
    ``integrate``), after its v+ and contact impulses (``normal_z``) are known: the contact modes
    (contact rows N, S, T: ``dv`` on the pattern ``Np``, ``Ni``), the kinetic energy the impulses added
    (M's blocks ``Mx``; ``passive``: 1 on the dofs counted), x += h v+, the position correction's deep
    test, the joint projection (or the joint error), the energies and deepest overlap after the step.
    Returns (DONE or DEEP, modes, gain, ke, pe, pen, joint_error); DEEP (a deep contact: the caller
    corrects positions and projects the joints) with ke, pe, pen and joint_error 0."""
    _live, dof_start, kind, mass, inertia, inv_inertia, gravity, blk_cols, blk_ptr, passive = body
    quaternion, position, linear_velocity, angular_velocity, planar_reference = motion
    nc = phi.shape[0]
    if nc:
        modes = _modes_of_rows(Np, Ni, dv[1], dv[2], v_next, normal_z, MODE_IMPULSE_TOL, MODE_SPEED_TOL)
    else:
        modes = np.zeros(0, dtype=np.int8)
    gain = kinetic_gain(blk_ptr, blk_cols, Mx, v_next, v_free, passive)
    advance_state(dof_start, v_next, linear_velocity, angular_velocity, position, quaternion, h)
    if position_stage and nc:
        # no sink window (mechanics/rows.py position_targets_window): the restoration is the free-body steps'
        c, deep = position_targets_window(rows_times(Np, Ni, dv[0], v_next), phi, h, slop, position_zeta, 0.0)
        if deep:
            return DEEP, modes, gain, 0.0, 0.0, 0.0, 0.0
    if project:
        joint_error = project_joints_kernel(joints, dof_start, kind, kinematic, mass, inv_inertia, position,
                                            quaternion, linear_velocity, angular_velocity, planar_reference,
                                            proj_tol, proj_max_iter)
    else:
        joint_error = joint_error_kernel(joints, dof_start, position, quaternion, linear_velocity, angular_velocity,
                                         planar_reference)
    ke, pe, pen = energies_and_depth(dof_start, mass, inertia, quaternion, linear_velocity, angular_velocity,
                                     position, gravity, phi)
    return DONE, modes, gain, ke, pe, pen, joint_error
