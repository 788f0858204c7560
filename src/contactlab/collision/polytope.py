"""Contacts between two convex polytopes (a box or a convex mesh against a convex mesh), compiled: the
pairs coal covered from Python one at a time (the Barrett hand's links against the glass).

Separating axes (Gottschalk et al. 1996): the face normals of both shapes and the cross products of
the edge pairs that form a face of their Minkowski difference (the Gauss-map arc test of Gregorius,
"The Separating Axis Test between Convex Polyhedra", GDC 2013), so only those edge pairs are tried.
The axis of largest separation (a face preferred to an edge pair unless the edge pair separates by
more than :data:`EDGE_PREFERENCE` of the shape's size) is the contact normal n, from shape a to shape
b; its separation is the pair's signed distance (exact for polytopes: the minimal translation when
they overlap, the distance when a face or an edge pair is the closest feature).

The contact points are coal's contact patch (``coal.computeContactPatch``, its default patch
tolerance :data:`PATCH_TOLERANCE`): each shape's support set along n (its vertices within the
tolerance of its extreme height), projected on the plane normal to n, the two convex hulls
intersected (Sutherland-Hodgman; a segment clipped by a polygon, or two segments crossed), each
corner put on the mid plane between the two supports, every corner with the pair's distance as coal
gives it; corners on a straight run dropped as in collision/contacts.py ``_polygon_corners``.

Shapes are given by :func:`polytope_data` (scipy's Qhull hull of their vertices: hull vertices, the
faces' outward normals and offsets, each edge's two face normals and one of its points).
"""
from __future__ import annotations

import numpy as np

from ..kernels._jit import jit
from ..kernels.vec3 import cross3 as _cross, dot3 as _dot, mat_vec3 as _rot
from ..mechanics.kernels import shape_sweep, tangent_basis_kernel
from .boxes.matching import match_with_values
from .boxes.narrow_phase import contact_fields, detect_kernel
from .boxes.packed import pack_contacts, unpack_contacts
from .boxes.reach import pair_reach, shape_reach_of

#: coal's ContactPatchRequest default patch tolerance (m): a vertex within it of a shape's extreme
#: height along the normal belongs to the shape's support set
PATCH_TOLERANCE = 1e-3

#: an edge-pair axis replaces the best face axis only when it separates by more than this times the
#: shape's radius (boxes.manifold EDGE_PREFERENCE: touching faces keep their face normal)
EDGE_PREFERENCE = 1e-4

#: a corner whose turn angle is below this is dropped (collision/contacts.py ``_polygon_corners``)
TURN_TOLERANCE = 1e-6


def polytope_data(shapes) -> tuple:
    """Flattened hull data of ``shapes`` (a list; None for a shape that is no polytope): each
    shape's local vertices, given as an (m, 3) array. Returns (verts, vstart, face_n, face_d, fstart,
    edge_na, edge_nb, edge_p, estart): hull vertices; outward unit face normals and offsets (n.x =
    d on the face; coplanar Qhull facets merged); per hull edge (between two distinct faces) the
    normals of its two faces and a point on it."""
    from scipy.spatial import ConvexHull
    V, F, D, EA, EB, EP = [], [], [], [], [], []
    vs, fs, es = [0], [0], [0]
    for X in shapes:
        if X is not None:
            X = np.asarray(X, dtype=np.float64)
            try:
                hull = ConvexHull(X)
            except Exception as exc:     # scipy's QhullError: a flat or degenerate vertex set
                from ..errors import ModelError
                raise ModelError(f"shape {len(vs) - 1}: no convex hull of its vertices ({exc})") from None
            eq = hull.equations
            face_of = np.empty(len(eq), dtype=np.int64)     # each facet's merged face
            faces = []
            for t, e in enumerate(eq):
                for k, g in enumerate(faces):
                    if np.abs(g - e).max() <= 1e-9 * max(1.0, abs(e[3])):
                        face_of[t] = k
                        break
                else:
                    face_of[t] = len(faces)
                    faces.append(e)
            faces = np.array(faces)
            V.append(X[hull.vertices])
            F.append(faces[:, :3])
            D.append(-faces[:, 3])
            for t, nbrs in enumerate(hull.neighbors):
                for i, u in enumerate(nbrs):
                    if u > t and face_of[u] != face_of[t]:
                        edge = [hull.simplices[t][j] for j in range(3) if j != i]
                        EA.append(faces[face_of[t], :3])
                        EB.append(faces[face_of[u], :3])
                        EP.append(0.5 * (X[edge[0]] + X[edge[1]]))
        vs.append(sum(len(x) for x in V))
        fs.append(sum(len(x) for x in F))
        es.append(len(EP))
    cat = (lambda L: np.ascontiguousarray(np.vstack(L), dtype=np.float64) if L else np.zeros((0, 3)))
    i8 = np.int64
    return (cat(V), np.array(vs, dtype=i8), cat(F), np.ascontiguousarray(np.concatenate(D) if D else np.zeros(0)),
            np.array(fs, dtype=i8), cat(EA), cat(EB), cat(EP), np.array(es, dtype=i8))


@jit
def _world(R, p, x, out):
    for i in range(3):
        out[i] = p[i] + R[i, 0] * x[0] + R[i, 1] * x[1] + R[i, 2] * x[2]


@jit
def _place(R, p, verts, start, m, out):
    """out[i] = p + R verts[start + i] for i < m (element by element: no row views)."""
    for i in range(m):
        v = start + i
        for t in range(3):
            out[i, t] = p[t] + R[t, 0] * verts[v, 0] + R[t, 1] * verts[v, 1] + R[t, 2] * verts[v, 2]


@jit
def _hull2d(U, m, out):
    """Convex hull of the 2-D points U[:m] (Andrew's monotone chain), counter-clockwise, collinear
    and repeated points dropped, into ``out``; returns its size (1: a point, 2: a segment)."""
    idx = np.arange(m)
    for i in range(1, m):                        # insertion sort by (x, y): m is a support set's size
        j = i
        while j > 0 and (U[idx[j - 1], 0] > U[idx[j], 0] or
                         (U[idx[j - 1], 0] == U[idx[j], 0] and U[idx[j - 1], 1] > U[idx[j], 1])):
            idx[j - 1], idx[j] = idx[j], idx[j - 1]
            j -= 1
    scale = 0.0
    for i in range(m):
        scale = max(scale, abs(U[i, 0] - U[idx[0], 0]), abs(U[i, 1] - U[idx[0], 1]))
    eps = 1e-12 * max(scale, 1e-300) ** 2
    H = np.empty((2 * m + 1, 2))
    k = 0
    for r in range(2):                           # lower hull, then upper
        start = k
        for t in range(m):
            i = idx[t] if r == 0 else idx[m - 1 - t]
            while k >= start + 2 and ((H[k - 1, 0] - H[k - 2, 0]) * (U[i, 1] - H[k - 2, 1]) -
                                      (H[k - 1, 1] - H[k - 2, 1]) * (U[i, 0] - H[k - 2, 0])) <= eps:
                k -= 1
            H[k, 0], H[k, 1] = U[i, 0], U[i, 1]
            k += 1
        k -= 1                                   # the last point starts the other chain
    if k < 1:
        k = 1
    if k == 2 and abs(H[0, 0] - H[1, 0]) + abs(H[0, 1] - H[1, 1]) <= 1e-12 * max(scale, 1e-300):
        k = 1
    out[:k] = H[:k]
    return k


@jit
def _clip_polygon(P, k, ax, ay, bx, by, out):
    """The part of polygon P[:k] left of the directed line a -> b (Sutherland-Hodgman), into out."""
    m = 0
    for i in range(k):
        j = (i + 1) % k
        si = (bx - ax) * (P[i, 1] - ay) - (by - ay) * (P[i, 0] - ax)
        sj = (bx - ax) * (P[j, 1] - ay) - (by - ay) * (P[j, 0] - ax)
        if si >= 0.0:
            out[m, 0], out[m, 1] = P[i, 0], P[i, 1]
            m += 1
        if (si >= 0.0) != (sj >= 0.0):
            t = si / (si - sj)
            out[m, 0] = P[i, 0] + t * (P[j, 0] - P[i, 0])
            out[m, 1] = P[i, 1] + t * (P[j, 1] - P[i, 1])
            m += 1
    return m


@jit
def _intersect(HA, ka, HB, kb, out):
    """Corners of the intersection of two convex 2-D hulls (points, segments or CCW polygons), into
    out; returns their count (0: the hulls miss each other)."""
    if ka == 1 or kb == 1:
        src = HA if ka == 1 else HB
        out[0, 0], out[0, 1] = src[0, 0], src[0, 1]
        return 1
    if ka >= 3 and kb >= 3:
        buf = np.empty((out.shape[0], 2))
        out[:ka] = HA[:ka]
        m = ka
        for e in range(kb):
            f = (e + 1) % kb
            m = _clip_polygon(out, m, HB[e, 0], HB[e, 1], HB[f, 0], HB[f, 1], buf)
            out[:m] = buf[:m]
            if m == 0:
                return 0
        return m
    # a segment against a segment or a polygon: the segment's parameter range inside the other
    S, Q, kq = (HA, HB, kb) if ka == 2 else (HB, HA, ka)
    dx, dy = S[1, 0] - S[0, 0], S[1, 1] - S[0, 1]
    if kq >= 3:
        lo, hi = 0.0, 1.0
        for e in range(kq):
            f = (e + 1) % kq
            ex, ey = Q[f, 0] - Q[e, 0], Q[f, 1] - Q[e, 1]
            s0 = ex * (S[0, 1] - Q[e, 1]) - ey * (S[0, 0] - Q[e, 0])      # >= 0: inside (left)
            ds = ex * dy - ey * dx
            if ds == 0.0:
                if s0 < 0.0:
                    return 0
            elif ds > 0.0:
                lo = max(lo, -s0 / ds)
            else:
                hi = min(hi, -s0 / ds)
        if lo > hi:
            return 0
    else:                                        # two segments: their crossing, or the overlap of collinear ones
        qx, qy = Q[1, 0] - Q[0, 0], Q[1, 1] - Q[0, 1]
        den = dx * qy - dy * qx
        wx, wy = Q[0, 0] - S[0, 0], Q[0, 1] - S[0, 1]
        scale = dx * dx + dy * dy + qx * qx + qy * qy
        if abs(den) > 1e-9 * scale:
            t = (wx * qy - wy * qx) / den
            u = (wx * dy - wy * dx) / den
            if t < 0.0 or t > 1.0 or u < 0.0 or u > 1.0:
                return 0
            lo = hi = t
        else:
            if abs(wx * dy - wy * dx) > 1e-9 * scale:
                return 0
            L = dx * dx + dy * dy
            t0 = (wx * dx + wy * dy) / L
            t1 = ((Q[1, 0] - S[0, 0]) * dx + (Q[1, 1] - S[0, 1]) * dy) / L
            lo, hi = max(0.0, min(t0, t1)), min(1.0, max(t0, t1))
            if lo > hi:
                return 0
    out[0, 0], out[0, 1] = S[0, 0] + lo * dx, S[0, 1] + lo * dy
    if hi - lo <= 1e-12:
        return 1
    out[1, 0], out[1, 1] = S[0, 0] + hi * dx, S[0, 1] + hi * dy
    return 2


@jit
def polytope_pair(a, b, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart, limit,
                  P_out, N_out, phi_out, k):
    """Contacts of shapes a and b (module docstring) within ``limit`` (the margin grown by their
    reach), written from row k of P_out, N_out, phi_out; returns the next free row."""
    Ra, pa, Rb, pb = Rs[a], ps[a], Rs[b], ps[b]
    na, nb = vstart[a + 1] - vstart[a], vstart[b + 1] - vstart[b]
    VA = np.empty((na, 3))
    VB = np.empty((nb, 3))
    ca = np.zeros(3)
    _place(Ra, pa, verts, vstart[a], na, VA)
    _place(Rb, pb, verts, vstart[b], nb, VB)
    for i in range(na):
        for t in range(3):
            ca[t] += VA[i, t]
    ca /= na
    size = 0.0
    for i in range(na):
        size = max(size, np.sqrt((VA[i, 0] - ca[0]) ** 2 + (VA[i, 1] - ca[1]) ** 2 + (VA[i, 2] - ca[2]) ** 2))
    n = np.empty(3)
    axis = np.zeros(3)
    best = -np.inf
    for f in range(fstart[a], fstart[a + 1]):    # faces of a: n.x <= d inside a
        for t in range(3):
            n[t] = Ra[t, 0] * face_n[f, 0] + Ra[t, 1] * face_n[f, 1] + Ra[t, 2] * face_n[f, 2]
        d = face_d[f] + _dot(n, pa)
        s = np.inf
        for j in range(nb):
            s = min(s, n[0] * VB[j, 0] + n[1] * VB[j, 1] + n[2] * VB[j, 2])
        s -= d
        if s > best:
            best = s
            axis[:] = n
    if best > limit:
        return k
    for f in range(fstart[b], fstart[b + 1]):    # faces of b: the axis a -> b is minus b's normal
        for t in range(3):
            n[t] = Rb[t, 0] * face_n[f, 0] + Rb[t, 1] * face_n[f, 1] + Rb[t, 2] * face_n[f, 2]
        d = face_d[f] + _dot(n, pb)
        s = np.inf
        for i in range(na):
            s = min(s, n[0] * VA[i, 0] + n[1] * VA[i, 1] + n[2] * VA[i, 2])
        s -= d
        if s > best:
            best = s
            axis[:] = -n
    if best > limit:
        return k
    # edge pairs forming a face of the Minkowski difference (Gregorius' arc test on the Gauss map); b's
    # edges in the world once: minus their face normals c, d, the arc's normal d x c, a point
    eb0, eb1 = estart[b], estart[b + 1]
    EB = np.empty((eb1 - eb0, 12))               # scalars, not row views (each view is a reference count)
    for g in range(eb0, eb1):
        r = g - eb0
        for i in range(3):
            EB[r, i] = -(Rb[i, 0] * edge_na[g, 0] + Rb[i, 1] * edge_na[g, 1] + Rb[i, 2] * edge_na[g, 2])
            EB[r, 3 + i] = -(Rb[i, 0] * edge_nb[g, 0] + Rb[i, 1] * edge_nb[g, 1] + Rb[i, 2] * edge_nb[g, 2])
            EB[r, 9 + i] = pb[i] + Rb[i, 0] * edge_p[g, 0] + Rb[i, 1] * edge_p[g, 1] + Rb[i, 2] * edge_p[g, 2]
        EB[r, 6] = EB[r, 4] * EB[r, 2] - EB[r, 5] * EB[r, 1]          # d x c
        EB[r, 7] = EB[r, 5] * EB[r, 0] - EB[r, 3] * EB[r, 2]
        EB[r, 8] = EB[r, 3] * EB[r, 1] - EB[r, 4] * EB[r, 0]
    W = np.empty((5, 3))
    a1, a2, ua, qa, u = W[0], W[1], W[2], W[3], W[4]
    tol = EDGE_PREFERENCE * size
    for e in range(estart[a], estart[a + 1]):
        _rot(Ra, edge_na[e], a1)
        _rot(Ra, edge_nb[e], a2)
        _cross(a2, a1, ua)
        _world(Ra, pa, edge_p[e], qa)
        ux, uy, uz = ua[0], ua[1], ua[2]
        for r in range(eb1 - eb0):
            cba = EB[r, 0] * ux + EB[r, 1] * uy + EB[r, 2] * uz
            dba = EB[r, 3] * ux + EB[r, 4] * uy + EB[r, 5] * uz
            if cba * dba >= 0.0:
                continue
            adc = a1[0] * EB[r, 6] + a1[1] * EB[r, 7] + a1[2] * EB[r, 8]
            bdc = a2[0] * EB[r, 6] + a2[1] * EB[r, 7] + a2[2] * EB[r, 8]
            if not (adc * bdc < 0.0 and cba * bdc > 0.0):
                continue
            vx = uy * EB[r, 8] - uz * EB[r, 7]
            vy = uz * EB[r, 6] - ux * EB[r, 8]
            vz = ux * EB[r, 7] - uy * EB[r, 6]
            ln = np.sqrt(vx * vx + vy * vy + vz * vz)
            if ln < 1e-9 * np.sqrt((ux * ux + uy * uy + uz * uz) *
                                   (EB[r, 6] ** 2 + EB[r, 7] ** 2 + EB[r, 8] ** 2)):
                continue                         # parallel edges: a face axis covers them
            vx, vy, vz = vx / ln, vy / ln, vz / ln
            if vx * (qa[0] - ca[0]) + vy * (qa[1] - ca[1]) + vz * (qa[2] - ca[2]) < 0.0:
                vx, vy, vz = -vx, -vy, -vz
            s = vx * (EB[r, 9] - qa[0]) + vy * (EB[r, 10] - qa[1]) + vz * (EB[r, 11] - qa[2])
            if s > best + tol:
                best = s
                axis[0], axis[1], axis[2] = vx, vy, vz
                if best > limit:
                    return k
    # the patch: both support sets along the axis, projected, intersected
    hA, hB = -np.inf, np.inf
    x0, x1, x2 = axis[0], axis[1], axis[2]
    for i in range(na):
        hA = max(hA, x0 * VA[i, 0] + x1 * VA[i, 1] + x2 * VA[i, 2])
    for j in range(nb):
        hB = min(hB, x0 * VB[j, 0] + x1 * VB[j, 1] + x2 * VB[j, 2])
    t1, t2 = np.empty(3), np.empty(3)
    if abs(axis[1]) > 0.9:
        t1[0], t1[1], t1[2] = -axis[1], axis[0], 0.0
    else:
        t1[0], t1[1], t1[2] = axis[2], 0.0, -axis[0]
    t1 /= np.sqrt(_dot(t1, t1))
    _cross(axis, t1, t2)
    UA = np.empty((na, 2))
    UB = np.empty((nb, 2))
    ma = mb = 0
    for i in range(na):
        if x0 * VA[i, 0] + x1 * VA[i, 1] + x2 * VA[i, 2] >= hA - PATCH_TOLERANCE:
            UA[ma, 0] = t1[0] * VA[i, 0] + t1[1] * VA[i, 1] + t1[2] * VA[i, 2]
            UA[ma, 1] = t2[0] * VA[i, 0] + t2[1] * VA[i, 1] + t2[2] * VA[i, 2]
            ma += 1
    for j in range(nb):
        if x0 * VB[j, 0] + x1 * VB[j, 1] + x2 * VB[j, 2] <= hB + PATCH_TOLERANCE:
            UB[mb, 0] = t1[0] * VB[j, 0] + t1[1] * VB[j, 1] + t1[2] * VB[j, 2]
            UB[mb, 1] = t2[0] * VB[j, 0] + t2[1] * VB[j, 1] + t2[2] * VB[j, 2]
            mb += 1
    HA = np.empty((ma + 1, 2))
    HB = np.empty((mb + 1, 2))
    ka = _hull2d(UA, ma, HA)
    kb = _hull2d(UB, mb, HB)
    C = np.empty((2 * (ka + kb) + 4, 2))
    m = _intersect(HA, ka, HB, kb, C)
    if m == 0:                                   # projections that miss (a rounding): the nearest corners' middle
        bi, bj, bd = 0, 0, np.inf
        for i in range(ka):
            for j in range(kb):
                dist = (HA[i, 0] - HB[j, 0]) ** 2 + (HA[i, 1] - HB[j, 1]) ** 2
                if dist < bd:
                    bi, bj, bd = i, j, dist
        C[0, 0], C[0, 1] = 0.5 * (HA[bi, 0] + HB[bj, 0]), 0.5 * (HA[bi, 1] + HB[bj, 1])
        m = 1
    phi = hB - hA
    mid = 0.5 * (hA + hB)
    for r in range(m):
        if m > 3:                                # drop corners on a straight run
            p, q = (r - 1) % m, (r + 1) % m
            ax_, ay_ = C[r, 0] - C[p, 0], C[r, 1] - C[p, 1]
            bx_, by_ = C[q, 0] - C[r, 0], C[q, 1] - C[r, 1]
            la, lb = np.sqrt(ax_ * ax_ + ay_ * ay_), np.sqrt(bx_ * bx_ + by_ * by_)
            if la < 1e-12 or (lb >= 1e-12 and abs(ax_ * by_ - ay_ * bx_) <= TURN_TOLERANCE * la * lb):
                continue
        for i in range(3):
            P_out[k, i] = C[r, 0] * t1[i] + C[r, 1] * t2[i] + mid * axis[i]
            N_out[k, i] = axis[i]
        phi_out[k] = phi
        k += 1
    return k


@jit
def polytope_contacts(pairs, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart,
                      margin, sweep):
    """:func:`polytope_pair` for every row of ``pairs`` (k, 2), each pair's margin grown by
    ``boxes.pair_reach`` of the shapes' sweep rows (what coal's security margin was). Returns
    (sa, sb, point, unit normal a -> b, phi)."""
    cap = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        cap += 2 * (vstart[a + 1] - vstart[a] + vstart[b + 1] - vstart[b]) + 4
    P = np.empty((cap, 3))
    N = np.empty((cap, 3))
    phi = np.empty(cap)
    sa = np.empty(cap, dtype=np.int64)
    sb = np.empty(cap, dtype=np.int64)
    k = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        k0 = k
        k = polytope_pair(a, b, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart,
                          margin + pair_reach(sweep, a, b), P, N, phi, k)
        sa[k0:k] = a
        sb[k0:k] = b
    return sa[:k], sb[:k], P[:k], N[:k], phi[:k]


@jit
def pair_friction(ba, bb, mu, table):
    """Each contact's friction overridden by the scene's pair table where it has one (``table``
    (nb, nb), symmetric, NaN: no override; collision/contacts.py ``_contact_fields``' overrides)."""
    for i in range(mu.size):
        m = table[ba[i], bb[i]]
        if m == m:
            mu[i] = m


@jit
def detect_and_match_polytopes(dof_start, lin, ang, body_radius, h, quaternion, position, shape_body, local_R,
                               local_p, plane_idx, plane_local, aabb_center, aabb_half, margin, finite_idx, static,
                               jointed_keys, nb, cls, half, verts, vstart, radius, plane_row, shape_mu, mu_default,
                               poly, is_poly, mu_table, prev_floats, prev_ints, values, near, sweep_out, reach_out):
    """collision.boxes ``detect_and_match_packed`` with the pairs it leaves to coal taken by
    :func:`polytope_contacts` where both shapes are polytopes (``is_poly``; ``poly``: the
    :func:`polytope_data` arrays) and the scene's pair friction (:func:`pair_friction`), in one call.
    Returns (left, floats, ints); ``left``: a pair neither covers (the buffers then empty)."""
    point_prev, _, _, _, _, _, _, _, _, sa_prev, sb_prev, _ = unpack_contacts(prev_floats, prev_ints)
    sweep = shape_sweep(dof_start, lin, ang, body_radius, shape_body, h)
    reach = shape_reach_of(sweep)
    sweep_out[:, :] = sweep
    reach_out[:] = reach
    Rs, ps, pairs, sa, sb, P, N, phi, rest = detect_kernel(
        quaternion, position, shape_body, local_R, local_p, plane_idx, plane_local, aabb_center, aabb_half, margin,
        reach, sweep, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart, radius, plane_row)
    nrest = 0
    for q in range(rest.size):
        if rest[q]:
            if not (is_poly[pairs[q, 0]] and is_poly[pairs[q, 1]]):
                return True, np.empty(0), np.empty(0, dtype=np.int64)
            nrest += 1
    if nrest:
        sel = np.empty((nrest, 2), dtype=np.int64)
        r = 0
        for q in range(rest.size):
            if rest[q]:
                sel[r, 0], sel[r, 1] = pairs[q, 0], pairs[q, 1]
                r += 1
        qa, qb, qP, qN, qphi = polytope_contacts(sel, Rs, ps, *poly, margin, sweep)
        sa, sb = np.concatenate((sa, qa)), np.concatenate((sb, qb))
        P, N, phi = np.concatenate((P, qP)), np.concatenate((N, qN)), np.concatenate((phi, qphi))
    t1, t2 = tangent_basis_kernel(N)
    ba, bb, mu = contact_fields(shape_body, shape_mu, sa, sb, mu_default)
    pair_friction(ba, bb, mu, mu_table)
    if sa_prev.size == 0 or phi.size == 0:
        match = np.full(phi.size, -1, dtype=np.int64)
        guess = np.full(phi.size, np.nan)
    else:
        match, guess = match_with_values(sa_prev, sb_prev, point_prev, values, sa, sb, P, near)
    floats, ints = pack_contacts(P, N, t1, t2, phi, mu, guess, ba, bb, sa, sb, match)
    return False, floats, ints
