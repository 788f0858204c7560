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
from ..kernels.vec3 import cross3 as _cross, dot3 as _dot
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

#: the edge directions of shape a whose list of b's edges passing the Gauss-map arc's first test
#: :func:`polytope_pair` keeps (a box has 3; past this many, the last slot is reused)
DIRECTIONS = 8

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
def polytope_world(used, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart):
    """The shapes ``used`` (a flag per shape) placed in the world once, for every pair they are in:
    (V, F, E), a row per vertex, face or edge at its index in the :func:`polytope_data` arrays:

    - V (nv, 3): the vertices p + R x;
    - F (nf, 4): the faces' outward unit normals R n and offsets d + (R n).p (n.x <= d inside);
    - E (ne, 12): per edge its two faces' normals R n_a and R n_b, their cross product
      (R n_b) x (R n_a) (the normal of the edge's Gauss-map arc) and its point p + R x_e.

    A shape in several pairs (the glass the fingers hold) is placed once, not once per pair. Each
    shape's rows are taken as a slice and indexed from zero (no negative-index wrap per element)."""
    V = np.empty((verts.shape[0], 3))
    F = np.empty((face_n.shape[0], 4))
    E = np.empty((edge_na.shape[0], 12))
    for s in range(used.size):
        if not used[s]:
            continue
        R, p = Rs[s], ps[s]
        X, Vs = verts[vstart[s]:vstart[s + 1]], V[vstart[s]:vstart[s + 1]]
        for v in range(Vs.shape[0]):
            for t in range(3):
                Vs[v, t] = p[t] + R[t, 0] * X[v, 0] + R[t, 1] * X[v, 1] + R[t, 2] * X[v, 2]
        X, Y, Fs = face_n[fstart[s]:fstart[s + 1]], face_d[fstart[s]:fstart[s + 1]], F[fstart[s]:fstart[s + 1]]
        for f in range(Fs.shape[0]):
            for t in range(3):
                Fs[f, t] = R[t, 0] * X[f, 0] + R[t, 1] * X[f, 1] + R[t, 2] * X[f, 2]
            Fs[f, 3] = Y[f] + (Fs[f, 0] * p[0] + Fs[f, 1] * p[1] + Fs[f, 2] * p[2])
        e0, e1 = estart[s], estart[s + 1]
        X, Y, Z, Es = edge_na[e0:e1], edge_nb[e0:e1], edge_p[e0:e1], E[e0:e1]
        for g in range(Es.shape[0]):
            for t in range(3):
                Es[g, t] = R[t, 0] * X[g, 0] + R[t, 1] * X[g, 1] + R[t, 2] * X[g, 2]
                Es[g, 3 + t] = R[t, 0] * Y[g, 0] + R[t, 1] * Y[g, 1] + R[t, 2] * Y[g, 2]
                Es[g, 9 + t] = p[t] + R[t, 0] * Z[g, 0] + R[t, 1] * Z[g, 1] + R[t, 2] * Z[g, 2]
            Es[g, 6] = Es[g, 4] * Es[g, 2] - Es[g, 5] * Es[g, 1]
            Es[g, 7] = Es[g, 5] * Es[g, 0] - Es[g, 3] * Es[g, 2]
            Es[g, 8] = Es[g, 3] * Es[g, 1] - Es[g, 4] * Es[g, 0]
    return V, F, E


@jit
def polytope_pair(a, b, V, F, E, vstart, fstart, estart, limit, P_out, N_out, phi_out, k):
    """Contacts of shapes a and b (module docstring) within ``limit`` (the margin grown by their
    reach), from the shapes' world placement (:func:`polytope_world`), written from row k of P_out,
    N_out, phi_out; returns the next free row."""
    VA, VB = V[vstart[a]:vstart[a + 1]], V[vstart[b]:vstart[b + 1]]
    FA, FB = F[fstart[a]:fstart[a + 1]], F[fstart[b]:fstart[b + 1]]
    EA, EB = E[estart[a]:estart[a + 1]], E[estart[b]:estart[b + 1]]
    na, nb = VA.shape[0], VB.shape[0]
    ca = np.zeros(3)
    for i in range(na):
        for t in range(3):
            ca[t] += VA[i, t]
    ca /= na
    size = 0.0
    for i in range(na):
        size = max(size, np.sqrt((VA[i, 0] - ca[0]) ** 2 + (VA[i, 1] - ca[1]) ** 2 + (VA[i, 2] - ca[2]) ** 2))
    axis = np.zeros(3)
    best = -np.inf
    for f in range(FA.shape[0]):                 # faces of a: n.x <= d inside a
        n0, n1, n2 = FA[f, 0], FA[f, 1], FA[f, 2]
        s = np.inf
        for j in range(nb):
            s = min(s, n0 * VB[j, 0] + n1 * VB[j, 1] + n2 * VB[j, 2])
        s -= FA[f, 3]
        if s > best:
            best = s
            axis[0], axis[1], axis[2] = n0, n1, n2
    if best > limit:
        return k
    for f in range(FB.shape[0]):                 # faces of b: the axis a -> b is minus b's normal
        n0, n1, n2 = FB[f, 0], FB[f, 1], FB[f, 2]
        s = np.inf
        for i in range(na):
            s = min(s, n0 * VA[i, 0] + n1 * VA[i, 1] + n2 * VA[i, 2])
        s -= FB[f, 3]
        if s > best:
            best = s
            axis[0], axis[1], axis[2] = -n0, -n1, -n2
    if best > limit:
        return k
    # edge pairs forming a face of the Minkowski difference (Gregorius' arc test on the Gauss map): b's
    # arc runs between minus its faces' normals, c = -R n_a and d = -R n_b, d x c its normal (E's
    # cross product: the two signs cancel). The first test, (c.u)(d.u) < 0 for a's arc normal u,
    # depends on u only up to its sign (negation is exact), and parallel edges of a (a box's four per
    # direction) have the same u up to sign: b's edges that pass it are listed once per direction
    # (``DIRECTIONS`` of them kept) and each edge of a runs the other tests on its direction's list.
    tol = EDGE_PREFERENCE * size
    neb = EB.shape[0]
    dirs = np.empty((DIRECTIONS, 3))
    count = np.zeros(DIRECTIONS, dtype=np.int64)
    idx = np.empty((DIRECTIONS, neb), dtype=np.int64)
    cns = np.empty((DIRECTIONS, neb))
    nd = 0
    for e in range(EA.shape[0]):
        ux, uy, uz = EA[e, 6], EA[e, 7], EA[e, 8]
        sign = 1.0
        m = -1
        for t in range(nd):
            if dirs[t, 0] == ux and dirs[t, 1] == uy and dirs[t, 2] == uz:
                m = t
                break
            if dirs[t, 0] == -ux and dirs[t, 1] == -uy and dirs[t, 2] == -uz:
                m, sign = t, -1.0
                break
        if m < 0:                                # a new direction: b's edges whose arc u's circle crosses
            m = nd if nd < DIRECTIONS else DIRECTIONS - 1
            nd = min(nd + 1, DIRECTIONS)
            dirs[m, 0], dirs[m, 1], dirs[m, 2] = ux, uy, uz
            c = 0
            for r in range(neb):
                cn = EB[r, 0] * ux + EB[r, 1] * uy + EB[r, 2] * uz
                dn = EB[r, 3] * ux + EB[r, 4] * uy + EB[r, 5] * uz
                if not cn * dn >= 0.0:              # (a NaN passes, as in the tests below)
                    idx[m, c] = r
                    cns[m, c] = cn
                    c += 1
            count[m] = c
        for t in range(count[m]):
            r = idx[m, t]
            cn = sign * cns[m, t]
            adc = EA[e, 0] * EB[r, 6] + EA[e, 1] * EB[r, 7] + EA[e, 2] * EB[r, 8]
            bdc = EA[e, 3] * EB[r, 6] + EA[e, 4] * EB[r, 7] + EA[e, 5] * EB[r, 8]
            if not (adc * bdc < 0.0 and -cn * bdc > 0.0):
                continue
            vx = uy * EB[r, 8] - uz * EB[r, 7]
            vy = uz * EB[r, 6] - ux * EB[r, 8]
            vz = ux * EB[r, 7] - uy * EB[r, 6]
            ln = np.sqrt(vx * vx + vy * vy + vz * vz)
            if ln < 1e-9 * np.sqrt((ux * ux + uy * uy + uz * uz) *
                                   (EB[r, 6] ** 2 + EB[r, 7] ** 2 + EB[r, 8] ** 2)):
                continue                         # parallel edges: a face axis covers them
            vx, vy, vz = vx / ln, vy / ln, vz / ln
            qx, qy, qz = EA[e, 9], EA[e, 10], EA[e, 11]
            if vx * (qx - ca[0]) + vy * (qy - ca[1]) + vz * (qz - ca[2]) < 0.0:
                vx, vy, vz = -vx, -vy, -vz
            s = vx * (EB[r, 9] - qx) + vy * (EB[r, 10] - qy) + vz * (EB[r, 11] - qz)
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
    ``boxes.pair_reach`` of the shapes' sweep rows (what coal's security margin was); the shapes
    in the pairs are placed in the world once (:func:`polytope_world`), however many pairs each is
    in. Returns (sa, sb, point, unit normal a -> b, phi)."""
    cap = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        cap += 2 * (vstart[a + 1] - vstart[a] + vstart[b + 1] - vstart[b]) + 4
    P = np.empty((cap, 3))
    N = np.empty((cap, 3))
    phi = np.empty(cap)
    sa = np.empty(cap, dtype=np.int64)
    sb = np.empty(cap, dtype=np.int64)
    used = np.zeros(vstart.size - 1, dtype=np.bool_)
    for q in range(pairs.shape[0]):
        used[pairs[q, 0]] = used[pairs[q, 1]] = True
    V, F, E = polytope_world(used, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart)
    k = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        k0 = k
        k = polytope_pair(a, b, V, F, E, vstart, fstart, estart, margin + pair_reach(sweep, a, b), P, N, phi, k)
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
