"""The Stewart-Trinkle step of a jointed scene after its constraint system, in one compiled call
(:func:`st_mixed_step`; :class:`contactlab.sim.st_stages.CompiledSTStages` plans and applies it).

The general stages do the same in Python around compiled kernels: the model's ``build``
(models/stewart_trinkle.py ``_parts``: the rows H = [L; N; D; 0; A; 0] stacked under the joints'
J, the coupling block K, c and v0; models/common.py ``mixed_problem``: the dense
[J; H] W [J; H]' of the body blocks), solve() on the :class:`~contactlab.problems.MixedLCP` (its
Schur complement, drumwright eq. 8-10 / arechavaleta eq. 15, by the SPD shortcut of
``MixedLCP._reduce_spd``; Lemke's reduced basis on F = B - D A^-1 C, e = h - D A^-1 g,
kernels/lemke.py ``lemke_reduced_certified``; the certification of the answer on the mixed problem
with the library's one residual, kernels/residual.py and kernels/mixed.py ``mixed_row_terms``)
and the model's ``recover`` (v+ = v0 + M^-1 (H' y + J' x), arechavaleta eq. 13). Here they are
the same formulas on the same kernels in one call: the pivoting rules, tolerances and certificate
are Lemke's and solve()'s; what differs is the rounding of the Schur complement: here
F = B - Y'Y with Y = L^-1 C (C = D' = J W H', A = L L'), one triangular product instead of the
general path's D (L^-T (L^-1 C)) by BLAS, a third of the work for the same matrix in exact arithmetic.

Where Lemke's first reduced run on (F, e) does not certify within its ``tol``, the call takes
solve()'s first retry as solvers/lemke.py does (``equilibrate="auto"``): the run on the
symmetrically equilibrated LCP (D F D, D e), its answer mapped back, refined and certified on
(F, e) (kernels/lemke.py ``lemke_scaled_run``, the one kernel both call). A jointed hand's motor
rows beside its contact rows (arechavaleta eq. 15) make the unscaled run end, on some steps, on a
basis that does not certify; without this retry in the call such a step went to the general
stages, whose kernels a process that had not used them loads from numba's cache (~0.6 s CPU).
Where the equilibrated run does not certify either, the call takes solve()'s next retries in its
order: the two-sided equilibrated run, then Lemke's method on the full tableau (:func:`_tableau_retry`; kernels/lemke.py ``lemke_tableau_run``, the
kernel solve() runs): on an ill-conditioned grasp LCP (cond ~6e8, the plastic grasp's step 631) a
rounding-level change of F moves the reduced basis's run to an answer at 3e-4 where the tableau's
certifies.

The call declines (``ok`` False, nothing applied) where the general path would take another
branch or the answer would not be Lemke's first certified one: A not exactly symmetric or not
numerically positive definite with the rank margin of ``_reduce_spd`` (the QR branch), a trivial
problem (z = 0 solves it), neither the first reduced run nor the symmetric or two-sided
equilibrated one SOLVED within ``tol`` nor the tableau's (or the first run's) answer within
max(tol, CERTIFY) (the general path's further retries: pivot tolerances, regularisation), or the
answer not certified on the mixed problem within ``threshold``
(max(certify, tol), as solve() does).
"""
from __future__ import annotations

import numpy as np

from ..collision.boxes.packed import unpack_contacts
from ..kernels._jit import jit
from ..kernels.dense import csr_times, lcp_scale, solve_small
from ..kernels.factored import dense_csr
from ..kernels.joint_rows import (RANK_TOL, back_transpose, joint_impulses, kept_rows, pin_rows, recover_joint_rows,
                                  spd_reduce, stack_csr)
from ..kernels.lemke import NUMERICAL, SOLVED, lemke_reduced_certified, lemke_scaled_run, lemke_tableau_run
from ..kernels.mixed import mixed_row_terms, pyramid_coupling
from ..kernels.residual import lcp_certify_dense, lcp_relative_kernel, lcp_residual_kernel
from ..kernels.tolerances import CERTIFY, NORMWISE_FLOOR
from ..mechanics.delassus import delassus_dense
from ..mechanics.rows import pyramid_csr, rows_transpose_times
from .noslip_kernels import DECLINED, DEEP, DONE, apply_answer, jointed_terms  # noqa: F401  (outcome codes)

#: lemke_reduced_certified's refactorisation period (solvers/lemke.py REFACTOR_EVERY)
REFACTOR_EVERY = 64

#: why :func:`st_mixed_step` declined a step (the ``n`` of its declined answer; module docstring):
#: nothing to solve or no joint row (solve()'s trivial problem, or no Schur complement); A not SPD
#: within the rank margin (the QR branch); neither Lemke's first reduced run nor its symmetric or
#: two-sided equilibrated retry certified on (F, e) within ``tol``, nor the tableau retry within
#: max(tol, CERTIFY);
#: the answer certified on (F, e) but not on the mixed problem within ``threshold``
DECLINE_EMPTY, DECLINE_QR_BRANCH, DECLINE_LEMKE, DECLINE_MIXED_CERTIFICATE = 1, 2, 3, 4
#: the reasons' names (sim/st_stages.py puts the name in the general stages' Solution info)
DECLINE_REASONS = {DECLINE_EMPTY: "no joint rows or nothing to solve", DECLINE_QR_BRANCH: "A not SPD (QR branch)",
                   DECLINE_LEMKE: "Lemke not certified on (F, e)",
                   DECLINE_MIXED_CERTIFICATE: "not certified on the mixed problem"}


@jit
def _declined(reason, pivots):
    """st_mixed_step's declined answer: ok False, the pivots taken, and ``reason`` (a DECLINE_* code) as n."""
    z = np.zeros(0)
    return False, pivots, reason, 0.0, z, z, z, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0), z, np.zeros((0, 2))


@jit
def _mixed_certificate(Am, Cm, Dm, B, g, hh, Y, yg, Linv, z, threshold):
    """solve()'s certificate of z on the mixed problem: x = recover_x(z) = -A^-1 (C z + g)
    = -L^-T (Y z + yg), w = D x + B z + h, the six numbers (absolute natural, complementarity,
    infeasibility; relative natural, complementarity, infeasibility) and whether they certify
    (relative within ``threshold``, the absolute ones finite). Returns (x, w, numbers, certified)."""
    nj = yg.shape[0]
    n = z.shape[0]
    x = joint_impulses(Linv, Y, yg, z)
    w = np.empty(n)
    for i in range(n):
        s = 0.0
        for k in range(nj):
            s += Dm[i, k] * x[k]
        t2 = 0.0
        for j in range(n):
            t2 += B[i, j] * z[j]
        w[i] = s + t2 + hh[i]
    nat, comp, infeas = lcp_residual_kernel(z, w)
    tt = np.empty(n)
    eq_rel, eqa, size = mixed_row_terms(Am, Cm, Dm, B, g, hh, x, z, NORMWISE_FLOOR, tt)
    r_nat, r_comp, r_inf = lcp_relative_kernel(z, w, hh, tt, size)
    numbers = (max(nat, eqa), comp, max(infeas, eqa), max(r_nat, eq_rel), r_comp, max(r_inf, eq_rel))
    certified = numbers[3] if numbers[3] > numbers[5] else numbers[5]
    ok = certified <= threshold and numbers[0] < np.inf and numbers[2] < np.inf \
        and numbers[3] == numbers[3] and numbers[5] == numbers[5]
    return x, w, numbers, ok


@jit
def _warm_answer(F, e, guess, tol, z):
    """The LCP (F, e)'s answer on the complementary basis of the previous step's (loomis-balkcom
    §IV, computation reuse): the z's basic where ``guess`` > 0 (the previous answer mapped onto
    this step's rows, :func:`warm_guess`), F_BB z_B = -e_B by Gaussian elimination with partial
    pivoting, the w's basic elsewhere. Written into z and True where that basis is feasible and its
    answer certifies as Lemke's must (the library's relative residual on (F, e) within ``tol``,
    kernels/residual.py ``lcp_certify_dense``); False (z zero) where the basis is empty, singular,
    or infeasible: Lemke's method from its usual start then."""
    n = e.shape[0]
    k = 0
    for i in range(n):
        k += guess[i] > 0.0
    if k == 0:
        return False
    idx = np.empty(k, dtype=np.int64)
    k = 0
    for i in range(n):
        if guess[i] > 0.0:
            idx[k] = i
            k += 1
    A = np.empty((k, k))
    b = np.empty(k)
    for r in range(k):
        b[r] = -e[idx[r]]
        for c in range(k):
            A[r, c] = F[idx[r], idx[c]]
    xb = np.zeros(k)
    if not solve_small(A, b, k, xb):
        return False
    big = 0.0
    for r in range(k):
        big = max(big, abs(xb[r]))
    for r in range(k):
        v = xb[r]
        if not v >= 0.0:
            if v >= -RANK_TOL * big:     # a rounding below zero: the variable at its bound
                v = 0.0
            else:
                return False
        z[idx[r]] = v
    w = np.empty(n)
    t = np.empty(n)
    c6 = lcp_certify_dense(F, e, z, w, t, NORMWISE_FLOOR)
    rel = c6[3] if c6[3] > c6[5] else c6[5]
    if rel <= tol and c6[0] < np.inf and c6[2] < np.inf:
        return True
    for i in range(n):
        z[i] = 0.0
    return False


@jit
def _tableau_retry(F, e, s, max_pivots, tol, first_code, first_rel, first_z):
    """solve()'s retry after the reduced-basis and the two equilibrated runs (solvers/lemke.py ``lemke_solve``,
    basis "auto"): Lemke's method on the full tableau of the scaled LCP (F, e) / s
    (kernels/lemke.py ``lemke_tableau_run``, refined once), the better of its answer and the first
    reduced run's (``first_code``, its certified residual ``first_rel``, ``first_z``) kept (a solved one
    first, then the smaller certified residual; the tableau's on a tie), SOLVED only where that
    residual is within max(tol, CERTIFY) as lemke_solve requires (the call then certifies the answer
    on the mixed problem within solve()'s threshold). Why: the rank-one updates of the reduced
    basis can end an ill-conditioned LCP (a grasp's pyramid rows, cond ~1e9) on a basis whose answer
    does not certify where the tableau's does. Returns (status, pivots, z)."""
    n = e.shape[0]
    M = np.empty((n, n))
    q = np.empty(n)
    for i in range(n):
        q[i] = e[i] / s
        for j in range(n):
            M[i, j] = F[i, j] / s
    code, pivots, zt, _ = lemke_tableau_run(M, q, np.zeros(0), max_pivots, True, False)
    c6 = lcp_certify_dense(M, q, zt, np.empty(n), np.empty(n), NORMWISE_FLOOR)
    rel = c6[3] if c6[3] > c6[5] else c6[5]
    t_ok, f_ok = code == SOLVED, first_code == SOLVED
    if (t_ok and not f_ok) or (t_ok == f_ok and -rel >= -first_rel):
        z = zt
    else:
        z, code, rel = first_z.copy(), first_code, first_rel
    if code == SOLVED and not rel <= (tol if tol > CERTIFY else CERTIFY):
        code = NUMERICAL        # lemke_solve's NUMERICAL_FAILURE: solved, not certified
    return code, pivots, z


@jit
def warm_guess(z_prev, nl0, nc0, nm0, match, nl, nc, nm, d):
    """The previous step's answer y = [c_l, c_n, beta, lambda, u, s] (nl0 limits, nc0 contacts,
    nm0 motors) on this step's rows: each contact's from its matched previous contact (``match``:
    the detection's, -1 for a new one), the limits' and motors' where their counts are unchanged,
    zero elsewhere (:func:`_warm_answer` reads its positive entries as the basis)."""
    n = nl + nc * (d + 2) + 2 * nm
    g = np.zeros(n)
    if z_prev.shape[0] != nl0 + nc0 * (d + 2) + 2 * nm0:
        return g
    if nl == nl0:
        for i in range(nl):
            g[i] = z_prev[i]
    o_b0, o_l0, o_u0 = nl0 + nc0, nl0 + nc0 + nc0 * d, nl0 + nc0 * (d + 2)
    o_b, o_l, o_u = nl + nc, nl + nc + nc * d, nl + nc * (d + 2)
    for i in range(min(nc, match.shape[0])):
        j = match[i]
        if j < 0 or j >= nc0:
            continue
        g[nl + i] = z_prev[nl0 + j]
        for k in range(d):
            g[o_b + i * d + k] = z_prev[o_b0 + j * d + k]
        g[o_l + i] = z_prev[o_l0 + j]
    if nm == nm0:
        for i in range(2 * nm):
            g[o_u + i] = z_prev[o_u0 + i]
    return g


@jit
def st_mixed_step(Jp, Ji, Jd, j_rhs, Lp, Li, Ld, l_bias, Np, Ni, Nd, n_bias, Sp, Si, Sd, Td, Ap, Ai, Ad, a_target,
                  a_max, mu, d, cfm, Wb, Mip, Mii, Mid, v_free, ndof, max_pivots, pivot_tol, restarts, tol, threshold,
                  kin, guess):
    """The Stewart-Trinkle MixedLCP of a step, solved by Lemke and certified, and v+ (module docstring).

    Inputs are the step's ConstraintSystem as CSR arrays (indptr, indices, data): joints J with
    j_rhs, limits L with l_bias, contact normals N with n_bias, the tangent rows S, T (one pattern),
    motors A with a_target and a_max; mu per contact, d friction directions, ``cfm`` on the contact
    rows (the settings' plus the model's), the body blocks Wb of M^-1 (covering every dof) and M^-1
    as CSR (Mip, Mii, Mid), v_free = v + h M^-1 f. ``max_pivots`` < 0: Lemke's default 50 n + 1000.
    Returns (ok, pivots, n, scale, z = y, x, w, the six certified numbers (abs natural,
    complementarity, infeasibility, relative natural, complementarity, infeasibility of the mixed
    problem, as solve() computes them), v_next, the tangential impulses (nc, 2)); declined (ok
    False): n is the reason (DECLINE_*), pivots those taken.

    ``kin``: the body blocks of the kinematic bodies (a wrist, a palm). Where each is pinned by its
    velocity rows (:func:`~contactlab.kernels.joint_rows.pin_rows`), those rows and the body's dofs
    leave the problem: the body's velocity is known, so its block of M^-1 is zero and its prescribed velocity enters the free
    velocity v0 (the rows' right-hand sides through r = R v0): the Schur complement of the pinned
    body's rows taken first, exact in exact arithmetic, which leaves A = J W J' one band per chain
    hanging from that body. The pinned rows' impulses are recovered after the solve from the
    body's momentum balance, x_pin = W_b^-1 (v_b - v0_b) - (R' [x; y])_b (so the returned x is the
    whole problem's); the certificate is the reduced problem's, the same mixed problem with the
    known velocities substituted.

    ``guess``: the previous step's answer on this step's rows (:func:`warm_guess`), or empty. Where
    its basis gives a certified answer (:func:`_warm_answer`, then the mixed problem's certificate)
    that answer is taken with no pivot; else Lemke's method from its usual start, and where that
    does not certify on (F, e), the symmetrically equilibrated run, the two-sided one, then the full
    tableau (module docstring; ``pivots`` counts every run)."""
    nj_all, nl, nc, nm = j_rhs.shape[0], l_bias.shape[0], n_bias.shape[0], a_target.shape[0]
    if nj_all == 0 or nl + nc + nm == 0:    # no joint rows, or nothing to solve (solve()'s trivial problem)
        return _declined(DECLINE_EMPTY, 0)
    elim, keep, vkin, held = pin_rows(Jp, Ji, Jd, j_rhs, kin, ndof)
    Jp_all, Ji_all, Jd_all = Jp, Ji, Jd
    Wd = Wb.copy()
    if elim:
        Jp, Ji, Jd, j_rhs = kept_rows(Jp, Ji, Jd, j_rhs, keep)
        for b in kin:
            Wd[b] = 0.0
    nj = j_rhs.shape[0]
    if nj == 0:
        return _declined(DECLINE_EMPTY, 0)
    Dp, Di, Dd = _pyramid(Sp, Si, Sd, Td, d)
    empty_p = np.zeros(1, dtype=np.int64)
    empty_i = np.zeros(0, dtype=np.int64)
    empty_d = np.zeros(0)
    Rp, Ri, Rd = stack_csr((Jp, Lp, Np, Dp, empty_p, Ap, empty_p), (Ji, Li, Ni, Di, empty_i, Ai, empty_i),
                        (Jd, Ld, Nd, Dd, empty_d, Ad, empty_d), (nj, nl, nc, nc * d, nc, nm, nm))
    n = nl + nc * (d + 2) + 2 * nm
    rows = nj + n
    G = delassus_dense(Rp, Ri, Rd, Wd, rows, np.zeros(rows))
    v0 = v_free.copy()
    if nm:      # stewart_trinkle._parts: v0 - M^-1 A' a_max (the motor impulse is u - a_max)
        m = csr_times(Mip, Mii, Mid, rows_transpose_times(Ap, Ai, Ad, a_max, ndof))
        for i in range(ndof):
            v0[i] = v0[i] - m[i]
    v0_all = v0.copy()
    if elim:
        for i in range(ndof):
            if held[i]:
                v0[i] = vkin[i]
    r = csr_times(Rp, Ri, Rd, v0)
    K = pyramid_coupling(nl, nc, d, nm, mu, cfm)
    o_cn = nl
    o_lam = o_cn + nc + nc * d
    o_u = o_lam + nc
    B = np.empty((n, n))
    hh = np.empty(n)
    for i in range(n):
        for j in range(n):
            B[i, j] = G[nj + i, nj + j] + K[i, j]
        c = 0.0
        if i < nl:
            c = l_bias[i]
        elif i < nl + nc:
            c = n_bias[i - nl]
        elif o_u <= i < o_u + nm:
            c = -a_target[i - o_u]
        elif i >= o_u + nm:
            c = 2.0 * a_max[i - o_u - nm]
        hh[i] = r[nj + i] + c
    Am = np.ascontiguousarray(G[:nj, :nj])
    Cm = np.ascontiguousarray(G[:nj, nj:])
    Dm = np.ascontiguousarray(G[nj:, :nj])
    g = np.empty(nj)
    for i in range(nj):
        g[i] = r[i] - j_rhs[i]
    ok, Linv, Y, yg = spd_reduce(Am, Cm, g)
    if not ok:
        return _declined(DECLINE_QR_BRANCH, 0)
    # the reduced LCP F = B - D A^-1 C = B - Y'Y, e = h - D A^-1 g = h - Y' yg (drumwright eq. 9-10)
    F = B.copy()
    e = hh.copy()
    yp, yj, _ = dense_csr(Y)
    for k in range(nj):         # Y'Y is symmetric: each product once, subtracted on both sides
        ygk = yg[k]             # (Y's exact zeros skipped: dense_csr)
        for a in range(yp[k], yp[k + 1]):
            i = yj[a]
            yki = Y[k, i]
            for t in range(yp[k], a):
                j = yj[t]
                q = yki * Y[k, j]
                F[i, j] -= q
                F[j, i] -= q
            F[i, i] -= yki * yki
            e[i] -= yki * ygk
    # solve()'s triviality test: z = 0 with x = -A^-1 g solves the mixed problem exactly
    x0 = back_transpose(Linv, yg)
    for k in range(nj):
        x0[k] = -x0[k]
    s_max = lcp_scale(F, e)
    mp = 50 * n + 1000 if max_pivots < 0 else max_pivots
    pivots = 0
    z = np.zeros(n)
    warm = guess.shape[0] == n and _warm_answer(F, e, guess, tol, z)
    if warm:        # the previous step's basis, certified as Lemke's answer would be
        x, w, numbers, warm = _mixed_certificate(Am, Cm, Dm, B, g, hh, Y, yg, Linv, z, threshold)
    if not warm:
        code, pivots, out, c6 = lemke_reduced_certified(F, e, s_max, np.zeros(0), mp, REFACTOR_EVERY, pivot_tol,
                                                        NORMWISE_FLOOR, restarts)
        rel = c6[3] if c6[3] > c6[5] else c6[5]
        if code == SOLVED and rel <= tol and c6[3] == c6[3] and c6[5] == c6[5]:
            z = out[:n].copy()
        else:   # solvers/lemke.py's first retry: the symmetrically equilibrated LCP, certified on (F, e)
            first_code, first_rel = code, rel
            code, more, z, rel, _, _, _ = lemke_scaled_run(F, e, np.zeros(0), True, mp, REFACTOR_EVERY, pivot_tol,
                                                          NORMWISE_FLOOR, restarts, 1e-3 * tol)
            pivots += more
            if code != SOLVED or not rel <= tol:    # its second: the two-sided equilibrated LCP
                code, more, z, rel, _, _, _ = lemke_scaled_run(F, e, np.zeros(0), False, mp, REFACTOR_EVERY,
                                                              pivot_tol, NORMWISE_FLOOR, restarts, 1e-3 * tol)
                pivots += more
            if code != SOLVED or not rel <= tol:    # then the full tableau
                code, more, z = _tableau_retry(F, e, s_max, mp, tol, first_code, first_rel, out[:n])
                pivots += more
                if code != SOLVED:
                    return _declined(DECLINE_LEMKE, pivots)
        x, w, numbers, certified = _mixed_certificate(Am, Cm, Dm, B, g, hh, Y, yg, Linv, z, threshold)
        if not certified:
            return _declined(DECLINE_MIXED_CERTIFICATE, pivots)
    # v+ = v0 + M^-1 (H' y + J' x) (models/common.py mixed_recover), the pinned rows' impulses
    x, v_next = recover_joint_rows(z, x, v0, v0_all, Rp, Ri, Rd, nj, Mip, Mii, Mid, ndof, elim, keep, held, vkin, Wb,
                                   kin, Jp_all, Ji_all, Jd_all)
    # the pyramid's beta as tangential impulses along (t1, t2) (models/common.py pyramid_to_tangent)
    tangent = np.zeros((nc, 2))
    o_b = nl + nc
    for i in range(nc):
        for k in range(d):
            ang = 2.0 * np.pi * k / d
            tangent[i, 0] += z[o_b + i * d + k] * np.cos(ang)
            tangent[i, 1] += z[o_b + i * d + k] * np.sin(ang)
    return True, pivots, n, s_max, z, x, w, numbers, v_next, tangent


@jit
def _pyramid(Sp, Si, Sd, Td, d):
    """pyramid_csr's D rows with int64 indices (the stack's)."""
    data, ix, ip = pyramid_csr(Sp, Si, Sd, Td, d)
    return ip.astype(np.int64), ix.astype(np.int64), data


@jit
def st_step(body, ndof, kinematic, gyroscopic, motion, f, contact_floats, contact_ints, zeta_c, slop, joints,
            motor_target, motor_max_force, h, zeta_j, d, cfm, max_pivots, pivot_tol, restarts, tol, threshold, kin,
            position_stage, position_zeta, project, proj_tol, proj_max_iter, z_prev, layout_prev):
    """One Stewart-Trinkle step of a jointed scene whose body blocks cover every coordinate, from
    the state to the projected joints: the general stages' kernels in their order on the arrays
    they compute (sim/stages.py ``build``, ``integrate``; sim/noslip_kernels.py ``noslip_step`` is the
    no-slip model's counterpart), so the same bits as the stages around :func:`st_mixed_step`:

    1. e0, the energy before the step; the system's terms (:func:`contactlab.mechanics.terms.system_terms`:
       mass blocks, v_free, contact rows N, S, T with the normal bias, joint rows J, L, A), the CSR
       arrays ``build_system`` wraps taken as they are (M^-1 as ``body``'s block pattern ``blk_cols``,
       ``blk_ptr`` over the blocks, the joint rows' indices as int64);
    2. :func:`st_mixed_step` (the Schur complement, Lemke, solve()'s certificate, v+);
    3. the answer applied (:func:`contactlab.sim.noslip_kernels.apply_answer`, the tail the no-slip and
       box-friction steps share): the contact modes, the kinetic energy the impulses added (``body``'s
       ``passive``: 1 on the dofs counted), x += h v+ (:func:`contactlab.mechanics.integrate.advance_state`); the
       position correction's deep test, the joint projection (or the joint error), the energies and
       deepest overlap after the step.

    ``body``, ``motion``: the model's fixed arrays and the state's (sim/noslip_kernels.py ``BODY``,
    ``MOTION``; the state's written in place).
    ``contact_floats``, ``contact_ints``: the step's contacts as the detection packed them
    (collision/boxes/packed.py: points, frames, phi, mu per contact; bodies and the detection's
    ``match``). ``z_prev``: the previous step's answer with its (nl, nc, nm) ``layout_prev`` (empty
    z_prev: no warm basis; :func:`warm_guess`, :func:`_warm_answer`).
    ``f``: the joint torques' generalized force (the bodies' forces are added in place); ``d``
    friction directions, ``cfm`` the settings' plus the model's; the Lemke arguments
    and ``kin`` as :func:`st_mixed_step` takes them. Returns (outcome, the ten values of
    st_mixed_step, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max): DECLINED before any
    state is touched where st_mixed_step declines; DEEP after the integration where a contact is
    deep (the caller corrects positions and projects the joints); ke, pe, pen and joint_error are
    set for DONE only."""
    point, normal, t1, t2, phi, mu, _guess, a, b, _sa, _sb, match = unpack_contacts(contact_floats, contact_ints)
    e0, M_blocks, W_blocks, v, v_free, dv, Np, Ni, n_bias, Jm, j_rhs, Lm, l_bias, Am, a_target, a_max = jointed_terms(
        body, motion, gyroscopic, f, (a, b, point, normal, t1, t2, phi), zeta_c, slop, joints, motor_target,
        motor_max_force, h, zeta_j)
    blk_cols, blk_ptr = body[7], body[8]
    nc = phi.shape[0]
    nl = l_bias.shape[0]
    i64 = np.int64
    guess = np.zeros(0)
    if z_prev.shape[0]:
        guess = warm_guess(z_prev, layout_prev[0], layout_prev[1], layout_prev[2], match, nl, nc,
                           a_target.shape[0], d)
    out = st_mixed_step(Jm[2].astype(i64), Jm[1].astype(i64), Jm[0], j_rhs, Lm[2].astype(i64), Lm[1].astype(i64),
                        Lm[0], l_bias, Np, Ni, dv[0], n_bias, Np, Ni, dv[1], dv[2], Am[2].astype(i64),
                        Am[1].astype(i64), Am[0], a_target, a_max, mu, d, cfm, W_blocks, blk_ptr, blk_cols,
                        W_blocks.reshape(-1), v_free, ndof, max_pivots, pivot_tol, restarts, tol, threshold, kin,
                        guess)
    ok, pivots, n, scale, z, x, wv, numbers, v_next, tangent = out
    if not ok:
        return (DECLINED, out, np.zeros(0, dtype=np.int8), e0, 0.0, 0.0, 0.0, 0.0, 0.0, v_free, nl, a_max)
    outcome, modes, gain, ke, pe, pen, joint_error = apply_answer(
        Np, Ni, dv, v_next, z[nl:nl + nc], v_free, M_blocks.reshape(-1), body, kinematic, motion, joints, phi, h,
        slop, position_stage, position_zeta, project, proj_tol, proj_max_iter)
    return (outcome, out, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max)
