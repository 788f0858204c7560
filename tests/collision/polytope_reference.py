"""The polytope contacts' previous algorithm, kept for tests only: collision/polytope.py's
``polytope_world``, ``polytope_pair`` and ``polytope_contacts`` as hull13 left them (each shape placed
whole, every face's full support pass, the Gauss-map arc's first test on every edge's two rotated face
normals), run as plain Python (the 2-D hull and intersection helpers, whose arithmetic did not
change, are the kernels') on the same arithmetic (the same operands in the same order, so the
same bits as the compiled kernels; numba's kernels use no fast-math and no fused multiply-add). The
compiled kernels skip work by certified bounds and must return exactly these contacts
(tests/collision/test_polytope_reference.py).

Shape data: ``polytope_data``'s arrays, each edge's two face normals taken from ``face_n`` by its
``edge_f`` face indices (the arrays this algorithm read)."""
import numpy as np

from contactlab.collision.boxes.reach import pair_reach
from contactlab.collision import polytope as PT
from contactlab.collision.polytope import DIRECTIONS, EDGE_PREFERENCE, PATCH_TOLERANCE, TURN_TOLERANCE
from contactlab.kernels.vec3 import cross3 as _cross, dot3 as _dot


def _hull2d(U, m, out):
    """collision/polytope.py ``_hull2d`` with its work arrays made here (as the previous version made them)."""
    return PT._hull2d(U, m, out, np.empty((2 * m + 1, 2)), np.empty(m, dtype=np.int64))


def _intersect(HA, ka, HB, kb, out):
    """collision/polytope.py ``_intersect`` with its work array made here."""
    return PT._intersect(HA, ka, HB, kb, out, np.empty((out.shape[0], 2)))


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


def polytope_contacts(pairs, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_f, edge_p, estart, margin, sweep):
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
    edge_na = np.empty((edge_f.shape[0], 3))
    edge_nb = np.empty((edge_f.shape[0], 3))
    for s in range(vstart.size - 1):
        for g in range(estart[s], estart[s + 1]):
            edge_na[g] = face_n[fstart[s] + edge_f[g, 0]]
            edge_nb[g] = face_n[fstart[s] + edge_f[g, 1]]
    V, F, E = polytope_world(used, Rs, ps, verts, vstart, face_n, face_d, fstart, edge_na, edge_nb, edge_p, estart)
    k = 0
    for q in range(pairs.shape[0]):
        a, b = pairs[q, 0], pairs[q, 1]
        k0 = k
        k = polytope_pair(a, b, V, F, E, vstart, fstart, estart, margin + pair_reach(sweep, a, b), P, N, phi, k)
        sa[k0:k] = a
        sb[k0:k] = b
    return sa[:k], sb[:k], P[:k], N[:k], phi[:k]


