"""models/box_friction.py: bounds, warm start through a reordering, and the checked problem."""
import numpy as np
import pytest

from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def test_box_friction_bounds_match_their_definition():
    """box_friction._bounds (one compiled pass) against the layout written out: joints free, motors
    +-a_max, limits and normals [0, inf), friction rows coupled to their normal (findex, mu) or boxed
    by mu x the matched previous normal (new contacts: new_contact_bound)."""
    from types import SimpleNamespace
    from contactlab.models import box_friction as bf
    rng = np.random.default_rng(8)
    nj, nm, nl, nc = 3, 2, 1, 4
    guess = rng.uniform(0, 2, nc)
    guess[1] = np.nan
    sys = SimpleNamespace(nj=nj, nm=nm, nl=nl, nc=nc, a_max=rng.uniform(1, 2, nm), mu=rng.uniform(0, 1, nc),
                          normal_guess=guess)
    n = nj + nm + nl + 3 * nc
    o_n = nj + nm + nl
    for coupling in ("current", "previous"):
        opts = bf.Options(coupling=coupling, new_contact_bound=0.25)
        lo, hi, fi, mu = bf._bounds(sys, opts, n)
        assert np.all(lo[:nj] == -np.inf) and np.all(hi[:nj] == np.inf)
        assert np.array_equal(lo[nj:nj + nm], -sys.a_max) and np.array_equal(hi[nj:nj + nm], sys.a_max)
        assert np.all(lo[nj + nm:o_n + nc] == 0) and np.all(hi[nj + nm:o_n + nc] == np.inf)
        if coupling == "current":
            assert np.array_equal(fi, np.r_[np.full(o_n + nc, -1), np.tile(o_n + np.arange(nc), 2)])
            assert np.array_equal(mu, np.r_[np.zeros(o_n + nc), np.tile(sys.mu, 2)])
        else:
            assert fi is None and mu is None
            b = np.tile(sys.mu * np.where(np.isfinite(guess), guess, 0.25), 2)
            assert np.array_equal(hi[o_n + nc:], b) and np.array_equal(lo[o_n + nc:], -b)


def test_box_friction_warm_start_follows_each_contact_through_a_reordering():
    """box_friction.warm_start maps the previous impulses contact by contact (collision.match_indices:
    same shape pair, nearest point): with the step's contacts reported in another order, every
    contact starts from its own previous normal and friction impulses, and a contact on a new shape
    pair from 0; without a reordering the warm start is the previous answer itself."""
    import dataclasses
    from contactlab.collision import match_indices
    from contactlab.mechanics.system import build_system
    from contactlab.models import box_friction as bf
    sim = Simulator(make_scene("stack", count=3), "box-friction", "box-qp")
    for _ in range(5):
        sim.step()
    prev, result, z = sim.data.contacts, sim.data.result, sim.data.warm["z"]
    nc = prev.count
    same = match_indices(prev, prev, np.inf)
    assert np.array_equal(same, np.arange(nc))
    sys0 = build_system(sim.model, sim.data, prev, sim.h)
    assert np.array_equal(bf.warm_start(sys0, result, same, sim.model_options), z)
    perm = np.random.default_rng(2).permutation(nc)
    moved = dataclasses.replace(prev, **{f: getattr(prev, f)[perm] for f in
                                         ("body_a", "body_b", "shape_a", "shape_b", "point", "normal", "phi", "mu", "t1", "t2")})
    match = match_indices(prev, moved, np.inf)
    assert np.array_equal(match, perm)
    match[0] = -1                                    # as if contact 0 were on a new pair
    z0 = bf.warm_start(build_system(sim.model, sim.data, moved, sim.h), result, match, sim.model_options)
    o_n = z0.size - 3 * nc
    np.testing.assert_array_equal(z0[o_n + 1:o_n + nc], result.normal[perm[1:]])
    np.testing.assert_array_equal(z0[o_n + nc + 1:o_n + 2 * nc], result.tangent[perm[1:], 0])
    np.testing.assert_array_equal(z0[o_n + 2 * nc + 1:], result.tangent[perm[1:], 1])
    assert z0[o_n] == z0[o_n + nc] == z0[o_n + 2 * nc] == 0.0


@pytest.mark.parametrize("coupling", ["current", "previous"])
def test_box_friction_builds_the_checked_problem(coupling):
    """box_friction.build assembles its problem through BoxedLCP.trusted: the same arrays as the
    checked constructor gives (which accepts them), and with a non-finite q (a blown-up state) the
    checked constructor itself, so the error names the argument."""
    from contactlab.errors import ProblemError
    from contactlab.models import box_friction as bf
    from contactlab.problems import BoxedLCP
    sim = Simulator(make_scene("pile", count=6, seed=2), "box-friction", "pgs", model_options={"coupling": coupling})
    for _ in range(30):
        sim.step()
    p = sim.last_problem
    ref = BoxedLCP(p.M, p.q, p.lo, p.hi, *((p.findex, p.mu) if p.has_coupling else ()))
    for f in ("q", "lo", "hi", "findex", "mu"):
        np.testing.assert_array_equal(getattr(p, f), getattr(ref, f))
        assert getattr(p, f).dtype == getattr(ref, f).dtype
    assert p.n == ref.n and type(p.M) is type(ref.M)
    import dataclasses
    sys_ = dataclasses.replace(sim.last_system, v=np.full_like(sim.last_system.v, np.nan))
    sys_._box_rows = None
    with pytest.raises(ProblemError, match="q contains NaN"):
        bf.build(sys_, sim.model_options)


def test_box_friction_gives_its_sparse_problem_its_structure():
    """box_friction.build passes the problem's structure at construction (problems/structure.py):
    the row kinds partition the rows in layout order; no entry of M and no findex link couples two
    islands (the independent groups box-qp solves apart), and there is more than one in a pile on
    the ground; each body-pair group's rows act on one pair of bodies; the factors (H, W, cfm)
    give M = H W H' + cfm I; the old attribute names read the same parts."""
    import dataclasses
    import scipy.sparse as sp
    from contactlab.models import box_friction as bf
    sim = Simulator(make_scene("pile", count=6, seed=2), "box-friction", "box-qp")
    for _ in range(30):
        sim.step()
    p = bf.build(sim.last_system, dataclasses.replace(sim.model_options, dense_max=0))
    s = p.structure
    assert sp.issparse(p.M) and p.row_groups is s.row_groups and p.islands is s.islands
    bounds = [(g.start, g.stop) for g in s.row_groups.values()]
    assert bounds[0][0] == 0 and bounds[-1][1] == p.n and all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))
    count, label = s.islands
    assert count > 1 and label.shape == (p.n,) and set(label.tolist()) == set(range(count))
    M = sp.coo_matrix(p.M)
    assert np.all(label[M.row] == label[M.col])
    coupled = p.findex >= 0
    assert np.all(label[coupled] == label[p.findex[coupled]])
    H, W, cfm = s.factors
    Wfull = sp.block_diag(list(W), format="csr")
    np.testing.assert_allclose((H @ Wfull @ H.T).toarray() + cfm * np.eye(p.n), p.M.toarray(), rtol=0, atol=1e-12)
    H = sp.csr_matrix(H)
    bodies = [frozenset(np.unique(H.indices[H.indptr[i]:H.indptr[i + 1]] // 6).tolist()) for i in range(p.n)]
    for g in np.unique(s.body_groups):
        assert len({bodies[i] for i in np.flatnonzero(s.body_groups == g) if bodies[i]}) == 1


@pytest.mark.parametrize("coupling,theta", [("current", 0.0), ("previous", 0.0), ("previous", 0.95),
                                            ("previous", 1.0)])
def test_box_friction_q_and_matrix_against_numpy(coupling, theta):
    """The problem build() (dense and sparse) and rows() give, against the rows written out in numpy
    (no joints): M = H M^-1 H' + cfm I and q = H v_free + [n_bias; 0; 0], whose normal rows with
    ``cfm_centre`` = theta (``coupling="previous"``) are less theta cfm c_n~ (c_n~ the matched
    previous normal impulse, new contacts ``new_contact_bound``, at least 0: the regularisation's
    centre, box_friction.centre_normals); theta 0 (the default) and ``coupling="current"``: uncentred."""
    import dataclasses
    import scipy.sparse as sp
    from contactlab.models import box_friction as bf
    sim = Simulator(make_scene("stack", count=3), "box-friction", "box-qp",
                    model_options={"coupling": coupling, "new_contact_bound": 0.5, "cfm_centre": theta})
    for _ in range(20):
        assert sim.step().success
    sys_ = sim.last_system
    guess = np.array(sys_.normal_guess, dtype=float)
    guess[0] = np.nan                                # as if contact 0 were new this step
    sys_ = dataclasses.replace(sys_, normal_guess=guess)
    sys_._box_rows = None
    nc = sys_.nc
    H = sp.vstack([sys_.N, sys_.S, sys_.T]).toarray()
    Minv = sys_.Minv.toarray() if sp.issparse(sys_.Minv) else np.asarray(sys_.Minv)
    cfm = sim.model_options.cfm + sys_.cfm
    assert cfm > 0
    q0 = H @ sys_.v_free() + np.r_[sys_.n_bias, np.zeros(2 * nc)]
    est = np.maximum(np.where(np.isfinite(guess), guess, 0.5), 0.0)
    assert est[0] == 0.5 and np.all(est[1:] > 0)
    want = q0 - theta * cfm * np.r_[est, np.zeros(2 * nc)]
    M = H @ Minv @ H.T + cfm * np.eye(3 * nc)
    scale = np.abs(H).sum(axis=1) * np.abs(sys_.v_free()).max() + np.abs(q0)
    for opts in (sim.model_options, dataclasses.replace(sim.model_options, dense_max=0)):
        p = bf.build(sys_, opts)
        np.testing.assert_allclose(p.q, want, rtol=0, atol=1e-15 * scale.max())
        Mp = p.M.toarray() if sp.issparse(p.M) else p.M
        np.testing.assert_allclose(Mp, M, rtol=0, atol=1e-13 * np.abs(M).max())
    np.testing.assert_allclose(bf.rows(sys_, sim.model_options)[1], want, rtol=0, atol=1e-15 * scale.max())
    if coupling == "previous":       # the centre scales the estimate the friction box uses (eq. 16)
        np.testing.assert_array_equal(bf.build(sys_, sim.model_options).hi[nc:2 * nc], sys_.mu * est)


def test_box_friction_cfm_centre_options():
    """cfm_centre is a share in [0, 1] and needs the previous step's normal impulse (coupling="previous")."""
    from contactlab.errors import ModelError
    from contactlab.models import box_friction as bf
    for bad in (-0.1, 1.5):
        with pytest.raises(ModelError, match="cfm_centre"):
            bf.Options(coupling="previous", cfm_centre=bad)
    with pytest.raises(ModelError, match="coupling='previous'"):
        bf.Options(coupling="current", cfm_centre=1.0)
    assert bf.centre_of(bf.Options(coupling="previous", cfm_centre=0.5), 2e-8) == 1e-8
    assert bf.centre_of(bf.Options(coupling="previous"), 2e-8) == 0.0


def test_box_friction_centred_problem_leaves_a_settled_contact_no_sink():
    """box-qp with coupling "previous" and cfm_centre 1 on a resting 8-box stack (the compiled
    step): the step's answer solves the centred boxed LCP, checked in numpy (w = (A + cfm I) z + q0 -
    cfm z~, with z the mid-function fixed point of its box to the certificate's tolerance), and on
    the settled stack's pressing contacts the normal velocity it leaves is N v+ = cfm (z~ - z) -
    n_bias, so the contacts no longer sink by cfm z per step (the uncentred problem's N v+ = -cfm z,
    arechavaleta eq. 16-17 with cfm I): |N v+| is a small part of cfm z. Uncentred (the default) the
    same stack's contacts sink by cfm z."""
    import scipy.sparse as sp
    for theta in (1.0, 0.0):
        sim = Simulator(make_scene("stack", count=8), "box-friction", "box-qp",
                        model_options={"coupling": "previous", "cfm_centre": theta})
        for _ in range(100):
            record = sim.step()
            assert record.success
        if record.iterations == 0:      # the previous answer taken as is (warm start certified to its
            record = sim.step()         # tolerance on w, 8.5e-11 here): the relation below is exact on a solved step
            assert record.success and record.iterations > 0
        sys_, res = sim.last_system, sim.data.result
        nc = sys_.nc
        N, S, T = (X.toarray() for X in (sys_.N, sys_.S, sys_.T))
        H = np.vstack([N, S, T])
        Minv = sys_.Minv.toarray() if sp.issparse(sys_.Minv) else np.asarray(sys_.Minv)
        cfm = sim.model_options.cfm + sys_.cfm
        est = np.maximum(np.nan_to_num(np.asarray(sys_.normal_guess, float), nan=0.0), 0.0)
        z = np.r_[res.normal, res.tangent[:, 0], res.tangent[:, 1]]
        q = H @ sys_.v_free() + np.r_[sys_.n_bias, np.zeros(2 * nc)] - theta * cfm * np.r_[est, np.zeros(2 * nc)]
        A = H @ Minv @ H.T
        w = A @ z + cfm * z + q
        b = np.r_[np.full(nc, np.inf), np.tile(sys_.mu * est, 2)]
        lo = np.r_[np.zeros(nc), -b[nc:]]
        nat = z - np.clip(z - w, lo, b)
        terms = np.abs(q) + np.abs(A + cfm * np.eye(3 * nc)) @ np.abs(z)
        assert np.max(np.abs(nat) / terms) < 1e-6
        v_next = sys_.v_free() + Minv @ (H.T @ z)
        np.testing.assert_allclose(v_next, res.v_next, rtol=0, atol=1e-12)
        press = res.normal > 1e-3
        assert press.sum() >= 4 * 7
        assert np.all(sys_.n_bias[press] == 0.0)
        Nv = N @ v_next
        sink = cfm * res.normal[press]
        if theta == 1.0:    # the relation (measured: to 3e-16 m/s, against cfm z of 2.5e-10 to 2e-9)
            np.testing.assert_allclose(Nv[press], cfm * (est - res.normal)[press], rtol=0, atol=0.01 * sink.min())
            assert np.abs(Nv[press]).max() < 0.1 * sink.min()
        else:               # -cfm z to the certificate's tolerance on w (measured: within 4 %)
            assert np.all(Nv[press] < -0.5 * sink) and np.all(Nv[press] > -1.5 * sink)
