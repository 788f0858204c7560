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
