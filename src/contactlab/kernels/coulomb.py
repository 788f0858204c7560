"""Numba kernels of the Coulomb friction problem (exact second-order cone), 2D or 3D contacts.

Layout: contact i owns rows ``i*dim .. i*dim+dim-1``: first the normal component, then the
``dim - 1`` tangential ones. K_mu = {r : ||r_t|| <= mu r_n} is the Coulomb cone, its dual
K* = {u : mu ||u_t|| <= u_n}; the De Saxce modified velocity is u~ = u + mu ||u_t|| e_n.

* :func:`project_cone` -- the Euclidean projection on K_mu (closed form).
* :func:`fc_residual_kernel` -- the natural-map residual r - P_K(r - rho u~) per contact
  (Acary, Cadoux, Lemarechal, Malick 2011, eq. 6; De Saxce's bipotential formulation), plus the
  complementarity and feasibility figures.
* :func:`ac_block` -- the Alart-Curnier function of one contact and its generalised Jacobian
  blocks (Alart and Curnier 1991; Christensen, Klarbring, Pang, Stroemberg 1998, eq. 3.3),
  Phi(r, u) with dPhi = A dr + B du.
* :func:`local_solve` -- the exact one-contact solver (closed-form separation / sticking checks,
  then damped semismooth Newton on Alart-Curnier, then the projected fixed point as a fallback).
* :func:`nsgs_kernel` -- nonsmooth Gauss-Seidel over contacts on a CSR W (Jean 1999).
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .dense import abs_max as _matrix_abs_max, solve_small as _dense_solve_small

# nsgs status codes
CONVERGED, MAX_SWEEPS, NOT_FINITE = 0, 1, 2


@jit
def project_cone(x, mu, out):
    """out = P_{K_mu}(x) for one contact block x = (x_n, x_t)."""
    dim = x.shape[0]
    nt = 0.0
    for k in range(1, dim):
        nt += x[k] * x[k]
    nt = np.sqrt(nt)
    xn = x[0]
    if nt <= mu * xn:
        for k in range(dim):
            out[k] = x[k]
    elif mu * nt <= -xn or nt == 0.0:
        for k in range(dim):
            out[k] = 0.0
    else:
        a = (xn + mu * nt) / (1.0 + mu * mu)
        out[0] = a
        for k in range(1, dim):
            out[k] = mu * a * x[k] / nt


@jit
def fc_residual_kernel(r, u, mu, rho, dim, denom):
    """(max_i ||F_i|| / denom, max_i |r_i . u~_i| rho_i / denom^2, worst infeasibility / denom).

    F_i = r_i - P_K(r_i - rho_i u~_i). Infeasibility: cone violation of r (max(||r_t|| - mu r_n, -r_n))
    and of u~ in K* (that is u_n >= 0), the velocity scaled by rho_i. inf for non-finite input.
    """
    nc = mu.shape[0]
    x = np.empty(dim)
    p = np.empty(dim)
    nat = 0.0
    comp = 0.0
    infeas = 0.0
    for i in range(nc):
        o = i * dim
        ut = 0.0
        rt = 0.0
        for k in range(1, dim):
            ut += u[o + k] * u[o + k]
            rt += r[o + k] * r[o + k]
        ut = np.sqrt(ut)
        rt = np.sqrt(rt)
        if not (np.isfinite(ut) and np.isfinite(rt) and np.isfinite(r[o]) and np.isfinite(u[o])):
            return np.inf, np.inf, np.inf
        un_mod = u[o] + mu[i] * ut
        x[0] = r[o] - rho[i] * un_mod
        for k in range(1, dim):
            x[k] = r[o + k] - rho[i] * u[o + k]
        project_cone(x, mu[i], p)
        f = 0.0
        for k in range(dim):
            d = r[o + k] - p[k]
            f += d * d
        f = np.sqrt(f)
        if f > nat:
            nat = f
        c = r[o] * un_mod
        for k in range(1, dim):
            c += r[o + k] * u[o + k]
        c = abs(c) * rho[i]
        if c > comp:
            comp = c
        v = max(rt - mu[i] * r[o], -r[o])
        if v > infeas:
            infeas = v
        v = -u[o] * rho[i]
        if v > infeas:
            infeas = v
    return nat / denom, comp / (denom * denom), infeas / denom


@jit
def ac_block(r, u, mu, rho, phi, A, B):
    """Alart-Curnier Phi(r, u) of one contact and blocks A = dPhi/dr, B = dPhi/du.

    Phi_n = r_n - max(0, r_n - rho u_n);  Phi_t = r_t - P_{D(mu max(0, r_n - rho u_n))}(r_t - rho u_t).
    """
    dim = r.shape[0]
    for a in range(dim):
        for b in range(dim):
            A[a, b] = 0.0
            B[a, b] = 0.0
    xn = r[0] - rho * u[0]
    if xn > 0.0:
        phi[0] = rho * u[0]
        B[0, 0] = rho
    else:
        phi[0] = r[0]
        A[0, 0] = 1.0
    R = mu * max(xn, 0.0)
    nx = 0.0
    for k in range(1, dim):
        t = r[k] - rho * u[k]
        nx += t * t
    nx = np.sqrt(nx)
    if nx <= R:
        for k in range(1, dim):
            phi[k] = rho * u[k]
            B[k, k] = rho
    else:
        # P = R x_t / ||x_t||: dP/dx_t = R/||x_t|| (I - xh xh'), dP/dx_n = mu xh (xn > 0)
        for k in range(1, dim):
            xk = (r[k] - rho * u[k]) / nx
            phi[k] = r[k] - R * xk
            A[k, k] = 1.0
            g = mu * xk if xn > 0.0 else 0.0
            # Phi_t = r_t - P(x), x = r - rho u: A_t = [0 I] - dP/dx, B_t = rho dP/dx
            A[k, 0] -= g
            B[k, 0] += rho * g
            for m in range(1, dim):
                xm = (r[m] - rho * u[m]) / nx
                G = R / nx * ((1.0 if k == m else 0.0) - xk * xm)
                A[k, m] -= G
                B[k, m] += rho * G


@jit
def _solve_small(Mx, b, x):
    """Gaussian elimination with partial pivoting (kernels.dense.solve_small) on copies; False if
    (numerically) singular: a pivot <= 1e-14 x max|M|, or M zero or not finite."""
    n = b.shape[0]
    M = Mx.copy()
    scale = _matrix_abs_max(M, n)
    if scale == 0.0 or not np.isfinite(scale):
        return False
    return _dense_solve_small(M, b.copy(), n, x, 1e-14)


@jit
def _local_merit(Wii, qi, mu, rho, r, u, phi, A, B):
    dim = r.shape[0]
    for a in range(dim):
        s = qi[a]
        for b in range(dim):
            s += Wii[a, b] * r[b]
        u[a] = s
    ac_block(r, u, mu, rho, phi, A, B)
    m = 0.0
    for a in range(dim):
        m += phi[a] * phi[a]
    return m


@jit
def _newton_ac(Wii, qi, mu, rho, r, target, max_newton, u, phi, A, B, J, rhs, d, rt, ut):
    """Damped semismooth Newton on the one-contact Alart-Curnier function from r (updated in place);
    returns the final |Phi|^2."""
    dim = r.shape[0]
    m = _local_merit(Wii, qi, mu, rho, r, u, phi, A, B)
    for it in range(max_newton):
        if m <= target:
            return m
        for a in range(dim):
            rhs[a] = -phi[a]
            for b in range(dim):
                s = A[a, b]
                for c in range(dim):
                    s += B[a, c] * Wii[c, b]
                J[a, b] = s
        if not _solve_small(J, rhs, d):
            return m
        t = 1.0
        accepted = False
        mt = m
        for ls in range(30):
            for k in range(dim):
                rt[k] = r[k] + t * d[k]
            mt = _local_merit(Wii, qi, mu, rho, rt, ut, phi, A, B)
            if mt <= (1.0 - 1e-4 * t) * m:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            return _local_merit(Wii, qi, mu, rho, r, u, phi, A, B)
        for k in range(dim):
            r[k] = rt[k]
        m = _local_merit(Wii, qi, mu, rho, r, u, phi, A, B)
    return m


@jit
def local_solve(Wii, qi, mu, rho, r, tol, max_newton):
    """Solve one contact: u = Wii r + qi, r in K_mu, Coulomb's law; r holds the warm start and the answer.

    1. q_n >= 0: r = 0 (separation) solves it exactly. 2. r = -Wii^-1 qi in K_mu: sticking, exact.
    3. Damped semismooth Newton on Alart-Curnier (Armijo backtracking on |Phi|^2), stopping at
    |Phi| <= tol * |rho qi|. 4. If Newton stalls: projected fixed point r <- P_K(r - rho u~) with a
    halving step. Returns the final |Phi| relative to |rho qi|.
    """
    dim = r.shape[0]
    if qi[0] >= 0.0:
        for k in range(dim):
            r[k] = 0.0
        return 0.0
    x = np.empty(dim)
    mq = np.empty(dim)
    for k in range(dim):
        mq[k] = -qi[k]
    if not _solve_small(Wii, mq, x):
        for k in range(dim):
            x[k] = 0.0
    else:
        nt = 0.0
        for k in range(1, dim):
            nt += x[k] * x[k]
        if x[0] >= 0.0 and np.sqrt(nt) <= mu * x[0]:
            # u = 0 exactly in exact arithmetic; accept only if the solve was accurate
            ok = True
            for a in range(dim):
                s = qi[a]
                for b in range(dim):
                    s += Wii[a, b] * x[b]
                if abs(s) > 1e-13 * (abs(qi[a]) + 1e-300) + 1e-15 * abs(qi[0]):
                    ok = False
            if ok:
                for k in range(dim):
                    r[k] = x[k]
                return 0.0
    qn = 0.0
    for k in range(dim):
        qn += qi[k] * qi[k]
    qn = rho * np.sqrt(qn)
    u = np.empty(dim)
    phi = np.empty(dim)
    A = np.empty((dim, dim))
    B = np.empty((dim, dim))
    J = np.empty((dim, dim))
    rhs = np.empty(dim)
    d = np.empty(dim)
    rt = np.empty(dim)
    ut = np.empty(dim)
    for k in range(dim):
        if not np.isfinite(r[k]):
            r[k] = 0.0
    target = (tol * qn) ** 2
    best = r.copy()
    mbest = np.inf
    # starts: the warm start, the sticking solution projected on the cone, the normal-only guess
    for attempt in range(3):
        if attempt == 1:
            project_cone(x, mu, r)
        elif attempt == 2:
            for k in range(dim):
                r[k] = 0.0
            r[0] = -qi[0] / Wii[0, 0] if Wii[0, 0] > 0.0 else 1.0
        m = _newton_ac(Wii, qi, mu, rho, r, target, max_newton, u, phi, A, B, J, rhs, d, rt, ut)
        if m < mbest:
            mbest = m
            for k in range(dim):
                best[k] = r[k]
        if mbest <= target:
            break
    for k in range(dim):
        r[k] = best[k]
    m = mbest
    if m <= target:
        return np.sqrt(m) / qn
    # fallback: projected fixed point on the De Saxce map with a small step
    step = 1.0
    for it in range(200 * max_newton):
        for a in range(dim):
            s = qi[a]
            for b in range(dim):
                s += Wii[a, b] * r[b]
            u[a] = s
        ut2 = 0.0
        for k in range(1, dim):
            ut2 += u[k] * u[k]
        x[0] = r[0] - step * rho * (u[0] + mu * np.sqrt(ut2))
        for k in range(1, dim):
            x[k] = r[k] - step * rho * u[k]
        project_cone(x, mu, rt)
        diff = 0.0
        for k in range(dim):
            diff += (rt[k] - r[k]) ** 2
            r[k] = rt[k]
        if np.sqrt(diff) <= step * tol * qn:
            break
        if not np.isfinite(diff):
            for k in range(dim):
                r[k] = 0.0
            step *= 0.5
    m = _local_merit(Wii, qi, mu, rho, r, u, phi, A, B)
    return np.sqrt(m) / qn


@jit
def csr_matvec(indptr, indices, data, x, q, out):
    """out = W x + q."""
    for row in range(indptr.shape[0] - 1):
        s = q[row]
        for k in range(indptr[row], indptr[row + 1]):
            s += data[k] * x[indices[k]]
        out[row] = s


@jit
def nsgs_kernel(indptr, indices, data, Wdiag, q, mu, rho, dim, r, max_sweeps, tol, omega,
                order, shuffle, seed, local_tol, max_newton, denom, check_every):
    """Nonsmooth Gauss-Seidel: for each contact i (in ``order``, reshuffled per sweep when
    ``shuffle``), q_i' = q_i + sum_{j != i} W_ij r_j, then r_i <- local_solve(W_ii, q_i'), with
    over-relaxation r_i <- omega r_i_new + (1 - omega) r_i_old (omega = 1: plain Gauss-Seidel).
    Stops when the natural-map residual and the infeasibility (fc_residual_kernel) are <= tol, checked every
    ``check_every`` sweeps and at the end. Returns (status, sweeps, residual).
    """
    nc = mu.shape[0]
    n = nc * dim
    u = np.empty(n)
    qi = np.empty(dim)
    ri = np.empty(dim)
    old = np.empty(dim)
    if shuffle:
        np.random.seed(seed)
    res = np.inf
    for sweep in range(1, max_sweeps + 1):
        if shuffle:
            np.random.shuffle(order)
        for jj in range(nc):
            i = order[jj]
            o = i * dim
            for a in range(dim):
                row = o + a
                s = q[row]
                for k in range(indptr[row], indptr[row + 1]):
                    s += data[k] * r[indices[k]]
                for b in range(dim):
                    s -= Wdiag[i, a, b] * r[o + b]
                qi[a] = s
                old[a] = r[o + a]
                ri[a] = r[o + a]
            local_solve(Wdiag[i], qi, mu[i], rho[i], ri, local_tol, max_newton)
            if omega != 1.0:
                # relax, then keep the iterate in the cone
                for a in range(dim):
                    qi[a] = omega * ri[a] + (1.0 - omega) * old[a]
                project_cone(qi, mu[i], ri)
            for a in range(dim):
                r[o + a] = ri[a]
        if sweep % check_every == 0 or sweep == max_sweeps:
            csr_matvec(indptr, indices, data, r, q, u)
            nat, comp, inf = fc_residual_kernel(r, u, mu, rho, dim, denom)
            res = max(nat, inf)   # solve() certifies both: the natural map and feasibility
            if not np.isfinite(res):
                return NOT_FINITE, sweep, res
            if res <= tol:
                return CONVERGED, sweep, res
    return MAX_SWEEPS, max_sweeps, res


@jit
def ac_system(r, u, mu, rho, dim, phi, Ablk, Bblk):
    """Alart-Curnier Phi and the per-contact Jacobian blocks of all contacts; returns |Phi|^2."""
    nc = mu.shape[0]
    m = 0.0
    for i in range(nc):
        o = i * dim
        ac_block(r[o:o + dim], u[o:o + dim], mu[i], rho[i], phi[o:o + dim], Ablk[i], Bblk[i])
        for k in range(dim):
            m += phi[o + k] * phi[o + k]
    return m


@jit
def ac_merit(r, u, mu, rho, dim):
    """|Phi_AC(r, u)|^2 without the Jacobian."""
    nc = mu.shape[0]
    phi = np.empty(dim)
    A = np.empty((dim, dim))
    B = np.empty((dim, dim))
    m = 0.0
    for i in range(nc):
        o = i * dim
        ac_block(r[o:o + dim], u[o:o + dim], mu[i], rho[i], phi, A, B)
        for k in range(dim):
            m += phi[k] * phi[k]
    return m


@jit
def ac_jacobian_csr(indptr, indices, data, Jindptr, Jindices, Jdata, Ablk, Bblk, dim, pos, shift):
    """Fill the CSR values of J = A + B W + shift I on a precomputed pattern (Jindptr, Jindices) that
    contains W's pattern of each contact's rows and the diagonal blocks. ``pos``: int work array (n,)."""
    nc = Ablk.shape[0]
    for i in range(nc):
        o = i * dim
        for a in range(dim):
            row = o + a
            for k in range(Jindptr[row], Jindptr[row + 1]):
                pos[Jindices[k]] = k
                Jdata[k] = 0.0
            for c in range(dim):
                bac = Bblk[i, a, c]
                if bac != 0.0:
                    for k in range(indptr[o + c], indptr[o + c + 1]):
                        Jdata[pos[indices[k]]] += bac * data[k]
            for b in range(dim):
                Jdata[pos[o + b]] += Ablk[i, a, b]
            Jdata[pos[row]] += shift


@jit
def ac_jacobian_dense(Wd, Ablk, Bblk, dim, J, shift):
    """J = A + B W + shift I, dense."""
    n = Wd.shape[0]
    nc = Ablk.shape[0]
    for i in range(nc):
        o = i * dim
        for a in range(dim):
            row = o + a
            for col in range(n):
                s = 0.0
                for c in range(dim):
                    s += Bblk[i, a, c] * Wd[o + c, col]
                J[row, col] = s
            for b in range(dim):
                J[row, o + b] += Ablk[i, a, b]
            J[row, row] += shift


@jit
def abs_max(x):
    m = 0.0
    for v in x.ravel():
        if abs(v) > m:
            m = abs(v)
    return m


@jit
def fb_block(r, u, mu, rho, phi, A, B, wk):
    """Fischer-Burmeister function of one contact on the second-order cone and blocks A = dPhi/dr,
    B = dPhi/du (Fukushima, Luo, Tseng 2001, "Smoothing functions for second-order-cone
    complementarity problems", SIAM J. Optim. 12; Acary, Bremond, Huber 2018 section 5.3, Siconos'
    NSN_FB). With x = (mu r_n, r_t) and y = rho (u_n + mu ||u_t||, mu u_t), Coulomb's law is
    x in L, y in L, x . y = 0 on the self-dual Lorentz cone L, and Phi = x + y - (x o x + y o y)^(1/2)
    (Jordan product, spectral square root) vanishes exactly there. Jacobian where z = x o x + y o y
    is interior: dPhi/dx = I - L_w^-1 L_x, dPhi/dy = I - L_w^-1 L_y with w = z^(1/2) and L_v the arrow
    matrix of v; on the boundary of L the smaller eigenvalue of w is raised to 1e-10 x the larger
    (the function itself is exact). mu = 0: Phi_n = scalar Fischer-Burmeister of (r_n, rho u_n),
    Phi_t = r_t. ``wk``: float work array (5, dim + 1, dim)."""
    dim = r.shape[0]
    for a in range(dim):
        for b in range(dim):
            A[a, b] = 0.0
            B[a, b] = 0.0
    c0 = 1.0 - 1.0 / np.sqrt(2.0)   # generalised-gradient element at x = y = 0 (direction x = y)
    if mu == 0.0:
        yn = rho * u[0]
        s = np.sqrt(r[0] * r[0] + yn * yn)
        phi[0] = r[0] + yn - s
        if s > 0.0:
            A[0, 0] = 1.0 - r[0] / s
            B[0, 0] = rho * (1.0 - yn / s)
        else:
            A[0, 0] = c0
            B[0, 0] = rho * c0
        for k in range(1, dim):
            phi[k] = r[k]
            A[k, k] = 1.0
        return
    x = wk[0, 0]
    y = wk[0, 1]
    wb = wk[0, 2]
    Lx = wk[1, :dim]
    Ly = wk[2, :dim]
    Li = wk[3, :dim]
    G = wk[4, :dim]
    nut = 0.0
    for k in range(1, dim):
        nut += u[k] * u[k]
    nut = np.sqrt(nut)
    x[0] = mu * r[0]
    y[0] = rho * (u[0] + mu * nut)
    for k in range(1, dim):
        x[k] = r[k]
        y[k] = rho * mu * u[k]
    z0 = 0.0
    nz = 0.0
    for k in range(dim):
        z0 += x[k] * x[k] + y[k] * y[k]
    for k in range(1, dim):
        zk = 2.0 * (x[0] * x[k] + y[0] * y[k])
        wb[k] = zk
        nz += zk * zk
    nz = np.sqrt(nz)
    # eigenvalues z0 -+ |zb| of z; the small one as det(z) / (z0 + |zb|) with det(z) = (det x + det y)^2
    # + 4 sum_k (xb_k y0 - yb_k x0)^2 (Lagrange's identity): z0 - |zb| cancels to sqrt(eps) near the
    # boundary of L, which left |Phi| stuck near 1e-8 relative
    nxb = 0.0
    nyb = 0.0
    cr = 0.0
    for k in range(1, dim):
        nxb += x[k] * x[k]
        nyb += y[k] * y[k]
        c = x[k] * y[0] - y[k] * x[0]
        cr += c * c
    nxb = np.sqrt(nxb)
    nyb = np.sqrt(nyb)
    dz = (x[0] - nxb) * (x[0] + nxb) + (y[0] - nyb) * (y[0] + nyb)
    s2 = np.sqrt(z0 + nz)
    s1 = np.sqrt(max(dz * dz + 4.0 * cr, 0.0)) / s2 if s2 > 0.0 else 0.0
    # w = z^(1/2) = (s1 + s2)/2 e + (s2 - s1)/2 zhat
    w0 = 0.5 * (s1 + s2)
    for k in range(1, dim):
        wb[k] = wb[k] / nz if nz > 0.0 else 0.0
    phi[0] = x[0] + y[0] - w0
    for k in range(1, dim):
        phi[k] = x[k] + y[k] - 0.5 * (s2 - s1) * wb[k]
    if s2 == 0.0:
        for a in range(dim):
            Lx[a, a] = c0      # Lx, Ly now hold dPhi/dx, dPhi/dy
            Ly[a, a] = c0
            for b in range(dim):
                if a != b:
                    Lx[a, b] = 0.0
                    Ly[a, b] = 0.0
    else:
        s1 = max(s1, 1e-10 * s2)
        w0 = 0.5 * (s1 + s2)
        h = 0.5 * (s2 - s1)
        det = s1 * s2
        # L_w^-1 = 1/det [[w0, -wb'], [-wb, det/w0 I + wb wb'/w0]], wb = h zhat
        Li[0, 0] = w0 / det
        for k in range(1, dim):
            Li[0, k] = -h * wb[k] / det
            Li[k, 0] = Li[0, k]
            for m in range(1, dim):
                Li[k, m] = (h * h * wb[k] * wb[m] / w0) / det + (1.0 / w0 if k == m else 0.0)
        for v in range(2):
            src = x if v == 0 else y
            for a in range(dim):
                for b in range(dim):
                    # (L_w^-1 L_src)[a, b]; L_src = [[s0, sb'], [sb, s0 I]]
                    s = 0.0
                    for c in range(dim):
                        if c == 0:
                            lcb = src[b]
                        elif b == 0:
                            lcb = src[c]
                        else:
                            lcb = src[0] if c == b else 0.0
                        s += Li[a, c] * lcb
                    G[a, b] = (1.0 if a == b else 0.0) - s
            for a in range(dim):
                for b in range(dim):
                    if v == 0:
                        Lx[a, b] = G[a, b]
                    else:
                        Ly[a, b] = G[a, b]
    # chain rule: x = S r, S = diag(mu, 1, ..); y = rho (u_n + mu ||u_t||, mu u_t)
    for a in range(dim):
        A[a, 0] = Lx[a, 0] * mu
        B[a, 0] = rho * Ly[a, 0]
        for k in range(1, dim):
            A[a, k] = Lx[a, k]
            g = mu * u[k] / nut if nut > 0.0 else 0.0
            B[a, k] = rho * (Ly[a, 0] * g + Ly[a, k] * mu)


@jit
def fb_system(r, u, mu, rho, dim, phi, Ablk, Bblk):
    """Fischer-Burmeister Phi and the per-contact Jacobian blocks of all contacts; returns |Phi|^2."""
    nc = mu.shape[0]
    wk = np.empty((5, dim + 1, dim))
    m = 0.0
    for i in range(nc):
        o = i * dim
        fb_block(r[o:o + dim], u[o:o + dim], mu[i], rho[i], phi[o:o + dim], Ablk[i], Bblk[i], wk)
        for k in range(dim):
            m += phi[o + k] * phi[o + k]
    return m


@jit
def fb_merit(r, u, mu, rho, dim):
    """|Phi_FB(r, u)|^2 (the Jacobian blocks are computed and dropped)."""
    nc = mu.shape[0]
    phi = np.empty(dim)
    A = np.empty((dim, dim))
    B = np.empty((dim, dim))
    wk = np.empty((5, dim + 1, dim))
    m = 0.0
    for i in range(nc):
        o = i * dim
        fb_block(r[o:o + dim], u[o:o + dim], mu[i], rho[i], phi, A, B, wk)
        for k in range(dim):
            m += phi[k] * phi[k]
    return m
