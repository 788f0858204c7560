"""The lean Stewart-Trinkle / mixed-LCP path (issue 13) against the former scipy.sparse formulas.

models/common.py ``mixed_problem`` forms [J; H] W [J; H]' with the compiled block Delassus and
problems/mixed.py reduces an SPD A by Cholesky when its full rank is certified; here the former
assembly (sparse products H M^-1 H', vstack, diags) and the former reduction (pivoted QR, LU) are
kept as references, and the two must give the same LCP to rounding and the same answers, on
recorded quadruped trot steps and on random systems."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from contactlab.mechanics.system import ConstraintSystem
from contactlab.models import stewart_trinkle as st
from contactlab.models.common import dense
from contactlab.problems import LCP, MixedLCP
from contactlab.problems.base import Problem
from contactlab.problems.residual import lcp_relative
from contactlab.kernels.tolerances import NORMWISE_FLOOR
from contactlab.solvers import solve


# -- the former assembly, kept as the reference ------------------------------------------------------------
def _former_k(nl, nc, d, nm, mu):
    """The former sparse coupling K of the mixed LCP (no cfm) and its offsets (o_cn, o_b, o_lam, o_u, o_s)."""
    o_cn, o_b = nl, nl + nc
    o_lam = o_b + nc * d
    o_u = o_lam + nc
    o_s = o_u + nm
    ny = o_s + nm
    ci, bi = np.repeat(np.arange(nc), d), np.arange(nc * d)
    rows = [o_b + bi, o_lam + ci, o_lam + np.arange(nc), o_u + np.arange(nm), o_s + np.arange(nm)]
    cols = [o_lam + ci, o_b + bi, o_cn + np.arange(nc), o_s + np.arange(nm), o_u + np.arange(nm)]
    vals = [np.ones(nc * d), -np.ones(nc * d), mu, np.ones(nm), -np.ones(nm)]
    K = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(ny, ny))
    return K, (o_cn, o_b, o_lam, o_u, o_s)


def _former_parts(sys):
    nc, d, nl, nm, ndof = sys.nc, sys.d, sys.nl, sys.nm, sys.ndof
    Z = lambda k: sp.csr_matrix((k, ndof))
    H = sp.vstack([sys.L, sys.N, sys.D, Z(nc), sys.A, Z(nm)], format="csr")
    K, (o_cn, o_b, o_lam, o_u, o_s) = _former_k(nl, nc, d, nm, sys.mu)
    c = np.concatenate([sys.l_bias, sys.n_bias, np.zeros(nc * d + nc), -sys.a_target, 2.0 * sys.a_max])
    v0 = sys.v_free()
    if nm:
        v0 = v0 - sys.Minv @ (sys.A.T @ sys.a_max)
    return H, K, c, v0, (o_cn, o_b, o_lam, o_u, o_s)


def _former_build(sys, cfm_extra=1e-6):
    H, K, c, v0, off = _former_parts(sys)
    cfm = sys.cfm + cfm_extra
    if cfm and sys.nc:
        dg = np.zeros(K.shape[0])
        dg[off[0]:off[3]] = cfm
        K = K + sp.diags(dg, format="csr")
    W = sys.Minv
    HW = H @ W
    B = dense(HW @ H.T) + dense(K)
    hh = H @ v0 + c
    if sys.nj == 0:
        return LCP(B, hh), H, v0
    JW = sys.J @ W
    return MixedLCP(dense(JW @ sys.J.T), dense(JW @ H.T), dense(HW @ sys.J.T), B, sys.J @ v0 - sys.j_rhs, hh), H, v0


def _former_reduction(p: MixedLCP):
    """The former MixedLCP reduction: pivoted QR of [A C]', LU of A on the kept rows."""
    _, Rq, piv = sla.qr(np.hstack([p.A, p.C]).T, mode="economic", pivoting=True)
    dg = np.abs(np.diag(Rq))
    keep = np.sort(piv[:int(np.sum(dg > p.rank_tol * max(dg[0], 1e-300)))])
    lu = sla.lu_factor(p.A[np.ix_(keep, keep)])
    F = p.B - p.D[:, keep] @ sla.lu_solve(lu, p.C[keep])
    e = p.h - p.D[:, keep] @ sla.lu_solve(lu, p.g[keep])
    return keep, F, e, lambda y: _lift(p.p, keep, -sla.lu_solve(lu, p.C[keep] @ y + p.g[keep]))


def _lift(n, keep, xk):
    x = np.zeros(n)
    x[keep] = xk
    return x


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(a), initial=0.0)))


def _check_against_former(sys):
    built = st.build(sys)
    new = built.problem
    assert not hasattr(new, "step_rows")      # nothing attached to the problem (models/built.py)
    old, H_old, v0_old = _former_build(sys)
    assert type(new) is type(old)
    names = "ABCDgh" if isinstance(new, MixedLCP) else ()
    for k in names:
        assert _rel(getattr(old, k), getattr(new, k)) <= 1e-13, k
    if isinstance(new, LCP):
        assert _rel(old.M, new.M) <= 1e-13 and _rel(old.q, new.q) <= 1e-13
        return
    keep, F, e, rx = _former_reduction(old)
    np.testing.assert_array_equal(new.kept_rows, keep)
    L = new.lcp_reduction()[0]
    assert _rel(F, L.M) <= 1e-9 and _rel(e, L.q) <= 1e-9
    # the same answer from lemke (the same pivots on the same LCP to rounding)
    sol = solve(new, "lemke")
    assert sol.success
    x_old = rx(sol.z)
    assert _rel(x_old, sol.x) <= 1e-8 * max(1.0, np.abs(x_old).max())
    res = st.recover(sys, built, sol)
    v_old = v0_old + sys.Minv @ (H_old.T @ sol.z + sys.J.T @ x_old)
    assert _rel(v_old, res.v_next) <= 1e-8
    # recover from the bare problem (H and v0 formed again from the system) gives the same bits
    np.testing.assert_array_equal(st.recover(sys, new, sol).v_next, res.v_next)
    # recover without the problem's kept rows (a problem built elsewhere) gives the same
    bare = MixedLCP(new.A, new.C, new.D, new.B, new.g, new.h)
    np.testing.assert_allclose(st.recover(sys, bare, sol).v_next, res.v_next, rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def trot_systems():
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sc = make_scene("quadruped", settle=0.02)
    sim = Simulator(sc, "stewart-trinkle", controllers=sc.controllers)
    out = []
    for k in range(90):
        sim.step()
        if k % 6 == 5:
            out.append(dataclasses.replace(sim.last_system, pyramid=None))
    return out


def test_quadruped_steps_build_the_former_lcp(trot_systems):
    assert any(s.nc for s in trot_systems) and all(s.nj for s in trot_systems)
    for sys in trot_systems:
        _check_against_former(sys)


def _random_system(rng, nbody=4, nj=5, nl=2, nc=3, nm=2, d=4, ndof_extra_fixed=False):
    """A system over ``nbody`` free bodies: SPD 6x6 mass blocks, rows on one or two bodies."""
    ndof = 6 * nbody
    Mb = []
    for _ in range(nbody):
        X = rng.standard_normal((6, 6))
        Mb.append(X @ X.T + 6 * np.eye(6))
    Wb = np.array([np.linalg.inv(b) for b in Mb])
    Wb = 0.5 * (Wb + Wb.transpose(0, 2, 1))
    M, Minv = sp.block_diag(Mb, format="csr"), sp.block_diag(list(Wb), format="csr")

    def rows(k):
        R = np.zeros((k, ndof))
        for r in range(k):
            for b in rng.choice(nbody, size=rng.integers(1, 3), replace=False):
                R[r, 6 * b:6 * b + 6] = rng.standard_normal(6)
        m = sp.csr_matrix(R)
        m.sum_duplicates()
        m.sort_indices()
        return m

    N = rows(nc)
    # S and T share N's pattern (the same bodies per contact), as the system's frame rows do
    S, T = N.copy(), N.copy()
    S.data, T.data = rng.standard_normal(N.nnz), rng.standard_normal(N.nnz)
    return ConstraintSystem(h=1e-3, ndof=ndof, M=M, Minv=Minv, v=rng.standard_normal(ndof),
                            f=rng.standard_normal(ndof), J=rows(nj), j_rhs=rng.standard_normal(nj),
                            j_err=np.full(nj, np.nan), L=rows(nl), l_bias=rng.standard_normal(nl), N=N,
                            n_bias=rng.standard_normal(nc), S=S, T=T, d=d, mu=rng.uniform(0.1, 1.0, nc),
                            phi=np.zeros(nc), A=rows(nm), a_target=rng.standard_normal(nm),
                            a_max=rng.uniform(0.1, 1.0, nm), cfm=0.0, W_blocks=Wb)


@pytest.mark.parametrize("seed", range(8))
def test_random_systems_build_the_former_lcp(seed):
    rng = np.random.default_rng(seed)
    sys = _random_system(rng, nj=0 if seed % 4 == 0 else int(rng.integers(1, 7)), nl=int(rng.integers(0, 3)), nc=int(rng.integers(1, 4)),
                         nm=int(rng.integers(0, 3)))
    new = st.build(sys).problem
    old, H_old, v0_old = _former_build(sys)
    if isinstance(new, LCP):
        assert _rel(old.M, new.M) <= 1e-13 and _rel(old.q, new.q) <= 1e-13
    else:
        for k in "ABCDgh":
            assert _rel(getattr(old, k), getattr(new, k)) <= 1e-13, k
        keep, F, e, rx = _former_reduction(old)
        np.testing.assert_array_equal(new.kept_rows, keep)
        L = new.lcp_reduction()[0]
        assert _rel(F, L.M) <= 1e-10 and _rel(e, L.q) <= 1e-10
        y = rng.uniform(0, 1, new.n)
        assert _rel(rx(y), new.recover_x(y)) <= 1e-10
    # without body blocks the general (sparse product) path gives the same problem
    gen = st.build(dataclasses.replace(sys, W_blocks=None)).problem
    for k in (("ABCDgh") if isinstance(new, MixedLCP) else ("M", "q")):
        assert _rel(getattr(gen, k), getattr(new, k)) <= 1e-13, k


def _redundant_mixed(rng, p=6, n=4, m=10, dependent=True):
    J = rng.standard_normal((p, m))
    if dependent:
        J[-1] = J[0] + 2 * J[1]
    X = rng.standard_normal((m, m))
    W = np.linalg.inv(X @ X.T + m * np.eye(m))
    W = 0.5 * (W + W.T)
    H = rng.standard_normal((n, m))
    A, C = J @ W @ J.T, J @ W @ H.T
    A = 0.5 * (A + A.T)
    g = J @ rng.standard_normal(m)         # consistent with the dependent row
    return MixedLCP(A, C, C.T.copy(), H @ W @ H.T + np.eye(n), g, rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(6))
def test_spd_shortcut_equals_the_pivoted_qr(seed):
    """Full-rank SPD A: the Cholesky shortcut keeps every row, as the QR does, with the same reduced
    LCP; a dependent joint row (A singular) is left to the QR, which drops it as before."""
    rng = np.random.default_rng(seed)
    p = _redundant_mixed(rng, dependent=False)
    assert p._reduce_spd() is not None
    keep, F, e, rx = _former_reduction(p)
    np.testing.assert_array_equal(p.kept_rows, keep)
    assert p.dropped_rows.size == 0
    L = p.lcp_reduction()[0]
    assert _rel(F, L.M) <= 1e-10 and _rel(e, L.q) <= 1e-10
    q = _redundant_mixed(rng, dependent=True)
    assert q._reduce_spd() is None
    keep, F, e, rx = _former_reduction(q)
    np.testing.assert_array_equal(q.kept_rows, keep)
    assert q.dropped_rows.size == 1
    L = q.lcp_reduction()[0]
    assert _rel(F, L.M) <= 1e-9 and _rel(e, L.q) <= 1e-9
    y = rng.uniform(0, 1, q.n)
    assert _rel(rx(y), q.recover_x(y)) <= 1e-9


def test_spd_shortcut_refuses_an_ill_conditioned_a():
    """lambda_min(A) too close to the QR's threshold: the shortcut declines (the QR decides)."""
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    A = Q @ np.diag([1.0, 1.0, 1.0, 1.0, 1e-9]) @ Q.T
    A = 0.5 * (A + A.T)
    p = MixedLCP(A, rng.standard_normal((5, 3)), rng.standard_normal((3, 5)), np.eye(3), rng.standard_normal(5),
                 rng.standard_normal(3))
    assert p._reduce_spd() is None
    assert p.kept_rows.size == 5          # full rank for the QR at rank_tol 1e-10


def _former_relative(p: MixedLCP, z, x):
    """The former numpy formula of MixedLCP.relative_residuals."""
    ax, az = np.abs(x), np.abs(z)
    te = np.abs(p.A) @ ax + np.abs(p.C) @ az + np.abs(p.g)
    size = max(np.abs(p.h).max(initial=0.0), np.abs(p.g).max(initial=0.0))
    t = np.abs(p.D) @ ax + np.abs(dense(p.B)) @ az + np.abs(p.h)
    r = lcp_relative(z, p.w(z, x), p.h, t, size)
    e = np.abs(p.A @ x + p.C @ z + p.g)
    te = np.maximum(te, NORMWISE_FLOOR * size)
    eq = float(np.max(np.where(te > 0, e / np.where(te > 0, te, 1.0), 0.0), initial=0.0))
    return max(r.natural, eq), r.complementarity, max(r.infeasibility, eq)


@pytest.mark.parametrize("seed", range(6))
def test_relative_residuals_kernel_equals_the_formula(seed):
    rng = np.random.default_rng(seed)
    p = _redundant_mixed(rng, dependent=bool(seed % 2))
    for z in (np.zeros(p.n), rng.uniform(0, 1, p.n), np.where(rng.uniform(size=p.n) < 0.5, 0.0, 1.0)):
        x = p.recover_x(z) + (1e-6 * rng.standard_normal(p.p) if seed % 3 == 0 else 0.0)
        got = p.relative_residuals(z, None, x)
        np.testing.assert_allclose((got.natural, got.complementarity, got.infeasibility),
                                   _former_relative(p, z, x), rtol=1e-12, atol=1e-14)   # scale-free: rounding ~1e-16
        sparse = MixedLCP(p.A, p.C, p.D, sp.csr_matrix(p.B), p.g, p.h)      # the general (numpy) path
        s = sparse.relative_residuals(z, None, x)
        np.testing.assert_allclose((s.natural, s.complementarity, s.infeasibility),
                                   (got.natural, got.complementarity, got.infeasibility), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(6))
def test_is_trivial_is_the_residual_definition(seed):
    """MixedLCP.is_trivial (equality rows first) equals the base definition: residuals at z = 0 zero."""
    rng = np.random.default_rng(seed)
    p = _redundant_mixed(rng, dependent=False)
    cases = [p, MixedLCP(p.A, p.C, p.D, p.B, np.zeros(p.p), np.abs(p.h)),
             MixedLCP(p.A, p.C, p.D, p.B, np.zeros(p.p), -np.abs(p.h)),
             MixedLCP(p.A, p.C, p.D, p.B, p.g, np.abs(p.h))]
    got = [c.is_trivial() for c in cases]
    assert got == [Problem.is_trivial(c) for c in cases]
    assert got[1] and not got[2]


def test_viscous_rows_equal_the_former_dense_rows(trot_systems):
    """viscous._rows scatters the system's CSR rows once; the former conversion (toarray, vstack,
    built.tangent_rows) gives the same arrays."""
    from contactlab.models import viscous
    from contactlab.models.built import tangent_rows, touching
    o = viscous.Options()
    for sys in trot_systems:
        m = sys.ndof
        M, U, S, T, J, bias = viscous._rows(sys, o)
        S0, T0 = tangent_rows(sys, touching(sys, o.active_gap), sys.nl)
        np.testing.assert_array_equal(M, sys.M.toarray())
        np.testing.assert_array_equal(U, np.vstack([sys.L.toarray().reshape(-1, m), sys.N.toarray().reshape(-1, m)]))
        np.testing.assert_array_equal(S, S0)
        np.testing.assert_array_equal(T, T0)
        np.testing.assert_array_equal(J, sys.J.toarray().reshape(-1, m))
        np.testing.assert_array_equal(bias, np.concatenate([sys.l_bias, sys.n_bias]))


@pytest.mark.parametrize("shape", [(3, 0, 0, 0), (0, 0, 0, 0), (0, 1, 0, 1), (4, 0, 0, 2), (2, 2, 0, 0)])
def test_systems_without_contacts_build_the_former_lcp(shape):
    """No contact rows (only joints, limits or motors, or nothing): the stacked rows' edge cases."""
    nj, nl, nc, nm = shape
    sys = _random_system(np.random.default_rng(sum(shape)), nj=nj, nl=nl, nc=nc, nm=nm)
    new = st.build(sys).problem
    old, H_old, v0_old = _former_build(sys)
    assert type(new) is type(old) and new.n == old.n
    for k in ("ABCDgh" if isinstance(new, MixedLCP) else ("M", "q")):
        assert _rel(getattr(old, k), getattr(new, k)) <= 1e-13, k
    sol = solve(new, "lemke")
    assert sol.success
    x = sol.x if sol.x is not None else np.zeros(0)
    v_old = v0_old + sys.Minv @ (H_old.T @ sol.z + (sys.J.T @ x if nj else 0.0))
    assert _rel(v_old, st.recover(sys, new, sol).v_next) <= 1e-10


@pytest.mark.parametrize("shape", [(0, 3, 4, 0), (2, 1, 6, 2), (1, 0, 4, 1), (0, 0, 4, 0), (3, 5, 8, 3)])
def test_pyramid_coupling_is_the_former_k(shape):
    """kernels/mixed.py pyramid_coupling equals the former sparse K (COO entries plus diags(cfm))."""
    from contactlab.kernels.mixed import pyramid_coupling
    nl, nc, d, nm = shape
    rng = np.random.default_rng(nc + d)
    mu = rng.uniform(0.1, 2.0, nc)
    K0, (o_cn, _, _, o_u, _) = _former_k(nl, nc, d, nm, mu)
    ny = K0.shape[0]
    for cfm in (0.0, 1e-6):
        dg = np.zeros(ny)
        dg[o_cn:o_u] = cfm
        K = (K0 + sp.diags(dg)).toarray()
        np.testing.assert_array_equal(pyramid_coupling(nl, nc, d, nm, mu, cfm), K)


def test_build_returns_a_built_that_still_reads_as_its_problem(trot_systems):
    """build() returns a Built (problem, rows, recovery state); the problem's names read through it
    (the spelling of the bare-problem days), and solve() given the Built names the fix."""
    from contactlab.errors import ProblemError
    from contactlab.models.built import Built
    built = st.build(trot_systems[0])
    assert isinstance(built, Built) and isinstance(built.problem, MixedLCP)
    assert built.rows == built.problem.row_groups and built.rows["normal"].stop > built.rows["normal"].start
    assert built.A is built.problem.A and built.n == built.problem.n
    with pytest.raises(ProblemError, match=r"pass its \.problem"):
        solve(built, "lemke")
