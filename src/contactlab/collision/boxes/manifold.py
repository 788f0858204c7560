"""The box-box contact manifold (numba): :func:`box_box`, the separating-axis test over the 15 axes
of two boxes (Gottschalk et al. 1996; the same axes and reference-face clipping as ODE's
``dBoxBox``): the face axis of least penetration (a face preferred to an edge-edge axis unless the
edge separates by more) gives a reference face; the incident face of the other box is clipped by
the four side planes of the reference face (Sutherland-Hodgman), and every clipped point within
the margin becomes a contact, its signed distance measured along the face normal; more than four
are reduced to the four spanning the largest area (deepest first). An edge-edge axis gives a
contact at the closest points of the two edges, unless it lies within ~11 degrees of the face axis
and the face's clipped points agree with its depth (FACE_PARALLEL, FACE_SLACK): then the face's
points. Beside an edge-edge contact come the face's clipped points that are apart (phi >= 0), along
the face normal: speculative contacts for the faces an edge impact turns into each other in the
step (an edge-edge point alone let a box spun up by its impulse swing its corners 6.5 cm into the
other box). Exact for touching faces (the normal is a face axis, not EPA's estimate), so a resting
stack gets its four corners. :func:`canonical_order` gives a manifold's points one order from step
to step."""
from __future__ import annotations

import math

import numpy as np

from ...kernels._jit import jit
from ...kernels.vec3 import dot3 as _dot
from .reach import axis_reach


#: a face axis is kept unless an edge-edge axis separates by more than this (relative to the box size)
EDGE_PREFERENCE = 1e-4


#: an edge-edge axis within ~11 degrees of the best face axis (|cos| above this) does not replace it
#: when the face's clipped points are at most FACE_SLACK x the box size deeper than the edge's exact
#: depth: two nearly flat boxes stacked with a relative yaw touch face on face (the clipped polygon,
#: up to 4 points), not at one edge crossing on which the upper box pivots and sinks (a 100-box pile
#: sank 5-12 cm that way)
FACE_PARALLEL = 0.98


FACE_SLACK = 0.005


#: contacts kept per box-box face (the clipped polygon reduced to its 4 widest points)
MAX_POINTS = 4


#: contacts per box-box pair: a face's points, or an edge-edge contact and the face's points beside it
MAX_PAIR_POINTS = MAX_POINTS + 1


@jit
def _clip(poly, npoly, u, sign, off, out):
    """Write into ``out`` the part of the polygon (npoly points, rows of poly) with (sign u).x <= off;
    returns its point count (sign = +-1: a side plane and the opposite one share the axis u)."""
    k = 0
    u0, u1, u2 = u[0], u[1], u[2]
    dq = sign * (u0 * poly[0, 0] + u1 * poly[0, 1] + u2 * poly[0, 2]) - off
    for i in range(npoly):
        j = i + 1 if i + 1 < npoly else 0          # no integer division per point
        dp = dq                                     # each point's distance once (the next one's dp)
        dq = sign * (u0 * poly[j, 0] + u1 * poly[j, 1] + u2 * poly[j, 2]) - off
        if dp <= 0.0:
            out[k, 0], out[k, 1], out[k, 2] = poly[i, 0], poly[i, 1], poly[i, 2]
            k += 1
        if (dp < 0.0 < dq) or (dq < 0.0 < dp):
            t = dp / (dp - dq)
            for c in range(3):
                out[k, c] = poly[i, c] + t * (poly[j, c] - poly[i, c])
            k += 1
    return k


@jit
def _reduce4(P, sep, k, nref, keep):
    """Indices (into ``keep``) of at most 4 of the k points: the deepest, the farthest from it, then
    the two making the largest triangles on either side of that segment; returns their count."""
    if k <= MAX_POINTS:
        for i in range(k):
            keep[i] = i
        return k
    i0 = 0
    for i in range(k):
        if sep[i] < sep[i0]:
            i0 = i
    i1 = i0
    best = -1.0
    for i in range(k):
        d0, d1, d2 = P[i, 0] - P[i0, 0], P[i, 1] - P[i0, 1], P[i, 2] - P[i0, 2]
        dd = d0 * d0 + d1 * d1 + d2 * d2
        if dd > best:
            best, i1 = dd, i
    e0, e1, e2 = P[i1, 0] - P[i0, 0], P[i1, 1] - P[i0, 1], P[i1, 2] - P[i0, 2]
    ip, im = -1, -1
    bp, bm = 0.0, 0.0
    for i in range(k):
        if i == i0 or i == i1:
            continue
        d0, d1, d2 = P[i, 0] - P[i0, 0], P[i, 1] - P[i0, 1], P[i, 2] - P[i0, 2]
        a = (e1 * d2 - e2 * d1) * nref[0] + (e2 * d0 - e0 * d2) * nref[1] + (e0 * d1 - e1 * d0) * nref[2]
        if a > bp:
            bp, ip = a, i
        if a < bm:
            bm, im = a, i
    keep[0], keep[1] = i0, i1
    m = 2
    if ip >= 0:
        keep[m] = ip
        m += 1
    if im >= 0:
        keep[m] = im
        m += 1
    return m


@jit
def _edge_point(pa, Ra, ha, pb, Rb, hb, n, ei, ej, P_out, phi_out):
    """One contact at the closest points of the edge of a (axis ei) furthest along n and the edge
    of b (axis ej) furthest along -n; returns 1."""
    ca0, ca1, ca2 = pa[0], pa[1], pa[2]
    cb0, cb1, cb2 = pb[0], pb[1], pb[2]
    for k in range(3):
        if k != ei:
            f = (1.0 if _dot(Ra[:, k], n) > 0 else -1.0) * ha[k]
            ca0 += f * Ra[0, k]
            ca1 += f * Ra[1, k]
            ca2 += f * Ra[2, k]
        if k != ej:
            f = (1.0 if _dot(Rb[:, k], n) > 0 else -1.0) * hb[k]
            cb0 -= f * Rb[0, k]
            cb1 -= f * Rb[1, k]
            cb2 -= f * Rb[2, k]
    w0, w1, w2 = ca0 - cb0, ca1 - cb1, ca2 - cb2
    b_ = Ra[0, ei] * Rb[0, ej] + Ra[1, ei] * Rb[1, ej] + Ra[2, ei] * Rb[2, ej]
    dd = Ra[0, ei] * w0 + Ra[1, ei] * w1 + Ra[2, ei] * w2
    e = Rb[0, ej] * w0 + Rb[1, ej] * w1 + Rb[2, ej] * w2
    den = 1.0 - b_ * b_
    s_ = (b_ * e - dd) / den if den > 1e-12 else 0.0
    t_ = (e - b_ * dd) / den if den > 1e-12 else 0.0
    s_ = min(max(s_, -ha[ei]), ha[ei])
    t_ = min(max(t_, -hb[ej]), hb[ej])
    qa0, qa1, qa2 = ca0 + s_ * Ra[0, ei], ca1 + s_ * Ra[1, ei], ca2 + s_ * Ra[2, ei]
    qb0, qb1, qb2 = cb0 + t_ * Rb[0, ej], cb1 + t_ * Rb[1, ej], cb2 + t_ * Rb[2, ej]
    P_out[0, 0], P_out[0, 1], P_out[0, 2] = 0.5 * (qa0 + qb0), 0.5 * (qa1 + qb1), 0.5 * (qa2 + qb2)
    phi_out[0] = (qb0 - qa0) * n[0] + (qb1 - qa1) * n[1] + (qb2 - qa2) * n[2]
    return 1


@jit
def _face_points(pr, Rr, hr, pc, Rc, hc, nref, i, margin, P_out, phi_out, work):
    """Reference face i of box r (outward normal nref, pointing to box c), the incident face of c
    clipped by its four side planes; the clipped points within ``margin`` (at most 4, deepest
    first), each with its separation along nref. Returns the count. ``work``: the scratch of
    :func:`_Work` (no allocation per pair)."""
    polyA, polyB, P, sep, keep = work
    cr0, cr1, cr2 = pr[0] + hr[i] * nref[0], pr[1] + hr[i] * nref[1], pr[2] + hr[i] * nref[2]   # face centre
    # incident face: the face of c most anti-parallel to nref
    kc = 0
    bestdot = 0.0
    for k in range(3):
        dk = abs(_dot(Rc[:, k], nref))
        if dk > bestdot:
            bestdot, kc = dk, k
    sgn = -1.0 if _dot(Rc[:, kc], nref) > 0 else 1.0
    k1, k2 = (kc + 1) % 3, (kc + 2) % 3
    for c in range(3):
        cc = pc[c] + sgn * hc[kc] * Rc[c, kc]
        e1 = hc[k1] * Rc[c, k1]
        e2 = hc[k2] * Rc[c, k2]
        polyA[0, c] = cc + e1 + e2
        polyA[1, c] = cc - e1 + e2
        polyA[2, c] = cc - e1 - e2
        polyA[3, c] = cc + e1 - e2
    npoly = 4
    src, dst = polyA, polyB
    for k in range(3):
        if k == i:
            continue
        u = Rr[:, k]
        o = _dot(u, pr)
        npoly = _clip(src, npoly, u, 1.0, o + hr[k], dst)
        if npoly == 0:
            return 0
        npoly = _clip(dst, npoly, u, -1.0, -o + hr[k], src)
        if npoly == 0:
            return 0
    # drop near-duplicate points (clipping at coincident edges)
    m = 0
    tol = 1e-9 * (1.0 + hr.max())
    for k in range(npoly):
        s = (src[k, 0] - cr0) * nref[0] + (src[k, 1] - cr1) * nref[1] + (src[k, 2] - cr2) * nref[2]
        if s > margin:
            continue
        dup = False
        for q in range(m):
            d0, d1, d2 = P[q, 0] - src[k, 0], P[q, 1] - src[k, 1], P[q, 2] - src[k, 2]
            if d0 * d0 + d1 * d1 + d2 * d2 <= tol * tol:
                dup = True
                break
        if not dup:
            P[m, 0], P[m, 1], P[m, 2] = src[k, 0], src[k, 1], src[k, 2]
            sep[m] = s
            m += 1
    count = _reduce4(P, sep, m, nref, keep)
    for q in range(count):
        k = keep[q]
        for c in range(3):
            P_out[q, c] = P[k, c] - 0.5 * sep[k] * nref[c]
        phi_out[q] = sep[k]
    return count


@jit
def _support_point(pr, Rr, hr, pc, Rc, hc, nref, i, P_out, phi_out):
    """One contact at the vertex of box c deepest along -nref (towards reference face i of box r),
    at its separation from that face's plane (the separating-axis gap along nref); returns 1. The
    contact of a pair whose incident face clips to nothing over the reference face (an edge or
    corner of c beside r's face) while no axis separates them."""
    off = _dot(nref, pr) + hr[i]         # the reference face's plane: x . nref = off
    x0, x1, x2 = pc[0], pc[1], pc[2]
    for k in range(3):
        f = (-1.0 if _dot(Rc[:, k], nref) > 0 else 1.0) * hc[k]
        x0 += f * Rc[0, k]
        x1 += f * Rc[1, k]
        x2 += f * Rc[2, k]
    sep = x0 * nref[0] + x1 * nref[1] + x2 * nref[2] - off
    P_out[0, 0], P_out[0, 1], P_out[0, 2] = x0 - 0.5 * sep * nref[0], x1 - 0.5 * sep * nref[1], x2 - 0.5 * sep * nref[2]
    phi_out[0] = sep
    return 1


@jit
def _Work():
    """Scratch for :func:`_face_points`: two polygon buffers (a quad clipped by four planes has at
    most 8 points; 16 rows), the kept points, their separations, the indices :func:`_reduce4` keeps."""
    return np.empty((16, 3)), np.empty((16, 3)), np.empty((16, 3)), np.empty(16), np.empty(4, dtype=np.int64)


@jit
def _cross_unit(Ra, i, Rb, j, out):
    """out = (column i of Ra) x (column j of Rb), normalised (zero when they are parallel)."""
    out[0] = Ra[1, i] * Rb[2, j] - Ra[2, i] * Rb[1, j]
    out[1] = Ra[2, i] * Rb[0, j] - Ra[0, i] * Rb[2, j]
    out[2] = Ra[0, i] * Rb[1, j] - Ra[1, i] * Rb[0, j]
    ln = np.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2])
    if ln > 0.0:
        for c in range(3):
            out[c] /= ln


@jit
def box_box(pa, Ra, ha, pb, Rb, hb, margin, sweep, a, b, P_out, N_out, phi_out, work):
    """Contacts of box a (centre pa, rotation Ra: columns are its axes, half extents ha) and box b
    within ``margin`` grown along each axis u by :func:`axis_reach` (``sweep`` rows a and b: how far
    the two close in along u in the step): a separating axis beyond it means no contact, and the
    contact points are those within it along the normal. Writes at most MAX_PAIR_POINTS rows of
    P_out/N_out/phi_out, the normals a -> b: a face's points (at most 4, one normal), or an edge-edge
    contact (row 0, along the edge axis) and then the points of the best face axis's face that are
    apart (phi >= 0, along that face's normal; each the exact distance of a point of the incident
    box over the reference face, whatever the edge's depth); returns the count. ``work``:
    :func:`_Work` scratch."""
    d = work[2][15]                # a scratch row for the centre offset (P rows 0..7 are never this far)
    for c in range(3):
        d[c] = pb[c] - pa[c]
    # the relative rotation C = Ra' Rb, |C| and the offset in each box's axes (Gottschalk, Lin and
    # Manocha 1996, the OBB test): every axis's gap from these numbers, 15 axes for the cost of
    # nine dot products (rows 8..15 of the clipping buffer: free until the face is clipped)
    C, A = work[1][8:11], work[1][11:14]
    da, db = work[1][14], work[1][15]
    for i in range(3):
        da[i] = Ra[0, i] * d[0] + Ra[1, i] * d[1] + Ra[2, i] * d[2]
        db[i] = Rb[0, i] * d[0] + Rb[1, i] * d[1] + Rb[2, i] * d[2]
        for j in range(3):
            C[i, j] = Ra[0, i] * Rb[0, j] + Ra[1, i] * Rb[1, j] + Ra[2, i] * Rb[2, j]
            A[i, j] = abs(C[i, j])
    best_s = -1e300
    best_axis = work[2][12]        # the best face axis (rows 8..12 of the clipped points' buffer are free)
    best_kind = -1         # 0: face of a, 1: face of b
    best_i = 0
    for box in range(2):
        R = Ra if box == 0 else Rb
        for i in range(3):
            if box == 0:            # a's face axis i: |da_i| - ha_i - sum_j |C_ij| hb_j
                s = abs(da[i]) - ha[i] - (A[i, 0] * hb[0] + A[i, 1] * hb[1] + A[i, 2] * hb[2])
            else:                   # b's face axis i: |db_i| - hb_i - sum_j |C_ji| ha_j
                s = abs(db[i]) - hb[i] - (A[0, i] * ha[0] + A[1, i] * ha[1] + A[2, i] * ha[2])
            u = R[:, i]
            if s > margin + axis_reach(sweep, a, b, u):
                return 0
            if s > best_s:
                best_s, best_kind, best_i = s, box, i
                best_axis[:] = u
    face_s = best_s
    size = min(ha.min(), hb.min())
    edge_s = -1e300
    edge_axis = work[2][14]
    edge_i, edge_j = 0, 0
    u = work[2][13]                 # one buffer for an edge-edge axis in world coordinates
    for i in range(3):
        i1, i2 = (1, 2) if i == 0 else ((2, 0) if i == 1 else (0, 1))
        for j in range(3):
            j1, j2 = (1, 2) if j == 0 else ((2, 0) if j == 1 else (0, 1))
            # u = a_i x b_j, in a's axes e_i x C[:, j]: length sqrt(C_i1j^2 + C_i2j^2)
            ln = np.sqrt(C[i1, j] * C[i1, j] + C[i2, j] * C[i2, j])
            if ln < 1e-6:
                continue
            s = (abs(da[i2] * C[i1, j] - da[i1] * C[i2, j]) - (ha[i1] * A[i2, j] + ha[i2] * A[i1, j])
                 - (hb[j1] * A[i, j2] + hb[j2] * A[i, j1])) / ln
            if s > margin:          # a separating axis if beyond its reach (>= 0): the world axis then
                _cross_unit(Ra, i, Rb, j, u)
                if s > margin + axis_reach(sweep, a, b, u):
                    return 0
            if s > edge_s:
                edge_s, edge_i, edge_j = s, i, j
    _cross_unit(Ra, edge_i, Rb, edge_j, edge_axis)
    n = best_axis
    if _dot(n, d) < 0.0:
        for c in range(3):
            n[c] = -n[c]
    use_edge = edge_s > face_s + EDGE_PREFERENCE * size
    # the face of the best face axis: reference box r (owner of the axis), incident box c; nref
    # points from r to c
    grown = margin + axis_reach(sweep, a, b, n)
    if best_kind == 0:
        count = _face_points(pa, Ra, ha, pb, Rb, hb, n, best_i, grown, P_out, phi_out, work)
        if count == 0 and not use_edge:
            count = _support_point(pa, Ra, ha, pb, Rb, hb, n, best_i, P_out, phi_out)
    else:
        for c in range(3):
            u[c] = -n[c]
        count = _face_points(pb, Rb, hb, pa, Ra, ha, u, best_i, grown, P_out, phi_out, work)
        if count == 0 and not use_edge:
            count = _support_point(pb, Rb, hb, pa, Ra, ha, u, best_i, P_out, phi_out)
    if use_edge and abs(_dot(edge_axis, n)) >= FACE_PARALLEL:
        # an edge-edge axis near the face axis: the face's clipped points stand for it when they
        # agree with its exact depth (nearly flat boxes stacked with a relative yaw)
        deepest = 1e300
        for q in range(count):
            deepest = min(deepest, phi_out[q])
        use_edge = count == 0 or deepest < edge_s - FACE_SLACK * size
    if not use_edge:
        for q in range(count):
            for c in range(3):
                N_out[q, c] = n[c]
        return count
    # the edge contact in row 0, then the face's clipped points that are apart (phi >= 0: each the
    # exact distance of a point of c over r's face) as speculative contacts beside it
    kept = 0
    for q in range(count):
        if phi_out[q] >= 0.0:
            P_out[kept, 0], P_out[kept, 1], P_out[kept, 2], phi_out[kept] = (P_out[q, 0], P_out[q, 1], P_out[q, 2],
                                                                             phi_out[q])
            kept += 1
    for q in range(kept - 1, -1, -1):
        P_out[q + 1, 0], P_out[q + 1, 1], P_out[q + 1, 2], phi_out[q + 1] = (P_out[q, 0], P_out[q, 1], P_out[q, 2],
                                                                             phi_out[q])
        for c in range(3):
            N_out[q + 1, c] = n[c]
    for c in range(3):
        N_out[0, c] = edge_axis[c]
    if _dot(edge_axis, d) < 0.0:
        for c in range(3):
            N_out[0, c] = -N_out[0, c]
    _edge_point(pa, Ra, ha, pb, Rb, hb, N_out[0], edge_i, edge_j, P_out, phi_out)
    return 1 + kept


@jit
def pseudo_angle(y, x):
    """A number in [-2, 2] that orders directions (x, y) as ``arctan2(y, x)`` does, with its cut at
    -pi/pi (the sign of y = -0.0 included): y / (|x| + |y|) for x >= 0, 2 - that for x < 0 and
    y >= 0, -2 - that for x < 0 and y < 0; 0 at the origin. A division instead of an arctangent."""
    s = abs(x) + abs(y)
    if s == 0.0:
        return 0.0
    t = y / s
    if x >= 0.0:
        return t
    return 2.0 - t if math.copysign(1.0, y) > 0.0 else -2.0 - t


@jit
def canonical_order(P, N, phi, c, R, key_out):
    """Sort the first ``c`` points of one manifold (rows of P, with their normals N and phi) by
    their angle about the manifold's centroid in box a's own axes (the columns of R), in the face
    plane of a's axis closest to the last point's normal (a face's normal; an edge-edge manifold's
    face points follow its edge point): the order no longer depends on which box's face clipped the
    other (a resting stack's two faces tie, and tiny tilts swap them), so a contact keeps its row
    from step to step and the previous answer warm-starts the same contact."""
    if c < 2:
        return
    # the two axes of a spanning the face plane: drop the axis most aligned with the normal
    best, drop = -1.0, 0
    for j in range(3):
        a = abs(R[0, j] * N[c - 1, 0] + R[1, j] * N[c - 1, 1] + R[2, j] * N[c - 1, 2])
        if a > best:
            best, drop = a, j
    u, v = (1, 2) if drop == 0 else ((0, 2) if drop == 1 else (0, 1))
    cx, cy, cz = 0.0, 0.0, 0.0
    for r in range(c):
        cx += P[r, 0]
        cy += P[r, 1]
        cz += P[r, 2]
    cx, cy, cz = cx / c, cy / c, cz / c
    key = key_out
    for r in range(c):
        dx, dy, dz = P[r, 0] - cx, P[r, 1] - cy, P[r, 2] - cz
        lu = R[0, u] * dx + R[1, u] * dy + R[2, u] * dz
        lv = R[0, v] * dx + R[1, v] * dy + R[2, v] * dz
        key[r] = pseudo_angle(lv, lu)
    for r in range(1, c):           # insertion sort of at most MAX_PAIR_POINTS rows
        k = key[r]
        x0, x1, x2, f = P[r, 0], P[r, 1], P[r, 2], phi[r]
        n0, n1, n2 = N[r, 0], N[r, 1], N[r, 2]
        t = r - 1
        while t >= 0 and key[t] > k:
            key[t + 1] = key[t]
            P[t + 1, 0], P[t + 1, 1], P[t + 1, 2], phi[t + 1] = P[t, 0], P[t, 1], P[t, 2], phi[t]
            N[t + 1, 0], N[t + 1, 1], N[t + 1, 2] = N[t, 0], N[t, 1], N[t, 2]
            t -= 1
        key[t + 1] = k
        P[t + 1, 0], P[t + 1, 1], P[t + 1, 2], phi[t + 1] = x0, x1, x2, f
        N[t + 1, 0], N[t + 1, 1], N[t + 1, 2] = n0, n1, n2
