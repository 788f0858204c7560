"""box-qp's interior-point Newton systems in body space (kernels/body_space.py, solvers/box_qp/
``_BodySpace``): for M = H W H' + cfm I, S = W^-1 + H' E^-1 H and x = E^-1 (r - H S^-1 H' E^-1 r)
against the contact-space system (M_keep + diag(d)) x = r solved directly; the cases where the form
does not apply; the interior point with and without it on the same problems; and box friction's
``factors`` against its own matrix."""
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from contactlab.kernels.body_space import body_space_layout, body_space_values
from contactlab.mechanics.system import build_system
from contactlab.models import box_friction
from contactlab.problems import BoxedLCP
from contactlab.problems.islands import island_problem
from contactlab.problems.residual import relative_error
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solvers import solve
from contactlab.solvers.box_qp import BoxQPOptions, _BodySpace, _ipm

from tests.problems import body_rows


def contact_rows(rng, nbody, nrows, held=(), three=False):
    """A contact-like H (CSR, 6 columns per body, each row on one or two bodies; ``three``: one row on
    three), W's 6x6 blocks (SPD; zero for the ``held`` bodies)."""
    def bodies_of(r):
        bodies = rng.choice(nbody, size=1 if rng.random() < 0.2 else 2, replace=False)
        return [0, 1, 2] if three and r == nrows // 2 else np.sort(bodies)
    H, W = body_rows(rng, nbody, nrows, bodies_of)
    W[list(held)] = 0.0
    return H, W


def contact_matrix(H, W, cfm):
    return (H @ sp.block_diag(list(W), format="csr") @ H.T + cfm * sp.identity(H.shape[0])).tocsr()


@pytest.mark.parametrize("held", [(), (3, 7)])
def test_body_space_solves_the_contact_space_system(held):
    rng = np.random.default_rng(11)
    H, W = contact_rows(rng, 12, 150, held)
    cfm = 1e-6
    M = contact_matrix(H, W, cfm)
    keep = np.sort(rng.choice(150, size=120, replace=False))
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    assert body is not None and body.nt <= 12 - len(held)
    assert np.allclose(body.base, M.diagonal()[keep], rtol=1e-12, atol=0)
    for scale in (1e-6, 1.0, 1e6):          # rows near their bound (large d) and far inside (d ~ 0)
        d = scale * rng.uniform(0.0, 1.0, keep.size)
        d[::5] = 0.0
        A = M[keep][:, keep].toarray() + np.diag(d)
        r = rng.normal(size=keep.size)
        x = body.solver(d)(r)
        ref = sla.solve(A, r, assume_a="pos")
        # S itself: W^-1 + H' E^-1 H on the touched bodies, upper triangle
        S_ref = np.zeros((6 * body.nt, 6 * body.nt))
        live = [b for b in range(12) if b not in held and np.any(H[keep][:, 6 * b:6 * b + 6].toarray())]
        dofs = np.concatenate([np.arange(6 * b, 6 * b + 6) for b in live])
        Hk = H[keep][:, dofs].toarray()
        S_ref = sla.block_diag(*[np.linalg.inv(W[b]) for b in live]) + Hk.T @ np.diag(1.0 / (cfm + d)) @ Hk
        S = body.S.toarray()
        iu = np.triu_indices_from(S)
        assert np.allclose(S[iu], S_ref[iu], rtol=1e-10, atol=1e-10 * np.abs(S_ref).max())
        assert np.abs(A @ x - r).max() <= 1e-8 * (np.abs(A).max() * np.abs(x).max() + np.abs(r).max())
        assert np.abs(x - ref).max() <= 1e-6 * np.abs(ref).max()


def test_body_space_refuses_what_it_cannot_form():
    rng = np.random.default_rng(3)
    H, W = contact_rows(rng, 10, 120)
    M = contact_matrix(H, W, 1e-6)
    keep = np.arange(120)
    assert _BodySpace.of((H, W, 1e-6), M, keep, dense_max=50) is not None
    assert _BodySpace.of(None, M, keep, dense_max=50) is None
    assert _BodySpace.of((H, W, 0.0), M, keep, dense_max=50) is None           # E = d can reach 0
    assert _BodySpace.of((H, W, 1e-6), M, keep, dense_max=200) is None         # dense path
    assert _BodySpace.of((H, W, 1e-6), M, keep[:25], dense_max=20) is None     # 60 body rows >= 2 x 25 rows
    assert _BodySpace.of((H, W, 1e-6), M, keep[:50], dense_max=20) is not None  # 60 < 2 x 50 (a landing pile's)
    H3, W3 = contact_rows(rng, 10, 120, three=True)
    assert _BodySpace.of((H3, W3, 1e-6), contact_matrix(H3, W3, 1e-6), keep, dense_max=50) is None
    W_bad = W.copy()
    W_bad[4] = np.diag([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])                          # singular, not zero
    ok = body_space_layout(H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data, keep, W_bad)[0]
    assert not ok


@pytest.mark.parametrize("seed, nbody, nrows", [(0, 30, 600), (1, 30, 600), (2, 30, 600), (3, 120, 450)])
def test_interior_point_in_body_space_matches_contact_space(seed, nbody, nrows):
    """The same QP by the interior point with M's own factorisation and in body space: both certify,
    same answer to the tolerance's order, iterations within one; with more body coordinates than
    kept rows (120 bodies, ~400 kept rows: a landing pile's ratio) too."""
    rng = np.random.default_rng(seed)
    H, W = contact_rows(rng, nbody, nrows, held=(5,))
    cfm = 1e-8
    M = contact_matrix(H, W, cfm)
    n = M.shape[0]
    q = rng.normal(size=n)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    fr = np.arange(n) % 3 != 0
    lo[fr], hi[fr] = -0.3, 0.3
    fixed = rng.random(n) < 0.1
    lo[fixed] = hi[fixed] = 0.0
    opts = BoxQPOptions(algorithm="ipm")
    a, b = [0], [0]
    assert _BodySpace.of((H, W, cfm), M, np.flatnonzero(~fixed), opts.dense_max) is not None
    za, wa, oka = _ipm(M, q, lo, hi, opts, opts.tol, a)
    zb, wb, okb = _ipm(M, q, lo, hi, opts, opts.tol, b, factors=(H, W, cfm))
    assert oka and okb
    p = BoxedLCP(M, q, lo, hi)
    assert relative_error(p.relative_residuals(zb)) <= opts.tol
    assert abs(a[0] - b[0]) <= 1
    assert np.abs(za - zb).max() <= 1e-5 * np.abs(za).max()
    sol = solve(p, "box-qp", algorithm="ipm")
    p.factors = (H, W, cfm)
    sol_b = solve(p, "box-qp", algorithm="ipm")
    assert sol.success and sol_b.success


def test_box_friction_factors_are_its_matrix():
    """box friction's sparse problems carry (H, W, cfm) with M = H W H' + cfm I, and an island's
    sub-problem the island's rows of H."""
    sim = Simulator(make_scene("pile", count=60), "box-friction", "box-qp", model_options={"coupling": "previous"})
    for _ in range(40):
        sim.step()
    sys = build_system(sim.model, sim.data, sim.data.contacts, sim.h)
    p = box_friction.build(sys, box_friction.Options(coupling="previous", dense_max=0))
    H, W, cfm = p.factors
    assert cfm == pytest.approx(1e-8)
    assert abs(contact_matrix(H, W, cfm) - p.M).max() <= 1e-12 * abs(p.M).max()
    count, labels = p.islands
    big = np.argmax(np.bincount(labels))
    idx = np.flatnonzero(labels == big)
    sub = island_problem(p, idx, dense_max=0)
    Hs, Ws, cs = sub.factors
    assert abs(contact_matrix(Hs, Ws, cs) - sub.M).max() <= 1e-12 * abs(p.M).max()


def test_kept_rows_error_is_a_lower_bound_of_the_certified_error():
    """kernels/body_space.py ``kept_box_error``: w = M z + q on the kept rows from the factors, and a
    residual never above the certified one (kernels/residual.py ``csr_box_error``, the one definition),
    on iterates near and far from an answer; where the bound exceeds a tolerance, so does the error."""
    from contactlab.kernels.residual import csr_box_error
    rng = np.random.default_rng(5)
    H, W = contact_rows(rng, 15, 200)
    cfm = 1e-8
    M = contact_matrix(H, W, cfm)
    n = M.shape[0]
    lo, hi = np.zeros(n), np.full(n, np.inf)
    fr = np.arange(n) % 3 != 0
    lo[fr], hi[fr] = -0.4, 0.4
    fixed = rng.random(n) < 0.15
    lo[fixed] = hi[fixed] = 0.0
    keep = np.flatnonzero(~fixed)
    body = _BodySpace.of((H, W, cfm), M, keep, dense_max=50)
    assert body is not None
    q = rng.normal(size=n)
    sol = solve(BoxedLCP(M, q, lo, hi), "box-qp", algorithm="ipm")
    assert sol.success
    for t in (1.0, 1e-2, 1e-5, 1e-9, 0.0):      # from far away to the answer itself
        z = np.clip(sol.z + t * rng.normal(size=n), lo, hi)
        z[fixed] = 0.0
        w_exact, work = np.empty(n), np.empty((5, n))
        exact = csr_box_error(M.indptr, M.indices, M.data, q, lo, hi, z, w_exact, work)
        wk = np.empty(keep.size)
        low = body.lower_error(q[keep], lo[keep], hi[keep], z[keep], float(np.abs(q).max()), wk,
                               np.empty((5, keep.size)))
        assert np.allclose(wk, w_exact[keep], rtol=0, atol=1e-12 * (np.abs(q).max() + np.abs(z).max()))
        assert low <= exact * (1 + 1e-9) + 1e-15
        assert low >= 1e-3 * exact      # a bound that says something (the terms differ by cancellation only)
