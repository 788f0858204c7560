"""Collision detection: compiled broad phase and box routines, coal for everything else.

Broad phase: world AABBs (from coal's local AABBs, grown by the contact margin) by compiled
sort-and-sweep; half-spaces are culled against each AABB (:mod:`contactlab.collision.boxes`).
Narrow phase: box-box pairs by the compiled separating-axis routine with face clipping (at most
four points per pair, exact face normals), a sphere against a half-space by its one point, box or
convex mesh against a half-space by its vertices within ``margin`` of the plane (each with its
exact distance: speculative contacts for the corners about to land), all in one compiled call. On a
scene with convex meshes, a box or convex mesh against a convex mesh by the compiled separating-axis
routine of :mod:`contactlab.collision.polytope` (coal's contact patch, computed in the same call, the
scene's pair friction with it). Every other pair goes to ``coal.collide`` with ``security_margin =
margin`` then ``coal.computeContactPatch`` (a face-face patch yields its polygon's corners), each
point's signed distance measured between its two witness points along the patch normal.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import coal
import numpy as np

from ..errors import ModelError
from ..mechanics.kernels import shape_sweep
from ..mechanics.model import KIND_FIXED, Data, Model
from ..mechanics.rotation import quat_to_matrix, tangent_basis
from . import boxes as B
from . import polytope as PT


@dataclass
class ContactSet:
    """Contacts of one step. ``normal`` (k, 3) points from body ``body_a`` to ``body_b``; ``phi``
    is the signed distance (negative: penetration); ``t1``, ``t2`` complete a right-handed frame.
    Body indices refer to the model; ``shape_a``/``shape_b`` index ``model.shapes``."""
    body_a: np.ndarray
    body_b: np.ndarray
    shape_a: np.ndarray
    shape_b: np.ndarray
    point: np.ndarray
    normal: np.ndarray
    phi: np.ndarray
    mu: np.ndarray
    t1: np.ndarray
    t2: np.ndarray
    normal_guess: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.phi.shape[0])

    @staticmethod
    def empty() -> "ContactSet":
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, dtype=np.int64)
        return ContactSet(zi, zi, zi, zi, z3, z3, np.zeros(0), np.zeros(0), z3, z3, np.zeros(0))


class _PackedView:
    """A field of :class:`PackedContactSet`: the view of its segment of a buffer, made on first read
    and kept in the instance (a non-data descriptor, as functools.cached_property, without its lock)."""

    def __init__(self, name: str, start: int, width: int, ints: bool):
        self.name, self.start, self.width, self.ints = name, start, width, ints

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        k = obj.count
        a = (obj.ints if self.ints else obj.floats)[self.start * k:(self.start + self.width) * k]
        if self.width > 1:
            a = a.reshape(k, self.width)
        obj.__dict__[self.name] = a
        return a


class PackedContactSet(ContactSet):
    """The contacts of one compiled detection (collision.boxes ``detect_and_match_packed``) as its two
    buffers, ``floats`` and ``ints`` (collision.boxes ``PACKED_FLOATS`` / ``PACKED_INTS``: each field's rows
    in turn); every field of :class:`ContactSet` is a view of them, made on first read. A step hands
    the buffers to the next compiled call as they are: two arrays, not eleven (each array costs a boxing
    at each crossing between Python and numba), and ``match``, the detection's contact matching
    (collision.match_contacts), comes with them. Assigning a field, or ``dataclasses.replace``, gives
    a set that holds its own arrays (``floats`` and ``ints`` None), as a ContactSet does."""

    def __init__(self, floats: np.ndarray | None = None, ints: np.ndarray | None = None, **arrays):
        if arrays:      # ContactSet's fields by name (dataclasses.replace): the arrays as given
            object.__setattr__(self, "floats", None)
            object.__setattr__(self, "ints", None)
            ContactSet.__init__(self, **arrays)
            return
        d = self.__dict__
        d["floats"], d["ints"], d["_count"] = floats, ints, ints.shape[0] // len(B.PACKED_INTS)

    @property
    def count(self) -> int:
        return self._count if self.ints is not None else int(self.phi.shape[0])

    def __setattr__(self, name, value):
        if self.ints is not None and name in _CONTACT_FIELDS:     # the views become the set's own arrays
            for f in _CONTACT_FIELDS:
                self.__dict__[f] = getattr(self, f)
            object.__setattr__(self, "floats", None)
            object.__setattr__(self, "ints", None)
        object.__setattr__(self, name, value)


_CONTACT_FIELDS = frozenset(f.name for f in fields(ContactSet)) | {"match"}


def _add_packed_views():
    start = 0
    for name, width in B.PACKED_FLOATS:
        setattr(PackedContactSet, name, _PackedView(name, start, width, False))
        start += width
    assert start == B.PACKED_FLOAT_WIDTH
    for i, name in enumerate(B.PACKED_INTS):
        setattr(PackedContactSet, name, _PackedView(name, i, 1, True))


_add_packed_views()


def packed(contacts: ContactSet, match: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(floats, ints) of ``contacts`` in the packed layout, ``match`` each contact's previous one
    (-1: none): a :class:`PackedContactSet`'s own buffers where ``match`` is None or its own; others
    copied (``match`` None: all -1; no ``normal_guess``: NaN)."""
    if isinstance(contacts, PackedContactSet) and contacts.ints is not None and \
            (match is None or match is contacts.match):
        return contacts.floats, contacts.ints
    k = contacts.count
    guess = contacts.normal_guess
    f8, i8 = np.float64, np.int64
    return B.pack_contacts(
        *(np.ascontiguousarray(x, dtype=f8).reshape(k, 3) for x in (contacts.point, contacts.normal, contacts.t1,
                                                                    contacts.t2)),
        *(np.ascontiguousarray(x, dtype=f8).reshape(k) for x in (contacts.phi, contacts.mu,
                                                                 np.full(k, np.nan) if guess is None else guess)),
        *(np.ascontiguousarray(x, dtype=i8).reshape(k) for x in (contacts.body_a, contacts.body_b, contacts.shape_a,
                                                                 contacts.shape_b,
                                                                 np.full(k, -1) if match is None else match)))


def previous_packed(prev, prev_values) -> tuple:
    """The previous step's contacts and their values as the compiled matching takes them: the packed
    buffers (floats, ints) and the values as float64, or empty arrays where there were none."""
    if prev is None or prev.count == 0:
        return _NO_FLOATS, _NO_INTS, _NO_FLOATS
    prev_floats, prev_ints = packed(prev)
    values = _NO_FLOATS if prev_values is None else np.ascontiguousarray(prev_values, dtype=np.float64)
    return prev_floats, prev_ints, values


def _geometry(shape) -> coal.CollisionGeometry:
    k = "halfspace" if shape.kind == "plane" else shape.kind
    if k == "halfspace":
        n = np.asarray(shape.normal, dtype=np.float64)
        nn = np.linalg.norm(n)
        return coal.Halfspace(n / nn, float(shape.offset) / nn)
    if k == "sphere":
        return coal.Sphere(float(shape.radius))
    if k == "box":
        return coal.Box(*[float(x) for x in shape.size])
    if k == "capsule":
        return coal.Capsule(float(shape.radius), float(shape.length))
    if k == "cylinder":
        return coal.Cylinder(float(shape.radius), float(shape.length))
    if k == "convex":
        V = np.ascontiguousarray(shape.vertices, dtype=np.float64)
        m = coal.BVHModelOBBRSS()
        m.beginModel(0, V.shape[0])
        m.addVertices(V)
        m.endModel()
        try:
            m.buildConvexHull(True, "Qt")
        except Exception as exc:  # coal raises its own exception type
            raise ModelError(f"shape {shape.name!r}: coal could not build the convex hull ({exc})") from None
        return m.convex
    raise ModelError(f"unknown shape kind {shape.kind!r}")


class CollisionWorld:
    """coal geometries for every shape of ``model`` and :meth:`detect` -> :class:`ContactSet`."""

    def __init__(self, model: Model):
        self.model = model
        self.margin = self.settings_margin = float(model.settings.margin)
        self.geoms, self.local_R, self.local_p, self.infinite = [], [], [], []
        lo, hi = [], []
        for body, shape in model.shapes:
            g = _geometry(shape)
            g.computeLocalAABB()
            self.geoms.append(g)
            self.local_R.append(quat_to_matrix(np.asarray(shape.orientation, dtype=np.float64)))
            self.local_p.append(np.asarray(shape.position, dtype=np.float64))
            inf = shape.kind in ("halfspace", "plane")
            self.infinite.append(inf)
            lo.append(np.zeros(3) if inf else np.asarray(g.aabb_local.min_))
            hi.append(np.zeros(3) if inf else np.asarray(g.aabb_local.max_))
        self.shape_body = np.array([b for b, _ in model.shapes], dtype=np.int64)
        self.infinite = np.array(self.infinite, dtype=bool)
        self.local_R = np.array(self.local_R).reshape(-1, 3, 3)
        self.local_p = np.array(self.local_p).reshape(-1, 3)
        lo, hi = np.array(lo).reshape(-1, 3), np.array(hi).reshape(-1, 3)
        self.aabb_center, self.aabb_half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        # radius of each body about its centre (for the speed bound of the contact margin)
        self.body_radius = np.zeros(model.nb)
        for k, (body, shape) in enumerate(model.shapes):
            if not self.infinite[k]:
                r = np.linalg.norm(self.local_p[k]) + np.linalg.norm(np.maximum(np.abs(lo[k]), np.abs(hi[k])))
                self.body_radius[body] = max(self.body_radius[body], r)
        self.shape_mu = np.array([np.nan if s.mu is None else float(s.mu) for _, s in model.shapes])
        self.static = model.kind[self.shape_body] == KIND_FIXED if len(self.shape_body) else np.zeros(0, bool)
        jointed = set()
        for jt in model.joints:
            if jt.a >= 0:
                jointed.add((min(jt.a, jt.b), max(jt.a, jt.b)))
        self.jointed = jointed
        self._reach = None
        self._shape_args = None     # detect_matched's constant arguments
        self._poly_constants = None     # and those of its call on scenes with convex meshes
        self.request = coal.CollisionRequest()
        self.request.security_margin = self.margin
        self.request.num_max_contacts = 1
        self.patch_request = coal.ContactPatchRequest()
        self.shape_kind_box = np.array([s.kind == "box" for _, s in model.shapes], dtype=bool)
        self.half = np.array([0.5 * np.asarray(s.size, dtype=np.float64) if s.kind == "box" else np.zeros(3)
                              for _, s in model.shapes]).reshape(-1, 3)
        # half-spaces in their shape frame: outward normal n, inside n.x <= d
        self.plane_local = np.array([np.r_[np.asarray(g.n), float(g.d)] if inf else np.zeros(4)
                                     for g, inf in zip(self.geoms, self.infinite)]).reshape(-1, 4)
        self.finite_idx = np.flatnonzero(~self.infinite).astype(np.int64)
        self.plane_idx = np.flatnonzero(self.infinite).astype(np.int64)
        nb = model.nb
        self.jointed_keys = np.array(sorted(a * nb + b for a, b in jointed), dtype=np.int64)
        self.vertices = []
        for body, shape in model.shapes:
            if shape.kind == "box":
                hx, hy, hz = (0.5 * float(x) for x in shape.size)
                V = np.array([[sx * hx, sy * hy, sz * hz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
            elif shape.kind == "convex":
                V = np.asarray(shape.vertices, dtype=np.float64)
            else:
                V = None
            self.vertices.append(V)
        counts = [0 if V is None else len(V) for V in self.vertices]
        self.vstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.vflat = np.vstack([V for V in self.vertices if V is not None] or [np.zeros((0, 3))]).astype(np.float64)
        self.sphere_radius = np.array([float(s.radius) if s.kind == "sphere" else 0.0 for _, s in model.shapes])
        # narrow-phase class per shape (boxes.narrow_phase) and each half-space's row in plane_idx
        self.shape_class = np.array([B.BOX if s.kind == "box" else B.SPHERE if s.kind == "sphere" else
                                     B.VERTICES if s.kind == "convex" else B.HALFSPACE if inf else B.OTHER
                                     for (_, s), inf in zip(model.shapes, self.infinite)], dtype=np.int64)
        self.plane_row = np.full(len(model.shapes), -1, dtype=np.int64)
        self.plane_row[self.plane_idx] = np.arange(self.plane_idx.size)
        # polytope pairs (a box or convex mesh against a convex mesh) by collision/polytope.py where the
        # scene has a convex mesh (box-only scenes keep the box routines' one call); its hulls built when first met
        self.is_poly = (self.shape_class == B.BOX) | (self.shape_class == B.VERTICES)
        self.has_convex = bool(np.any(self.shape_class == B.VERTICES))
        self._poly = None
        self.mu_table = np.full((nb, nb), np.nan)     # the scene's pair friction by body pair (NaN: none)
        for (x, y), m in model.pair_mu.items():
            self.mu_table[x, y] = self.mu_table[y, x] = float(m)

    def _snap_normal(self, res, Rs, ps, sa, sb, cos_tol: float = 0.9995):
        """EPA's normal for barely overlapping faces can be off by ~1e-3 rad, and coal's patch then
        shrinks to one point; snap it to the nearest face normal of a box in the pair when within
        ~1.8 degrees (the exact separating axis of touching faces)."""
        c = res.getContact(0)
        n = np.asarray(c.normal, dtype=np.float64)
        if self.shape_kind_box[sa] and self.shape_kind_box[sb]:
            # box-box: the face axis of least overlap (separating-axis test over the 6 face normals);
            # EPA's normal is unreliable at depths ~1e-11 (it can point 45 degrees off)
            ha, hb = 0.5 * np.asarray(self.model.shapes[sa][1].size), 0.5 * np.asarray(self.model.shapes[sb][1].size)
            axes = np.vstack([Rs[sa].T, Rs[sb].T])
            dvec = ps[sb] - ps[sa]
            ra = np.abs(axes @ Rs[sa]) @ ha
            rb = np.abs(axes @ Rs[sb]) @ hb
            dist = axes @ dvec
            overlap = ra + rb - np.abs(dist)
            i = int(np.argmin(overlap))
            if overlap[i] <= -float(c.penetration_depth) + 1e-6:
                c.normal = (1.0 if dist[i] >= 0 else -1.0) * axes[i]
                out = coal.CollisionResult()
                out.addContact(c)
                return out
            return res
        cands = [Rs[k].T for k in (sa, sb) if self.shape_kind_box[k]]
        axes = np.vstack(cands)
        dots = axes @ n
        i = int(np.argmax(np.abs(dots)))
        if abs(dots[i]) < cos_tol or abs(dots[i]) > 1 - 1e-15:
            return res
        c.normal = np.sign(dots[i]) * axes[i]
        out = coal.CollisionResult()
        out.addContact(c)
        return out

    @property
    def poly(self) -> tuple:
        """collision/polytope.py ``polytope_data`` of the boxes and convex meshes (built at first use)."""
        if self._poly is None:
            self._poly = PT.polytope_data([self.vertices[k] if self.is_poly[k] else None
                                           for k in range(len(self.geoms))])
        return self._poly

    def _world_poses(self, data: Data):
        return B.world_poses(data.quaternion, data.position, self.shape_body, self.local_R, self.local_p)

    def _planes_world(self, Rs, ps):
        """World outward normals (k, 3) and offsets (k,) of the half-spaces (``self.plane_idx``)."""
        return B.planes_world(Rs, ps, self.plane_idx, self.plane_local)

    def candidate_pairs(self, data: Data, Rs: np.ndarray, ps: np.ndarray, planes=None) -> np.ndarray:
        """Broad phase: (k, 2) shape index pairs whose margin-grown world AABBs overlap (compiled
        sort-and-sweep), then (finite shape, half-space) pairs reaching within the margin.
        ``planes``: the half-spaces' world (normals, offsets) when the caller has them."""
        reach = self._reach if self._reach is not None else np.zeros(len(self.geoms))
        n, off = self._planes_world(Rs, ps) if planes is None else planes
        return B.broad_phase(Rs, ps, self.aabb_center, self.aabb_half, self.margin, reach, self.finite_idx,
                             self.shape_body, self.static, self.jointed_keys, self.model.nb, self.plane_idx, n, off)

    def pair_mu_array(self, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
        """Friction of each shape pair: the scene's pair override, else the smaller shape mu, else
        the scene's mu (vectorised :meth:`pair_mu`)."""
        return self._contact_fields(np.asarray(sa, dtype=np.int64), np.asarray(sb, dtype=np.int64))[2]

    def _contact_fields(self, sa: np.ndarray, sb: np.ndarray):
        """(body_a, body_b, mu) of contacts between shapes sa and sb: one compiled pass
        (collision.boxes ``contact_fields``), then the scene's pair overrides (per override, not per contact)."""
        ba, bb, mu = B.contact_fields(self.shape_body, self.shape_mu, sa, sb, float(self.model.mu_default))
        if self.model.pair_mu:
            PT.pair_friction(ba, bb, mu, self.mu_table)
        return ba, bb, mu

    def pair_mu(self, sa: int, sb: int) -> float:
        ba, bb = int(self.shape_body[sa]), int(self.shape_body[sb])
        key = (min(ba, bb), max(ba, bb))
        if key in self.model.pair_mu:
            return self.model.pair_mu[key]
        m = [x for x in (self.shape_mu[sa], self.shape_mu[sb]) if np.isfinite(x)]
        return min(m) if m else self.model.mu_default

    def detect(self, data: Data, margin: float | None = None, reach: np.ndarray | None = None,
               sweep: np.ndarray | None = None) -> ContactSet:
        """All contact points within ``margin`` (default: the settings' margin), each pair's
        margin grown by how far its shapes can close in on each other in the step (speculative
        contacts for fast bodies only, not a scene-wide margin).

        ``sweep`` (n_shapes, 4): per shape h v and h |omega| r of its body (mechanics/kernels.py
        ``shape_sweep``, what the simulator passes): a pair's margin grows by
        max(|h (v_a - v_b)|, |h v_a|, |h v_b|) + h |omega_a| r_a + h |omega_b| r_b
        (:func:`boxes.pair_reach`; for the compiled routines' pairs the same bound projected on each
        separating axis, :func:`boxes.axis_reach`). ``reach`` (n_shapes,), without ``sweep``: a
        pair's margin grows by reach_a + reach_b.

        Compiled broad phase; box-box pairs and (box, convex mesh or sphere, half-space) pairs by the
        compiled routines of :mod:`contactlab.collision.boxes`; every other pair by coal."""
        if not self.geoms:
            return ContactSet.empty()
        margin = self.settings_margin if margin is None else float(margin)
        self.margin = margin
        if sweep is not None:
            self._sweep = np.ascontiguousarray(sweep, dtype=np.float64)
            self._reach = B.shape_reach_of(self._sweep)
        else:
            self._reach = np.zeros(len(self.geoms)) if reach is None else np.ascontiguousarray(reach, dtype=np.float64)
            self._sweep = np.zeros((len(self.geoms), 4))
            self._sweep[:, 3] = self._reach
        Rs, ps, pairs, sa, sb, P, n, phi, rest, left, t1, t2, ba, bb, mu = B.detect_contacts(
            data.quaternion, data.position, self.shape_body, self.local_R, self.local_p, self.plane_idx,
            self.plane_local, self.aabb_center, self.aabb_half, self.margin, self._reach, self._sweep,
            self.finite_idx, self.static, self.jointed_keys, self.model.nb, self.shape_class, self.half, self.vflat,
            self.vstart, self.sphere_radius, self.plane_row, self.shape_mu, float(self.model.mu_default))
        if pairs.shape[0] == 0:
            return ContactSet.empty()
        if not left:        # every pair by the compiled routines: tangents, bodies and friction came with them
            if phi.size == 0:
                return ContactSet.empty()
            if self.model.pair_mu:
                mu = self._contact_fields(sa, sb)[2]
            return ContactSet(ba, bb, sa, sb, P, n, phi, mu, t1, t2, np.full(phi.size, np.nan))
        if rest.any() and self.has_convex:     # polytope pairs compiled (collision/polytope.py), coal the others
            poly = rest & self.is_poly[pairs[:, 0]] & self.is_poly[pairs[:, 1]]
            if poly.any():
                qsa, qsb, qP, qn, qphi = PT.polytope_contacts(np.ascontiguousarray(pairs[poly]), Rs, ps, *self.poly,
                                                              self.margin, self._sweep)
                sa, sb, P, n, phi = (np.concatenate(x) for x in ((sa, qsa), (sb, qsb), (P, qP), (n, qn), (phi, qphi)))
                rest = rest & ~poly
        if rest.any():
            csa, csb, cP, cn, cphi = self._coal_contacts(pairs[rest], Rs, ps)
            if cphi.size:
                sa, sb, P, phi = (np.concatenate(x) for x in ((sa, csa), (sb, csb), (P, cP), (phi, cphi)))
                n = np.concatenate([n, cn / np.linalg.norm(cn, axis=1, keepdims=True)])
        if phi.size == 0:
            return ContactSet.empty()
        t1, t2 = tangent_basis(n)
        ba, bb, mu = self._contact_fields(sa, sb)
        return ContactSet(ba, bb, sa, sb, P, n, phi, mu, t1, t2, np.full(phi.size, np.nan))

    def detect_matched(self, data: Data, margin: float, h: float, prev: ContactSet | None,
                       prev_values: np.ndarray | None, near: float) -> tuple[ContactSet, np.ndarray]:
        """The simulator's detection and contact matching: :meth:`detect` with each shape's sweep over
        the step of length ``h`` (mechanics/kernels.py ``shape_sweep``), then :func:`match_contacts`
        against ``prev`` (its ``normal_guess`` set from ``prev_values``); (contacts, match). Where every
        pair is a compiled routine's and no pair overrides friction, one compiled call
        (collision.boxes ``detect_and_match``); otherwise the two steps (and coal) as they are."""
        m = self.model
        if self.geoms and self.has_convex and type(self).detect is CollisionWorld.detect:
            return self._detect_matched_polytopes(data, margin, h, prev, prev_values, near)
        if not self.geoms or m.pair_mu or type(self).detect is not CollisionWorld.detect:
            sweep = shape_sweep(m.dof_start, data.linear_velocity, data.angular_velocity, self.body_radius,
                                self.shape_body, float(h))
            return detect_then_match(self, data, margin, sweep, prev, prev_values, near)
        prev_floats, prev_ints, values = previous_packed(prev, prev_values)
        self.margin = float(margin)
        shapes = self._shapes()
        left, floats, ints = B.detect_and_match_packed(
            m.dof_start, data.linear_velocity, data.angular_velocity, self.body_radius, float(h), data.quaternion,
            data.position, *shapes[0], self.margin, *shapes[1], prev_floats, prev_ints, values, float(near),
            *shapes[2])
        self._sweep, self._reach = shapes[2]
        if left:        # coal's pairs: merged as detect() merges them, then matched
            return detect_then_match(self, data, margin, self._sweep, prev, prev_values, near)
        contacts = PackedContactSet(floats, ints)
        return contacts, contacts.match

    def _shapes(self) -> tuple:
        """detect_matched's constant arguments: the shapes' arrays (fixed once the world is built),
        gathered at the first call, and the sweep and reach the kernels write."""
        if self._shape_args is None:
            m = self.model
            self._shape_args = (
                (self.shape_body, self.local_R, self.local_p, self.plane_idx, self.plane_local, self.aabb_center,
                 self.aabb_half),
                (self.finite_idx, self.static, self.jointed_keys, m.nb, self.shape_class, self.half, self.vflat,
                 self.vstart, self.sphere_radius, self.plane_row, self.shape_mu, float(m.mu_default)),
                (np.zeros((len(self.geoms), 4)), np.zeros(len(self.geoms))))
        return self._shape_args

    def polytope_constants(self) -> tuple:
        """(cf, ci, sweep, reach): the shapes' constant arrays as collision/polytope.py
        ``detect_and_match_polytopes`` takes them (``bundle_constants``: one float and one int buffer,
        gathered at the first call, then the same arrays), and the views of cf that the call writes each
        shape's sweep and reach into (what ``_sweep`` and ``_reach`` hold after it)."""
        if self._poly_constants is None:
            self._poly_constants = self._bundle_polytope_constants()
        return self._poly_constants

    def _bundle_polytope_constants(self) -> tuple:
        self._shapes()      # detect_matched's unbundled arguments too (sim/robot_step.py reads them after a first call)
        m, n = self.model, len(self.geoms)
        verts, vstart, face_n, face_d, fstart, edge_f, edge_p, estart = self.poly
        cf, ci = PT.bundle_constants(dict(
            body_radius=self.body_radius, local_R=self.local_R, local_p=self.local_p, plane_local=self.plane_local,
            aabb_center=self.aabb_center, aabb_half=self.aabb_half, half=self.half, verts=self.vflat,
            radius=self.sphere_radius, shape_mu=self.shape_mu, mu_default=[float(m.mu_default)],
            mu_table=self.mu_table, poly_verts=verts, face_n=face_n, face_d=face_d, edge_p=edge_p,
            sweep=np.zeros((n, 4)), reach=np.zeros(n), dof_start=m.dof_start, shape_body=self.shape_body,
            plane_idx=self.plane_idx, finite_idx=self.finite_idx, static=self.static, jointed_keys=self.jointed_keys,
            nb=[m.nb], cls=self.shape_class, vstart=self.vstart, plane_row=self.plane_row, is_poly=self.is_poly,
            poly_vstart=vstart, fstart=fstart, edge_f=edge_f, estart=estart))
        k = PT.CONST_FLOATS.index("sweep")
        o = int(ci[4 * k])
        return cf, ci, cf[o:o + 4 * n].reshape(n, 4), cf[o + 4 * n:o + 5 * n]

    def _detect_matched_polytopes(self, data: Data, margin: float, h: float, prev: ContactSet | None,
                                  prev_values: np.ndarray | None, near: float) -> tuple[ContactSet, np.ndarray]:
        """detect_matched on a scene with convex meshes: one compiled call (collision/polytope.py
        ``detect_and_match_polytopes``: the box routines, the polytope pairs, the scene's pair friction
        and the matching); a pair neither covers (a sphere, capsule or cylinder against a finite shape)
        sends the step to :func:`detect_then_match` (coal for it)."""
        prev_floats, prev_ints, values = previous_packed(prev, prev_values)
        self.margin = float(margin)
        cf, ci, self._sweep, self._reach = self.polytope_constants()
        left, floats, ints = PT.detect_and_match_polytopes(
            data.linear_velocity, data.angular_velocity, float(h), data.quaternion, data.position, self.margin,
            prev_floats, prev_ints, values, float(near), cf, ci)
        if left:
            return detect_then_match(self, data, margin, self._sweep, prev, prev_values, near)
        contacts = PackedContactSet(floats, ints)
        return contacts, contacts.match

    def _coal_contacts(self, pairs, Rs, ps):
        """coal's narrow phase (collide + contact patch) for the pairs no compiled routine covers
        (spheres, capsules, cylinders, convex meshes against each other)."""
        out = {k: [] for k in ("sa", "sb", "p", "n", "phi")}
        tf = {}

        def transform(k):
            if k not in tf:
                T = coal.Transform3s()
                T.setRotation(Rs[k])
                T.setTranslation(ps[k])
                tf[k] = T
            return tf[k]

        for sa, sb in pairs:
            # put a half-space second so the normal points from the finite shape into it
            if self.infinite[sa]:
                sa, sb = sb, sa
            ga, gb = self.geoms[sa], self.geoms[sb]
            Ta, Tb = transform(sa), transform(sb)
            self.request.security_margin = self.margin + float(B.pair_reach(self._sweep, sa, sb))
            res = coal.CollisionResult()
            coal.collide(ga, Ta, gb, Tb, self.request, res)
            if not res.isCollision():
                continue
            if self.shape_kind_box[sa] or self.shape_kind_box[sb]:
                res = self._snap_normal(res, Rs, ps, sa, sb)
            pres = coal.ContactPatchResult(self.patch_request)
            coal.computeContactPatch(ga, Ta, gb, Tb, res, self.patch_request, pres)
            for ip in range(pres.numContactPatches()):
                patch = pres.getContactPatch(ip)
                n = np.asarray(patch.getNormal(), dtype=np.float64)
                for k in _polygon_corners(patch):
                    p1 = np.asarray(patch.getPointShape1(k))
                    p2 = np.asarray(patch.getPointShape2(k))
                    out["sa"].append(sa); out["sb"].append(sb)
                    out["p"].append(0.5 * (p1 + p2)); out["n"].append(n)
                    out["phi"].append(float(np.dot(p2 - p1, n)))
        return (np.array(out["sa"], dtype=np.int64), np.array(out["sb"], dtype=np.int64),
                np.array(out["p"]).reshape(-1, 3), np.array(out["n"]).reshape(-1, 3), np.array(out["phi"]))


# detect_matched's empty arguments (no previous contacts or values; never written: the kernels only read them)
_NO_INTS = np.zeros(0, dtype=np.int64)
_NO_FLOATS = np.zeros(0)


def _polygon_corners(patch, tol: float = 1e-6) -> list[int]:
    """Indices of a patch polygon's corners: coal clips two faces into a polygon that can carry
    collinear points (an octagon for two squares turned by 1e-12 rad); they add only degenerate
    rows to the LCP, so points whose turn angle is below ``tol`` are dropped."""
    k = patch.size()
    if k <= 3:
        return list(range(k))
    P = np.array([patch.getPoint(i) for i in range(k)])
    a = P - np.roll(P, 1, axis=0)          # p_i - p_{i-1}
    b = np.roll(P, -1, axis=0) - P         # p_{i+1} - p_i
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    turn = np.linalg.norm(np.cross(a, b), axis=1)
    ok = (na >= 1e-12) & ((nb < 1e-12) | (turn > tol * na * nb))
    keep = np.flatnonzero(ok).tolist()
    return keep if len(keep) >= 3 else list(range(k))


def match_indices(prev: ContactSet | None, new: ContactSet, tol: float, near: float | None = None):
    """For each new contact, the index of the previous step's contact on the same shape pair whose
    point is nearest and within ``tol``; -1 where none matches (collision/boxes
    ``match_previous_kernel``). With ``near``: (that, the same indices with -1 where the nearest
    is farther than ``near``)."""
    if prev is None or prev.count == 0 or new.count == 0:
        none = np.full(new.count, -1, dtype=np.int64)
        return none if near is None else (none, none.copy())
    i64 = np.int64
    match, dist2 = B.match_previous_kernel(prev.shape_a.astype(i64, copy=False), prev.shape_b.astype(i64, copy=False),
                                           np.ascontiguousarray(prev.point), new.shape_a.astype(i64, copy=False),
                                           new.shape_b.astype(i64, copy=False), np.ascontiguousarray(new.point),
                                           float(tol))
    if near is None:
        return match
    return match, np.where(dist2 <= near * near, match, -1)


def detect_then_match(world, data: Data, margin: float, sweep: np.ndarray, prev: ContactSet | None,
                      prev_values: np.ndarray | None, near: float) -> tuple[ContactSet, np.ndarray]:
    """``world.detect`` with ``sweep``, then :func:`match_contacts` against ``prev`` (the contacts'
    ``normal_guess`` set from ``prev_values``): (contacts, match), for any contact generator."""
    contacts = world.detect(data, margin=margin, sweep=sweep)
    match, contacts.normal_guess = match_contacts(prev, prev_values, contacts, near)
    return contacts, match


def match_contacts(prev: ContactSet | None, prev_values: np.ndarray | None, new: ContactSet,
                   near: float) -> tuple[np.ndarray, np.ndarray]:
    """The step's contact matching in one compiled call (collision.boxes ``match_with_values``): each new
    contact's nearest previous contact on the same shape pair at any distance (-1: none; what
    :func:`match_indices` returns with tol = inf), and ``prev_values`` of that contact where it is
    within ``near`` (NaN elsewhere; what :func:`match_previous` returns with tol = near)."""
    if prev is None or prev.count == 0 or new.count == 0:
        return np.full(new.count, -1, dtype=np.int64), np.full(new.count, np.nan)
    i64 = np.int64
    values = np.zeros(0) if prev_values is None else np.ascontiguousarray(prev_values, dtype=np.float64)
    return B.match_with_values(prev.shape_a.astype(i64, copy=False), prev.shape_b.astype(i64, copy=False),
                               np.ascontiguousarray(prev.point), values, new.shape_a.astype(i64, copy=False),
                               new.shape_b.astype(i64, copy=False), np.ascontiguousarray(new.point), float(near))


def match_previous(prev: ContactSet | None, prev_values: np.ndarray | None, new: ContactSet,
                   tol: float, match: np.ndarray | None = None) -> np.ndarray:
    """For each new contact, the value (e.g. normal impulse) of the previous step's contact on the
    same shape pair whose point is nearest and within ``tol``; NaN where none matches. ``match``:
    :func:`match_indices` when the caller has it."""
    out = np.full(new.count, np.nan)
    if prev is None or prev_values is None or prev.count == 0 or new.count == 0:
        return out
    match = match_indices(prev, new, tol) if match is None else match
    hit = match >= 0
    out[hit] = np.asarray(prev_values, dtype=np.float64)[match[hit]]
    return out
