"""collision/polytope.py's compiled contacts are exactly (bit for bit) those of the algorithm they
replaced (tests/collision/polytope_reference.py, run as plain Python), on the Barrett grasp's states
(the scene whose detection they were made cheaper for) and on random box-prism pairs near contact."""
import numpy as np
import pytest

from contactlab.collision import polytope as PT
from contactlab.collision.boxes.narrow_phase import detect_kernel
from contactlab.collision.boxes.reach import shape_reach_of
from contactlab.mechanics.kernels import shape_sweep
from contactlab.sim import grasp_step as GS

from . import polytope_reference as REF
from .test_polytope import BOX, PRISM, _rot


def _same(got, ref):
    for x, y in zip(got, ref):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def test_grasp_contacts_are_the_reference_bits(monkeypatch):
    """The paper configuration of the Barrett grasp (bench_engines' barrett row) for 300 steps: at
    every third step, the polytope pairs the compiled detection takes, through polytope_contacts and
    through the reference, give the same contacts (points, normals, depths, order, bits)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sc = make_scene("barrett-grasp", material="rubber")
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                    controllers=sc.controllers)
    calls, checked, contacts, call = [0], [0], [0], PT.detect_and_match_polytopes

    w, m = sim.world, sim.model

    def check(*a):
        lin, ang, h, quaternion, position, margin = a[:6]
        calls[0] += 1
        if calls[0] % 3 == 0:
            sweep = shape_sweep(m.dof_start, lin, ang, w.body_radius, w.shape_body, h)
            Rs, ps, pairs, *_, rest = detect_kernel(
                quaternion, position, w.shape_body, w.local_R, w.local_p, w.plane_idx, w.plane_local, w.aabb_center,
                w.aabb_half, margin, shape_reach_of(sweep), sweep, w.finite_idx, w.static, w.jointed_keys, m.nb,
                w.shape_class, w.half, w.vflat, w.vstart, w.sphere_radius, w.plane_row)
            sel = np.ascontiguousarray(pairs[rest & w.is_poly[pairs[:, 0]] & w.is_poly[pairs[:, 1]]])
            got = PT.polytope_contacts(sel, Rs, ps, *w.poly, margin, sweep)
            _same(got, REF.polytope_contacts(sel, Rs, ps, *w.poly, margin, sweep))
            checked[0] += 1
            contacts[0] += got[4].size
        return call(*a)

    monkeypatch.setattr(PT, "detect_and_match_polytopes", check)
    monkeypatch.setattr(GS, "detect_and_match_polytopes", check)     # the fused grasp step's own reference
    for _ in range(300):
        sim.step()
    assert checked[0] == 100 and contacts[0] > 200      # the fingers hold the glass for most of the run


@pytest.mark.parametrize("seed", range(4))
def test_random_pairs_are_the_reference_bits(seed):
    """Box-prism, prism-box and box-box pairs at random poses from deep overlap to beyond the margin:
    the same contacts, bit for bit, and the same empty answers."""
    rng = np.random.default_rng(seed)
    data = PT.polytope_data([BOX, PRISM, BOX])
    pairs = np.array([[0, 1], [1, 2], [0, 2], [2, 1]])
    for _ in range(40):
        Rs = np.array([_rot(rng) for _ in range(3)])
        ps = np.zeros((3, 3))
        for k in (0, 2):
            u = rng.normal(size=3)
            ps[k] = u * rng.uniform(0.0, 0.1) / np.linalg.norm(u)
        sweep = np.abs(rng.normal(size=(3, 4))) * 1e-3
        margin = rng.uniform(0.0, 0.01)
        _same(PT.polytope_contacts(pairs, Rs, ps, *data, margin, sweep),
              REF.polytope_contacts(pairs, Rs, ps, *data, margin, sweep))


def _face_stage(V, F, C, rad, data, a, b):
    """polytope_pair's face stage without its bounds (numpy): the largest face separation, the first
    face in order (a's faces, then b's) that attains it, and the inputs of ``_edges_cannot_win``."""
    _, vstart, _, _, fstart, *_ = data
    VA, VB = V[vstart[a]:vstart[a + 1]], V[vstart[b]:vstart[b + 1]]
    FA, FB = F[fstart[a]:fstart[a + 1]], F[fstart[b]:fstart[b + 1]]
    sa = (VB @ FA[:, :3].T).min(axis=0) - FA[:, 3]
    sb = (VA @ FB[:, :3].T).min(axis=0) - FB[:, 3]
    best, win = sa.max(), int(sa.argmax())
    if sb.max() > best:
        best, win = sb.max(), -2 - int(sb.argmax())
    return win, best, PT.EDGE_PREFERENCE * rad[a], VA, VB, FA, FB, C[a], rad[a], rad[b]


@pytest.mark.parametrize("seed", range(3))
def test_shallow_overlaps_skip_the_edge_stage_and_keep_the_reference_bits(seed):
    """Box-prism pairs overlapping by 1e-9 to 3e-6 m (the grasp's depths) at random poses: where the
    witness (``_edges_cannot_win``) skips the edge stage, no axis of the exhaustive separating-axis
    test separates by more than the face axis plus the edge preference (an independent check of the
    skip's bound), the contacts are the reference's bit for bit in both orders, and the skip is
    taken on a good share of them (the test covers it)."""
    from .test_polytope import _brute_separation
    rng = np.random.default_rng(100 + seed)
    data = PT.polytope_data([BOX, PRISM])
    _, vstart, _, _, fstart, _, _, estart = data
    skipped = 0
    for _ in range(30):
        Rs = np.array([_rot(rng), _rot(rng)])
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        ps = np.array([np.zeros(3), 0.2 * u])
        depth = 10.0 ** rng.uniform(-9, np.log10(3e-6))
        for _ in range(4):      # move b along u onto the depth: the separation is piecewise linear in the shift
            phi, N = PT.polytope_contacts(np.array([[0, 1]]), Rs, ps, *data, 1.0, np.zeros((2, 4)))[4:2:-1]
            ps[1] -= u * (phi[0] + depth) / max(N[0] @ u, 0.1)
        V, F, C, rad, *_ = PT._call_work(vstart, fstart, estart)
        PT.polytope_world(np.ones(2, dtype=np.int64), Rs, ps, *data[:5], V, F, C, rad)
        args = _face_stage(V, F, C, rad, data, 0, 1)
        if PT._edges_cannot_win(*args):
            skipped += 1
            win, best, tol = args[:3]
            assert _brute_separation(Rs[0], ps[0], Rs[1], ps[1], data) <= best + tol
        sweep = np.zeros((2, 4))
        for pairs in (np.array([[0, 1]]), np.array([[1, 0]])):
            _same(PT.polytope_contacts(pairs, Rs, ps, *data, 0.005, sweep),
                  REF.polytope_contacts(pairs, Rs, ps, *data, 0.005, sweep))
    assert skipped >= 10
