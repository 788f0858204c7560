"""collision/polytope.py against independent references: coal's distance (GJK/EPA) for the signed
distance and normal, a brute-force separating-axis test over every face and edge pair for the Gauss-map
pruning, coal's contact patch (through the coal path of collision/contacts.py) for the points."""
import coal
import numpy as np
import pytest

from contactlab.collision import polytope as PT
from contactlab.collision.contacts import CollisionWorld
from contactlab.mechanics import Body, Scene, Shape, build_model

BOX = np.array([[x, y, z] for x in (-.03, .03) for y in (-.01, .01) for z in (-.02, .02)])
TH = np.linspace(0, 2 * np.pi, 17)[:-1]
PRISM = np.vstack([np.c_[np.full(16, zz), s * 0.05 * np.cos(TH), s * 0.05 * np.sin(TH)]
                   for zz, s in ((-0.04, 1.0), (0.0, 0.8), (0.03, 1.0))])     # a waisted 16-facet ring stack


def _rot(rng):
    q = rng.normal(size=4)
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _pair(Ra, pa, Rb, pb, data, order=(0, 1)):
    Rs, ps = np.array([Ra, Rb]), np.array([pa, pb])
    return PT.polytope_contacts(np.array([order]), Rs, ps, *data, 10.0, np.zeros((2, 4)))


def _brute_separation(Ra, pa, Rb, pb, data):
    """max over every face normal and every edge-pair cross product of the support gap (no pruning)."""
    VA, VB = BOX @ Ra.T + pa, PRISM @ Rb.T + pb
    _, _, fn, _, fs, ef, _, es = data
    ea = np.array([fn[fs[0 if e < es[1] else 1] + ef[e, 0]] for e in range(es[2])])
    eb = np.array([fn[fs[0 if e < es[1] else 1] + ef[e, 1]] for e in range(es[2])])
    axes = list(fn[fs[0]:fs[1]] @ Ra.T) + list(fn[fs[1]:fs[2]] @ Rb.T)
    EA = [np.cross(ea[e], eb[e]) @ Ra.T for e in range(es[0], es[1])]
    EB = [np.cross(ea[e], eb[e]) @ Rb.T for e in range(es[1], es[2])]
    for u in (np.cross(x, y) for x in EA for y in EB):
        if np.linalg.norm(u) > 1e-9:
            axes.append(u / np.linalg.norm(u))
    return max(max((VB @ u).min() - (VA @ u).max(), (VA @ u).min() - (VB @ u).max()) for u in axes)


def _coal_convex(V):
    m = coal.BVHModelOBBRSS()
    m.beginModel(0, len(V))
    m.addVertices(np.ascontiguousarray(V))
    m.endModel()
    m.buildConvexHull(True, "Qt")
    return m.convex


def _tf(R, p):
    T = coal.Transform3s()
    T.setRotation(R)
    T.setTranslation(p)
    return T


def test_separation_is_the_exhaustive_separating_axis_test_and_coal_depth():
    rng = np.random.default_rng(7)
    data = PT.polytope_data([BOX, PRISM])
    ga, gb = coal.Box(0.06, 0.02, 0.04), _coal_convex(PRISM)
    for _ in range(150):
        Ra, Rb = _rot(rng), _rot(rng)
        pa, pb = np.zeros(3), rng.normal(size=3)
        pb *= rng.uniform(0.03, 0.09) / np.linalg.norm(pb)
        sa, sb, P, N, phi = _pair(Ra, pa, Rb, pb, data)
        ref = _brute_separation(Ra, pa, Rb, pb, data)
        assert phi[0] == pytest.approx(ref, abs=1e-5)       # up to the face preference's tie tolerance
        assert _pair(Ra, pa, Rb, pb, data, (1, 0))[4][0] == pytest.approx(phi[0], abs=1e-5)
        assert np.allclose(np.linalg.norm(N, axis=1), 1.0)
        if ref < 0:     # overlapping polytopes: the separating-axis depth is EPA's minimal translation
            req, res = coal.CollisionRequest(), coal.CollisionResult()
            coal.collide(ga, _tf(Ra, pa), gb, _tf(Rb, pb), req, res)
            assert res.isCollision()
            c = res.getContact(0)
            assert phi[0] == pytest.approx(c.penetration_depth, abs=5e-6)   # coal: signed; face preference 4e-6
            assert abs(np.dot(N[0], c.normal)) == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("turn", [0.0, np.pi / 16])
def test_a_box_on_the_prism_gives_coal_patch(turn):
    """A box 1 mm into the prism, on its top ridge (turn 0: two points) or turned onto a facet (a
    polygon): the patch corners, distance and normal of coal's path in collision/contacts.py."""
    from contactlab.mechanics import quat_from_axis_angle
    r = (0.05 * np.cos(np.pi / 16) if turn else 0.05) + 0.02 - 0.001
    bodies = [Body("prism", kind="fixed", shapes=[Shape("convex", vertices=PRISM)]),
              Body("box", position=(0.005, -r * np.sin(turn), r * np.cos(turn)),
                   orientation=tuple(quat_from_axis_angle([1, 0, 0], turn)),
                   shapes=[Shape("box", size=(0.06, 0.02, 0.04))])]
    model, data = build_model(Scene("t", bodies))
    world = CollisionWorld(model)
    Rs, ps = world._world_poses(data)
    pairs = np.array([[1, 0]])
    world._sweep = np.zeros((2, 4))
    ref = world._coal_contacts(pairs, Rs, ps)
    got = PT.polytope_contacts(pairs, Rs, ps, *world.poly, world.margin, world._sweep)
    assert len(ref[4]) == (4 if turn else 2) and len(got[4]) == len(ref[4])
    assert np.allclose(got[4], ref[4], atol=1e-9)
    assert np.allclose(got[3], ref[3] / np.linalg.norm(ref[3], axis=1, keepdims=True), atol=1e-6)
    d = np.linalg.norm(got[2][:, None] - ref[2][None], axis=2)
    assert d.min(axis=0).max() < 1e-6 and d.min(axis=1).max() < 1e-6


def test_world_takes_polytope_pairs_and_pair_friction_in_one_call():
    bodies = [Body("prism", kind="fixed", shapes=[Shape("convex", vertices=PRISM)]),
              Body("box", position=(0.005, 0.0, 0.05 * np.cos(np.pi / 16) + 0.02 - 0.001),
                   shapes=[Shape("box", size=(0.06, 0.02, 0.04))])]
    model, data = build_model(Scene("t", bodies, mu=0.3, pair_mu={"prism/box": 0.7}))
    world = CollisionWorld(model)
    c, match = world.detect_matched(data, model.settings.margin, 0.005, None, None, 0.01)
    ref = world.detect(data)
    assert c.count == ref.count == 2 and np.all(match == -1)      # the box on the top ridge
    assert np.allclose(c.mu, 0.7) and np.allclose(ref.mu, 0.7)
    assert np.allclose(c.phi, ref.phi) and np.allclose(c.point, ref.point)


def test_flat_vertex_set_is_our_error():
    from contactlab.errors import ModelError
    with pytest.raises(ModelError, match="shape 1"):
        PT.polytope_data([BOX, np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]])])


def test_pairs_sharing_a_shape_give_each_pairs_own_contacts():
    """polytope_contacts on several pairs that share shapes gives, pair by pair, the contacts of that
    pair alone (nothing of one pair leaks into the next), and those are the exhaustive
    separating-axis test's distance."""
    rng = np.random.default_rng(11)
    data = PT.polytope_data([BOX, PRISM, BOX, BOX])
    Rs = np.array([_rot(rng) for _ in range(4)])
    ps = np.zeros((4, 3))
    for k in (0, 2, 3):
        u = rng.normal(size=3)
        ps[k] = u * rng.uniform(0.045, 0.07) / np.linalg.norm(u)
    pairs = np.array([[0, 1], [2, 1], [1, 3], [3, 1]])
    sweep = np.zeros((4, 4))
    sa, sb, P, N, phi = PT.polytope_contacts(pairs, Rs, ps, *data, 10.0, sweep)
    k = 0
    for a, b in pairs:
        one = PT.polytope_contacts(np.array([[a, b]]), Rs, ps, *data, 10.0, sweep)
        m = one[4].size
        assert m and (sa[k:k + m] == a).all() and (sb[k:k + m] == b).all()
        assert np.array_equal(P[k:k + m], one[2]) and np.array_equal(N[k:k + m], one[3])
        assert np.array_equal(phi[k:k + m], one[4])
        box, prism = (a, b) if b == 1 else (b, a)
        ref = _brute_separation(Rs[box], ps[box], Rs[prism], ps[prism], PT.polytope_data([BOX, PRISM]))
        assert phi[k] == pytest.approx(ref, abs=1e-5)
        k += m
    assert k == phi.size
