"""URDF import through yourdfpy: structure, physics of the imported mechanism, clear errors."""
import os
from pathlib import Path

import numpy as np
import pytest

from contactlab.errors import ModelError
from contactlab.mechanics.urdf import load_urdf
from contactlab.sim import Simulator

pytest.importorskip("yourdfpy")

DOUBLE = """<?xml version="1.0"?>
<robot name="double">
  <link name="base"/>
  <link name="l1">
    <inertial><origin xyz="0.25 0 0"/><mass value="2"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0425" iyz="0" izz="0.0425"/></inertial>
    <collision><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.05 0.05"/></geometry></collision>
  </link>
  <link name="l2">
    <inertial><origin xyz="0.2 0 0"/><mass value="1"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0135" iyz="0" izz="0.0135"/></inertial>
    <collision><origin xyz="0.2 0 0"/><geometry><cylinder radius="0.02" length="0.4"/></geometry></collision>
  </link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 2"/><axis xyz="0 1 0"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0.5 0 0"/><axis xyz="0 1 0"/><limit lower="-0.5" upper="0.5" effort="10" velocity="1"/></joint>
</robot>
"""


def test_own_urdf_structure_and_swing(tmp_path):
    f = tmp_path / "double.urdf"
    f.write_text(DOUBLE)
    scene = load_urdf(f)
    names = [b.name for b in scene.bodies]
    assert names == ["base", "l1", "l2"] and scene.bodies[0].kind == "fixed"
    l1, l2 = scene.bodies[1], scene.bodies[2]
    assert l1.mass == 2 and np.allclose(l1.position, [0.25, 0, 2]) and np.allclose(l2.position, [0.7, 0, 2])
    j1, j2 = scene.joints
    assert (j1.kind, j1.lower, j2.kind, j2.lower, j2.upper) == ("revolute", None, "revolute", -0.5, 0.5)
    assert np.allclose(j2.anchor, [0.5, 0, 2]) and np.allclose(j2.axis, [0, 1, 0])
    sim = Simulator(scene, "stewart-trinkle", "lemke")
    traj = sim.run(0.6)
    assert traj.metrics()["solver_failures"] == 0
    assert traj.column("joint_error").max() < 1e-6
    # the chain falls from horizontal; link 1 stays 0.25 from the pivot
    assert np.linalg.norm(sim.data.position[1] - [0, 0, 2]) == pytest.approx(0.25, abs=1e-6)
    assert sim.data.position[2][2] < 2.0 - 0.1
    E = traj.column("energy")
    assert E.max() <= E[0] + 1e-6


def _packaged_urdf():
    """A URDF shipped inside an installed pip package (drake's acrobot, or pybullet_data's)."""
    try:
        import pydrake
        p = Path(pydrake.__file__).parent / "share/drake/examples/acrobot/Acrobot.urdf"
        if p.exists():
            return p
    except ImportError:
        pass
    try:
        import pybullet_data
        p = Path(pybullet_data.getDataPath()) / "r2d2.urdf"
        if p.exists():
            return p
    except ImportError:
        pass
    return None


def test_urdf_from_a_pip_package_imports_and_simulates():
    path = _packaged_urdf()
    assert path is not None, "pybullet (a [dev] dependency) ships the URDF this test loads: pip install -e '.[dev]'"
    scene = load_urdf(path)
    moving = [b for b in scene.bodies if b.kind == "dynamic"]
    assert moving and all(b.mass > 0 for b in moving)
    sim = Simulator(scene, "stewart-trinkle", "lemke")
    traj = sim.run(0.2)
    assert traj.metrics()["solver_failures"] == 0
    assert traj.column("joint_error").max() < 1e-6


@pytest.mark.parametrize("text,match", [
    ("<robot name='x'><link name='a'/>", "not a valid URDF"),
    (DOUBLE.replace('<child link="l2"/>', '<child link="l3"/>'), "l3"),
    (DOUBLE.replace('<mass value="1"/>', ''), "l2"),
])
def test_broken_urdf_raises_clear_errors(tmp_path, text, match):
    f = tmp_path / "bad.urdf"
    f.write_text(text)
    with pytest.raises(ModelError, match=match):
        load_urdf(f)
    with pytest.raises(ModelError, match="no such URDF"):
        load_urdf(tmp_path / "missing.urdf")


def test_go1_loads_with_fixed_joint_links_merged_into_their_parents():
    """go1 (example-robot-data): rotors, feet, cameras, IMU and sonars hang from links by fixed
    joints, some massless. merge_fixed folds them into their parents: 13 bodies, 12 revolute joints,
    and the whole robot's mass, centre of mass and inertia about it equal those of the URDF's links
    placed by yourdfpy's own forward kinematics (zero configuration). Without merging, the
    massless links are refused with a pointer to merge_fixed."""
    import xml.etree.ElementTree as ET
    import yourdfpy
    from contactlab.mechanics import build_model
    from contactlab.mechanics.rotation import quat_to_matrix
    from contactlab.scenarios.solo12 import urdf_path
    path = urdf_path("go1")
    with pytest.raises(ModelError, match="merge_fixed"):
        load_urdf(path, fixed_base=False)
    sc = load_urdf(path, fixed_base=False, merge_fixed=True)
    assert len(sc.bodies) == 13 and len(sc.joints) == 12
    assert {j.kind for j in sc.joints} == {"revolute"}
    # reference: every link's inertial from the XML, placed by yourdfpy at q = 0
    robot = yourdfpy.URDF.load(str(path), load_meshes=False, load_collision_meshes=False)
    m_ref, c_ref, parts = 0.0, np.zeros(3), []
    for link in ET.parse(path).getroot().iter("link"):
        inert = link.find("inertial")
        if inert is None:
            continue
        m = float(inert.find("mass").get("value"))
        o = inert.find("origin")
        xyz = np.array([float(x) for x in o.get("xyz", "0 0 0").split()]) if o is not None else np.zeros(3)
        rpy = [float(x) for x in o.get("rpy", "0 0 0").split()] if o is not None else [0.0] * 3
        a = inert.find("inertia").attrib
        I = np.array([[a["ixx"], a["ixy"], a["ixz"]], [a["ixy"], a["iyy"], a["iyz"]],
                      [a["ixz"], a["iyz"], a["izz"]]], dtype=np.float64)
        T = robot.get_transform(link.get("name"), robot.base_link)
        from scipy.spatial.transform import Rotation
        Ri = T[:3, :3] @ Rotation.from_euler("xyz", rpy).as_matrix()
        parts.append((m, T[:3, :3] @ xyz + T[:3, 3], Ri @ I @ Ri.T))
        m_ref += m
    c_ref = sum(m * c for m, c, _ in parts) / m_ref
    model, data = build_model(sc)
    m = model.mass.sum()
    c = (model.mass[:, None] * data.position).sum(axis=0) / m
    assert m == pytest.approx(m_ref, rel=1e-12)
    np.testing.assert_allclose(c, c_ref, atol=1e-12)

    def about(c0, items):
        return sum(I + mi * ((x - c0) @ (x - c0) * np.eye(3) - np.outer(x - c0, x - c0)) for mi, x, I in items)

    R = quat_to_matrix(data.quaternion)
    ours = [(model.mass[i], data.position[i], R[i] @ model.inertia[i] @ R[i].T) for i in range(model.nb)]
    np.testing.assert_allclose(about(c, ours), about(c_ref, parts), atol=1e-9)
    # the feet (spheres of the merged FOOT links) sit at the calves' lower ends
    calf = [b for b in sc.bodies if b.name.endswith("_calf")]
    assert len(calf) == 4 and all(any(s.kind == "sphere" for s in b.shapes) for b in calf)


def test_a_urdf_whose_link_masses_are_too_far_apart_is_refused_naming_both(tmp_path):
    """load_urdf refuses the mass ratio ``contactlab simulate`` and scene files refuse (a ModelError
    naming the heaviest and the lightest dynamic link and how to raise the limit), and loads the
    same file inside a mass_ratio_limit block that allows it; at the limit it loads."""
    from contactlab.mechanics import MAX_MASS_RATIO, mass_ratio_limit
    f = tmp_path / "double.urdf"
    f.write_text(DOUBLE.replace('<mass value="1"/>', '<mass value="1e-6"/>'))
    with pytest.raises(ModelError, match=r"bodies 'l1' \(2 kg\) and 'l2' \(1e-06 kg\) have a mass ratio of 2e\+06, "
                                         r"above 1e\+05.*mass_ratio_limit\(R\)"):
        load_urdf(f)
    with mass_ratio_limit(1e7):
        assert [b.mass for b in load_urdf(f).bodies[1:]] == [2.0, 1e-6]
    f.write_text(DOUBLE.replace('<mass value="1"/>', f'<mass value="{2 / MAX_MASS_RATIO!r}"/>'))
    assert load_urdf(f).bodies[2].mass == 2 / MAX_MASS_RATIO
