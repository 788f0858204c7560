"""The compiled detection's narrow phase and its one-call drivers (numba): :func:`narrow_phase`, every
pair the compiled routines cover (box-box by :mod:`.manifold`, the box or convex mesh vertices
within the margin of a half-space, each with its exact distance, and a sphere's one point against a
half-space); :func:`detect_kernel`, :func:`detect_contacts`, :func:`detect_and_match` and
:func:`detect_and_match_packed`, the stages the simulator runs in one call."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit
from ...mechanics.kernels import shape_sweep, tangent_basis_kernel
from .broad_phase import broad_phase, planes_world, world_poses
from .manifold import MAX_PAIR_POINTS, _dot, _Work, box_box, canonical_order
from .matching import match_with_values
from .packed import pack_contacts, unpack_contacts
from .reach import axis_reach, contact_closing, reachable_contacts, shape_reach_of, speculative_any


#: shape classes of :func:`narrow_phase` (CollisionWorld.shape_class)
OTHER, BOX, SPHERE, VERTICES, HALFSPACE = 0, 1, 2, 3, 4


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
    si = np.empty(2 * cap, dtype=np.int64)      # the outputs and a pair's work carved from two buffers
    sa, sb = si[:cap], si[cap:]
    M = MAX_PAIR_POINTS
    sf = np.empty(7 * cap + 8 * M + 3)
    P, N, phi = sf[:3 * cap].reshape((cap, 3)), sf[3 * cap:6 * cap].reshape((cap, 3)), sf[6 * cap:7 * cap]
    o = 7 * cap
    Pk, keys = sf[o:o + 3 * M].reshape((M, 3)), sf[o + 3 * M:o + 4 * M]
    Nk, fk, x = sf[o + 4 * M:o + 7 * M].reshape((M, 3)), sf[o + 7 * M:o + 8 * M], sf[o + 8 * M:o + 8 * M + 3]
    rest = np.ones(npairs, dtype=np.bool_)
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
    """:func:`detect_kernel`, then, where no pair is left to coal, the contacts that can close in the step
    (reach.py :func:`~contactlab.collision.boxes.reach.reachable_contacts`, only where some contact is
    speculative, :func:`~contactlab.collision.boxes.reach.speculative_any`) and each one's tangents
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
    if speculative_any(phi, margin):    # else reachable_contacts keeps every contact: not called
        box_pair = np.empty(sa.size, dtype=np.bool_)
        for i in range(sa.size):
            box_pair[i] = cls[sa[i]] == BOX and cls[sb[i]] == BOX
        close = contact_closing(sa, sb, N, phi, sweep, box_pair, Rs, ps, half, margin)
        keep = reachable_contacts(sa, sb, phi, close, sweep, shape_body, nb, margin)
        if not keep.all():      # speculative contacts no deviation can close (reach.py reachable_contacts)
            sa, sb, P, N, phi = sa[keep], sb[keep], P[keep], N[keep], phi[keep]
    t1, t2 = tangent_basis_kernel(N)
    ba, bb, mu = contact_fields(shape_body, shape_mu, sa, sb, mu_default)
    return Rs, ps, pairs, sa, sb, P, N, phi, rest, left, t1, t2, ba, bb, mu


@jit
def contact_fields(shape_body, shape_mu, sa, sb, mu_default):
    """Per contact: the bodies of its two shapes and its friction, the smaller shape mu where a shape
    has one (NaN: none), else ``mu_default`` (collision/contacts.py ``pair_mu_array`` before the
    scene's pair overrides)."""
    k = sa.size
    ba = np.empty(k, dtype=np.int64)
    bb = np.empty(k, dtype=np.int64)
    mu = np.empty(k)
    contact_fields_into(shape_body, shape_mu, sa, sb, mu_default, ba, bb, mu)
    return ba, bb, mu


@jit
def contact_fields_into(shape_body, shape_mu, sa, sb, mu_default, ba, bb, mu):
    """:func:`contact_fields` written into ba, bb, mu (a caller's packed buffers: no allocation)."""
    for i in range(sa.size):
        ba[i] = shape_body[sa[i]]
        bb[i] = shape_body[sb[i]]
        m = np.fmin(shape_mu[sa[i]], shape_mu[sb[i]])
        mu[i] = m if np.isfinite(m) else mu_default


@jit
def detect_and_match_packed(dof_start, lin, ang, body_radius, h, quaternion, position, shape_body, local_R, local_p,
                            plane_idx, plane_local, aabb_center, aabb_half, margin, finite_idx, static, jointed_keys,
                            nb, cls, half, verts, vstart, radius, plane_row, shape_mu, mu_default, prev_floats,
                            prev_ints, values, near, sweep_out, reach_out):
    """:func:`detect_and_match` with its results packed (:func:`pack_contacts`: two arrays to hand to
    Python, not fifteen; each array handed over costs a boxing and a freeing) and the sweep and reach written into
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
