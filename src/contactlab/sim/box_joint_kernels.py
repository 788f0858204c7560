"""The box-friction step of a jointed scene with its joints eliminated (``joints="schur"``), in one
compiled call (:func:`box_schur_step`; :class:`contactlab.sim.box_joint_stages.CompiledSchurRowStages`
plans and applies it).

The general stages take such a step in Python around scipy.sparse and LAPACK
(models/box_friction.py ``build`` and ``recover`` with ``joints="schur"``): the rows
H = [A; L; N; S; T] and J, the Schur complement of the joint rows (arechavaleta eq. 15)
M = H P H' + cfm I with P = W - W J' (J W J')^-1 J W, q = H v_free - rhs - H W J' (J W J')^-1
(J v_free - j_rhs), the bounds of eq. 16-17, ``solve()`` with pgs-sm (kernels/pgs_sm.py
``pgs_sm_dense_run``) and its certificate on that boxed LCP (kernels/residual.py
``boxed_certify_dense``, the library's scale-free residual), then the joint impulses
c_j = -(J W J')^-1 (J W H' z + J v_free - j_rhs) and v+ = v_free + W (H' z + J' c_j).

Here the same formulas run on the kernels the Stewart-Trinkle compiled step uses for its joint
rows (:mod:`contactlab.kernels.joint_rows`): the kinematic bodies' velocity rows eliminated first
(``pin_rows``: a pinned body's velocity is known, exact in exact arithmetic), A = J W J' = L L' with
its SPD test and rank margin (``spd_reduce``, the envelope Cholesky and Y = L^-1 C, C = J W H'),
so that M = B - Y'Y + cfm I and q = r_H - rhs - Y' (L^-1 g) (drumwright eq. 8-10 with the same
matrices as the general path's H P H'); then pgs-sm's compiled solver call with the method's
options, ``solve()``'s triviality test and certificate, the recovery and the integration of
:func:`contactlab.sim.st_kernels.st_step`. What differs from the general path is rounding only
(the order of the sums of the Schur complement and of the recovery: LAPACK's against these loops).

The call declines (nothing changed; the general stages take the step) where the general path
would take another branch or its answer would not be certified: no joint row left after the
pins, A not SPD within ``spd_reduce``'s margin, a problem z = 0 solves (solve()'s TRIVIAL), a
pgs-sm run that ends other than converged (the Python loop's LU / least-squares continuation, an
iteration cap, a non-finite value), or an answer whose relative residual is above ``threshold``.
"""
from __future__ import annotations

import numpy as np

from ..collision.boxes.packed import unpack_contacts
from ..kernels._jit import jit
from ..kernels.dense import csr_times
from ..kernels.joint_rows import add_gram, joint_impulses, kept_rows, pin_rows, recover_joint_rows, spd_reduce, stack_csr
from ..kernels.pgs import CONVERGED
from ..kernels.pgs_sm import pgs_sm_dense_run
from ..kernels.residual import boxed_certify_dense, boxed_zero_solves
from ..mechanics.delassus import delassus_dense
from ..models.box_friction import box_bounds, matched_impulses
from .noslip_kernels import DECLINED, DEEP, DONE, apply_answer, jointed_terms   # the shared front and tail
from .faults import NOT_JUDGED, step_checks


@jit
def _no_answer():
    e = np.zeros(0)
    return (False, 0, e, e, e, np.zeros(6), np.zeros(6), e, np.zeros((0, 2)), 0)


@jit
def schur_box_problem(Jp, Ji, Jd, j_rhs, Hp, Hi, Hd, rhs, Wb, v_free, ndof, kin, cfm):
    """The boxed LCP's matrix and vector of the rows H (CSR, [A; L; N; S; T]) with the joint rows
    J (CSR, right-hand sides ``j_rhs``) eliminated (models/box_friction.py ``build`` with
    ``joints="schur"``, arechavaleta eq. 15): M = H P H' + cfm I, q = H v0 - rhs - H W J' A^-1 g with
    A = J W J', g = J v0 - j_rhs, W the body blocks ``Wb``, the kinematic bodies' (``kin``) velocity
    rows eliminated first (kernels/joint_rows.py ``pin_rows``: their velocity enters v0 and their blocks of W
    are zero). Returns (ok, M, q, Linv, Y, yg, v0, Rp, Ri, Rd, nj, elim, keep, held, vkin, v0 before
    the pins); ok False (the general path's other branches) where a kinematic body is not pinned
    by one row a dof, no joint row is left, or A is not SPD within ``spd_reduce``'s margin."""
    n = rhs.shape[0]
    elim, keep, vkin, held = pin_rows(Jp, Ji, Jd, j_rhs, kin, ndof)
    Wd = Wb.copy()
    if elim:
        Jp, Ji, Jd, j_rhs = kept_rows(Jp, Ji, Jd, j_rhs, keep)
        for b in kin:
            Wd[b] = 0.0
    nj = j_rhs.shape[0]
    Rp, Ri, Rd = stack_csr((Jp, Hp), (Ji, Hi), (Jd, Hd), (nj, n))
    v0 = v_free.copy()
    if elim:
        for i in range(ndof):
            if held[i]:
                v0[i] = vkin[i]
    M = np.zeros((n, n))
    q = np.zeros(n)
    Linv, Y, yg = np.zeros((0, 0)), np.zeros((0, n)), np.zeros(0)
    if nj == 0:
        return False, M, q, Linv, Y, yg, v0, Rp, Ri, Rd, nj, elim, keep, held, vkin
    rows = nj + n
    G = delassus_dense(Rp, Ri, Rd, Wd, rows, np.zeros(rows))
    r = csr_times(Rp, Ri, Rd, v0)
    g = np.empty(nj)
    for i in range(nj):
        g[i] = r[i] - j_rhs[i]
    ok, Linv, Y, yg = spd_reduce(np.ascontiguousarray(G[:nj, :nj]), np.ascontiguousarray(G[:nj, nj:]), g)
    if not ok:
        return False, M, q, Linv, Y, yg, v0, Rp, Ri, Rd, nj, elim, keep, held, vkin
    for i in range(n):
        for j in range(n):
            M[i, j] = G[nj + i, nj + j]
        q[i] = r[nj + i] - rhs[i]
    add_gram(M, Y, -1.0)        # M -= Y'Y
    for k in range(nj):         # q -= Y' yg
        ygk = yg[k]
        for i in range(n):
            yki = Y[k, i]
            if yki != 0.0:
                q[i] -= yki * ygk
    for i in range(n):
        M[i, i] += cfm
    return True, M, q, Linv, Y, yg, v0, Rp, Ri, Rd, nj, elim, keep, held, vkin


@jit
def schur_recover(Linv, Y, yg, z, v0, Rp, Ri, Rd, nj, Mip, Mii, Mid, ndof, elim, keep, held, vkin, v_free, Wb, kin,
                  Jp_all, Ji_all, Jd_all):
    """The joint impulses and v+ of the eliminated problem's answer z (models/box_friction.py
    ``recover`` with ``joints="schur"``): x = -A^-1 (C z + g) = -L^-T (Y z + yg) on the kept joint
    rows, v+ = v0 + W (H' z + J' x) (a pinned body's v+ its prescribed velocity), and each pinned
    row's impulse from its body's momentum balance W_b^-1 (v_b - v_free_b) - (H' z + J' x)_b (the
    whole J's impulses returned, in its row order). Returns (x_all, v_next)."""
    x = joint_impulses(Linv, Y, yg, z)
    return recover_joint_rows(z, x, v0, v_free, Rp, Ri, Rd, nj, Mip, Mii, Mid, ndof, elim, keep, held, vkin, Wb, kin,
                              Jp_all, Ji_all, Jd_all)


@jit
def box_solve_certified(M, q, a_max, mu_c, guess, nm, nl, nc, new_bound, current, warm, prev_motor, prev_limit,
                        prev_normal, prev_tangent, match, params, threshold):
    """The boxed LCP (M, q) of rows [A; L; N; S; T] solved as ``solve(problem, "pgs-sm")`` solves it:
    the model's bounds (models/box_friction.py ``box_bounds``), solve()'s TRIVIAL test, the warm
    start (models/box_friction.py ``warm_start``: the motors' and limits' impulses where their counts
    are unchanged, each contact's from its ``match``), pgs-sm (kernels/pgs_sm.py
    ``pgs_sm_dense_run``) and solve()'s certificate (kernels/residual.py ``boxed_certify_dense``:
    relative residual at most ``threshold``). Returns (ok, code, z, w, numbers, stats); ok False where
    solve() would take another branch (trivial, not converged, not certified, a non-finite start).
    The problem's one solve, shared by :func:`schur_box_solve` (the maximal coordinates' Schur
    complement) and sim/tree_box_kernels.py ``tree_box_step`` (the joint coordinates')."""
    n = q.shape[0]
    o_l = nm
    o_n = nm + nl
    e = np.zeros(0)
    z = np.zeros(n)
    lo, hi, findex, mu = box_bounds(0, o_l, o_n, n, a_max, mu_c, guess, new_bound, current)
    if boxed_zero_solves(q, lo, hi, findex):    # solve()'s TRIVIAL answer
        return False, 0, z, e, np.zeros(6), np.zeros(6)
    if warm:
        if prev_motor.shape[0] == nm:
            for i in range(nm):
                z[i] = prev_motor[i]
        if prev_limit.shape[0] == nl:
            for i in range(nl):
                z[o_l + i] = prev_limit[i]
        matched_impulses(z, o_n, match, prev_normal, prev_tangent)
        for i in range(n):
            if not np.isfinite(z[i]):       # solve()'s ParamError
                return False, 0, z, e, np.zeros(6), np.zeros(6)
    wk = np.empty(n)
    stats = np.zeros(6)
    code = pgs_sm_dense_run(M, q, lo, hi, findex, mu, z, wk, params, stats)
    if code != CONVERGED:
        return False, code, z, e, np.zeros(6), stats
    w, nat, comp, infeas, rn, rc, ri = boxed_certify_dense(M, q, lo, hi, findex, mu, z)
    numbers = np.array((nat, comp, infeas, rn, rc, ri))
    rel = rn if rn > ri else ri
    if not (rel <= threshold and nat < np.inf and infeas < np.inf):
        return False, code, z, w, numbers, stats
    return True, code, z, w, numbers, stats


@jit
def schur_box_solve(Jp, Ji, Jd, j_rhs, Ap, Ai, Ad, a_target, a_max, Lp, Li, Ld, l_bias, Np, Ni, Nd, Sd, Td, n_bias,
                    mu_c, guess, new_bound, current, cfm, Wb, Mip, Mii, Mid, v_free, ndof, kin, warm, prev_motor,
                    prev_limit, prev_normal, prev_tangent, match, params, threshold):
    """Build, solve, certify and recover the box-friction problem of a step with its joints
    eliminated (module docstring). Rows as CSR arrays (indptr, indices, data): joints J with
    ``j_rhs``, motors A with ``a_target`` and ``a_max``, limits L with ``l_bias``, contact normals N
    with ``n_bias`` and the tangent rows S, T on N's pattern (data ``Sd``, ``Td``); ``mu_c`` and
    ``guess`` (the matched previous normal impulse) per contact, ``new_bound`` and ``current`` the
    model's bound options (models/box_friction.py ``box_bounds``); ``cfm`` the model's plus the
    settings'; the body blocks ``Wb`` and M^-1 as CSR. ``warm``: start from the previous answer
    (models/box_friction.py ``warm_start``: the motors' and limits' impulses where their counts
    are unchanged, each contact's from its ``match``), else from zero. ``params``: pgs-sm's
    parameter array (solvers/pgs_sm.py ``_params``); ``threshold``: solve()'s max(certify, tol).
    Returns (ok, code, z, w, x, numbers (the six of solve()'s certificate), stats (pgs-sm's), v_next,
    tangent impulses (nc, 2), n); ok False: declined."""
    nm, nl, nc = a_target.shape[0], l_bias.shape[0], n_bias.shape[0]
    o_l = nm
    o_n = nm + nl
    n = o_n + 3 * nc
    if j_rhs.shape[0] == 0 or n == 0:
        return _no_answer()
    Sp = Np
    Hp, Hi, Hd = stack_csr((Ap, Lp, Np, Sp, Sp), (Ai, Li, Ni, Ni, Ni), (Ad, Ld, Nd, Sd, Td), (nm, nl, nc, nc, nc))
    rhs = np.zeros(n)
    for i in range(nm):
        rhs[i] = a_target[i]
    for i in range(nl):
        rhs[o_l + i] = -l_bias[i]
    for i in range(nc):
        rhs[o_n + i] = -n_bias[i]
    ok, M, q, Linv, Y, yg, v0, Rp, Ri, Rd, nj, elim, keep, held, vkin = schur_box_problem(
        Jp, Ji, Jd, j_rhs, Hp, Hi, Hd, rhs, Wb, v_free, ndof, kin, cfm)
    if not ok:
        return _no_answer()
    ok, code, z, w, numbers, stats = box_solve_certified(M, q, a_max, mu_c, guess, nm, nl, nc, new_bound, current,
                                                         warm, prev_motor, prev_limit, prev_normal, prev_tangent,
                                                         match, params, threshold)
    if not ok:      # solve()'s other branches: the general path's
        return _no_answer()
    x, v_next = schur_recover(Linv, Y, yg, z, v0, Rp, Ri, Rd, nj, Mip, Mii, Mid, ndof, elim, keep, held, vkin,
                              v_free, Wb, kin, Jp, Ji, Jd)
    tangent = np.empty((nc, 2))
    for c in range(nc):
        tangent[c, 0] = z[o_n + nc + c]
        tangent[c, 1] = z[o_n + 2 * nc + c]
    return True, code, z, w, x, numbers, stats, v_next, tangent, n


@jit
def box_schur_step(body, ndof, kinematic, gyroscopic, motion, f, contact_floats, contact_ints, zeta_c, slop, joints,
                   motor_target, motor_max_force, h, zeta_j, cfm, new_bound, current, kin, warm, prev_motor,
                   prev_limit, prev_normal, prev_tangent, params, threshold, position_stage, position_zeta, project,
                   proj_tol, proj_max_iter, radius, judge):
    """One box-friction step (``joints="schur"``, pgs-sm) of a jointed scene whose body blocks cover
    every coordinate, from the state to the projected joints, in the general stages' order
    (sim/st_kernels.py ``st_step`` is the Stewart-Trinkle counterpart, the same steps around
    another problem): e0; the system's terms (:func:`contactlab.mechanics.terms.system_terms`);
    :func:`schur_box_solve`; the contact modes, the kinetic energy the impulses added
    (``body``'s ``passive``: 1 on the dofs counted), x += h v+; the position correction's deep test,
    the joint projection (or the joint error), the energies and deepest overlap after the step.
    ``body``, ``motion``: the model's fixed arrays and the state's
    (sim/noslip_kernels.py ``BODY``, ``MOTION``; the state's written in place); ``f``: the joint
    torques' generalized force (the bodies' forces are added in place).

    The per-step checks whose inputs are the call's own are formed here for a DONE step, whose state
    is final (a DEEP step's corrections after the call move the bodies: the checks are then formed
    after them), as sim/box_kernels.py ``box_friction_step`` forms them for free bodies: the correct
    stage's turn bound (:func:`contactlab.sim.turns.turn_bound` of the contacts' bodies on ``radius``,
    one per body; empty: none formed) and the plausibility verdict of
    :func:`contactlab.sim.faults.step_fault` (:func:`contactlab.sim.faults.plausibility`) on the inputs
    that function gives it for a step whose system is deferred and whose free motion is the call's
    v_free (split per body, :func:`contactlab.sim.faults.split_velocity`): ``judge`` = (x0, v0, w0, the
    state before the call; kind (int64), jointed, total mass: :func:`contactlab.sim.faults.fault_statics`;
    the previous joint error, the motors' targets, whether anything drives the scene), the depth
    max(pen, 0) and the record's energies (:func:`contactlab.sim.faults.step_checks`, which the
    joint-space call, sim/tree_box_kernels.py ``tree_box_step``, forms the same way). Python takes the verdict only where those inputs
    are still what it would pass (:func:`contactlab.sim.faults.judged_verdict`).

    Returns (outcome, schur_box_solve's ten values, modes, e0, gain, ke, pe, pen, joint_error,
    v_free, nl, a_max, turn bound, verdict, judged motion): DECLINED before any state is touched; DEEP
    after the integration where a contact is deep (the caller corrects positions and projects the
    joints); ke, pe, pen, joint_error, the turn bound and the verdict (code NOT_JUDGED otherwise)
    set for DONE only; the judged motion [x0 | v0 | w0 | x1 | v1 | w1 | motors] flat (empty where
    not judged)."""
    point, normal, t1, t2, phi, mu, guess, a, b, _sa, _sb, match = unpack_contacts(contact_floats, contact_ints)
    e0, M_blocks, W_blocks, v, v_free, dv, Np, Ni, n_bias, Jm, j_rhs, Lm, l_bias, Am, a_target, a_max = jointed_terms(
        body, motion, gyroscopic, f, (a, b, point, normal, t1, t2, phi), zeta_c, slop, joints, motor_target,
        motor_max_force, h, zeta_j)
    blk_cols, blk_ptr = body[7], body[8]
    nc = phi.shape[0]
    nl = l_bias.shape[0]
    i64 = np.int64
    out = schur_box_solve(Jm[2].astype(i64), Jm[1].astype(i64), Jm[0], j_rhs, Am[2].astype(i64), Am[1].astype(i64),
                          Am[0], a_target, a_max, Lm[2].astype(i64), Lm[1].astype(i64), Lm[0], l_bias, Np, Ni, dv[0],
                          dv[1], dv[2], n_bias, mu, guess, new_bound, current, cfm, W_blocks, blk_ptr, blk_cols,
                          W_blocks.reshape(-1), v_free, ndof, kin, warm, prev_motor, prev_limit, prev_normal,
                          prev_tangent, match, params, threshold)
    ok, code, z, wv, x, numbers, stats, v_next, tangent, n = out
    verdict = (NOT_JUDGED, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if not ok:
        return (DECLINED, out, np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max, 0.0,
                verdict, np.zeros(0))
    o_n = a_target.shape[0] + nl
    outcome, modes, gain, ke, pe, pen, joint_error = apply_answer(
        Np, Ni, dv, v_next, z[o_n:o_n + nc], v_free, M_blocks.reshape(-1), body, kinematic, motion, joints, phi, h,
        slop, position_stage, position_zeta, project, proj_tol, proj_max_iter)
    turn = 0.0
    judged = np.zeros(0)
    dof_start = body[1]
    nb = dof_start.size
    if outcome == DONE and radius.size == nb:
        x0, v0, w0, kind, jointed, total_mass, prev_joint_error, motors, actuated = judge
        turn, verdict, judged = step_checks(dof_start, kind, kinematic, radius, contact_ints, x0, v0, w0, v_free, True,
                                            body[6], motion[1], motion[2], motion[3], h, pen, slop, prev_joint_error,
                                            jointed, motors, actuated, gain, ke, pe, total_mass)
    return (outcome, out, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max, turn, verdict, judged)
