"""One contactlab scene written for the peer engines: MJCF for MuJoCo, URDF (and plain multibodies)
for PyBullet, from the same bodies, masses, inertias, shapes, joints and friction.

Used by bench_sim.py (box stacks and piles) and bench_engines.py (those, the quadruped, Solo-12
and the Barrett hand). Frames:

* A MuJoCo body's frame is the contactlab body's frame (origin at the centre of mass, axes the
  body's orientation): ``xpos``/``xquat`` read back as contactlab's ``position``/``quaternion``.
  Joints sit at their anchors in the child's frame; fixed bodies' shapes are world geoms; a
  root ``kinematic`` body is a mocap body (its pose set by the driver every step).
* A URDF link's frame has its origin at the link's parent joint anchor (URDF puts the joint at
  the child link's origin) and the body's orientation; the inertial origin is the offset to the
  centre of mass (so PyBullet's link "world position", its inertial frame, is contactlab's body
  position). The root link's frame is the body frame. A root ``kinematic`` body hangs from a
  massless fixed link on a prismatic z joint that the driver moves with a velocity motor (the
  scenes here move their wrist only vertically).
* Free single bodies without joints (the boxes) go to PyBullet as ``createMultiBody`` bodies
  (:func:`pybullet_free_bodies`), as the URDF would give the same, without 10,000 files.

Friction: MuJoCo combines two geoms' friction by the maximum, PyBullet by the product (clamped at
10 in Bullet's ``calculateCombinedFriction``). MuJoCo gets the scene's mu on every geom and each
``pair_mu`` entry as explicit ``<pair>`` elements (with the automatic pairs of those two bodies
excluded); PyBullet gets per-body coefficients whose products fit the scene's pairs
(:func:`pybullet_friction`: sqrt(mu) each for one scene mu; least squares in logs for pair_mu).
"""
from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from contactlab.mechanics.model import build_model  # noqa: E402
from contactlab.mechanics.rotation import quat_to_matrix  # noqa: E402


def _R(q) -> np.ndarray:
    return quat_to_matrix(np.asarray(q, dtype=np.float64))


def _quat(R: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a rotation matrix."""
    from scipy.spatial.transform import Rotation
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return q / np.linalg.norm(q) * (1.0 if w >= 0 else -1.0)


def _rpy(R: np.ndarray) -> tuple:
    """URDF roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    from scipy.spatial.transform import Rotation
    return tuple(Rotation.from_matrix(R).as_euler("xyz"))


def _f(v) -> str:
    """Numbers for XML attributes, positional with 12 decimals, |x| < 1e-12 written as 0 (PyBullet's
    URDF parser misread "-7.3e-19 -0.037 -0.16", dropping the last value, and rejects a list
    starting "-0 ")."""
    return " ".join(np.format_float_positional(float(x) if abs(float(x)) >= 1e-12 else 0.0, precision=12, trim="-")
                    for x in np.ravel(v))


class SceneTree:
    """The scene as trees: ``roots`` (bodies without a parent joint, fixed ones excepted),
    ``children[name]`` -> [(joint, child name)], ``parent_joint[name]``, and the compiled masses
    and body-frame inertias (contactlab's own: a body without an inertia gets its first shape's)."""

    def __init__(self, scene):
        self.scene = scene
        model, _ = build_model(scene)
        self.mass = {n: float(m) for n, m in zip(model.names, model.mass)}
        self.inertia = {n: np.asarray(I) for n, I in zip(model.names, model.inertia)}
        self.bodies = {b.name: b for b in scene.bodies}
        self.children = {b.name: [] for b in scene.bodies}
        self.parent_joint = {}
        for j in scene.joints:
            if j.parent == "world":
                raise NotImplementedError(f"joint {j.name!r} to the world: not exported")
            self.children[j.parent].append((j, j.child))
            self.parent_joint[j.child] = j
        self.fixed = [b for b in scene.bodies if b.kind == "fixed"]
        self.roots = [b for b in scene.bodies if b.kind != "fixed" and b.name not in self.parent_joint]

    def subtree(self, name) -> list:
        out = [name]
        for _, c in self.children[name]:
            out += self.subtree(c)
        return out


# ------------------------------------------------------------------------------------------------ MJCF
def _mj_geom(s, body_pos=None, body_R=None, name=None, friction=None) -> str:
    """One shape as an MJCF geom, placed in its body's frame (or in the world: ``body_pos``/``body_R``)."""
    p, R = np.asarray(s.position, float), _R(s.orientation)
    if body_R is not None:
        p, R = body_pos + body_R @ p, body_R @ R
    attrs = ""
    if name:
        attrs += f" name={quoteattr(name)}"
    if friction is not None:
        attrs += f' friction="{_f(friction)} 0.005 0.0001"'
    if s.kind in ("halfspace", "plane"):
        n = np.asarray(s.normal, float)
        n = n / np.linalg.norm(n)
        z = np.array([0.0, 0.0, 1.0])
        if body_R is not None:
            n = body_R @ n
        # plane through offset * n (in the body frame, then placed), its z axis along n
        v, c = np.cross(z, n), float(z @ n)
        Rn = np.eye(3) if np.linalg.norm(v) < 1e-12 and c > 0 else (
            np.diag([1.0, -1.0, -1.0]) if np.linalg.norm(v) < 1e-12 else
            _axis_angle(v / np.linalg.norm(v), np.arccos(np.clip(c, -1, 1))))
        base = np.zeros(3) if body_pos is None else body_pos
        pos = base + float(s.offset) * n
        return f'<geom type="plane" size="0 0 1" pos="{_f(pos)}" quat="{_f(_quat(Rn))}"{attrs}/>'
    q = _quat(R)
    if s.kind == "box":
        return f'<geom type="box" size="{_f(0.5 * np.asarray(s.size, float))}" pos="{_f(p)}" quat="{_f(q)}"{attrs}/>'
    if s.kind == "sphere":
        return f'<geom type="sphere" size="{_f(float(s.radius))}" pos="{_f(p)}"{attrs}/>'
    if s.kind in ("capsule", "cylinder"):
        return (f'<geom type="{s.kind}" size="{_f(float(s.radius))} {_f(0.5 * float(s.length))}" pos="{_f(p)}" '
                f'quat="{_f(q)}"{attrs}/>')
    if s.kind == "convex":
        return f'<geom type="mesh" mesh="{{mesh}}" pos="{_f(p)}" quat="{_f(q)}"{attrs}/>'
    raise NotImplementedError(f"shape kind {s.kind!r} is not exported")


def _axis_angle(axis, angle) -> np.ndarray:
    from scipy.spatial.transform import Rotation
    return Rotation.from_rotvec(np.asarray(axis) * angle).as_matrix()


def mjcf(scene, *, cone: str | None = None, integrator: str | None = None, memory_mb: int | None = None,
         motor_kv: float = 100.0) -> str:
    """The scene as an MJCF string (module docstring). ``cone``: MuJoCo's friction cone
    (``pyramidal``, its default, or ``elliptic``); ``integrator``: e.g. ``implicitfast``. Geom
    names: ``<body>/<k>`` (k the shape's index in the body); joints and actuator-free: the
    driver applies ``qfrc_applied`` or sets mocap poses. Joint couplings (``follows``) become
    ``<equality><joint polycoef="0 ratio 0 0 0">``; limits ``range``; velocity motors
    ``<velocity>`` actuators named after the joint (force-limited at the motor's max_force, gain
    ``motor_kv``; an unlimited motor (max_force inf): kv 100)."""
    t = SceneTree(scene)
    mu = float(scene.mu)
    meshes, world, bodies = [], [], []

    def geom(s, b, k, **kw):
        g = _mj_geom(s, name=f"{b.name}/{k}", **kw)
        if s.kind == "convex":
            mname = f"mesh_{len(meshes)}"
            meshes.append(f'<mesh name="{mname}" vertex="{_f(np.asarray(s.vertices, float))}"/>')
            g = g.replace("{mesh}", mname)
        return g

    for b in t.fixed:
        for k, s in enumerate(b.shapes):
            world.append(geom(s, b, k, body_pos=np.asarray(b.position, float), body_R=_R(b.orientation)))

    def body_xml(name, parent_pos, parent_R, top) -> str:
        b = t.bodies[name]
        pos, R = np.asarray(b.position, float), _R(b.orientation)
        rel_p, rel_R = parent_R.T @ (pos - parent_pos), parent_R.T @ R
        head = f'<body name={quoteattr(name)} pos="{_f(rel_p)}" quat="{_f(_quat(rel_R))}"'
        inner = []
        if top and b.kind == "kinematic":
            head += ' mocap="true"'
        elif top:
            inner.append("<freejoint/>")
        elif t.parent_joint[name].kind != "fixed":      # a fixed joint: a child body without a joint
            j = t.parent_joint[name]
            kind = {"revolute": "hinge", "prismatic": "slide"}[j.kind]
            jp = R.T @ (np.asarray(j.anchor, float) - pos)
            ax = R.T @ np.asarray(j.axis, float)
            lim = ""
            if j.lower is not None or j.upper is not None:
                lo = -1e6 if j.lower is None else j.lower
                hi = 1e6 if j.upper is None else j.upper
                lim = f' limited="true" range="{_f(lo)} {_f(hi)}"'
            inner.append(f'<joint name={quoteattr(j.name)} type="{kind}" pos="{_f(jp)}" axis="{_f(ax / np.linalg.norm(ax))}"{lim}/>')
        if b.kind != "kinematic" or not top:
            I = t.inertia[name]
            inner.append(f'<inertial pos="0 0 0" mass="{_f(t.mass[name])}" '
                         f'fullinertia="{_f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>')
        inner += [geom(s, b, k) for k, s in enumerate(b.shapes)]
        inner += [body_xml(c, pos, R, False) for _, c in t.children[name]]
        return head + ">" + "".join(inner) + "</body>"

    for b in t.roots:
        bodies.append(body_xml(b.name, np.zeros(3), np.eye(3), True))
    contact = []
    for key, m in scene.pair_mu.items():
        x, y = str(key).split("/")
        bx, by = ("world" if t.bodies[n].kind == "fixed" else n for n in (x, y))   # fixed: world geoms
        contact.append(f'<exclude body1={quoteattr(bx)} body2={quoteattr(by)}/>')
        for i, sx in enumerate(t.bodies[x].shapes):
            for k, sy in enumerate(t.bodies[y].shapes):
                contact.append(f'<pair geom1="{x}/{i}" geom2="{y}/{k}" friction="{_f(max(float(m), 1e-5))} '
                               f'{_f(max(float(m), 1e-5))} 0.005 0.0001 0.0001"/>')
    equality, actuators = [], []
    for j in scene.joints:
        if j.follows is not None:
            equality.append(f'<joint joint1={quoteattr(j.name)} joint2={quoteattr(j.follows)} '
                            f'polycoef="0 {_f(float(j.ratio))} 0 0 0"/>')
        if j.motor is not None:
            f = float(j.motor.max_force)
            lim = f' forcelimited="true" forcerange="{_f(-f)} {_f(f)}"' if np.isfinite(f) else ""
            kv = motor_kv if np.isfinite(f) else 100.0
            actuators.append(f'<velocity name={quoteattr(j.name)} joint={quoteattr(j.name)} kv="{_f(kv)}"{lim}/>')
    opt = f'timestep="{_f(scene.settings.dt)}" gravity="{_f(scene.gravity)}"'
    if cone:
        opt += f' cone="{cone}"'
    if integrator:
        opt += f' integrator="{integrator}"'
    n = sum(1 for _ in scene.bodies)
    mem = memory_mb or max(64, n // 2)
    xml = (f'<mujoco model={quoteattr(scene.name)}><compiler angle="radian" inertiafromgeom="false"/>'
           f'<option {opt}/><default><geom friction="{_f(mu)} 0.005 0.0001"/></default>'
           f'<size memory="{mem}M"/>'
           + (f"<asset>{''.join(meshes)}</asset>" if meshes else "")
           + f"<worldbody>{''.join(world)}{''.join(bodies)}</worldbody>"
           + (f"<contact>{''.join(contact)}</contact>" if contact else "")
           + (f"<equality>{''.join(equality)}</equality>" if equality else "")
           + (f"<actuator>{''.join(actuators)}</actuator>" if actuators else "")
           + "</mujoco>")
    return xml


# ------------------------------------------------------------------------------------------------ URDF
def _urdf_geometry(s, mesh_dir: Path | None, tag: str) -> str:
    if s.kind == "box":
        return f'<geometry><box size="{_f(s.size)}"/></geometry>'
    if s.kind == "sphere":
        return f'<geometry><sphere radius="{_f(float(s.radius))}"/></geometry>'
    if s.kind in ("capsule", "cylinder"):
        return f'<geometry><{s.kind} radius="{_f(float(s.radius))}" length="{_f(float(s.length))}"/></geometry>'
    if s.kind == "convex":
        if mesh_dir is None:
            raise NotImplementedError("convex shapes need a mesh directory")
        from scipy.spatial import ConvexHull
        v = np.asarray(s.vertices, float)
        hull = ConvexHull(v)
        f = mesh_dir / f"{tag}.obj"
        lines = [f"v {_f(x)}" for x in v] + [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in _outward(hull, v)]
        f.write_text("\n".join(lines) + "\n")
        return f'<geometry><mesh filename="{f}"/></geometry>'
    raise NotImplementedError(f"shape kind {s.kind!r} is not exported to URDF")


def _outward(hull, v):
    """The hull's triangles ordered counter-clockwise seen from outside."""
    c = v[hull.vertices].mean(axis=0)
    out = []
    for a, b, d in hull.simplices:
        n = np.cross(v[b] - v[a], v[d] - v[a])
        out.append((a, b, d) if n @ (v[a] - c) >= 0 else (a, d, b))
    return out


def urdf(scene, root: str, mesh_dir: Path | None = None) -> tuple[str, list]:
    """The tree under ``root`` (a body without a parent joint) as a URDF string, and the link names
    in PyBullet's link order (index 0 the base; a kinematic root adds a fixed ``<root>__world``
    base and a prismatic z joint ``<root>__lift``, so its body is link 0 and its children follow).
    Link frames as in the module docstring; joint couplings and motors are left to the driver."""
    t = SceneTree(scene)
    links, joints, order = [], [], []
    frames = {}

    def link_frame(name):
        b = t.bodies[name]
        R = _R(b.orientation)
        o = np.asarray(b.position, float) if name == root else np.asarray(t.parent_joint[name].anchor, float)
        return o, R

    def link_xml(name) -> str:
        b = t.bodies[name]
        o, R = frames[name]
        com = R.T @ (np.asarray(b.position, float) - o)
        I = t.inertia[name]
        mass = t.mass[name]
        parts = [f'<inertial><origin xyz="{_f(com)}" rpy="0 0 0"/><mass value="{_f(mass)}"/>'
                 f'<inertia ixx="{_f(I[0, 0])}" iyy="{_f(I[1, 1])}" izz="{_f(I[2, 2])}" ixy="{_f(I[0, 1])}" '
                 f'ixz="{_f(I[0, 2])}" iyz="{_f(I[1, 2])}"/></inertial>']
        for k, s in enumerate(b.shapes):
            p = com + np.asarray(s.position, float)
            parts.append(f'<collision><origin xyz="{_f(p)}" rpy="{_f(_rpy(_R(s.orientation)))}"/>'
                         f'{_urdf_geometry(s, mesh_dir, f"{name}_{k}")}</collision>')
        return f"<link name={quoteattr(name)}>{''.join(parts)}</link>"

    def walk(name):
        frames[name] = link_frame(name)
        order.append(name)
        links.append(link_xml(name))
        for j, c in t.children[name]:
            frames[c] = link_frame(c)
            po, pR = frames[name]
            co, cR = frames[c]
            rel_p, rel_R = pR.T @ (co - po), pR.T @ cR
            ax = cR.T @ np.asarray(j.axis, float)
            kind = {"revolute": "revolute" if (j.lower is not None or j.upper is not None) else "continuous",
                    "prismatic": "prismatic", "fixed": "fixed"}[j.kind]
            lim = ""
            if kind in ("revolute", "prismatic"):
                lo = -1e3 if j.lower is None else j.lower
                hi = 1e3 if j.upper is None else j.upper
                lim = f'<limit lower="{_f(lo)}" upper="{_f(hi)}" effort="1e6" velocity="1e3"/>'
            joints.append(f'<joint name={quoteattr(j.name)} type="{kind}"><parent link={quoteattr(name)}/>'
                          f'<child link={quoteattr(c)}/><origin xyz="{_f(rel_p)}" rpy="{_f(_rpy(rel_R))}"/>'
                          f'<axis xyz="{_f(ax / np.linalg.norm(ax))}"/>{lim}<dynamics damping="0" friction="0"/></joint>')
            walk(c)

    top = t.bodies[root]
    walk(root)
    if top.kind == "kinematic":
        o, R = frames[root]
        base = f"{root}__world"
        links.insert(0, f'<link name="{base}"><inertial><mass value="0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" '
                        f'ixz="0" iyz="0"/></inertial></link>')
        joints.insert(0, f'<joint name="{root}__lift" type="prismatic"><parent link="{base}"/><child link={quoteattr(root)}/>'
                         f'<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="{_f(R.T @ np.array([0.0, 0.0, 1.0]))}"/>'
                         f'<limit lower="-10" upper="10" effort="1e6" velocity="10"/></joint>')
    # one element a line: PyBullet read the last joint's origin of a one-line 16-link URDF as z = 0
    return f"<robot name={quoteattr(root)}>\n" + "\n".join(links + joints) + "\n</robot>\n", order


def pybullet_friction(scene) -> dict:
    """Per-body lateral friction whose products (PyBullet's rule) give the scene's friction: sqrt(mu)
    for every body, and where ``pair_mu`` is set, the least-squares fit in logs of f_x f_y = mu_xy
    over its entries (bodies named in no entry keep sqrt(mu))."""
    mu = float(scene.mu)
    f = {b.name: np.sqrt(max(mu, 1e-6)) for b in scene.bodies}
    if scene.pair_mu:
        names = sorted({n for key in scene.pair_mu for n in str(key).split("/")})
        A = np.zeros((len(scene.pair_mu), len(names)))
        y = np.zeros(len(scene.pair_mu))
        for r, (key, m) in enumerate(scene.pair_mu.items()):
            x, z = str(key).split("/")
            A[r, names.index(x)] += 1.0
            A[r, names.index(z)] += 1.0
            y[r] = np.log(max(float(m), 1e-6))
        sol = np.linalg.lstsq(A, y, rcond=None)[0]
        f.update({n: float(np.exp(v)) for n, v in zip(names, sol)})
    return f


def pybullet_free_bodies(p, cid, scene, friction: dict | None = None) -> list:
    """The scene's fixed bodies (one static multibody per shape; half-spaces as planes) and its
    free single bodies (box shapes, joint-free) as PyBullet multibodies, bodies in scene order.
    Returns the ids of the dynamic ones. ``friction``: per-body lateral friction (default
    :func:`pybullet_friction`)."""
    friction = friction or pybullet_friction(scene)
    t = SceneTree(scene)
    ids = []
    shapes = {}                    # one collision shape per box size, shared by the bodies

    def box(half):
        key = tuple(np.round(half, 12))
        if key not in shapes:
            shapes[key] = p.createCollisionShape(p.GEOM_BOX, halfExtents=list(half), physicsClientId=cid)
        return shapes[key]

    for b in scene.bodies:
        if b.kind != "fixed" and (b.name in t.parent_joint or t.children[b.name]):
            continue
        w, x, y, z = b.orientation
        R = _R(b.orientation)
        for s in b.shapes:
            if s.kind in ("halfspace", "plane"):
                n = R @ np.asarray(s.normal, float)
                col = p.createCollisionShape(p.GEOM_PLANE, planeNormal=list(n), physicsClientId=cid)
                bid = p.createMultiBody(0, col, basePosition=list(np.asarray(b.position) + float(s.offset) * n),
                                        physicsClientId=cid)
            elif s.kind == "box" and (b.kind == "fixed" or len(b.shapes) == 1):
                col = box([0.5 * v for v in s.size])
                if b.kind == "fixed":
                    pos = np.asarray(b.position) + R @ np.asarray(s.position)
                    qs = _quat(R @ _R(s.orientation))
                    bid = p.createMultiBody(0, col, basePosition=list(pos), baseOrientation=[*qs[1:], qs[0]],
                                            physicsClientId=cid)
                else:
                    if np.any(np.asarray(s.position) != 0) or tuple(s.orientation) != (1.0, 0.0, 0.0, 0.0):
                        raise NotImplementedError("a free box off its body's frame")
                    I = t.inertia[b.name]
                    bid = p.createMultiBody(t.mass[b.name], col, basePosition=list(b.position),
                                            baseOrientation=[x, y, z, w], physicsClientId=cid)
                    p.changeDynamics(bid, -1, localInertiaDiagonal=list(np.diag(I)), physicsClientId=cid)
                    ids.append(bid)
            else:
                raise NotImplementedError(f"free body {b.name!r} with a {s.kind} shape: use urdf()")
            p.changeDynamics(bid, -1, lateralFriction=friction[b.name], restitution=0.0, linearDamping=0.0,
                             angularDamping=0.0, physicsClientId=cid)
    return ids


def pybullet_load(p, cid, scene, folder: Path, friction: dict | None = None) -> dict:
    """The whole scene in PyBullet: fixed bodies and free single boxes by
    :func:`pybullet_free_bodies`, every other root body's tree by a URDF written to ``folder``
    (self-collision on, parent-child pairs excluded, as contactlab collides every pair of bodies
    not joined directly). Damping off, the URDF joints' default velocity motors off, friction per
    body by :func:`pybullet_friction`. Returns {body name: (body unique id, link index)} for the
    non-fixed bodies (link -1: a base)."""
    friction = friction or pybullet_friction(scene)
    t = SceneTree(scene)
    where = {}
    free = [b for b in t.roots if not t.children[b.name] and b.kind == "dynamic" and len(b.shapes) == 1
            and b.shapes[0].kind == "box" and tuple(b.shapes[0].position) == (0.0, 0.0, 0.0)
            and tuple(b.shapes[0].orientation) == (1.0, 0.0, 0.0, 0.0)]
    free_names = {b.name for b in free}
    sub = type(scene)(scene.name, [b for b in scene.bodies if b.kind == "fixed" or b.name in free_names], [],
                      mu=scene.mu, settings=scene.settings)
    for b, bid in zip(free, pybullet_free_bodies(p, cid, sub, friction)):
        where[b.name] = (bid, -1)
    folder = Path(folder)
    for b in t.roots:
        if b.name in free_names:
            continue
        text, order = urdf(scene, b.name, folder)
        f = folder / f"{b.name}.urdf"
        f.write_text(text)
        w, x, y, z = b.orientation
        kin = b.kind == "kinematic"
        flags = p.URDF_USE_INERTIA_FROM_FILE | p.URDF_USE_SELF_COLLISION | p.URDF_USE_SELF_COLLISION_EXCLUDE_PARENT
        bid = p.loadURDF(str(f), basePosition=list(b.position), baseOrientation=[x, y, z, w], useFixedBase=kin,
                         flags=flags, physicsClientId=cid)
        links = {p.getJointInfo(bid, i, physicsClientId=cid)[12].decode(): i
                 for i in range(p.getNumJoints(bid, physicsClientId=cid))}
        links[p.getBodyInfo(bid, physicsClientId=cid)[0].decode()] = -1
        for name in t.subtree(b.name):
            where[name] = (bid, links[name])
            p.changeDynamics(bid, links[name], lateralFriction=friction[name], restitution=0.0, linearDamping=0.0,
                             angularDamping=0.0, physicsClientId=cid)
        n = p.getNumJoints(bid, physicsClientId=cid)
        p.setJointMotorControlArray(bid, list(range(n)), p.VELOCITY_CONTROL, forces=[0.0] * n, physicsClientId=cid)
    return where
