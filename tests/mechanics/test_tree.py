"""Kinematic trees in joint coordinates (contactlab.mechanics.tree, sim/tree_kernels.py) against
independent references: the motion subspace against the null space of the maximal-coordinate joint
rows (scipy), CRBA's H against S' M S in that basis, contact rows in joint coordinates against finite
differences of the contact point's position under joint motion, forward kinematics against the
joint rows' own error, the joint frames and body rates against scipy's rotations and numpy's products,
and a free tree's momentum and energy over a run."""
import numpy as np
import pytest
from scipy.linalg import null_space

from contactlab.kernels.mass_factor import coordinate_parents, tree_factor, tree_solve, tree_transposed_solve
from contactlab.mechanics.rows import contact_terms
from contactlab.mechanics.system import build_system
from contactlab.mechanics.tree import (body_jacobians, body_velocities, crba, forward_kinematics, motion_columns,
                                       tree_coordinates, tree_topology)
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim.tree_kernels import joint_rows_of


def _sim(robot, **kw):
    sc = make_scene(robot)
    return Simulator(sc, "no-slip", None, controllers=kw.pop("controllers", getattr(sc, "controllers", ())), **kw)


def _kin(sim):
    m = sim.model
    tree, why = tree_topology(m)
    assert tree is not None, why
    J = m.joint_arrays
    return tree, J


def _posed(sim, seed):
    """The simulator's state moved to random joint angles and a random base orientation, on its joints
    (forward kinematics), with random joint rates; returns (tree, joints, theta, qdot)."""
    rng = np.random.default_rng(seed)
    m, d = sim.model, sim.data
    tree, J = _kin(sim)
    theta, qd, _, _ = tree_coordinates(*tree.args[:5], J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a, J.q_rel0,
                                       tree.nq, d.position, d.quaternion, d.linear_velocity, d.angular_velocity)
    theta = theta + rng.uniform(-0.6, 0.6, theta.size)
    r = tree.order[0]
    q = rng.normal(size=4)
    d.quaternion[r] = q / np.linalg.norm(q)
    ax, P = forward_kinematics(tree.order, tree.joint, tree.qstart, J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a,
                               J.q_rel0, theta, d.position, d.quaternion)
    qd = rng.normal(size=tree.nq)
    S6 = motion_columns(tree.order, tree.joint, tree.qstart, tree.qcount, tree.root, J.kind, tree.nq, d.position,
                        ax, P)
    Sb = body_jacobians(tree.order, tree.root, tree.anc_ptr, tree.anc_idx, tree.nq, d.position, S6)
    body_velocities(tree.order, tree.anc_ptr, tree.anc_idx, Sb, qd, d.linear_velocity, d.angular_velocity)
    return tree, J, theta, qd, S6, Sb


def _S_full(sim, tree, Sb):
    """(ndof, nq): the maximal velocity of every moving body per joint rate."""
    m = sim.model
    S = np.zeros((m.ndof, tree.nq))
    for b in np.flatnonzero(m.dof_start >= 0):
        S[m.dof_start[b]:m.dof_start[b] + 6] = Sb[b]
    return S


@pytest.mark.parametrize("robot", ["quadruped", "solo12"])
def test_topology_of_the_legged_robots(robot):
    sim = _sim(robot)
    tree, _ = _kin(sim)
    n_rev = sum(j.kind == "revolute" for j in sim.model.joints)
    assert tree.nq == 6 + n_rev == 18
    root = tree.order[0]
    assert tree.qcount[root] == 6 and np.all(tree.root[tree.order] == root)


@pytest.mark.parametrize("robot,seed", [("quadruped", 0), ("quadruped", 1), ("solo12", 2)])
def test_motion_subspace_is_the_joint_rows_null_space_and_crba_is_its_mass_matrix(robot, seed):
    sim = _sim(robot)
    tree, J, theta, qd, S6, Sb = _posed(sim, seed)
    m, d = sim.model, sim.data
    sys = build_system(m, d, None)
    Jd = sys.J.toarray()
    Z = null_space(Jd)            # an independent orthonormal basis of the joint rows' null space
    S = _S_full(sim, tree, Sb)
    assert Z.shape[1] == tree.nq
    scale = np.abs(S).max()
    assert np.abs(Jd @ S).max() < 1e-12 * scale * np.abs(Jd).max()
    C = Z.T @ S
    assert np.abs(Z @ C - S).max() < 1e-12 * scale
    assert np.linalg.matrix_rank(C) == tree.nq
    M = sys.M.toarray()
    H_ref = C.T @ (Z.T @ M @ Z) @ C
    H = crba(tree.order, tree.parent, tree.qstart, tree.qcount, tree.root, tree.anc_ptr, tree.anc_idx, tree.nq,
             d.position, d.quaternion, m.mass, m.inertia, S6)
    assert np.allclose(H, H.T, rtol=0, atol=0)
    assert np.abs(H - H_ref).max() < 1e-11 * np.abs(H_ref).max()
    # the kinetic energy of the maximal velocities the rates give
    v = d.velocity_vector(m)
    assert np.isclose(0.5 * qd @ H @ qd, 0.5 * v @ M @ v, rtol=1e-12)


@pytest.mark.parametrize("robot,seed", [("quadruped", 3), ("quadruped", 4), ("solo12", 5)])
def test_tree_factor_of_crba_against_numpys_cholesky_and_solve(robot, seed):
    """Featherstone's H = L' L (kernels/mass_factor.py tree_factor, RBDA Table 6.3) on a posed robot's
    H: L lower triangular with no entry off the coordinates' ancestor pairs (no fill-in), L' L = H, and
    the factor's determinant and solves against numpy's Cholesky factor of the dense H and its solve:
    L^-1 L^-T b = H^-1 b, and L^-T keeps a foot's row (the base and one leg) on that path."""
    sim = _sim(robot)
    tree, J, theta, qd, S6, Sb = _posed(sim, seed)
    m, d = sim.model, sim.data
    H = crba(tree.order, tree.parent, tree.qstart, tree.qcount, tree.root, tree.anc_ptr, tree.anc_idx, tree.nq,
             d.position, d.quaternion, m.mass, m.inertia, S6)
    nq = tree.nq
    lam = coordinate_parents(tree.order, tree.qstart, tree.qcount, tree.anc_ptr, tree.anc_idx, nq)
    anc = np.zeros((nq, nq), dtype=bool)            # anc[k, i]: i is k or one of its ancestors
    for b in tree.order:
        own = range(tree.qstart[b], tree.qstart[b] + tree.qcount[b])
        for k in own:
            anc[k, [i for i in tree.anc_idx[tree.anc_ptr[b]:tree.anc_ptr[b + 1]] if i <= k]] = True
    assert np.all(H[~(anc | anc.T)] == 0.0)          # CRBA's H has the tree's sparsity
    L = np.empty((nq, nq))
    assert tree_factor(H, lam, L)
    assert np.all(L[~anc] == 0.0) and np.all(np.diag(L) > 0)
    scale = np.abs(H).max()
    assert np.abs(L.T @ L - H).max() < 1e-13 * scale
    C = np.linalg.cholesky(H)                       # H = C C': the same determinant
    assert np.isclose(np.log(np.diag(L)).sum(), np.log(np.diag(C)).sum(), rtol=0, atol=1e-12)
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(nq, 3))
    X = B.copy()
    tree_transposed_solve(L, lam, X)
    for c in range(3):
        tree_solve(L, lam, X[:, c])
    ref = np.linalg.solve(H, B)
    assert np.abs(X - ref).max() < 1e-10 * np.abs(ref).max()
    foot = tree.order[-1]                           # a leaf: its path is the base and its leg
    g = np.zeros((nq, 1))
    path = tree.anc_idx[tree.anc_ptr[foot]:tree.anc_ptr[foot + 1]]
    g[path, 0] = rng.normal(size=path.size)
    g0 = g[:, 0].copy()
    tree_transposed_solve(L, lam, g)
    off = np.setdiff1d(np.arange(nq), path)
    assert path.size == 9 and np.all(g[off, 0] == 0.0)
    assert np.isclose(g[:, 0] @ g[:, 0], g0 @ np.linalg.solve(H, g0), rtol=1e-12)      # |L^-T g|^2 = g H^-1 g'


def _point(sim, tree, J, theta, base, b, local):
    """World position of the point ``local`` (body b's frame) at joint angles theta and root pose base."""
    d = sim.data
    pos, quat = d.position.copy(), d.quaternion.copy()
    r = tree.order[0]
    pos[r], quat[r] = base
    forward_kinematics(tree.order, tree.joint, tree.qstart, J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a, J.q_rel0,
                       theta, pos, quat)
    from contactlab.mechanics.rotation import quat_to_matrix
    return pos[b] + quat_to_matrix(quat[b]) @ local


def _rotate(q, w):
    from contactlab.mechanics.rotation import quat_mul
    th = np.linalg.norm(w)
    e = np.concatenate([[np.cos(th / 2)], np.sin(th / 2) * w / th])
    return quat_mul(e, q)


@pytest.mark.parametrize("robot,seed", [("quadruped", 3), ("solo12", 4)])
def test_contact_rows_in_joint_coordinates_are_the_derivatives_of_the_contact_point(robot, seed):
    sim = _sim(robot)
    tree, J, theta, qd, S6, Sb = _posed(sim, seed)
    m, d = sim.model, sim.data
    from contactlab.mechanics.rotation import quat_to_matrix
    b = tree.order[-1]                              # a foot (a leaf of the last leg)
    local = np.array([0.01, -0.02, -0.15])
    P = d.position[b] + quat_to_matrix(d.quaternion[b]) @ local
    n = np.array([[0.0, 0.0, 1.0]])
    t1, t2 = np.array([[1.0, 0.0, 0.0]]), np.array([[0.0, 1.0, 0.0]])
    dv, ix, ip, _ = contact_terms(np.array([0]), np.array([b]), m.dof_start, d.position, P[None], n, t1, t2,
                                  np.zeros(1), 1e-3, 0.2, 1e-4)
    block = np.zeros(m.ndof // 6, dtype=np.int64)
    for x in np.flatnonzero(m.dof_start >= 0):
        block[m.dof_start[x] // 6] = x
    rows = np.vstack([joint_rows_of(Sb, m.dof_start, block, ip[:2], ix, dv[i]) for i in range(3)])   # (3, nq)
    r = tree.order[0]
    base = (d.position[r].copy(), d.quaternion[r].copy())
    eps = 1e-6
    fd = np.zeros((3, tree.nq))
    for k in range(tree.nq):
        th_p, th_m = theta.copy(), theta.copy()
        bp, bm = (base[0].copy(), base[1].copy()), (base[0].copy(), base[1].copy())
        if k < 3:                                   # the root's centre along e_k
            bp[0][k] += eps
            bm[0][k] -= eps
        elif k < 6:                                 # the root turned about e_k through its centre
            e = np.zeros(3)
            e[k - 3] = eps
            bp = (base[0], _rotate(base[1], e))
            bm = (base[0], _rotate(base[1], -e))
        else:
            th_p[k] += eps
            th_m[k] -= eps
        fd[:, k] = (_point(sim, tree, J, th_p, bp, b, local) - _point(sim, tree, J, th_m, bm, b, local)) / (2 * eps)
    fd = np.vstack([n, t1, t2]) @ fd                # along the normal, then the two tangents (the rows' order)
    assert np.abs(rows - fd).max() < 1e-7 * max(1.0, np.abs(fd).max())


def test_forward_kinematics_puts_the_bodies_on_their_joints():
    sim = _sim("solo12")
    _posed(sim, 5)
    assert sim.joint_error() < 1e-12


@pytest.mark.parametrize("robot,seed", [("quadruped", 11), ("solo12", 12)])
def test_forward_kinematics_frames_and_body_rates_against_scipy_rotations_and_numpy(robot, seed):
    """The frames forward kinematics returns (each joint's world axis and anchor on its parent) are
    R_parent axis_a and x_parent + R_parent anchor_a with R from scipy's quaternion rotation, and
    equal :func:`joint_frames` of the posed state; each body's (v_c; omega) is its Jacobian block
    times the joint rates (numpy's product), and the inlined rotation entries are scipy's matrix."""
    from scipy.spatial.transform import Rotation
    from contactlab.mechanics.tree import _rot_entries, joint_frames
    sim = _sim(robot)
    tree, J, theta, qd, S6, Sb = _posed(sim, seed)
    d = sim.data
    ax, P = forward_kinematics(tree.order, tree.joint, tree.qstart, J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a,
                               J.q_rel0, theta, d.position, d.quaternion)
    ax2, P2 = joint_frames(tree.order, tree.joint, J.a, J.anchor_a, J.axis_a, d.position, d.quaternion)
    assert np.array_equal(ax, ax2) and np.array_equal(P, P2)
    checked = 0
    for b in tree.order:
        k = tree.joint[b]
        if k < 0:
            continue
        jp = J.a[k]
        R = Rotation.from_quat(np.roll(d.quaternion[jp], -1)).as_matrix() if jp >= 0 else np.eye(3)
        x = d.position[jp] if jp >= 0 else np.zeros(3)
        assert np.allclose(ax[b], R @ J.axis_a[k], rtol=0, atol=1e-14)
        assert np.allclose(P[b], x + R @ J.anchor_a[k], rtol=0, atol=1e-14)
        checked += 1
    assert checked == len(sim.model.joints)
    for b in range(d.quaternion.shape[0]):
        R = Rotation.from_quat(np.roll(d.quaternion[b], -1)).as_matrix()
        assert np.allclose(np.array(_rot_entries(d.quaternion, b)).reshape(3, 3), R, rtol=0, atol=1e-14)
    for b in np.flatnonzero(sim.model.dof_start >= 0):
        want = Sb[b] @ qd
        assert np.allclose(d.linear_velocity[b], want[:3], rtol=1e-13, atol=1e-13)
        assert np.allclose(d.angular_velocity[b], want[3:], rtol=1e-13, atol=1e-13)
        assert np.abs(want).max() > 1e-3         # the rates move every body


@pytest.mark.parametrize("robot,seed", [("quadruped", 8), ("solo12", 9)])
def test_the_tree_joint_error_measures_what_the_joint_rows_measure(robot, seed):
    """Off the joints (every body displaced and turned by ~1e-4), the tree's measure and the joint
    rows' (Simulator.joint_error) agree within the difference of their definitions (the rows'
    axis misalignment is the tangential part of the tree's rotation vector; its anchor gap the same)."""
    from contactlab.mechanics.tree import tree_joint_error
    from contactlab.mechanics.rotation import quat_mul
    sim = _sim(robot)
    tree, J, *_ = _posed(sim, seed)
    d = sim.data
    on = tree_joint_error(tree.order, tree.joint, tree.qstart, J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a,
                          J.q_rel0, d.position, d.quaternion)
    assert on < 1e-12
    rng = np.random.default_rng(seed)
    live = np.flatnonzero(sim.model.dof_start >= 0)
    d.position[live] += rng.normal(scale=1e-4, size=(live.size, 3))
    for b in live:
        w = rng.normal(scale=1e-4, size=3)
        d.quaternion[b] = quat_mul(np.concatenate([[1.0], 0.5 * w]), d.quaternion[b])
        d.quaternion[b] /= np.linalg.norm(d.quaternion[b])
    off = tree_joint_error(tree.order, tree.joint, tree.qstart, J.kind, J.a, J.anchor_a, J.anchor_b, J.axis_a,
                           J.q_rel0, d.position, d.quaternion)
    ref = sim.joint_error()
    assert 1e-5 < ref and ref * (1 - 1e-6) <= off <= 2.0 * ref


def _momenta(sim):
    m, d = sim.model, sim.data
    from contactlab.mechanics.rotation import quat_to_matrix
    live = m.dof_start >= 0
    ms = m.mass[live]
    x, v, w = d.position[live], d.linear_velocity[live], d.angular_velocity[live]
    c = (ms[:, None] * x).sum(0) / ms.sum()
    P = (ms[:, None] * v).sum(0)
    L = np.zeros(3)
    for i, b in enumerate(np.flatnonzero(live)):
        R = quat_to_matrix(d.quaternion[b])
        L += np.cross(x[i] - c, ms[i] * v[i]) + R @ m.inertia[b] @ R.T @ w[i]
    ke = 0.5 * (ms * (v * v).sum(1)).sum() + sum(
        0.5 * d.angular_velocity[b] @ quat_to_matrix(d.quaternion[b]) @ m.inertia[b] @ quat_to_matrix(d.quaternion[b]).T
        @ d.angular_velocity[b] for b in np.flatnonzero(live))
    return P, L, ke


def _free_flight(h, duration):
    sc = make_scene("quadruped")
    sc.gravity = (0.0, 0.0, 0.0)
    sc.settings.dt = h
    sim = Simulator(sc, "no-slip", None, controllers=())
    assert type(sim.stages).__name__ == "CompiledTreeNoSlipStages"
    sim.data.position[sim.model.dof_start >= 0, 2] += 5.0      # far above the ground: no contact
    _posed(sim, 7)
    P0, L0, e0 = _momenta(sim)
    for _ in range(int(round(duration / h))):
        assert sim.step().contacts == 0
    P1, L1, e1 = _momenta(sim)
    return P0, L0, e0, P1, L1, e1, sim


def test_a_free_tree_keeps_its_momentum_and_energy_to_first_order():
    """No gravity, no contact, random joint rates: the dynamics conserve the total momentum and
    energy (the root's rows are Newton's and Euler's laws for the whole robot); semi-implicit Euler in
    joint coordinates (the step's momentum balance taken in the subspace at the start of the step)
    keeps them to O(h): the drift over a fixed time halves with h. Without the velocity-product
    terms (or with a wrong sign) the momenta would drift at O(1), not vanish with h."""
    drift = []
    for h in (2e-3, 1e-3):
        P0, L0, e0, P1, L1, e1, sim = _free_flight(h, 0.2)
        drift.append((np.linalg.norm(P1 - P0) / np.linalg.norm(P0), np.linalg.norm(L1 - L0) / np.linalg.norm(L0),
                      abs(e1 - e0) / e0))
        assert sim.joint_error() < 1e-12
    coarse, fine = np.array(drift)
    assert np.all(fine < 0.02), drift
    assert np.all((1.5 < coarse / fine) & (coarse / fine < 2.6)), drift
