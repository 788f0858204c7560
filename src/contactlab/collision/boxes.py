"""Compiled broad phase and box contacts (numba; flags from kernels/_jit.py).

* :func:`sweep_pairs`: sort-and-sweep over world AABBs along the axis their centres spread most
  on (O(n log n + pairs)), the broad phase of every finite shape; half-spaces are culled against
  each AABB's support point.
* :func:`box_box`: the separating-axis test over the 15 axes of two boxes (Gottschalk et al.
  1996; the same axes and reference-face clipping as ODE's ``dBoxBox``): the face axis of least
  penetration (a face preferred to an edge-edge axis unless the edge separates by more) gives a
  reference face; the incident face of the other box is clipped by the four side planes of the
  reference face (Sutherland-Hodgman), and every clipped point within the margin becomes a
  contact, its signed distance measured along the face normal; more than four are reduced to the
  four spanning the largest area (deepest first). An edge-edge axis gives a contact at the
  closest points of the two edges, unless it lies within ~11 degrees of the face axis and the
  face's clipped points agree with its depth (FACE_PARALLEL, FACE_SLACK): then the face's points.
  Beside an edge-edge contact come the face's clipped points that are apart (phi >= 0), along the
  face normal: speculative contacts for the faces an edge impact turns into each other in the
  step (an edge-edge point alone let a box spun up by its impulse swing its corners 6.5 cm into
  the other box). Exact for touching faces (the normal is a face axis, not EPA's estimate), so a
  resting stack gets its four corners.
* :func:`narrow_phase`: every pair these routines cover in one call: box-box, the box (or convex
  mesh) vertices within the margin of a half-space, each with its exact distance, and a sphere's one
  point against a half-space.
* :func:`world_poses`: every shape's world rotation and position from its body's quaternion.

Contacts: normal from shape a to shape b, point midway between the witness points, phi the
signed distance (negative = penetration). Cross-checked against coal in tests/test_collision.py.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels._jit import jit
from ..kernels.quaternion import quat_matrix
from ..mechanics.kernels import shape_sweep, tangent_basis_kernel

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
def world_poses(quaternion, position, shape_body, local_R, local_p):
    """(Rs, ps): world rotation R_body R_local and position x_body + R_body p_local of every shape."""
    k = shape_body.shape[0]
    Rs = np.empty((k, 3, 3))
    ps = np.empty((k, 3))
    Rb = np.empty((3, 3))
    for s in range(k):
        b = shape_body[s]
        quat_matrix(quaternion[b], Rb)
        for i in range(3):
            acc = position[b, i]
            for j in range(3):
                acc += Rb[i, j] * local_p[s, j]
                r = 0.0
                for m in range(3):
                    r += Rb[i, m] * local_R[s, m, j]
                Rs[s, i, j] = r
            ps[s, i] = acc
    return Rs, ps


@jit
def planes_world(Rs, ps, plane_idx, plane_local):
    """World outward normals n = R n_local (k, 3) and offsets d_local + n.p (k,) of the half-spaces."""
    k = plane_idx.size
    n = np.empty((k, 3))
    off = np.empty(k)
    for r in range(k):
        h = plane_idx[r]
        for i in range(3):
            n[r, i] = Rs[h, i, 0] * plane_local[h, 0] + Rs[h, i, 1] * plane_local[h, 1] + Rs[h, i, 2] * plane_local[h, 2]
        off[r] = plane_local[h, 3] + n[r, 0] * ps[h, 0] + n[r, 1] * ps[h, 1] + n[r, 2] * ps[h, 2]
    return n, off


@jit
def world_aabbs(Rs, ps, center, half, margin, reach):
    """World AABB (lo, hi) of each shape from its local AABB (centre, half extents), grown by
    margin/2 plus the shape's ``reach`` (how far its points can move in the step)."""
    n = ps.shape[0]
    lo = np.empty((n, 3))
    hi = np.empty((n, 3))
    for k in range(n):
        for i in range(3):
            c = ps[k, i]
            e = 0.5 * margin + reach[k]
            for j in range(3):
                c += Rs[k, i, j] * center[k, j]
                e += abs(Rs[k, i, j]) * half[k, j]
            lo[k, i] = c - e
            hi[k, i] = c + e
    return lo, hi


@jit
def _sweep_axis(lo, hi, idx):
    """The axis (0, 1, 2) along which the centres of the AABBs ``idx`` have the largest variance
    (the sort-and-sweep axis of Bullet's and others' broad phases: fewest overlapping intervals)."""
    m = idx.size
    best, ax = -1.0, 0
    if m == 0:
        return 0
    for i in range(3):
        s = 0.0
        for k in range(m):
            s += lo[idx[k], i] + hi[idx[k], i]
        mean = s / m
        v = 0.0
        for k in range(m):
            d = lo[idx[k], i] + hi[idx[k], i] - mean
            v += d * d
        if v > best:
            best, ax = v, i
    return ax


@jit
def sweep_pairs(lo, hi, idx, body, static, jointed_keys, nb):
    """Shape pairs among ``idx`` whose AABBs overlap (sort-and-sweep along the axis on which the
    AABB centres spread most), excluding pairs on one body, pairs of two static shapes and jointed
    body pairs (sorted keys min*nb+max); (min, max) shape pairs in increasing order, so the same set
    of pairs always comes out the same way whatever the axis. Along a fixed x, a column of boxes
    overlaps everywhere and the sweep tests every pair."""
    m = idx.size
    ax = _sweep_axis(lo, hi, idx)
    a1, a2 = (ax + 1) % 3, (ax + 2) % 3
    order = np.argsort(lo[idx, ax])
    cap = 8 * m + 16
    out = np.empty((cap, 2), dtype=np.int64)
    k = 0
    for ii in range(m):
        a = idx[order[ii]]
        hx = hi[a, ax]
        for jj in range(ii + 1, m):
            b = idx[order[jj]]
            if lo[b, ax] > hx:
                break
            if lo[b, a1] > hi[a, a1] or lo[a, a1] > hi[b, a1] or lo[b, a2] > hi[a, a2] or lo[a, a2] > hi[b, a2]:
                continue
            ba, bb = body[a], body[b]
            if ba == bb or (static[a] and static[b]):
                continue
            if jointed_keys.size:
                key = min(ba, bb) * nb + max(ba, bb)
                p = np.searchsorted(jointed_keys, key)
                if p < jointed_keys.size and jointed_keys[p] == key:
                    continue
            if k == cap:
                bigger = np.empty((2 * cap, 2), dtype=np.int64)
                bigger[:cap] = out
                out = bigger
                cap *= 2
            out[k, 0] = min(a, b)
            out[k, 1] = max(a, b)
            k += 1
    # in (a, b) order, not sweep order: the sweep's order flips with tiny moves of bodies at the
    # same x (a column of boxes), and the contacts, rows and Delassus pattern with it
    key = out[:k, 0] * (lo.shape[0] + 1) + out[:k, 1]
    return out[:k][np.argsort(key)]


@jit
def plane_pairs(lo, hi, finite, planes, plane_n, plane_off, static, margin):
    """(finite shape, half-space) pairs whose (grown) AABB reaches within ``margin`` of the half-space."""
    cap = finite.size * planes.size
    out = np.empty((cap, 2), dtype=np.int64)
    k = 0
    for pi in range(planes.size):
        p = planes[pi]
        for fi in range(finite.size):
            s = finite[fi]
            if static[s] and static[p]:
                continue
            d = -plane_off[pi]
            for i in range(3):
                d += plane_n[pi, i] * (lo[s, i] if plane_n[pi, i] > 0 else hi[s, i])
            if d < margin:
                out[k, 0] = s
                out[k, 1] = p
                k += 1
    return out[:k]


@jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def shape_reach_of(sweep):
    """Per shape: |h v| + h |omega| r, how far its points can travel in the step (grows its AABB)."""
    out = np.empty(sweep.shape[0])
    for k in range(sweep.shape[0]):
        out[k] = np.sqrt(sweep[k, 0] ** 2 + sweep[k, 1] ** 2 + sweep[k, 2] ** 2) + sweep[k, 3]
    return out


@jit
def pair_reach(sweep, a, b):
    """How far shapes a and b can close in on each other in the step, from their ``sweep`` rows
    (h v, h |omega| r; mechanics/kernels.py ``shape_sweep``):
    max(|h (v_a - v_b)|, |h v_a|, |h v_b|) + h |omega_a| r_a + h |omega_b| r_b. The first term covers
    both bodies going on as they move, the other two one of them being stopped in the step by
    another contact (a falling box landing on a pile while the one above it still falls): bodies
    falling side by side get half the speculative distance of reach_a + reach_b, and a box that
    lands keeps its contacts with the one falling onto it. A sweep of (0, 0, 0, reach) gives
    reach_a + reach_b."""
    dx = sweep[a, 0] - sweep[b, 0]
    dy = sweep[a, 1] - sweep[b, 1]
    dz = sweep[a, 2] - sweep[b, 2]
    va = np.sqrt(sweep[a, 0] ** 2 + sweep[a, 1] ** 2 + sweep[a, 2] ** 2)
    vb = np.sqrt(sweep[b, 0] ** 2 + sweep[b, 1] ** 2 + sweep[b, 2] ** 2)
    return max(np.sqrt(dx * dx + dy * dy + dz * dz), va, vb) + sweep[a, 3] + sweep[b, 3]


@jit
def axis_reach(sweep, a, b, u):
    """How far shapes a and b can close in on each other along the unit axis ``u`` in the step, from
    their ``sweep`` rows: max(|h (v_a - v_b).u|, |h v_a.u|, |h v_b.u|) + h |omega_a| r_a + h |omega_b| r_b,
    :func:`pair_reach` projected on u. Translations move each shape's projection on u by h v.u and
    rotation moves no point by more than h |omega| r, so a pair separated along u by more than this
    (plus the margin) stays separated along u through the step, whichever of the two is stopped by
    another contact (the separating-axis theorem): boxes falling side by side, or a box sliding along
    the ground, get no speculative contacts across the direction they move in (a falling 2,000-box
    pile: every falling neighbour in its layer within h |v| did, which merged the columns into one
    island). Never more than :func:`pair_reach`."""
    ua = sweep[a, 0] * u[0] + sweep[a, 1] * u[1] + sweep[a, 2] * u[2]
    ub = sweep[b, 0] * u[0] + sweep[b, 1] * u[1] + sweep[b, 2] * u[2]
    return max(abs(ua - ub), abs(ua), abs(ub)) + sweep[a, 3] + sweep[b, 3]


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


#: shape classes of :func:`narrow_phase` (CollisionWorld.shape_class)
OTHER, BOX, SPHERE, VERTICES, HALFSPACE = 0, 1, 2, 3, 4


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


@jit
def narrow_phase(pairs, cls, Rs, ps, half, verts, vstart, radius, plane_row, plane_n, plane_off, margin, sweep):
    """Contacts of every candidate pair a compiled routine covers, in one call: box-box pairs first
    (:func:`box_box`, at most 4 points), then (box or convex mesh, half-space) pairs (each vertex
    within the grown margin of the plane: outward normal n, inside n.x <= off; normal -n,
    point midway to the plane), then (sphere, half-space) pairs (phi = n.c - off - r, the point midway
    between the sphere's lowest point and its projection: coal's witness points), each class in pair
    order. ``cls`` per shape: BOX, SPHERE, VERTICES (a convex mesh), HALFSPACE or OTHER; ``plane_row``
    per shape: its row in plane_n/plane_off (-1 for a finite shape). Every pair's margin is grown
    along the pair's axes by :func:`axis_reach` of the shapes' ``sweep`` rows (speculative contacts:
    within reach in the step; :func:`pair_reach`, the same bound in every direction, for coal's pairs).
    Returns (sa, sb, point, unit normal a -> b, phi) and ``rest``, the pairs left for coal."""
    npairs = pairs.shape[0]
    cap = 0
    for q in range(npairs):
        a, b = pairs[q, 0], pairs[q, 1]
        if cls[a] == BOX and cls[b] == BOX:
            cap += MAX_PAIR_POINTS
        elif cls[b] == HALFSPACE:
            cap += max(vstart[a + 1] - vstart[a], 1)
    sa = np.empty(cap, dtype=np.int64)
    sb = np.empty(cap, dtype=np.int64)
    P = np.empty((cap, 3))
    N = np.empty((cap, 3))
    phi = np.empty(cap)
    rest = np.ones(npairs, dtype=np.bool_)
    Pk = np.empty((MAX_PAIR_POINTS, 3))
    keys = np.empty(MAX_PAIR_POINTS)
    Nk = np.empty((MAX_PAIR_POINTS, 3))
    fk = np.empty(MAX_PAIR_POINTS)
    work = _Work()
    k = 0
    for q in range(npairs):                       # box-box
        a, b = pairs[q, 0], pairs[q, 1]
        if not (cls[a] == BOX and cls[b] == BOX):
            continue
        rest[q] = False
        c = box_box(ps[a], Rs[a], half[a], ps[b], Rs[b], half[b], margin, sweep, a, b, Pk, Nk, fk, work)
        canonical_order(Pk, Nk, fk, c, Rs[a], keys)
        for r in range(c):
            sa[k], sb[k] = a, b
            P[k] = Pk[r]
            N[k] = Nk[r]
            phi[k] = fk[r]
            k += 1
    x = np.empty(3)
    for q in range(npairs):                       # vertices against a half-space
        s, h = pairs[q, 0], pairs[q, 1]
        if cls[h] != HALFSPACE or not (cls[s] == BOX or cls[s] == VERTICES):
            continue
        rest[q] = False
        row = plane_row[h]
        n = plane_n[row]
        m = margin + axis_reach(sweep, s, h, n)
        for v in range(vstart[s], vstart[s + 1]):
            for i in range(3):
                x[i] = ps[s, i]
                for j in range(3):
                    x[i] += Rs[s, i, j] * verts[v, j]
            dist = _dot(x, n) - plane_off[row]
            if dist < m:
                sa[k], sb[k] = s, h
                for i in range(3):
                    P[k, i] = x[i] - 0.5 * dist * n[i]
                    N[k, i] = -n[i]
                phi[k] = dist
                k += 1
    for q in range(npairs):                       # spheres against a half-space
        s, h = pairs[q, 0], pairs[q, 1]
        if cls[h] != HALFSPACE or cls[s] != SPHERE:
            continue
        rest[q] = False
        row = plane_row[h]
        n = plane_n[row]
        r = radius[s]
        dist = _dot(ps[s], n) - plane_off[row] - r
        if dist < margin + axis_reach(sweep, s, h, n):
            sa[k], sb[k] = s, h
            for i in range(3):
                P[k, i] = ps[s, i] - (r + 0.5 * dist) * n[i]
                N[k, i] = -n[i]
            phi[k] = dist
            k += 1
    for r in range(k):                            # unit normals (the routines' are unit to rounding)
        ln = np.sqrt(N[r, 0] * N[r, 0] + N[r, 1] * N[r, 1] + N[r, 2] * N[r, 2])
        for i in range(3):
            N[r, i] /= ln
    return sa[:k], sb[:k], P[:k], N[:k], phi[:k], rest


@jit
def broad_phase(Rs, ps, aabb_center, aabb_half, margin, reach, finite_idx, shape_body, static, jointed_keys, nb,
                plane_idx, plane_n, plane_off):
    """Candidate shape pairs (k, 2): finite pairs whose margin-grown world AABBs overlap
    (:func:`sweep_pairs`), then (finite shape, half-space) pairs reaching within the margin
    (:func:`plane_pairs`)."""
    lo, hi = world_aabbs(Rs, ps, aabb_center, aabb_half, margin, reach)
    fin = sweep_pairs(lo, hi, finite_idx, shape_body, static, jointed_keys, nb)
    if plane_idx.size == 0:
        return fin
    pl = plane_pairs(lo, hi, finite_idx, plane_idx, plane_n, plane_off, static, margin)
    return np.concatenate((fin, pl)) if pl.shape[0] else fin


@jit
def detect_kernel(quaternion, position, shape_body, local_R, local_p, plane_idx, plane_local, aabb_center,
                  aabb_half, margin, reach, sweep, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart,
                  radius, plane_row):
    """The compiled stages of collision/contacts.py ``CollisionWorld.detect`` in one call (no
    dispatch per stage): world poses, half-spaces, :func:`broad_phase` (AABBs grown by each shape's
    ``reach``), :func:`narrow_phase` (each pair's margin grown by :func:`axis_reach` of ``sweep``).
    Returns (Rs, ps, pairs, sa, sb, point, normal, phi, rest)."""
    Rs, ps = world_poses(quaternion, position, shape_body, local_R, local_p)
    n, off = planes_world(Rs, ps, plane_idx, plane_local)
    pairs = broad_phase(Rs, ps, aabb_center, aabb_half, margin, reach, finite_idx, shape_body,
                        static, jointed_keys, nb, plane_idx, n, off)
    sa, sb, P, N, phi, rest = narrow_phase(pairs, cls, Rs, ps, half, verts, vstart, radius, plane_row, n, off,
                                           margin, sweep)
    return Rs, ps, pairs, sa, sb, P, N, phi, rest


@jit
def detect_contacts(quaternion, position, shape_body, local_R, local_p, plane_idx, plane_local, aabb_center,
                    aabb_half, margin, reach, sweep, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart,
                    radius, plane_row, shape_mu, mu_default):
    """:func:`detect_kernel`, then, where no pair is left to coal, each contact's tangents
    (mechanics/kernels.py ``tangent_basis_kernel``) and its bodies and friction
    (:func:`contact_fields`) in the same call. Returns detect_kernel's outputs and (t1, t2, body_a,
    body_b, mu), the latter empty where some pair is left to coal (the caller merges coal's contacts
    first and computes them for all)."""
    Rs, ps, pairs, sa, sb, P, N, phi, rest = detect_kernel(
        quaternion, position, shape_body, local_R, local_p, plane_idx, plane_local, aabb_center, aabb_half, margin,
        reach, sweep, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart, radius, plane_row)
    left = False
    for i in range(rest.size):
        left = left or rest[i]
    if left:
        e3 = np.empty((0, 3))
        ei = np.empty(0, dtype=np.int64)
        return Rs, ps, pairs, sa, sb, P, N, phi, rest, left, e3, e3, ei, ei, np.empty(0)
    t1, t2 = tangent_basis_kernel(N)
    ba, bb, mu = contact_fields(shape_body, shape_mu, sa, sb, mu_default)
    return Rs, ps, pairs, sa, sb, P, N, phi, rest, left, t1, t2, ba, bb, mu


@jit
def match_with_values(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, near):
    """:func:`match_previous_kernel` at any distance, and per new contact the previous ``values``
    entry of its match where that match is within ``near`` (NaN elsewhere; ``values`` may be empty:
    all NaN): the simulator's contact matching in one call. Returns (match, matched values)."""
    match, dist2 = match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, np.inf)
    out = np.full(match.size, np.nan)
    if values.size:
        r2 = near * near
        for i in range(match.size):
            if match[i] >= 0 and dist2[i] <= r2:
                out[i] = values[match[i]]
    return match, out


@jit
def contact_fields(shape_body, shape_mu, sa, sb, mu_default):
    """Per contact: the bodies of its two shapes and its friction, the smaller shape mu where a shape
    has one (NaN: none), else ``mu_default`` (collision/contacts.py ``pair_mu_array`` before the
    scene's pair overrides)."""
    k = sa.size
    ba = np.empty(k, dtype=np.int64)
    bb = np.empty(k, dtype=np.int64)
    mu = np.empty(k)
    for i in range(k):
        ba[i] = shape_body[sa[i]]
        bb[i] = shape_body[sb[i]]
        m = np.fmin(shape_mu[sa[i]], shape_mu[sb[i]])
        mu[i] = m if np.isfinite(m) else mu_default
    return ba, bb, mu


@jit
def match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol):
    """For each new contact, the index of the nearest previous contact on the same shape pair
    (sa, sb) within ``tol`` (-1 where none) and its squared distance (inf where none): pair keys
    sorted once, each new contact scans only its key's run."""
    key_prev = sa_prev * 1_000_003 + sb_prev
    key_new = sa_new * 1_000_003 + sb_new
    out = np.full(key_new.size, -1, dtype=np.int64)
    dist2 = np.full(key_new.size, np.inf)
    if key_prev.size == 0:
        return out, dist2
    order = np.argsort(key_prev, kind="mergesort")
    ks = key_prev[order]
    t2 = tol * tol
    for i in range(key_new.size):
        lo = np.searchsorted(ks, key_new[i])
        best = t2
        found = -1
        j = lo
        while j < ks.size and ks[j] == key_new[i]:
            p = order[j]
            dx = point_prev[p, 0] - point_new[i, 0]
            dy = point_prev[p, 1] - point_new[i, 1]
            dz = point_prev[p, 2] - point_new[i, 2]
            dd = dx * dx + dy * dy + dz * dz
            if dd <= best:
                best, found = dd, p
            j += 1
        out[i] = found
        if found >= 0:
            dist2[i] = best
    return out, dist2


#: the packed contacts of one compiled detection (:func:`detect_and_match_packed`): every float field of
#: a ContactSet in one flat array, each field's k rows in turn (its columns per row), the integer
#: fields in another; collision/contacts.py ``PackedContactSet`` views them by the same table
PACKED_FLOATS = (("point", 3), ("normal", 3), ("t1", 3), ("t2", 3), ("phi", 1), ("mu", 1), ("normal_guess", 1))
PACKED_INTS = ("body_a", "body_b", "shape_a", "shape_b", "match")
PACKED_FLOAT_WIDTH = 15      # sum of PACKED_FLOATS' columns


@jit
def pack_contacts(P, N, t1, t2, phi, mu, guess, ba, bb, sa, sb, match):
    """(floats, ints): k contacts' fields packed in :data:`PACKED_FLOATS` / :data:`PACKED_INTS` order."""
    k = phi.size
    floats = np.empty(PACKED_FLOAT_WIDTH * k)
    floats[0:3 * k] = P.reshape(-1)
    floats[3 * k:6 * k] = N.reshape(-1)
    floats[6 * k:9 * k] = t1.reshape(-1)
    floats[9 * k:12 * k] = t2.reshape(-1)
    floats[12 * k:13 * k] = phi
    floats[13 * k:14 * k] = mu
    floats[14 * k:15 * k] = guess
    ints = np.empty(5 * k, dtype=np.int64)
    ints[0:k], ints[k:2 * k], ints[2 * k:3 * k], ints[3 * k:4 * k], ints[4 * k:5 * k] = ba, bb, sa, sb, match
    return floats, ints


@jit
def unpack_contacts(floats, ints):
    """The views of :func:`pack_contacts`' buffers: (point, normal, t1, t2, phi, mu, normal_guess,
    body_a, body_b, shape_a, shape_b, match), no copy."""
    k = ints.size // len(PACKED_INTS)
    return (floats[0:3 * k].reshape((k, 3)), floats[3 * k:6 * k].reshape((k, 3)),
            floats[6 * k:9 * k].reshape((k, 3)), floats[9 * k:12 * k].reshape((k, 3)), floats[12 * k:13 * k],
            floats[13 * k:14 * k], floats[14 * k:15 * k], ints[0:k], ints[k:2 * k], ints[2 * k:3 * k],
            ints[3 * k:4 * k], ints[4 * k:5 * k])


@jit
def detect_and_match_packed(dof_start, lin, ang, body_radius, h, quaternion, position, shape_body, local_R, local_p,
                            plane_idx, plane_local, aabb_center, aabb_half, margin, finite_idx, static, jointed_keys,
                            nb, cls, half, verts, vstart, radius, plane_row, shape_mu, mu_default, prev_floats,
                            prev_ints, values, near, sweep_out, reach_out):
    """:func:`detect_and_match` with its results packed (:func:`pack_contacts`: two arrays to hand to
    Python, not fifteen; each array handed over costs ~0.3 us) and the sweep and reach written into
    ``sweep_out`` / ``reach_out``; the previous contacts as packed too (``prev_ints`` empty: none).
    Returns (left, floats, ints); where ``left`` (a pair for coal) the buffers are empty."""
    point_prev, _, _, _, _, _, _, _, _, sa_prev, sb_prev, _ = unpack_contacts(prev_floats, prev_ints)
    sweep, reach, _, sa, sb, P, N, phi, _, left, t1, t2, ba, bb, mu, match, guess = detect_and_match(
        dof_start, lin, ang, body_radius, h, quaternion, position, shape_body, local_R, local_p, plane_idx,
        plane_local, aabb_center, aabb_half, margin, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart,
        radius, plane_row, shape_mu, mu_default, sa_prev, sb_prev, point_prev, values, near)
    sweep_out[:, :] = sweep
    reach_out[:] = reach
    if left:
        return left, np.empty(0), np.empty(0, dtype=np.int64)
    floats, ints = pack_contacts(P, N, t1, t2, phi, mu, guess, ba, bb, sa, sb, match)
    return left, floats, ints


@jit
def detect_and_match(dof_start, lin, ang, body_radius, h, quaternion, position, shape_body, local_R, local_p,
                     plane_idx, plane_local, aabb_center, aabb_half, margin, finite_idx, static, jointed_keys, nb,
                     cls, half, verts, vstart, radius, plane_row, shape_mu, mu_default, sa_prev, sb_prev,
                     point_prev, values, near):
    """The simulator's detection and matching in one call: each shape's sweep over the step
    (mechanics/kernels.py ``shape_sweep``) and reach (:func:`shape_reach_of`), :func:`detect_contacts`
    with them, then, where no pair is left to coal and there are previous contacts (``sa_prev``
    non-empty) and new ones, :func:`match_with_values` against the previous contacts (else no match:
    -1 and NaN). Returns (sweep, reach, detect_contacts' outputs, match, matched values)."""
    sweep = shape_sweep(dof_start, lin, ang, body_radius, shape_body, h)
    reach = shape_reach_of(sweep)
    Rs, ps, pairs, sa, sb, P, N, phi, rest, left, t1, t2, ba, bb, mu = detect_contacts(
        quaternion, position, shape_body, local_R, local_p, plane_idx, plane_local, aabb_center, aabb_half, margin,
        reach, sweep, finite_idx, static, jointed_keys, nb, cls, half, verts, vstart, radius, plane_row, shape_mu,
        mu_default)
    if left or sa_prev.size == 0 or phi.size == 0:
        match = np.full(phi.size, -1, dtype=np.int64)
        guess = np.full(phi.size, np.nan)
    else:
        match, guess = match_with_values(sa_prev, sb_prev, point_prev, values, sa, sb, P, near)
    return sweep, reach, pairs, sa, sb, P, N, phi, rest, left, t1, t2, ba, bb, mu, match, guess
