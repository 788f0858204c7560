"""Broad phase of the compiled detection (numba; flags from kernels/_jit.py): every shape's world
pose, the world half-spaces, the world AABBs grown by the margin and each shape's reach, and
:func:`sweep_pairs`, sort-and-sweep over those AABBs along the axis their centres spread most on
(O(n log n + pairs)); half-spaces are culled against each AABB's support point (:func:`plane_pairs`)."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit
from ...kernels.quaternion import quat_matrix


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


#: at most this many pairs, :func:`sweep_pairs` sorts them in place (insertion sort: no key, argsort and
#: gathered copy, three allocations of a grasp's 6 pairs); more, by argsort
SORT_IN_PLACE = 32


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
    w = lo.shape[0] + 1
    if k > SORT_IN_PLACE:
        key = out[:k, 0] * w + out[:k, 1]
        return out[:k][np.argsort(key)]
    for i in range(1, k):         # the keys are distinct: any sort gives argsort's order, in place
        x0, x1 = out[i, 0], out[i, 1]
        kx = x0 * w + x1
        j = i - 1
        while j >= 0 and out[j, 0] * w + out[j, 1] > kx:
            out[j + 1, 0], out[j + 1, 1] = out[j, 0], out[j, 1]
            j -= 1
        out[j + 1, 0], out[j + 1, 1] = x0, x1
    return out[:k]


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
