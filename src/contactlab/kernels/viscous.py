"""Compiled kernels of the viscous model (drumwright Sec. IV, eq. 29, 33, 39-42): the no-slip chain
without tangent rows, with M + h C (C the viscous drag of the touching contacts) in place of M, run
for a ConstraintSystem in one call (:func:`viscous_system_chain`), the drag forces
(:func:`viscous_forces`) and the recovery of a step (:func:`viscous_recover_step`).
"""
import numpy as np

from ._jit import jit
from .mass_factor import _mass_factor_stored
from .metric_chain import _all_finite, csr_rows_into, metric_chain_rows, recover_metric_kernel


@jit
def _csr_row_dot(indptr, indices, data, i, x):
    """Row i of a CSR matrix times x, summed in the row's stored order."""
    s = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        s += data[p] * x[indices[p]]
    return s


@jit
def _add_drag(C, pos, x, mu, p0, p1, indices, cols, seen):
    """C[pos[a], pos[b]] += mu x_a x_b over the columns indices[p0:p1] where the dense row x is stored
    (each column once; (a, b) and (b, a) both get (mu x_a) x_b: C stays exactly symmetric). ``seen`` (m,)
    all False on entry and on return; ``cols`` (m,) work."""
    nz = 0
    for p in range(p0, p1):
        c = indices[p]
        if not seen[c]:
            seen[c] = True
            cols[nz] = c
            nz += 1
    for a_ in range(nz):
        a = cols[a_]
        seen[a] = False
        xa = mu * x[a]
        pa = pos[a]
        for b_ in range(a_, nz):
            b = cols[b_]
            cab = xa * x[b]
            C[pa, pos[b]] += cab
            if b != a:
                C[pos[b], pa] += cab


@jit
def _mark_columns(indptr, indices, touch, mark):
    """mark[c] = True for the columns c stored in the rows i with touch[i]."""
    for i in range(indptr.shape[0] - 1):
        if touch[i]:
            for p in range(indptr[i], indptr[i + 1]):
                mark[indices[p]] = True


@jit
def viscous_system_chain(m, Mp, Mi, Mx, Jp, Ji, Jx, Lp, Li, Lx, Np, Ni, Nx, Sp, Si, Sx, Tp, Ti, Tx, touch, mu_v, v,
                         f, j_rhs, l_bias, n_bias, tol, h, hc):
    """A ConstraintSystem's viscous step (models/viscous.py ``build``, semi-implicit Euler) in one call.

    The CSR rows (indptr, indices, data) of M, L (limits), N, S, T scattered as
    :func:`csr_rows_into` does (U = [L; N]; S, T (nl + nc, m) with the touching contacts' rows after nl
    zero rows), the drag matrix C = S' mu_v S + T' mu_v T (mu_v (nl + nc,)) on the columns the touching
    rows reach (C is zero elsewhere; symmetric by construction: each entry mu_v (s_a s_b) written to
    (a, b) and (b, a)), Mh = M + hc C (eq. 29 with the drag at the step's end: hc = h; hc = 0 keeps M),
    f* = f - C v (eq. 29's f* with the sign of eq. 39's g; each row of C v summed in ascending column
    order, the zero columns left out: the sums of the dense product), the joint right-hand sides
    (j_rhs - J v) / h and the normal biases (U v + [l_bias; n_bias]) / h (each row's product with v
    summed over its stored entries), Mh's block factor (:func:`mass_factor`'s, its blocks found from
    the stored entries: :func:`_mass_factor_stored`) and
    :func:`metric_chain_rows` on (Mh, J's CSR rows, no tangent rows, v = 0, f = f*, h = 1): FIND-INDICES on J
    (Alg. 2) and F = N A^-1 N', e (eq. 41-42) factored in the Mh metric, p = f* exactly. A non-finite
    v makes f* NaN (the chain's status 3). Returns (nb, Mh, Lm, starts, U, S, T, f*, chain): nb = -1
    when Mh is not positive definite (``chain``'s status is then 4)."""
    nj = Jp.shape[0] - 1
    nl = Lp.shape[0] - 1
    nc = Np.shape[0] - 1
    n = nl + nc
    M = np.zeros((m, m))
    U = np.zeros((n, m))
    S = np.zeros((n, m))
    T = np.zeros((n, m))
    keep = np.zeros(0, dtype=np.bool_)
    csr_rows_into(Mp, Mi, Mx, M, 0, 1, keep, False)
    csr_rows_into(Lp, Li, Lx, U, 0, 1, keep, False)
    csr_rows_into(Np, Ni, Nx, U, nl, 1, keep, False)
    csr_rows_into(Sp, Si, Sx, S, nl, 1, touch, True)
    csr_rows_into(Tp, Ti, Tx, T, nl, 1, touch, True)
    # the columns of the drag, ascending, and their places in the compact C
    seen = np.zeros(m, dtype=np.bool_)
    _mark_columns(Sp, Si, touch, seen)
    _mark_columns(Tp, Ti, touch, seen)
    tc = np.empty(m, dtype=np.int64)
    pos = np.empty(m, dtype=np.int64)
    nt = 0
    for c in range(m):
        if seen[c]:
            seen[c] = False
            tc[nt] = c
            pos[c] = nt
            nt += 1
    C = np.zeros((nt, nt))
    cols = np.empty(m, dtype=np.int64)
    for i in range(nc):
        if touch[i]:
            _add_drag(C, pos, S[nl + i], mu_v[nl + i], Sp[i], Sp[i + 1], Si, cols, seen)
    for i in range(nc):
        if touch[i]:
            _add_drag(C, pos, T[nl + i], mu_v[nl + i], Tp[i], Tp[i + 1], Ti, cols, seen)
    fstar = f.copy()
    if not _all_finite(v):
        for a in range(m):
            fstar[a] = np.nan
    for a_ in range(nt):
        s = 0.0
        for b_ in range(nt):
            s += C[a_, b_] * v[tc[b_]]
        a = tc[a_]
        fstar[a] = f[a] - s
    if hc > 0.0:
        for a_ in range(nt):
            for b_ in range(nt):
                M[tc[a_], tc[b_]] += hc * C[a_, b_]
    jr = np.empty(nj)
    for i in range(nj):
        jr[i] = (j_rhs[i] - _csr_row_dot(Jp, Ji, Jx, i, v)) / h
    bias = np.empty(n)
    for i in range(nl):
        bias[i] = (_csr_row_dot(Lp, Li, Lx, i, v) + l_bias[i]) / h
    for i in range(nc):
        bias[nl + i] = (_csr_row_dot(Np, Ni, Nx, i, v) + n_bias[i]) / h
    Lm = np.empty((m, m))
    starts = np.empty(m + 1, dtype=np.int64)
    nb = _mass_factor_stored(M, Mp, Mi, tc, nt, Lm, starts)
    chain = metric_chain_rows(M, Lm, starts, nb, Jp, Ji, Jx, nj, jr, tol, np.zeros(m), fstar, 1.0, U, bias)
    return nb, M, Lm, starts, U, S, T, fstar, chain


@jit
def viscous_forces(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint, v, h, S, T,
                   mu_v):
    """The forces of :func:`viscous_system_chain`'s (or :func:`noslip_metric_chain`'s, with p = f*) LCP
    solution z (n,): the acceleration a, the kept joint rows' forces and N a by :func:`recover_metric_kernel`,
    v_end = v + h a (h = 0: v itself, the explicit drag of eq. 29) and the viscous forces -mu_v S v_end,
    -mu_v T v_end (each row of S, T times v_end summed in column order). Returns (a, joint, Na, v_end, fs, ft)."""
    a, _, joint, _, _, an = recover_metric_kernel(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p,
                                                  U, z, n_joint, 0)
    m = a.shape[0]
    n = z.shape[0]
    vn = np.empty(m)
    for t in range(m):
        vn[t] = v[t] + h * a[t]
    fs = np.empty(n)
    ft = np.empty(n)
    for i in range(n):
        s = 0.0
        t_ = 0.0
        for c in range(m):
            s += S[i, c] * vn[c]
            t_ += T[i, c] * vn[c]
        fs[i] = -mu_v[i] * s
        ft[i] = -mu_v[i] * t_
    return a, joint, an, vn, fs, ft


@jit
def viscous_recover_step(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z, n_joint, v, h,
                         S, T, mu_v, nl):
    """The step of :func:`viscous_system_chain`'s LCP solution z (n,) (models/viscous.py ``recover``,
    semi-implicit Euler) in one call: a, the joint forces, v+ = v + h a and the viscous forces -mu_v S v+,
    -mu_v T v+ at the step's end (eq. 29 with the implicit drag) by :func:`viscous_forces`, and the
    impulses over the step (h times the forces). Returns (v+, a, z_impulse (n,) = h z, joint impulses
    (n_joint,), tangential impulses (n - nl, 2): S and T columns, forces (fs, ft) (n,))."""
    a, joint, _, vn, fs, ft = viscous_forces(M, Lm, starts, nb, Gk, Lg, order, x_p, fpack, ipack, Nr, f_star, p, U, z,
                                             n_joint, v, h, S, T, mu_v)
    n = z.shape[0]
    zi = np.empty(n)
    for i in range(n):
        zi[i] = h * z[i]
    ji = np.empty(n_joint)
    for i in range(n_joint):
        ji[i] = h * joint[i]
    tangent = np.empty((n - nl, 2))
    for i in range(n - nl):
        tangent[i, 0] = h * fs[nl + i]
        tangent[i, 1] = h * ft[nl + i]
    return vn, a, zi, ji, tangent, fs, ft
