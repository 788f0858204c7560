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
from ..mechanics.kernels import shape_sweep
from ..mechanics.rows import tangent_basis_into
from .boxes.matching import match_with_values_into
from .boxes.narrow_phase import contact_fields_into, detect_kernel
from .boxes.packed import PACKED_FLOAT_WIDTH, PACKED_INTS, unpack_contacts
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

#: the rounding allowance of :func:`polytope_pair`'s bounds on a face's separation, relative to the
#: operands' size (the bounding sphere's centre, radius and the face's offset): far above the few
#: ulps that a dot product or a centroid of up to millions of vertices can be off by
BOUND_TOLERANCE = 1e-9

#: the angle (rad) by which an edge pair's axis can lie off the Gauss-map arcs and still pass
#: :func:`polytope_pair`'s floating-point arc tests: a sign read wrongly needs a dot within a few ulps
#: (~7e-16) of zero, and the parallel cut keeps the two great circles at least 1e-9 apart, so the axis
#: lies within ~7e-16 / 1e-9 = 7e-7 of both arcs; three times that (:func:`_edges_cannot_win`)
ARC_SLACK = 2e-6

#: a corner whose turn angle is below this is dropped (collision/contacts.py ``_polygon_corners``)
TURN_TOLERANCE = 1e-6


def polytope_data(shapes) -> tuple:
    """Flattened hull data of ``shapes`` (a list; None for a shape that is no polytope): each
    shape's local vertices, given as an (m, 3) array. Returns (verts, vstart, face_n, face_d, fstart,
    edge_f, edge_p, estart): hull vertices; outward unit face normals and offsets (n.x = d on the
    face; coplanar Qhull facets merged); per hull edge (between two distinct faces) its two faces'
    indices among its shape's faces (edge_f (ne, 2)) and a point on it."""
    from scipy.spatial import ConvexHull
    V, F, D, EF, EP = [], [], [], [], []
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
                        EF.append((face_of[t], face_of[u]))
                        EP.append(0.5 * (X[edge[0]] + X[edge[1]]))
        vs.append(sum(len(x) for x in V))
        fs.append(sum(len(x) for x in F))
        es.append(len(EP))
    cat = (lambda L: np.ascontiguousarray(np.vstack(L), dtype=np.float64) if L else np.zeros((0, 3)))
    i8 = np.int64
    return (cat(V), np.array(vs, dtype=i8), cat(F), np.ascontiguousarray(np.concatenate(D) if D else np.zeros(0)),
            np.array(fs, dtype=i8), np.array(EF, dtype=i8).reshape(-1, 2), cat(EP), np.array(es, dtype=i8))


@jit
def _hull2d(U, m, out, H, idx):
    """Convex hull of the 2-D points U[:m] (Andrew's monotone chain), counter-clockwise, collinear
    and repeated points dropped, into ``out``; returns its size (1: a point, 2: a segment). H (at
    least 2 m + 1 rows) and idx (m) are work arrays."""
    for i in range(m):
        idx[i] = i
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
def _intersect(HA, ka, HB, kb, out, buf):
    """Corners of the intersection of two convex 2-D hulls (points, segments or CCW polygons), into
    out (at least 2 (ka + kb) + 4 rows); returns their count (0: the hulls miss each other). buf: a
    work array of out's shape."""
    if ka == 1 or kb == 1:
        src = HA if ka == 1 else HB
        out[0, 0], out[0, 1] = src[0, 0], src[0, 1]
        return 1
    if ka >= 3 and kb >= 3:
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
def polytope_world(used, Rs, ps, verts, vstart, face_n, face_d, fstart, V, F, C, rad):
    """The shapes ``used`` (a flag per shape) placed in the world once, for every pair they are in,
    into (V, F, C, rad) (the rows of the shapes used written), a row per vertex or face at its index in
    the :func:`polytope_data` arrays, a row per shape:

    - V (nv, 3): the vertices p + R x;
    - F (nf, 4): the faces' outward unit normals R n and offsets d + (R n).p (n.x <= d inside);
    - C (ns, 3), rad (ns,): each shape's vertex centroid and the largest distance of a vertex from it
      (the bounding sphere of :func:`polytope_pair`'s certified bounds; the centroid and radius are
      also its shape a's centre and size).

    A shape in several pairs (the glass the fingers hold) is placed once, not once per pair. Each
    shape's rows are taken as a slice and indexed from zero (no negative-index wrap per element).
    Edges are placed on demand (:func:`_place_arc`, :func:`_place_point`): a pair reads only the
    edges of b that pass the Gauss-map arc's first test."""
    for s in range(used.size):
        if not used[s]:
            continue
        R, p = Rs[s], ps[s]
        C[s, 0] = C[s, 1] = C[s, 2] = rad[s] = 0.0
        X, Vs = verts[vstart[s]:vstart[s + 1]], V[vstart[s]:vstart[s + 1]]
        for v in range(Vs.shape[0]):
            for t in range(3):
                Vs[v, t] = p[t] + R[t, 0] * X[v, 0] + R[t, 1] * X[v, 1] + R[t, 2] * X[v, 2]
        X, Y, Fs = face_n[fstart[s]:fstart[s + 1]], face_d[fstart[s]:fstart[s + 1]], F[fstart[s]:fstart[s + 1]]
        for f in range(Fs.shape[0]):
            for t in range(3):
                Fs[f, t] = R[t, 0] * X[f, 0] + R[t, 1] * X[f, 1] + R[t, 2] * X[f, 2]
            Fs[f, 3] = Y[f] + (Fs[f, 0] * p[0] + Fs[f, 1] * p[1] + Fs[f, 2] * p[2])
        n = Vs.shape[0]
        if n == 0:
            continue
        c = C[s]
        for v in range(n):
            for t in range(3):
                c[t] += Vs[v, t]
        c /= n
        r2 = 0.0                                 # one square root of the largest square: the same bits as
        for v in range(n):                       # the largest root (IEEE sqrt is monotone, correctly rounded)
            r2 = max(r2, (Vs[v, 0] - c[0]) ** 2 + (Vs[v, 1] - c[1]) ** 2 + (Vs[v, 2] - c[2]) ** 2)
        rad[s] = np.sqrt(r2)


@jit
def _place_arc(g, Fs, ef, Eu, placed):
    """Edge g's Gauss-map arc placed in the world (once per call; ``placed`` flags it): Eu[g, :3] the
    arc's normal (R n_b) x (R n_a) of its two faces' world normals (its shape's rows of F, ``Fs``;
    ``ef`` the two faces' indices in them), Eu[g, 3] that normal's squared length."""
    A, B = Fs[ef[0]], Fs[ef[1]]
    Eu[g, 0] = B[1] * A[2] - B[2] * A[1]
    Eu[g, 1] = B[2] * A[0] - B[0] * A[2]
    Eu[g, 2] = B[0] * A[1] - B[1] * A[0]
    Eu[g, 3] = Eu[g, 0] ** 2 + Eu[g, 1] ** 2 + Eu[g, 2] ** 2
    placed[g] = True


@jit
def _place_point(g, R, p, edge_p, Ep, placed):
    """Edge g's point p + R x_e in the world (once per call; ``placed`` flags it)."""
    Z = edge_p[g]
    for t in range(3):
        Ep[g, t] = p[t] + R[t, 0] * Z[0] + R[t, 1] * Z[1] + R[t, 2] * Z[2]
    placed[g] = True


@jit
def _face_support(n0, n1, n2, d, X):
    """min over the rows x of X of n.x, less d: the separation of X from the face (n, d)."""
    s = np.inf
    for j in range(X.shape[0]):
        s = min(s, n0 * X[j, 0] + n1 * X[j, 1] + n2 * X[j, 2])
    return s - d


@jit
def _edges_cannot_win(win, best, tol, VA, VB, FA, FB, ca, ra, rb):
    """Whether no edge pair of :func:`polytope_pair`'s edge stage can replace the face axis ``win``
    (f: face f of a; -2 - f: face f of b) of separation ``best`` < 0 (the shapes overlap): then the
    stage changes nothing and is skipped.

    A witness z in both shapes: the other shape's deepest vertex along the winning face's normal,
    strictly inside the face's own shape (every face's n.z - d below minus :data:`BOUND_TOLERANCE`
    times its operands' size). Along any unit axis v the support gap min_B v.x - max_A v.x is at
    most v.z - v.z = 0. An edge pair passing the arc tests has its axis within :data:`ARC_SLACK`
    (delta) of both edges' arcs, so its edges are supports of their shapes along v to within
    delta times the shapes' diameters (2 ra, 2 rb: the bounding spheres about the centroids): its
    separation is at most 2 delta (ra + rb), and the stage takes it only above best + tol. Its axis
    is oriented by the sign of v.(q - ca) (q on a's edge), which is a's support height above its
    centroid, at least a's inradius about ca less 2 delta ra: the inradius must exceed that. Both
    bounds carry a rounding allowance of BOUND_TOLERANCE times the operands' size (the edge stage's
    own); NaN anywhere gives False."""
    if win == -1 or not best < 0.0:
        return False
    scale = abs(ca[0]) + abs(ca[1]) + abs(ca[2]) + ra + rb
    room = 2.0 * ARC_SLACK * (ra + rb) + BOUND_TOLERANCE * scale
    if not best + tol > room:
        return False
    rho = np.inf                                 # a's inradius about its vertex centroid
    for g in range(FA.shape[0]):
        rho = min(rho, FA[g, 3] - (FA[g, 0] * ca[0] + FA[g, 1] * ca[1] + FA[g, 2] * ca[2]))
    if not rho > 2.0 * ARC_SLACK * ra + BOUND_TOLERANCE * (scale + abs(rho)):
        return False
    if win >= 0:                                 # z: b's deepest vertex below a's face, inside a
        n, X, own = FA[win], VB, FA
    else:                                        # z: a's deepest vertex below b's face, inside b
        n, X, own = FB[-2 - win], VA, FB
    j, low = 0, np.inf
    for i in range(X.shape[0]):
        h = n[0] * X[i, 0] + n[1] * X[i, 1] + n[2] * X[i, 2]
        if h < low:
            j, low = i, h
    z0, z1, z2 = X[j, 0], X[j, 1], X[j, 2]
    zs = abs(z0) + abs(z1) + abs(z2)
    for g in range(own.shape[0]):
        if not own[g, 0] * z0 + own[g, 1] * z1 + own[g, 2] * z2 - own[g, 3] < -BOUND_TOLERANCE * (zs + abs(own[g, 3])):
            return False
    return True


@jit
def polytope_pair(a, b, V, F, C, rad, Rs, ps, vstart, fstart, estart, edge_f, edge_p, Eu, Ep, placed_u, placed_p, work,
                  patch, limit, P_out, N_out, phi_out, k):
    """Contacts of shapes a and b (module docstring) within ``limit`` (the margin grown by their
    reach), from the shapes' world placement (:func:`polytope_world`; edges placed on demand into
    Eu, Ep, flagged in ``placed_u``, ``placed_p``), written from row k of P_out, N_out, phi_out; returns the next free row.
    ``work``, ``patch``: :func:`_call_work`'s arrays.

    Every face's separation min_j n.x_j - d (x_j the other shape's vertices, centroid c, radius r)
    lies within [n.c - r - d, n.c - d] (the minimum is at most the mean, and at least the centre's
    height less the radius); with a rounding allowance of :data:`BOUND_TOLERANCE` times the operands'
    size, a face whose upper bound is at most the best separation so far cannot become the axis and is
    not computed, and a face whose lower bound exceeds ``limit`` ends the pair (no contact) as its
    full separation would. The faces of a are taken with the one of highest upper bound first (its
    separation seeds the skip); the axis is the first face in the original order of largest
    separation, as without the bounds, so the contacts are the same bits."""
    VA, VB = V[vstart[a]:vstart[a + 1]], V[vstart[b]:vstart[b + 1]]
    FA, FB = F[fstart[a]:fstart[a + 1]], F[fstart[b]:fstart[b + 1]]
    EFA, EFB = edge_f[estart[a]:estart[a + 1]], edge_f[estart[b]:estart[b + 1]]
    dirs, count, idx, cns, fdot, ub = work
    na, nb = VA.shape[0], VB.shape[0]
    ca, size = C[a], rad[a]
    cb, rb = C[b], rad[b]
    ax0 = ax1 = ax2 = 0.0
    best = -np.inf
    win = -1                                     # the face axis: f of a, -2 - f of b
    # faces of a (n.x <= d inside a) against b's vertices: bounds from b's sphere, the highest first
    nfa = FA.shape[0]
    scale = abs(cb[0]) + abs(cb[1]) + abs(cb[2]) + rb
    top, hi = 0, -np.inf
    for f in range(nfa):
        c = FA[f, 0] * cb[0] + FA[f, 1] * cb[1] + FA[f, 2] * cb[2] - FA[f, 3]
        eps = BOUND_TOLERANCE * (scale + abs(FA[f, 3]))
        if c - rb - eps > limit:
            return k
        ub[f] = c + eps
        if ub[f] > hi:
            top, hi = f, ub[f]
    seed = _face_support(FA[top, 0], FA[top, 1], FA[top, 2], FA[top, 3], VB)
    for f in range(nfa):
        if f == top:
            s = seed
        elif ub[f] < seed:
            continue
        else:
            s = _face_support(FA[f, 0], FA[f, 1], FA[f, 2], FA[f, 3], VB)
        if s > best:
            best, win = s, f
            ax0, ax1, ax2 = FA[f, 0], FA[f, 1], FA[f, 2]
    if best > limit:
        return k
    # faces of b: the axis a -> b is minus b's normal; bounds from a's sphere
    scale = abs(ca[0]) + abs(ca[1]) + abs(ca[2]) + size
    for f in range(FB.shape[0]):
        n0, n1, n2 = FB[f, 0], FB[f, 1], FB[f, 2]
        c = n0 * ca[0] + n1 * ca[1] + n2 * ca[2] - FB[f, 3]
        eps = BOUND_TOLERANCE * (scale + abs(FB[f, 3]))
        if c - size - eps > limit:
            return k
        if c + eps <= best:
            continue
        s = _face_support(n0, n1, n2, FB[f, 3], VA)
        if s > best:
            best, win = s, -2 - f
            ax0, ax1, ax2 = -n0, -n1, -n2
    if best > limit:
        return k
    # edge pairs forming a face of the Minkowski difference (Gregorius' arc test on the Gauss map): b's
    # arc runs between minus its faces' normals, c = -R n_a and d = -R n_b, d x c its normal (Eu: the
    # two signs cancel). The first test, (c.u)(d.u) < 0 for a's arc normal u, depends on u only up to
    # its sign (negation is exact), and parallel edges of a (a box's four per direction) have the same u
    # up to sign: b's edges that pass it are listed once per direction (``DIRECTIONS`` of them kept),
    # from the dots of b's face normals with u (fdot: a face per dot, not two per edge), and each edge
    # of a runs the other tests on its direction's list; b's arcs are placed only once listed, its
    # edges' points once they pass the arc tests.
    tol = EDGE_PREFERENCE * size
    # overlapping shapes with a common point certified: no edge pair can win (_edges_cannot_win)
    ne_a = 0 if _edges_cannot_win(win, best, tol, VA, VB, FA, FB, ca, size, rb) else EFA.shape[0]
    neb, nfb = EFB.shape[0], FB.shape[0]
    Ra, pa, Rb, pb = Rs[a], ps[a], Rs[b], ps[b]
    ea0, eb0 = estart[a], estart[b]
    nd = 0
    for e in range(ne_a):
        ge = ea0 + e
        if not placed_u[ge]:
            _place_arc(ge, FA, EFA[e], Eu, placed_u)
        if not placed_p[ge]:
            _place_point(ge, Ra, pa, edge_p, Ep, placed_p)
        ux, uy, uz = Eu[ge, 0], Eu[ge, 1], Eu[ge, 2]
        uu = ux * ux + uy * uy + uz * uz
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
            for f in range(nfb):
                fdot[f] = FB[f, 0] * ux + FB[f, 1] * uy + FB[f, 2] * uz
            c = 0
            for r in range(neb):
                cn = fdot[EFB[r, 0]]
                dn = fdot[EFB[r, 1]]
                if not cn * dn >= 0.0:              # (a NaN passes, as in the tests below)
                    idx[m, c] = r
                    cns[m, c] = cn
                    c += 1
                    if not placed_u[eb0 + r]:
                        _place_arc(eb0 + r, FB, EFB[r], Eu, placed_u)
            count[m] = c
        NA, NB = FA[EFA[e, 0]], FA[EFA[e, 1]]
        qx, qy, qz = Ep[ge, 0], Ep[ge, 1], Ep[ge, 2]
        for t in range(count[m]):
            r = idx[m, t]
            gr = eb0 + r
            cn = sign * cns[m, t]
            w0, w1, w2 = Eu[gr, 0], Eu[gr, 1], Eu[gr, 2]
            adc = NA[0] * w0 + NA[1] * w1 + NA[2] * w2
            bdc = NB[0] * w0 + NB[1] * w1 + NB[2] * w2
            if not (adc * bdc < 0.0 and -cn * bdc > 0.0):
                continue
            vx = uy * w2 - uz * w1
            vy = uz * w0 - ux * w2
            vz = ux * w1 - uy * w0
            ln = np.sqrt(vx * vx + vy * vy + vz * vz)
            X = uu * Eu[gr, 3]
            # parallel edges (a face axis covers them): ln < 1e-9 sqrt(|u|^2 |w|^2), its square root
            # taken only where ln < 1e-9 max(1, X) (sqrt(X) <= max(1, X), and rounding keeps the order)
            if ln < 1e-9 * max(1.0, X) and ln < 1e-9 * np.sqrt(X):
                continue
            if not placed_p[gr]:
                _place_point(gr, Rb, pb, edge_p, Ep, placed_p)
            # before normalising: the raw axis's orientation o and separation g (both ln times the
            # normalised ones, up to rounding far below BOUND_TOLERANCE of their terms' size); an axis
            # whose orientation's sign is certain and whose separation certainly cannot exceed
            # best + tol is skipped (a NaN skips nothing), the others are computed as before
            ox, oy, oz = qx - ca[0], qy - ca[1], qz - ca[2]
            dx, dy, dz = Ep[gr, 0] - qx, Ep[gr, 1] - qy, Ep[gr, 2] - qz
            o = vx * ox + vy * oy + vz * oz
            g = vx * dx + vy * dy + vz * dz
            if o < 0.0:
                g = -g
            T = best + tol
            if (abs(o) > BOUND_TOLERANCE * (abs(vx * ox) + abs(vy * oy) + abs(vz * oz)) and
                    g + BOUND_TOLERANCE * (abs(vx * dx) + abs(vy * dy) + abs(vz * dz)) < (T - BOUND_TOLERANCE * abs(T)) * ln):
                continue
            vx, vy, vz = vx / ln, vy / ln, vz / ln
            if vx * ox + vy * oy + vz * oz < 0.0:
                vx, vy, vz = -vx, -vy, -vz
            s = vx * dx + vy * dy + vz * dz
            if s > best + tol:
                best = s
                ax0, ax1, ax2 = vx, vy, vz
                if best > limit:
                    return k
    # the patch: both support sets along the axis, projected, intersected
    hA, hB = -np.inf, np.inf
    x0, x1, x2 = ax0, ax1, ax2
    for i in range(na):
        hA = max(hA, x0 * VA[i, 0] + x1 * VA[i, 1] + x2 * VA[i, 2])
    for j in range(nb):
        hB = min(hB, x0 * VB[j, 0] + x1 * VB[j, 1] + x2 * VB[j, 2])
    t1, t2, axis, UA, UB, HA, HB, C, H, hidx, buf = patch
    axis[0], axis[1], axis[2] = ax0, ax1, ax2
    if abs(axis[1]) > 0.9:
        t1[0], t1[1], t1[2] = -axis[1], axis[0], 0.0
    else:
        t1[0], t1[1], t1[2] = axis[2], 0.0, -axis[0]
    t1 /= np.sqrt(_dot(t1, t1))
    _cross(axis, t1, t2)
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
    ka = _hull2d(UA, ma, HA, H, hidx)
    kb = _hull2d(UB, mb, HB, H, hidx)
    m = _intersect(HA, ka, HB, kb, C, buf)
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
def _call_work(vstart, fstart, estart):
    """A :func:`polytope_contacts` call's work arrays, carved from one float and one int buffer (two
    allocations, not 25): the placement (V, F, C, rad: :func:`polytope_world`), the edges placed on
    demand (Eu, Ep and their flags, zeroed), the flags of the shapes used (zeroed), and
    :func:`polytope_pair`'s ``work`` (the edge directions of a and, per direction, b's edges that pass
    the arc's first test with their c.u (``DIRECTIONS`` rows), the dots of b's face normals with a
    direction, the faces of a's upper bounds; sized for the largest shape) and ``patch`` (tangents,
    axis, projected support sets, their hulls, the hulls' intersection, :func:`_hull2d`'s and
    :func:`_intersect`'s work arrays)."""
    ns = vstart.size - 1
    nvt, nft, net = vstart[ns], fstart[ns], estart[ns]
    ne = nf = nv = 0
    for s in range(ns):
        ne = max(ne, estart[s + 1] - estart[s])
        nf = max(nf, fstart[s + 1] - fstart[s])
        nv = max(nv, vstart[s + 1] - vstart[s])
    sizes = np.array([3 * nvt, 4 * nft, 3 * ns, ns, 4 * net, 3 * net, 3 * DIRECTIONS, DIRECTIONS * ne, nf, nf, 3, 3, 3,
                      2 * nv, 2 * nv, 2 * nv + 2, 2 * nv + 2, 8 * nv + 8, 4 * nv + 2, 8 * nv + 8])
    o = np.zeros(sizes.size + 1, dtype=np.int64)
    for t in range(sizes.size):
        o[t + 1] = o[t] + sizes[t]
    wf = np.empty(o[-1])
    isz = 2 * net + ns
    wi = np.empty(isz + DIRECTIONS + DIRECTIONS * ne + nv, dtype=np.int64)
    wi[:isz] = 0
    V, F = wf[o[0]:o[1]].reshape((nvt, 3)), wf[o[1]:o[2]].reshape((nft, 4))
    C, rad = wf[o[2]:o[3]].reshape((ns, 3)), wf[o[3]:o[4]]
    Eu, Ep = wf[o[4]:o[5]].reshape((net, 4)), wf[o[5]:o[6]].reshape((net, 3))
    placed_u, placed_p, used = wi[:net], wi[net:2 * net], wi[2 * net:isz]
    count = wi[isz:isz + DIRECTIONS]
    idx = wi[isz + DIRECTIONS:isz + DIRECTIONS + DIRECTIONS * ne].reshape((DIRECTIONS, ne))
    hidx = wi[isz + DIRECTIONS + DIRECTIONS * ne:]
    work = (wf[o[6]:o[7]].reshape((DIRECTIONS, 3)), count, idx, wf[o[7]:o[8]].reshape((DIRECTIONS, ne)),
            wf[o[8]:o[9]], wf[o[9]:o[10]])
    patch = (wf[o[10]:o[11]], wf[o[11]:o[12]], wf[o[12]:o[13]], wf[o[13]:o[14]].reshape((nv, 2)),
             wf[o[14]:o[15]].reshape((nv, 2)), wf[o[15]:o[16]].reshape((nv + 1, 2)),
             wf[o[16]:o[17]].reshape((nv + 1, 2)), wf[o[17]:o[18]].reshape((4 * nv + 4, 2)),
             wf[o[18]:o[19]].reshape((2 * nv + 1, 2)), hidx, wf[o[19]:o[20]].reshape((4 * nv + 4, 2)))
    return V, F, C, rad, Eu, Ep, placed_u, placed_p, used, work, patch


@jit
def polytope_capacity(pairs, vstart):
    """The most contacts :func:`polytope_contacts` can give for ``pairs``: 2 (n_a + n_b) + 4 a pair."""
    cap = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        cap += 2 * (vstart[a + 1] - vstart[a] + vstart[b + 1] - vstart[b]) + 4
    return cap


@jit
def polytope_contacts(pairs, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_f, edge_p, estart, margin, sweep):
    """:func:`polytope_pair` for every row of ``pairs`` (k, 2), each pair's margin grown by
    ``boxes.pair_reach`` of the shapes' sweep rows (what coal's security margin was); the shapes
    in the pairs are placed in the world once (:func:`polytope_world`), however many pairs each is
    in, each edge at most once (on demand). Returns (sa, sb, point, unit normal a -> b, phi)."""
    cap = polytope_capacity(pairs, vstart)
    P = np.empty((cap, 3))
    N = np.empty((cap, 3))
    phi = np.empty(cap)
    sa = np.empty(cap, dtype=np.int64)
    sb = np.empty(cap, dtype=np.int64)
    k = polytope_contacts_into(pairs, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_f, edge_p, estart, margin,
                               sweep, sa, sb, P, N, phi)
    return sa[:k], sb[:k], P[:k], N[:k], phi[:k]


@jit
def polytope_contacts_into(pairs, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_f, edge_p, estart, margin, sweep,
                           sa, sb, P, N, phi):
    """:func:`polytope_contacts` written from row 0 of sa, sb, P, N, phi (at least
    :func:`polytope_capacity` rows); returns the number of contacts."""
    V, F, C, rad, Eu, Ep, placed_u, placed_p, used, work, patch = _call_work(vstart, fstart, estart)
    for q in range(pairs.shape[0]):
        used[pairs[q, 0]] = used[pairs[q, 1]] = True
    polytope_world(used, Rs, ps, verts, vstart, face_n, face_d, fstart, V, F, C, rad)
    k = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        k0 = k
        k = polytope_pair(a, b, V, F, C, rad, Rs, ps, vstart, fstart, estart, edge_f, edge_p, Eu, Ep, placed_u, placed_p,
                          work, patch, margin + pair_reach(sweep, a, b), P, N, phi, k)
        sa[k0:k] = a
        sb[k0:k] = b
    return k


@jit
def pair_friction(ba, bb, mu, table):
    """Each contact's friction overridden by the scene's pair table where it has one (``table``
    (nb, nb), symmetric, NaN: no override; collision/contacts.py ``_contact_fields``' overrides)."""
    for i in range(mu.size):
        m = table[ba[i], bb[i]]
        if m == m:
            mu[i] = m


#: the constant arrays of :func:`detect_and_match_polytopes`, in the order :func:`bundle_constants` packs
#: them into one float buffer and one int buffer (the scene's shapes, fixed once its world is built;
#: ``sweep`` and ``reach``: the rows the call writes, views into the float buffer)
CONST_FLOATS = ("body_radius", "local_R", "local_p", "plane_local", "aabb_center", "aabb_half", "half", "verts",
                "radius", "shape_mu", "mu_default", "mu_table", "poly_verts", "face_n", "face_d", "edge_p", "sweep",
                "reach")
CONST_INTS = ("dof_start", "shape_body", "plane_idx", "finite_idx", "static", "jointed_keys", "nb", "cls", "vstart",
              "plane_row", "is_poly", "poly_vstart", "fstart", "edge_f", "estart")


def bundle_constants(arrays: dict) -> tuple:
    """(cf, ci): the arrays of :data:`CONST_FLOATS` (float64) and :data:`CONST_INTS` (int64; flags as
    0/1, a scalar as one element) of ``arrays`` (by name) in one float and one int buffer, ci led by a
    header of 4 integers per array (offset, up to three dimensions). The call unboxes two arrays for
    them instead of 31 (numba's dispatch costs a type check and an unboxing per array argument)."""
    f = [np.ascontiguousarray(arrays[n], dtype=np.float64) for n in CONST_FLOATS]
    g = [np.ascontiguousarray(arrays[n], dtype=np.int64) for n in CONST_INTS]
    head = 4 * (len(f) + len(g))
    ci = np.zeros(head + sum(x.size for x in g), dtype=np.int64)
    cf = np.zeros(sum(x.size for x in f))
    o = 0
    for j, x in enumerate(f):
        ci[4 * j] = o
        ci[4 * j + 1:4 * j + 1 + x.ndim] = x.shape
        cf[o:o + x.size] = x.ravel()
        o += x.size
    o = head
    for j, x in enumerate(g):
        r = 4 * (len(f) + j)
        ci[r] = o
        ci[r + 1:r + 1 + x.ndim] = x.shape
        ci[o:o + x.size] = x.ravel()
        o += x.size
    return cf, ci


@jit
def _f1(cf, ci, j):
    o = ci[4 * j]
    return cf[o:o + ci[4 * j + 1]]


@jit
def _f2(cf, ci, j):
    o, n, m = ci[4 * j], ci[4 * j + 1], ci[4 * j + 2]
    return cf[o:o + n * m].reshape((n, m))


@jit
def _f3(cf, ci, j):
    o, n, m, l = ci[4 * j], ci[4 * j + 1], ci[4 * j + 2], ci[4 * j + 3]
    return cf[o:o + n * m * l].reshape((n, m, l))


@jit
def _i1(ci, j):
    r = 4 * (len(CONST_FLOATS) + j)
    return ci[ci[r]:ci[r] + ci[r + 1]]


@jit
def _i2(ci, j):
    r = 4 * (len(CONST_FLOATS) + j)
    o, n, m = ci[r], ci[r + 1], ci[r + 2]
    return ci[o:o + n * m].reshape((n, m))


@jit
def detect_and_match_polytopes(lin, ang, h, quaternion, position, margin, prev_floats, prev_ints, values, near, cf, ci):
    """collision.boxes ``detect_and_match_packed`` with the pairs it leaves to coal taken by
    :func:`polytope_contacts` where both shapes are polytopes (``is_poly``; ``poly``: the
    :func:`polytope_data` arrays) and the scene's pair friction (:func:`pair_friction`), in one call;
    the scene's constant arrays bundled in cf, ci (:func:`bundle_constants`), each shape's sweep and
    reach written into its ``sweep`` and ``reach`` rows. Returns (left, floats, ints); ``left``: a pair
    neither covers (the buffers then empty)."""
    # CONST_FLOATS, CONST_INTS in order
    body_radius, local_R, local_p, plane_local = _f1(cf, ci, 0), _f3(cf, ci, 1), _f2(cf, ci, 2), _f2(cf, ci, 3)
    aabb_center, aabb_half, half, verts = _f2(cf, ci, 4), _f2(cf, ci, 5), _f2(cf, ci, 6), _f2(cf, ci, 7)
    radius, shape_mu, mu_default, mu_table = _f1(cf, ci, 8), _f1(cf, ci, 9), _f1(cf, ci, 10)[0], _f2(cf, ci, 11)
    poly_verts, face_n, face_d, edge_p = _f2(cf, ci, 12), _f2(cf, ci, 13), _f1(cf, ci, 14), _f2(cf, ci, 15)
    sweep_out, reach_out = _f2(cf, ci, 16), _f1(cf, ci, 17)
    dof_start, shape_body, plane_idx, finite_idx = _i1(ci, 0), _i1(ci, 1), _i1(ci, 2), _i1(ci, 3)
    static, jointed_keys, nb, cls, vstart = _i1(ci, 4) != 0, _i1(ci, 5), _i1(ci, 6)[0], _i1(ci, 7), _i1(ci, 8)
    plane_row, is_poly, poly_vstart, fstart = _i1(ci, 9), _i1(ci, 10) != 0, _i1(ci, 11), _i1(ci, 12)
    edge_f, estart = _i2(ci, 13), _i1(ci, 14)
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
    kb = phi.size
    kq = 0
    if nrest:
        sel = np.empty((nrest, 2), dtype=np.int64)
        r = 0
        for q in range(rest.size):
            if rest[q]:
                sel[r, 0], sel[r, 1] = pairs[q, 0], pairs[q, 1]
                r += 1
        cap = polytope_capacity(sel, poly_vstart)
        qf = np.empty(7 * cap)      # the polytope pairs' point, normal, phi; their shapes in qi
        qi = np.empty(2 * cap, dtype=np.int64)
        qP, qN, qphi = qf[:3 * cap].reshape((cap, 3)), qf[3 * cap:6 * cap].reshape((cap, 3)), qf[6 * cap:]
        qa, qb = qi[:cap], qi[cap:]
        kq = polytope_contacts_into(sel, Rs, ps, poly_verts, poly_vstart, face_n, face_d, fstart, edge_f, edge_p,
                                    estart, margin, sweep, qa, qb, qP, qN, qphi)
    # the box pairs' contacts, then the polytope pairs', straight into pack_contacts' layout (same bits as
    # concatenating them and packing: the fields are copied, then computed in place)
    k = kb + kq
    floats = np.empty(PACKED_FLOAT_WIDTH * k)
    ints = np.empty(len(PACKED_INTS) * k, dtype=np.int64)
    Po, No, t1, t2, phio, mu, guess, ba, bb, sao, sbo, match = unpack_contacts(floats, ints)
    Po[:kb], No[:kb], phio[:kb], sao[:kb], sbo[:kb] = P, N, phi, sa, sb
    if kq:
        Po[kb:], No[kb:], phio[kb:], sao[kb:], sbo[kb:] = qP[:kq], qN[:kq], qphi[:kq], qa[:kq], qb[:kq]
    tangent_basis_into(No, t1, t2)
    contact_fields_into(shape_body, shape_mu, sao, sbo, mu_default, ba, bb, mu)
    pair_friction(ba, bb, mu, mu_table)
    if sa_prev.size == 0 or k == 0:
        match[:] = -1
        guess[:] = np.nan
    else:
        match_with_values_into(sa_prev, sb_prev, point_prev, values, sao, sbo, Po, near, match, guess)
    return False, floats, ints
