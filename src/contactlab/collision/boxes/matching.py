"""Contact matching (numba): each new contact's previous contact on the same shape pair, nearest
within a distance, and the previous values it carries (the warm start of its impulses)."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit


#: at most this many (previous, new) pairs, :func:`match_previous_into` scans them all instead of sorting the
#: previous keys (the same answer: the scan visits each key's previous contacts in index order, as the
#: stable sort does; a grasp's 5 x 5 contacts cost no argsort, searchsorted or key arrays)
SCAN_PAIRS = 256


@jit
def match_with_values(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, near):
    """:func:`match_previous_kernel` at any distance, and per new contact the previous ``values``
    entry of its match where that match is within ``near`` (NaN elsewhere; ``values`` may be empty:
    all NaN): the simulator's contact matching in one call. Returns (match, matched values)."""
    match = np.empty(sa_new.size, dtype=np.int64)
    out = np.empty(sa_new.size)
    match_with_values_into(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, near, match, out)
    return match, out


@jit
def match_with_values_into(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, near, match, out):
    """:func:`match_with_values` written into match, out (a caller's packed buffers: no allocation;
    ``out`` holds the squared distances until it is overwritten by the values)."""
    match_previous_into(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, np.inf, match, out)
    r2 = near * near
    for i in range(match.size):
        if values.size and match[i] >= 0 and out[i] <= r2:
            out[i] = values[match[i]]
        else:
            out[i] = np.nan


@jit
def match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol):
    """For each new contact, the index of the nearest previous contact on the same shape pair
    (sa, sb) within ``tol`` (-1 where none) and its squared distance (inf where none)
    (:func:`match_previous_into`)."""
    out = np.empty(sa_new.size, dtype=np.int64)
    dist2 = np.empty(sa_new.size)
    match_previous_into(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol, out, dist2)
    return out, dist2


@jit
def _distance2(point_prev, p, point_new, i):
    """The squared distance between previous contact p's point and new contact i's."""
    dx = point_prev[p, 0] - point_new[i, 0]
    dy = point_prev[p, 1] - point_new[i, 1]
    dz = point_prev[p, 2] - point_new[i, 2]
    return dx * dx + dy * dy + dz * dz


@jit
def match_previous_into(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol, out, dist2):
    """:func:`match_previous_kernel` written into out, dist2: pair keys sorted once, each new contact
    scans only its key's run; up to :data:`SCAN_PAIRS` (previous, new) pairs, a scan of all previous
    contacts in index order instead (the same ties: the later of equal distances wins in both)."""
    out[:] = -1
    dist2[:] = np.inf
    n_prev = sa_prev.size
    if n_prev == 0:
        return
    t2 = tol * tol
    if n_prev * sa_new.size <= SCAN_PAIRS:
        for i in range(sa_new.size):
            key = sa_new[i] * 1_000_003 + sb_new[i]
            best = t2
            found = -1
            for p in range(n_prev):
                if sa_prev[p] * 1_000_003 + sb_prev[p] == key:
                    dd = _distance2(point_prev, p, point_new, i)
                    if dd <= best:
                        best, found = dd, p
            out[i] = found
            if found >= 0:
                dist2[i] = best
        return
    key_prev = sa_prev * 1_000_003 + sb_prev
    key_new = sa_new * 1_000_003 + sb_new
    order = np.argsort(key_prev, kind="mergesort")
    ks = key_prev[order]
    for i in range(key_new.size):
        lo = np.searchsorted(ks, key_new[i])
        best = t2
        found = -1
        j = lo
        while j < ks.size and ks[j] == key_new[i]:
            p = order[j]
            dd = _distance2(point_prev, p, point_new, i)
            if dd <= best:
                best, found = dd, p
            j += 1
        out[i] = found
        if found >= 0:
            dist2[i] = best
