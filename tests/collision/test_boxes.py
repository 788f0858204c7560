"""Collision through coal: multi-point patches, signed distances, frames, broad phase, friction pairs."""
import numpy as np
import pytest

from contactlab.collision import CollisionWorld, match_previous
from contactlab.collision.boxes import FACE_SLACK, shape_reach_of
from contactlab.mechanics import Body, Scene, Shape, build_model, quat_from_axis_angle
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _world(bodies, **kw):
    model, data = build_model(Scene("t", bodies, **kw))
    return CollisionWorld(model), model, data


GROUND = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))])


def test_box_on_plane_gives_four_points_with_exact_distances():
    w, model, data = _world([GROUND, Body("box", position=(0, 0, 0.1 + 0.003), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])])
    c = w.detect(data)
    assert c.count == 4
    assert np.allclose(c.phi, 0.003)
    assert np.allclose(c.normal, [0, 0, -1])           # from the box (a) into the ground (b)
    assert np.allclose(np.sort(np.abs(c.point[:, :2]).ravel()), 0.1)
    # frames are right-handed and orthonormal
    assert np.allclose(np.cross(c.t1, c.t2), c.normal)
    assert np.allclose(np.einsum("ij,ij->i", c.t1, c.normal), 0)


def test_tilted_box_reports_only_vertices_within_margin_with_their_own_distance():
    q = quat_from_axis_angle([0, 1, 0], 0.05)
    z = 0.1 * np.cos(0.05) + 0.1 * np.sin(0.05) - 0.001
    w, model, data = _world([GROUND, Body("box", position=(0, 0, z), orientation=tuple(q),
                                          shapes=[Shape("box", size=(0.2, 0.2, 0.2))])])
    c = w.detect(data)
    low = 2 * 0.1 * np.sin(0.05) - 0.001                # the raised edge's height
    assert c.count == 4 if low < w.margin else c.count == 2
    assert np.allclose(np.sort(c.phi)[:2], -0.001)
    if c.count == 4:
        assert np.allclose(np.sort(c.phi)[2:], low)


def test_stacked_boxes_patch_and_sphere_gap():
    w, model, data = _world([GROUND,
                             Body("a", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]),
                             Body("b", position=(0.05, 0, 0.3), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]),
                             Body("s", position=(2.0, 0, 0.105), shapes=[Shape("sphere", radius=0.1)])],
                            pair_mu={"a/b": 0.9}, mu=0.4)
    c = w.detect(data)
    ab = (c.body_a == 1) & (c.body_b == 2)
    assert ab.sum() == 4
    assert np.allclose(c.normal[ab], [0, 0, 1]) and np.allclose(c.phi[ab], 0, atol=1e-9)
    assert np.allclose(np.sort(c.point[ab, 0]), [-0.05, -0.05, 0.1, 0.1])   # overlap polygon of the faces
    assert np.allclose(c.mu[ab], 0.9) and np.allclose(c.mu[~ab], 0.4)
    sphere = c.body_a == 3
    assert sphere.sum() == 1 and c.phi[sphere][0] == pytest.approx(0.005, abs=1e-9)


@pytest.mark.parametrize("shape", [Shape("capsule", radius=0.05, length=0.3), Shape("cylinder", radius=0.05, length=0.3),
                                   Shape("convex", vertices=[[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]])])
def test_other_shapes_touch_the_plane(shape):
    w, model, data = _world([GROUND, Body("x", position=(0, 0, 0.0499 if shape.kind != "convex" else -1e-4),
                                          shapes=[shape])])
    c = w.detect(data)
    assert c.count >= 1
    assert np.all(c.phi < 1e-3)


def test_broad_phase_skips_far_pairs_and_jointed_bodies():
    bodies = [Body(f"b{i}", position=(3.0 * i, 0, 5.0), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]) for i in range(20)]
    w, model, data = _world(bodies)
    Rs, ps = w._world_poses(data)
    assert w.candidate_pairs(data, Rs, ps).shape[0] == 0
    data.position[1] = data.position[0] + [0.19, 0, 0]
    assert w.candidate_pairs(data, Rs := w._world_poses(data)[0], w._world_poses(data)[1]).tolist() == [[0, 1]]


def test_sweep_pairs_are_the_overlapping_aabbs_whatever_the_layout():
    """The sort-and-sweep (boxes.py ``sweep_pairs``, along the axis of largest spread) against every
    pair tested: columns along x, y and z (a stack), a random cloud, and boxes sharing one centre
    coordinate; excluded pairs (same body, two static shapes, jointed bodies) left out alike."""
    from contactlab.collision import boxes as B
    rng = np.random.default_rng(7)

    def brute(lo, hi, idx, body, static, jointed, nb):
        out = []
        for i, a in enumerate(idx):
            for b in idx[i + 1:]:
                if np.any(lo[b] > hi[a]) or np.any(lo[a] > hi[b]):
                    continue
                if body[a] == body[b] or (static[a] and static[b]):
                    continue
                if min(body[a], body[b]) * nb + max(body[a], body[b]) in set(jointed.tolist()):
                    continue
                out.append((min(a, b), max(a, b)))
        return sorted(out)

    layouts = []
    for axis in range(3):           # columns of touching boxes with a little jitter
        c = rng.normal(0, 0.01, size=(40, 3))
        c[:, axis] = 0.2 * np.arange(40)
        layouts.append(c)
    layouts.append(rng.uniform(0, 1.5, size=(60, 3)))
    flat = rng.uniform(0, 1.5, size=(60, 3))
    flat[:, 0] = 0.3                # a layer: one coordinate shared by all
    layouts.append(flat)
    for centres in layouts:
        m = centres.shape[0]
        half = rng.uniform(0.08, 0.12, size=(m, 3))
        lo, hi = centres - half, centres + half
        idx = np.arange(m, dtype=np.int64)
        body = np.arange(m, dtype=np.int64)
        body[5] = body[4]                                  # two shapes of one body
        static = np.zeros(m, dtype=np.bool_)
        static[[0, 1]] = True
        nb = m
        jointed = np.array(sorted({min(body[2], body[3]) * nb + max(body[2], body[3])}), dtype=np.int64)
        got = B.sweep_pairs(lo, hi, idx, body, static, jointed, nb)
        want = brute(lo, hi, idx, body, static, jointed, nb)
        assert len(want) > 0
        assert [tuple(p) for p in got.tolist()] == want


def test_pseudo_angle_orders_directions_as_arctan2():
    """canonical_order's key (boxes.py ``pseudo_angle``) sorts directions exactly as arctan2 does,
    its cut at -pi/pi and the sign of a zero y included (points in one direction, ties of the exact
    angle, may come in either order: both keys round)."""
    from contactlab.collision.boxes import pseudo_angle
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(20000, 2))
    pts[:500, 1], pts[500:1000, 1], pts[1000:1500, 0], pts[1500:2000, 0] = 0.0, -0.0, 0.0, -0.0
    pts[:2000] *= rng.uniform(0.5, 2.0, size=(2000, 1))
    exact = np.arctan2(pts[:, 1], pts[:, 0])
    key = np.array([pseudo_angle(y, x) for x, y in pts])
    order = np.argsort(key, kind="stable")
    steps = np.diff(exact[order])
    assert np.all(steps >= 0.0)                         # key order is angle order
    distinct = np.flatnonzero(np.diff(np.sort(exact)) > 0)
    assert distinct.size > 15000                        # (many distinct angles, the axes' included)
    assert pseudo_angle(-0.0, -1.0) == -2.0 and pseudo_angle(0.0, -1.0) == 2.0
    assert pseudo_angle(-1e-300, -1.0) < pseudo_angle(-1.0, -1.0) < pseudo_angle(-1.0, 0.0) \
        < pseudo_angle(0.0, 1.0) < pseudo_angle(1.0, 0.0) < pseudo_angle(1e-300, -1.0)


def test_match_previous_by_shape_pair_and_nearest_point():
    w, model, data = _world([GROUND, Body("box", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])])
    c0 = w.detect(data)
    vals = np.arange(c0.count, dtype=float)
    data.position[1] += [0.001, 0, 0]
    c1 = w.detect(data)
    m = match_previous(c0, vals, c1, tol=0.01)
    assert np.all(np.isfinite(m))
    for i in range(c1.count):
        j = int(np.argmin(np.linalg.norm(c0.point - c1.point[i], axis=1)))
        assert m[i] == vals[j]


def test_match_contacts_is_match_indices_then_match_previous():
    """The simulator's one-call matching (collision.match_contacts) against the two-step reference
    and a brute-force nearest search: random contact sets on a few shape pairs, repeated points
    (ties), previous contacts beyond ``near``, no previous values."""
    from contactlab.collision import ContactSet, match_contacts, match_indices

    def cset(rng, k):
        sa = rng.integers(0, 3, size=k)
        sb = sa + 1 + rng.integers(0, 2, size=k)
        P = np.round(rng.uniform(0, 0.02, size=(k, 3)), 3)     # coarse grid: ties
        z3 = np.zeros((k, 3))
        return ContactSet(sa, sb, sa, sb, P, z3, np.zeros(k), np.zeros(k), z3, z3)

    rng = np.random.default_rng(7)
    for trial in range(30):
        prev, new = cset(rng, int(rng.integers(0, 25))), cset(rng, int(rng.integers(1, 25)))
        vals = rng.normal(size=prev.count)
        near = float(rng.choice([0.0, 0.005, 0.01, np.inf]))
        match, guess = match_contacts(prev, vals, new, near)
        ref_match, ref_near = match_indices(prev, new, np.inf, near=near)
        ref_guess = match_previous(prev, vals, new, near, match=ref_near)
        assert np.array_equal(match, ref_match) and np.array_equal(guess, ref_guess, equal_nan=True)
        for i in range(new.count):      # brute force: nearest on the same pair, any distance
            same = np.flatnonzero((prev.shape_a == new.shape_a[i]) & (prev.shape_b == new.shape_b[i]))
            if same.size == 0:
                assert match[i] == -1 and np.isnan(guess[i])
                continue
            d = np.linalg.norm(prev.point[same] - new.point[i], axis=1)
            assert np.isclose(np.linalg.norm(prev.point[match[i]] - new.point[i]), d.min(), rtol=0, atol=1e-15)
            assert (guess[i] == vals[match[i]]) if d.min() <= near else np.isnan(guess[i])
        none = match_contacts(prev, None, new, near)[1]
        assert none.shape == (new.count,) and np.all(np.isnan(none))


# --- compiled box routines against coal (issue 11) ------------------------------------------------

def _coal_signed_distance(w, data, sa, sb):
    """coal's signed distance of two shapes: the distance when apart, minus the penetration depth."""
    import coal
    Rs, ps = w._world_poses(data)
    T = []
    for k in (sa, sb):
        t = coal.Transform3s()
        t.setRotation(Rs[k])
        t.setTranslation(ps[k])
        T.append(t)
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    req.enable_signed_distance = True
    d = coal.distance(w.geoms[sa], T[0], w.geoms[sb], T[1], req, res)
    return float(d)


def _random_quat(rng):
    q = rng.normal(size=4)
    return tuple(q / np.linalg.norm(q))


def test_box_box_agrees_with_coal_on_random_poses():
    """Random orientations and sizes, centres placed so the boxes are near touching: a contact is
    reported exactly when coal's signed distance is below the margin; overlapping boxes have
    coal's penetration depth as their deepest contact; at most 4 points, normal from a to b."""
    rng = np.random.default_rng(7)
    margin = 0.01
    checked = deep = exact = 0
    for _ in range(150):
        sa, sb = rng.uniform(0.1, 0.4, 3), rng.uniform(0.1, 0.4, 3)
        qa, qb = _random_quat(rng), _random_quat(rng)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        bodies = [Body("a", position=(0, 0, 0), orientation=qa, shapes=[Shape("box", size=tuple(sa))]),
                  Body("b", position=tuple(u * 0.5), orientation=qb, shapes=[Shape("box", size=tuple(sb))])]
        w, model, data = _world(bodies)
        # slide b along u until coal's signed distance is a random value in [-0.01, 0.02]
        target = rng.uniform(-0.01, 0.02)
        for _ in range(60):
            d = _coal_signed_distance(w, data, 0, 1)
            if abs(d - target) < 1e-9:
                break
            data.position[1] += (target - d) * u * 0.9
        d = _coal_signed_distance(w, data, 0, 1)
        c = w.detect(data, margin=margin)
        if d < margin - 1e-6:
            assert c.count >= 1, d
            if d < 0:   # overlap: the separating-axis depth is the exact penetration depth, or, where a
                # face stands for a nearly parallel edge-edge axis (boxes.FACE_PARALLEL), its clipped
                # points, never shallower and at most FACE_SLACK x the box size deeper
                slack = FACE_SLACK * min(sa.min(), sb.min()) / 2
                assert d - slack - 1e-8 <= c.phi.min() <= d + 1e-8
                exact += abs(c.phi.min() - d) <= 1e-8
            else:       # apart: a speculative contact, its gap measured along the chosen axis
                assert -1e-4 <= c.phi.min() - d <= 1e-3
            assert c.count <= 4
            # normal from a to b: b's centre lies on the positive side
            assert np.all(c.normal @ (data.position[1] - data.position[0]) > 0)
            checked += 1
            deep += d < 0
        elif d > margin + 1e-6:
            assert c.count == 0, (d, c.phi)
    assert checked > 50 and deep > 20 and exact >= 0.7 * deep


@pytest.mark.parametrize("yaw,dx,gap", [(0.0, 0.0, 0.0), (0.3, 0.05, 0.002), (0.785, -0.03, -0.001), (1.2, 0.08, 0.004)])
def test_box_on_box_face_contact_is_the_exact_overlap_polygon(yaw, dx, gap):
    """A box resting on another with a yaw and an offset: the normal is the face axis, every
    contact's distance is the gap, and the points span the overlap of the two squares (their
    area equals the polygon area of the clipped incident face, reduced to at most 4 corners)."""
    q = quat_from_axis_angle([0, 0, 1], yaw)
    bodies = [Body("a", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]),
              Body("b", position=(dx, 0, 0.3 + gap), orientation=tuple(q), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])]
    w, model, data = _world(bodies)
    c = w.detect(data, margin=0.005)
    assert 3 <= c.count <= 4
    assert np.allclose(c.normal, [0, 0, 1])
    assert np.allclose(c.phi, gap, atol=1e-12)
    assert np.allclose(c.point[:, 2], 0.2 + gap / 2)
    assert _coal_signed_distance(w, data, 0, 1) == pytest.approx(gap, abs=1e-9)
    # every point lies inside both squares (in the plane)
    P = c.point[:, :2]
    assert np.all(np.abs(P) <= 0.1 + 1e-12)
    R = np.array([[np.cos(yaw), np.sin(yaw)], [-np.sin(yaw), np.cos(yaw)]])
    assert np.all(np.abs((P - [dx, 0]) @ R.T) <= 0.1 + 1e-12)


@pytest.mark.parametrize("yaw,tilt,offset", [(0.3, 0.05, 0.0), (0.3, 0.1, 0.06), (0.5, 0.1, 0.0)])
def test_box_dropped_nearly_flat_with_a_yaw_does_not_sink_into_the_box_below(yaw, tilt, offset):
    """A box falling at 2 m/s nearly flat (tilted by ``tilt``) and turned by ``yaw`` onto a resting
    box: the edge-edge axis of the two top/bottom edges is then within a few degrees of the face
    axis, and one contact at the edge crossing let the upper box pivot and sink 1-3.5 cm into the
    lower one (a 100-box pile: 5-12 cm). The face's clipped points keep it out (<= 1 mm)."""
    from contactlab.mechanics.rotation import quat_from_rotvec
    from contactlab.sim import Simulator
    q = quat_from_rotvec(np.array([tilt, 0.3 * tilt, yaw]))
    bodies = [GROUND, Body("low", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]),
              Body("up", position=(offset, 0.02, 0.36), orientation=tuple(q), linear_velocity=(0, 0, -2.0),
                   shapes=[Shape("box", size=(0.2, 0.2, 0.2))])]
    sim = Simulator(Scene("drop", bodies, mu=0.5), "box-friction", "box-qp")
    traj = sim.run(0.4)
    assert traj.error is None and all(r.success for r in traj.records)
    assert traj.metrics()["max_penetration"] <= 1e-3


def test_a_box_landing_edge_first_on_a_spinning_box_does_not_swing_its_face_through_it():
    """Two 0.2 m cubes from a certified 2,000-box pile (seed 0, start of step 98; the lower box's fall
    stopped as the box under it stopped it): the upper one falls at 9.6 m/s onto an edge of the lower
    one, which spins at 29 rad/s. The pair's separating axis is an edge-edge axis (7 mm); with the
    edge point alone its impulse spun the upper box up and the corners of its face went 5.6 cm into
    the lower box in one step (in the pile: 6.5 cm). The face points beside the edge contact
    (boxes.box_box) hold those corners: the deepest overlap stays under 1 mm, every step certified."""
    from contactlab.sim import Simulator
    size = (0.2, 0.2, 0.2)
    low = Body("low", position=(-7.449995184944e-04, -2.612840919162e-01, 1.548030192398e+01),
               orientation=(0.994751837027, -0.079342510931, 0.003603700523, 0.064502418824),
               linear_velocity=(-0.07447071511, -0.128239362741, 0.0),
               angular_velocity=(-26.567724808916, 12.085252373184, 1.183089154259), shapes=[Shape("box", size=size)])
    up = Body("up", position=(0.0, -0.26, 1.572116900000e+01),
              orientation=(0.995344658239, 0.024518695204, 0.091039512592, 0.019991299292),
              linear_velocity=(0.0, 0.0, -9.6138), shapes=[Shape("box", size=size)])
    sim = Simulator(Scene("edge", [low, up], mu=0.5))
    sim.step()
    c = sim.data.contacts
    assert c.count >= 2                             # the edge point and face points beside it
    records = [sim.step() for _ in range(4)]
    assert all(r.success for r in records)
    assert max(r.max_penetration for r in records) <= 1e-3


def test_sphere_against_a_half_space_agrees_with_coal_on_random_poses():
    """The compiled sphere/half-space contact (boxes.narrow_phase) against coal's own
    narrow phase on the same pairs (CollisionWorld._coal_contacts): tilted planes, offset spheres
    in their body, gaps and penetrations around the margin; same point, normal and distance."""
    rng = np.random.default_rng(11)
    margin = 0.01
    seen = 0
    for _ in range(60):
        nrm = rng.normal(size=3)
        nrm /= np.linalg.norm(nrm)
        r = rng.uniform(0.02, 0.3)
        gap = rng.uniform(-0.02, 0.03)
        local = rng.uniform(-0.1, 0.1, 3)
        q = _random_quat(rng)
        from contactlab.mechanics.rotation import quat_to_matrix
        centre = (0.3 + r + gap) * nrm                      # plane n.x <= 0.3 (offset along the normal)
        pos = centre - quat_to_matrix(q) @ local
        w, model, data = _world([Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=tuple(nrm),
                                                                          offset=0.3)]),
                                 Body("s", position=tuple(pos), orientation=q,
                                      shapes=[Shape("sphere", radius=r, position=tuple(local))])])
        c = w.detect(data, margin=margin)
        Rs, ps = w._world_poses(data)
        sa, sb, P, N, phi = w._coal_contacts(np.array([[1, 0]]), Rs, ps)
        assert c.count == phi.size
        if phi.size:
            seen += 1
            assert abs(c.phi[0] - phi[0]) <= 1e-9 and abs(c.phi[0] - gap) <= 1e-9
            assert np.allclose(c.normal[0], N[0], atol=1e-9) and np.allclose(c.point[0], P[0], atol=1e-9)
            assert c.body_a[0] == 1 and c.body_b[0] == 0
        else:
            assert gap >= margin - 1e-9
    assert seen > 30


@pytest.mark.parametrize("yaw", [0.0, np.pi / 2, np.pi])
def test_box_on_box_points_keep_their_order_under_tiny_tilts(yaw):
    """A box resting on a box (shifted, turned by a multiple of 90 degrees: the overlap is a
    rectangle): the two faces tie for the reference face, and tilts of 1e-9 rad in either direction
    swap it. The manifold's points come in one order (collision/boxes.py ``canonical_order``: by
    angle in the lower box's face plane), so row k is the same corner at every pose: the rows move by
    the tilt only, not by the overlap's width a swap would move them (before: up to 0.18 m)."""
    def product(a, b):
        (w1, x1, y1, z1), (w2, x2, y2, z2) = a, b
        return (w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2)
    runs = []
    for tilt in (-1e-9, 0.0, 1e-9):
        for axis in ([1, 0, 0], [0, 1, 0]):
            q = product(quat_from_axis_angle(axis, tilt), quat_from_axis_angle([0, 0, 1], yaw))
            w, model, data = _world([GROUND, Body("a", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]),
                                     Body("b", position=(0.01, 0.02, 0.3), orientation=q,
                                          shapes=[Shape("box", size=(0.2, 0.2, 0.2))])])
            c = w.detect(data)
            pair = (c.body_a == 1) & (c.body_b == 2)
            runs.append(c.point[pair])
    assert all(r.shape == runs[0].shape for r in runs) and runs[0].shape[0] >= 4
    for r in runs[1:]:
        assert np.abs(r - runs[0]).max() <= 1e-8


def test_detect_matched_is_detect_then_match_contacts():
    """CollisionWorld.detect_matched (one compiled call: sweep, reach, detection, matching) gives the
    contacts, matches and normal estimates of detect() with the simulator's sweep followed by
    match_contacts(), on a falling and landing pile (new contacts, matched ones, none)."""
    from contactlab.collision import match_contacts
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("pile", count=12, seed=3), "box-friction", "box-qp", model_options={"coupling": "previous"})
    seen = set()
    for k in range(60):
        d = sim.data
        prev, values = d.contacts, (None if d.result is None else d.result.normal)
        a, ma = sim.world.detect_matched(d, sim._margin(), sim.h, prev, values, 0.004)
        b = sim.world.detect(d, margin=sim._margin(), sweep=sim._sweep())
        mb, b.normal_guess = match_contacts(prev, values, b, 0.004)
        assert a.count == b.count and np.array_equal(ma, mb)
        for f in ("body_a", "body_b", "shape_a", "shape_b", "point", "normal", "phi", "mu", "t1", "t2"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert np.array_equal(a.normal_guess, b.normal_guess, equal_nan=True)
        seen.add((a.count > 0, bool(np.any(ma >= 0)), bool(np.any(ma < 0))))
        sim.step()
    assert (False, False, False) in seen and (True, True, False) in seen and (True, False, True) in seen


def test_packed_contacts_are_views_of_two_buffers_and_behave_as_a_contact_set():
    """detect_matched's PackedContactSet: each field the view of its segment of the two buffers
    (boxes.py PACKED_FLOATS / PACKED_INTS, as unpack_contacts reads them), the match its own; a
    plain ContactSet packs to the same buffers (packed); assigning a field or dataclasses.replace
    gives a set holding its own arrays, the other fields unchanged; deepcopy and pickle keep it whole."""
    import copy
    import dataclasses
    import pickle
    from contactlab.collision import boxes as B
    from contactlab.collision.contacts import ContactSet, PackedContactSet, packed
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("pile", count=6, seed=1), "box-friction", "pgs", iterations=50)
    for _ in range(40):
        sim.step()
    c, match = sim.world.detect_matched(sim.data, sim._margin(), sim.h, sim.data.contacts, sim.data.result.normal,
                                        0.004)
    k = c.count
    assert isinstance(c, PackedContactSet) and k > 4 and match is c.match and np.any(match >= 0)
    assert c.floats.shape == (B.PACKED_FLOAT_WIDTH * k,) and c.ints.shape == (5 * k,)
    names = [f for f, _ in B.PACKED_FLOATS] + list(B.PACKED_INTS)
    for name, ref in zip(names, B.unpack_contacts(c.floats, c.ints)):
        v = getattr(c, name)
        assert np.shares_memory(v, c.floats if v.dtype == np.float64 else c.ints), name
        assert v.shape == ref.shape and np.array_equal(v, ref, equal_nan=True), name
    assert c.point.shape == (k, 3) and c.phi.shape == (k,) and np.all(np.isfinite(c.phi))
    plain = ContactSet(*(np.array(getattr(c, f)) for f in ("body_a", "body_b", "shape_a", "shape_b", "point",
                                                             "normal", "phi", "mu", "t1", "t2", "normal_guess")))
    floats, ints = packed(plain, np.array(match))
    assert np.array_equal(floats, c.floats, equal_nan=True) and np.array_equal(ints, c.ints)
    assert packed(c, match)[0] is c.floats and packed(c)[1] is c.ints
    for copied in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):       # Data.copy() deep-copies its contacts
        assert copied.floats is not c.floats and copied.count == k
        assert np.array_equal(copied.point, c.point) and np.array_equal(copied.match, match)
    moved = dataclasses.replace(c, phi=c.phi + 1.0)
    assert moved.ints is None and moved.count == k and np.array_equal(moved.phi, c.phi + 1.0)
    assert np.array_equal(moved.point, c.point)
    c.mu = np.full(k, 0.25)
    assert c.ints is None and c.count == k and np.array_equal(c.mu, np.full(k, 0.25))
    assert np.array_equal(c.shape_a, plain.shape_a) and np.array_equal(c.match, match)
    assert packed(c, match)[0] is not c.floats and packed(c, match)[0][13 * k:14 * k].tolist() == [0.25] * k


def test_axis_reach_is_the_pair_reach_projected_on_the_axis():
    """boxes.axis_reach: max(|h (v_a - v_b).u|, |h v_a.u|, |h v_b.u|) + both spins, never above
    pair_reach; motion across u gives only the spins, motion along u all of pair_reach."""
    from contactlab.collision.boxes import axis_reach, pair_reach
    rng = np.random.default_rng(3)
    for _ in range(200):
        sweep = np.column_stack([rng.normal(scale=0.05, size=(2, 3)), rng.uniform(0, 0.01, 2)])
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        ua, ub = sweep[0, :3] @ u, sweep[1, :3] @ u
        expect = max(abs(ua - ub), abs(ua), abs(ub)) + sweep[0, 3] + sweep[1, 3]
        assert np.isclose(axis_reach(sweep, 0, 1, u), expect)
        assert axis_reach(sweep, 0, 1, u) <= pair_reach(sweep, 0, 1) + 1e-15
    sweep = np.array([[0.0, 0.0, -0.05, 0.001], [0.0, 0.0, -0.05, 0.002]])    # falling side by side
    assert np.isclose(axis_reach(sweep, 0, 1, np.array([1.0, 0.0, 0.0])), 0.003)
    assert np.isclose(axis_reach(sweep, 0, 1, np.array([0.0, 0.0, 1.0])), 0.053)   # one may be stopped
    assert np.isclose(pair_reach(sweep, 0, 1), 0.053)


def _stepped_distances(w, data, h):
    """coal's signed distance after the step when both boxes move, and when either one is stopped."""
    from contactlab.mechanics.rotation import quat_from_rotvec, quat_mul
    x0, q0 = data.position.copy(), data.quaternion.copy()
    out = []
    for moving in ([0, 1], [0], [1]):
        data.position[:], data.quaternion[:] = x0, q0
        for k in moving:
            data.position[k] += h * data.linear_velocity[k]
            data.quaternion[k] = quat_mul(quat_from_rotvec(h * data.angular_velocity[k]), q0[k])
        out.append(_coal_signed_distance(w, data, 0, 1))
    data.position[:], data.quaternion[:] = x0, q0
    return out


def _sweep(w, model, data, h):
    from contactlab.mechanics.kernels import shape_sweep
    return shape_sweep(model.dof_start, data.linear_velocity, data.angular_velocity, w.body_radius, w.shape_body, h)


def _moving_pairs(seed, count, margin):
    """``count`` random box pairs (sizes 0.1-0.3 m, random orientations) placed 1-11 cm apart (coal's
    distance, margin to margin + 0.1) along a random direction, with random linear velocities
    (3 m/s scale) and for half of them angular ones (1 rad/s): (w, model, data) each."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        sa, sb = rng.uniform(0.1, 0.3, 3), rng.uniform(0.1, 0.3, 3)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        bodies = [Body("a", position=(0, 0, 0), orientation=_random_quat(rng), shapes=[Shape("box", size=tuple(sa))]),
                  Body("b", position=tuple(u * 0.6), orientation=_random_quat(rng), shapes=[Shape("box", size=tuple(sb))])]
        w, model, data = _world(bodies)
        target = rng.uniform(margin, margin + 0.1)
        for _ in range(60):
            d = _coal_signed_distance(w, data, 0, 1)
            if abs(d - target) < 1e-9:
                break
            data.position[1] += (target - d) * u * 0.9
        data.linear_velocity[:] = rng.normal(scale=3.0, size=(2, 3))
        data.angular_velocity[:] = rng.normal(scale=1.0, size=(2, 3)) * (rng.uniform() < 0.5)
        yield w, model, data


def test_contacts_the_axis_reach_drops_are_pairs_that_stay_apart_through_the_step():
    """What box-box detection with boxes.axis_reach drops, against the same detection with the
    direction-free pair_reach (a sweep of spins only, pair_reach / 2 each): random box pairs 1-11 cm
    apart with random linear (and half of them angular) velocities; every pair that only pair_reach
    keeps stays more than the margin apart (coal's distance) after the step with both boxes moving
    (the separating-axis argument), and there are such pairs. Neither box can be stopped here: a pair
    alone has no other contact (boxes.reachable_contacts lets a body be stopped only by a contact
    within its reach; a pair's stopped cases are its test below)."""
    from contactlab.collision.boxes import pair_reach
    margin, h = 0.01, 0.01
    dropped = kept = 0
    for w, model, data in _moving_pairs(11, 300, margin):
        sweep = _sweep(w, model, data, h)
        spins = np.zeros_like(sweep)
        spins[:, 3] = 0.5 * pair_reach(sweep, 0, 1)
        directional = w.detect(data, margin=margin, sweep=sweep).count
        if directional or not w.detect(data, margin=margin, sweep=spins).count:
            kept += directional > 0
            continue
        dropped += 1
        assert _stepped_distances(w, data, h)[0] > margin - 1e-9
    assert dropped > 20 and kept > 20, (dropped, kept)


# pairs that came within the margin (or overlapped) after the step while box_box reported no contact
# for them: the incident face clipped to nothing over the reference face, no axis separating them
# (random poses of the soundness check below, seed 3; after the step: -2.4, -2.0 and -1.4 cm)
_CLOSING_PAIRS = [
    dict(sa=[0.163521917679, 0.250271169159, 0.114724139144], sb=[0.240111438308, 0.166230580722, 0.136324841604],
         qa=[0.084476319741, 0.227164229628, 0.280093875749, -0.928874364459],
         qb=[0.198210282819, 0.066179624383, -0.3281172264, 0.921233969652],
         pb=[0.260237213794, 0.088260206506, -0.067466327893],
         v=[[0.730484268578, -3.23426980635, -2.292074554047], [-5.47080937024, 0.583099957541, 4.330671702828]],
         w=[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    dict(sa=[0.223352954587, 0.234622733228, 0.210196696928], sb=[0.272490379148, 0.266573270752, 0.205478271571],
         qa=[-0.877591795919, -0.365859688539, 0.176812986618, 0.254394370617],
         qb=[-0.437566984267, -0.291355376183, 0.677631637958, -0.514259217017],
         pb=[0.154310926788, -0.159043744624, 0.373171457428],
         v=[[3.010552079634, -1.048417291968, 3.443307526177], [-4.024415650935, -1.119745412874, -1.902334833747]],
         w=[[1.625292262937, -1.525438405333, -0.60258119237], [0.504341189233, 0.426247193276, -0.342582035822]]),
    dict(sa=[0.155246032863, 0.23582276437, 0.235575061787], sb=[0.257597495109, 0.146610582556, 0.19855534854],
         qa=[-0.347317803774, -0.833936673348, 0.37627729387, -0.205755598089],
         qb=[-0.637908316045, -0.402408394868, -0.094192689921, 0.649821668788],
         pb=[-0.274462700586, -0.241382654263, -0.118535682271],
         v=[[-2.37586178852, 0.49506094311, -2.921945055464], [6.564198396913, 0.187382149513, 0.392249570942]],
         w=[[1.230138800946, 0.155538481391, 0.897412668023], [-0.184725595496, 1.055629297634, 0.155379589624]]),
]


@pytest.mark.parametrize("pair", range(len(_CLOSING_PAIRS)))
def test_boxes_closing_in_beside_a_face_get_a_speculative_contact(pair):
    """A pair no axis separates by more than the margin and its reach, whose incident face clips to
    nothing over the reference face (an edge or corner beside the face), gets one contact at the
    incident box's deepest vertex, at the separating-axis gap (coal's distance or less); these
    pairs overlap or come within the margin after the step (they got no contact before)."""
    p = _CLOSING_PAIRS[pair]
    margin, h = 0.01, 0.01
    bodies = [Body("a", position=(0, 0, 0), orientation=tuple(p["qa"]), shapes=[Shape("box", size=tuple(p["sa"]))]),
              Body("b", position=tuple(p["pb"]), orientation=tuple(p["qb"]), shapes=[Shape("box", size=tuple(p["sb"]))])]
    w, model, data = _world(bodies)
    data.linear_velocity[:], data.angular_velocity[:] = np.array(p["v"]), np.array(p["w"])
    assert min(_stepped_distances(w, data, h)) < margin
    c = w.detect(data, margin=margin, sweep=_sweep(w, model, data, h))
    d = _coal_signed_distance(w, data, 0, 1)
    assert c.count >= 1 and 0.0 < c.phi.min() <= d + 1e-9
    assert np.all(c.normal @ (data.position[1] - data.position[0]) > 0)


def test_diagonal_neighbours_get_a_contact_at_the_separating_axis_gap():
    """Two aligned cubes apart by 4 mm along x and along y (no face over the other's): within a 1 cm
    margin on every axis, so one contact at the nearer corner region with phi the axis gap, 4 mm."""
    s = 0.2
    bodies = [Body("a", position=(0, 0, 0), shapes=[Shape("box", size=(s, s, s))]),
              Body("b", position=(s + 0.004, s + 0.004, 0.05), shapes=[Shape("box", size=(s, s, s))])]
    w, model, data = _world(bodies)
    c = w.detect(data, margin=0.01)
    assert c.count == 1 and np.isclose(c.phi[0], 0.004)
    assert np.isclose(abs(c.normal[0]).max(), 1.0) and abs(c.normal[0, 2]) < 1e-12


def test_pairs_without_contacts_stay_apart_through_the_step():
    """Soundness of box-box detection with the grown margin: 400 random box pairs 1-11 cm apart with
    random linear (and half of them angular) velocities; every pair that gets no contact stays more
    than the margin apart (coal's distance) after the step with both moving (a pair alone: no other
    contact can stop either box; the stopped cases: the column test below)."""
    margin, h = 0.01, 0.01
    none = 0
    for w, model, data in _moving_pairs(5, 400, margin):
        if w.detect(data, margin=margin, sweep=_sweep(w, model, data, h)).count:
            continue
        none += 1
        assert _stepped_distances(w, data, h)[0] > margin - 1e-9
    assert none > 150


@pytest.mark.parametrize("gap", [0.03, 0.06])
def test_a_falling_column_keeps_the_contacts_that_the_stops_below_can_close(gap):
    """boxes.reachable_contacts on a column of 0.2 m boxes falling together at 8.8 m/s (h = 0.01:
    8.8 cm a step) onto the ground, ``gap`` apart, the lowest 3 cm above the ground. Reference: the
    stops computed box by box from the bottom, the least each box can move in the step
    d_k = min(h v, d_(k-1) + gap) (d_0 = 3 cm, the ground stopping the lowest box): a pair (k, k+1)
    closes in by at most h v - d_k, so it needs a contact where h v - d_k > gap - margin: every such
    pair has one (the kernel's deviations are bounds: a box the ground stops may be taken as
    stopped, and each gap carries the margin, so it keeps a few more), and high enough up the column
    the pairs falling together, which the pairwise bound (either box may be stopped) keeps, have none."""
    margin, h, v, n = 0.01, 0.01, 8.8, 8
    bodies = [GROUND] + [Body(f"b{k}", position=(0, 0, 0.13 + k * (0.2 + gap)), shapes=[Shape("box", size=(0.2,) * 3)])
                         for k in range(n)]
    w, model, data = _world(bodies)
    data.linear_velocity[1:, 2] = -v
    c = w.detect(data, margin=margin, sweep=_sweep(w, model, data, h))
    pairs = {(min(a, b), max(a, b)) for a, b in zip(c.body_a, c.body_b)}
    d, need = 0.03, []
    for k in range(1, n):                           # pair (k, k+1): bodies k and k+1 (0 is the ground)
        need.append(h * v - d > gap - margin)
        d = min(h * v, d + gap)
    got = [(k, k + 1) in pairs for k in range(1, n)]
    assert (0, 1) in pairs and need[0] and not all(need)
    assert all(g for g, nd in zip(got, need) if nd)
    assert not any(got[-3:])                # the column is cut


def _reachable_reference(sa, sb, phi, close, sweep, shape_body, nb, margin, sweeps=64):
    """reach.py ``reachable_contacts`` as written before its shortcuts (main 33b5626), in Python: every
    contact's bodies and caps |h v|, D = cap on both bodies of a contact with close > 0, Bellman-Ford
    sweeps over the others (forward, backward) to the least fixed point, every contact kept where
    they have not settled, else keep = phi < margin or close + D_a + D_b > 0."""
    k = sa.size
    ba, bb = shape_body[sa], shape_body[sb]
    cap, D = np.zeros(nb), np.zeros(nb)
    cap[ba] = np.linalg.norm(sweep[sa, :3], axis=1)
    cap[bb] = np.linalg.norm(sweep[sb, :3], axis=1)
    for c in np.flatnonzero(close > 0.0):
        D[ba[c]], D[bb[c]] = cap[ba[c]], cap[bb[c]]
    rest = np.flatnonzero(~(close > 0.0))
    for s in range(sweeps):
        changed = False
        for c in (rest if s % 2 == 0 else rest[::-1]):
            i, j = ba[c], bb[c]
            for x, y in ((i, j), (j, i)):
                e = close[c] + D[x]
                if e > D[y] and D[y] < cap[y]:
                    D[y] = min(e, cap[y])
                    changed = True
        if not changed:
            return (phi < margin) | (close + D[ba] + D[bb] > 0.0)
    return np.ones(k, dtype=bool)


def _box_states(seed):
    """Columns of 8 boxes falling together at 8.8 m/s onto the ground (gaps 2-7 cm, the lowest 1-8 cm
    up: the column is cut a few gaps up), a box falling at 8.8 m/s onto a box at rest 1-8 cm below
    (its one speculative pair closes at free motion), falling 100-box piles at steps 0-90 and 12-box
    stacks at rest as the default Simulator steps them; the piles and stacks as stepped and with the
    bodies' velocities scaled (0-3x) or half of them replaced by random ones (3 m/s, 1.5 rad/s
    scale): (world, model, data) each."""
    rng = np.random.default_rng(seed)
    for _ in range(4):
        gap, low = rng.uniform(0.02, 0.07), rng.uniform(0.01, 0.08)
        column = [Body(f"b{k}", position=(rng.uniform(-0.01, 0.01), 0, 0.1 + low + k * (0.2 + gap)),
                       shapes=[Shape("box", size=(0.2,) * 3)]) for k in range(8)]
        w, model, data = _world([GROUND] + column)
        data.linear_velocity[1:, 2] = -8.8
        yield w, model, data
        pair = [Body("a", position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2,) * 3)]),
                Body("b", position=(rng.uniform(-0.05, 0.05), 0, 0.3 + low), shapes=[Shape("box", size=(0.2,) * 3)])]
        w, model, data = _world([GROUND] + pair)
        data.linear_velocity[2, 2] = -8.8
        yield w, model, data
    for name, n, at in (("pile", 100, (0, 30, 55, 70, 90)), ("stack", 12, (0, 5))):
        sim = Simulator(make_scene(name, count=n))
        for s in range(max(at) + 1):
            if s in at:
                for kind in ("as is", "scaled", "random"):
                    data = sim.data.copy()
                    if kind == "scaled":
                        data.linear_velocity *= rng.uniform(0.0, 3.0)
                    elif kind == "random":
                        m = rng.uniform(size=data.linear_velocity.shape[0]) < 0.5
                        data.linear_velocity[m] = rng.normal(scale=3.0, size=(m.sum(), 3))
                        data.angular_velocity[m] = rng.normal(scale=1.5, size=(m.sum(), 3))
                    yield sim.world, sim.model, data
            sim.step()


@pytest.mark.parametrize("seed", [0, 1])
def test_reachable_contacts_shortcuts_keep_the_contacts_of_the_full_rule(seed):
    """detect_contacts skips reach.py ``contact_closing`` and ``reachable_contacts`` where no contact
    is speculative (``speculative_any``: every phi < margin), and reachable_contacts its Bellman-Ford
    sweeps where every speculative contact closes at free motion (close > 0): the same contacts, in the same
    order and the same bits, as the unfiltered detection (``detect_kernel``) masked by the rule
    without shortcuts (:func:`_reachable_reference`), on falling piles and stacks at rest as stepped and
    with random velocities; every path is met (no speculative contact; all closing; swept, some left out)."""
    from contactlab.collision.boxes import BOX, detect_kernel
    from contactlab.collision.boxes.reach import contact_closing, speculative_any
    h = 0.01
    paths = set()
    for w, model, data in _box_states(seed):
        sweep = _sweep(w, model, data, h)
        margin = float(model.settings.margin)
        reach = shape_reach_of(sweep)
        Rs, ps, pairs, sa, sb, P, N, phi, rest = detect_kernel(
            data.quaternion, data.position, w.shape_body, w.local_R, w.local_p, w.plane_idx, w.plane_local,
            w.aabb_center, w.aabb_half, margin, reach, sweep, w.finite_idx, w.static, w.jointed_keys, model.nb,
            w.shape_class, w.half, w.vflat, w.vstart, w.sphere_radius, w.plane_row)
        assert not rest.any()
        box_pair = (w.shape_class[sa] == BOX) & (w.shape_class[sb] == BOX)
        close = contact_closing(sa, sb, N, phi, sweep, box_pair, Rs, ps, w.half, margin)
        ref = _reachable_reference(sa, sb, phi, close, sweep, w.shape_body, model.nb, margin)
        c = w.detect(data, margin=margin, sweep=sweep)
        got = (np.asarray(c.shape_a), np.asarray(c.shape_b), np.asarray(c.point), np.asarray(c.phi))
        for x, y in zip(got, (sa[ref], sb[ref], P[ref], phi[ref])):
            assert np.array_equal(x, y)
        spec = ~(phi < margin)
        paths.add("none speculative" if not speculative_any(phi, margin)
                  else "all closing" if (close[spec] > 0.0).all() else "swept, all kept" if ref.all() else "swept, some left out")
    assert {"none speculative", "all closing", "swept, some left out"} <= paths, paths


def _box_distance(x, p, R, h):
    """Euclidean distance from point x to the box (centre p, axes the columns of R, half extents h);
    0 inside."""
    q = np.abs(R.T @ (x - p)) - h
    return float(np.linalg.norm(np.maximum(q, 0.0)))


def test_edge_edge_contacts_come_with_the_face_points_beside_them_at_their_exact_distances():
    """Box pairs 1-30 mm apart (coal's distance) in random poses, detected with a 5 cm margin: where
    the separating axis is an edge-edge axis, row 0 is the contact at the two edges' closest points
    (normal not along any face axis, phi the separating-axis gap: at most coal's distance), and every
    other point is a point of the incident box over the reference face of the best face axis, along
    that face's normal, with phi its exact distance to the reference box (point-to-box distance in
    the box's own axes, independent of the routine): never closer than the boxes are (phi >= coal's
    distance), the witness on the reference face inside that face's rectangle."""
    from contactlab.mechanics.rotation import quat_to_matrix
    rng = np.random.default_rng(5)
    margin = 0.05
    edge = with_faces = 0
    for _ in range(300):
        sa, sb = rng.uniform(0.1, 0.3, 3), rng.uniform(0.1, 0.3, 3)
        qa, qb = _random_quat(rng), _random_quat(rng)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        bodies = [Body("a", position=(0, 0, 0), orientation=qa, shapes=[Shape("box", size=tuple(sa))]),
                  Body("b", position=tuple(u * 0.5), orientation=qb, shapes=[Shape("box", size=tuple(sb))])]
        w, model, data = _world(bodies)
        target = rng.uniform(0.001, 0.03)
        for _ in range(60):
            d = _coal_signed_distance(w, data, 0, 1)
            if abs(d - target) < 1e-10:
                break
            data.position[1] += (target - d) * u * 0.9
        d = _coal_signed_distance(w, data, 0, 1)
        c = w.detect(data, margin=margin)
        assert c.count >= 1
        boxes = [(data.position[k].copy(), quat_to_matrix(data.quaternion[k]), np.array([sa, sb][k]) / 2) for k in (0, 1)]
        face_axis = [np.abs(boxes[k][1].T @ c.normal[0]).max() > 1 - 1e-12 for k in (0, 1)]
        if any(face_axis):
            continue
        edge += 1
        assert c.phi[0] <= d + 1e-9
        assert c.count <= 5
        for r in range(1, c.count):
            n, phi, P = c.normal[r], c.phi[r], c.point[r]
            owner = [k for k in (0, 1) if np.abs(boxes[k][1].T @ n).max() > 1 - 1e-12]
            assert len(owner) >= 1
            k = owner[0]                      # the reference box; the point's witness on the other one
            other = 1 - k
            x_c = P + (0.5 * phi if k == 0 else -0.5 * phi) * n
            x_r = P - (0.5 * phi if k == 0 else -0.5 * phi) * n
            assert phi >= d - 1e-9
            assert _box_distance(x_c, *boxes[other]) <= 1e-9                  # on (or in) the incident box
            assert _box_distance(x_r, *boxes[k]) <= 1e-9                      # on the reference face
            assert _box_distance(x_c, *boxes[k]) == pytest.approx(phi, abs=1e-9)
            with_faces += 1
    assert edge > 20 and with_faces > 20, (edge, with_faces)


def test_a_certified_pile_of_100_boxes_stays_within_1_mm():
    """The default simulator on a 100-box pile dropped into its bin (box friction with the previous
    step's bounds, box-qp): over 1.5 s (falling, landing in four layers, settling) every step is
    certified and the deepest overlap any step detects stays under 1 mm (issue 37: no penetration
    beyond 1 mm in certified piles; docs/benchmarks-sim.md "Fidelity at scale" for the larger piles)."""
    sim = Simulator(make_scene("pile", count=100, seed=0))
    records = [sim.step() for _ in range(150)]
    assert all(r.success or r.rescued for r in records)
    assert max(r.contacts for r in records) > 300
    assert max(r.max_penetration for r in records) <= 1e-3


def test_speculative_reach_grows_only_the_fast_pairs_margin():
    """A box falling at 5 m/s gets speculative contacts with the ground 4 cm below (h v = 5 cm),
    while a resting box 4 cm above the ground gets none (the settings' 1 cm margin)."""
    scene = make_scene("stack", count=1)
    from contactlab.mechanics.scene import Body, Shape
    scene.bodies[1].position = (0.0, 0.0, 0.14)
    scene.bodies.append(Body("slow", position=(1.0, 0.0, 0.14), shapes=[Shape("box", size=(0.2, 0.2, 0.2))]))
    scene.bodies[1].linear_velocity = (0.0, 0.0, -5.0)
    sim = Simulator(scene, "box-friction", "pgs")
    c = sim.world.detect(sim.data, reach=sim._reach())
    names = {sim.model.names[b] for b in c.body_a}
    assert names == {"box0"} and c.count == 4
    assert np.allclose(c.phi, 0.04)


def test_pair_reach_follows_the_relative_motion_and_a_possible_stop():
    """A pair's speculative distance is h max(|v_a - v_b|, |v_a|, |v_b|) (+ spin): two boxes falling
    side by side at 2.5 m/s, 4 cm apart, get none (2.5 cm); two boxes closing head-on at 2.5 m/s
    each get their 4 contacts (5 cm); a box falling at 5 m/s onto a resting one gets them too."""
    from contactlab.collision.boxes import pair_reach
    from contactlab.mechanics.scene import Body, Shape
    scene = make_scene("stack", count=1)
    scene.bodies[1].position = (0.0, 0.0, 5.0)            # box0 out of the way
    placed = {"c": (2.0, 1.0, -2.5), "d": (2.0, 1.24, -2.5),  # side by side (x, z, vz)
              "e": (4.0, 1.0, 2.5), "f": (4.0, 1.24, -2.5),   # head-on
              "g": (6.0, 1.0, 0.0), "h": (6.0, 1.24, -5.0)}   # onto a resting box
    for name, (x, z, vz) in placed.items():
        scene.bodies.append(Body(name, position=(x, 0.0, z), linear_velocity=(0.0, 0.0, vz),
                                 shapes=[Shape("box", size=(0.2, 0.2, 0.2))]))
    sim = Simulator(scene, "box-friction", "pgs")
    c = sim.world.detect(sim.data, sweep=sim._sweep())
    pairs = {tuple(sorted((sim.model.names[a], sim.model.names[b]))) for a, b in zip(c.body_a, c.body_b)}
    assert pairs == {("e", "f"), ("g", "h")} and c.count == 8
    assert np.allclose(c.phi, 0.04)
    sw = sim._sweep()
    k = {sim.model.names[b]: s for s, b in enumerate(sim.world.shape_body)}
    assert np.isclose(pair_reach(sw, k["c"], k["d"]), 0.025) and np.isclose(pair_reach(sw, k["e"], k["f"]), 0.05)
    # the per-shape reach (no sweep): reach_a + reach_b, the bound used before
    c2 = sim.world.detect(sim.data, reach=sim._reach())
    assert {tuple(sorted((sim.model.names[a], sim.model.names[b]))) for a, b in zip(c2.body_a, c2.body_b)} == \
        {("c", "d"), ("e", "f"), ("g", "h")}
