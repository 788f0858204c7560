"""Interactive 3D replay of a simulation as one self-contained HTML file.

The page is meshcat's viewer (three.js, the viewer Drake and Pinocchio use), inlined with the
scene and one animation clip: it opens offline in any browser, with meshcat's own controls for
play / pause / speed (``time_scale``) / time slider, orbit / pan / zoom, and a visibility toggle for
every scene-tree node (``contacts/points``, ``contacts/normal``, ``contacts/friction``). A small
overlay prints the frame's time, contact count, LCP size and solver status.

What a replay needs is recorded by :class:`ReplayRecorder` (one ``capture(sim)`` per step) into a
:class:`ReplayData`, stored in a trajectory file's ``/replay`` group (:func:`write_replay`,
:func:`read_replay`; layout in ``docs/trajectory-format.md``).
"""
from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ContactlabError
from ..mechanics.rotation import quat_to_matrix, tangent_basis

#: bytes the animation may take in the page (the viewer itself is ~0.85 MB); frames are decimated to fit
DEFAULT_BUDGET_BYTES = 14_000_000
#: contact slots drawn per frame (the largest normal forces first)
DEFAULT_MAX_CONTACTS = 64
PALETTE = (0x4C72B0, 0xDD8452, 0x55A868, 0xC44E52, 0x8172B3, 0x937860, 0xDA8BC3, 0xCCB974, 0x64B5CD)


class ReplayError(ContactlabError):
    """A trajectory without what a replay needs, or a replay that cannot be written."""


@dataclass
class ReplayData:
    """Everything a replay shows, as arrays.

    shapes: one dict per collision shape: ``body`` (index), ``kind`` (halfspace, sphere, box,
    capsule, cylinder, convex), its dimensions (``size``, ``radius``, ``length``, ``normal``,
    ``offset``, ``vertices``) and its pose in the body frame (``position``, ``orientation`` w,x,y,z).
    time (F,), position (F, nb, 3), orientation (F, nb, 4) in (w, x, y, z): the body poses of frame
    k (frame 0 is the initial state). Contacts of frame k are rows ``contact_offset[k]:contact_offset[k+1]``
    of point (K, 3), normal (K, 3), normal_force (K,) and friction_force (K, 3) in newtons (impulse / h):
    the force on the contact's moving body (body_b, or body_a where body_b is fixed), normal along ``normal``.
    contacts, lcp_size (F,) ints and status (F,) strings per frame ("" for frame 0).
    """
    body_names: list
    shapes: list
    time: np.ndarray
    position: np.ndarray
    orientation: np.ndarray
    contact_offset: np.ndarray
    contact_point: np.ndarray
    contact_normal: np.ndarray
    contact_normal_force: np.ndarray
    contact_friction_force: np.ndarray
    lcp_size: np.ndarray
    status: list = field(default_factory=list)

    @property
    def frames(self) -> int:
        return len(self.time)

    @property
    def contacts(self) -> np.ndarray:
        return np.diff(self.contact_offset)


def shapes_of(model) -> list:
    """The model's collision shapes as plain dicts (JSON-ready) for the replay."""
    from ..mechanics.model import KIND_FIXED
    out = []
    for body, s in model.shapes:
        d = {"body": int(body), "kind": "halfspace" if s.kind == "plane" else s.kind, "name": s.name,
             "fixed": bool(model.kind[body] == KIND_FIXED),
             "size": [float(x) for x in s.size], "radius": float(s.radius), "length": float(s.length),
             "normal": [float(x) for x in s.normal], "offset": float(s.offset),
             "position": [float(x) for x in s.position], "orientation": [float(x) for x in s.orientation]}
        if s.vertices is not None:
            d["vertices"] = np.asarray(s.vertices, dtype=float).reshape(-1, 3).round(6).tolist()
        out.append(d)
    # drawing-only shapes (URDF <visual> geometry): shown instead of the body's collision shapes,
    # which stay in the page as a hidden 'collision' node (toggle it in the controls)
    for body, b in enumerate(getattr(getattr(model, "scene", None), "bodies", [])):
        for s in getattr(b, "visuals", None) or []:
            d = {"body": int(body), "kind": s.kind, "name": s.name, "fixed": bool(model.kind[body] == KIND_FIXED),
                 "visual": True, "size": [float(x) for x in s.size], "radius": float(s.radius),
                 "length": float(s.length), "normal": [float(x) for x in s.normal], "offset": float(s.offset),
                 "position": [float(x) for x in s.position], "orientation": [float(x) for x in s.orientation]}
            if s.vertices is not None:
                d["vertices"] = np.asarray(s.vertices, dtype=float).reshape(-1, 3).round(6).tolist()
            if getattr(s, "faces", None) is not None:
                d["faces"] = np.asarray(s.faces, dtype=np.int64).reshape(-1, 3).tolist()
            out.append(d)
    # links of a mechanism are drawn as a skeleton too (many have no collision shape: they never
    # touch anything): a thin capsule from the body's centre of mass to each joint anchor and shape
    anchors = {}
    for jt in getattr(model, "joints", []):
        if jt.a >= 0:
            anchors.setdefault(jt.a, []).append(np.asarray(jt.anchor_a, dtype=float))
        anchors.setdefault(jt.b, []).append(np.asarray(jt.anchor_b, dtype=float))
    with_visuals = {d["body"] for d in out if d.get("visual")}
    for body, pts in sorted(anchors.items()):
        if model.kind[body] == KIND_FIXED or body in with_visuals:
            continue
        pts = pts + [np.asarray(sh.position, dtype=float) for b, sh in model.shapes if b == body]
        for p in pts:
            L = float(np.linalg.norm(p))
            if L < 1e-9:
                continue
            R = _rot_y_to(p / L) @ np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])   # local z along p
            from scipy.spatial.transform import Rotation
            x, y, z, w = Rotation.from_matrix(R).as_quat()
            out.append({"body": int(body), "kind": "capsule", "name": "skeleton", "fixed": False, "visual": True,
                        "size": [0.0, 0.0, 0.0], "radius": max(0.05 * L, 1e-3), "length": L, "normal": [0, 0, 1],
                        "offset": 0.0, "position": (0.5 * p).tolist(), "orientation": [w, x, y, z]})
    return out


class ReplayRecorder:
    """Collects a :class:`ReplayData` from a running :class:`~contactlab.sim.Simulator`.

    Call :meth:`capture` once before the first step and once after every step (it reads the
    simulator's state, last contacts, contact result and solution); :meth:`data` returns the arrays.
    """

    def __init__(self, sim):
        model = sim.model
        self.body_names = list(model.names)
        self.shapes = shapes_of(model)
        self.h = float(sim.h)
        from ..mechanics.model import KIND_FIXED
        self._fixed = np.asarray(model.kind) == KIND_FIXED
        self._t, self._p, self._q, self._n, self._lcp, self._status = [], [], [], [], [], []
        self._pt, self._nrm, self._fn, self._ft = [], [], [], []

    def capture(self, sim) -> None:
        data = sim.data
        if self._t and float(data.time) == self._t[-1]:
            return   # no step since the last capture (e.g. a run that stopped at an unusable step)
        self._t.append(float(data.time))
        self._p.append(np.array(data.position, dtype=np.float64))
        self._q.append(np.array(data.quaternion, dtype=np.float64))
        contacts = getattr(data, "contacts", None)
        result = getattr(data, "result", None)
        m = int(getattr(contacts, "count", 0) or 0) if contacts is not None and self._t[-1] > 0 else 0
        problem, sol = getattr(sim, "last_problem", None), getattr(sim, "last_solution", None)
        self._lcp.append(int(getattr(problem, "n", 0)) if m or problem is not None and len(self._t) > 1 else 0)
        self._status.append(getattr(getattr(sol, "status", None), "name", "") if len(self._t) > 1 else "")
        if m == 0 or result is None:
            self._n.append(0)
            return
        point = np.asarray(contacts.point, dtype=np.float64).reshape(m, 3)
        normal = np.asarray(contacts.normal, dtype=np.float64).reshape(m, 3)
        lam = np.asarray(getattr(result, "normal", np.zeros(m)), dtype=np.float64).reshape(-1)
        lam = lam[:m] if lam.size >= m else np.zeros(m)
        ft = np.zeros((m, 3))
        tan = np.asarray(getattr(result, "tangent", np.zeros(0)), dtype=np.float64)
        if tan.size and tan.size % m == 0:
            t1 = np.asarray(getattr(contacts, "t1", None) if getattr(contacts, "t1", None) is not None
                            else tangent_basis(normal)[0]).reshape(m, 3)
            t2 = np.asarray(getattr(contacts, "t2", None) if getattr(contacts, "t2", None) is not None
                            else tangent_basis(normal)[1]).reshape(m, 3)
            d = tan.size // m
            tan = tan.reshape(m, d)
            if d == 2:   # box friction / no-slip: impulses along (t1, t2)
                ft = tan[:, :1] * t1 + tan[:, 1:2] * t2
            else:        # pyramid: d directions cos(2 pi k/d) t1 + sin(2 pi k/d) t2 (mechanics.system)
                ang = 2.0 * np.pi * np.arange(d) / d
                ft = (tan @ np.cos(ang))[:, None] * t1 + (tan @ np.sin(ang))[:, None] * t2
        # impulses act on body_b along +normal (on body_a opposite); draw them on a moving body:
        # where body_b is fixed (the ground), show the reaction on body_a
        fixed = np.asarray(self._fixed)[np.asarray(contacts.body_b, dtype=np.int64).reshape(m)]
        sign = np.where(fixed, -1.0, 1.0)[:, None]
        normal, ft = normal * sign, ft * sign
        self._n.append(m)
        self._pt.append(point)
        self._nrm.append(normal)
        self._fn.append(lam / self.h)
        self._ft.append(ft / self.h)

    def data(self) -> ReplayData:
        cat = lambda xs, shape: np.concatenate(xs) if xs else np.zeros(shape)  # noqa: E731
        return ReplayData(self.body_names, self.shapes, np.array(self._t), np.array(self._p).reshape(-1, len(self.body_names), 3),
                          np.array(self._q).reshape(-1, len(self.body_names), 4),
                          np.concatenate([[0], np.cumsum(self._n)]).astype(np.int64),
                          cat(self._pt, (0, 3)), cat(self._nrm, (0, 3)), cat(self._fn, (0,)), cat(self._ft, (0, 3)),
                          np.array(self._lcp, dtype=np.int64), list(self._status))


# ---------------------------------------------------------------------------------------- HDF5
_ARRAYS = ("time", "position", "orientation", "contact_offset", "contact_point", "contact_normal",
           "contact_normal_force", "contact_friction_force", "lcp_size")


def write_replay_group(h5, data: ReplayData) -> None:
    """Write ``data`` into the ``/replay`` group of an open h5py file (see docs/trajectory-format.md)."""
    g = h5.require_group("replay")
    g.attrs["format"] = "contactlab-replay-1"
    g.attrs["shapes"] = json.dumps(data.shapes)
    g.attrs["body_names"] = json.dumps(list(data.body_names))
    for name in _ARRAYS:
        arr = np.asarray(getattr(data, name))
        g.create_dataset(name, data=arr, compression="gzip" if arr.size > 1024 else None)
    g.create_dataset("status", data=np.array(data.status, dtype="S"))


def write_replay(path, data: ReplayData) -> Path:
    """Write a replay-only HDF5 file atomically."""
    import h5py

    from ..files import atomic_write

    def write(tmp):
        with h5py.File(tmp, "w") as f:
            write_replay_group(f, data)
    return atomic_write(path, write)


def open_trajectory_file(path, error=None):
    """Open a trajectory file for reading (h5py), or raise ``error`` (default :class:`ReplayError`)
    with one line saying what is wrong: a directory, no such file, not HDF5."""
    import h5py
    error = error or ReplayError
    p = Path(path)
    if p.is_dir():
        raise error(f"{p} is a directory; give a trajectory file written by 'contactlab simulate --out'")
    if not p.exists():
        raise error(f"{p}: no such file")
    try:
        return h5py.File(p, "r")
    except OSError as exc:
        raise error(f"{p} is not an HDF5 trajectory ({exc})") from None


def read_replay(path) -> ReplayData:
    """The ``/replay`` group of a trajectory file (written by ``simulate --out`` or ``--html``)."""
    p = Path(path)
    with open_trajectory_file(p) as f:
        if "replay" not in f:
            raise ReplayError(f"{p} has no /replay group (shapes, poses and contacts per step); write it with "
                              f"'contactlab simulate SCENE --out {p.name}' from this version")
        g = f["replay"]
        arrays = {name: g[name][()] for name in _ARRAYS}
        status = [s.decode() for s in g["status"][()]]
        return ReplayData(json.loads(g.attrs["body_names"]), json.loads(g.attrs["shapes"]), status=status, **arrays)


# ---------------------------------------------------------------------------------------- HTML
def _T(R, p):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def _rot_y_to(v):
    """Rotation taking +y (three.js' cylinder axis) to the unit vector v."""
    y = np.array([0.0, 1.0, 0.0])
    c = float(np.dot(y, v))
    axis = np.cross(y, v)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = axis / s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * K + (1 - c) * K @ K


def _quat_xyzw(R):
    """(x, y, z, w) of rotation matrices R (..., 3, 3) (three.js order)."""
    from scipy.spatial.transform import Rotation
    return Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat()


def _capsule_mesh(r, L, n=16):
    """Vertices and faces of a capsule along z (a cylinder of length L with hemispherical caps)."""
    rings = []
    for k in range(n // 2 + 1):                       # top cap
        a = 0.5 * np.pi * k / (n // 2)
        rings.append((r * np.cos(a), 0.5 * L + r * np.sin(a)))
    rings = rings[::-1] + [(r * np.cos(a), -0.5 * L - r * np.sin(a))
                           for a in 0.5 * np.pi * np.arange(n // 2 + 1) / (n // 2)]
    phi = 2 * np.pi * np.arange(n) / n
    verts = np.array([[rho * np.cos(f), rho * np.sin(f), z] for rho, z in rings for f in phi])
    faces = []
    for i in range(len(rings) - 1):
        for j in range(n):
            a, b = i * n + j, i * n + (j + 1) % n
            c, d = a + n, b + n
            faces += [[a, c, b], [b, c, d]]
    return verts, np.array(faces)


def _geometry(shape, extent):
    """(meshcat geometry, extra transform in the shape frame) of one shape dict."""
    import meshcat.geometry as g
    kind = shape["kind"]
    if kind == "sphere":
        return g.Sphere(shape["radius"]), np.eye(4)
    if kind == "box":
        return g.Box(shape["size"]), np.eye(4)
    if kind == "cylinder":   # three.js cylinders lie along y; ours along z
        return g.Cylinder(shape["length"], shape["radius"]), _T(_rot_y_to(np.array([0.0, 0.0, 1.0])), np.zeros(3))
    if kind == "capsule":
        v, f = _capsule_mesh(shape["radius"], shape["length"])
        return g.TriangularMeshGeometry(v, f), np.eye(4)
    if kind == "mesh" and shape.get("faces") is not None:
        return g.TriangularMeshGeometry(np.asarray(shape["vertices"], dtype=float),
                                        np.asarray(shape["faces"], dtype=np.int64)), np.eye(4)
    if kind in ("convex", "mesh"):
        from scipy.spatial import ConvexHull
        v = np.asarray(shape["vertices"], dtype=float)
        hull = ConvexHull(v)
        faces = hull.simplices.copy()
        c = v.mean(axis=0)
        for k, (a, b, d) in enumerate(faces):   # outward winding
            if np.dot(np.cross(v[b] - v[a], v[d] - v[a]), v[a] - c) < 0:
                faces[k] = (a, d, b)
        return g.TriangularMeshGeometry(v, faces), np.eye(4)
    if kind == "halfspace":  # a large thin slab whose top face is the boundary plane
        n = np.asarray(shape["normal"], dtype=float)
        n /= np.linalg.norm(n)
        size = max(4.0, 3.0 * extent)
        t = 0.02 * size
        t1, t2 = (x[0] for x in tangent_basis(n[None]))
        R = np.column_stack([t1, t2, n])
        return g.Box([size, size, t]), _T(R, n * (shape["offset"] - 0.5 * t))
    raise ReplayError(f"cannot draw a shape of kind {kind!r}")


def _decimate(n_frames: int, nb: int, slots: int, budget: int, max_frames: int | None) -> np.ndarray:
    per_frame = 75 * max(1, nb) + 3 * 80 * slots + 40
    cap = max(2, budget // per_frame)
    if max_frames is not None:
        cap = min(cap, max(2, int(max_frames)))
    if n_frames <= cap:
        return np.arange(n_frames)
    return np.unique(np.round(np.linspace(0, n_frames - 1, cap)).astype(int))


def replay_html(data: ReplayData, out=None, *, title: str = "contactlab replay", max_frames: int | None = None,
                max_contacts: int = DEFAULT_MAX_CONTACTS, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                force_scale: float | None = None) -> str:
    """The replay page as a string (and written atomically to ``out`` when given).

    Frames are decimated (evenly in time, first and last kept) so that the animation stays
    within ``budget_bytes``; at most ``max_contacts`` contacts per frame are drawn (largest
    normal forces first). Arrows are drawn with length ``force_scale`` x force (default: the
    largest force shown is a fifth of the scene's extent).
    """
    import meshcat.geometry as g
    import umsgpack
    from meshcat.animation import Animation, AnimationClip
    from meshcat.commands import SetAnimation, SetObject, SetProperty, SetTransform
    from meshcat.path import Path as MPath

    F, nb = data.frames, len(data.body_names)
    if F == 0:
        raise ReplayError("the trajectory has no frames")
    counts = data.contacts
    slots = int(min(max_contacts, counts.max() if counts.size else 0))
    keep = _decimate(F, nb, slots, budget_bytes, max_frames)
    dyn = np.flatnonzero(np.any(np.abs(np.diff(data.position, axis=0)).sum(axis=2) > 0, axis=0)
                         | np.any(np.abs(np.diff(data.orientation, axis=0)).sum(axis=2) > 0, axis=0)) \
        if F > 1 else np.zeros(0, int)
    moving = sorted({sh["body"] for sh in data.shapes if not sh.get("fixed") and sh["kind"] != "halfspace"})
    pts = data.position[keep][:, moving].reshape(-1, 3) if moving else data.position[keep].reshape(-1, 3)
    extent = float(np.ptp(pts, axis=0).max()) if len(pts) else 1.0
    for sh in data.shapes:
        if sh["body"] in moving:
            if sh["kind"] == "box":
                extent = max(extent, max(sh["size"]))
            elif sh["kind"] in ("sphere", "capsule", "cylinder"):
                extent = max(extent, 2 * sh["radius"], sh["length"] if sh["kind"] != "sphere" else 0.0)
            elif sh.get("vertices"):
                extent = max(extent, float(np.ptp(np.asarray(sh["vertices"]), axis=0).max()))
    extent = max(extent, 0.02)
    center = pts.mean(axis=0) if len(pts) else np.zeros(3)

    cmds = []
    def node(*parts):
        return MPath(("contactlab",) + tuple(str(p) for p in parts))

    # bodies: a node per body (animated), its shapes as children (fixed offsets)
    drawn_visuals = {sh["body"] for sh in data.shapes if sh.get("visual")}
    for k, s in enumerate(data.shapes):
        b = s["body"]
        geom, extra = _geometry(s, extent)
        fixed = s["kind"] == "halfspace" or s.get("fixed", False)   # ground, walls, tables: grey, see-through
        color = 0x999999 if fixed else PALETTE[b % len(PALETTE)]
        mat = g.MeshLambertMaterial(color=color, opacity=0.45 if fixed else 1.0, transparent=fixed)
        name = f"{data.body_names[b]}".replace("/", "_") or f"body{b}"
        if s.get("visual"):
            p = node("bodies", name, f"visual{k}")
        elif b in drawn_visuals:
            p = node("bodies", name, "collision", f"shape{k}")
        else:
            p = node("bodies", name, f"shape{k}")
        cmds.append(SetObject(geom, mat, p))
        w, x, y, z = s["orientation"]
        local = _T(quat_to_matrix(np.array([w, x, y, z])), np.array(s["position"]))
        if s["kind"] == "halfspace":
            local = np.eye(4)
        cmds.append(SetTransform(local @ extra, p))
    body_paths = [node("bodies", (n.replace("/", "_") or f"body{i}")) for i, n in enumerate(data.body_names)]
    for i in range(nb):
        R = quat_to_matrix(data.orientation[0, i])
        cmds.append(SetTransform(_T(R, data.position[0, i]), body_paths[i]))

    fps = (len(keep) - 1) / max(data.time[keep[-1]] - data.time[keep[0]], 1e-12) if len(keep) > 1 else 1.0
    anim = Animation(default_framerate=fps)
    def clip(p):
        if p not in anim.clips:
            anim.clips[p] = AnimationClip(fps=fps)
        return anim.clips[p]
    q_all = _quat_xyzw(quat_to_matrix(data.orientation[keep][:, dyn].reshape(-1, 4))).reshape(len(keep), len(dyn), 4) \
        if len(dyn) else None
    for j, i in enumerate(dyn):
        c = clip(body_paths[i])
        for f, k in enumerate(keep):
            c.set_property(f, "position", "vector3", data.position[k, i].tolist())
            c.set_property(f, "quaternion", "quaternion", q_all[f, j].tolist())

    # contacts: a pool of slots; each frame moves, scales and shows or hides them
    if slots:
        fmax = max(float(np.abs(data.contact_normal_force).max(initial=0.0)),
                   float(np.linalg.norm(data.contact_friction_force, axis=1).max(initial=0.0)), 1e-12)
        scale = force_scale if force_scale is not None else 0.2 * extent / fmax
        r = 0.012 * extent
        arrow = g.Cylinder(1.0, 0.25 * r)
        for sl in range(slots):
            cmds.append(SetObject(g.Sphere(r), g.MeshLambertMaterial(color=0xE8000B), node("contacts", "points", sl)))
            for kind, color in (("normal", 0x1F77B4), ("friction", 0x2CA02C)):
                p = node("contacts", kind, sl, "arrow")
                cmds.append(SetObject(arrow, g.MeshLambertMaterial(color=color), p))
                cmds.append(SetTransform(_T(np.eye(3), np.array([0.0, 0.5, 0.0])), p))
        hidden = [1e-6, 1e-6, 1e-6]
        for f, k in enumerate(keep):
            a, b = data.contact_offset[k], data.contact_offset[k + 1] if k + 1 < len(data.contact_offset) else data.contact_offset[k]
            idx = np.arange(a, b)
            if idx.size > slots:
                idx = idx[np.argsort(-data.contact_normal_force[idx])[:slots]]
            for sl in range(slots):
                cp, cn = clip(node("contacts", "points", sl)), clip(node("contacts", "normal", sl))
                cf = clip(node("contacts", "friction", sl))
                if sl < idx.size:
                    c = idx[sl]
                    pt = data.contact_point[c].tolist()
                    cp.set_property(f, "position", "vector3", pt)
                    cp.set_property(f, "scale", "vector3", [1.0, 1.0, 1.0])
                    for clp, vec in ((cn, data.contact_normal[c] * data.contact_normal_force[c]),
                                     (cf, data.contact_friction_force[c])):
                        L = float(np.linalg.norm(vec))
                        clp.set_property(f, "position", "vector3", pt)
                        if L * scale > 1e-9:
                            clp.set_property(f, "quaternion", "quaternion",
                                             _quat_xyzw(_rot_y_to(vec / L))[0].tolist())
                            clp.set_property(f, "scale", "vector3", [1.0, L * scale, 1.0])
                        else:
                            clp.set_property(f, "scale", "vector3", hidden)
                else:
                    for clp in (cp, cn, cf):
                        clp.set_property(f, "scale", "vector3", hidden)

    for b in sorted(drawn_visuals):   # collision shapes of bodies with visuals: hidden, toggleable
        name = f"{data.body_names[b]}".replace("/", "_") or f"body{b}"
        cmds.append(SetProperty("visible", False, node("bodies", name, "collision")))
    # camera: look at the scene's centre from a distance that fits it
    cmds.append(SetProperty("visible", False, MPath(("Axes",))))
    cmds.append(SetProperty("visible", False, MPath(("Grid",))))
    cmds.append(SetTransform(_T(np.eye(3), center), MPath(("Cameras", "default"))))
    d = 1.6 * extent
    # the camera node is y-up (three.js): (x, y, z) here is (x, z_up, -y) in the world
    cmds.append(SetProperty("position", [d * 0.9, d * 0.55, d * 0.9], MPath(("Cameras", "default", "rotated", "<object>"))))
    if anim.clips:
        cmds.append(SetAnimation(anim, play=True, repetitions=1))

    def pack(cmd):
        return base64.b64encode(umsgpack.packb(cmd.lower(), force_float_precision="single")).decode("ascii")
    payload = json.dumps([pack(c) for c in cmds])
    info = {"time": [round(float(data.time[k]), 6) for k in keep], "contacts": [int(counts[k]) if k < len(counts) else 0 for k in keep],
            "lcp": [int(data.lcp_size[k]) for k in keep], "status": [data.status[k] if k < len(data.status) else "" for k in keep],
            "fps": fps, "frames": len(keep), "source_frames": F, "bodies": nb}
    page = _PAGE.format(title=html.escape(title), viewer=_viewer_js(), payload=payload, info=json.dumps(info))
    if out is not None:
        from ..files import atomic_write
        atomic_write(Path(out), lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    return page


def _viewer_js() -> str:
    import meshcat
    js = Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js"
    return js.read_text(encoding="utf-8").replace("</script", "<\\/script")


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{margin:0;overflow:hidden;font-family:sans-serif}}#meshcat-pane{{width:100vw;height:100vh}}
#cl-info{{position:absolute;left:8px;top:8px;padding:4px 8px;background:rgba(255,255,255,.85);font:13px monospace;
white-space:pre;pointer-events:none;z-index:10}}</style></head>
<body><div id="meshcat-pane"></div><div id="cl-info"></div>
<script>{viewer}</script>
<script>
(function() {{
  var viewer = new MeshCat.Viewer(document.getElementById("meshcat-pane"));
  var info = {info};
  var cmds = {payload};
  function bytes(b64) {{ var s = atob(b64), a = new Uint8Array(s.length); for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i); return a; }}
  cmds.forEach(function(c) {{ viewer.handle_command_bytearray(bytes(c)); }});
  function frameAt(t) {{ return Math.max(0, Math.min(info.frames - 1, Math.round(t * info.fps))); }}
  function clipTime() {{
    var acts = viewer.animator.actions;
    return acts.length ? acts[0].time : 0;
  }}
  var box = document.getElementById("cl-info"), last = -1;
  function show() {{
    var f = frameAt(clipTime());
    if (f !== last) {{
      last = f;
      box.textContent = "t = " + info.time[f].toFixed(4) + " s   frame " + (f + 1) + "/" + info.frames +
        "\\ncontacts " + info.contacts[f] + "   LCP size " + info.lcp[f] + "   " + (info.status[f] || "");
    }}
    requestAnimationFrame(show);
  }}
  show();
  window.contactlab = {{
    viewer: viewer, info: info,
    seek: function(f) {{ viewer.animator.pause(); viewer.animator.seek(f / info.fps); viewer.render(); last = -1; }},
    frame: function() {{ return frameAt(clipTime()); }}
  }};
}})();
</script></body></html>
"""


def record_replay(sim, duration: float, **run_kwargs):
    """Run ``sim`` for ``duration`` seconds while recording a replay: returns ``(trajectory, ReplayData)``.

    The recorder is one of the simulator's per-step controllers (called before each step, it sees
    the state after the previous one); the final state is captured after the run."""
    rec = ReplayRecorder(sim)
    sim.add_controller(rec.capture)
    try:
        traj = sim.run(duration, **run_kwargs)
    finally:
        sim.controllers.remove(rec.capture)
    rec.capture(sim)
    return traj, rec.data()
