"""Interactive 3D replay of a simulation as one self-contained HTML file.

The page is meshcat's viewer (three.js, the viewer Drake and Pinocchio use), inlined with the
scene and the run's frames: it opens offline in any browser. Its own player (``replay_page.py``)
plays the run at real time from the moment its first frame is on screen, with play / pause, a
frame slider, a speed menu and a loop toggle, and holds the last frame at the end; the camera
frames the bodies that move and follows them where they travel (a walking robot); meshcat's
controls give orbit / pan / zoom and a visibility toggle for every scene-tree node
(``contacts/points``, ``contacts/normal``, ``contacts/friction``). An overlay prints the frame's
time, contact count, LCP size, solver status and residual; a strip under the view plots contacts,
LCP size and residual against time with a cursor at the frame shown. Links of a mechanism without
visual geometry are drawn as the boxes of their mass and inertia (:func:`inertia_box`).

What a replay needs is recorded by :class:`ReplayRecorder` (one ``capture(sim)`` per step) into a
:class:`ReplayData`, stored in a trajectory file's ``/replay`` group (:func:`write_replay`,
:func:`read_replay`; layout in ``docs/trajectory-format.md``).
"""
from __future__ import annotations

import base64
import html
import json
import re
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
    contacts, lcp_size (F,) ints, status (F,) strings and residual (F,) floats per frame: the step's
    :class:`~contactlab.sim.recorder.StepRecord` fields ("" and NaN for frame 0; residual None: not recorded).
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
    residual: np.ndarray | None = None

    def __post_init__(self):
        if self.residual is None:
            self.residual = np.full(len(self.time), np.nan)

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
    # links of a mechanism without visual geometry (many have no collision shape: they never touch
    # anything) are drawn as volumes: the uniform box of the link's mass and inertia
    # (:func:`inertia_box`) where its collision shapes are a small part of it, and a capsule from the
    # centre of mass to each joint anchor, as thick as the box allows, so the linkage reads
    anchors = {}
    for jt in getattr(model, "joints", []):
        if jt.a >= 0:
            anchors.setdefault(jt.a, []).append(np.asarray(jt.anchor_a, dtype=float))
        anchors.setdefault(jt.b, []).append(np.asarray(jt.anchor_b, dtype=float))
    with_visuals = {d["body"] for d in out if d.get("visual")}
    for body, pts in sorted(anchors.items()):
        if model.kind[body] == KIND_FIXED or body in with_visuals:
            continue
        sides, q = inertia_box(float(model.mass[body]), np.asarray(model.inertia[body], dtype=float))
        thick = float(sides.min())          # the box's thinnest side
        collision = sum(shape_volume(d) for d in out if d["body"] == body and not d.get("visual"))
        if collision < 0.25 * float(np.prod(sides)):
            out.append({"body": int(body), "kind": "box", "name": "inertia", "fixed": False, "visual": True,
                        "link": True, "size": sides.tolist(), "radius": 0.0, "length": 0.0, "normal": [0, 0, 1],
                        "offset": 0.0, "position": [0.0, 0.0, 0.0], "orientation": q.tolist()})
        pts = pts + [np.asarray(sh.position, dtype=float) for b, sh in model.shapes if b == body]
        for p in pts:
            L = float(np.linalg.norm(p))
            if L < 1e-9:
                continue
            R = _rot_y_to(p / L) @ np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])   # local z along p
            x, y, z, w = _quat_xyzw(R)[0]
            out.append({"body": int(body), "kind": "capsule", "name": "skeleton", "fixed": False, "visual": True,
                        "link": True, "size": [0.0, 0.0, 0.0], "radius": max(0.05 * L, 0.25 * thick, 1e-3),
                        "length": L, "normal": [0, 0, 1], "offset": 0.0, "position": (0.5 * p).tolist(),
                        "orientation": [w, x, y, z]})
    return out


def inertia_box(mass: float, inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sides (3,) and orientation (w, x, y, z) of the uniform box with the given mass and inertia
    tensor about its centre: along the principal axes (eigenvectors of ``inertia``, moments I_i),
    I_i = m (a_j^2 + a_k^2) / 12, so a_i^2 = 6 (I_j + I_k - I_i) / m. Sides are kept above 0.15
    of the largest (a rod or a point mass still shows as a volume)."""
    moments, axes = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if np.linalg.det(axes) < 0:
        axes[:, 2] *= -1.0
    sides = np.sqrt(np.maximum(6.0 * (moments.sum() - 2.0 * moments) / max(mass, 1e-300), 0.0))
    sides = np.maximum(sides, max(0.15 * sides.max(), 1e-4))
    x, y, z, w = _quat_xyzw(axes)[0]
    return sides, np.array([w, x, y, z])


def shape_volume(shape: dict) -> float:
    """Volume of one shape dict (0 for a halfspace)."""
    kind, r, L = shape["kind"], shape["radius"], shape["length"]
    if kind == "sphere":
        return 4.0 / 3.0 * np.pi * r ** 3
    if kind == "box":
        return float(np.prod(shape["size"]))
    if kind == "capsule":
        return np.pi * r * r * L + 4.0 / 3.0 * np.pi * r ** 3
    if kind == "cylinder":
        return np.pi * r * r * L
    if shape.get("vertices"):
        from scipy.spatial import ConvexHull, QhullError
        try:
            return float(ConvexHull(np.asarray(shape["vertices"], dtype=float)).volume)
        except (QhullError, ValueError):   # flat or too few points: no volume
            return 0.0
    return 0.0


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
        self._t, self._p, self._q, self._n, self._lcp, self._status, self._res = [], [], [], [], [], [], []
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
        # the step's StepRecord fields, read from its solution (its size is the LCP's: reading
        # sim.last_problem would assemble a matrix-free step's problem only to count its rows)
        sol = getattr(sim, "last_solution", None) if len(self._t) > 1 else None
        self._lcp.append(int(np.size(sol.z)) if sol is not None else 0)
        self._status.append(getattr(getattr(sol, "status", None), "name", "") if sol is not None else "")
        self._res.append(float(getattr(sol, "residual", np.nan)) if sol is not None else np.nan)
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
                          np.array(self._lcp, dtype=np.int64), list(self._status), np.array(self._res, dtype=np.float64))


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
    g.create_dataset("residual", data=np.asarray(data.residual, dtype=np.float64))


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
        residual = g["residual"][()] if "residual" in g else None
        if residual is None and "steps/residual" in f and len(f["steps/residual"]) == len(arrays["time"]) - 1:
            residual = np.concatenate([[np.nan], f["steps/residual"][()]])   # a file from before /replay/residual
        return ReplayData(json.loads(g.attrs["body_names"]), json.loads(g.attrs["shapes"]), status=status,
                          residual=residual, **arrays)


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
    # page bytes per kept frame: base64 float32 poses (7 numbers a moving body), contact rows (9 a
    # slot) and the frame's JSON (time, contacts, LCP size, status, residual)
    per_frame = 38 * max(1, nb) + 48 * slots + 80
    cap = max(2, budget // per_frame)
    if max_frames is not None:
        cap = min(cap, max(2, int(max_frames)))
    if n_frames <= cap:
        return np.arange(n_frames)
    return np.unique(np.round(np.linspace(0, n_frames - 1, cap)).astype(int))


def _body_balls(shapes: list, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Per body, a ball holding all its drawn shapes (halfspaces excluded): centre (nb, 3) in the
    body frame (the middle of the shapes' extreme points) and radius (nb,)."""
    unit = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    pts = [[] for _ in range(nb)]
    for sh in shapes:
        kind, r, L = sh["kind"], sh["radius"], sh["length"]
        if kind == "halfspace":
            continue
        if kind == "sphere":
            local = unit * r
        elif kind == "box":
            local = unit * 0.5 * np.asarray(sh["size"], dtype=float)
        elif kind in ("capsule", "cylinder"):
            local = unit * np.array([r, r, 0.5 * L + (r if kind == "capsule" else 0.0)])
        elif sh.get("vertices"):
            local = np.asarray(sh["vertices"], dtype=float)
        else:
            continue
        R = quat_to_matrix(np.asarray(sh["orientation"], dtype=float))
        pts[sh["body"]].append(local @ R.T + np.asarray(sh["position"], dtype=float))
    centre, radius = np.zeros((nb, 3)), np.zeros(nb)
    for b, ps in enumerate(pts):
        if ps:
            ps = np.concatenate(ps)
            centre[b] = 0.5 * (ps.min(axis=0) + ps.max(axis=0))
            radius[b] = float(np.linalg.norm(ps - centre[b], axis=1).max())
    return centre, radius


def replay_view(data: ReplayData, keep: np.ndarray) -> dict:
    """What the camera frames: the bodies that move (poses change over the run; not fixed, not the
    ground), each as the ball of its shapes (:func:`_body_balls`), over the kept frames ``keep``.

    ``moving`` (body indices); ``lo``, ``hi``: the box holding them over the whole run, and
    ``follow`` False; or, where they travel (the run's box is more than 1.5x, in diagonal, the box
    they span about their own centre: a walking robot), ``follow`` True, ``target`` (len(keep), 3)
    their mean position smoothed over 0.5 s (the camera moves with it, not with each leg) and
    ``lo``, ``hi`` the box about ``target`` holding them at every frame."""
    nb = len(data.body_names)
    fixed = np.zeros(nb, bool)
    drawn = np.zeros(nb, bool)
    for sh in data.shapes:
        fixed[sh["body"]] |= bool(sh.get("fixed")) or sh["kind"] == "halfspace"
        drawn[sh["body"]] |= sh["kind"] != "halfspace"
    moved = (np.ptp(data.position, axis=0).max(axis=1) > 0) | (np.ptp(data.orientation, axis=0).max(axis=1) > 0)
    for pick in (moved & ~fixed & drawn, ~fixed & drawn, drawn, np.ones(nb, bool)):
        if pick.any():
            moving = np.flatnonzero(pick)
            break
    centre, radius = _body_balls(data.shapes, nb)
    P = data.position[keep][:, moving] + np.einsum("kmij,mj->kmi", quat_to_matrix(data.orientation[keep][:, moving]),
                                                   centre[moving])     # (K, m, 3): the balls' centres
    rad = radius[moving][None, :, None]
    lo, hi = (P - rad).min(axis=1), (P + rad).max(axis=1)   # (K, 3) per frame
    view = {"moving": moving, "lo": lo.min(axis=0), "hi": hi.max(axis=0), "follow": False, "target": None}
    centre = P.mean(axis=1)
    t = data.time[keep]
    K = len(keep)
    w = int(round(0.25 / max((t[-1] - t[0]) / (K - 1), 1e-12))) if K > 1 else 0
    if w > 0:   # centred moving average over 0.5 s, narrower near the ends (exact on a steady walk)
        half = np.minimum(np.minimum(np.arange(K), np.arange(K)[::-1]), w)
        cs = np.concatenate([np.zeros((1, 3)), np.cumsum(centre, axis=0)])
        k = np.arange(K)
        centre = (cs[k + half + 1] - cs[k - half]) / (2 * half + 1)[:, None]
    rel_lo, rel_hi = (lo - centre).min(axis=0), (hi - centre).max(axis=0)
    if np.linalg.norm(view["hi"] - view["lo"]) > 1.5 * np.linalg.norm(rel_hi - rel_lo):
        view.update(follow=True, target=centre, lo=rel_lo, hi=rel_hi)
    return view


def _b64(a, dtype) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype=dtype).tobytes()).decode("ascii")


def replay_html(data: ReplayData, out=None, *, title: str = "contactlab replay", max_frames: int | None = None,
                max_contacts: int = DEFAULT_MAX_CONTACTS, budget_bytes: int = DEFAULT_BUDGET_BYTES,
                force_scale: float | None = None, speed: float = 1.0, loop: bool = False) -> str:
    """The replay page as a string (and written atomically to ``out`` when given).

    The page plays the run at real time x ``speed`` from the moment its first frame is drawn
    and holds the last frame (``loop``: starts over), with play / pause, a frame slider, a speed
    menu (0.25x-4x) and a loop toggle; the camera frames the bodies that move and follows them
    where they travel (:func:`replay_view`); a strip under the view plots contacts, LCP size and
    residual per frame with a cursor at the frame shown. ``window.contactlab`` drives it (seek,
    play, pause, speed, loop; frame(), clipTime()).

    Frames are decimated (evenly in time, first and last kept) so that the animation stays
    within ``budget_bytes``; at most ``max_contacts`` contacts per frame are drawn (largest
    normal forces first). Arrows are drawn with length ``force_scale`` x force (default: the
    largest force shown is a fifth of the framed bodies' extent).
    """
    import meshcat.geometry as g
    import umsgpack
    from meshcat.commands import SetObject, SetProperty, SetTransform
    from meshcat.path import Path as MPath

    from .replay_page import PAGE, SPEEDS
    if not (isinstance(speed, (int, float)) and speed > 0):
        raise ReplayError(f"speed must be a number > 0 (1 is real time), got {speed!r}")
    F, nb = data.frames, len(data.body_names)
    if F == 0:
        raise ReplayError("the trajectory has no frames")
    counts = data.contacts
    slots = int(min(max_contacts, counts.max() if counts.size else 0))
    keep = _decimate(F, nb, slots, budget_bytes, max_frames)
    view = replay_view(data, keep)
    extent = max(float(np.max(view["hi"] - view["lo"])), 0.02)            # what the camera frames
    P = data.position[keep][:, view["moving"]].reshape(-1, 3)
    ground = max(extent, float(np.ptp(P, axis=0).max()) if len(P) else 0.0)   # the ground covers the whole run

    cmds = []
    def node(*parts):
        return MPath(("contactlab",) + tuple(str(p) for p in parts))

    # bodies: a node per body (posed per frame), its shapes as children (fixed offsets). URDF visuals
    # replace a body's collision shapes (kept as a hidden 'collision' node); link volumes add to them
    drawn_visuals = {sh["body"] for sh in data.shapes if sh.get("visual") and not sh.get("link")}
    body_names = [(n.replace("/", "_") or f"body{i}") for i, n in enumerate(data.body_names)]
    for k, s in enumerate(data.shapes):
        b = s["body"]
        geom, extra = _geometry(s, ground)
        fixed = s["kind"] == "halfspace" or s.get("fixed", False)   # ground, walls, tables: grey, see-through
        color = 0x999999 if fixed else PALETTE[b % len(PALETTE)]
        mat = g.MeshLambertMaterial(color=color, opacity=0.45 if fixed else 1.0, transparent=fixed)
        if s.get("visual"):
            p = node("bodies", body_names[b], f"visual{k}")
        elif b in drawn_visuals:
            p = node("bodies", body_names[b], "collision", f"shape{k}")
        else:
            p = node("bodies", body_names[b], f"shape{k}")
        cmds.append(SetObject(geom, mat, p))
        w, x, y, z = s["orientation"]
        local = _T(quat_to_matrix(np.array([w, x, y, z])), np.array(s["position"]))
        if s["kind"] == "halfspace":
            local = np.eye(4)
        cmds.append(SetTransform(local @ extra, p))
    for i in range(nb):
        cmds.append(SetTransform(_T(quat_to_matrix(data.orientation[0, i]), data.position[0, i]),
                                 node("bodies", body_names[i])))
    for b in sorted(drawn_visuals):   # collision shapes of bodies with visuals: hidden, toggleable
        cmds.append(SetProperty("visible", False, node("bodies", body_names[b], "collision")))

    # poses of the bodies that move, per kept frame: position and quaternion (x, y, z, w: three.js)
    fixed_body = np.zeros(nb, bool)
    for sh in data.shapes:
        fixed_body[sh["body"]] |= bool(sh.get("fixed"))
    moved = (np.ptp(data.position, axis=0).max(axis=1) > 0) | (np.ptp(data.orientation, axis=0).max(axis=1) > 0)
    dyn = np.flatnonzero(moved & ~fixed_body) if F > 1 else np.zeros(0, int)
    poses = np.concatenate([data.position[keep][:, dyn], data.orientation[keep][:, dyn][..., [1, 2, 3, 0]]], axis=2)

    # contacts: a pool of slots (a point and two arrows each); each frame places, scales and shows them.
    # Rows per kept frame: point (3), normal force x scale (3), friction force x scale (3)
    rows, offsets = [], [0]
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
                cmds.append(SetTransform(_T(np.eye(3), np.array([0.0, 0.5, 0.0])), p))   # base at the node's origin
                cmds.append(SetProperty("visible", False, node("contacts", kind, sl)))
            cmds.append(SetProperty("visible", False, node("contacts", "points", sl)))
        for k in keep:
            a, b = data.contact_offset[k], data.contact_offset[min(k + 1, len(data.contact_offset) - 1)]
            idx = np.arange(a, b)
            if idx.size > slots:
                idx = idx[np.argsort(-data.contact_normal_force[idx], kind="stable")[:slots]]
            rows.append(np.concatenate([data.contact_point[idx],
                                        data.contact_normal[idx] * data.contact_normal_force[idx, None] * scale,
                                        data.contact_friction_force[idx] * scale], axis=1))
            offsets.append(offsets[-1] + idx.size)
    rows = np.concatenate(rows) if rows else np.zeros((0, 9))

    cmds.append(SetProperty("visible", False, MPath(("Axes",))))
    cmds.append(SetProperty("visible", False, MPath(("Grid",))))

    def pack(cmd):
        return base64.b64encode(umsgpack.packb(cmd.lower(), force_float_precision="single")).decode("ascii")
    t = data.time[keep]
    fps = (len(keep) - 1) / max(t[-1] - t[0], 1e-12) if len(keep) > 1 else 1.0
    res = np.asarray(data.residual, dtype=float)[keep]
    info = {"time": [round(float(x), 6) for x in t], "contacts": [int(counts[k]) if k < len(counts) else 0 for k in keep],
            "lcp": [int(data.lcp_size[k]) for k in keep], "status": [data.status[k] if k < len(data.status) else "" for k in keep],
            "residual": [float(f"{x:.3g}") if np.isfinite(x) else None for x in res],
            "fps": fps, "frames": len(keep), "source_frames": F, "bodies": nb, "duration": float(t[-1] - t[0]),
            "speed": float(speed), "loop": bool(loop), "speeds": sorted(set(SPEEDS) | {float(speed)})}
    frames = {"bodies": [["contactlab", "bodies", body_names[i]] for i in dyn], "poses": _b64(poses, np.float32),
              "slots": slots, "contact_offset": _b64(offsets, np.int32), "contacts": _b64(rows, np.float32),
              "moving": [body_names[i] for i in view["moving"]], "follow": view["follow"],
              "lo": view["lo"].tolist(), "hi": view["hi"].tolist(),
              "target": _b64(view["target"], np.float32) if view["follow"] else None}
    fill = {"TITLE": html.escape(title), "VIEWER": _viewer_js(), "INFO": json.dumps(info),
            "FRAMES": json.dumps(frames), "PAYLOAD": json.dumps([pack(c) for c in cmds])}
    page = re.sub(r"@(TITLE|VIEWER|INFO|FRAMES|PAYLOAD)@", lambda m: fill[m.group(1)], PAGE)   # one pass
    if out is not None:
        from ..files import atomic_write
        atomic_write(Path(out), lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))
    return page


def _viewer_js() -> str:
    import meshcat
    js = Path(meshcat.__file__).parent / "viewer" / "dist" / "main.min.js"
    return js.read_text(encoding="utf-8").replace("</script", "<\\/script")


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
