"""URDF import through yourdfpy (a maintained parser): links -> bodies, joints -> joints.

Each link becomes a body whose frame is the link's inertial frame (centre of mass, principal
axes as written) at the zero configuration; collision geometries (box, sphere, cylinder; meshes
as convex hulls of their vertices when trimesh can read them) become shapes. Joints: revolute
(with limits), continuous (revolute without limits), prismatic (with limits), fixed; a joint
whose parent is not a link (e.g. "world") or the root link with ``fixed_base`` attaches to the
world. Visual geometries are kept as drawing-only ``Body.visuals`` (meshes as triangle meshes) for
the 3D replays. Damping and transmissions are ignored.
"""
from __future__ import annotations

import contextlib
import contextvars
import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .mass_ratio import check_mass_ratio
from .rotation import quat_from_matrix
from .scene import Body, Joint, Scene, Settings, Shape


def resolve_mesh(filename: str, urdf_dir: Path) -> Path:
    """A mesh file of a URDF: ``package://PKG/rest`` is looked up in the URDF's ancestor folders (the
    one named PKG, or one holding PKG/rest: the layout of installed description packages such as
    example-robot-data); ``file://`` and plain paths are taken relative to the URDF's folder."""
    if filename.startswith("package://"):
        pkg, _, rest = filename[len("package://"):].partition("/")
        for p in (urdf_dir, *urdf_dir.parents):
            for cand in ((p / rest) if p.name == pkg else None, p / pkg / rest):
                if cand is not None and cand.exists():
                    return cand
        return urdf_dir / pkg / rest
    if filename.startswith("file://"):
        filename = filename[len("file://"):]
    return urdf_dir / filename


#: a visual mesh with more triangles is drawn as its convex hull (keeps replays small)
MAX_VISUAL_FACES = 20_000


def _visual_geometry(geom, urdf_dir: Path) -> list[Shape]:
    """A ``<visual>`` geometry as a drawing-only shape: primitives as they are, meshes as triangle
    meshes (kind ``mesh``); anything unreadable is left out (it never affects the dynamics)."""
    if geom is None:
        return []
    if geom.mesh is None:
        try:
            return _geometry(geom, "", urdf_dir)
        except ModelError:
            return []
    try:
        import trimesh
        mesh = trimesh.load(resolve_mesh(str(geom.mesh.filename), urdf_dir), force="mesh")
        V = np.asarray(mesh.vertices, dtype=np.float64)
        F = np.asarray(mesh.faces, dtype=np.int64)
        if geom.mesh.scale is not None:
            V = V * np.asarray(geom.mesh.scale, dtype=np.float64)
        if len(F) > MAX_VISUAL_FACES:
            return [Shape("convex", vertices=V)]
        return [Shape("mesh", vertices=V, faces=F)]
    except Exception:
        return []


#: whether a collision mesh that cannot be read is a warning (True) or an error (False, the default);
#: set for a block of code by :func:`allowing_missing_meshes` (the CLI's --allow-missing-meshes)
_ALLOW_MISSING = contextvars.ContextVar("allow_missing_meshes", default=False)


@contextlib.contextmanager
def allowing_missing_meshes(allow: bool = True):
    """Within the block, :func:`load_urdf` loads a link whose collision mesh is missing or unreadable
    without that shape, with a warning naming the link (instead of a ModelError); for loaders that
    reach load_urdf through a scene (scene files' ``[[urdf]]``, .urdf scenes)."""
    token = _ALLOW_MISSING.set(bool(allow))
    try:
        yield
    finally:
        _ALLOW_MISSING.reset(token)


def _geometry(geom, link: str, urdf_dir: Path, allow_missing: bool = False) -> list[Shape]:
    if geom.box is not None:
        return [Shape("box", size=tuple(float(x) for x in geom.box.size))]
    if geom.sphere is not None:
        return [Shape("sphere", radius=float(geom.sphere.radius))]
    if geom.cylinder is not None:
        return [Shape("cylinder", radius=float(geom.cylinder.radius), length=float(geom.cylinder.length))]
    if geom.mesh is not None:
        where = resolve_mesh(str(geom.mesh.filename), urdf_dir)
        try:
            import trimesh
            if not where.is_file():
                raise FileNotFoundError(f"no file {where}")
            mesh = trimesh.load(where, force="mesh")
            V = np.asarray(mesh.vertices, dtype=np.float64)
            if geom.mesh.scale is not None:
                V = V * np.asarray(geom.mesh.scale, dtype=np.float64)
            if V.ndim != 2 or V.shape[1:] != (3,) or len(V) < 4 or not np.isfinite(V).all():
                raise ValueError(f"{len(V)} vertices, finite: {bool(np.isfinite(V).all())}")
            return [Shape("convex", vertices=V)]
        except Exception as exc:     # a link without its collision shape falls through the world
            why = f"URDF link {link!r}: collision mesh {geom.mesh.filename!r} cannot be read ({exc})"
            if not allow_missing:
                raise ModelError(f"{why}; fix the path, or load without it (--allow-missing-meshes, "
                                 "API load_urdf(..., allow_missing_meshes=True))") from None
            warnings.warn(f"{why}: the link has no collision shape from it", stacklevel=3)
            return []
    raise ModelError(f"URDF link {link!r}: unsupported collision geometry")


def _check_finite(path: Path, r) -> None:
    """Every number the loader reads (joint origins, axes and limits; inertial and collision
    origins, masses, inertias) finite: a NaN would otherwise reach the scene as a NaN pose."""
    def bad(x) -> bool:
        try:
            return x is not None and not np.isfinite(np.asarray(x, dtype=np.float64)).all()
        except (TypeError, ValueError):
            return True
    for j in r.joints:
        lim = j.limit
        for what, x in (("origin", j.origin), ("axis", j.axis),
                        ("limit", None if lim is None else [v for v in (lim.lower, lim.upper, lim.effort, lim.velocity)
                                                            if v is not None])):
            if bad(x):
                raise ModelError(f"{path}: joint {j.name!r} has a non-finite {what} (NaN or inf); every number must be finite")
    for link in r.links:
        inert = link.inertial
        items = [] if inert is None else [("inertial origin", inert.origin), ("mass", inert.mass),
                                           ("inertia", inert.inertia)]
        items += [("collision origin", c.origin) for c in link.collisions]
        for what, x in items:
            if bad(x):
                raise ModelError(f"{path}: link {link.name!r} has a non-finite {what} (NaN or inf); every number must be finite")


def load_urdf(path, *, fixed_base: bool = True, position=(0.0, 0.0, 0.0), name: str | None = None,
              settings: Settings | None = None, merge_fixed: bool = False,
              allow_missing_meshes: bool | None = None) -> Scene:
    """A :class:`Scene` of the URDF's mechanism (no ground; add bodies to ``scene.bodies``).
    ``merge_fixed``: every link attached to its parent link by a fixed joint is folded into the
    parent's body (masses summed, centre of mass, inertia about it by parallel axes, collision and
    visual shapes carried over), so massless sensor/foot frames need no body of their own; the
    body keeps the parent link's name. Default False: one body per link, fixed joints kept.
    ``allow_missing_meshes``: a collision mesh that is missing or unreadable is a ModelError naming
    the link (default, None: unless inside :func:`allowing_missing_meshes`), or with True a warning
    naming the link, which then has no collision shape from it. Every origin, axis, limit, mass and
    inertia must be finite (ModelError naming the joint or link), and two dynamic links' masses at
    most :data:`~contactlab.mechanics.mass_ratio.MAX_MASS_RATIO` apart (ModelError naming both; a
    :func:`~contactlab.mechanics.mass_ratio_limit` block raises or lifts the limit)."""
    import yourdfpy
    path = Path(path)
    if not path.exists():
        raise ModelError(f"no such URDF file: {path}")
    if not path.is_file():
        raise ModelError(f"{path} is not a URDF file (a directory?); give the path of a .urdf file")
    allow_missing = _ALLOW_MISSING.get() if allow_missing_meshes is None else bool(allow_missing_meshes)
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()     # strict: yourdfpy silently repairs broken XML
    except ET.ParseError as exc:
        raise ModelError(f"{path}: not a valid URDF (XML error: {exc})") from None
    if root.tag != "robot":
        raise ModelError(f"{path}: not a valid URDF (root element is <{root.tag}>, expected <robot>)")
    try:
        robot = yourdfpy.URDF.load(str(path), build_scene_graph=False, build_collision_scene_graph=False,
                                   load_meshes=False, load_collision_meshes=False)
    except Exception as exc:
        raise ModelError(f"{path}: not a valid URDF ({type(exc).__name__}: {exc})") from None
    r = robot.robot
    links = {l.name: l for l in r.links}
    if not links:
        raise ModelError(f"{path}: the URDF has no links")
    _check_finite(path, r)
    child_of = {}
    for j in r.joints:
        if j.child not in links:
            raise ModelError(f"{path}: joint {j.name!r} names child link {j.child!r}, which is not defined")
        if j.child in child_of:
            raise ModelError(f"{path}: link {j.child!r} is the child of two joints (not a tree)")
        child_of[j.child] = j
    # world poses of link frames at q = 0
    pose = {}
    base = np.eye(4)
    base[:3, 3] = np.asarray(position, dtype=np.float64)

    def link_pose(ln, depth=0):
        if ln in pose:
            return pose[ln]
        if depth > len(links) + 1:
            raise ModelError(f"{path}: the joints form a loop at link {ln!r}")
        j = child_of.get(ln)
        if j is None or j.parent not in links:
            T = base.copy() if j is None else base @ (j.origin if j.origin is not None else np.eye(4))
        else:
            T = link_pose(j.parent, depth + 1) @ (j.origin if j.origin is not None else np.eye(4))
        pose[ln] = T
        return T

    # merge_fixed: a link hanging from its parent link by a fixed joint joins its parent's body
    rep = {}

    def group_of(ln):
        if ln not in rep:
            j = child_of.get(ln)
            rep[ln] = group_of(j.parent) if (merge_fixed and j is not None and j.type == "fixed" and
                                              j.parent in links) else ln
        return rep[ln]

    members = {}
    for ln in links:
        members.setdefault(group_of(ln), []).append(ln)

    def inertial(ln):
        """(mass or None, world frame of the link's inertial frame, inertia in it or None)."""
        inert = links[ln].inertial
        Ti = inert.origin if (inert is not None and inert.origin is not None) else np.eye(4)
        m = None if (inert is None or inert.mass is None) else float(inert.mass)
        I = None if (inert is None or inert.inertia is None) else np.asarray(inert.inertia, dtype=np.float64)
        return m, link_pose(ln) @ Ti, I

    bodies = []
    roots = [ln for ln in links if ln not in child_of]
    for ln in members:
        mass, Tb, I = inertial(ln)
        if len(members[ln]) > 1:
            # composite of the merged links: total mass, centre of mass, inertia about it (parallel
            # axes), in a frame at the centre of mass with the first link's inertial axes
            parts = [inertial(x) for x in members[ln]]
            parts = [(m, T, Ix) for m, T, Ix in parts if m is not None and m > 0 and Ix is not None]
            if parts:
                mass = sum(m for m, _, _ in parts)
                com = sum(m * T[:3, 3] for m, T, _ in parts) / mass
                Iw = np.zeros((3, 3))
                for m, T, Ix in parts:
                    d = T[:3, 3] - com
                    Iw += T[:3, :3] @ Ix @ T[:3, :3].T + m * (d @ d * np.eye(3) - np.outer(d, d))
                Tb = Tb.copy()
                Tb[:3, 3] = com
                I = Tb[:3, :3].T @ Iw @ Tb[:3, :3]
                I = 0.5 * (I + I.T)
        shapes, visuals = [], []
        Tb_inv = np.linalg.inv(Tb)
        for x in members[ln]:
            Tl = link_pose(x)
            for col in links[x].collisions:
                Tloc = Tb_inv @ (Tl @ (col.origin if col.origin is not None else np.eye(4)))
                for sh in _geometry(col.geometry, x, path.parent, allow_missing):
                    sh.position = tuple(Tloc[:3, 3])
                    sh.orientation = quat_from_matrix(Tloc[:3, :3])
                    shapes.append(sh)
            for vis in getattr(links[x], "visuals", None) or []:
                Tv = Tb_inv @ Tl @ (vis.origin if vis.origin is not None else np.eye(4))
                for sh in _visual_geometry(vis.geometry, path.parent):
                    sh.position = tuple(Tv[:3, 3])
                    sh.orientation = quat_from_matrix(Tv[:3, :3])
                    visuals.append(sh)
        is_root = ln in roots
        welded_to_world = ln in child_of and child_of[ln].parent not in links and child_of[ln].type == "fixed"
        if (is_root and fixed_base) or welded_to_world:
            bodies.append(Body(ln, kind="fixed", position=tuple(Tb[:3, 3]), orientation=quat_from_matrix(Tb[:3, :3]),
                               shapes=shapes, visuals=visuals))
            continue
        if mass is None or mass <= 0 or I is None:
            hint = "" if merge_fixed else " (load_urdf(..., merge_fixed=True) folds fixed-joint links into their parent)"
            raise ModelError(f"{path}: link {ln!r} moves but has no positive <mass> and <inertia> in <inertial>{hint}")
        bodies.append(Body(ln, mass=mass, inertia=I, position=tuple(Tb[:3, 3]),
                           orientation=quat_from_matrix(Tb[:3, :3]), shapes=shapes, visuals=visuals))
    fixed_names = {b.name for b in bodies if b.kind == "fixed"}
    joints = []
    for j in r.joints:
        if j.child not in members:           # merged into its parent's body
            continue
        parent = rep[j.parent] if j.parent in links else "world"   # a fixed parent body stays named: no collisions across the joint
        if j.child in fixed_names:
            continue
        Tj = link_pose(j.child)
        axis = Tj[:3, :3] @ (np.asarray(j.axis, dtype=np.float64) if j.axis is not None else np.array([1.0, 0, 0]))
        lo = hi = None
        if j.type in ("revolute", "prismatic") and j.limit is not None:
            lo = None if j.limit.lower is None else float(j.limit.lower)
            hi = None if j.limit.upper is None else float(j.limit.upper)
        kind = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed"}.get(j.type)
        if kind is None:
            if j.type == "floating":
                continue
            raise ModelError(f"{path}: joint {j.name!r} has unsupported type {j.type!r}")
        joints.append(Joint(j.name, kind, parent, j.child, anchor=tuple(Tj[:3, 3]), axis=tuple(axis), lower=lo, upper=hi))
    scene = Scene(name=name or r.name or path.stem, bodies=bodies, joints=joints, settings=settings or Settings())
    scene.validate()
    check_mass_ratio(scene)     # a ratio the certified solvers cannot resolve
    return scene

