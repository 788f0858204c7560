"""The position correction's sink-only case, compiled: restoring the depth the rows' cfm leaves at
rest (``Simulator.project_contacts``; targets from :func:`~contactlab.mechanics.rows.position_targets`)
in one call, with no Python loop per contact and no Delassus matrix assembled in Python.

With cfm the velocity problem (Arechavaleta et al., eq. (16)-(17)) keeps each resting contact at
N v+ = -cfm c_n, so a column sinks a little every step; the restoration moves positions only,
x += W N' p, with p the answer of the frictionless position LCP

    w = (N W N' + eps I) p + c >= 0  perp  p >= 0

on the rows of the islands at rest (:func:`quiet_rows`). There every contact is sunk within the
window (no gap, nothing beyond the slop), and the LCP's answer has the sunk rows F = {c_i < 0} as
its free set: :func:`sink_correction` solves A_FF p_F = -c_F once (one factorisation of the sunk rows)
and checks the LCP's conditions (p_F >= 0, w >= 0 on the other rows, within ``tol``); a projected
Newton method started from that free set (box-qp's, ``sim/simulator.py position_lcp``) stops there
with the same answer. Where they fail, a few block pivoting passes (:func:`correct_quiet_rows`); where
those fail too the caller restores nothing (box-qp's answer at its position tolerance, the earlier
fallback, cost a settled pile Newton steps in the next velocity steps: docs/benchmarks-sim.md, seventeenth session).

A_FF is factorised by an envelope (profile) Cholesky in the rows' order by height (George & Liu,
Computer Solution of Large Sparse Positive Definite Systems, 1981, ch. 4): two rows are coupled only
through a body they share, so in a column each level's rows meet only the levels beside it, and the
envelope is a band of two levels' rows; any other coupling pattern is factorised exactly as well,
only with a wider envelope.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels._jit import jit

#: :func:`sink_correction`'s outcomes
NOTHING, APPLIED, UNCERTIFIED = 0, 1, 2

#: :func:`sink_correction`'s factorisations at most (free sets tried)
FREE_SET_PASSES = 4

#: the envelope's mean entries a row at most (a column's rows by height: ~8, two levels of 4 contacts);
#: wider (a large settled pile, whose rows by height couple across the pile) is declined: its
#: factorisation's cost grows as the envelope's width squared
ENVELOPE_PER_ROW = 16


@jit
def _root(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@jit
def quiet_rows(body_a, body_b, dof_start, linear_velocity, angular_velocity, speed, p):
    """Per contact: whether the sink restoration may move its bodies (``Simulator._quiet_contacts``'s
    rule): every moving body of the scene (``dof_start >= 0``) moves slower than ``speed`` in each
    component of its linear and angular velocity, and no contact of its island (the moving bodies
    joined by contacts, union-find) has a gap (``p`` = phi' >= 0). A contact between two fixed
    bodies is never quiet. (nc,) booleans, all False where a body is fast."""
    nb = dof_start.size
    nc = body_a.size
    quiet = np.zeros(nc, dtype=np.bool_)
    for b in range(nb):
        if dof_start[b] >= 0:
            for k in range(3):
                if abs(linear_velocity[b, k]) >= speed or abs(angular_velocity[b, k]) >= speed:
                    return quiet
    parent = np.arange(nb)
    for i in range(nc):
        a, b = body_a[i], body_b[i]
        if a >= 0 and b >= 0 and dof_start[a] >= 0 and dof_start[b] >= 0:
            ra, rb = _root(parent, a), _root(parent, b)
            if ra != rb:
                parent[ra] = rb
    body = np.full(nc, -1)
    gap = np.zeros(nb, dtype=np.bool_)
    for i in range(nc):
        a, b = body_a[i], body_b[i]
        if a >= 0 and dof_start[a] >= 0:
            body[i] = a
        elif b >= 0 and dof_start[b] >= 0:
            body[i] = b
        if body[i] >= 0 and p[i] >= 0.0:
            gap[_root(parent, body[i])] = True
    for i in range(nc):
        if body[i] >= 0:
            quiet[i] = not gap[_root(parent, body[i])]
    return quiet


@jit
def sink_correction(n_indptr, n_indices, n_data, W_blocks, c, p, body_a, body_b, dof_start, linear_velocity,
                    angular_velocity, speed, height, window, trigger, eps, tol, dx):
    """:func:`correct_quiet_rows` on the rows :func:`quiet_rows` finds: the one entry point the
    simulator calls (one compiled library loaded per process)."""
    quiet = quiet_rows(body_a, body_b, dof_start, linear_velocity, angular_velocity, speed, p)
    return correct_quiet_rows(n_indptr, n_indices, n_data, W_blocks, c, p, quiet, height, window, trigger, eps,
                              tol, dx)


@jit
def correct_quiet_rows(n_indptr, n_indices, n_data, W_blocks, c, p, quiet, height, window, trigger, eps, tol, dx):
    """The sink-only position correction on the rows ``quiet`` (module docstring): N (nc, ndof) CSR
    with whole 6-column body blocks; ``W_blocks`` (k, 6, 6) M^-1's blocks (block of column j: j // 6;
    kinematic bodies' zeroed); ``c`` the targets (``position_targets``), ``p`` = phi' per contact;
    ``height`` each contact's height (rows ordered by it); ``window`` and ``trigger`` the depths (> 0):
    a quiet contact with -window <= phi' < -trigger asks for the correction; ``eps`` the correction's
    cfm; ``tol``: the LCP's conditions are accepted within tol (p_i >= -tol max |p|, w_i >= -tol max |c|
    over the quiet rows; ``position_lcp``'s tolerance).

    The free set starts at the sunk rows {c_i < 0} and, where the answer misses the LCP's conditions,
    takes in the rows it pushes in (w_i < 0) and lets go of those it pulls (p_i < 0), up to
    FREE_SET_PASSES factorisations (a block principal pivoting step each: Judice & Pires, Computers
    & Operations Research 21 (1994), the rows sorted by height; in a column, pushing the sunk levels
    back lifts the levels above, whose own rows, sunk by less than the target, join at the second pass).
    Writes x += W N' p into ``dx`` (ndof,) where it returns APPLIED; NOTHING where no quiet contact
    asks; UNCERTIFIED where no pass met the conditions (dx then untouched)."""
    nc = c.size
    ask = False
    scale = 0.0
    for i in range(nc):
        if quiet[i]:
            if p[i] < -trigger and p[i] >= -window:
                ask = True
            scale = max(scale, abs(c[i]))
    if not ask:
        return NOTHING
    limit = tol * scale
    free = np.zeros(nc, dtype=np.bool_)
    for i in range(nc):
        free[i] = quiet[i] and c[i] < 0.0
    order = np.argsort(height, kind="mergesort")
    step = np.zeros(dx.size)
    for _ in range(FREE_SET_PASSES):
        nf = 0
        for i in range(nc):
            nf += free[i]
        rows = np.empty(nf, dtype=np.int64)
        k = 0
        for x in range(nc):
            if free[order[x]]:
                rows[k] = order[x]
                k += 1
        y = _free_solve(n_indptr, n_indices, n_data, W_blocks, c, rows, eps, step)
        if y.size != nf:
            return UNCERTIFIED
        changed = False
        big = 0.0
        for k in range(nf):
            big = max(big, abs(y[k]))
        for k in range(nf):
            if not (y[k] >= -tol * big):
                free[rows[k]] = False
                changed = True
        for i in range(nc):
            if quiet[i] and not free[i]:
                w = c[i]
                for e in range(n_indptr[i], n_indptr[i + 1]):
                    w += n_data[e] * step[n_indices[e]]
                if w < -limit:
                    free[i] = True
                    changed = True
        if not changed:
            for j in range(dx.size):
                dx[j] += step[j]
            return APPLIED
    return UNCERTIFIED


@jit
def _free_solve(n_indptr, n_indices, n_data, W_blocks, c, rows, eps, step):
    """p_F from (N_F W N_F' + eps I) p_F = -c_F on the rows ``rows`` (in this order; a contact row's
    entries on at most two 6-column blocks) by the envelope Cholesky, and ``step`` = W N_F' max(p_F, 0)
    (overwritten). Returns p_F, or an empty array where a row is on three blocks or a pivot is not
    positive."""
    nf = rows.size
    nblk = W_blocks.shape[0]
    fail = np.zeros(0)
    # each row's (up to two) blocks, its entries there and W_b n_i,b
    rb = np.full((nf, 2), -1)
    nv = np.zeros((nf, 2, 6))
    wv = np.zeros((nf, 2, 6))
    for k in range(nf):
        i = rows[k]
        for e in range(n_indptr[i], n_indptr[i + 1]):
            blk = n_indices[e] // 6
            s = 0 if (rb[k, 0] == -1 or rb[k, 0] == blk) else 1
            if s == 1 and rb[k, 1] != -1 and rb[k, 1] != blk:
                return fail         # a row on three bodies: not a contact row
            rb[k, s] = blk
            nv[k, s, n_indices[e] % 6] += n_data[e]
        for s in range(2):
            if rb[k, s] >= 0:
                W = W_blocks[rb[k, s]]
                for r in range(6):
                    acc = 0.0
                    for q in range(6):
                        acc += W[r, q] * nv[k, s, q]
                    wv[k, s, r] = acc
    # each block's rows (in order), then each row's first coupled position (its envelope)
    bcount = np.zeros(nblk + 1, dtype=np.int64)
    for k in range(nf):
        for s in range(2):
            if rb[k, s] >= 0:
                bcount[rb[k, s] + 1] += 1
    for b in range(nblk):
        bcount[b + 1] += bcount[b]
    bfill = bcount[:-1].copy()
    brows = np.empty(bcount[nblk], dtype=np.int64)
    for k in range(nf):
        for s in range(2):
            if rb[k, s] >= 0:
                brows[bfill[rb[k, s]]] = k
                bfill[rb[k, s]] += 1
    first = np.arange(nf)
    for k in range(nf):
        for s in range(2):
            b = rb[k, s]
            if b >= 0 and bcount[b] < bcount[b + 1]:
                first[k] = min(first[k], brows[bcount[b]])     # a block's rows are in increasing order
    ptr = np.zeros(nf + 1, dtype=np.int64)
    for k in range(nf):
        ptr[k + 1] = ptr[k] + (k - first[k] + 1)
    if ptr[nf] > ENVELOPE_PER_ROW * nf:
        return fail                 # a wide envelope (a large pile's rows by height): not this method's case
    L = np.zeros(ptr[nf])      # row k: columns first[k] .. k
    for k in range(nf):
        L[ptr[k + 1] - 1] = eps
    for b in range(nblk):
        for x in range(bcount[b], bcount[b + 1]):
            k = brows[x]
            sk = 0 if rb[k, 0] == b else 1
            for z in range(bcount[b], x + 1):
                j = brows[z]
                sj = 0 if rb[j, 0] == b else 1
                acc = 0.0
                for r in range(6):
                    acc += nv[k, sk, r] * wv[j, sj, r]
                L[ptr[k] + j - first[k]] += acc
    # envelope Cholesky A_FF = L L' (fill stays inside the envelope)
    for k in range(nf):
        fk = first[k]
        for j in range(fk, k + 1):
            fj = first[j]
            lo = fk if fk > fj else fj
            s = L[ptr[k] + j - fk]
            for m in range(lo, j):
                s -= L[ptr[k] + m - fk] * L[ptr[j] + m - fj]
            if j < k:
                L[ptr[k] + j - fk] = s / L[ptr[j + 1] - 1]
            else:
                if not (s > 0.0):
                    return fail
                L[ptr[k + 1] - 1] = math.sqrt(s)
    # L y = -c_F, L' p_F = y
    y = np.empty(nf)
    for k in range(nf):
        s = -c[rows[k]]
        fk = first[k]
        for m in range(fk, k):
            s -= L[ptr[k] + m - fk] * y[m]
        y[k] = s / L[ptr[k + 1] - 1]
    for k in range(nf - 1, -1, -1):
        y[k] /= L[ptr[k + 1] - 1]
        fk = first[k]
        for m in range(fk, k):
            y[m] -= L[ptr[k] + m - fk] * y[k]
    for k in range(nf):
        if not math.isfinite(y[k]):
            return fail
    # the displacement W N_F' max(p_F, 0)
    step[:] = 0.0
    for k in range(nf):
        pk = max(y[k], 0.0)
        for s in range(2):
            b = rb[k, s]
            if b >= 0:
                for r in range(6):
                    step[6 * b + r] += wv[k, s, r] * pk
    return y
