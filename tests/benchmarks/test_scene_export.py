"""benchmarks/scene_export.py: the peers' models (MJCF for MuJoCo, URDF and multibodies for
PyBullet) hold the scene's bodies, masses, inertias, box sizes, poses, joints and friction; and
bench_engines' state transfer reads them back in contactlab's frames (every joint at angle 0, as
the scene starts). Nothing here is timed; a peer that is not installed skips its tests."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from contactlab.control.pd import JointReader  # noqa: E402
from contactlab.mechanics.model import build_model  # noqa: E402
from contactlab.scenarios import make_scene  # noqa: E402

SCENES = [("stack", {"count": 3}), ("pile", {"count": 7}), ("quadruped", {}), ("solo12", {}),
          ("barrett-grasp", {"material": "rubber"})]


def _scene(name, kw):
    return make_scene(name, **kw)


def _moving(scene):
    return [b for b in scene.bodies if b.kind != "fixed"]


@pytest.mark.parametrize("name,kw", SCENES, ids=[s[0] for s in SCENES])
def test_mjcf_bodies_masses_inertias_boxes_poses(name, kw):
    mujoco = pytest.importorskip("mujoco")
    from scene_export import mjcf
    scene = _scene(name, kw)
    model, _ = build_model(scene)
    m = mujoco.MjModel.from_xml_string(mjcf(scene, cone="elliptic"))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    assert m.nbody == 1 + len(_moving(scene))                    # the world and every moving body
    boxes = 0
    for b in _moving(scene):
        i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name)
        k = model.index(b.name)
        np.testing.assert_allclose(d.xpos[i], b.position, atol=1e-9)
        R = d.xmat[i].reshape(3, 3)
        from contactlab.mechanics.rotation import quat_to_matrix
        np.testing.assert_allclose(R, quat_to_matrix(np.asarray(b.orientation, float)), atol=1e-9)
        if b.kind == "kinematic":
            assert m.body_mocapid[i] >= 0                         # moved by the driver
            continue
        assert m.body_mass[i] == pytest.approx(model.mass[k], rel=1e-9)
        np.testing.assert_allclose(np.sort(m.body_inertia[i]), np.linalg.eigvalsh(model.inertia[k]), rtol=1e-6,
                                   atol=1e-15)
        for j, s in enumerate(b.shapes):
            g = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{b.name}/{j}")
            if s.kind == "box":
                np.testing.assert_allclose(2 * m.geom_size[g], s.size, rtol=1e-12)
                boxes += 1
            elif s.kind == "sphere":
                assert m.geom_size[g][0] == pytest.approx(s.radius)
    assert boxes == sum(s.kind == "box" for b in _moving(scene) if b.kind != "kinematic" for s in b.shapes)
    assert m.opt.timestep == scene.settings.dt
    np.testing.assert_allclose(m.opt.gravity, scene.gravity)
    # every joint of the scene, as a hinge (revolute) or welded (fixed); couplings as equalities
    hinges = [j for j in scene.joints if j.kind == "revolute"]
    assert m.njnt == len(hinges) + sum(b.kind == "dynamic" and not any(j.child == b.name for j in scene.joints)
                                       for b in scene.bodies)
    assert m.neq == sum(j.follows is not None for j in scene.joints)


def test_mjcf_friction_pairs():
    """The grasp's per-pair friction as explicit pairs (MuJoCo would otherwise take the larger of
    two geoms' coefficients), the scene's mu on every other geom."""
    mujoco = pytest.importorskip("mujoco")
    from scene_export import mjcf
    scene = make_scene("barrett-grasp", material="rubber")
    m = mujoco.MjModel.from_xml_string(mjcf(scene))
    want = {}
    for key, mu in scene.pair_mu.items():
        x, y = key.split("/")
        for i in range(len(scene.body(x).shapes)):
            for k in range(len(scene.body(y).shapes)):
                want[frozenset((f"{x}/{i}", f"{y}/{k}"))] = mu
    got = {frozenset((mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, m.pair_geom1[p]),
                      mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, m.pair_geom2[p]))): m.pair_friction[p][0]
           for p in range(m.npair)}
    assert got == pytest.approx(want)
    assert m.nexclude == len(scene.pair_mu)


@pytest.mark.parametrize("name,kw", SCENES, ids=[s[0] for s in SCENES])
def test_pybullet_bodies_masses_inertias_boxes_poses(name, kw):
    p = pytest.importorskip("pybullet")
    from scene_export import pybullet_load
    scene = _scene(name, kw)
    model, _ = build_model(scene)
    cid = p.connect(p.DIRECT)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            where = pybullet_load(p, cid, scene, Path(tmp))
            assert sorted(where) == sorted(b.name for b in _moving(scene))
            for b in _moving(scene):
                bid, link = where[b.name]
                k = model.index(b.name)
                info = p.getDynamicsInfo(bid, link, physicsClientId=cid)
                pos = (p.getBasePositionAndOrientation(bid, physicsClientId=cid)[0] if link < 0 else
                       p.getLinkState(bid, link, physicsClientId=cid)[0])
                np.testing.assert_allclose(pos, b.position, atol=1e-9)         # the centre of mass
                assert info[0] == pytest.approx(model.mass[k], rel=1e-9)
                np.testing.assert_allclose(np.sort(info[2]), np.linalg.eigvalsh(model.inertia[k]), rtol=1e-5,
                                           atol=1e-12)
                sizes = sorted(tuple(np.round(np.asarray(c[3]), 9)) for c in       # full extents
                               p.getCollisionShapeData(bid, link, physicsClientId=cid) if c[2] == p.GEOM_BOX)
                assert sizes == sorted(tuple(np.round(s.size, 9)) for s in b.shapes if s.kind == "box")
    finally:
        p.disconnect(cid)


def test_pybullet_friction_products():
    """PyBullet multiplies two bodies' coefficients: the per-body values give the scene's mu for
    one mu, and the grasp's three material pairs exactly."""
    pytest.importorskip("pybullet")
    from scene_export import pybullet_friction
    stack = make_scene("stack", count=2)
    f = pybullet_friction(stack)
    assert f["box0"] * f["ground"] == pytest.approx(stack.mu)
    grasp = make_scene("barrett-grasp", material="rubber")
    f = pybullet_friction(grasp)
    for key, mu in grasp.pair_mu.items():
        x, y = key.split("/")
        assert f[x] * f[y] == pytest.approx(mu)


@pytest.mark.parametrize("engine", ["mujoco", "pybullet"])
@pytest.mark.parametrize("name", ["quadruped", "solo12", "barrett"])
def test_state_transfer_reads_the_initial_configuration(engine, name):
    """bench_engines hands the shared controller each peer's body states in contactlab's frames:
    at the start every joint of the robot reads angle 0 and rate 0, the body poses are the scene's."""
    pytest.importorskip(engine)
    import bench_engines as be
    scene = be.build_scene(name, None)
    eng = (be.MuJoCo if engine == "mujoco" else be.PyBullet)(scene, name)
    try:
        sim = eng.state_sim
        names = [j.name for j in scene.joints if j.kind == "revolute"]
        angle, rate = JointReader(sim.model, names)(sim.data)
        np.testing.assert_allclose(angle, 0.0, atol=1e-6)     # PyBullet parses a URDF's rpy to ~1e-7 rad
        np.testing.assert_allclose(rate, 0.0, atol=1e-9)
        live = [i for i, b in enumerate(scene.bodies) if b.kind != "fixed"]
        np.testing.assert_allclose(sim.data.position[live], [scene.bodies[i].position for i in live], atol=1e-9)
    finally:
        if hasattr(eng, "close"):
            eng.close()
