"""The compiled joint projection (mechanics/joint_projection.py) against the former Python Newton
loop of ``Simulator.project_joints`` (kept below as the reference: scipy rows, numpy Delassus
product, scipy Cholesky / numpy least squares, numpy displacement), on randomly perturbed
articulated models: floating base, joint limits violated, kinematic and planar bodies, couplings,
prismatic / spherical / fixed joints, redundant rows (least-squares path)."""
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from contactlab.mechanics import Body, Joint, Scene, Settings, Shape, joint_rows
from contactlab.mechanics.kernels import delassus_dense
from contactlab.mechanics.model import KIND_KINEMATIC
from contactlab.mechanics.rotation import integrate_quat
from contactlab.mechanics.system import _block_csr, _packed, mobility_blocks
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _ref_solve(A, b):
    if A.shape[0]:
        try:
            c, low = sla.cho_factor(A, check_finite=False)
            d = np.abs(np.diag(c))
            if d.min() > 1e-6 * d.max():
                x = sla.cho_solve((c, low), b, check_finite=False)
                if np.all(np.isfinite(x)):
                    return x
        except np.linalg.LinAlgError:
            pass
    return np.linalg.lstsq(A, b, rcond=1e-12)[0]


def _ref_displace(model, data, dx):
    move = (model.dof_start >= 0) & (model.kind != KIND_KINEMATIC)
    D = np.asarray(dx, dtype=np.float64).reshape(-1, 6)[model.dof_start[move] // 6]
    data.position[move] += D[:, :3]
    data.quaternion[move] = integrate_quat(data.quaternion[move], D[:, 3:], 1.0)


def reference_project(model, data, h, tol=1e-10, max_iter=8):
    """The Python loop the compiled kernel replaces (contactlab before the compiled projection)."""
    joints = _packed(model)
    err_max = 0.0
    for _ in range(max_iter):
        (J, _, err, _), _, _, js = joint_rows(model, data, h)
        finite = np.isfinite(err)
        Jr, e = (J, err) if finite.all() else (J[finite], err[finite])
        gap_lo, gap_hi = js.coordinate - joints.lower, joints.upper - js.coordinate
        past_lo, past_hi = np.flatnonzero(gap_lo < -tol), np.flatnonzero(gap_hi < -tol)
        err_max = float(np.max(np.abs(e), initial=0.0))
        worst = max(err_max, -float(np.min(gap_lo[past_lo], initial=0.0)),
                    -float(np.min(gap_hi[past_hi], initial=0.0)))
        if worst <= tol:
            break
        if past_lo.size or past_hi.size:
            Jr = sp.vstack([Jr, js.rate_rows[past_lo], -js.rate_rows[past_hi]], format="csr")
            e = np.concatenate([e, gap_lo[past_lo], gap_hi[past_hi]])
        W = mobility_blocks(model, data)
        A = delassus_dense(Jr.indptr, Jr.indices, Jr.data, W, Jr.shape[0], np.zeros(Jr.shape[0]))
        lam = _ref_solve(A, -e)
        _ref_displace(model, data, _block_csr(W) @ (Jr.T @ lam))
    return err_max


def _perturb(sim, rng, dx=2e-3, dq=2e-2):
    live = np.flatnonzero((sim.model.dof_start >= 0))
    d = sim.data
    d.position[live] += dx * rng.standard_normal((live.size, 3))
    d.quaternion[live] = integrate_quat(d.quaternion[live], dq * rng.standard_normal((live.size, 3)), 1.0)


def _link(name, pos, mass=1.0, size=(0.4, 0.05, 0.05), **kw):
    return Body(name, mass=mass, position=pos, shapes=[Shape("box", size=size)], **kw)


def _chain():
    """Fixed, spherical, limited revolutes, a coupling, a prismatic with limits."""
    sh = [Shape("box", size=(0.2, 0.1, 0.1))]
    bodies = [_link("a", (0.2, 0, 1)), _link("b", (0.6, 0, 1)), _link("c", (1.0, 0, 1)), _link("d", (1.4, 0, 1)),
              Body("e", mass=0.5, position=(1.8, 0.1, 1), shapes=sh), _link("s", (1.8, 0.5, 1.0), mass=0.7)]
    joints = [Joint("weld", "fixed", "world", "a", anchor=(0, 0, 1.0)),
              Joint("ball", "spherical", "a", "b", anchor=(0.4, 0, 1.0)),
              Joint("h1", "revolute", "b", "c", anchor=(0.8, 0, 1.0), axis=(0, 1, 1), lower=-0.01, upper=0.01),
              Joint("h2", "revolute", "c", "d", anchor=(1.2, 0, 1.0), axis=(0, 0, 1), lower=-0.02, upper=0.005),
              Joint("h3", "revolute", "d", "e", anchor=(1.6, 0, 1.0), axis=(0.3, 0.9, 0.1), follows="h2", ratio=0.5),
              Joint("rail", "prismatic", "e", "s", anchor=(1.8, 0.5, 1.0), axis=(0, 1, 0), lower=-0.001, upper=0.001)]
    return Scene("chain", bodies, joints, settings=Settings(dt=0.005))


def _kinematic_planar():
    """A kinematic body carrying a two-link finger (limits), a planar puck, a redundant pair of
    identical hinges (J M^-1 J' singular: the least-squares path) and a four-bar-like closed loop."""
    bodies = [_link("palm", (0, 0, 1), kind="kinematic", linear_velocity=(0.1, 0, 0)),
              _link("f1", (0.4, 0, 1)), _link("f2", (0.8, 0, 1)),
              Body("puck", mass=1.0, planar=True, position=(0, 2, 0.5), shapes=[Shape("box", size=(0.2, 0.1, 0.05))]),
              _link("r1", (0.2, -1, 1)), _link("r2", (0.6, -1, 1))]
    joints = [Joint("k1", "revolute", "palm", "f1", anchor=(0.2, 0, 1), axis=(0, 1, 0), lower=-0.01, upper=0.01),
              Joint("k2", "revolute", "f1", "f2", anchor=(0.6, 0, 1), axis=(0, 1, 0), lower=-0.01, upper=0.01),
              Joint("r0", "revolute", "world", "r1", anchor=(0, -1, 1), axis=(0, 0, 1)),
              Joint("r0bis", "revolute", "world", "r1", anchor=(0, -1, 1), axis=(0, 0, 1)),
              Joint("rr", "revolute", "r1", "r2", anchor=(0.4, -1, 1), axis=(0, 0, 1))]
    return Scene("kp", bodies, joints, gravity=(0, 0, 0), settings=Settings(dt=0.01))


SCENES = {
    "quadruped": lambda: make_scene("quadruped"),
    "pendulum": lambda: make_scene("pendulum-chain", links=5, limit_deg=5.0),
    "chain": _chain,
    "kinematic-planar": _kinematic_planar,
    "barrett": lambda: make_scene("barrett-grasp"),
}


@pytest.mark.parametrize("name", sorted(SCENES))
@pytest.mark.parametrize("max_iter", [1, 2, 8])
def test_compiled_projection_gives_the_reference_iterates(name, max_iter):
    """Each Newton step and the converged positions equal the Python loop's (to rounding: the
    Cholesky solve's summation order differs), and so does the returned error."""
    rng = np.random.default_rng(7)
    sim = Simulator(SCENES[name](), "stewart-trinkle", "lemke")
    for trial in range(3):
        _perturb(sim, rng, dq=0.05 if name == "pendulum" else 2e-2)
        ref = sim.data.copy()
        err_ref = reference_project(sim.model, ref, sim.h, max_iter=max_iter)
        err = sim.project_joints(max_iter=max_iter)
        assert np.allclose(sim.data.position, ref.position, rtol=0, atol=1e-12)
        assert np.allclose(sim.data.quaternion, ref.quaternion, rtol=0, atol=1e-12)
        assert err == pytest.approx(err_ref, rel=1e-9, abs=1e-14)
        if max_iter == 8 and name != "kinematic-planar":
            assert err <= 1e-10 and sim.joint_error() == pytest.approx(reference_error(sim), abs=1e-15)


def reference_error(sim):
    (_, _, err, _), *_ = joint_rows(sim.model, sim.data, sim.h)
    e = err[np.isfinite(err)]
    return float(np.max(np.abs(e), initial=0.0))


def test_projection_respects_limits_kinematic_and_planar_bodies():
    """After the projection: limited joints within their bounds, the kinematic palm where it was,
    the planar puck back on its plane, the redundant hinge pair satisfied (least squares)."""
    rng = np.random.default_rng(1)
    sim = Simulator(_kinematic_planar(), "stewart-trinkle", "lemke")
    _perturb(sim, rng, dx=1e-2, dq=5e-2)
    palm = (sim.data.position[0].copy(), sim.data.quaternion[0].copy())
    sim.project_joints()
    assert np.array_equal(sim.data.position[0], palm[0]) and np.array_equal(sim.data.quaternion[0], palm[1])
    assert sim.joint_error() < 1e-9
    assert sim.data.position[3, 2] == pytest.approx(0.5, abs=1e-9)
    (_, _, _, _), _, _, js = joint_rows(sim.model, sim.data, sim.h)
    assert np.all(np.abs(js.coordinate[:2]) <= 0.01 + 1e-9)


def test_projection_without_position_rows_changes_nothing():
    sim = Simulator(Scene("free", [_link("a", (0, 0, 1))], gravity=(0, 0, 0)), "stewart-trinkle", "lemke")
    x, q = sim.data.position.copy(), sim.data.quaternion.copy()
    assert sim.project_joints() == 0.0 and sim.joint_error() == 0.0
    assert np.array_equal(sim.data.position, x) and np.array_equal(sim.data.quaternion, q)


def test_compiled_displace_is_the_array_formula():
    rng = np.random.default_rng(4)
    sim = Simulator(_kinematic_planar(), "stewart-trinkle", "lemke")
    dx = 0.1 * rng.standard_normal(sim.model.ndof)
    ref = sim.data.copy()
    _ref_displace(sim.model, ref, dx)
    sim._displace(dx)
    assert np.array_equal(sim.data.position, ref.position)
    assert np.allclose(sim.data.quaternion, ref.quaternion, rtol=0, atol=1e-15)


NOJIT_SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_joint_projection import _chain, _kinematic_planar, _perturb
from contactlab.sim import Simulator
out = {{}}
for name, build in (("chain", _chain), ("kinematic-planar", _kinematic_planar)):
    sim = Simulator(build(), "stewart-trinkle", "lemke")
    _perturb(sim, np.random.default_rng(11), dx=5e-3, dq=5e-2)
    err = sim.project_joints()
    out[name] = [err, sim.data.position.tolist(), sim.data.quaternion.tolist()]
print(json.dumps(out))
"""


def test_projection_kernels_run_as_plain_python_with_the_same_answers():
    """NUMBA_DISABLE_JIT=1: the compiled projection is readable reference code (DESIGN.md convention 7)."""
    import json
    import os
    import subprocess
    import sys
    script = NOJIT_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    runs = []
    for flag in ("1", "0"):
        res = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, NUMBA_DISABLE_JIT=flag),
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    for name in runs[0]:
        (e0, x0, q0), (e1, x1, q1) = runs[0][name], runs[1][name]
        assert e0 == pytest.approx(e1, rel=1e-6, abs=1e-14)
        np.testing.assert_allclose(x0, x1, rtol=0, atol=1e-12)
        np.testing.assert_allclose(q0, q1, rtol=0, atol=1e-12)


def _joint_like_rows(rng, nbody, pairs, width=5, extra=()):
    """CSR rows J (width rows per body pair, values in both bodies' six columns; ``extra``: rows
    on any set of bodies) and W (nbody, 6, 6) SPD blocks."""
    import scipy.sparse as sp
    dense = []
    for bodies in [p for p in pairs for _ in range(width)] + list(extra):
        row = np.zeros(6 * nbody)
        for b in bodies:
            row[6 * b:6 * b + 6] = rng.standard_normal(6)
        dense.append(row)
    J = sp.csr_matrix(np.array(dense))
    B = rng.standard_normal((nbody, 6, 6))
    W = np.einsum("kij,klj->kil", B, B) + 0.1 * np.eye(6)
    return J, W


def _grouped_solve(J, W, b, live=None):
    from contactlab.mechanics.joint_projection import grouped_order, rows_solve
    live = np.ones(W.shape[0], dtype=bool) if live is None else live
    indices = J.indices.astype(np.int64)
    return rows_solve(J.indptr.astype(np.int64), indices, J.data, W, b, live), \
        grouped_order(J.indptr.astype(np.int64), indices, live)


def _dense_delassus(J, W):
    Wd = np.zeros((6 * W.shape[0],) * 2)
    for k in range(W.shape[0]):
        Wd[6 * k:6 * k + 6, 6 * k:6 * k + 6] = W[k]
    return J.toarray() @ Wd @ J.toarray().T


def test_joint_projection_solve_is_exact_on_spd_and_minimum_norm_on_dependent_rows():
    """The joint projection solves J M^-1 J' lam = -err by a Cholesky factorisation over the row
    groups (a joint's rows: the bodies they touch) when the matrix is clearly positive definite, and
    by the minimum-norm least squares otherwise (redundant joint rows): against numpy's dense solve
    and pinv, on a tree of bodies (a floating base with four three-joint legs: no fill), the same
    with a loop closed and a row on four bodies (fill), and rows repeated."""
    rng = np.random.default_rng(3)
    tree = [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 6), (0, 7), (7, 8), (8, 9), (0, 10), (10, 11), (11, 12)]
    for pairs, extra in ((tree, ()), (tree + [(3, 6)], [(2, 5, 8, 11)]), ([(0,)], ())):
        J, W = _joint_like_rows(rng, 13, pairs, extra=extra)
        b = rng.standard_normal(J.shape[0])
        x, (q, gs, nbr, nnb) = _grouped_solve(J, W, b)
        A = _dense_delassus(J, W)
        assert np.allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-9 * np.abs(np.linalg.solve(A, b)).max())
        assert sorted(q) == list(range(J.shape[0]))
        assert gs.size - 1 == len(set(pairs)) + len(extra)     # one group per body pair, coupling alone
        assert all(np.all(nbr[s, :nnb[s]] > s) for s in range(gs.size - 1))     # neighbours come later
    # a body that does not yield (kinematic: W = 0) couples nothing: the four legs' groups on it are
    # not neighbours, and the answer is still exact
    J, W = _joint_like_rows(rng, 13, tree)
    W[0] = 0.0
    live = np.ones(13, dtype=bool)
    live[0] = False
    b = rng.standard_normal(J.shape[0])
    x, (q, gs, nbr, nnb) = _grouped_solve(J, W, b, live)
    assert np.allclose(_dense_delassus(J, W) @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())
    assert nnb.sum() == 8      # each leg: hip-knee, knee-foot, eliminated from the foot (the base joins nothing)
    # rows repeated: singular, b in the range: minimum-norm least squares
    Jd, W = _joint_like_rows(rng, 4, [(0, 1), (1, 2)])
    import scipy.sparse as sp
    Jd = sp.csr_matrix(np.vstack([Jd.toarray(), Jd.toarray()[:3]]))
    Ad = _dense_delassus(Jd, W)
    bd = Ad @ rng.standard_normal(Ad.shape[0])
    x, _ = _grouped_solve(Jd, W, bd)
    assert np.allclose(Ad @ x, bd, atol=1e-8 * np.abs(bd).max())
    assert np.allclose(x, np.linalg.pinv(Ad, rcond=1e-12) @ bd, atol=1e-8 * np.abs(x).max())
    from contactlab.mechanics.joint_projection import rows_solve
    assert rows_solve(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), W, np.zeros(0),
                      np.ones(4, dtype=bool)).shape == (0,)
